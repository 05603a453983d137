/**
 * Finding line ends in SSE bytes: LF, CR, or CRLF (WHATWG event-stream). Shared by the parser and
 * the usage tap, which both walk a chunk line by line.
 *
 * The scanner searches with single-byte `indexOf` (memchr) and remembers where the next CR is, so
 * input without CR, the usual kind, is searched for CR once per chunk rather than once per line.
 * One scanner per parser or tap, reused for every chunk: nothing is allocated per chunk or line.
 */

export const LF = 0x0a;
export const CR = 0x0d;

export interface LineScanner {
  /** Starts on a new chunk. */
  start(bytes: Uint8Array, from: number): void;
  /** Index of the first LF or CR at or after `from` in the current chunk, or -1. */
  next(from: number): number;
}

export function createLineScanner(): LineScanner {
  let buffer: Buffer = Buffer.alloc(0);
  let nextCr = -1;
  return {
    start(bytes, from) {
      buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      nextCr = buffer.length === 0 ? -1 : buffer.indexOf(CR, from);
    },
    next(from) {
      const nextLf = buffer.indexOf(LF, from);
      if (nextCr !== -1 && nextCr < from) nextCr = buffer.indexOf(CR, from);
      return nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextLf, nextCr);
    },
  };
}

/** Where the line that ends at `lineEnd` is followed by the next one: past LF, CR or CRLF. */
export function afterLineEnd(bytes: Uint8Array, lineEnd: number): number {
  return bytes[lineEnd] === CR && bytes[lineEnd + 1] === LF ? lineEnd + 2 : lineEnd + 1;
}
