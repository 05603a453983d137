/**
 * The last body read lazily, remembered per scope (issue 26): a coding agent's next turn is its
 * last turn with a few messages added, the same system, tools and history byte for byte but for
 * where a cache breakpoint moved. So a body is first compared with the one remembered for its key
 * and format (`Buffer.compare` over the common start and the common end, native and cheap; up to
 * {@link SLOTS} per scope, one per session, the one it starts like the longest), and
 * when everything that differs lies inside one top-level array (the `messages`, the `input`), only
 * the items that differ are walked, counted and parsed; the other members and the unchanged items
 * are the values parsed last time, and their texts keep their references.
 *
 * What comes out is what {@link ../http/body.ts readJsonObject} of the whole body gives, but for
 * which index each text reference carries (a reference names a text of the new body's table either
 * way, so what the references resolve to is the same). Anything else, or anything unexpected, and
 * the body is read whole, as before: a remembered body holding an llmux seal, a middle that is not
 * well-formed array items, U+0000, too many unused references in the table.
 *
 * Values are shared between the turns that recall them, so they are frozen when remembered: a rule
 * that changed a request's body in place would throw rather than change the next request's.
 * Bounded: at most {@link RecallOptions.maxBytes} of remembered bodies across scopes (least
 * recently used go first), none longer than {@link RecallOptions.maxBodyBytes}, none compared with
 * when older than {@link RecallOptions.maxAgeMs}. Held in memory only.
 */
import { isUtf8 } from 'node:buffer';
import type { JsonObjectBytes, LazyMembers, MemberSpan } from './json-bytes.ts';
import { CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, walkJson } from './json-bytes.ts';
import type { LazyTexts } from './json-lazy.ts';
import { lazyTexts, skeletonText } from './json-lazy.ts';

export interface RecallOptions {
  /** Bytes of remembered bodies across scopes (16 MB: their parsed values weigh a few times more). */
  maxBytes?: number;
  /** A longer body is not remembered (4 MB: a coding agent's turn is 100 KB to 1 MB). */
  maxBodyBytes?: number;
  /** A remembered body older than this is not compared with (10 minutes). */
  maxAgeMs?: number;
  now?: () => number;
}

/** What {@link createJsonRecall} remembers of one body. */
interface Remembered {
  lazy: LazyMembers;
  read: JsonObjectBytes;
  texts: LazyTexts;
  /** The texts' indices in the order of the bytes (after a recall the table is not in that order). */
  order: number[];
  /** The top-level members' values, frozen, by member (same order as `read.members`). */
  values: unknown[];
  /** The top-level arrays' item separators (json-bytes.ts `Layout.inner`): opening position -> commas, then the closing bracket. */
  inner: Map<number, number[]>;
  /** When it was last read or recalled. */
  at: number;
}

export interface JsonRecall {
  /** The read of `body` built from the body last remembered under `scope`; undefined when it cannot be. */
  recall(scope: string, body: Buffer, lazy: LazyMembers, maxDepth: number): JsonObjectBytes | undefined;
  /** Remembers a body read lazily and whole (`inner`: its walk's layout); freezes its members' values. */
  remember(scope: string, read: JsonObjectBytes, inner: Map<number, number[]>, lazy: LazyMembers): void;
  /** Bodies remembered now, and their bytes. */
  size(): { bodies: number; bytes: number };
}

/** Bytes compared at once by {@link commonStart}. */
const COMPARED_BYTES = 16 * 1024;

/**
 * Where two buffers first differ, `limit` when they agree that far: native comparisons of
 * {@link COMPARED_BYTES} at a time from the start, then halving the piece where they differ (each
 * comparison stops at the first difference). A next turn differs near its end: this reads the
 * common start about once, where one comparison of it all and halving from there read it twice.
 */
function commonStart(a: Buffer, b: Buffer, limit: number): number {
  let low = 0;
  let high = limit;
  for (; low < limit; low += COMPARED_BYTES) {
    const end = Math.min(limit, low + COMPARED_BYTES);
    if (a.compare(b, low, end, low, end) !== 0) {
      high = end;
      break;
    }
  }
  if (low >= limit) return limit;
  // They agree on [0, low) and differ somewhere in [low, high).
  while (high - low > 64) {
    const middle = (low + high) >>> 1;
    if (a.compare(b, low, middle, low, middle) === 0) low = middle;
    else high = middle;
  }
  while (a[low] === b[low]) low++;
  return low;
}

/** How many bytes at the ends of two buffers agree, at most `limit`. */
function commonEnd(a: Buffer, b: Buffer, limit: number): number {
  // Lengths from the end: [0, low) known to agree, a difference within [low, high).
  let low = 0;
  let high = limit;
  if (a.compare(b, b.length - limit, b.length, a.length - limit, a.length) === 0) return limit;
  while (high - low > 64) {
    const middle = (low + high) >>> 1;
    if (a.compare(b, b.length - middle, b.length - low, a.length - middle, a.length - low) === 0) low = middle;
    else high = middle;
  }
  while (low < limit && a[a.length - 1 - low] === b[b.length - 1 - low]) low++;
  return low;
}

/** Freezes a parsed JSON value and everything in it (what the memory shares between turns). */
export function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  if (Array.isArray(value)) for (const item of value) deepFreeze(item);
  else for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
}

/** A common start this long (7/8 of the shorter body) is a session's next turn: it changed only its last messages. */
function nearlyAll(shorter: number): number {
  return shorter - (shorter >> 3);
}

function repeatsNearlyAll(a: Buffer, b: Buffer): boolean {
  const shorter = Math.min(a.length, b.length);
  return commonStart(a, b, shorter) >= nearlyAll(shorter);
}

/** The first position in `order` whose text starts at or after `position`. */
function firstTextFrom(order: readonly number[], spans: readonly number[], position: number): number {
  let low = 0;
  let high = order.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((spans[2 * (order[middle] as number)] as number) < position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** A table may hold this many unused references beyond the texts in use before a body is read whole again. */
const SPARE_REFERENCES = 256;
/**
 * Bodies remembered per scope: a key may run several sessions at once (Claude Code's subagents
 * beside its main conversation, two terminals on one key), and each is read from its own last turn.
 */
const SLOTS = 4;

/** The changed items of a turn are walked in this buffer, reused, when they fit (a turn adds a few KB). */
const WRAPPER_BYTES = 64 * 1024;
let wrapperScratch: Buffer | undefined;

/**
 * A buffer of `length` bytes for the changed items under their key: the one kept for it when they
 * fit, so a turn allocates none. Only read within the call that fills it: nothing made from it
 * holds it (parsing copies what it reads, and the texts are then the body's).
 */
function wrapperFor(length: number): Buffer {
  if (length > WRAPPER_BYTES) return Buffer.allocUnsafe(length);
  wrapperScratch ??= Buffer.allocUnsafe(WRAPPER_BYTES);
  return wrapperScratch.subarray(0, length);
}

export function createJsonRecall(options: RecallOptions = {}): JsonRecall {
  const maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  const now = options.now ?? Date.now;
  /** Least recently used first. */
  const remembered = new Map<string, Remembered>();
  let bytes = 0;

  /** Where a scope's `n`th body is kept. */
  function slotKey(scope: string, n: number): string {
    return `${scope}\u0001${n}`;
  }

  /**
   * A slot of `scope` for `body`: the slot of a body it repeats nearly to its end (its session's,
   * which a body read whole replaces: one that could not be read from it, a retry), else an empty
   * one, else the least recently used.
   */
  function slotFor(scope: string, body: Buffer): string {
    let empty: string | undefined;
    let oldest = slotKey(scope, 0);
    let oldestAt = Infinity;
    for (let n = 0; n < SLOTS; n++) {
      const key = slotKey(scope, n);
      const entry = remembered.get(key);
      if (entry === undefined) {
        empty ??= key;
        continue;
      }
      if (repeatsNearlyAll(entry.read.bytes, body)) return key;
      if (entry.at < oldestAt) {
        oldest = key;
        oldestAt = entry.at;
      }
    }
    return empty ?? oldest;
  }

  function keep(slot: string, entry: Remembered): void {
    forget(slot);
    if (entry.read.bytes.length > Math.min(maxBytes, maxBodyBytes)) return;
    remembered.set(slot, entry);
    bytes += entry.read.bytes.length;
    for (const [oldest, old] of remembered) {
      if (bytes <= maxBytes && now() - old.at <= maxAgeMs) break;
      remembered.delete(oldest);
      bytes -= old.read.bytes.length;
    }
  }

  function forget(slot: string): void {
    const entry = remembered.get(slot);
    if (entry === undefined) return;
    remembered.delete(slot);
    bytes -= entry.read.bytes.length;
  }

  function recall(scope: string, body: Buffer, lazy: LazyMembers, maxDepth: number): JsonObjectBytes | undefined {
    if (body.length > maxBodyBytes) return undefined;
    // The scope's body that this one starts like the longest: its session's last turn. The most
    // recently used first, and one this body repeats nearly to its end (a session's next turn
    // changes only its last messages) is taken without comparing the others.
    const at = now();
    const candidates: Array<{ key: string; entry: Remembered }> = [];
    for (let n = 0; n < SLOTS; n++) {
      const key = slotKey(scope, n);
      const entry = remembered.get(key);
      if (entry !== undefined && entry.lazy === lazy && at - entry.at <= maxAgeMs && entry.read.marked !== true) candidates.push({ key, entry });
    }
    candidates.sort((a, b) => b.entry.at - a.entry.at);
    let last: Remembered | undefined;
    let slot = '';
    let start = -1;
    for (const { key, entry } of candidates) {
      const shorter = Math.min(entry.read.bytes.length, body.length);
      const common = commonStart(entry.read.bytes, body, shorter);
      if (common === shorter && entry.read.bytes.length === body.length) return same(key, entry);
      if (common > start) {
        last = entry;
        slot = key;
        start = common;
      }
      if (common >= nearlyAll(shorter)) break;
    }
    if (last === undefined) return undefined;
    const old = last.read.bytes;
    const shorter = Math.min(old.length, body.length);
    const delta = body.length - old.length;
    const end = commonEnd(old, body, shorter - start);
    // Everything that differs, in the old body's positions, must lie inside one top-level array.
    const oldChangeEnd = old.length - end;
    const index = last.read.members.findIndex((member) => member.valueStart < start && start < member.valueEnd);
    const member = last.read.members[index];
    if (member === undefined || oldChangeEnd > member.valueEnd - 1) return undefined;
    const marks = last.inner.get(member.valueStart);
    const items = last.values[index];
    if (marks === undefined || !Array.isArray(items) || old[member.valueStart] !== OPEN_BRACKET) return undefined;
    const count = marks.length;
    if (items.length !== count && !(items.length === 0 && count === 1)) return undefined;
    // Items kept from the start: those whose comma is in the common start; from the end: those whose comma before is in the common end.
    let kept = 0;
    while (kept < count && (marks[kept] as number) < start) kept++;
    let from = count;
    while (from - 1 >= Math.max(kept, 1) && (marks[from - 2] as number) >= oldChangeEnd) from--;
    const middleStart = kept === 0 ? member.valueStart + 1 : (marks[kept - 1] as number) + 1;
    const oldMiddleEnd = from < count ? (marks[from - 1] as number) : member.valueEnd - 1;
    const middleEnd = oldMiddleEnd + delta;
    if (middleEnd < middleStart) return undefined;
    // A body that keeps most of the items is the session's next turn and takes its place; one that
    // parts from it early (another session with the same start: another subagent, another
    // terminal) is kept beside it.
    const goesOn = kept > 0 && kept >= count - Math.max(2, count >> 2);
    return changed(goesOn ? slot : slotFor(scope, body), last, body, { index, member, marks, items, kept, from, middleStart, oldMiddleEnd, middleEnd, delta, maxDepth });
  }

  /**
   * The same bytes again: the same values in a new top-level object, and the remembered bytes and
   * texts, which are the body's own. The body just read is not kept: it dies young, where keeping
   * each request's 200 KB until the next request had the collector promote them all and sweep the
   * old generation for them several times a second under load.
   */
  function same(slot: string, last: Remembered): JsonObjectBytes {
    const read: JsonObjectBytes = { bytes: last.read.bytes, value: objectOf(last.read.members, last.values), members: last.read.members, duplicateKeys: false, texts: last.texts, marked: last.read.marked };
    remembered.delete(slot);
    remembered.set(slot, last);
    last.at = now();
    return read;
  }

  interface Change {
    index: number;
    member: MemberSpan;
    marks: readonly number[];
    items: readonly unknown[];
    /** Items kept from the start ([0, kept)) and from the end ([from, count)). */
    kept: number;
    from: number;
    /** The changed items' bytes: `[middleStart, middleEnd)` of the new body, `[middleStart, oldMiddleEnd)` of the old. */
    middleStart: number;
    oldMiddleEnd: number;
    middleEnd: number;
    delta: number;
    maxDepth: number;
  }

  /** The body read from `last` where it changed, kept in `slot`. */
  function changed(slot: string, last: Remembered, body: Buffer, change: Change): JsonObjectBytes | undefined {
    const { member, marks, items, kept, from, middleStart, oldMiddleEnd, middleEnd, delta } = change;
    const middle = body.subarray(middleStart, middleEnd);
    if (!isUtf8(middle)) return undefined;
    // The changed items alone, under their member's key, at the depth they have in the body:
    // `{"messages":[` (the key and colon as the body has them), the items, `]}`.
    const headLength = 2 + member.valueStart - member.start;
    const wrapper = wrapperFor(headLength + middle.length + 2);
    wrapper[0] = OPEN_BRACE;
    body.copy(wrapper, 1, member.start, member.valueStart);
    wrapper[headLength - 1] = OPEN_BRACKET;
    middle.copy(wrapper, headLength);
    wrapper[wrapper.length - 2] = CLOSE_BRACKET;
    wrapper[wrapper.length - 1] = CLOSE_BRACE;
    const walk = walkJson(wrapper, change.maxDepth, last.lazy);
    const wrapperMarks = walk.layout?.inner.get(headLength - 1);
    if (walk.tooDeep || walk.layout === undefined || walk.layout.members.length !== 1 || wrapperMarks === undefined) return undefined;
    const spans = walk.texts ?? [];
    // Undefined too for a middle holding U+0000 as an escape (see json-lazy.ts).
    const counted = lazyTexts(wrapper, spans);
    if (counted === undefined) return undefined;

    // The new table: texts before and after the change keep their indices (their references are in
    // the kept values), the changed items' texts take the indices the old ones had, then new ones.
    const oldTexts = last.texts;
    const order = last.order;
    const firstChanged = firstTextFrom(order, oldTexts.spans, middleStart);
    const firstAfter = firstTextFrom(order, oldTexts.spans, oldMiddleEnd);
    const freed = order.slice(firstChanged, firstAfter);
    const newSpans = oldTexts.spans.slice();
    const newUnits = oldTexts.units.slice();
    for (let k = firstAfter; k < order.length; k++) {
      const i = order[k] as number;
      newSpans[2 * i] = (newSpans[2 * i] as number) + delta;
      newSpans[2 * i + 1] = (newSpans[2 * i + 1] as number) + delta;
    }
    const middleIndices: number[] = [];
    const shift = middleStart - headLength;
    for (let k = 0; k < spans.length / 2; k++) {
      const i = k < freed.length ? (freed[k] as number) : newUnits.length;
      middleIndices.push(i);
      newSpans[2 * i] = (spans[2 * k] as number) + shift;
      newSpans[2 * i + 1] = (spans[2 * k + 1] as number) + shift;
      newUnits[i] = counted.units[k] as number;
    }
    for (let k = middleIndices.length; k < freed.length; k++) {
      const i = freed[k] as number;
      newSpans[2 * i] = 0;
      newSpans[2 * i + 1] = 0;
      newUnits[i] = 0;
    }
    const newOrder = [...order.slice(0, firstChanged), ...middleIndices, ...order.slice(firstAfter)];
    if (newUnits.length > 2 * newOrder.length + SPARE_REFERENCES) return undefined;

    let parsed: unknown;
    try {
      parsed = JSON.parse(skeletonText(counted, (k) => middleIndices[k] as number));
    } catch {
      return undefined;
    }
    const middleItems = (parsed as Record<string, unknown>)[member.key];
    if (!Array.isArray(middleItems) || Object.keys(parsed as object).length !== 1) return undefined;
    // Between a kept item and the next, or before the closing bracket after one, there must be an item.
    if (middleItems.length === 0 && (kept > 0 || from < marks.length)) return undefined;
    deepFreeze(middleItems);
    // Spread, not slice: Node 20's V8 takes `slice` of a frozen array down its slow path (~60 ns an item).
    const newItems: unknown[] = [...items];
    newItems.length = kept;
    for (const item of middleItems) newItems.push(item);
    for (let i = from; i < items.length; i++) newItems.push(items[i]);
    Object.freeze(newItems);

    const members = last.read.members.map((m) => (m.valueStart < middleStart ? (m === member ? { ...m, valueEnd: m.valueEnd + delta } : m) : { ...m, start: m.start + delta, valueStart: m.valueStart + delta, valueEnd: m.valueEnd + delta }));
    const values = last.values.slice();
    values[change.index] = newItems;
    const inner = new Map<number, number[]>();
    for (const [open, positions] of last.inner) {
      if (open === member.valueStart) {
        const newMarks = [...marks.slice(0, kept), ...wrapperMarks.map((position) => position + shift), ...marks.slice(from).map((position) => position + delta)];
        inner.set(open, newMarks);
      } else if (open < middleStart) {
        inner.set(open, positions);
      } else {
        inner.set(open + delta, positions.map((position) => position + delta));
      }
    }
    const texts: LazyTexts = { bytes: body, spans: newSpans, units: newUnits };
    const read: JsonObjectBytes = { bytes: body, value: objectOf(members, values), members, duplicateKeys: false, texts, marked: walk.marked };
    keep(slot, { lazy: last.lazy, read, texts, order: newOrder, values, inner, at: now() });
    return read;
  }

  return {
    recall,
    remember(scope, read, inner, lazy) {
      // A body holding a seal is read whole next time (the walk of the changed items alone cannot tell what the rest holds).
      if (read.marked === true) for (let n = 0; n < SLOTS; n++) forget(slotKey(scope, n));
      if (read.texts === undefined || read.duplicateKeys || read.marked === true || read.bytes.length > maxBodyBytes) return;
      const values = read.members.map((member) => read.value[member.key]);
      for (const value of values) deepFreeze(value);
      const order = Array.from({ length: read.texts.units.length }, (_, i) => i);
      keep(slotFor(scope, read.bytes), { lazy, read, texts: read.texts, order, values, inner, at: now() });
    },
    size: () => ({ bodies: remembered.size, bytes }),
  };
}

/** A new top-level object of these members' values, made as JSON.parse makes one. */
function objectOf(members: readonly MemberSpan[], values: readonly unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < members.length; i++) {
    const key = (members[i] as MemberSpan).key;
    if (key === '__proto__') Object.defineProperty(out, key, { value: values[i], writable: true, enumerable: true, configurable: true });
    else out[key] = values[i];
  }
  return out;
}
