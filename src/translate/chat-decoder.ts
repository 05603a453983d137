/**
 * Reads chat-completions answers into the neutral answer events (./answer-events.ts): a stream one
 * parsed SSE event (chunk) at a time, and a whole answer. Choice 0 only (./chat-choice.ts). Every
 * event is passed on as soon as the chunk that says it arrives, except tool calls held as below.
 *
 * Quirks of chat-completions upstreams, read here and nowhere else in the translators:
 * - Stop strings: vLLM names the one that matched `stop_reason`, SGLang `matched_stop` (a number
 *   there is a token id and does not count): the answer stops as `stop_sequence` with it.
 * - Usage: Groq nests it under `x_groq.usage` (older versions only there); xAI leaves reasoning
 *   tokens out of `completion_tokens` but counts them in `total_tokens`; DeepSeek names cache hits
 *   `prompt_cache_hit_tokens`. formats/usage.ts reads all three (`chatUsageObject`,
 *   `fromChatUsage`), for the pass-through usage tap too; reasoning tokens are
 *   `completion_tokens_details.reasoning_tokens`. Usage may come on the finish chunk (DeepSeek,
 *   Groq) or on a later chunk with empty `choices` (OpenAI), so the answer ends at `[DONE]` (or a
 *   clean end after `finish_reason`), not at `finish_reason`.
 * - Azure's first chunk has empty `choices` (its prompt filter): a chunk without choice 0 starts
 *   nothing. OpenRouter's `: comment` keep-alives never get here (the SSE parser drops comments).
 * - Reasoning as `reasoning_content` (DeepSeek, xAI) or `reasoning` (Groq, OpenRouter).
 * - OpenAI's `delta.refusal` / `message.refusal`: refusal text (the encoders end such an answer as a refusal).
 * - Tool calls ending with `finish_reason: "stop"` or none at all (Gemini's OpenAI layer, forced
 *   tool_choice, older Ollama and vLLM) stop as `tool_use`, so clients run them.
 * - The legacy `delta.function_call` / `message.function_call`: one more tool call, without an id
 *   (a made-up one is `call_…`).
 * - Gemini's OpenAI layer puts a call's thought signature in `extra_content.google.thought_signature`:
 *   the call's opaque state (llmux.md section 11).
 * - OpenRouter (and chat upstreams like it) sends `reasoning_details`: every entry must go back as
 *   it came, `reasoning.encrypted` included. Streamed, they come in pieces, merged by their `index`
 *   (`text`, `summary`, `data` and `signature` pieces appended, other fields the latest given); the
 *   whole list is the reasoning's opaque state, told (`reasoningEnd`) before the first text,
 *   refusal or call after it, or at the stop.
 * - Tool calls without `index`, or repeating index 0 for every call: a new id is a new call.
 * - Interleaved tool calls (index 0, 1, 0, 1 …: vLLM, some routers; translation.md Streams rule 5):
 *   the first call streams live; a call that starts while the live one's arguments are not yet a
 *   complete JSON value (./json-progress.ts) is held and comes out whole, in index order, once the
 *   calls before it are complete, at the latest at `finish_reason`. Text and reasoning that arrive
 *   while a call could still grow wait for it, so no fragment is dropped. A fragment for a call
 *   already ended cannot be placed: whitespace is ignored, anything else dropped with a warning.
 * - Empty strings (`content: ""`, `reasoning_content: ""`, `arguments: ""`) are placeholders of
 *   first and finish chunks: they say nothing.
 * - A whole answer's `content` given as parts (some compatible servers): their text, joined.
 * - An `error` chunk (a string, or `{message, type}`) mid-stream fails the answer; so do data that is
 *   not a JSON object and a body that ends before `finish_reason` or `[DONE]`.
 */
import { type AnswerEvents, type AnswerStop, type AnswerUsage, type CallStart, type DecoderOptions, type OpaqueState, type StreamDecoder, answerEnding, toAnswerUsage } from './answer-events.ts';
import type { SseEvent } from '../sse/parser.ts';
import { chatUsageObject, fromChatUsage } from '../formats/usage.ts';
import { asRecord, isRecord, nonEmptyString, records } from '../common/json.ts';
import { chatContentText, firstChoice } from './chat-choice.ts';
import { createJsonProgress, type JsonProgress } from './json-progress.ts';
import { fromFinishReason } from './stop-reasons.ts';
import { eventObject } from './stream-event.ts';

/** The key of the legacy `function_call`: below any index a server gives. */
const LEGACY_CALL_KEY = -1;
/** Calls without a usable index are keyed after every indexed one, by arrival. */
const UNINDEXED_BASE = 1_000_000;
const LEGACY_ID_PREFIX = 'call_';

/** One tool call of the answer, from its first fragment on. */
interface ToolCall {
  /** Upstream `tool_calls[].index`, or a made-up key: the order held calls come out in. */
  key: number;
  /** The upstream's id, if it gave one. */
  id: string | undefined;
  name: string;
  legacy: boolean;
  state: OpaqueState | undefined;
  /** Fragments of a held call, not passed on yet. */
  held: string[];
  /** Held back, streaming live, or ended. */
  phase: 'held' | 'live' | 'done';
  json: JsonProgress;
}

type Waiting = { kind: 'text' | 'refusal' | 'reasoning'; value: string };

/** Usage of a chat chunk or answer, reasoning tokens included; undefined when it carries none. */
function chatUsage(body: Record<string, unknown>): AnswerUsage | undefined {
  const raw = chatUsageObject(body);
  if (raw === undefined) return undefined;
  const details = raw['completion_tokens_details'];
  const reasoning = isRecord(details) ? details['reasoning_tokens'] : undefined;
  return toAnswerUsage(fromChatUsage(raw), typeof reasoning === 'number' && Number.isFinite(reasoning) && reasoning > 0 ? Math.floor(reasoning) : 0);
}

/** The string fields of a `reasoning_details` entry that stream in pieces. */
const APPENDED_DETAIL_FIELDS: ReadonlySet<string> = new Set(['text', 'summary', 'data', 'signature']);

/** `reasoning_details` entries as they stream: pieces merged by `index`, in the order first seen. */
interface DetailsList {
  entries: Array<Record<string, unknown>>;
  byIndex: Map<number, Record<string, unknown>>;
}

/** Merges streamed `reasoning_details` pieces into `list` (made on the first). */
function mergeDetails(list: DetailsList | undefined, pieces: unknown): DetailsList | undefined {
  if (!Array.isArray(pieces)) return list;
  for (const piece of pieces) {
    if (!isRecord(piece)) continue;
    list ??= { entries: [], byIndex: new Map() };
    const index = typeof piece['index'] === 'number' ? piece['index'] : undefined;
    const known = index === undefined ? undefined : list.byIndex.get(index);
    if (known === undefined) {
      const entry = { ...piece };
      list.entries.push(entry);
      if (index !== undefined) list.byIndex.set(index, entry);
      continue;
    }
    for (const [field, value] of Object.entries(piece)) {
      if (value === null || value === undefined) continue;
      const before = known[field];
      known[field] = APPENDED_DETAIL_FIELDS.has(field) && typeof before === 'string' && typeof value === 'string' ? before + value : value;
    }
  }
  return list;
}

/** Gemini's thought signature on a chat tool call (`extra_content.google.thought_signature`), as opaque state. */
function thoughtSignature(call: Record<string, unknown>): OpaqueState | undefined {
  const google = asRecord(asRecord(call['extra_content'])?.['google']);
  const signature = nonEmptyString(google?.['thought_signature']);
  return signature === undefined ? undefined : { kind: 'thought-signature', signature };
}

/** The stop string vLLM (`stop_reason`) or SGLang (`matched_stop`) says matched. */
function matchedStop(choice: Record<string, unknown> | undefined): string | undefined {
  if (choice === undefined) return undefined;
  return nonEmptyString(choice['stop_reason']) ?? nonEmptyString(choice['matched_stop']);
}

/** How the answer stopped: tool calls under `stop` (or no finish reason) are `tool_use`. */
function stopOf(finishReason: string | undefined, matched: string | undefined, calledTools: boolean): AnswerStop {
  if (calledTools && (finishReason === undefined || finishReason === 'stop')) return { reason: 'tool_use' };
  return fromFinishReason(finishReason, matched);
}

/** Tells `sink` a chat stream, one parsed upstream event at a time. */
export function createChatStreamDecoder(sink: AnswerEvents, options: DecoderOptions = {}): StreamDecoder {
  const ending = answerEnding(sink, options.onEnded);
  let started = false;
  let stopped = false;
  let sawDone = false;
  let finishReason: string | undefined;
  let matched: string | undefined;
  let reported: AnswerUsage | undefined;

  // Every tool call by its key (made at the first call: most answers have none), the one streaming
  // live, the held ones in key order, and the last one a fragment went to (for fragments without
  // an index).
  let calls: Map<number, ToolCall> | undefined;
  let live: ToolCall | undefined;
  const held: ToolCall[] = [];
  let lastCall: ToolCall | undefined;
  let unindexed = 0;
  // Text and reasoning that arrived while a tool call could still grow, in order.
  let waiting: Waiting[] = [];
  // `reasoning_details` not yet told.
  let details: DetailsList | undefined;

  /** Tells the reasoning details gathered so far, as the reasoning's state. */
  function flushDetails(): void {
    if (details === undefined) return;
    const told = details.entries;
    details = undefined;
    sink.reasoningEnd({ kind: 'reasoning-details', details: told });
  }

  /** Whether a tool call could still get fragments: then text and reasoning wait. */
  function callsPending(): boolean {
    return held.length > 0 || (live !== undefined && !live.json.complete);
  }

  function endLive(): void {
    if (live === undefined) return;
    live.phase = 'done';
    live = undefined;
    sink.callEnd();
  }

  function content(kind: Waiting['kind'], value: string): void {
    if (live !== undefined || held.length > 0) {
      if (callsPending()) {
        waiting.push({ kind, value });
        return;
      }
      endLive();
    }
    if (kind === 'reasoning') {
      sink.reasoning(value);
      return;
    }
    flushDetails();
    if (kind === 'text') sink.text(value);
    else sink.refusal(value);
  }

  /** Passes on the text and reasoning that waited for tool calls, once none is pending. */
  function passWaiting(): void {
    if (waiting.length === 0 || callsPending()) return;
    const pieces = waiting;
    waiting = [];
    for (const piece of pieces) content(piece.kind, piece.value);
  }

  /** Starts `call` and passes on what it holds; it streams live from here on. */
  function goLive(call: ToolCall): void {
    endLive();
    flushDetails();
    call.phase = 'live';
    live = call;
    const start: CallStart = call.legacy ? { id: undefined, name: call.name, madeUpIdPrefix: LEGACY_ID_PREFIX } : { id: call.id, name: call.name };
    if (call.state !== undefined) start.state = call.state;
    sink.callStart(start);
    if (call.held.length > 0) {
      sink.callArguments(call.held.join(''));
      call.held = [];
    }
  }

  /** While the live call is complete, the next held one goes live; then what waited. */
  function advance(): void {
    while (live !== undefined && live.json.complete) {
      const next = held.shift();
      if (next === undefined) break;
      goLive(next);
    }
    passWaiting();
  }

  /** At the end: every held call, whole, in order; then what waited for them. */
  function flushCalls(): void {
    for (let next = held.shift(); next !== undefined; next = held.shift()) goLive(next);
    endLive();
    passWaiting();
  }

  function hold(call: ToolCall): void {
    let at = held.length;
    while (at > 0 && (held[at - 1] as ToolCall).key > call.key) at -= 1;
    held.splice(at, 0, call);
  }

  function toolCall(fragment: Record<string, unknown>, legacy: boolean): void {
    const fn = isRecord(fragment['function']) ? fragment['function'] : {};
    const id = nonEmptyString(fragment['id']);
    let key: number | undefined = typeof fragment['index'] === 'number' ? fragment['index'] : undefined;
    if (key === undefined && lastCall !== undefined && (id === undefined || id === lastCall.id)) key = lastCall.key;
    calls ??= new Map();
    let call = key === undefined ? undefined : calls.get(key);
    if (call === undefined || (id !== undefined && call.id !== undefined && call.id !== id)) {
      if (key === undefined || calls.has(key)) {
        key = UNINDEXED_BASE + unindexed;
        unindexed += 1;
      }
      call = { key, id, name: typeof fn['name'] === 'string' ? fn['name'] : '', legacy, state: thoughtSignature(fragment), held: [], phase: 'held', json: createJsonProgress() };
      calls.set(key, call);
      if (held.length === 0 && (live === undefined || live.json.complete)) goLive(call);
      else hold(call);
    }
    lastCall = call;
    const args = nonEmptyString(fn['arguments']);
    if (args === undefined) return;
    if (call.phase === 'live') {
      call.json.feed(args);
      sink.callArguments(args);
      if (call.json.complete) advance();
    } else if (call.phase === 'held') {
      call.json.feed(args);
      call.held.push(args);
    } else if (args.trim() !== '') {
      options.onWarning?.(`upstream sent more arguments for tool call ${call.id ?? call.key} after it was complete; dropped`);
    }
  }

  function stop(): void {
    stopped = true;
    flushCalls();
    flushDetails();
    sink.stop(stopOf(finishReason, matched, calls !== undefined));
  }

  function finish(): void {
    if (!stopped) stop();
    ending.end();
  }

  function readChoice(choice: Record<string, unknown>): void {
    const delta = choice['delta'];
    if (isRecord(delta)) {
      const reasoning = nonEmptyString(delta['reasoning_content']) ?? nonEmptyString(delta['reasoning']);
      if (reasoning !== undefined) content('reasoning', reasoning);
      details = mergeDetails(details, delta['reasoning_details']);
      const text = nonEmptyString(delta['content']);
      if (text !== undefined) content('text', text);
      const refusal = nonEmptyString(delta['refusal']);
      if (refusal !== undefined) content('refusal', refusal);
      const toolCalls = delta['tool_calls'];
      if (Array.isArray(toolCalls)) for (const fragment of toolCalls) if (isRecord(fragment)) toolCall(fragment, false);
      const legacy = delta['function_call'];
      if (isRecord(legacy)) toolCall({ index: LEGACY_CALL_KEY, function: legacy }, true);
    }
    const reason = nonEmptyString(choice['finish_reason']);
    if (reason !== undefined && finishReason === undefined) {
      finishReason = reason;
      matched = matchedStop(choice);
      stop();
    }
  }

  function upstreamError(error: unknown): void {
    const record = asRecord(error);
    const message = typeof error === 'string' && error !== '' ? error : (nonEmptyString(record?.['message']) ?? 'upstream reported an error');
    ending.fail(message, nonEmptyString(record?.['type']));
  }

  return {
    push(event: SseEvent) {
      if (ending.state !== 'reading') return;
      const data = event.data;
      if (data === '[DONE]') {
        sawDone = true;
        finish();
        return;
      }
      const chunk = eventObject(data);
      if (typeof chunk === 'string') {
        ending.fail(chunk);
        return;
      }
      const error = chunk['error'];
      if (error !== undefined && error !== null) {
        upstreamError(error);
        return;
      }
      const usage = chatUsage(chunk);
      if (usage !== undefined) {
        reported = usage;
        sink.usage(usage);
      }
      const choice = firstChoice(chunk['choices']);
      if (choice === undefined) return;
      if (!started) {
        started = true;
        sink.start(typeof chunk['model'] === 'string' ? chunk['model'] : undefined);
      }
      readChoice(choice);
    },
    end() {
      if (ending.state !== 'reading') return;
      if (sawDone || finishReason !== undefined) finish();
      else ending.fail('upstream stream ended before the answer was complete');
    },
    fail: ending.fail,
    reported: () => reported,
  };
}

/** Tells `sink` a whole chat answer (not validated, so read leniently; never throws). */
export function decodeChatAnswer(answer: unknown, sink: AnswerEvents): void {
  const record = asRecord(answer) ?? {};
  const choice = firstChoice(record['choices']);
  const message = asRecord(choice?.['message']) ?? {};
  sink.start(typeof record['model'] === 'string' ? record['model'] : undefined);

  const reasoning = nonEmptyString(message['reasoning_content']) ?? nonEmptyString(message['reasoning']);
  if (reasoning !== undefined) sink.reasoning(reasoning);
  const details = mergeDetails(undefined, message['reasoning_details']);
  if (details !== undefined) sink.reasoningEnd({ kind: 'reasoning-details', details: details.entries });
  const text = chatContentText(message['content']);
  if (text !== '') sink.text(text);
  const refusal = nonEmptyString(message['refusal']);
  if (refusal !== undefined) sink.refusal(refusal);

  let calls = 0;
  records(message['tool_calls']).forEach((call, k) => {
    const fn = asRecord(call['function']) ?? {};
    // A whole answer's call keeps the id it has, even an empty one.
    const start: CallStart = { id: typeof call['id'] === 'string' ? call['id'] : '', name: typeof fn['name'] === 'string' ? fn['name'] : '', path: `choices.0.message.tool_calls.${k}.function.arguments` };
    const state = thoughtSignature(call);
    if (state !== undefined) start.state = state;
    sink.callStart(start);
    if (typeof fn['arguments'] === 'string' && fn['arguments'] !== '') sink.callArguments(fn['arguments']);
    sink.callEnd();
    calls += 1;
  });
  const legacy = asRecord(message['function_call']);
  if (legacy !== undefined) {
    sink.callStart({ id: undefined, name: typeof legacy['name'] === 'string' ? legacy['name'] : '', madeUpIdPrefix: LEGACY_ID_PREFIX, path: 'choices.0.message.function_call.arguments' });
    if (typeof legacy['arguments'] === 'string' && legacy['arguments'] !== '') sink.callArguments(legacy['arguments']);
    sink.callEnd();
    calls += 1;
  }

  const usage = chatUsage(record);
  if (usage !== undefined) sink.usage(usage);
  const finishReason = typeof choice?.['finish_reason'] === 'string' ? choice['finish_reason'] : undefined;
  sink.stop(stopOf(finishReason, matchedStop(choice), calls > 0));
  sink.end();
}
