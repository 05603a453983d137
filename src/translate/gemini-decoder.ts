/**
 * Reads Gemini answers (`generateContent`, and `streamGenerateContent?alt=sse`, whose every event is
 * one whole `GenerateContentResponse`) into the neutral answer events (./answer-events.ts).
 * Candidate 0 only: llmux asks for one (llmux.md section 9). Every event is passed on as soon as
 * the upstream event that says it arrives.
 *
 * How the format is read (Google's API reference and the `@google/genai` SDK's types decide):
 * - Parts in order: `text` is answer text, `text` with `thought: true` reasoning; a `functionCall`
 *   arrives whole in one part, so it is a call told at once (`callStart`, its `args` as one
 *   `callArguments`, `callEnd`). Google's own code execution (`executableCode`,
 *   `codeExecutionResult`) becomes answer text, a fenced block and its output, as
 *   ./gemini-history.ts replays them; media in an answer (`inlineData`, `fileData`: generated
 *   images) has no place in the other formats' answers and is dropped with a warning.
 * - A call without an `id` (the Gemini API gives none; Vertex may) gets `call_` and a hash of the
 *   answer's `responseId`, the call's place in the answer, its name and arguments: the same id for
 *   the same answer, streamed or whole, so a replayed history names its calls the same every turn.
 * - `thoughtSignature` is Gemini's opaque state for the part it sits on (llmux.md section 11): a
 *   call's is its `CallStart.state`, a thought part's ends that reasoning (`reasoningEnd`), a text
 *   part's (even an empty one, as Gemini 3 sends them) is `annotate`d to it.
 * - Grounding with Google Search (`groundingMetadata` on the candidate: `webSearchQueries`, the
 *   pages as `groundingChunks[].web`, the text spans they back as `groundingSupports`) is the
 *   answer's server-side search (llmux.md section 11: what an Anthropic `web_search` tool became),
 *   told once, when the first event carrying queries or pages arrives (Google sends it with the
 *   last pieces of text), before the stop.
 * - `finishReason` (./stop-reasons.ts): a turn that ends in calls says `STOP` and stops as
 *   `tool_use`; Google's filters are `content_filter`; `MALFORMED_FUNCTION_CALL` is
 *   `malformed_tool_call`. A prompt blocked before any candidate (`promptFeedback.blockReason`,
 *   no candidates) is a `content_filter` stop too.
 * - Usage (`usageMetadata`, formats/usage.ts `fromGeminiUsage`) comes on every event of a stream,
 *   cumulative; each report replaces the one before. `thoughtsTokenCount` is the reasoning tokens,
 *   and part of the output, as the other formats count it.
 * - There is no `[DONE]`: a stream ends when its body does, after the event with `finishReason`;
 *   a body that ends before one fails the answer. An `error` event (`{"error": {code, message,
 *   status}}`, as Google writes a failure after the stream started) fails it with its message, and
 *   its status as the error's type (`RESOURCE_EXHAUSTED` a rate limit, `UNAVAILABLE` an overload).
 */
import { createHash } from 'node:crypto';
import { type AnswerEvents, type AnswerUsage, type CallStart, type DecoderOptions, type SearchSource, type ServerSearch, type StreamDecoder, answerEnding, toAnswerUsage } from './answer-events.ts';
import type { SseEvent } from '../sse/parser.ts';
import { fromGeminiUsage, geminiThoughtsTokens } from '../formats/usage.ts';
import { asRecord, isRecord, nonEmptyString, records } from '../common/json.ts';
import { fromGeminiFinishReason } from './stop-reasons.ts';
import { eventObject } from './stream-event.ts';

const MADE_UP_ID_PREFIX = 'call_';
const MADE_UP_ID_HASH_CHARS = 24;

/** Google's error statuses that name one of our error types; any other is `api_error`. */
const ERROR_TYPES: ReadonlyMap<string, string> = new Map([
  ['RESOURCE_EXHAUSTED', 'rate_limit_error'],
  ['UNAVAILABLE', 'overloaded_error'],
  ['INVALID_ARGUMENT', 'invalid_request_error'],
  ['FAILED_PRECONDITION', 'invalid_request_error'],
  ['NOT_FOUND', 'not_found_error'],
  ['PERMISSION_DENIED', 'permission_error'],
  ['UNAUTHENTICATED', 'authentication_error'],
]);

/** Usage of a response, reasoning tokens included; undefined when it carries none. */
function geminiUsage(response: Record<string, unknown>): AnswerUsage | undefined {
  const raw = response['usageMetadata'];
  return isRecord(raw) ? toAnswerUsage(fromGeminiUsage(raw), geminiThoughtsTokens(raw)) : undefined;
}

/** What one answer's reading keeps between its parts (and, streamed, between its events). */
interface Reading {
  /** The answer's `responseId`, for made-up call ids. */
  responseId: string;
  /** Calls so far. */
  calls: number;
  warn: ((message: string) => void) | undefined;
  /** Kinds of part dropped so far, each warned about once. */
  dropped: Set<string> | undefined;
}

function madeUpId(reading: Reading, name: string, args: string): string {
  const hash = createHash('sha256').update(`${reading.responseId}\u0000${reading.calls}\u0000${name}\u0000${args}`).digest('hex');
  return `${MADE_UP_ID_PREFIX}${hash.slice(0, MADE_UP_ID_HASH_CHARS)}`;
}

function dropped(reading: Reading, kind: string): void {
  reading.dropped ??= new Set();
  if (reading.dropped.has(kind)) return;
  reading.dropped.add(kind);
  reading.warn?.(`upstream answered with a ${kind} part, which the client's format cannot carry; dropped`);
}

/** A fenced block of Google's code execution, as answer text. */
function codeText(part: Record<string, unknown>): string | undefined {
  const code = asRecord(part['executableCode']);
  if (code !== undefined && typeof code['code'] === 'string') {
    const language = typeof code['language'] === 'string' && code['language'] !== 'LANGUAGE_UNSPECIFIED' ? code['language'].toLowerCase() : '';
    return `\n\`\`\`${language}\n${code['code']}\n\`\`\`\n`;
  }
  const result = asRecord(part['codeExecutionResult']);
  if (result !== undefined) return `\n\`\`\`\n${typeof result['output'] === 'string' ? result['output'] : ''}\n\`\`\`\n`;
  return undefined;
}

/** Tells `sink` the parts of one content, in order. `path` names where they are, for warnings. */
function readParts(parts: unknown, sink: AnswerEvents, reading: Reading, path: string): void {
  if (!Array.isArray(parts)) return;
  for (let k = 0; k < parts.length; k++) {
    const part: unknown = parts[k];
    if (!isRecord(part)) continue;
    const signature = nonEmptyString(part['thoughtSignature']);
    const call = asRecord(part['functionCall']);
    if (call !== undefined) {
      const name = typeof call['name'] === 'string' ? call['name'] : '';
      const args = JSON.stringify(asRecord(call['args']) ?? {});
      const start: CallStart = { id: nonEmptyString(call['id']) ?? madeUpId(reading, name, args), name, path: `${path}.${k}.functionCall.args` };
      if (signature !== undefined) start.state = { kind: 'thought-signature', signature };
      reading.calls += 1;
      sink.callStart(start);
      sink.callArguments(args);
      sink.callEnd();
      continue;
    }
    const text = part['text'];
    if (typeof text === 'string') {
      if (part['thought'] === true) {
        if (text !== '') sink.reasoning(text);
        if (signature !== undefined) sink.reasoningEnd({ kind: 'thought-signature', signature });
      } else {
        if (text !== '') sink.text(text);
        if (signature !== undefined) sink.annotate({ kind: 'thought-signature', signature });
      }
      continue;
    }
    const code = codeText(part);
    if (code !== undefined) sink.text(code);
    else if (part['inlineData'] !== undefined) dropped(reading, 'media (inlineData)');
    else if (part['fileData'] !== undefined) dropped(reading, 'file (fileData)');
    else if (signature !== undefined) sink.annotate({ kind: 'thought-signature', signature });
  }
}

/** The search a candidate's grounding metadata tells of; undefined when it ran none. */
function searchOf(candidate: Record<string, unknown>): ServerSearch | undefined {
  const grounding = asRecord(candidate['groundingMetadata']);
  if (grounding === undefined) return undefined;
  const queries = Array.isArray(grounding['webSearchQueries']) ? grounding['webSearchQueries'].filter((query): query is string => typeof query === 'string') : [];
  const sources = records(grounding['groundingChunks']).map((chunk): SearchSource => {
    const web = asRecord(chunk['web']);
    return { url: typeof web?.['uri'] === 'string' ? web['uri'] : '', title: typeof web?.['title'] === 'string' ? web['title'] : '' };
  });
  if (queries.length === 0 && sources.length === 0) return undefined;
  const citations = records(grounding['groundingSupports']).flatMap((support) => {
    const text = asRecord(support['segment'])?.['text'];
    const indexes = Array.isArray(support['groundingChunkIndices']) ? support['groundingChunkIndices'].filter((index): index is number => Number.isInteger(index) && index >= 0 && index < sources.length) : [];
    return typeof text === 'string' && text !== '' && indexes.length > 0 ? [{ text, sources: indexes }] : [];
  });
  return { queries, sources, citations };
}

function candidateOf(response: Record<string, unknown>): Record<string, unknown> | undefined {
  const candidates = response['candidates'];
  return Array.isArray(candidates) ? asRecord(candidates[0]) : undefined;
}

/** Whether the prompt itself was blocked: feedback with a block reason, and no candidate. */
function promptBlocked(response: Record<string, unknown>, candidate: Record<string, unknown> | undefined): boolean {
  return candidate === undefined && nonEmptyString(asRecord(response['promptFeedback'])?.['blockReason']) !== undefined;
}

function upstreamError(error: unknown): { message: string; type: string | undefined } {
  const record = asRecord(error);
  const message = typeof error === 'string' && error !== '' ? error : (nonEmptyString(record?.['message']) ?? 'upstream reported an error');
  const status = nonEmptyString(record?.['status']);
  return { message, type: status === undefined ? undefined : ERROR_TYPES.get(status) };
}

/** Tells `sink` a Gemini stream, one parsed upstream event (one whole response) at a time. */
export function createGeminiStreamDecoder(sink: AnswerEvents, options: DecoderOptions = {}): StreamDecoder {
  const ending = answerEnding(sink, options.onEnded);
  const reading: Reading = { responseId: '', calls: 0, warn: options.onWarning, dropped: undefined };
  let started = false;
  let stopped = false;
  let searched = false;
  let reported: AnswerUsage | undefined;

  return {
    push(event: SseEvent) {
      if (ending.state !== 'reading') return;
      const response = eventObject(event.data);
      if (typeof response === 'string') {
        ending.fail(response);
        return;
      }
      const error = response['error'];
      if (error !== undefined && error !== null) {
        const { message, type } = upstreamError(error);
        ending.fail(message, type);
        return;
      }
      if (!started) {
        started = true;
        reading.responseId = typeof response['responseId'] === 'string' ? response['responseId'] : '';
        sink.start(typeof response['modelVersion'] === 'string' ? response['modelVersion'] : undefined);
      }
      const usage = geminiUsage(response);
      if (usage !== undefined) {
        reported = usage;
        sink.usage(usage);
      }
      const candidate = candidateOf(response);
      if (candidate !== undefined) readParts(asRecord(candidate['content'])?.['parts'], sink, reading, 'candidates.0.content.parts');
      const search = searched || candidate === undefined ? undefined : searchOf(candidate);
      if (search !== undefined) {
        searched = true;
        sink.search(search);
      }
      if (stopped) return;
      const reason = nonEmptyString(candidate?.['finishReason']);
      if (reason !== undefined) {
        stopped = true;
        sink.stop(fromGeminiFinishReason(reason, reading.calls > 0));
      } else if (promptBlocked(response, candidate)) {
        stopped = true;
        sink.stop({ reason: 'content_filter' });
      }
    },
    end() {
      if (ending.state !== 'reading') return;
      if (stopped) ending.end();
      else ending.fail('upstream stream ended before the answer was complete');
    },
    fail: ending.fail,
    reported: () => reported,
  };
}

/** Tells `sink` a whole Gemini answer (not validated, so read leniently; never throws). */
export function decodeGeminiAnswer(answer: unknown, sink: AnswerEvents, options: { onWarning?: (message: string) => void } = {}): void {
  const response = asRecord(answer) ?? {};
  const reading: Reading = { responseId: typeof response['responseId'] === 'string' ? response['responseId'] : '', calls: 0, warn: options.onWarning, dropped: undefined };
  sink.start(typeof response['modelVersion'] === 'string' ? response['modelVersion'] : undefined);
  const candidate = candidateOf(response);
  if (candidate !== undefined) readParts(asRecord(candidate['content'])?.['parts'], sink, reading, 'candidates.0.content.parts');
  const search = candidate === undefined ? undefined : searchOf(candidate);
  if (search !== undefined) sink.search(search);
  const usage = geminiUsage(response);
  if (usage !== undefined) sink.usage(usage);
  if (promptBlocked(response, candidate)) sink.stop({ reason: 'content_filter' });
  else sink.stop(fromGeminiFinishReason(nonEmptyString(candidate?.['finishReason']), reading.calls > 0));
  sink.end();
}

