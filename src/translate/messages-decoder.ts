/**
 * Reads messages-format answers into the neutral answer events (./answer-events.ts): a stream one
 * parsed SSE event at a time, and a whole answer. Every event is passed on as soon as the upstream
 * event that says it arrives.
 *
 * How the format is read (Anthropic's API and the compatible servers):
 * - `message_start` starts the answer; its usage holds the input and cache counts and a placeholder
 *   output count. The first `message_delta` says the stop reason and the cumulative output count
 *   (even 0), and newer API versions repeat the input and cache counts there (formats/usage.ts
 *   `foldMessagesUsage`); reasoning tokens are `output_tokens_details.thinking_tokens`.
 *   `message_stop` ends the answer (without a `message_delta` before it, as `end_turn`).
 * - `text` blocks are text, `thinking` blocks reasoning ended with their `signature` (gathered from
 *   `signature_delta`s) as opaque state, `redacted_thinking` blocks a reasoning item of opaque state
 *   only, `tool_use` blocks calls whose `input_json_delta` fragments are the arguments (the start
 *   block's `input` is `{}` in every known stream; a non-empty one is the whole input). A start
 *   block normally arrives empty; any text or thinking it does carry counts.
 * - Server tool blocks (`server_tool_use`, `web_search_tool_result`, …), `citations_delta`, `ping`
 *   and event types newer than this code say nothing a client format here can carry.
 * - Tool input for a block that is not the open call cannot be placed: dropped with a warning.
 * - JSON inside events may be padded with whitespace (real Anthropic streams): it is parsed, never
 *   pattern-matched. Data that is not a JSON object, an `error` event, or a body that ends before
 *   `message_delta` fails the answer.
 */
import { type AnswerEvents, type AnswerStop, type AnswerUsage, type DecoderOptions, type StreamDecoder, answerEnding, toAnswerUsage } from './answer-events.ts';
import type { SseEvent } from '../sse/parser.ts';
import { foldMessagesUsage, fromMessagesUsage } from '../formats/usage.ts';
import { asRecord, isRecord, nonEmptyString, records } from '../common/json.ts';
import { fromMessagesStopReason } from './stop-reasons.ts';
import { eventObject } from './stream-event.ts';

/** Reasoning tokens a messages usage object reports, or `known` when it reports none. */
function thinkingTokens(raw: Record<string, unknown>, known: number): number {
  const details = raw['output_tokens_details'];
  const value = isRecord(details) ? details['thinking_tokens'] : undefined;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : known;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The stop of a `message_delta`'s `delta` or a whole answer. */
function stopOf(body: Record<string, unknown>): AnswerStop {
  return fromMessagesStopReason(body['stop_reason'], body['stop_sequence'], asRecord(body['stop_details'])?.['explanation']);
}

/** Tells `sink` a messages stream, one parsed upstream event at a time. */
export function createMessagesStreamDecoder(sink: AnswerEvents, options: DecoderOptions = {}): StreamDecoder {
  const ending = answerEnding(sink, options.onEnded);
  let started = false;
  let sawMessageDelta = false;
  let reported: AnswerUsage | undefined;
  // The thinking block being read (its index and signature) and the open tool block's index.
  let thinking: { index: number; signature: string } | undefined;
  let toolBlock: number | undefined;

  function readUsage(raw: Record<string, unknown>, event: 'start' | 'delta'): void {
    reported = toAnswerUsage(foldMessagesUsage(reported, raw, event), thinkingTokens(raw, reported?.reasoningTokens ?? 0));
    sink.usage(reported);
  }

  function blockStart(payload: Record<string, unknown>): void {
    const block = payload['content_block'];
    const index = payload['index'];
    if (!isRecord(block) || typeof index !== 'number') return;
    switch (block['type']) {
      case 'text': {
        const value = nonEmptyString(block['text']);
        if (value !== undefined) sink.text(value);
        break;
      }
      case 'thinking': {
        thinking = { index, signature: text(block['signature']) };
        const value = nonEmptyString(block['thinking']);
        if (value !== undefined) sink.reasoning(value);
        break;
      }
      case 'redacted_thinking':
        sink.reasoningEnd({ kind: 'redacted-thinking', data: text(block['data']) });
        break;
      case 'tool_use': {
        toolBlock = index;
        sink.callStart({ id: text(block['id']), name: text(block['name']) });
        const input = block['input'];
        if (isRecord(input) && Object.keys(input).length > 0) sink.callArguments(JSON.stringify(input));
        break;
      }
      default:
        break;
    }
  }

  function blockDelta(payload: Record<string, unknown>): void {
    const delta = payload['delta'];
    if (!isRecord(delta)) return;
    switch (delta['type']) {
      case 'text_delta': {
        const value = nonEmptyString(delta['text']);
        if (value !== undefined) sink.text(value);
        break;
      }
      case 'thinking_delta': {
        const value = nonEmptyString(delta['thinking']);
        if (value !== undefined) sink.reasoning(value);
        break;
      }
      case 'signature_delta':
        if (thinking !== undefined && typeof delta['signature'] === 'string') thinking.signature += delta['signature'];
        break;
      case 'input_json_delta': {
        const fragment = nonEmptyString(delta['partial_json']);
        if (fragment === undefined) break;
        if (payload['index'] === toolBlock) sink.callArguments(fragment);
        else options.onWarning?.('upstream sent tool input for a block that is not the open tool call; dropped');
        break;
      }
      default:
        break;
    }
  }

  function blockStop(payload: Record<string, unknown>): void {
    const index = payload['index'];
    if (thinking !== undefined && index === thinking.index) {
      sink.reasoningEnd({ kind: 'thinking-signature', signature: thinking.signature });
      thinking = undefined;
    } else if (toolBlock !== undefined && index === toolBlock) {
      toolBlock = undefined;
      sink.callEnd();
    }
  }

  function messageDelta(payload: Record<string, unknown>): void {
    if (sawMessageDelta) return;
    sawMessageDelta = true;
    if (isRecord(payload['usage'])) readUsage(payload['usage'], 'delta');
    sink.stop(stopOf(asRecord(payload['delta']) ?? {}));
  }

  return {
    push(event: SseEvent) {
      if (ending.state !== 'reading') return;
      const payload = eventObject(event.data);
      if (typeof payload === 'string') {
        ending.fail(payload);
        return;
      }
      const type = typeof payload['type'] === 'string' ? payload['type'] : event.event;
      switch (type) {
        case 'message_start': {
          const message = asRecord(payload['message']) ?? {};
          if (isRecord(message['usage'])) readUsage(message['usage'], 'start');
          if (!started) {
            started = true;
            sink.start(typeof message['model'] === 'string' ? message['model'] : undefined);
          }
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
          ending.end();
          break;
        case 'error': {
          const error = asRecord(payload['error']) ?? {};
          ending.fail(nonEmptyString(error['message']) ?? 'upstream reported an error', nonEmptyString(error['type']));
          break;
        }
        default:
          break;
      }
    },
    end() {
      if (ending.state !== 'reading') return;
      if (sawMessageDelta) ending.end();
      else ending.fail('upstream stream ended before the answer was complete');
    },
    fail: ending.fail,
    reported: () => reported,
  };
}

/** Tells `sink` a whole messages answer (not validated, so read leniently; never throws). */
export function decodeMessagesAnswer(answer: unknown, sink: AnswerEvents): void {
  const record = asRecord(answer) ?? {};
  sink.start(typeof record['model'] === 'string' ? record['model'] : undefined);
  for (const block of records(record['content'])) {
    switch (block['type']) {
      case 'thinking':
        sink.reasoning(text(block['thinking']));
        sink.reasoningEnd({ kind: 'thinking-signature', signature: text(block['signature']) });
        break;
      case 'redacted_thinking':
        sink.reasoningEnd({ kind: 'redacted-thinking', data: text(block['data']) });
        break;
      case 'text':
        // An empty text block still counts as text (a chat answer's content is then "", not null).
        if (typeof block['text'] === 'string') sink.text(block['text']);
        break;
      case 'tool_use':
        sink.callStart({ id: text(block['id']), name: text(block['name']) });
        sink.callArguments(JSON.stringify(asRecord(block['input']) ?? {}));
        sink.callEnd();
        break;
      default:
        break;
    }
  }
  const usage = asRecord(record['usage']);
  if (usage !== undefined) sink.usage(toAnswerUsage(fromMessagesUsage(usage), thinkingTokens(usage, 0)));
  sink.stop(stopOf(record));
  sink.end();
}
