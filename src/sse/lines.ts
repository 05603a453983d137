/**
 * Finding line ends and event boundaries in SSE bytes: LF, CR, or CRLF (WHATWG event-stream).
 * Shared by the parser and the usage tap, which both walk a chunk line by line.
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
  /**
   * Lets the current chunk go. A stream's scanner lives as long as the stream, and an idle stream
   * would otherwise keep its last chunk (and the socket read it is a slice of) until the next one.
   */
  release(): void;
}

const NO_BYTES = Buffer.alloc(0);

export function createLineScanner(): LineScanner {
  let buffer: Buffer = NO_BYTES;
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
    release() {
      buffer = NO_BYTES;
      nextCr = -1;
    },
  };
}

/** Where the line that ends at `lineEnd` is followed by the next one: past LF, CR or CRLF. */
export function afterLineEnd(bytes: Uint8Array, lineEnd: number): number {
  return bytes[lineEnd] === CR && bytes[lineEnd + 1] === LF ? lineEnd + 2 : lineEnd + 1;
}

/** LF or CR. */
export function isLineEnd(byte: number | undefined): boolean {
  return byte === LF || byte === CR;
}

/**
 * Start of the event that holds byte `at`, or an earlier event boundary: the end of the last blank
 * line at or after `from` and before `at`, or `from`. Only a blank line that follows a non-empty
 * line ending in LF or CRLF is taken: at a run of blank lines or a CR-only line end, where
 * {@link nextEventEnd} might cut elsewhere, the search goes on back, ending at `from` at worst,
 * which is always a boundary. So the cuts stay exactly the ones a walk from `from` makes.
 */
export function eventStartBefore(bytes: Buffer, from: number, at: number): number {
  let lf = at - 1;
  while (lf > from) {
    lf = bytes.lastIndexOf(LF, lf);
    if (lf <= from) break;
    // The blank line's own end (LF or CRLF), then the previous line's (LF or CRLF), then a byte of that line.
    let i = bytes[lf - 1] === CR ? lf - 2 : lf - 1;
    if (bytes[i] === LF) {
      i -= 1;
      if (bytes[i] === CR) i -= 1;
      if (i >= from && !isLineEnd(bytes[i])) return lf + 1;
    }
    lf -= 1;
  }
  return from;
}

/**
 * End of the event that starts at `from`: just past its blank line (LF LF, CRLF CRLF, CR CR or
 * mixed), or the end of `bytes`.
 */
export function nextEventEnd(bytes: Buffer, from: number): number {
  let position = from;
  let lineEmpty = true;
  while (position < bytes.length) {
    const byte = bytes[position] as number;
    if (byte === LF || byte === CR) {
      const next = afterLineEnd(bytes, position);
      if (lineEmpty && position > from) return next;
      lineEmpty = true;
      position = next;
    } else {
      lineEmpty = false;
      position += 1;
    }
  }
  return bytes.length;
}
