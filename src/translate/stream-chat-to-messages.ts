/**
 * Streams a chat-completions upstream answer to a messages-format client (translation.md "Streams",
 * chat upstream -> messages client). A small state machine fed one parsed upstream event at a
 * time; every client event is written as soon as the upstream event that causes it arrives.
 *
 * Decisions beyond the spec:
 * - Empty strings (`content: ""`, `reasoning_content: ""`, `arguments: ""`) open no block and
 *   emit no delta: upstreams send them as placeholders on first and finish chunks.
 * - OpenAI `delta.refusal` text is streamed as text; the stop reason still follows
 *   `finish_reason` (a refusal ends with `stop` -> `end_turn`, the refusal is readable in the
 *   text). `content_filter` -> `refusal`, keeping any text already streamed.
 * - Tool call fragments must arrive one call after another (as every known upstream sends them);
 *   a fragment for a call whose block is already closed cannot be expressed and is dropped.
 * - `message_delta` usage is the upstream's when it reported usage; without a report it carries
 *   `output_tokens: 0` only, so clients keep the input estimate from `message_start`.
 */
import type { TokenUsage } from '../formats/wire.ts';
import type { SseEvent } from '../sse/parser.ts';
import { messagesErrorFrame } from '../formats/frames.ts';
import { finishReasonToStopReason } from './stop-reasons.ts';
import { fromChatUsage, toMessagesUsage } from './usage.ts';
import { isRecord } from '../json.ts';
import { newId } from '../ids.ts';

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

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** The choice with index 0 (a missing index counts as 0): the one a messages answer has room for. */
function firstChoice(choices: unknown): Record<string, unknown> | undefined {
  if (!Array.isArray(choices)) return undefined;
  for (const choice of choices) if (isRecord(choice) && (choice['index'] ?? 0) === 0) return choice;
  return undefined;
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
  // Upstream tool_calls[].index of the open tool_use block; every index already given a block, with its id.
  let openToolIndex: number | undefined;
  const toolIds = new Map<number, string | undefined>();

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
    const modelJson = JSON.stringify(typeof model === 'string' ? model : '');
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
    openToolIndex = undefined;
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

  function thinking(text: string): void {
    if (openKind !== 'thinking') openBlock('thinking', '{"type":"thinking","thinking":"","signature":""}');
    emitDelta(`{"type":"thinking_delta","thinking":${JSON.stringify(text)}}`);
  }

  function text(value: string): void {
    if (openKind !== 'text') openBlock('text', '{"type":"text","text":""}');
    emitDelta(`{"type":"text_delta","text":${JSON.stringify(value)}}`);
  }

  function toolCall(call: Record<string, unknown>): void {
    const fn = isRecord(call['function']) ? call['function'] : {};
    const id = nonEmptyString(call['id']);
    // Some compatible servers omit `index`, or repeat index 0 for every call: a new id is a new call.
    let index: number | undefined = typeof call['index'] === 'number' ? call['index'] : undefined;
    if (index === undefined && openToolIndex !== undefined && (id === undefined || id === toolIds.get(openToolIndex))) index = openToolIndex;
    if (index === undefined || !toolIds.has(index) || (id !== undefined && toolIds.get(index) !== undefined && toolIds.get(index) !== id)) {
      if (index === undefined || toolIds.has(index)) index = -1 - toolIds.size;
      toolIds.set(index, id);
      const toolId = id ?? newId('toolu_');
      const name = typeof fn['name'] === 'string' ? fn['name'] : '';
      openBlock('tool_use', `{"type":"tool_use","id":${JSON.stringify(toolId)},"name":${JSON.stringify(name)},"input":{}}`);
      openToolIndex = index;
    } else if (openToolIndex !== index) {
      return;
    }
    const fragment = nonEmptyString(fn['arguments']);
    if (fragment !== undefined) emitDelta(`{"type":"input_json_delta","partial_json":${JSON.stringify(fragment)}}`);
  }

  function finishMessage(): void {
    if (!started) start('');
    closeBlock();
    const { stopReason, stopSequence } = finishReasonToStopReason(finishReason, matchedStop);
    const usageJson = reported === undefined ? '{"output_tokens":0}' : JSON.stringify(toMessagesUsage(reported));
    write(
      `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":${JSON.stringify(stopReason)},` +
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
      if (refusal !== undefined) text(refusal);
      const calls = delta['tool_calls'];
      if (Array.isArray(calls)) for (const call of calls) if (isRecord(call)) toolCall(call);
    }
    const reason = nonEmptyString(choice['finish_reason']);
    if (reason !== undefined && finishReason === undefined) {
      finishReason = reason;
      // vLLM names the matched stop string `stop_reason`, SGLang `matched_stop`.
      matchedStop = nonEmptyString(choice['stop_reason']) ?? nonEmptyString(choice['matched_stop']);
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
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      fail('upstream stream event is not valid JSON; the answer is incomplete');
      return;
    }
    if (!isRecord(chunk)) {
      fail('upstream stream event is not a JSON object; the answer is incomplete');
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
