/**
 * A JSON body's long texts left as the client's bytes (issue 26). A coding agent's turn is mostly
 * text no rule of llmux reads: file listings in tool results, message text, thinking, tool
 * descriptions. Decoding those 200 KB of UTF-8 into strings and building them into a tree cost
 * more than everything else llmux does with the request. So the walk over a body's bytes
 * (./json-bytes.ts `walkJson`, given the members whose values are such text) leaves each long
 * string value of those members where it is, and the rest of the body, a few KB of its 200, is
 * parsed with each such string replaced by a short one naming it: a **text reference**,
 * `"\u0000" + index + "\u0000"`. The references' table is a {@link LazyTexts}.
 *
 * What code may do with a reference, knowing only that it is a string: check that it is one (it is
 * never empty: only strings of {@link LAZY_TEXT_BYTES} bytes and more are left as bytes), pass it
 * on, and join it with other text (`a + '\n\n' + b`, a template): a string holding references
 * anywhere is written as the bytes they name ({@link spliceTexts}), whatever surrounds them. What it
 * may not do is read the text's characters (its length, a prefix, a trim, `JSON.parse`): that is
 * {@link realText} first. A reference inside text that is itself serialised into a string (a tool
 * input written as `arguments`) cannot be written as bytes; the writer then refuses
 * ({@link NotLazyError}) and the caller starts again from the whole parse.
 *
 * A body that already holds the character U+0000 (written `\u0000` in JSON) is never read so:
 * its own text could be taken for a reference.
 */

import { MAX_SCANNED_BYTES, createTextScanner } from './text-scan.ts';
import type { TextScanner } from './text-scan.ts';

/** Strings shorter than this (in bytes between the quotes) are parsed as usual: a reference costs more than it saves. */
export const LAZY_TEXT_BYTES = 256;

/** The bytes of a body read lazily, and where each of its references' texts is in them. */
export interface LazyTexts {
  readonly bytes: Buffer;
  /** Reference i's text is `bytes[spans[2i], spans[2i + 1])`, as it is between its quotes (JSON escapes and all). */
  readonly spans: readonly number[];
  /** Reference i's length as a JavaScript string (UTF-16 code units): what `text.length` would be. */
  readonly units: readonly number[];
}

/** Thrown when text holding a reference was serialised into another string: its bytes cannot be spliced. */
export class NotLazyError extends Error {
  constructor() {
    super('a text reference was written inside serialised text');
    this.name = 'NotLazyError';
  }
}

const NUL = '\u0000';
/** How a reference's delimiter appears in JSON text (JSON.stringify writes U+0000 so). */
const ESCAPED_NUL = '\\u0000';

/** The reference to text `index`, as a string value. */
export function textReference(index: number): string {
  return `${NUL}${index}${NUL}`;
}

/** Whether `value` is a whole reference (a body read lazily gives only whole ones; joins make others). */
export function isTextReference(value: string): boolean {
  return value.length > 2 && value.charCodeAt(0) === 0;
}

/** The index of the whole reference `value`. */
function referenceIndex(value: string): number {
  let index = 0;
  for (let i = 1; i < value.length - 1; i++) index = index * 10 + value.charCodeAt(i) - 48;
  return index;
}

/** `value.length` of the real text: a whole reference's length is its text's, anything else its own. */
export function textUnits(value: string, texts: LazyTexts | undefined): number {
  if (texts === undefined || !isTextReference(value)) return value.length;
  return texts.units[referenceIndex(value)] as number;
}

/** The text reference `index` names, decoded. */
function decodeText(texts: LazyTexts, index: number): string {
  return JSON.parse(texts.bytes.toString('utf8', (texts.spans[2 * index] as number) - 1, (texts.spans[2 * index + 1] as number) + 1)) as string;
}

/** `value` with every reference in it replaced by its text. */
export function realText(value: string, texts: LazyTexts | undefined): string {
  if (texts === undefined || !value.includes(NUL)) return value;
  if (isTextReference(value) && value.indexOf(NUL, 1) === value.length - 1) return decodeText(texts, referenceIndex(value));
  return value.replace(/\u0000(\d+)\u0000/g, (_, index: string) => decodeText(texts, Number(index)));
}

/**
 * The UTF-8 bytes of a whole reference's text when its JSON has no escapes (they are the text's own
 * bytes: a hash reads them without decoding); undefined otherwise.
 */
export function textBytes(value: string, texts: LazyTexts | undefined): Buffer | undefined {
  if (texts === undefined || !isTextReference(value)) return undefined;
  const index = referenceIndex(value);
  const start = texts.spans[2 * index] as number;
  const end = texts.spans[2 * index + 1] as number;
  const backslash = texts.bytes.indexOf(0x5c, start);
  return backslash === -1 || backslash >= end ? texts.bytes.subarray(start, end) : undefined;
}

/**
 * A copy of `value` with every reference replaced by its text: what parsing the body whole would
 * have given. Walks with an explicit stack: a body may nest as deeply as the reader allows.
 */
export function realValue<T>(value: T, texts: LazyTexts | undefined): T {
  if (texts === undefined) return value;
  const root: { value: unknown } = { value };
  const stack: Array<[Record<string, unknown> | unknown[], string | number]> = [[root, 'value']];
  while (stack.length > 0) {
    const [owner, key] = stack.pop() as [Record<string | number, unknown>, string | number];
    const item = owner[key];
    if (typeof item === 'string') {
      if (item.includes(NUL)) owner[key] = realText(item, texts);
    } else if (Array.isArray(item)) {
      const copy = item.slice();
      owner[key] = copy;
      for (let i = 0; i < copy.length; i++) stack.push([copy, i]);
    } else if (typeof item === 'object' && item !== null) {
      // Spread copies own properties with define semantics: a `__proto__` key stays data.
      const copy: Record<string, unknown> = { ...(item as Record<string, unknown>) };
      owner[key] = copy;
      for (const name of Object.keys(copy)) stack.push([copy, name]);
    }
  }
  return root.value as T;
}

/** Where text given to {@link spliceTexts} goes: text as UTF-8, and byte ranges copied as they are. */
export interface TextSink {
  write(text: string): void;
  writeBytes(bytes: Buffer, start: number, end: number): void;
}

/** Where the reference {@link referenceAt} last read ends (read at once by its caller). */
let referenceEnd = 0;

/**
 * Writes `json` (JSON text, as JSON.stringify made it) into `out`, each reference in it as the
 * bytes its text has in the client's body: between quotes those bytes are already that text in
 * JSON, so a reference joined with other text anywhere in a string is written right. A reference
 * whose delimiter was escaped twice (its string serialised into another string) throws
 * {@link NotLazyError}.
 */
export function spliceTexts(json: string, texts: LazyTexts | undefined, out: TextSink): void {
  let from = 0;
  let at = texts === undefined ? -1 : json.indexOf(ESCAPED_NUL);
  while (at !== -1) {
    const index = referenceAt(json, at);
    if (at > from) out.write(json.slice(from, at));
    writeText(texts as LazyTexts, index, out);
    from = referenceEnd;
    at = json.indexOf(ESCAPED_NUL, from);
  }
  if (from === 0) out.write(json);
  else if (from < json.length) out.write(json.slice(from));
}

/**
 * The index of the reference whose escaped delimiter starts at `at` in `json` (its end in
 * {@link referenceEnd}). Throws {@link NotLazyError} when the delimiter was escaped twice (the
 * backslash ends an escaped backslash: its string was serialised into another string) or no
 * reference follows it.
 */
function referenceAt(json: string, at: number): number {
  let backslashes = 0;
  while (json.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
  if (backslashes % 2 !== 0) throw new NotLazyError();
  const digits = at + ESCAPED_NUL.length;
  let index = 0;
  let end = digits;
  for (let code = json.charCodeAt(end); code >= 0x30 && code <= 0x39; code = json.charCodeAt(++end)) index = index * 10 + code - 48;
  if (end === digits || !json.startsWith(ESCAPED_NUL, end)) throw new NotLazyError();
  referenceEnd = end + ESCAPED_NUL.length;
  return index;
}

/** Writes text `index` of `texts` as its bytes; an index past the table throws {@link NotLazyError}. */
function writeText(texts: LazyTexts, index: number, out: TextSink): void {
  if (index >= texts.units.length) throw new NotLazyError();
  out.writeBytes(texts.bytes, texts.spans[2 * index] as number, texts.spans[2 * index + 1] as number);
}

/**
 * JSON text holding references, kept to be written many times (a frozen item of a key's last
 * body, ./json-bytes.ts): its text around the references as UTF-8 bytes, and where each reference
 * goes. Written with {@link writeSpliced}, it costs copies alone: no search for references, no
 * encoding, no slices of the text. It holds what the text held, as bytes.
 */
export interface SplicedText {
  /** The text with its references cut out, as UTF-8. */
  readonly bytes: Buffer;
  /** For each reference in order: where it goes in `bytes`, and its index in the texts. */
  readonly cuts: readonly number[];
}

/** `json` cut at its references, read as {@link spliceTexts} reads them (and refused as it refuses them). */
export function splicedText(json: string): SplicedText {
  const pieces: string[] = [];
  const cuts: number[] = [];
  let offset = 0;
  let from = 0;
  for (let at = json.indexOf(ESCAPED_NUL); at !== -1; at = json.indexOf(ESCAPED_NUL, from)) {
    const index = referenceAt(json, at);
    const piece = json.slice(from, at);
    pieces.push(piece);
    offset += Buffer.byteLength(piece);
    cuts.push(offset, index);
    from = referenceEnd;
  }
  pieces.push(json.slice(from));
  return { bytes: Buffer.from(pieces.join('')), cuts };
}

/** Writes `spliced` with each reference replaced by its text's bytes in `texts`. */
export function writeSpliced(spliced: SplicedText, texts: LazyTexts, out: TextSink): void {
  const { bytes, cuts } = spliced;
  let from = 0;
  for (let k = 0; k < cuts.length; k += 2) {
    const at = cuts[k] as number;
    if (at > from) out.writeBytes(bytes, from, at);
    writeText(texts, cuts[k + 1] as number, out);
    from = at;
  }
  if (from < bytes.length) out.writeBytes(bytes, from, bytes.length);
}

/**
 * `json` (JSON text) with each reference in it replaced by its text's JSON, as text: for a member
 * spliced into the client's bytes as a string (./json-bytes.ts `withMembers`). Throws
 * {@link NotLazyError} as {@link spliceTexts} does.
 */
export function withTextsIn(json: string, texts: LazyTexts): string {
  if (!json.includes(ESCAPED_NUL)) return json;
  const parts: string[] = [];
  spliceTexts(json, texts, { write: (text) => parts.push(text), writeBytes: (bytes, start, end) => parts.push(bytes.toString('utf8', start, end)) });
  return parts.join('');
}

/** Bytes that may follow a backslash in a JSON string (`u` is checked on its own), and hex digits. */
const SIMPLE_ESCAPES = new Uint8Array(128);
for (const char of '"\\/bfnrt') SIMPLE_ESCAPES[char.charCodeAt(0)] = 1;
const HEX_DIGITS = new Uint8Array(128);
for (const char of '0123456789abcdefABCDEF') HEX_DIGITS[char.charCodeAt(0)] = 1;

/** The number of bytes marked (bit 7) in a word that marks only bit 7 of each byte. */
function markedBytes(marks: number): number {
  return Math.imul(marks >>> 7, 0x01010101) >>> 24;
}

/**
 * `bytes` as 32-bit words, for {@link stringUnits}: a view of the whole underlying buffer, so word
 * `(bytes.byteOffset + i) >> 2` holds byte i.
 */
export function wordsOf(bytes: Buffer): Int32Array {
  return new Int32Array(bytes.buffer, 0, bytes.buffer.byteLength >> 2);
}

/**
 * The length as a JavaScript string (UTF-16 code units) of the JSON string whose bytes between its
 * quotes are `bytes[start, end)` (valid UTF-8: checked on the whole body before), or -1 when
 * JSON.parse would refuse it (a raw control character, or an escape other than `\" \\ \/ \b \f \n
 * \r \t \uXXXX`). Nothing is decoded: a character is one unit but one of four UTF-8 bytes (two),
 * and an escape is one. Four bytes at a time where a word holds no backslash and no control
 * character (most words of text): its units are its bytes less its UTF-8 continuation bytes,
 * plus one for each lead byte of a four-byte sequence. `words` is {@link wordsOf}(bytes).
 */
export function stringUnits(bytes: Buffer, words: Int32Array, start: number, end: number): number {
  const offset = bytes.byteOffset;
  /** One past the last word wholly inside the text. */
  const lastWord = (offset + end) >> 2;
  let units = 0;
  let at = start;
  while (at < end) {
    if (((offset + at) & 3) === 0) {
      let word = (offset + at) >> 2;
      for (; word < lastWord; word++) {
        const value = words[word] as number;
        // Bit 7 of each byte that is below 0x20, or a backslash (the classic "has less" and "has zero" tests).
        if ((((value - 0x20202020) | ((value ^ 0x5c5c5c5c) - 0x01010101)) & ~value & 0x80808080) !== 0) break;
        const high = value & 0x80808080;
        units += high === 0 ? 4 : 4 - markedBytes(high & ~(value << 1)) + markedBytes(value & (value << 1) & (value << 2) & (value << 3) & 0x80808080);
      }
      at = (word << 2) - offset;
      if (at >= end) break;
    }
    // One character or escape the slow way, until words line up again.
    const byte = bytes[at] as number;
    if (byte >= 0x80) {
      // A lead byte starts a character (two units from 0xf0 on); continuation bytes add nothing.
      if (byte >= 0xc0) units += byte >= 0xf0 ? 2 : 1;
      at++;
    } else if (byte === 0x5c) {
      const escaped = bytes[at + 1] as number;
      if (escaped === 0x75) {
        if (at + 6 > end || HEX_DIGITS[bytes[at + 2] as number] !== 1 || HEX_DIGITS[bytes[at + 3] as number] !== 1
          || HEX_DIGITS[bytes[at + 4] as number] !== 1 || HEX_DIGITS[bytes[at + 5] as number] !== 1) return -1;
        at += 6;
      } else {
        if (at + 2 > end || escaped >= 0x80 || SIMPLE_ESCAPES[escaped] !== 1) return -1;
        at += 2;
      }
      units++;
    } else if (byte < 0x20) {
      return -1;
    } else {
      units++;
      at++;
    }
  }
  return units;
}

/** The WebAssembly text counter (./text-scan.ts), made when first needed; null where there is none. */
let scanner: TextScanner | null | undefined;

/** U+0000 written in JSON: a body that holds it is not read lazily (see the header). */
const ESCAPED_NUL_BYTES = Buffer.from(ESCAPED_NUL);

/**
 * The texts `spans` names (pairs from ./json-bytes.ts `walkJson`) in `bytes`, with their lengths;
 * undefined when the body holds U+0000, or when JSON.parse would refuse one of the texts (the
 * whole parse then says why). Counted sixteen bytes at a time by ./text-scan.ts where WebAssembly
 * is there, by {@link stringUnits} where it is not.
 */
export function lazyTexts(bytes: Buffer, spans: readonly number[]): LazyTexts | undefined {
  if (hasEscapedNul(bytes)) return undefined;
  if (bytes.length <= MAX_SCANNED_BYTES) {
    scanner ??= createTextScanner() ?? null;
    if (scanner !== null) {
      const units = scanner.units(bytes, spans);
      return units === undefined ? undefined : { bytes, spans, units };
    }
  }
  const words = wordsOf(bytes);
  const units: number[] = [];
  for (let k = 0; k < spans.length; k += 2) {
    const count = stringUnits(bytes, words, spans[k] as number, spans[k + 1] as number);
    if (count < 0) return undefined;
    units.push(count);
  }
  return { bytes, spans, units };
}

/** Whether JSON bytes hold U+0000 written as an escape (such a body is not read lazily: see the header). */
export function hasEscapedNul(bytes: Buffer): boolean {
  return bytes.includes(ESCAPED_NUL_BYTES);
}

/**
 * The JSON text of the body with each of its texts replaced by a reference: what is parsed of it.
 * Text k's reference names index k, or `indexOf(k)` (./json-recall.ts numbers a body's changed
 * items' texts after those it kept).
 */
export function skeletonText(texts: LazyTexts, indexOf?: (k: number) => number): string {
  const { bytes, spans } = texts;
  const references: string[] = [];
  let size = bytes.length;
  for (let k = 0; k < spans.length; k += 2) {
    // Between the text's own quotes, written as JSON: \u0000, the index, \u0000.
    const reference = `${ESCAPED_NUL}${indexOf === undefined ? k / 2 : indexOf(k / 2)}${ESCAPED_NUL}`;
    references.push(reference);
    size += reference.length - ((spans[k + 1] as number) - (spans[k] as number));
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  let from = 0;
  for (let k = 0; k < spans.length; k += 2) {
    at += bytes.copy(out, at, from, spans[k] as number);
    at += out.write(references[k / 2] as string, at, 'latin1');
    from = spans[k + 1] as number;
  }
  at += bytes.copy(out, at, from);
  return out.toString('utf8', 0, at);
}
