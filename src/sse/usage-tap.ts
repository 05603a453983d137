/**
 * Usage tap for same-format pass-through: upstream bytes go to the client unchanged, while the
 * few events that matter to the gateway (usage, completion, in-stream errors) are read on the side.
 *
 * Hot path: most chunks are only searched with `Buffer.indexOf` for candidate byte patterns; only
 * events that hold a candidate are parsed. A chunk that ends on an event boundary (the usual case:
 * upstreams write whole events) is returned as the same Buffer, not copied.
 */
import type { SseEvent, TokenUsage, WireFormat } from '../formats/wire.ts';
import { fromChatUsage, fromMessagesUsage } from '../translate/usage.ts';
import { createSseParser, type SseParser } from './parser.ts';

export interface UsageTap {
  /** Returns the bytes that may be forwarded now: everything up to the last complete event boundary
   *  (a partial event is held back until it completes, so an error event can always be appended cleanly). */
  feed(chunk: Buffer): Buffer | undefined;
  /** Upstream ended: returns any held-back bytes. */
  end(): Buffer | undefined;
  /** Usage as reported by the upstream so far (neutral shape); undefined before any report. */
  usage(): TokenUsage | undefined;
  /** Saw `data: [DONE]` (openai) / `event: message_stop` (anthropic). */
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
}

export interface UsageTapOptions {
  /**
   * Chat format: drop the usage-only chunk (`choices: []`) that llmux asked the upstream for
   * when the client itself did not ask for `stream_options.include_usage`.
   */
  dropUsageChunk?: boolean;
  /** Largest partial event held back, default 16 MiB. */
  maxEventBytes?: number;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;

const USAGE_KEY = Buffer.from('"usage"');
const ERROR_KEY = Buffer.from('"error"');
const DONE = Buffer.from('[DONE]');
const EVENT_FIELD = Buffer.from('event:');
const ANTHROPIC_EVENTS = ['message_start', 'message_delta', 'message_stop', 'error'].map((name) => Buffer.from(name));

function isJsonSpace(byte: number | undefined): boolean {
  return byte === SPACE || byte === LF || byte === CR || byte === TAB;
}

/**
 * Whether `key` occurs as a JSON key whose value is an object (`"usage": {`, not `"usage":null`),
 * or with `orString` also a string (`{"error":"..."}`). Inside a JSON string a quote is always
 * escaped, so text that mentions `"usage":{` never matches.
 */
function hasObjectKey(bytes: Buffer, key: Buffer, orString = false): boolean {
  let from = 0;
  for (;;) {
    const at = bytes.indexOf(key, from);
    if (at === -1) return false;
    let i = at + key.length;
    while (isJsonSpace(bytes[i])) i += 1;
    if (bytes[i] === COLON) {
      i += 1;
      while (isJsonSpace(bytes[i])) i += 1;
      if (bytes[i] === OPEN_BRACE || (orString && bytes[i] === QUOTE)) return true;
    }
    from = at + key.length;
  }
}

/** Whether an `event:` line names one of the Anthropic events the tap reads. */
function hasAnthropicCandidate(bytes: Buffer): boolean {
  let from = 0;
  for (;;) {
    const at = bytes.indexOf(EVENT_FIELD, from);
    if (at === -1) return false;
    from = at + EVENT_FIELD.length;
    const before = at === 0 ? LF : bytes[at - 1];
    if (before !== LF && before !== CR) continue;
    let nameStart = from;
    if (bytes[nameStart] === SPACE) nameStart += 1;
    for (const name of ANTHROPIC_EVENTS) {
      if (nameStart + name.length > bytes.length) continue;
      if (bytes.compare(name, 0, name.length, nameStart, nameStart + name.length) === 0) {
        const after = bytes[nameStart + name.length];
        if (after === LF || after === CR || after === undefined) return true;
      }
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Pass-through must never break on what it only peeks at; the client sees the same bytes.
    return undefined;
  }
}

function errorMessage(error: unknown): string {
  if (typeof error === 'string') return error;
  if (isRecord(error) && typeof error['message'] === 'string') return error['message'];
  return 'upstream reported an error';
}

function latestNonZero(latest: number, earlier: number): number {
  return latest > 0 ? latest : earlier;
}

/**
 * Creates a tap for one upstream stream of the given wire format. `feed` returns what may be
 * written to the client now; `end` returns what was still held when the upstream finished.
 */
export function createUsageTap(format: WireFormat, options: UsageTapOptions = {}): UsageTap {
  const dropUsageChunk = options.dropUsageChunk === true && format === 'openai';
  const maxEventBytes = options.maxEventBytes ?? 16 * 1024 * 1024;
  let stopped = false;
  let overflowed = false;
  // Set by the event readers for the event just parsed.
  let sawUsageOnlyChunk = false;
  let sawError = false;
  let held: Buffer[] = [];
  let heldBytes = 0;
  // Line state carried across chunks, for boundaries split between reads.
  let lineHasBytes = false;
  let pendingCr = false;
  let pendingCrEndedBlank = false;

  let reported: TokenUsage | undefined;
  let completed = false;
  let upstreamError: string | undefined;

  // Made on the first candidate: most chunks of most streams never need one.
  let parser: SseParser | undefined;

  function readChatEvent(event: SseEvent): void {
    const data = event.data;
    if (data === '[DONE]') {
      completed = true;
      return;
    }
    const hasUsage = data.includes('"usage"');
    const hasError = data.includes('"error"');
    if (!hasUsage && !hasError) return;
    const chunk = parseJson(data);
    if (!isRecord(chunk)) return;
    if (hasError && chunk['error'] !== undefined && chunk['error'] !== null) {
      upstreamError = errorMessage(chunk['error']);
      sawError = true;
    }
    if (hasUsage) {
      // Groq also nests usage under x_groq; older Groq versions sent it only there.
      const xGroq = chunk['x_groq'];
      const usage = isRecord(chunk['usage']) ? chunk['usage'] : isRecord(xGroq) && isRecord(xGroq['usage']) ? xGroq['usage'] : undefined;
      if (usage !== undefined) {
        reported = fromChatUsage(usage);
        if (Array.isArray(chunk['choices']) && chunk['choices'].length === 0) sawUsageOnlyChunk = true;
      }
    }
  }

  function readMessagesEvent(event: SseEvent): void {
    const name = event.event;
    if (name !== 'message_start' && name !== 'message_delta' && name !== 'message_stop' && name !== 'error') return;
    if (name === 'message_stop') {
      completed = true;
      return;
    }
    const payload = parseJson(event.data);
    if (!isRecord(payload)) {
      if (name === 'error') {
        upstreamError = 'upstream reported an error';
        sawError = true;
      }
      return;
    }
    if (name === 'error') {
      upstreamError = errorMessage(payload['error']);
      sawError = true;
      return;
    }
    if (name === 'message_start') {
      const message = payload['message'];
      if (isRecord(message) && isRecord(message['usage'])) reported = fromMessagesUsage(message['usage']);
      return;
    }
    const usage = payload['usage'];
    if (!isRecord(usage)) return;
    const delta = fromMessagesUsage(usage);
    const start = reported ?? delta;
    // message_delta carries the cumulative output count; newer API versions repeat input and cache counts too.
    reported = {
      inputTokens: latestNonZero(delta.inputTokens, start.inputTokens),
      outputTokens: typeof usage['output_tokens'] === 'number' ? delta.outputTokens : start.outputTokens,
      cacheReadTokens: latestNonZero(delta.cacheReadTokens, start.cacheReadTokens),
      cacheCreationTokens: latestNonZero(delta.cacheCreationTokens, start.cacheCreationTokens),
    };
  }

  function isCandidate(bytes: Buffer): boolean {
    if (format === 'anthropic') return hasAnthropicCandidate(bytes);
    return bytes.indexOf(DONE) !== -1 || hasObjectKey(bytes, USAGE_KEY) || hasObjectKey(bytes, ERROR_KEY, true);
  }

  /**
   * Reads the complete events in `bytes` (which start at an event boundary) when any may matter,
   * and returns what to forward: `bytes` itself unless an event has to be held back (the usage-only
   * chunk the client did not ask for, anything after an upstream error).
   */
  function inspect(bytes: Buffer, last: boolean): Buffer {
    if (stopped) return EMPTY;
    if (!isCandidate(bytes)) return bytes;
    parser ??= createSseParser({ onEvent: format === 'openai' ? readChatEvent : readMessagesEvent });
    // Event by event, so one can be dropped without touching the others' bytes.
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let changed = false;
    let start = 0;
    while (start < bytes.length) {
      const end = nextEventEnd(bytes, start);
      const event = bytes.subarray(start, end);
      start = end;
      if (stopped) {
        changed = true;
        continue;
      }
      sawUsageOnlyChunk = false;
      sawError = false;
      parser.feed(event);
      if (start >= bytes.length && last) parser.end();
      else parser.reset();
      if (sawError) stopped = true;
      if (dropUsageChunk && sawUsageOnlyChunk && !sawError) {
        changed = true;
        continue;
      }
      kept.push(event);
      keptBytes += event.length;
    }
    if (!changed) return bytes;
    return kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept, keptBytes);
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
    let nextCr = length === 0 ? -1 : chunk.indexOf(CR, position);
    while (position < length) {
      const nextLf = chunk.indexOf(LF, position);
      if (nextCr !== -1 && nextCr < position) nextCr = chunk.indexOf(CR, position);
      const lineEnd = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextLf, nextCr);
      if (lineEnd === -1) {
        lineHasBytes = true;
        break;
      }
      const isBlank = lineEnd === position && !lineHasBytes;
      lineHasBytes = false;
      if (chunk[lineEnd] === CR) {
        if (lineEnd + 1 === length) {
          pendingCr = true;
          pendingCrEndedBlank = isBlank;
        }
        position = lineEnd + 1 < length && chunk[lineEnd + 1] === LF ? lineEnd + 2 : lineEnd + 1;
      } else {
        position = lineEnd + 1;
      }
      if (isBlank) boundary = position;
    }
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
        upstreamError = `an event of the provider's stream is larger than ${maxEventBytes} bytes`;
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

  return {
    feed,
    end,
    usage: () => (reported === undefined ? undefined : { ...reported }),
    get completed() {
      return completed;
    },
    get upstreamError() {
      return upstreamError;
    },
    get stopped() {
      return stopped;
    },
    get overflowed() {
      return overflowed;
    },
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * End of the event that starts at `from`: just past its blank line (LF LF, CRLF CRLF, CR CR or
 * mixed), or the end of `bytes`.
 */
function nextEventEnd(bytes: Buffer, from: number): number {
  let position = from;
  let lineEmpty = true;
  while (position < bytes.length) {
    const byte = bytes[position] as number;
    if (byte === LF || byte === CR) {
      const next = byte === CR && bytes[position + 1] === LF ? position + 2 : position + 1;
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
