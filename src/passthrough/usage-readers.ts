/**
 * How the usage tap finds and reads the few events of a same-format stream that matter to the
 * gateway: usage, completion, in-stream errors, and where the model is named (./usage-tap.ts).
 * One reader per wire format, each a candidate search over bytes and an event reader.
 *
 * The searches are the hot part: profiles of 100-chunk streams (bench/RESULTS.md) put the earlier
 * search, three multi-byte `Buffer.indexOf` scans per chunk, at 7% of llmux's busy time: such a
 * native search stops at every occurrence of the pattern's first byte (`"`, dozens per chat chunk),
 * about 640 ns per 264-byte chunk. So the chat search is one JS loop that skips ahead (Horspool),
 * and the messages search hops between line ends with single-byte `indexOf` (memchr);
 * bench/micro-stream.ts measures both.
 */
import type { TokenUsage, WireFormat } from '../formats/wire.ts';
import { MESSAGES_EVENT_NAMES } from '../formats/frames.ts';
import { chatUsageObject, foldMessagesUsage, fromChatUsage, fromGeminiUsage, fromResponsesUsage } from '../formats/usage.ts';
import type { SseEvent } from '../sse/parser.ts';
import { CR, LF, createLineScanner, isLineEnd } from '../sse/lines.ts';
import { isRecord } from '../common/json.ts';
import { MODEL_KEY, isModelKeyAt } from './model-field.ts';

const SPACE = 0x20;
const TAB = 0x09;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;
const CLOSE_BRACKET = 0x5d;

function isJsonSpace(byte: number | undefined): boolean {
  return byte === SPACE || byte === LF || byte === CR || byte === TAB;
}

/** Whether `bytes` holds `pattern` at `at` (false past either end). */
function matchesAt(bytes: Buffer, at: number, pattern: Uint8Array): boolean {
  if (at < 0 || at + pattern.length > bytes.length) return false;
  for (let i = 0; i < pattern.length; i += 1) if (bytes[at + i] !== pattern[i]) return false;
  return true;
}

/*
 * Chat candidates: `[DONE]`, and the keys `"usage"` (object value) and `"error"` (object or string
 * value), found in one Horspool scan over the patterns' 6-byte tails (`usage"`, `error"`, `[DONE]`):
 * only a window ending in `"` or `]` can hold a match and is compared; any other last byte moves
 * the window on as far as no tail could still end inside it. Keys are matched whole with their opening quote
 * and their value checked after any JSON whitespace, so padded JSON (`"usage" : {`, as Python
 * servers write it) is found as before, and text that mentions `"usage":{` never is: inside a JSON
 * string every quote is escaped.
 */
const USAGE_KEY = Buffer.from('"usage"');
const ERROR_KEY = Buffer.from('"error"');
const DONE = Buffer.from('[DONE]');
const SCAN_WINDOW = 6;
function skipTable(tails: Buffer[]): Uint8Array {
  const table = new Uint8Array(256).fill(SCAN_WINDOW);
  for (const tail of tails) {
    for (let i = 0; i < SCAN_WINDOW - 1; i += 1) {
      const byte = tail[i] as number;
      table[byte] = Math.min(table[byte] as number, SCAN_WINDOW - 1 - i);
    }
  }
  return table;
}
const SCAN_SKIP = skipTable([USAGE_KEY.subarray(1), ERROR_KEY.subarray(1), DONE]);
/** The same search with `"model"` keys as candidates too (its tail `model"` is 6 bytes as well). */
const SCAN_SKIP_WITH_MODEL = skipTable([USAGE_KEY.subarray(1), ERROR_KEY.subarray(1), DONE, MODEL_KEY.subarray(1)]);

/**
 * Whether the JSON key that starts at `keyStart` (`keyLength` bytes with its quotes) has an object
 * value (`"usage": {`, not `"usage":null`), or with `orString` also a string (`{"error":"..."}`).
 */
function hasObjectValue(bytes: Buffer, keyStart: number, keyLength: number, orString: boolean): boolean {
  let i = keyStart + keyLength;
  while (isJsonSpace(bytes[i])) i += 1;
  if (bytes[i] !== COLON) return false;
  i += 1;
  while (isJsonSpace(bytes[i])) i += 1;
  return bytes[i] === OPEN_BRACE || (orString && bytes[i] === QUOTE);
}

/** Where the first chat candidate at or after `from` starts, or -1; with `withModel`, `"model"` keys count. */
function findChatCandidate(bytes: Buffer, from: number, withModel: boolean): number {
  const length = bytes.length;
  const skip = withModel ? SCAN_SKIP_WITH_MODEL : SCAN_SKIP;
  let windowEnd = from + SCAN_WINDOW - 1;
  while (windowEnd < length) {
    const last = bytes[windowEnd] as number;
    if (last === QUOTE) {
      const keyStart = windowEnd - USAGE_KEY.length + 1;
      if (matchesAt(bytes, keyStart, USAGE_KEY)) {
        if (hasObjectValue(bytes, keyStart, USAGE_KEY.length, false)) return keyStart;
      } else if (matchesAt(bytes, keyStart, ERROR_KEY)) {
        if (hasObjectValue(bytes, keyStart, ERROR_KEY.length, true)) return keyStart;
      } else if (withModel && isModelKeyAt(bytes, keyStart)) {
        return keyStart;
      }
    } else if (last === CLOSE_BRACKET && matchesAt(bytes, windowEnd - DONE.length + 1, DONE)) {
      return windowEnd - DONE.length + 1;
    }
    windowEnd += skip[last] as number;
  }
  return -1;
}

/*
 * Messages candidates: an `event:` line, at a line start, naming one of the events the tap reads.
 * Only line starts can hold one, so the search hops from line end to line end with single-byte
 * `indexOf` (memchr); a CR-free chunk, the usual kind, costs one CR search in all.
 */
const EVENT_FIELD = Buffer.from('event:');
const MESSAGE_PREFIX = Buffer.from('message_');
const MESSAGE_SUFFIXES = ['start', 'delta', 'stop'].map((name) => Buffer.from(name));
const ERROR_NAME = Buffer.from('error');

/** Whether the line at `lineStart` is `event: message_start|message_delta|message_stop|error`. */
function isCandidateEventLine(bytes: Buffer, lineStart: number): boolean {
  if (!matchesAt(bytes, lineStart, EVENT_FIELD)) return false;
  let name = lineStart + EVENT_FIELD.length;
  if (bytes[name] === SPACE) name += 1;
  let nameEnd = -1;
  if (matchesAt(bytes, name, MESSAGE_PREFIX)) {
    const suffix = name + MESSAGE_PREFIX.length;
    for (const candidate of MESSAGE_SUFFIXES) {
      if (matchesAt(bytes, suffix, candidate)) {
        nameEnd = suffix + candidate.length;
        break;
      }
    }
  } else if (matchesAt(bytes, name, ERROR_NAME)) {
    nameEnd = name + ERROR_NAME.length;
  }
  return nameEnd !== -1 && (nameEnd === bytes.length || isLineEnd(bytes[nameEnd]));
}

const messagesLines = createLineScanner();

/** Where the first messages candidate line at or after `from` (a line start) starts, or -1. */
function findMessagesCandidate(bytes: Buffer, from: number): number {
  const length = bytes.length;
  let lineStart = from;
  messagesLines.start(bytes, from);
  while (lineStart < length) {
    if (isCandidateEventLine(bytes, lineStart)) return lineStart;
    const lineEnd = messagesLines.next(lineStart);
    if (lineEnd === -1) return -1;
    lineStart = lineEnd + 1;
  }
  return -1;
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

/** What the tap has learned from the events it read; the readers below write it. */
export interface TapState {
  reported: TokenUsage | undefined;
  completed: boolean;
  upstreamError: string | undefined;
  /** Set for the event just read. */
  sawUsageOnlyChunk: boolean;
  sawError: boolean;
  sawMessageStart: boolean;
  /** Set for the event just read: a Gemini response naming its model (`modelVersion`). */
  sawModelVersion: boolean;
  /** Set for the event just read: what to forward instead of its bytes. */
  replacement: string | undefined;
  /** The response object carried last (Responses). */
  answer: unknown;
  /** The llmux model id the response objects of a Responses stream are to name. */
  clientModel: string | undefined;
}

/** How the tap finds and reads the events that matter in one wire format's stream. */
export interface TapReader {
  findCandidate(bytes: Buffer, from: number): number;
  readEvent(event: SseEvent, state: TapState): void;
  eventNames?: readonly string[];
}

function readChatEvent(event: SseEvent, state: TapState): void {
  const data = event.data;
  if (data === '[DONE]') {
    state.completed = true;
    return;
  }
  const hasUsage = data.includes('"usage"');
  const hasError = data.includes('"error"');
  if (!hasUsage && !hasError) return;
  const chunk = parseJson(data);
  if (!isRecord(chunk)) return;
  if (hasError && chunk['error'] !== undefined && chunk['error'] !== null) {
    state.upstreamError = errorMessage(chunk['error']);
    state.sawError = true;
  }
  if (hasUsage) {
    const usage = chatUsageObject(chunk);
    if (usage !== undefined) {
      state.reported = fromChatUsage(usage);
      if (Array.isArray(chunk['choices']) && chunk['choices'].length === 0) state.sawUsageOnlyChunk = true;
    }
  }
}

function readMessagesEvent(event: SseEvent, state: TapState): void {
  const name = event.event;
  if (name !== 'message_start' && name !== 'message_delta' && name !== 'message_stop' && name !== 'error') return;
  if (name === 'message_stop') {
    state.completed = true;
    return;
  }
  const payload = parseJson(event.data);
  if (name === 'error') {
    state.upstreamError = isRecord(payload) ? errorMessage(payload['error']) : 'upstream reported an error';
    state.sawError = true;
    return;
  }
  if (!isRecord(payload)) return;
  if (name === 'message_start') {
    state.sawMessageStart = true;
    const message = payload['message'];
    if (isRecord(message) && isRecord(message['usage'])) state.reported = foldMessagesUsage(undefined, message['usage'], 'start');
    return;
  }
  if (isRecord(payload['usage'])) state.reported = foldMessagesUsage(state.reported, payload['usage'], 'delta');
}

/*
 * Responses candidates: an event whose JSON has a `"response"` key with an object value (the events
 * that carry the response object), or holds `"error"` (an `error` event; a false candidate, such as
 * an item's `error` field, costs one parse). Inside JSON strings every quote is escaped, so text
 * that mentions either is never one.
 */
const RESPONSE_KEY = Buffer.from('"response"');
const ERROR_WORD = Buffer.from('"error"');
const TERMINAL_TYPES = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Where the first Responses candidate at or after `from` starts, or -1. */
function findResponsesCandidate(bytes: Buffer, from: number): number {
  let response = bytes.indexOf(RESPONSE_KEY, from);
  while (response !== -1 && !hasObjectValue(bytes, response, RESPONSE_KEY.length, false)) response = bytes.indexOf(RESPONSE_KEY, response + 1);
  const error = bytes.indexOf(ERROR_WORD, from);
  if (response === -1) return error;
  return error === -1 ? response : Math.min(response, error);
}

function readResponsesEvent(event: SseEvent, state: TapState): void {
  const payload = parseJson(event.data);
  if (!isRecord(payload)) return;
  const type = typeof payload['type'] === 'string' ? payload['type'] : event.event;
  if (type === 'error') {
    state.upstreamError = errorMessage(isRecord(payload['error']) ? payload['error'] : payload);
    state.sawError = true;
    return;
  }
  const response = payload['response'];
  if (!isRecord(response)) return;
  if (state.clientModel !== undefined && response['model'] !== state.clientModel) {
    response['model'] = state.clientModel;
    state.replacement = `${event.event === undefined ? '' : `event: ${event.event}\n`}data: ${JSON.stringify(payload)}\n\n`;
  }
  state.answer = response;
  if (type === undefined || !TERMINAL_TYPES.has(type)) return;
  state.completed = true;
  if (isRecord(response['usage'])) state.reported = fromResponsesUsage(response['usage']);
  if (type === 'response.failed') {
    // The client has the failure as the upstream wrote it; the log gets its message.
    state.upstreamError = errorMessage(response['error']);
    state.sawError = true;
  }
}

/*
 * Gemini candidates: every event. Each `data:` event is one whole response, and every one carries
 * what the tap reads (cumulative `usageMetadata`, and `modelVersion`, which names the llmux id),
 * so there is nothing to skip: the search finds the next `data:` line.
 */
const DATA_LINE = Buffer.from('data:');

/** Where the next `data:` line at or after `from` (an event boundary) starts, or -1. */
function findGeminiCandidate(bytes: Buffer, from: number): number {
  let at = bytes.indexOf(DATA_LINE, from);
  while (at > from && bytes[at - 1] !== LF && bytes[at - 1] !== CR) at = bytes.indexOf(DATA_LINE, at + 1);
  return at;
}

function readGeminiEvent(event: SseEvent, state: TapState): void {
  const response = parseJson(event.data);
  if (!isRecord(response)) return;
  if (response['error'] !== undefined && response['error'] !== null) {
    state.upstreamError = errorMessage(response['error']);
    state.sawError = true;
    return;
  }
  if (isRecord(response['usageMetadata'])) state.reported = fromGeminiUsage(response['usageMetadata']);
  if (typeof response['modelVersion'] === 'string') state.sawModelVersion = true;
  const candidates = response['candidates'];
  const first: unknown = Array.isArray(candidates) ? candidates[0] : undefined;
  // The answer is whole once its candidate says why it stopped (or its prompt was blocked).
  if ((isRecord(first) && typeof first['finishReason'] === 'string') || (first === undefined && isRecord(response['promptFeedback']))) state.completed = true;
}

export const READERS: Record<WireFormat, TapReader> = {
  chat: { findCandidate: (bytes, from) => findChatCandidate(bytes, from, false), readEvent: readChatEvent },
  messages: { findCandidate: findMessagesCandidate, readEvent: readMessagesEvent, eventNames: MESSAGES_EVENT_NAMES },
  responses: { findCandidate: findResponsesCandidate, readEvent: readResponsesEvent },
  gemini: { findCandidate: findGeminiCandidate, readEvent: readGeminiEvent },
};
export const CHAT_READER_WITH_MODEL: TapReader = { findCandidate: (bytes, from) => findChatCandidate(bytes, from, true), readEvent: readChatEvent };
