/**
 * Streams a chat-completions upstream answer to a messages-format client (translation.md "Streams",
 * chat upstream -> messages client). A small state machine fed one parsed upstream event at a
 * time; every client event is written as soon as the upstream event that causes it arrives.
 *
 * Decisions beyond the spec:
 * - Empty strings (`content: ""`, `reasoning_content: ""`, `arguments: ""`) open no block and
 *   emit no delta: upstreams send them as placeholders on first and finish chunks.
 * - The stop reason is the one the whole answer gets (translation.md Streams point 6,
 *   chat-to-messages.ts `chatResponseToMessages`): OpenAI `delta.refusal` text is streamed as text
 *   and the answer ends with `refusal`; tool calls that end with `finish_reason: "stop"` or none
 *   (Gemini's OpenAI layer, forced tool_choice, older Ollama/vLLM) end with `tool_use`.
 *   `content_filter` -> `refusal`, keeping any text already streamed.
 * - Tool calls (Streams point 5): the first call streams live; a call that starts while the live
 *   one's arguments are not yet a complete JSON value is held (interleaved fragments: vLLM, some
 *   routers) and written as its own block, everything it had in one delta, once the calls before
 *   it are complete, at the latest at `finish_reason`. Completeness is read from the fragments as
 *   they pass (brackets outside strings), so no fragment is ever dropped. A legacy
 *   `delta.function_call` is one more tool call, with a generated `call_…` id as the whole
 *   answer gives it. Text or reasoning after tool calls writes out every held call first.
 * - `message_delta` usage is the upstream's when it reported usage; without a report it carries
 *   `output_tokens: 0` only, so clients keep the input estimate from `message_start`.
 */
import type { MessagesStopReason, TokenUsage } from '../formats/wire.ts';
import type { SseEvent } from '../sse/parser.ts';
import { messagesErrorFrame } from '../formats/frames.ts';
import { finishReasonToStopReason } from './stop-reasons.ts';
import { fromChatUsage, toMessagesUsage } from '../formats/usage.ts';
import { isRecord, nonEmptyString } from '../common/json.ts';
import { createJsonProgress, type JsonProgress } from './json-progress.ts';
import { newId } from '../common/ids.ts';
import { firstChoice } from './chat-choice.ts';
import { eventObject } from './stream-event.ts';

export interface StreamTranslator {
  /** One parsed upstream event. */
  push(event: SseEvent): void;
  /** Upstream body ended cleanly. */
  end(): void;
  /** Upstream dropped / timed out / unreadable: emit the in-stream error, finish. */
  fail(message: string, type?: string): void;
  /** Terminal output written (normal end or error); later calls do nothing. */
  readonly finished: boolean;
  readonly failed: boolean;
  usage(): TokenUsage;
}

export interface ChatToMessagesStreamOptions {
  write(text: string): void;
  /** Input tokens announced in `message_start` until the upstream reports usage. */
  estimatedInputTokens?: number;
  /** Message id (`msg_…`); random by default. Tests pin it. */
  messageId?: string;
  /** The llmux model id the answer names; the upstream's `model` when absent. */
  model?: string;
  /** Told about upstream input that could not be passed on (for the request log). */
  onWarning?: (message: string) => void;
}

/** Anthropic error types; an upstream error of another type is reported as `api_error`. */
const MESSAGES_ERROR_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
]);

type BlockKind = 'thinking' | 'text' | 'tool_use';

/** The key of a legacy `function_call`: below any index a server gives, above the made-up ones. */
const LEGACY_CALL_INDEX = -0.5;

/** One tool call of the answer, from its first fragment on. */
interface ToolCall {
  /** Upstream `tool_calls[].index`, or a made-up one. */
  key: number;
  /** The upstream's id, if it gave one. */
  id: string | undefined;
  /** The id the client sees. */
  toolId: string;
  name: string;
  /** Fragments not written yet (a held call's). */
  held: string[];
  /** Held back, streaming in the open block, or its block closed. */
  phase: 'held' | 'live' | 'done';
  json: JsonProgress;
}

/** Creates the chat -> messages stream translator; output goes to `options.write`, one event per call. */
export function createChatToMessagesStream(options: ChatToMessagesStreamOptions): StreamTranslator {
  const { write } = options;
  const estimatedInputTokens = Math.max(0, Math.floor(options.estimatedInputTokens ?? 0));
  const messageId = options.messageId ?? newId('msg_');

  let started = false;
  let finished = false;
  let failed = false;
  let sawDone = false;

  let openKind: BlockKind | undefined;
  let nextBlockIndex = 0;
  // Every tool call by its upstream index (or a made-up negative one), the one whose block is open,
  // the ones held back, and the last one a fragment went to (for fragments without an index).
  const calls = new Map<number, ToolCall>();
  let liveCall: ToolCall | undefined;
  const heldCalls: ToolCall[] = [];
  let lastCall: ToolCall | undefined;
  // Text and reasoning that arrived while a tool call could still grow, in order.
  let waiting: Array<{ kind: 'text' | 'thinking'; value: string }> = [];
  let sawRefusal = false;

  let finishReason: string | undefined;
  let matchedStop: string | undefined;
  let reported: TokenUsage | undefined;

  // Every event is one template string around JSON.stringify of its variable parts only: building
  // two objects per delta just to stringify them whole was the part of `push` that was ours to cut
  // (emitDelta alone 3.4% self in bench/RESULTS.md; the rest is the one JSON.parse per event). The
  // templates keep JSON.stringify's key order and spacing, so the bytes are the same as before.
  const messageIdJson = JSON.stringify(messageId);
  const inputTokensJson = JSON.stringify(estimatedInputTokens);

  function start(model: unknown): void {
    started = true;
    const modelJson = JSON.stringify(options.model ?? (typeof model === 'string' ? model : ''));
    write(
      `event: message_start\ndata: {"type":"message_start","message":{"id":${messageIdJson},"type":"message","role":"assistant","content":[],` +
        `"model":${modelJson},"stop_reason":null,"stop_sequence":null,` +
        `"usage":{"input_tokens":${inputTokensJson},"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}\n\n`,
    );
  }

  function closeBlock(): void {
    if (openKind === undefined) return;
    write(`event: content_block_stop\ndata: {"type":"content_block_stop","index":${nextBlockIndex - 1}}\n\n`);
    openKind = undefined;
    if (liveCall !== undefined) liveCall.phase = 'done';
    liveCall = undefined;
  }

  /** Opens a block of `kind`; `contentBlockJson` is its `content_block` as JSON. */
  function openBlock(kind: BlockKind, contentBlockJson: string): void {
    closeBlock();
    openKind = kind;
    const index = nextBlockIndex;
    nextBlockIndex += 1;
    write(`event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":${contentBlockJson}}\n\n`);
  }

  /** Writes a delta for the open block; `deltaJson` is the `delta` object as JSON. */
  function emitDelta(deltaJson: string): void {
    write(`event: content_block_delta\ndata: {"type":"content_block_delta","index":${nextBlockIndex - 1},"delta":${deltaJson}}\n\n`);
  }

  /** Whether a tool call could still get fragments: then text and reasoning wait, so its block stays open. */
  function callsPending(): boolean {
    return heldCalls.length > 0 || (liveCall !== undefined && !liveCall.json.complete);
  }

  function thinking(value: string): void {
    if (callsPending()) {
      waiting.push({ kind: 'thinking', value });
      return;
    }
    if (openKind !== 'thinking') openBlock('thinking', '{"type":"thinking","thinking":"","signature":""}');
    emitDelta(`{"type":"thinking_delta","thinking":${JSON.stringify(value)}}`);
  }

  function text(value: string): void {
    if (callsPending()) {
      waiting.push({ kind: 'text', value });
      return;
    }
    if (openKind !== 'text') openBlock('text', '{"type":"text","text":""}');
    emitDelta(`{"type":"text_delta","text":${JSON.stringify(value)}}`);
  }

  /** Writes the text and reasoning that waited for tool calls, once none is pending. */
  function writeWaiting(): void {
    if (waiting.length === 0 || callsPending()) return;
    const pieces = waiting;
    waiting = [];
    for (const piece of pieces) (piece.kind === 'text' ? text : thinking)(piece.value);
  }

  /** Opens `call`'s block and writes what it holds; it streams live from here on. */
  function openCall(call: ToolCall): void {
    openBlock('tool_use', `{"type":"tool_use","id":${JSON.stringify(call.toolId)},"name":${JSON.stringify(call.name)},"input":{}}`);
    call.phase = 'live';
    liveCall = call;
    if (call.held.length > 0) {
      emitDelta(`{"type":"input_json_delta","partial_json":${JSON.stringify(call.held.join(''))}}`);
      call.held = [];
    }
  }

  /** While the live call is complete, closes it and brings out the next held one; then what waited. */
  function advanceCalls(): void {
    while (liveCall !== undefined && liveCall.json.complete) {
      const next = heldCalls.shift();
      if (next === undefined) break;
      closeBlock();
      openCall(next);
    }
    writeWaiting();
  }

  /** At finish_reason: every held call as a complete block, then what waited for them. */
  function flushCalls(): void {
    for (let next = heldCalls.shift(); next !== undefined; next = heldCalls.shift()) {
      closeBlock();
      openCall(next);
    }
    if (liveCall !== undefined) closeBlock();
    writeWaiting();
  }

  function toolCall(call: Record<string, unknown>, legacy: boolean): void {
    const fn = isRecord(call['function']) ? call['function'] : {};
    const id = nonEmptyString(call['id']);
    // Some compatible servers omit `index`, or repeat index 0 for every call: a new id is a new call.
    let index: number | undefined = typeof call['index'] === 'number' ? call['index'] : undefined;
    if (index === undefined && lastCall !== undefined && (id === undefined || id === lastCall.id)) index = lastCall.key;
    let state = index === undefined ? undefined : calls.get(index);
    if (state === undefined || (id !== undefined && state.id !== undefined && state.id !== id)) {
      if (index === undefined || calls.has(index)) index = -1 - calls.size;
      state = {
        key: index,
        id,
        toolId: id ?? newId(legacy ? 'call_' : 'toolu_'),
        name: typeof fn['name'] === 'string' ? fn['name'] : '',
        held: [],
        phase: 'held',
        json: createJsonProgress(),
      };
      calls.set(index, state);
      if (heldCalls.length === 0 && (liveCall === undefined || liveCall.json.complete)) openCall(state);
      else heldCalls.push(state);
    }
    lastCall = state;
    const fragment = nonEmptyString(fn['arguments']);
    if (fragment === undefined) return;
    state.json.feed(fragment);
    if (state.phase === 'live') {
      emitDelta(`{"type":"input_json_delta","partial_json":${JSON.stringify(fragment)}}`);
      if (state.json.complete) advanceCalls();
    } else if (state.phase === 'held') {
      state.held.push(fragment);
    } else {
      // A fragment after the call's JSON closed and its block with it: the arguments were not
      // valid JSON anyway, and no block can take it now.
      options.onWarning?.(`tool call ${state.toolId}: an argument fragment after its arguments were complete was dropped`);
    }
  }

  /** The stop reason the whole answer would get (chat-to-messages.ts `chatResponseToMessages`). */
  function stopReason(): { stopReason: MessagesStopReason; stopSequence: string | null } {
    if (sawRefusal) return { stopReason: 'refusal', stopSequence: null };
    if (calls.size > 0 && (finishReason === undefined || finishReason === 'stop')) return { stopReason: 'tool_use', stopSequence: null };
    return finishReasonToStopReason(finishReason, matchedStop);
  }

  function finishMessage(): void {
    if (!started) start('');
    flushCalls();
    closeBlock();
    const { stopReason: reason, stopSequence } = stopReason();
    const usageJson = reported === undefined ? '{"output_tokens":0}' : JSON.stringify(toMessagesUsage(reported));
    write(
      `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":${JSON.stringify(reason)},` +
        `"stop_sequence":${JSON.stringify(stopSequence)}},"usage":${usageJson}}\n\n`,
    );
    write('event: message_stop\ndata: {"type":"message_stop"}\n\n');
    finished = true;
  }

  function upstreamError(error: unknown): void {
    let message = 'upstream reported an error';
    let type = 'api_error';
    if (typeof error === 'string' && error.length > 0) message = error;
    else if (isRecord(error)) {
      if (typeof error['message'] === 'string' && error['message'].length > 0) message = error['message'];
      if (typeof error['type'] === 'string' && MESSAGES_ERROR_TYPES.has(error['type'])) type = error['type'];
    }
    fail(message, type);
  }

  function readChoice(choice: Record<string, unknown>): void {
    const delta = isRecord(choice['delta']) ? choice['delta'] : undefined;
    if (delta !== undefined) {
      const reasoning = nonEmptyString(delta['reasoning_content']) ?? nonEmptyString(delta['reasoning']);
      if (reasoning !== undefined) thinking(reasoning);
      const content = nonEmptyString(delta['content']);
      if (content !== undefined) text(content);
      const refusal = nonEmptyString(delta['refusal']);
      if (refusal !== undefined) {
        sawRefusal = true;
        text(refusal);
      }
      const toolCalls = delta['tool_calls'];
      if (Array.isArray(toolCalls)) for (const call of toolCalls) if (isRecord(call)) toolCall(call, false);
      const legacy = delta['function_call'];
      if (isRecord(legacy)) toolCall({ index: LEGACY_CALL_INDEX, function: legacy }, true);
    }
    const reason = nonEmptyString(choice['finish_reason']);
    if (reason !== undefined && finishReason === undefined) {
      finishReason = reason;
      // vLLM names the matched stop string `stop_reason`, SGLang `matched_stop`.
      matchedStop = nonEmptyString(choice['stop_reason']) ?? nonEmptyString(choice['matched_stop']);
      flushCalls();
      closeBlock();
    }
  }

  function push(event: SseEvent): void {
    if (finished) return;
    const data = event.data;
    if (data === '[DONE]') {
      sawDone = true;
      finishMessage();
      return;
    }
    const chunk = eventObject(data);
    if (typeof chunk === 'string') {
      fail(chunk);
      return;
    }
    if (chunk['error'] !== undefined && chunk['error'] !== null) {
      upstreamError(chunk['error']);
      return;
    }
    const usage = chunk['usage'];
    if (isRecord(usage)) reported = fromChatUsage(usage);

    const choice = firstChoice(chunk['choices']);
    // Azure's prompt-filter chunk (and any other choice-less chunk) opens nothing.
    if (choice === undefined) return;
    if (!started) start(chunk['model']);
    readChoice(choice);
  }

  function end(): void {
    if (finished) return;
    if (sawDone || finishReason !== undefined) finishMessage();
    else fail('upstream stream ended before the answer was complete');
  }

  function fail(message: string, type = 'api_error'): void {
    if (finished) return;
    write(messagesErrorFrame({ message, type }));
    finished = true;
    failed = true;
  }

  return {
    push,
    end,
    fail,
    get finished() {
      return finished;
    },
    get failed() {
      return failed;
    },
    usage(): TokenUsage {
      return reported === undefined
        ? { inputTokens: estimatedInputTokens, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 }
        : { ...reported };
    },
  };
}
