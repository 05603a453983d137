/**
 * A JSON request body as bytes (issue 15): one walk over them checks the nesting and finds the
 * top-level members; the body is then parsed in pieces, and a same-format upstream gets the
 * client's own bytes with a few members spliced in, not a re-serialisation.
 *
 * Why pieces: a string of more than 128 KB is a large object to V8, allocated in fresh pages
 * (mapped, faulted in, unmapped when collected). A 200 KB agent turn decoded whole cost 145 µs
 * (ASCII) to 390 µs (with a few arrows in it) before `JSON.parse` read a byte; decoded as pieces
 * of at most {@link PIECE_BYTES} it cost 30 µs and 130 µs. So top-level members are parsed in runs
 * of at most that size, and a longer top-level array (`messages`, `tools`, `input`) in runs of its
 * items. Pieces split only at the body's own commas and colons, never inside a UTF-8 sequence.
 *
 * What is parsed is exactly what `JSON.parse` of the whole would give: each piece is checked by
 * `JSON.parse` itself and the skeleton between them (braces, colons, commas, JSON space) by the
 * walk; anything unexpected falls back to `JSON.parse` of the whole, whose result (or error
 * message) is then the answer. Keys keep JSON.parse's rules: a later duplicate replaces the value
 * in place, and `__proto__` is an own property.
 */

import { lazyTexts, skeletonText, splicedText, spliceTexts, writeSpliced } from './json-lazy.ts';
import { frozenJson } from './json.ts';
import type { LazyTexts, SplicedText, TextSink } from './json-lazy.ts';

/** Longest run of bytes decoded and parsed at once: as two-byte text it stays under 128 KB. */
export const PIECE_BYTES = 48 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** One top-level member of a JSON object, by where its bytes are. */
export interface MemberSpan {
  key: string;
  /** The key's opening quote. */
  start: number;
  /** The value's first byte, and one past its last (JSON space around it excluded). */
  valueStart: number;
  valueEnd: number;
}

/** A JSON object body: its bytes, the value parsed from them, and its top-level members. */
export interface JsonObjectBytes {
  bytes: Buffer;
  value: Record<string, unknown>;
  /** In the order of the bytes, duplicates included. */
  members: readonly MemberSpan[];
  /** Two members have the same key (the value keeps the last; the bytes have both). */
  duplicateKeys: boolean;
  /** When it was read lazily: the texts `value`'s references name (./json-lazy.ts). */
  texts?: LazyTexts | undefined;
  /** When it was read lazily with a mark: whether some string of it begins with the mark ({@link LazyMembers}). */
  marked?: boolean | undefined;
}

/** What the walk over the bytes found; `layout` is undefined when the body is not a well-formed object. */
export interface JsonWalk {
  tooDeep: boolean;
  layout: Layout | undefined;
  /**
   * Given {@link LazyMembers}: the long string values of its text members, as `[start, end)`
   * pairs of the bytes between their quotes, in the order of the bytes (./json-lazy.ts).
   */
  texts?: number[];
  /** Given {@link LazyMembers} with a `mark`: whether some string of the body begins with it. */
  marked?: boolean;
}

/** Which string values a walk leaves as bytes (./json-lazy.ts): by the member they are the value of. */
export interface LazyMembers {
  /** Members whose long string values are text no rule reads (`text`, `content`, …). */
  text: ReadonlySet<string>;
  /** Members whose object values are taken whole (a tool's input, a schema): nothing in them is left as bytes. */
  opaque: ReadonlySet<string>;
  /** The shortest string left as bytes, in bytes between its quotes (at least 1: a text left so is never empty). */
  minBytes: number;
  /** The shortest body read so: a smaller one is parsed whole, which costs it less (src/formats/text-members.ts). */
  minBodyBytes: number;
  /**
   * Strings beginning with these bytes are noted by the walk (`marked`), so that nothing searches
   * the whole body for them again (llmux's seals: src/dialects/dialect.ts `mayHoldSeals`).
   */
  mark?: Buffer;
}

/** Where an object body's members and its large arrays' items are. */
interface Layout {
  members: MemberSpan[];
  /** Second-level arrays and objects: opening position -> positions of their own commas, and their closing position last. */
  inner: Map<number, number[]>;
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Where the string opened by the quote at `at` closes; -1 when it does not. */
function stringEnd(bytes: Buffer, at: number): number {
  let end = at;
  for (;;) {
    end = bytes.indexOf(QUOTE, end + 1);
    if (end === -1) return -1;
    // The quote ends the string unless an odd number of backslashes escapes it.
    let backslashes = 0;
    while (bytes[end - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
  }
}

/**
 * One walk over a JSON text: whether it opens more than `maxDepth` arrays and objects at once
 * (checked before anything is parsed, so a deep body never becomes deep objects), and where a
 * top-level object's members and second-level containers' items are. Strings are skipped from
 * quote to quote with `indexOf` (most of a body's bytes are text), so this costs far less than
 * the parse it prepares. Malformed JSON gives no layout and is left for the parser to name.
 * Given `lazy`, it also notes which strings are the long values of text members (see
 * {@link LazyMembers}): a string in an object is a key when a `{` or `,` came before it, a value
 * otherwise, and its member is the key just before it.
 */
export function walkJson(bytes: Buffer, maxDepth: number, lazy?: LazyMembers): JsonWalk {
  let depth = 0;
  let i = 0;
  const length = bytes.length;
  /** Top-level object: its opening brace, the colons and commas at depth 1, its closing brace. */
  let open = -1;
  let close = -1;
  let malformed = false;
  const separators: number[] = [];
  const inner = new Map<number, number[]>();
  // Items are looked for in a body long enough to be parsed in pieces, and in one read lazily (./json-recall.ts compares by item).
  const items = length > PIECE_BYTES || lazy !== undefined;
  let current: number[] | undefined;
  // For `lazy`: which open containers are objects, whether a key comes next, the last key's
  // bytes, and the depth of the opaque object the walk is in (0: none).
  const objects = lazy === undefined ? undefined : new Uint8Array(maxDepth + 1);
  const texts: number[] | undefined = lazy === undefined ? undefined : [];
  let keyNext = false;
  let keyStart = 0;
  let keyEnd = 0;
  let opaqueDepth = 0;
  const mark = lazy?.mark;
  const markFirst = mark?.[0];
  let marked = false;
  while (i < length) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      const end = stringEnd(bytes, i);
      if (end === -1) return { tooDeep: false, layout: undefined };
      if (!marked && bytes[i + 1] === markFirst && end - i - 1 >= (mark as Buffer).length && bytes.compare(mark as Buffer, 0, (mark as Buffer).length, i + 1, i + 1 + (mark as Buffer).length) === 0) marked = true;
      if (objects !== undefined) {
        if (keyNext) {
          keyStart = i + 1;
          keyEnd = end;
          keyNext = false;
        } else if (opaqueDepth === 0 && objects[depth] === 1 && end - i - 1 >= (lazy as LazyMembers).minBytes && (lazy as LazyMembers).text.has(bytes.toString('latin1', keyStart, keyEnd))) {
          (texts as number[]).push(i + 1, end);
        }
      }
      i = end + 1;
      continue;
    }
    if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      depth++;
      if (depth > maxDepth) return { tooDeep: true, layout: undefined };
      if (depth === 1) {
        if (open !== -1) malformed = true;
        open = i;
      } else if (depth === 2 && items) {
        current = [];
        inner.set(i, current);
      }
      if (objects !== undefined) {
        const object = byte === OPEN_BRACE;
        if (object && opaqueDepth === 0 && objects[depth - 1] === 1 && (lazy as LazyMembers).opaque.has(bytes.toString('latin1', keyStart, keyEnd))) opaqueDepth = depth;
        objects[depth] = object ? 1 : 0;
        keyNext = object;
      }
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
      if (depth === 1) close = i;
      else if (depth === 2) current?.push(i);
      if (depth === opaqueDepth) opaqueDepth = 0;
      depth--;
      if (depth < 0) malformed = true;
      keyNext = false;
    } else if (byte === COMMA || byte === COLON) {
      if (depth === 1) separators.push(i);
      else if (depth === 2 && byte === COMMA) current?.push(i);
      if (objects !== undefined) keyNext = byte === COMMA && depth > 0 && objects[depth] === 1;
    }
    i++;
  }
  if (malformed || depth !== 0 || open === -1 || bytes[open] !== OPEN_BRACE || bytes[close] !== CLOSE_BRACE) return { tooDeep: false, layout: undefined };
  for (let j = 0; j < open; j++) if (!isSpace(bytes[j])) return { tooDeep: false, layout: undefined };
  for (let j = close + 1; j < length; j++) if (!isSpace(bytes[j])) return { tooDeep: false, layout: undefined };
  const members = membersOf(bytes, open, close, separators);
  if (members === undefined) return { tooDeep: false, layout: undefined };
  const walk: JsonWalk = { tooDeep: false, layout: { members, inner } };
  if (texts !== undefined) walk.texts = texts;
  if (mark !== undefined) walk.marked = marked;
  return walk;
}

/** The first non-space position at or after `from`, and one past the last non-space before `to`. */
function trim(bytes: Buffer, from: number, to: number): [number, number] {
  while (from < to && isSpace(bytes[from])) from++;
  while (to > from && isSpace(bytes[to - 1])) to--;
  return [from, to];
}

/** Members from the depth-1 separators: colon, comma, colon, …, colon; undefined when they don't alternate so. */
function membersOf(bytes: Buffer, open: number, close: number, separators: readonly number[]): MemberSpan[] | undefined {
  const members: MemberSpan[] = [];
  if (separators.length === 0) return trim(bytes, open + 1, close)[0] === close ? members : undefined;
  if (separators.length % 2 === 0) return undefined;
  let from = open + 1;
  for (let s = 0; s < separators.length; s += 2) {
    const colon = separators[s] as number;
    const end = s + 1 < separators.length ? (separators[s + 1] as number) : close;
    if (bytes[colon] !== COLON || (end !== close && bytes[end] !== COMMA)) return undefined;
    const [keyStart, keyEnd] = trim(bytes, from, colon);
    const key = keyOf(bytes, keyStart, keyEnd);
    if (key === undefined) return undefined;
    const [valueStart, valueEnd] = trim(bytes, colon + 1, end);
    members.push({ key, start: keyStart, valueStart, valueEnd });
    from = end + 1;
  }
  return members;
}

/** The key of the string token at `[start, end)`; undefined when it is not exactly one JSON string. */
function keyOf(bytes: Buffer, start: number, end: number): string | undefined {
  if (bytes[start] !== QUOTE || end - start < 2 || stringEnd(bytes, start) !== end - 1) return undefined;
  let plain = true;
  for (let i = start + 1; i < end - 1; i++) {
    const byte = bytes[i] as number;
    if (byte === BACKSLASH || byte < 0x20) {
      plain = false;
      break;
    }
  }
  if (plain) return bytes.toString('utf8', start + 1, end - 1);
  try {
    const key: unknown = JSON.parse(bytes.toString('utf8', start, end));
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** Sets an own data property as JSON.parse does: `__proto__` too stays data, not the prototype. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

/** Thrown inside the piecewise parse when the skeleton is not what it must be: the whole is parsed instead. */
class NotPieces extends Error {}

/**
 * Parses a JSON text whose walk gave `walk`, in pieces when it is long and laid out as an object.
 * Throws what `JSON.parse` of the whole throws (a SyntaxError) when it is not JSON.
 */
export function parseJsonText(bytes: Buffer, walk: JsonWalk): unknown {
  const { layout } = walk;
  if (layout !== undefined && bytes.length > PIECE_BYTES) {
    try {
      return parseObject(bytes, layout);
    } catch (err) {
      if (!(err instanceof SyntaxError) && !(err instanceof NotPieces)) throw err;
      // The whole says what is wrong, in JSON.parse's own words; or it parses after all.
    }
  }
  return JSON.parse(bytes.toString('utf8'));
}

/**
 * {@link parseJsonText}, leaving the texts a lazy walk found (`walk.texts`) as bytes: the value
 * holds references to them, which `texts` resolves (./json-lazy.ts). What is parsed is the body's
 * skeleton, the body with each text replaced by its reference; `texts` is undefined when there was
 * nothing to leave (or the body may not be read so), and the value is then the whole parse.
 * Throws what `JSON.parse` of the whole throws when it is not JSON.
 */
export function parseJsonLazily(bytes: Buffer, walk: JsonWalk): { value: unknown; texts: LazyTexts | undefined } {
  const spans = walk.texts;
  const texts = spans === undefined || spans.length === 0 || walk.layout === undefined ? undefined : lazyTexts(bytes, spans);
  if (texts === undefined) return { value: parseJsonText(bytes, walk), texts: undefined };
  try {
    return { value: JSON.parse(skeletonText(texts)), texts };
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    // The whole says what is wrong, in JSON.parse's own words (the skeleton's positions are not the body's).
    return { value: parseJsonText(bytes, walk), texts: undefined };
  }
}

/** An object body from its members: runs of small members parsed together, a long array by its items. */
function parseObject(bytes: Buffer, layout: Layout): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { members } = layout;
  let run = 0;
  while (run < members.length) {
    const first = members[run] as MemberSpan;
    if (first.valueEnd - first.valueStart > PIECE_BYTES) {
      setOwn(out, first.key, parseLongValue(bytes, first, layout));
      run++;
      continue;
    }
    let last = run;
    while (last + 1 < members.length) {
      const next = members[last + 1] as MemberSpan;
      if (next.valueEnd - next.valueStart > PIECE_BYTES || next.valueEnd - first.start > PIECE_BYTES) break;
      last++;
    }
    const parsed: unknown = JSON.parse(`{${bytes.toString('utf8', first.start, (members[last] as MemberSpan).valueEnd)}}`);
    if (typeof parsed !== 'object' || parsed === null) throw new NotPieces();
    const values = parsed as Record<string, unknown>;
    for (const key of Object.keys(values)) setOwn(out, key, values[key]);
    run = last + 1;
  }
  return out;
}

/** A member's value longer than a piece: an array by runs of its items, anything else whole. */
function parseLongValue(bytes: Buffer, member: MemberSpan, layout: Layout): unknown {
  const { valueStart, valueEnd } = member;
  const marks = layout.inner.get(valueStart);
  if (bytes[valueStart] !== OPEN_BRACKET || marks === undefined || marks[marks.length - 1] !== valueEnd - 1 || bytes[valueEnd - 1] !== CLOSE_BRACKET) {
    return JSON.parse(bytes.toString('utf8', valueStart, valueEnd));
  }
  // Item k runs from after the previous comma (or the bracket) to its comma (or the closing bracket).
  const items: unknown[] = [];
  const count = marks.length;
  let from = valueStart + 1;
  let k = 0;
  while (k < count) {
    let last = k;
    while (last + 1 < count && (marks[last + 1] as number) - from <= PIECE_BYTES) last++;
    const end = marks[last] as number;
    const parsed: unknown = JSON.parse(`[${bytes.toString('utf8', from, end)}]`);
    if (!Array.isArray(parsed)) throw new NotPieces();
    for (const item of parsed) items.push(item);
    from = end + 1;
    k = last + 1;
  }
  return items;
}

/**
 * The object's bytes with some top-level members changed: `edits` maps a key to its new value's
 * JSON text, or to undefined to leave the member out; a key the object lacks is added at the end.
 * Everything else keeps its bytes. The result is parts to be written in order, views of the
 * client's bytes but for the new values: nothing is copied (usually three parts: up to the model's
 * value, the new value, the rest).
 */
export function withMembers(raw: JsonObjectBytes, edits: ReadonlyMap<string, string | undefined>): Buffer[] {
  const { bytes, members } = raw;
  /** Ranges of the bytes left out or replaced, in order: [from, to, replacement]. */
  const changes: Array<[number, number, string]> = [];
  const kept = members.filter((member) => !edits.has(member.key) || edits.get(member.key) !== undefined);
  const lastKept = kept[kept.length - 1];
  if (kept.length === 0 && members.length > 0) {
    changes.push([(members[0] as MemberSpan).start, (members[members.length - 1] as MemberSpan).valueEnd, '']);
  } else {
    let previousKept: MemberSpan | undefined;
    for (let i = 0; i < members.length; i++) {
      const member = members[i] as MemberSpan;
      const value = edits.get(member.key);
      if (!edits.has(member.key)) {
        previousKept = member;
      } else if (value !== undefined) {
        changes.push([member.valueStart, member.valueEnd, value]);
        previousKept = member;
      } else {
        // Out with its comma: the one after it, or before it when no kept member follows.
        const next = members.slice(i + 1).find((m) => kept.includes(m));
        if (next !== undefined) changes.push([member.start, next.start, '']);
        else changes.push([(previousKept as MemberSpan).valueEnd, member.valueEnd, '']);
      }
    }
  }
  const present = new Set(members.map((member) => member.key));
  let added = '';
  for (const [key, value] of edits) {
    if (value === undefined || present.has(key)) continue;
    added += `${added === '' && lastKept === undefined ? '' : ','}${JSON.stringify(key)}:${value}`;
  }
  if (added !== '') {
    const at = lastKept === undefined ? bytes.lastIndexOf(CLOSE_BRACE) : lastKept.valueEnd;
    changes.push([at, at, added]);
  }
  changes.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const parts: Buffer[] = [];
  let cursor = 0;
  for (const [from, to, replacement] of changes) {
    if (from > cursor) parts.push(bytes.subarray(cursor, from));
    if (replacement !== '') parts.push(Buffer.from(replacement));
    cursor = Math.max(cursor, to);
  }
  parts.push(bytes.subarray(cursor));
  return parts;
}

/** Whether the member's value in the bytes is the JSON literal `null`. */
export function isNullAt(raw: JsonObjectBytes, member: MemberSpan): boolean {
  return member.valueEnd - member.valueStart === 4 && raw.bytes.toString('latin1', member.valueStart, member.valueEnd) === 'null';
}

/** Size of the buffers a serialised body is written into. */
const CHUNK_BYTES = 64 * 1024;

/**
 * `JSON.stringify(value)` as UTF-8 bytes, in parts to be written in order: each top-level member,
 * and each item of a top-level array, is serialised on its own (no string of the whole, so no
 * large object for V8 to map, nor a 200 KB text to encode and measure again) and written straight
 * into buffers of {@link CHUNK_BYTES}. The bytes are those of `JSON.stringify` of the whole.
 * With `texts`, a value holding references to a lazily read body's texts (./json-lazy.ts) is
 * written with each text's own bytes copied in, as parsing it whole would have written it; a
 * reference serialised inside other text throws `NotLazyError`. Such a value is the body's
 * skeleton, its long texts left out: it is serialised in one `JSON.stringify` (a ~56 KB string for
 * a 200 KB turn), which costs 30% fewer instructions than one call per member and item, unless a
 * top-level array holds frozen items: those are the turns and tools a translation reused from the
 * key's last body (src/translate/messages-to-chat.ts), whose JSON text is kept with them as bytes
 * cut at its references (`frozenSpliced`), so only the items new in this body are serialised, and
 * a kept one is written by copies alone; and where the frozen items stand in the order they stood
 * in the last body written from the same first one, their bytes are that body's own, put among
 * the parts as they are, not copied (`writeFrozenRun`).
 */
export function serializeJson(value: Record<string, unknown>, texts?: LazyTexts): Buffer[] {
  const out = createChunkWriter(texts);
  if (texts !== undefined && !holdsFrozenItems(value)) {
    out.write(JSON.stringify(value));
    return out.parts();
  }
  const written: WrittenRun[] = [];
  out.write('{');
  let first = true;
  for (const key of Object.keys(value)) {
    const member = value[key];
    // Separators are written on their own: joined to a long text they would make V8 copy it.
    if (!Array.isArray(member)) {
      const text = JSON.stringify(member) as string | undefined;
      // JSON.stringify leaves out members it has no text for (undefined, functions, symbols).
      if (text === undefined) continue;
      out.write(`${first ? '' : ','}${JSON.stringify(key)}:`);
      out.write(text);
      first = false;
      continue;
    }
    out.write(`${first ? '' : ','}${JSON.stringify(key)}:[`);
    first = false;
    for (let i = 0; i < member.length;) {
      if (i > 0) out.write(',');
      const item: unknown = member[i];
      if (isFrozenObject(item)) {
        i = writeFrozenRun(member, i, texts, out, written);
        continue;
      }
      // An array item with no text is null, as in JSON.stringify.
      out.write((JSON.stringify(item) as string | undefined) ?? 'null');
      i++;
    }
    out.write(']');
  }
  out.write('}');
  const parts = out.parts();
  for (const run of written) {
    const length = run.ends[run.ends.length - 1] as number;
    const firstItem = run.items[0] as object;
    if (run.items.length < 2 || length > run.items.length * RUN_BYTES_PER_ITEM) frozenRuns.delete(firstItem);
    else frozenRuns.set(firstItem, { lazy: run.lazy, items: run.items, ends: run.ends, parts: keptParts(bytesOf(parts, run.start, run.start + length)) });
  }
  return parts;
}

/**
 * Frozen items written one after another in an upstream body, as {@link serializeJson} wrote
 * them: the items, where each one's bytes end (from the first one's start, commas between them
 * included), and those bytes (views of that body's buffers). Kept by the run's first item.
 */
interface FrozenRun {
  /** Whether the items were written with a body's texts (their references replaced by the texts' bytes). */
  lazy: boolean;
  items: readonly unknown[];
  ends: readonly number[];
  parts: readonly Buffer[];
}

/** A run being written: where it starts in the body's bytes. */
interface WrittenRun extends Omit<FrozenRun, 'parts'> {
  start: number;
}

/**
 * The last run written from each first item. A session's next turn, translated, holds its last
 * turn's frozen items in the same order and a few more (src/common/json-recall.ts,
 * src/translate/messages-to-chat.ts), and a frozen item's bytes are the same every time it is
 * written (its references name the same texts in every body that holds it): so the last body's
 * bytes for the run, as far as its items go on alike, are sent again as they are (bodies are
 * written once and never changed), not copied: a 200 KB translated turn's upstream body is then
 * its few new items written and views of the bytes it shares with the last. Kept as long as the
 * run's first item lives, that is while the gateway remembers the session: about the size of its
 * upstream body again ({@link keptParts}).
 */
const frozenRuns = new WeakMap<object, FrozenRun>();

/**
 * A run is kept only where its copies are many for its bytes: at least two items, of at most this
 * many bytes each on average (an agent's turn has ~1.5 KB an item). One long text in a run would be
 * one copy either way, and its bytes held again for nothing.
 */
const RUN_BYTES_PER_ITEM = 16 * 1024;

/**
 * Writes the run of frozen items that starts at `member[start]` (the comma before it written) and
 * notes it in `written`; returns the index after the run. The items it has in common with the
 * last run written from that item are that run's bytes, put among the parts as they are.
 */
function writeFrozenRun(member: readonly unknown[], start: number, texts: LazyTexts | undefined, out: ChunkWriter, written: WrittenRun[]): number {
  const lazy = texts !== undefined;
  const runStart = out.position();
  const items: unknown[] = [];
  const ends: number[] = [];
  let i = start;
  const last = frozenRuns.get(member[start] as object);
  if (last !== undefined && last.lazy === lazy) {
    let k = 0;
    while (k < last.items.length && i < member.length && member[i] === last.items[k]) {
      items.push(member[i]);
      ends.push(last.ends[k] as number);
      i++;
      k++;
    }
    // At least the first item is in common: the last run is kept by it.
    for (const view of bytesOf(last.parts, 0, last.ends[k - 1] as number)) out.append(view);
  }
  for (; i < member.length && isFrozenObject(member[i]); i++) {
    if (i > start) out.write(',');
    const item = member[i] as Record<string, unknown>;
    if (texts === undefined) out.write(frozenJson(item));
    else writeSpliced(frozenSpliced(item), texts, out.sink);
    items.push(item);
    ends.push(out.position() - runStart);
  }
  written.push({ lazy, items, ends, start: runStart });
  return i;
}

/** Views of bytes `[start, end)` of `parts` taken as one run of bytes. */
function bytesOf(parts: readonly Buffer[], start: number, end: number): Buffer[] {
  const views: Buffer[] = [];
  let offset = 0;
  for (const part of parts) {
    const from = Math.max(start, offset);
    const to = Math.min(end, offset + part.length);
    if (from < to) views.push(part.subarray(from - offset, to - offset));
    offset += part.length;
    if (offset >= end) break;
  }
  return views;
}

/**
 * A run's bytes are kept in at most this many parts. Each body written from the last one's run
 * adds a part or two (the items new in it); past this many they are joined into one, so a long
 * session's run is not a list that grows a part a turn.
 */
const MAX_KEPT_PARTS = 16;

/**
 * A run's bytes as kept for the next body: its views as they are, but where a view holds less
 * than half of the buffer under it (a chunk the rest of this body filled), the bytes are copied
 * out, so a session's run does not keep a 64 KB chunk alive for each turn's few new items.
 */
function keptParts(views: Buffer[]): Buffer[] {
  if (views.length > MAX_KEPT_PARTS) return [joined(views)];
  const kept: Buffer[] = [];
  let small: Buffer[] = [];
  for (const view of views) {
    if (view.length * 2 < view.buffer.byteLength) {
      small.push(view);
      continue;
    }
    if (small.length > 0) {
      kept.push(joined(small));
      small = [];
    }
    kept.push(view);
  }
  if (small.length > 0) kept.push(joined(small));
  return kept;
}

/** `parts` copied into one buffer of their size (not a view of the shared pool, which would count as small again). */
function joined(parts: readonly Buffer[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += part.copy(out, at);
  return out;
}

/** Each frozen item's JSON text as bytes cut at its references, made the first time it is written. */
const splicedItems = new WeakMap<object, SplicedText>();

/**
 * A frozen item's JSON as {@link SplicedText}: written again turn after turn by copies alone. It
 * stands in for the item's JSON text (`frozenJson` is not asked for it), so it holds no more.
 */
function frozenSpliced(item: object): SplicedText {
  let spliced = splicedItems.get(item);
  if (spliced === undefined) {
    spliced = splicedText(JSON.stringify(item));
    splicedItems.set(item, spliced);
  }
  return spliced;
}

function isFrozenObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.isFrozen(value);
}

function holdsFrozenItems(value: Record<string, unknown>): boolean {
  for (const key of Object.keys(value)) {
    const member = value[key];
    if (Array.isArray(member) && member.some(isFrozenObject)) return true;
  }
  return false;
}

/**
 * Writes strings as UTF-8 into buffers of {@link CHUNK_BYTES}, filled up: what does not fit goes on
 * in the next one (`encodeInto` stops between characters and says how much it read). JSON text
 * holding references to `texts` is written with the texts' bytes copied in (./json-lazy.ts).
 */
interface ChunkWriter {
  write(json: string): void;
  sink: TextSink;
  /** Puts `part` among the parts as it is, not copied: bytes that no one writes into again. */
  append(part: Buffer): void;
  /** Bytes written so far. */
  position(): number;
  parts(): Buffer[];
}

function createChunkWriter(texts: LazyTexts | undefined): ChunkWriter {
  const done: Buffer[] = [];
  let chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  // The chunk's bytes [from, used) are written and not yet among the parts.
  let from = 0;
  let used = 0;
  let doneBytes = 0;
  const flush = (): void => {
    if (used === from) return;
    done.push(chunk.subarray(from, used));
    doneBytes += used - from;
    from = used;
  };
  const next = (): void => {
    flush();
    chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    from = 0;
    used = 0;
  };
  const sink = {
    write(text: string): void {
      // Most pieces are short: when even three bytes a unit fits, one native write, no view.
      if (text.length * 3 <= CHUNK_BYTES - used) {
        used += chunk.write(text, used);
        return;
      }
      let rest = text;
      for (;;) {
        const { read, written } = encoder.encodeInto(rest, chunk.subarray(used));
        used += written;
        if (read === rest.length) return;
        rest = rest.slice(read);
        next();
      }
    },
    writeBytes(bytes: Buffer, start: number, end: number): void {
      for (let at = start; at < end;) {
        if (used === CHUNK_BYTES) next();
        const copied = bytes.copy(chunk, used, at, Math.min(end, at + CHUNK_BYTES - used));
        used += copied;
        at += copied;
      }
    },
  };
  return {
    write: texts === undefined ? sink.write : (json) => spliceTexts(json, texts, sink),
    sink,
    append(part) {
      flush();
      done.push(part);
      doneBytes += part.length;
    },
    position: () => doneBytes + used - from,
    parts() {
      flush();
      return done;
    },
  };
}

const encoder = new TextEncoder();
