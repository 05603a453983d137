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
 *
 * Longer than ~400 lines: one tap's state (line boundaries, held bytes, candidates, rewrites) is read
 * and written by every step of its hot path, which reads best as one class in one file.
 */
import type { TokenUsage, WireFormat } from '../formats/wire.ts';
import { createSseParser, type SseEvent, type SseParser } from '../sse/parser.ts';
import { CR, LF, afterLineEnd, createLineScanner, eventStartBefore, nextEventEnd } from '../sse/lines.ts';
import { MODEL_KEY, chatModelValue, copyRange, messageStartModelValue, modelVersionValue, replaceOne, sameBytes, type ValueSpan } from './model-field.ts';
import { CHAT_READER_WITH_MODEL, READERS } from './usage-readers.ts';
import type { TapReader, TapState } from './usage-readers.ts';

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
  return new Tap(format, options);
}

/**
 * Line scanning state lives only within one call of `lastBoundary` (started and released in it),
 * so every tap shares one scanner rather than each open stream holding its own.
 */
const LINES = createLineScanner();
/** Scratch for one value's span, only used within one call of `inspect`. */
const SPAN: ValueSpan = { start: 0, end: 0 };

/**
 * A tap is an object with its methods on the prototype, not closures over a shared context: every
 * open stream holds its tap, and a dozen closures with their context cost about three times what
 * one object's fields do. What the caller reads of it (`completed`, `upstreamError`, `stopped`,
 * `overflowed`) are plain fields, brought up to date after each feed and end.
 */
class Tap implements UsageTap {
  completed = false;
  upstreamError: string | undefined = undefined;
  stopped = false;
  overflowed = false;
  /** The model id as JSON (shared by the streams naming it: see modelBytes). */
  private readonly modelJson: Buffer | undefined;
  /** Chat chunks' `model` values are looked for in the same search as the candidates. */
  private readonly chatModels: boolean;
  private readonly reader: TapReader;
  /** Only chat streams have a usage-only chunk for the reader to report. */
  private readonly dropUsageChunk: boolean;
  private readonly maxEventBytes: number;
  /** A Responses stream: its events' `sequence_number`s are followed. */
  private readonly numbered: boolean;
  private nextSequence = 0;
  private held: Buffer[] = [];
  private heldBytes = 0;
  // Line state carried across chunks, for boundaries split between reads.
  private lineHasBytes = false;
  private pendingCr = false;
  private pendingCrEndedBlank = false;
  private readonly state: TapState;
  // Per inspected chunk, as start/end pairs in order: model values to replace, events to drop. The
  // arrays are made on first use, room for one pair (most chunks have one), and then reused; the counts say how much of them is this chunk's
  // (setting an array's length is a runtime call, measured at 3% of a rewritten stream).
  private replaced: number[] | undefined = undefined;
  private dropped: number[] | undefined = undefined;
  // Responses events rewritten whole (the few that carry the response object): their spans and new text.
  private swapped: number[] | undefined = undefined;
  private swaps: string[] | undefined = undefined;
  private swappedCount = 0;
  private replacedCount = 0;
  private droppedCount = 0;
  /** Made on the first candidate: most chunks of most streams never need one. */
  private parser: SseParser | undefined = undefined;

  constructor(format: WireFormat, options: UsageTapOptions) {
    this.modelJson = options.model === undefined ? undefined : modelBytes(options.model);
    this.chatModels = this.modelJson !== undefined && format === 'chat';
    this.reader = this.chatModels ? CHAT_READER_WITH_MODEL : READERS[format];
    this.dropUsageChunk = options.dropUsageChunk === true;
    this.maxEventBytes = options.maxEventBytes ?? 16 * 1024 * 1024;
    this.numbered = format === 'responses';
    this.state = {
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
  }

  feed(chunk: Buffer): Buffer | undefined {
    return this.settled(this.feedChunk(chunk));
  }

  end(): Buffer | undefined {
    return this.settled(this.endHeld());
  }

  usage(): TokenUsage | undefined {
    return this.state.reported === undefined ? undefined : { ...this.state.reported };
  }

  answer(): unknown {
    return this.state.answer;
  }

  nextSequenceNumber(): number {
    return this.nextSequence;
  }

  private settled(out: Buffer | undefined): Buffer | undefined {
    this.completed = this.state.completed;
    this.upstreamError = this.state.upstreamError;
    return out;
  }

  /**
   * Reads the events in `bytes` (which start at an event boundary) that hold a candidate, and
   * returns what to forward: `bytes` itself unless an event has to be held back (the usage-only
   * chunk the client did not ask for, anything after an upstream error). Events before a candidate
   * are passed over unparsed: under load one read can carry 20 events, and only one of them matters.
   */
  private inspect(bytes: Buffer, last: boolean): Buffer {
    if (this.stopped) return EMPTY;
    if (this.numbered) this.nextSequence = sequenceAfter(bytes, this.nextSequence);
    const { reader, state, modelJson } = this;
    let match = reader.findCandidate(bytes, 0);
    if (match === -1) return bytes;
    this.replacedCount = 0;
    this.droppedCount = 0;
    this.swappedCount = 0;
    const span = SPAN;
    let position = 0;
    while (match !== -1) {
      if (this.chatModels && modelJson !== undefined && bytes[match + 1] === MODEL_KEY[1]) {
        if (chatModelValue(bytes, match, span) && !sameBytes(bytes, span.start, span.end, modelJson)) this.replacedCount = note(this.replaced ??= [0, 0], this.replacedCount, span);
        match = reader.findCandidate(bytes, match + MODEL_KEY.length);
        continue;
      }
      const parser = this.parser ??= this.newParser();
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
        (this.swaps ??= [])[this.swappedCount >> 1] = state.replacement;
        span.start = start;
        span.end = end;
        this.swappedCount = note(this.swapped ??= [0, 0], this.swappedCount, span);
      }
      if (state.sawError) {
        this.stopped = true;
        break;
      }
      if (this.dropUsageChunk && state.sawUsageOnlyChunk) {
        // The event's own model value goes with it.
        const replaced = this.replaced;
        while (replaced !== undefined && this.replacedCount > 0 && (replaced[this.replacedCount - 2] as number) >= start) this.replacedCount -= 2;
        span.start = start;
        span.end = end;
        this.droppedCount = note(this.dropped ??= [0, 0], this.droppedCount, span);
      } else if (state.sawMessageStart && modelJson !== undefined) {
        if (messageStartModelValue(bytes, start, end, span) && !sameBytes(bytes, span.start, span.end, modelJson)) this.replacedCount = note(this.replaced ??= [0, 0], this.replacedCount, span);
      } else if (state.sawModelVersion && modelJson !== undefined) {
        if (modelVersionValue(bytes, start, end, span) && !sameBytes(bytes, span.start, span.end, modelJson)) this.replacedCount = note(this.replaced ??= [0, 0], this.replacedCount, span);
      }
      match = reader.findCandidate(bytes, end);
    }
    // After an upstream error nothing more is forwarded, in this chunk or later.
    const keptTo = this.stopped ? position : bytes.length;
    if (this.replacedCount === 0 && this.droppedCount === 0 && this.swappedCount === 0 && keptTo === bytes.length) return bytes;
    // Only a Responses stream swaps events, and it neither drops events nor replaces model values.
    return this.swappedCount > 0 ? this.rebuildSwapped(bytes, keptTo) : this.rebuild(bytes, keptTo);
  }

  private newParser(): SseParser {
    const { reader, state } = this;
    const onEvent = (event: SseEvent): void => reader.readEvent(event, state);
    return createSseParser(reader.eventNames === undefined ? { onEvent } : { onEvent, eventNames: reader.eventNames });
  }

  /** The bytes up to `keptTo` with the swapped events written anew. */
  private rebuildSwapped(bytes: Buffer, keptTo: number): Buffer {
    const swapped = this.swapped ?? [];
    const swaps = this.swaps ?? [];
    const pieces: Array<Buffer> = [];
    let from = 0;
    for (let w = 0; w < this.swappedCount && (swapped[w] as number) < keptTo; w += 2) {
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
  private rebuild(bytes: Buffer, keptTo: number): Buffer {
    const model = this.modelJson ?? EMPTY;
    const replaced = this.replaced ?? [];
    const dropped = this.dropped ?? [];
    const { replacedCount, droppedCount } = this;
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
  private lastBoundary(chunk: Buffer): number {
    const length = chunk.length;
    // Fast path: a chunk ending in a blank line ends on a boundary, whatever came before.
    if (length >= 2 && chunk[length - 1] === LF && (chunk[length - 2] === LF || (length >= 4 && chunk[length - 2] === CR && chunk[length - 3] === LF && chunk[length - 4] === CR))) {
      this.pendingCr = false;
      this.lineHasBytes = false;
      return length;
    }
    let boundary = -1;
    let position = 0;
    if (this.pendingCr) {
      this.pendingCr = false;
      if (length > 0 && chunk[0] === LF) {
        position = 1;
        // The LF completes a CRLF whose CR ended a blank line: keep it with what is forwarded now.
        if (this.pendingCrEndedBlank) boundary = 1;
      }
    }
    const lines = LINES;
    lines.start(chunk, position);
    while (position < length) {
      const lineEnd = lines.next(position);
      if (lineEnd === -1) {
        this.lineHasBytes = true;
        break;
      }
      const isBlank = lineEnd === position && !this.lineHasBytes;
      this.lineHasBytes = false;
      if (chunk[lineEnd] === CR && lineEnd + 1 === length) {
        this.pendingCr = true;
        this.pendingCrEndedBlank = isBlank;
      }
      position = afterLineEnd(chunk, lineEnd);
      if (isBlank) boundary = position;
    }
    lines.release();
    return boundary;
  }

  private feedChunk(chunk: Buffer): Buffer | undefined {
    if (chunk.length === 0) return undefined;
    const boundary = this.lastBoundary(chunk);
    if (this.stopped) return undefined;
    if (boundary === -1) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      if (this.heldBytes > this.maxEventBytes) {
        // A partial event this large is not an answer llmux can pass on whole.
        this.overflowed = true;
        this.stopped = true;
        this.state.upstreamError = `an event of the provider's stream is larger than ${this.maxEventBytes} bytes`;
        this.held = [];
        this.heldBytes = 0;
      }
      return undefined;
    }
    let out: Buffer;
    if (this.held.length === 0) {
      out = boundary === chunk.length ? chunk : chunk.subarray(0, boundary);
    } else {
      this.held.push(chunk.subarray(0, boundary));
      out = Buffer.concat(this.held, this.heldBytes + boundary);
      this.held = [];
      this.heldBytes = 0;
    }
    if (boundary < chunk.length) {
      this.held.push(chunk.subarray(boundary));
      this.heldBytes = chunk.length - boundary;
    }
    return this.inspect(out, false);
  }

  private endHeld(): Buffer | undefined {
    if (this.held.length === 0) return undefined;
    const out = this.held.length === 1 ? (this.held[0] as Buffer) : Buffer.concat(this.held, this.heldBytes);
    this.held = [];
    this.heldBytes = 0;
    return this.inspect(out, true);
  }
}

const EMPTY = Buffer.alloc(0);

/** The JSON of the model ids streams name, one buffer per id for every stream naming it (read only). */
const MODEL_BYTES = new Map<string, Buffer>();
/** Model ids are the catalog's and the config's; the bound only keeps a strange config from growing it. */
const MODEL_BYTES_MAX = 256;

/**
 * A model id's JSON as bytes, shared rather than allocated per stream (a Buffer, its ArrayBuffer and
 * its store, ~250 B an open stream held), each in its own small allocation: a slice of Node's shared
 * 8 KB pool would keep its whole slab.
 */
function modelBytes(model: string): Buffer {
  let bytes = MODEL_BYTES.get(model);
  if (bytes === undefined) {
    if (MODEL_BYTES.size >= MODEL_BYTES_MAX) MODEL_BYTES.clear();
    bytes = ownBytes(JSON.stringify(model));
    MODEL_BYTES.set(model, bytes);
  }
  return bytes;
}

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
