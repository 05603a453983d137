/**
 * Streams a messages-format upstream answer to a Responses client (responses.md "Stream"). Fed one
 * parsed upstream event at a time; every client event is written as soon as the upstream event
 * that causes it arrives (responses-events.ts writes them).
 *
 * - `message_start` starts the response (`response.created`, `response.in_progress`).
 * - Text deltas go to a message item, thinking deltas to a reasoning item, each `tool_use` block to
 *   a call item whose `input_json_delta` fragments stream as argument deltas (a custom tool's
 *   `{"input": …}` unwrapped to its raw text as it comes).
 * - A message or call item stays open after its block stops, until another item starts or the
 *   answer ends: consecutive text blocks are one message (as in the whole answer), and the item cut
 *   short by `max_tokens` can still be marked incomplete. A reasoning item closes with its block,
 *   when its signature is known and can be sealed.
 * - `message_delta` settles the stop reason (refusal part, incomplete last item); `message_stop` (or
 *   a clean end after `message_delta`) writes the terminal event with the usage: input from
 *   `message_start` unless `message_delta` repeats it, output from `message_delta`.
 * - An `error` event, `fail()`, or a body that ends before `message_delta` is `response.failed`.
 * - JSON inside events may be padded with whitespace (real Anthropic streams): it is parsed.
 */
import type { TokenUsage } from '../formats/wire.ts';
import type { SseEvent } from '../sse/parser.ts';
import type { ResponsesStreamOptions, ResponsesStreamTranslator } from './responses-events.ts';
import { createResponsesEmitter, responsesStreamTranslator } from './responses-events.ts';
import { answerUsage, failureCode, messagesStop, tokenCount } from './responses-output.ts';
import { fromMessagesUsage, ZERO_USAGE } from '../formats/usage.ts';
import { isRecord, nonEmptyString } from '../common/json.ts';
import { eventObject } from './stream-event.ts';

function latestNonZero(latest: number, earlier: number): number {
  return latest > 0 ? latest : earlier;
}

/** Creates the messages -> Responses stream translator; output goes to `options.write`, one event per call. */
export function createMessagesToResponsesStream(options: ResponsesStreamOptions): ResponsesStreamTranslator {
  const emitter = createResponsesEmitter(options);
  const warn = options.onWarning ?? (() => {});
  let sawMessageDelta = false;
  let usage: TokenUsage | undefined;
  let reasoningTokens = 0;
  // The thinking block being read (its text and signature, for the seal) and the open tool block.
  let thinking: { index: number; text: string; signature: string } | undefined;
  let toolBlock: number | undefined;

  function readUsage(raw: Record<string, unknown>, isDelta: boolean): void {
    const next = fromMessagesUsage(raw);
    const before = usage ?? ZERO_USAGE;
    usage = {
      inputTokens: latestNonZero(next.inputTokens, before.inputTokens),
      // message_start's count is a placeholder; message_delta's is the cumulative total, even 0.
      outputTokens: isDelta && typeof raw['output_tokens'] === 'number' ? next.outputTokens : latestNonZero(next.outputTokens, before.outputTokens),
      cacheReadTokens: latestNonZero(next.cacheReadTokens, before.cacheReadTokens),
      cacheCreationTokens: latestNonZero(next.cacheCreationTokens, before.cacheCreationTokens),
    };
    const details = raw['output_tokens_details'];
    if (isRecord(details)) reasoningTokens = latestNonZero(tokenCount(details['thinking_tokens']), reasoningTokens);
  }

  function blockStart(payload: Record<string, unknown>): void {
    const block = payload['content_block'];
    const index = payload['index'];
    if (!isRecord(block) || typeof index !== 'number') return;
    switch (block['type']) {
      case 'text':
        emitter.text(nonEmptyString(block['text']) ?? '');
        break;
      case 'thinking':
        thinking = { index, text: '', signature: typeof block['signature'] === 'string' ? block['signature'] : '' };
        addThinking(nonEmptyString(block['thinking']) ?? '');
        break;
      case 'redacted_thinking':
        emitter.endReasoning({ type: 'redacted_thinking', data: typeof block['data'] === 'string' ? block['data'] : '' });
        break;
      case 'tool_use': {
        toolBlock = index;
        emitter.openCall(nonEmptyString(block['id']), typeof block['name'] === 'string' ? block['name'] : '');
        // The start block's input is `{}` in every known stream; a non-empty one is the whole input.
        const input = block['input'];
        if (isRecord(input) && Object.keys(input).length > 0) emitter.callArguments(JSON.stringify(input));
        break;
      }
      default:
        // server_tool_use, web_search_tool_result and newer kinds have no item here.
        break;
    }
  }

  function addThinking(text: string): void {
    if (thinking === undefined || text === '') return;
    thinking.text += text;
    emitter.reasoning(text);
  }

  function blockDelta(payload: Record<string, unknown>): void {
    const delta = payload['delta'];
    if (!isRecord(delta)) return;
    switch (delta['type']) {
      case 'text_delta':
        emitter.text(nonEmptyString(delta['text']) ?? '');
        break;
      case 'thinking_delta':
        addThinking(nonEmptyString(delta['thinking']) ?? '');
        break;
      case 'signature_delta':
        if (thinking !== undefined && typeof delta['signature'] === 'string') thinking.signature += delta['signature'];
        break;
      case 'input_json_delta': {
        const fragment = nonEmptyString(delta['partial_json']);
        if (fragment === undefined) break;
        if (payload['index'] === toolBlock && emitter.openKind === 'call') emitter.callArguments(fragment);
        else warn('upstream sent tool input for a block that is not the open tool call; dropped');
        break;
      }
      default:
        // citations_delta and newer kinds have no Responses equivalent here.
        break;
    }
  }

  function blockStop(payload: Record<string, unknown>): void {
    if (thinking === undefined || payload['index'] !== thinking.index) return;
    emitter.endReasoning({ type: 'thinking', thinking: thinking.text, signature: thinking.signature });
    thinking = undefined;
  }

  function messageDelta(payload: Record<string, unknown>): void {
    if (sawMessageDelta) return;
    sawMessageDelta = true;
    if (isRecord(payload['usage'])) readUsage(payload['usage'], true);
    const delta = isRecord(payload['delta']) ? payload['delta'] : {};
    emitter.settle(messagesStop(delta['stop_reason'], delta['stop_details']));
  }

  function complete(): void {
    emitter.complete(answerUsage(usage, reasoningTokens, options));
  }

  function push(event: SseEvent): void {
    if (emitter.finished) return;
    const payload = eventObject(event.data);
    if (typeof payload === 'string') {
      fail(payload);
      return;
    }
    const type = typeof payload['type'] === 'string' ? payload['type'] : event.event;
    switch (type) {
      case 'message_start': {
        const message = isRecord(payload['message']) ? payload['message'] : {};
        if (isRecord(message['usage'])) readUsage(message['usage'], false);
        emitter.start();
        break;
      }
      case 'content_block_start':
        blockStart(payload);
        break;
      case 'content_block_delta':
        blockDelta(payload);
        break;
      case 'content_block_stop':
        blockStop(payload);
        break;
      case 'message_delta':
        messageDelta(payload);
        break;
      case 'message_stop':
        if (!sawMessageDelta) messageDelta({});
        complete();
        break;
      case 'error': {
        const error = isRecord(payload['error']) ? payload['error'] : {};
        fail(nonEmptyString(error['message']) ?? 'upstream reported an error', nonEmptyString(error['type']));
        break;
      }
      default:
        // ping and event types newer than this code.
        break;
    }
  }

  function end(): void {
    if (emitter.finished) return;
    if (sawMessageDelta) complete();
    else fail('upstream stream ended before the answer was complete');
  }

  function fail(message: string, type?: string): void {
    if (emitter.finished) return;
    emitter.fail(failureCode(type), message, answerUsage(usage, reasoningTokens, options));
  }

  return responsesStreamTranslator(emitter, { push, end, fail, reported: () => usage }, options.estimatedInputTokens);
}
