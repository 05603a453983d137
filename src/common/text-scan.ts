/**
 * The UTF-16 length of JSON string texts, counted on their bytes sixteen at a time (issue 26).
 *
 * A coding agent's turn is ~150 KB of text that llmux leaves as bytes (./json-lazy.ts), but it still
 * needs each text's length for the estimate and must refuse what `JSON.parse` would refuse (a raw
 * control character, a bad escape). In JavaScript that is a loop over four bytes at a time
 * (`stringUnits`, ./json-lazy.ts), about 0.8 ns a byte: the largest single cost of reading a turn.
 * WebAssembly's 128-bit SIMD does the same check on sixteen bytes in a handful of instructions.
 *
 * The module is written here, instruction by instruction (no toolchain, no dependency), and is
 * small: one function `units(start, end)` over the module's memory, returning the length or -1
 * exactly as `stringUnits` does:
 *
 * ```
 * loop:
 *   while start + 16 <= end:                         ; sixteen bytes at a time
 *     v = load128(start)
 *     taken = bytes before the first (v < 0x20 | v == '\\'), or 16
 *     units += taken - count(v & 0xc0 == 0x80)        ; UTF-8 continuation bytes add nothing,
 *                    + count(v >= 0xf0)                ; a four-byte character is two units
 *     start += taken                                   ; (counted over the taken bytes only)
 *     if taken < 16: break                             ; a control character or an escape
 *   if start >= end: return units
 *   one character or escape, as stringUnits does (-1 for what JSON.parse refuses)
 * ```
 *
 * Where WebAssembly or its SIMD is not there (`node --jitless`), {@link createTextScanner} gives
 * undefined and the JavaScript loop is used, as it is for bodies over {@link MAX_SCANNED_BYTES}. The tests hold both to the same answers on every kind of text (test/common/text-scan.test.ts).
 */

/** Bodies longer than this are counted by the JavaScript loop: the module's memory never grows past it. */
export const MAX_SCANNED_BYTES = 8 * 1024 * 1024;

const PAGE_BYTES = 64 * 1024;

/**
 * Counts the texts between `spans` pairs (`[start, end)` of each) of `bytes`, at most
 * {@link MAX_SCANNED_BYTES} long; undefined when JSON.parse would refuse one of them.
 */
export interface TextScanner {
  units(bytes: Buffer, spans: readonly number[]): number[] | undefined;
}

// ---------------------------------------------------------------- the module, as bytes

/** Unsigned LEB128. */
function uleb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

/** Signed LEB128, for i32.const. */
function sleb(value: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

function name(text: string): number[] {
  return [...uleb(text.length), ...Buffer.from(text, 'latin1')];
}

// Locals: parameters first (0 start, doubling as the cursor; 1 end), then 2 units, 3 byte, 4 the
// escaped byte, 5 the sixteen bytes, 6-10 the splatted constants, 11-15 the sixteen bytes' masks
// (control or backslash, continuation, four-byte lead), how many are taken, and their mask, 16 the
// sixteen bytes' control-or-backslash lanes.
const AT = 0;
const END = 1;
const UNITS = 2;
const BYTE = 3;
const ESCAPED = 4;
const V = 5;
const K20 = 6;
const K5C = 7;
const KC0 = 8;
const K80 = 9;
const KF0 = 10;
const SPECIAL = 11;
const CONT = 12;
const LEAD = 13;
const TAKEN = 14;
const MASK = 15;
const W = 16;

const I32 = 0x7f;
const V128 = 0x7b;
const EMPTY = 0x40;

const op = {
  block: [0x02, EMPTY], loop: [0x03, EMPTY], if: [0x04, EMPTY], else: [0x05], end: [0x0b],
  br: (depth: number) => [0x0c, ...uleb(depth)], brIf: (depth: number) => [0x0d, ...uleb(depth)], return: [0x0f],
  get: (local: number) => [0x20, ...uleb(local)], set: (local: number) => [0x21, ...uleb(local)], tee: (local: number) => [0x22, ...uleb(local)],
  const: (value: number) => [0x41, ...sleb(value)],
  load8: (offset: number) => [0x2d, 0x00, ...uleb(offset)],
  eqz: [0x45], eq: [0x46], ne: [0x47], ltU: [0x49], gtU: [0x4b], geU: [0x4f],
  ctz: [0x68], popcnt: [0x69], add: [0x6a], shl: [0x74], sub: [0x6b], and: [0x71], or: [0x72],
  // SIMD: 0xfd then the opcode (all below 128 here, so one byte).
  load128: [0xfd, 0x00, 0x00, 0x00], splat8: [0xfd, 0x0f],
  eq8: [0xfd, 0x23], ltU8: [0xfd, 0x26], geU8: [0xfd, 0x2c],
  and128: [0xfd, 0x4e], or128: [0xfd, 0x50], anyTrue: [0xfd, 0x53], bitmask8: [0xfd, 0x64],
};

/** `local = splat(value)`. */
function splat(local: number, value: number): number[] {
  return [...op.const(value), ...op.splat8, ...op.set(local)];
}

/** Leaves 1 on the stack when the byte at `at + offset` is a hex digit, 0 otherwise. */
function hexDigitAt(offset: number): number[] {
  return [
    ...op.get(AT), ...op.load8(offset), ...op.tee(BYTE), ...op.const(0x30), ...op.sub, ...op.const(10), ...op.ltU,
    ...op.get(BYTE), ...op.const(0x20), ...op.or, ...op.const(0x61), ...op.sub, ...op.const(6), ...op.ltU,
    ...op.or,
  ];
}

/** Leaves 1 on the stack when ESCAPED is one of `" \ / b f n r t`. */
function simpleEscape(): number[] {
  const out: number[] = [];
  [0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].forEach((char, i) => {
    out.push(...op.get(ESCAPED), ...op.const(char), ...op.eq);
    if (i > 0) out.push(...op.or);
  });
  return out;
}

function unitsBody(): number[] {
  const code = [
    ...splat(K20, 0x20), ...splat(K5C, 0x5c), ...splat(KC0, 0xc0), ...splat(K80, 0x80), ...splat(KF0, 0xf0),
    ...op.block, // $done (depth from inside $outer's body: 1)
    ...op.loop, // $outer
    ...op.block, // $scalar
    ...op.loop, // $simd
    // if at + 16 > end: to the one-at-a-time step
    ...op.get(AT), ...op.const(16), ...op.add, ...op.get(END), ...op.gtU, ...op.brIf(1),
    ...op.get(AT), ...op.load128, ...op.tee(V),
    ...op.get(K20), ...op.ltU8, ...op.get(V), ...op.get(K5C), ...op.eq8, ...op.or128, ...op.tee(W),
    ...op.anyTrue, ...op.eqz,
    ...op.if,
    // Nothing special in the sixteen: plain ASCII is sixteen units, else count.
    ...op.get(V), ...op.bitmask8,
    ...op.if,
    ...op.get(UNITS), ...op.const(16), ...op.add,
    ...op.get(V), ...op.get(KC0), ...op.and128, ...op.get(K80), ...op.eq8, ...op.bitmask8, ...op.popcnt, ...op.sub,
    ...op.get(V), ...op.get(KF0), ...op.geU8, ...op.bitmask8, ...op.popcnt, ...op.add,
    ...op.set(UNITS),
    ...op.else,
    ...op.get(UNITS), ...op.const(16), ...op.add, ...op.set(UNITS),
    ...op.end,
    ...op.get(AT), ...op.const(16), ...op.add, ...op.set(AT),
    ...op.br(1), // $simd
    ...op.end,
    ...op.get(W), ...op.bitmask8, ...op.set(SPECIAL),
    ...op.get(V), ...op.get(KC0), ...op.and128, ...op.get(K80), ...op.eq8, ...op.bitmask8, ...op.set(CONT),
    ...op.get(V), ...op.get(KF0), ...op.geU8, ...op.bitmask8, ...op.set(LEAD),
    // Taken now: the bytes before the first control character or backslash, then that one the one-at-a-time way.
    ...op.get(SPECIAL), ...op.ctz, ...op.tee(TAKEN),
    ...op.const(1), ...op.get(TAKEN), ...op.shl, ...op.const(1), ...op.sub, ...op.tee(MASK),
    ...op.get(CONT), ...op.and, ...op.set(CONT),
    ...op.get(LEAD), ...op.get(MASK), ...op.and, ...op.set(LEAD),
    // units += taken - continuation bytes among them + four-byte lead bytes among them
    ...op.get(UNITS), ...op.get(TAKEN), ...op.add, ...op.get(CONT), ...op.popcnt, ...op.sub, ...op.get(LEAD), ...op.popcnt, ...op.add, ...op.set(UNITS),
    ...op.get(AT), ...op.get(TAKEN), ...op.add, ...op.set(AT),
    ...op.br(1), // to $scalar's end: the special byte
    ...op.end, // $simd
    ...op.end, // $scalar
    // if at >= end: done
    ...op.get(AT), ...op.get(END), ...op.geU, ...op.brIf(1),
    ...op.get(AT), ...op.load8(0), ...op.tee(BYTE), ...op.const(0x80), ...op.geU,
    ...op.if,
    // A lead byte starts a character (two units from 0xf0 on); continuation bytes add nothing.
    ...op.get(UNITS), ...op.get(BYTE), ...op.const(0xc0), ...op.geU, ...op.add, ...op.get(BYTE), ...op.const(0xf0), ...op.geU, ...op.add, ...op.set(UNITS),
    ...op.get(AT), ...op.const(1), ...op.add, ...op.set(AT),
    ...op.else,
    ...op.get(BYTE), ...op.const(0x5c), ...op.eq,
    ...op.if,
    ...op.get(AT), ...op.load8(1), ...op.set(ESCAPED),
    ...op.get(ESCAPED), ...op.const(0x75), ...op.eq,
    ...op.if,
    // \uXXXX: six bytes, all inside the text, four hex digits.
    ...op.get(AT), ...op.const(6), ...op.add, ...op.get(END), ...op.gtU,
    ...op.if, ...op.const(-1), ...op.return, ...op.end,
    ...hexDigitAt(2), ...hexDigitAt(3), ...op.and, ...hexDigitAt(4), ...op.and, ...hexDigitAt(5), ...op.and, ...op.eqz,
    ...op.if, ...op.const(-1), ...op.return, ...op.end,
    ...op.get(AT), ...op.const(6), ...op.add, ...op.set(AT),
    ...op.else,
    ...op.get(AT), ...op.const(2), ...op.add, ...op.get(END), ...op.gtU,
    ...op.if, ...op.const(-1), ...op.return, ...op.end,
    ...simpleEscape(), ...op.eqz,
    ...op.if, ...op.const(-1), ...op.return, ...op.end,
    ...op.get(AT), ...op.const(2), ...op.add, ...op.set(AT),
    ...op.end,
    ...op.get(UNITS), ...op.const(1), ...op.add, ...op.set(UNITS),
    ...op.else,
    ...op.get(BYTE), ...op.const(0x20), ...op.ltU,
    ...op.if, ...op.const(-1), ...op.return, ...op.end,
    ...op.get(UNITS), ...op.const(1), ...op.add, ...op.set(UNITS),
    ...op.get(AT), ...op.const(1), ...op.add, ...op.set(AT),
    ...op.end,
    ...op.end,
    ...op.br(0), // $outer
    ...op.end, // $outer
    ...op.end, // $done
    ...op.get(UNITS),
    ...op.end,
  ];
  const locals = [4, ...uleb(3), I32, ...uleb(6), V128, ...uleb(5), I32, ...uleb(1), V128];
  const body = [...locals, ...code];
  return [...uleb(body.length), ...body];
}

/** The module's bytes: one memory, one function. */
export function textScanModule(): Uint8Array {
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 2, I32, I32, 1, I32]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0x00, 1]),
    ...section(7, [2, ...name('memory'), 0x02, 0, ...name('units'), 0x00, 0]),
    ...section(10, [1, ...unitsBody()]),
  ]);
}

// ---------------------------------------------------------------- the scanner

/** What is used of WebAssembly (the project's TypeScript libraries do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}

/**
 * A scanner over a fresh instance of the module, or undefined where WebAssembly (or its SIMD) is
 * not available. Its memory grows to the longest body it was given, at most {@link MAX_SCANNED_BYTES}.
 */
export function createTextScanner(): TextScanner | undefined {
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (wasm === undefined) return undefined;
  let memory: WasmMemory;
  let count: (start: number, end: number) => number;
  try {
    const instance = new wasm.Instance(new wasm.Module(textScanModule()));
    memory = instance.exports['memory'] as WasmMemory;
    count = instance.exports['units'] as (start: number, end: number) => number;
  } catch {
    return undefined;
  }
  return {
    units(bytes, spans) {
      if (bytes.length > MAX_SCANNED_BYTES) throw new RangeError('a body too long for the text scanner');
      const pages = Math.ceil(bytes.length / PAGE_BYTES);
      const have = memory.buffer.byteLength / PAGE_BYTES;
      if (pages > have) memory.grow(pages - have);
      const view = new Uint8Array(memory.buffer, 0, bytes.length);
      view.set(bytes);
      const out: number[] = [];
      try {
        for (let k = 0; k < spans.length; k += 2) {
          const units = count(spans[k] as number, spans[k + 1] as number);
          if (units < 0) return undefined;
          out.push(units);
        }
        return out;
      } finally {
        // A client's text is not kept after its request's read (a few µs for a 200 KB body).
        view.fill(0);
      }
    },
  };
}
