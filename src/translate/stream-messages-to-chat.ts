/**
 * Streams a messages-format upstream answer to a chat-completions client (translation.md
 * "Streams", messages upstream -> chat client). Fed one parsed upstream event at a time; every
 * client chunk is written as soon as the upstream event that causes it arrives.
 *
 * Decisions beyond the spec:
 * - With `includeUsage`, every chunk but the usage chunk carries `"usage":null`, as OpenAI's
 *   API does when `stream_options.include_usage` is set.
 * - An upstream `event: error` keeps its Anthropic error type in the chat error chunk
 *   (`overloaded_error`, `rate_limit_error`, ...); its `code` is the one a pass-through stream's
 *   failure gets (formats/frames.ts `streamErrorCode`): `upstream_overloaded` or `upstream_error`.
 * - Only the first `message_delta` ends the answer; text after it is ignored.
 * - A tool call whose input never got a non-empty `input_json_delta` (a tool without arguments)
 *   gets `arguments: "{}"` when its block stops, as OpenAI sends it: chat clients JSON.parse the
 *   concatenated arguments, and "" does not parse.
 * - `message_stop` without a `message_delta` still ends with a `stop` finish chunk.
 */
import type { TokenUsage } from '../formats/wire.ts';
import type { SseEvent } from '../sse/parser.ts';
import { chatErrorFrame } from '../formats/frames.ts';
import type { StreamTranslator } from './stream-chat-to-messages.ts';
import { stopReasonToFinishReason } from './stop-reasons.ts';
import { foldMessagesUsage, toChatUsage, ZERO_USAGE } from '../formats/usage.ts';
import { isRecord, nonEmptyString } from '../common/json.ts';
import { newId } from '../common/ids.ts';
import { eventObject } from './stream-event.ts';

export interface MessagesToChatStreamOptions {
  write(text: string): void;
  /** The client asked for `stream_options.include_usage`. */
  includeUsage: boolean;
  /** Completion id (`chatcmpl-…`); random by default. Tests pin it. */
  completionId?: string;
  /** Clock for `created`, in milliseconds; `Date.now` by default. */
  now?: () => number;
  /** The llmux model id every chunk names; the upstream's `model` when absent. */
  model?: string;
}

/** Creates the messages -> chat stream translator; output goes to `options.write`, one chunk per call. */
export function createMessagesToChatStream(options: MessagesToChatStreamOptions): StreamTranslator {
  const { write, includeUsage } = options;
  const completionId = options.completionId ?? newId('chatcmpl-');
  const now = options.now ?? Date.now;

  let started = false;
  let finished = false;
  let failed = false;
  let sawMessageDelta = false;
  const usageTail = includeUsage ? ',"usage":null}' : '}';
  // Set by message_start: every chunk repeats the id, created and model, so each chunk is written as
  // one template string around the JSON of its variable parts (the text, the arguments), with no
  // object built per delta just to stringify it. Key order and spacing are JSON.stringify's.
  let chunkHead = '';
  let deltaChunkStart = '';
  const deltaChunkEnd = `,"logprobs":null,"finish_reason":null}]${usageTail}\n\n`;

  // Content block index -> tool call number k (counting tool_use blocks only), and the calls
  // that have had no arguments yet.
  const toolByBlock = new Map<number, number>();
  const toolsWithoutArguments = new Set<number>();
  let usage: TokenUsage = { ...ZERO_USAGE };

  function start(model: unknown): void {
    started = true;
    const created = Math.floor(now() / 1000);
    chunkHead = `{"id":${JSON.stringify(completionId)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(options.model ?? (typeof model === 'string' ? model : ''))}`;
    deltaChunkStart = `data: ${chunkHead},"choices":[{"index":0,"delta":`;
    write(`${deltaChunkStart}{"role":"assistant","content":""}${deltaChunkEnd}`);
  }

  /** Writes a chunk whose choice carries `deltaJson` (the `delta` object as JSON). */
  function emitDelta(deltaJson: string): void {
    if (!started) start('');
    write(`${deltaChunkStart}${deltaJson}${deltaChunkEnd}`);
  }

  function emitContent(text: string): void {
    emitDelta(`{"content":${JSON.stringify(text)}}`);
  }

  function emitReasoning(text: string): void {
    emitDelta(`{"reasoning_content":${JSON.stringify(text)}}`);
  }

  function emitArguments(k: number, fragment: string): void {
    emitDelta(`{"tool_calls":[{"index":${k},"function":{"arguments":${JSON.stringify(fragment)}}}]}`);
  }

  function blockStart(payload: Record<string, unknown>): void {
    const block = payload['content_block'];
    if (!isRecord(block) || typeof payload['index'] !== 'number') return;
    if (block['type'] === 'tool_use') {
      const k = toolByBlock.size;
      toolByBlock.set(payload['index'], k);
      toolsWithoutArguments.add(k);
      const id = typeof block['id'] === 'string' ? block['id'] : '';
      const name = typeof block['name'] === 'string' ? block['name'] : '';
      emitDelta(`{"tool_calls":[{"index":${k},"id":${JSON.stringify(id)},"type":"function","function":{"name":${JSON.stringify(name)},"arguments":""}}]}`);
      return;
    }
    // A start block normally arrives empty; any text it does carry is still content.
    const text = block['type'] === 'text' ? nonEmptyString(block['text']) : undefined;
    if (text !== undefined) emitContent(text);
    const thinking = block['type'] === 'thinking' ? nonEmptyString(block['thinking']) : undefined;
    if (thinking !== undefined) emitReasoning(thinking);
  }

  function blockDelta(payload: Record<string, unknown>): void {
    const delta = payload['delta'];
    if (!isRecord(delta)) return;
    switch (delta['type']) {
      case 'text_delta': {
        const text = nonEmptyString(delta['text']);
        if (text !== undefined) emitContent(text);
        break;
      }
      case 'thinking_delta': {
        const thinking = nonEmptyString(delta['thinking']);
        if (thinking !== undefined) emitReasoning(thinking);
        break;
      }
      case 'input_json_delta': {
        const k = typeof payload['index'] === 'number' ? toolByBlock.get(payload['index']) : undefined;
        const fragment = nonEmptyString(delta['partial_json']);
        if (k !== undefined && fragment !== undefined) {
          toolsWithoutArguments.delete(k);
          emitArguments(k, fragment);
        }
        break;
      }
      default:
        // signature_delta, citations_delta and newer kinds have no chat equivalent.
        break;
    }
  }

  function closeTool(k: number | undefined): void {
    if (k === undefined || !toolsWithoutArguments.has(k)) return;
    toolsWithoutArguments.delete(k);
    emitArguments(k, '{}');
  }

  function messageDelta(payload: Record<string, unknown>): void {
    if (sawMessageDelta) return;
    sawMessageDelta = true;
    if (!started) start('');
    // A tool block the upstream never stopped (max_tokens) still needs parseable arguments.
    for (const k of [...toolsWithoutArguments]) closeTool(k);
    const delta = isRecord(payload['delta']) ? payload['delta'] : {};
    if (isRecord(payload['usage'])) usage = foldMessagesUsage(usage, payload['usage'], 'delta');
    const finishReason = stopReasonToFinishReason(typeof delta['stop_reason'] === 'string' ? delta['stop_reason'] : null);
    write(`data: ${chunkHead},"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"${finishReason}"}]${usageTail}\n\n`);
    if (includeUsage) write(`data: ${chunkHead},"choices":[],"usage":${JSON.stringify(toChatUsage(usage))}}\n\n`);
  }

  function done(): void {
    write('data: [DONE]\n\n');
    finished = true;
  }

  function upstreamError(payload: Record<string, unknown>): void {
    const error = payload['error'];
    let message = 'upstream reported an error';
    let type = 'api_error';
    if (isRecord(error)) {
      message = nonEmptyString(error['message']) ?? message;
      type = nonEmptyString(error['type']) ?? type;
    }
    fail(message, type);
  }

  function push(event: SseEvent): void {
    if (finished) return;
    const payload = eventObject(event.data);
    if (typeof payload === 'string') {
      fail(payload);
      return;
    }
    const type = typeof payload['type'] === 'string' ? payload['type'] : event.event;
    switch (type) {
      case 'message_start': {
        const message = isRecord(payload['message']) ? payload['message'] : {};
        if (isRecord(message['usage'])) usage = foldMessagesUsage(usage, message['usage'], 'start');
        if (!started) start(message['model']);
        break;
      }
      case 'content_block_start':
        blockStart(payload);
        break;
      case 'content_block_delta':
        blockDelta(payload);
        break;
      case 'content_block_stop':
        if (typeof payload['index'] === 'number') closeTool(toolByBlock.get(payload['index']));
        break;
      case 'message_delta':
        messageDelta(payload);
        break;
      case 'message_stop':
        if (!sawMessageDelta) messageDelta({});
        done();
        break;
      case 'error':
        upstreamError(payload);
        break;
      default:
        // ping and event types newer than this code.
        break;
    }
  }

  function end(): void {
    if (finished) return;
    if (sawMessageDelta) done();
    else fail('upstream stream ended before the answer was complete');
  }

  function fail(message: string, type = 'api_error'): void {
    if (finished) return;
    write(chatErrorFrame({ message, type }));
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
    usage: () => ({ ...usage }),
  };
}
