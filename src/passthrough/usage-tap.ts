/**
 * Usage tap for same-format pass-through: upstream bytes go to the client unchanged, while the
 * few events that matter to the gateway (usage, completion, in-stream errors) are read on the side.
 *
 * Hot path: most chunks are only searched for candidate byte patterns, in one pass and without
 * allocating (./usage-readers.ts); only the events that hold a candidate are parsed. A chunk that
 * ends on an event boundary (the usual case: upstreams write whole events) is returned as the same
 * Buffer, not copied.
 *
 * Responses streams are the exception that proves it: the events that carry the response object
 * (`response.created`, `.in_progress` and the terminal one) name the model, which becomes the llmux
 * id the client asked for, so those few events are rewritten; every delta passes as it came.
 *
 * The tap also makes the stream name the llmux model id (llmux.md section 3): given `model`, the
 * top-level `model` value of each chat chunk, the message's in a messages `message_start`, and the
 * `modelVersion` of each Gemini event (every one is read: each carries usage) is replaced when it differs (./model-field.ts finds it; a tool input's `model` key is never touched).
 * The chat search then looks for `"model"` keys in the same pass; each costs two or three native
 * byte searches (its line's start, the brackets before it) and, when replaced, one copy of the chunk:
 * about 300 ns a chunk in bench/micro-stream.ts.
 */
import type { TokenUsage, WireFormat } from '../formats/wire.ts';
import { createSseParser, type SseEvent, type SseParser } from '../sse/parser.ts';
import { CR, LF, afterLineEnd, createLineScanner, eventStartBefore, nextEventEnd } from '../sse/lines.ts';
import { MODEL_KEY, chatModelValue, copyRange, messageStartModelValue, modelVersionValue, replaceOne, sameBytes, type ValueSpan } from './model-field.ts';
import { CHAT_READER_WITH_MODEL, READERS } from './usage-readers.ts';
import type { TapState } from './usage-readers.ts';

export interface UsageTap {
  /** Returns the bytes that may be forwarded now: everything up to the last complete event boundary
   *  (a partial event is held back until it completes, so an error event can always be appended cleanly). */
  feed(chunk: Buffer): Buffer | undefined;
  /** Upstream ended: returns any held-back bytes. */
  end(): Buffer | undefined;
  /** Usage as reported by the upstream so far (neutral shape); undefined before any report. */
  usage(): TokenUsage | undefined;
  /** Saw `data: [DONE]` (openai) / `event: message_stop` (anthropic) / a `finishReason` (gemini). */
  readonly completed: boolean;
  /** Saw an in-stream error event/chunk: its message. */
  readonly upstreamError: string | undefined;
  /**
   * Nothing more will be forwarded: the upstream reported an error (the client has it, and a chat
   * stream that failed must not go on to `[DONE]`), or a partial event outgrew `maxEventBytes`.
   */
  readonly stopped: boolean;
  /** A partial event outgrew `maxEventBytes`; the caller should send its own in-stream error. */
  readonly overflowed: boolean;
  /**
   * Responses streams: the response object the stream carried last, as forwarded (`response.created`'s
   * until the terminal event's); undefined before any.
   */
  answer(): unknown;
  /**
   * Responses streams: one past the last `sequence_number` forwarded (0 before any), the number an
   * event llmux adds to the stream takes (src/dialects/responses.ts `responsesErrorFrame`).
   */
  nextSequenceNumber(): number;
}

export interface UsageTapOptions {
  /**
   * The llmux model id: a top-level upstream `model` value that differs is replaced by it (chat,
   * messages), and so is the `model` of every response object a Responses stream carries.
   */
  model?: string;
  /**
   * Chat format: drop the usage-only chunk (`choices: []`) that llmux asked the upstream for
   * when the client itself did not ask for `stream_options.include_usage`.
   */
  dropUsageChunk?: boolean;
  /** Largest partial event held back, default 16 MiB. */
  maxEventBytes?: number;
}


/**
 * Creates a tap for one upstream stream of the given wire format. `feed` returns what may be
 * written to the client now; `end` returns what was still held when the upstream finished.
 */
export function createUsageTap(format: WireFormat, options: UsageTapOptions = {}): UsageTap {
  // Its own small allocation, not a slice of Node's shared 8 KB pool: the stream keeps it as long
  // as it is open, and a pooled slice would keep its whole slab.
  const modelJson = options.model === undefined ? undefined : ownBytes(JSON.stringify(options.model));
  const chatModels = modelJson !== undefined && format === 'chat';
  const reader = chatModels ? CHAT_READER_WITH_MODEL : READERS[format];
  // Only chat streams have a usage-only chunk for the reader to report.
  const dropUsageChunk = options.dropUsageChunk === true;
  const maxEventBytes = options.maxEventBytes ?? 16 * 1024 * 1024;
  let stopped = false;
  let overflowed = false;
  const numbered = format === 'responses';
  let nextSequence = 0;
  let held: Buffer[] = [];
  let heldBytes = 0;
  // Line state carried across chunks, for boundaries split between reads.
  let lineHasBytes = false;
  let pendingCr = false;
  let pendingCrEndedBlank = false;
  const lines = createLineScanner();
  const state: TapState = {
    reported: undefined,
    completed: false,
    upstreamError: undefined,
    sawUsageOnlyChunk: false,
    sawError: false,
    sawMessageStart: false,
    sawModelVersion: false,
    replacement: undefined,
    answer: undefined,
    clientModel: options.model,
  };
  // Per inspected chunk, as start/end pairs in order: model values to replace, events to drop. The
  // arrays are reused; the counts say how much of them is this chunk's (setting an array's length
  // is a runtime call, measured at 3% of a rewritten stream).
  const replaced: number[] = [];
  const dropped: number[] = [];
  // Responses events rewritten whole (the few that carry the response object): their spans and new text.
  const swapped: number[] = [];
  const swaps: string[] = [];
  let swappedCount = 0;
  let replacedCount = 0;
  let droppedCount = 0;
  const span: ValueSpan = { start: 0, end: 0 };

  // Made on the first candidate: most chunks of most streams never need one.
  let parser: SseParser | undefined;
  const onEvent = (event: SseEvent): void => reader.readEvent(event, state);

  /**
   * Reads the events in `bytes` (which start at an event boundary) that hold a candidate, and
   * returns what to forward: `bytes` itself unless an event has to be held back (the usage-only
   * chunk the client did not ask for, anything after an upstream error). Events before a candidate
   * are passed over unparsed: under load one read can carry 20 events, and only one of them matters.
   */
  function inspect(bytes: Buffer, last: boolean): Buffer {
    if (stopped) return EMPTY;
    if (numbered) nextSequence = sequenceAfter(bytes, nextSequence);
    let match = reader.findCandidate(bytes, 0);
    if (match === -1) return bytes;
    replacedCount = 0;
    droppedCount = 0;
    swappedCount = 0;
    let position = 0;
    while (match !== -1) {
      if (chatModels && bytes[match + 1] === MODEL_KEY[1]) {
        if (chatModelValue(bytes, match, span) && !sameBytes(bytes, span.start, span.end, modelJson)) replacedCount = note(replaced, replacedCount, span);
        match = reader.findCandidate(bytes, match + MODEL_KEY.length);
        continue;
      }
      parser ??= createSseParser(reader.eventNames === undefined ? { onEvent } : { onEvent, eventNames: reader.eventNames });
      const start = eventStartBefore(bytes, position, match);
      const end = nextEventEnd(bytes, start);
      state.sawUsageOnlyChunk = false;
      state.sawError = false;
      state.sawMessageStart = false;
      state.sawModelVersion = false;
      state.replacement = undefined;
      // One event at a time, so one can be dropped or replaced without touching the others' bytes.
      parser.feed(bytes.subarray(start, end));
      if (end >= bytes.length && last) parser.end();
      else parser.reset();
      position = end;
      if (state.replacement !== undefined) {
        // A Responses event naming the model, failures included: forwarded with the llmux id.
        swaps[swappedCount >> 1] = state.replacement;
        span.start = start;
        span.end = end;
        swappedCount = note(swapped, swappedCount, span);
      }
      if (state.sawError) {
        stopped = true;
        break;
      }
      if (dropUsageChunk && state.sawUsageOnlyChunk) {
        // The event's own model value goes with it.
        while (replacedCount > 0 && (replaced[replacedCount - 2] as number) >= start) replacedCount -= 2;
        span.start = start;
        span.end = end;
        droppedCount = note(dropped, droppedCount, span);
      } else if (state.sawMessageStart && modelJson !== undefined) {
        if (messageStartModelValue(bytes, start, end, span) && !sameBytes(bytes, span.start, span.end, modelJson)) replacedCount = note(replaced, replacedCount, span);
      } else if (state.sawModelVersion && modelJson !== undefined) {
        if (modelVersionValue(bytes, start, end, span) && !sameBytes(bytes, span.start, span.end, modelJson)) replacedCount = note(replaced, replacedCount, span);
      }
      match = reader.findCandidate(bytes, end);
    }
    // After an upstream error nothing more is forwarded, in this chunk or later.
    const keptTo = stopped ? position : bytes.length;
    if (replacedCount === 0 && droppedCount === 0 && swappedCount === 0 && keptTo === bytes.length) return bytes;
    // Only a Responses stream swaps events, and it neither drops events nor replaces model values.
    return swappedCount > 0 ? rebuildSwapped(bytes, keptTo) : rebuild(bytes, keptTo);
  }

  /** The bytes up to `keptTo` with the swapped events written anew. */
  function rebuildSwapped(bytes: Buffer, keptTo: number): Buffer {
    const pieces: Array<Buffer> = [];
    let from = 0;
    for (let w = 0; w < swappedCount && (swapped[w] as number) < keptTo; w += 2) {
      if ((swapped[w] as number) > from) pieces.push(bytes.subarray(from, swapped[w]));
      pieces.push(Buffer.from(swaps[w >> 1] as string));
      from = swapped[w + 1] as number;
    }
    if (keptTo > from) pieces.push(bytes.subarray(from, keptTo));
    return pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces);
  }

  /**
   * The bytes up to `keptTo` with the dropped events left out and the model values replaced (both in
   * order), copied once into one new buffer.
   */
  function rebuild(bytes: Buffer, keptTo: number): Buffer {
    const model = modelJson ?? EMPTY;
    if (replacedCount === 2 && droppedCount === 0 && keptTo === bytes.length) return replaceOne(bytes, replaced[0] as number, replaced[1] as number, model);
    let size = keptTo;
    for (let r = 0; r < replacedCount; r += 2) if ((replaced[r] as number) < keptTo) size += model.length - ((replaced[r + 1] as number) - (replaced[r] as number));
    for (let d = 0; d < droppedCount; d += 2) if ((dropped[d] as number) < keptTo) size -= (dropped[d + 1] as number) - (dropped[d] as number);
    const out = Buffer.allocUnsafe(size);
    let from = 0;
    let at = 0;
    let r = 0;
    let d = 0;
    while (r < replacedCount || d < droppedCount) {
      const takeReplacement = d >= droppedCount || (r < replacedCount && (replaced[r] as number) < (dropped[d] as number));
      const cutStart = (takeReplacement ? replaced[r] : dropped[d]) as number;
      const cutEnd = (takeReplacement ? replaced[r + 1] : dropped[d + 1]) as number;
      if (cutStart >= keptTo) break;
      at = copyRange(bytes, from, cutStart, out, at);
      if (takeReplacement) {
        out.set(model, at);
        at += model.length;
        r += 2;
      } else {
        d += 2;
      }
      from = cutEnd;
    }
    copyRange(bytes, from, keptTo, out, at);
    return out;
  }

  /** End of the last blank line (event boundary) in `chunk`, or -1; advances the line state. */
  function lastBoundary(chunk: Buffer): number {
    const length = chunk.length;
    // Fast path: a chunk ending in a blank line ends on a boundary, whatever came before.
    if (length >= 2 && chunk[length - 1] === LF && (chunk[length - 2] === LF || (length >= 4 && chunk[length - 2] === CR && chunk[length - 3] === LF && chunk[length - 4] === CR))) {
      pendingCr = false;
      lineHasBytes = false;
      return length;
    }
    let boundary = -1;
    let position = 0;
    if (pendingCr) {
      pendingCr = false;
      if (length > 0 && chunk[0] === LF) {
        position = 1;
        // The LF completes a CRLF whose CR ended a blank line: keep it with what is forwarded now.
        if (pendingCrEndedBlank) boundary = 1;
      }
    }
    lines.start(chunk, position);
    while (position < length) {
      const lineEnd = lines.next(position);
      if (lineEnd === -1) {
        lineHasBytes = true;
        break;
      }
      const isBlank = lineEnd === position && !lineHasBytes;
      lineHasBytes = false;
      if (chunk[lineEnd] === CR && lineEnd + 1 === length) {
        pendingCr = true;
        pendingCrEndedBlank = isBlank;
      }
      position = afterLineEnd(chunk, lineEnd);
      if (isBlank) boundary = position;
    }
    lines.release();
    return boundary;
  }

  function feed(chunk: Buffer): Buffer | undefined {
    if (chunk.length === 0) return undefined;
    const boundary = lastBoundary(chunk);
    if (stopped) return undefined;
    if (boundary === -1) {
      held.push(chunk);
      heldBytes += chunk.length;
      if (heldBytes > maxEventBytes) {
        // A partial event this large is not an answer llmux can pass on whole.
        overflowed = true;
        stopped = true;
        state.upstreamError = `an event of the provider's stream is larger than ${maxEventBytes} bytes`;
        held = [];
        heldBytes = 0;
      }
      return undefined;
    }
    let out: Buffer;
    if (held.length === 0) {
      out = boundary === chunk.length ? chunk : chunk.subarray(0, boundary);
    } else {
      held.push(chunk.subarray(0, boundary));
      out = Buffer.concat(held, heldBytes + boundary);
      held = [];
      heldBytes = 0;
    }
    if (boundary < chunk.length) {
      held.push(chunk.subarray(boundary));
      heldBytes = chunk.length - boundary;
    }
    return inspect(out, false);
  }

  function end(): Buffer | undefined {
    if (held.length === 0) return undefined;
    const out = held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held, heldBytes);
    held = [];
    heldBytes = 0;
    return inspect(out, true);
  }

  // What the caller reads of the tap is copied onto it after each feed and end, as plain
  // properties: V8 keeps an object literal with accessors in dictionary mode (~500 B more), and
  // every open stream holds its tap.
  const tap = {
    feed(chunk: Buffer): Buffer | undefined {
      return settled(feed(chunk));
    },
    end(): Buffer | undefined {
      return settled(end());
    },
    usage: (): TokenUsage | undefined => (state.reported === undefined ? undefined : { ...state.reported }),
    completed: false,
    upstreamError: undefined as string | undefined,
    stopped: false,
    overflowed: false,
    answer: (): unknown => state.answer,
    nextSequenceNumber: (): number => nextSequence,
  };
  function settled(out: Buffer | undefined): Buffer | undefined {
    tap.completed = state.completed;
    tap.upstreamError = state.upstreamError;
    tap.stopped = stopped;
    tap.overflowed = overflowed;
    return out;
  }
  return tap;
}

const EMPTY = Buffer.alloc(0);

/** `text` as UTF-8 in a buffer of its own (Buffer.from slices small ones out of a shared pool). */
function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/*
 * A Responses event's `sequence_number` key. Inside a JSON string every quote is escaped, so text
 * that mentions it never matches; and numbers only grow, so the last one in the bytes is the one.
 */
const SEQUENCE_KEY = Buffer.from('"sequence_number"');
const COLON = 0x3a;
const SPACE = 0x20;
const TAB = 0x09;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

/** One past the last `sequence_number` in `bytes` (whole events), or `current` when it has none. */
function sequenceAfter(bytes: Buffer, current: number): number {
  const at = bytes.lastIndexOf(SEQUENCE_KEY);
  if (at === -1) return current;
  let i = at + SEQUENCE_KEY.length;
  // The colon, and any white space around it.
  while (i < bytes.length && (bytes[i] === COLON || bytes[i] === SPACE || bytes[i] === TAB || bytes[i] === CR || bytes[i] === LF)) i += 1;
  let value = 0;
  let digits = 0;
  for (; i < bytes.length && digits < 15; i += 1, digits += 1) {
    const byte = bytes[i] as number;
    if (byte < DIGIT_0 || byte > DIGIT_9) break;
    value = value * 10 + (byte - DIGIT_0);
  }
  return digits === 0 ? current : Math.max(current, value + 1);
}

/** Writes `span` as the next pair of `list` (from `count` on); returns the new count. */
function note(list: number[], count: number, span: ValueSpan): number {
  list[count] = span.start;
  list[count + 1] = span.end;
  return count + 2;
}
