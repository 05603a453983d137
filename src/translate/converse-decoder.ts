/**
 * Reads Converse answers (Amazon Bedrock's Converse and ConverseStream, llmux.md section 8) into the
 * neutral answer events (./answer-events.ts): a stream one parsed SSE event at a time (the Bedrock
 * platform turns the event-stream frames into `event: <:event-type>` with the event's JSON as data:
 * src/platforms/aws/bedrock-stream.ts), and a whole answer.
 *
 * How the format is read (the Bedrock Runtime API reference, the SDK's `ConverseStreamOutput`):
 * - `messageStart` starts the answer (Converse names no model). Text arrives as `contentBlockDelta`
 *   `{delta: {text}}`, usually without a `contentBlockStart` (Bedrock sends one for tool use only).
 * - A tool call is `contentBlockStart {start: {toolUse: {toolUseId, name}}}`, then deltas
 *   `{toolUse: {input}}` whose strings are the arguments' JSON in pieces, then `contentBlockStop`.
 * - Reasoning is `{reasoningContent: {text}}` deltas, then a `{signature}` delta (Claude's), ended
 *   by the block's `contentBlockStop`: a reasoning item with `thinking-signature` state, or none for
 *   the families that sign nothing (DeepSeek, gpt-oss). `{redactedContent}` (base64) is a reasoning
 *   item of `redacted-thinking` state only.
 * - `messageStop {stopReason}` stops the answer (./stop-reasons.ts); `metadata {usage, metrics}`
 *   comes after it, the usage of formats/usage.ts `fromConverseUsage` (`inputTokens` already
 *   excludes the cache: nothing is subtracted), and ends it. A body that ends after `messageStop`
 *   without `metadata` ends the answer without usage; one that ends before `messageStop` fails it.
 * - Content still open at `messageStop` (cut by the output cap) is closed there.
 * - An exception frame reaches here as the `error` event the Bedrock platform writes (Anthropic's
 *   error shape, its type and `Amazon Bedrock <Exception>: message`), or, from a gateway in front of
 *   Bedrock that speaks SSE itself, as an event named after the exception (`throttlingException`,
 *   `{message}`): either fails the answer with its message and type.
 * - Citations deltas, `trace`, `metrics`, `additionalModelResponseFields`, Bedrock's `p` padding and
 *   event types newer than this code say nothing a client format here can carry.
 */
import { type AnswerEvents, type AnswerUsage, type DecoderOptions, type StreamDecoder, answerEnding, toAnswerUsage } from './answer-events.ts';
import type { SseEvent } from '../sse/parser.ts';
import type { TokenUsage } from '../formats/wire.ts';
import { fromConverseUsage } from '../formats/usage.ts';
import { asRecord, isRecord, nonEmptyString, records } from '../common/json.ts';
import { fromConverseStopReason } from './stop-reasons.ts';
import { eventObject } from './stream-event.ts';

/** Converse's stream exceptions as the error types every client format's in-stream error reads. */
const EXCEPTION_TYPES: ReadonlyMap<string, string> = new Map([
  ['throttlingException', 'rate_limit_error'],
  ['serviceUnavailableException', 'overloaded_error'],
  ['validationException', 'invalid_request_error'],
]);
const EXCEPTION_SUFFIX = 'Exception';

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Usage out of a Converse `usage` object. */
function usageOf(raw: Record<string, unknown>): AnswerUsage {
  return toAnswerUsage(fromConverseUsage(raw), 0);
}

/** Tells `sink` a ConverseStream answer, one parsed upstream event at a time. */
export function createConverseStreamDecoder(sink: AnswerEvents, options: DecoderOptions = {}): StreamDecoder {
  const ending = answerEnding(sink, options.onEnded);
  let started = false;
  let stopped = false;
  let reported: AnswerUsage | undefined;
  // The reasoning block being read (its index and signature), and the open tool block's index.
  let reasoning: { index: unknown; signature: string } | undefined;
  let toolBlock: unknown;
  let toolOpen = false;

  function start(): void {
    if (started) return;
    started = true;
    sink.start(undefined);
  }

  function endReasoning(): void {
    if (reasoning === undefined) return;
    const { signature } = reasoning;
    reasoning = undefined;
    sink.reasoningEnd(signature === '' ? undefined : { kind: 'thinking-signature', signature });
  }

  function endCall(): void {
    if (!toolOpen) return;
    toolOpen = false;
    toolBlock = undefined;
    sink.callEnd();
  }

  /** Content of another block arriving: what is open for an earlier one ends first. */
  function leaveFor(index: unknown): void {
    if (reasoning !== undefined && reasoning.index !== index) endReasoning();
    if (toolOpen && toolBlock !== index) endCall();
  }

  function blockStart(payload: Record<string, unknown>): void {
    const toolUse = asRecord(asRecord(payload['start'])?.['toolUse']);
    if (toolUse === undefined) return;
    const index = payload['contentBlockIndex'];
    leaveFor(undefined);
    start();
    toolBlock = index;
    toolOpen = true;
    sink.callStart({ id: nonEmptyString(toolUse['toolUseId']), name: text(toolUse['name']) });
  }

  function blockDelta(payload: Record<string, unknown>): void {
    const delta = asRecord(payload['delta']);
    if (delta === undefined) return;
    const index = payload['contentBlockIndex'];
    if (typeof delta['text'] === 'string') {
      leaveFor(index);
      start();
      if (delta['text'] !== '') sink.text(delta['text']);
      return;
    }
    const toolUse = asRecord(delta['toolUse']);
    if (toolUse !== undefined) {
      const fragment = nonEmptyString(toolUse['input']);
      if (fragment === undefined) return;
      if (toolOpen && index === toolBlock) sink.callArguments(fragment);
      else options.onWarning?.('upstream sent tool input for a block that is not the open tool call; dropped');
      return;
    }
    const thought = asRecord(delta['reasoningContent']);
    if (thought === undefined) return;
    leaveFor(index);
    start();
    if (typeof thought['redactedContent'] === 'string') {
      endReasoning();
      sink.reasoningEnd({ kind: 'redacted-thinking', data: thought['redactedContent'] });
      return;
    }
    reasoning ??= { index, signature: '' };
    if (typeof thought['text'] === 'string' && thought['text'] !== '') sink.reasoning(thought['text']);
    if (typeof thought['signature'] === 'string') reasoning.signature += thought['signature'];
  }

  function blockStop(payload: Record<string, unknown>): void {
    const index = payload['contentBlockIndex'];
    if (reasoning !== undefined && reasoning.index === index) endReasoning();
    else if (toolOpen && toolBlock === index) endCall();
  }

  return {
    push(event: SseEvent) {
      if (ending.state !== 'reading') return;
      const payload = eventObject(event.data);
      if (typeof payload === 'string') {
        ending.fail(payload);
        return;
      }
      switch (event.event) {
        case 'messageStart':
          start();
          break;
        case 'contentBlockStart':
          blockStart(payload);
          break;
        case 'contentBlockDelta':
          blockDelta(payload);
          break;
        case 'contentBlockStop':
          blockStop(payload);
          break;
        case 'messageStop':
          if (stopped) break;
          stopped = true;
          start();
          endReasoning();
          endCall();
          sink.stop(fromConverseStopReason(payload['stopReason']));
          break;
        case 'metadata': {
          const usage = asRecord(payload['usage']);
          if (usage !== undefined) {
            reported = usageOf(usage);
            sink.usage(reported);
          }
          if (stopped) ending.end();
          break;
        }
        case 'error': {
          const error = asRecord(payload['error']) ?? {};
          ending.fail(nonEmptyString(error['message']) ?? 'upstream reported an error', nonEmptyString(error['type']));
          break;
        }
        default:
          if (event.event !== undefined && event.event.endsWith(EXCEPTION_SUFFIX)) {
            const message = nonEmptyString(payload['message']) ?? 'upstream reported an error';
            ending.fail(`Amazon Bedrock ${event.event}: ${message}`, EXCEPTION_TYPES.get(event.event) ?? 'api_error');
          }
          break;
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

/** Tells `sink` a whole Converse answer (not validated, so read leniently; never throws). */
export function decodeConverseAnswer(answer: unknown, sink: AnswerEvents): void {
  const record = asRecord(answer) ?? {};
  sink.start(undefined);
  const message = asRecord(asRecord(record['output'])?.['message']) ?? {};
  for (const block of records(message['content'])) {
    if (typeof block['text'] === 'string') {
      sink.text(block['text']);
      continue;
    }
    const toolUse = asRecord(block['toolUse']);
    if (toolUse !== undefined) {
      sink.callStart({ id: nonEmptyString(toolUse['toolUseId']), name: text(toolUse['name']) });
      sink.callArguments(JSON.stringify(isRecord(toolUse['input']) ? toolUse['input'] : {}));
      sink.callEnd();
      continue;
    }
    const thought = asRecord(block['reasoningContent']);
    if (thought === undefined) continue;
    if (typeof thought['redactedContent'] === 'string') {
      sink.reasoningEnd({ kind: 'redacted-thinking', data: thought['redactedContent'] });
      continue;
    }
    const reasoningText = asRecord(thought['reasoningText']) ?? {};
    sink.reasoning(text(reasoningText['text']));
    const signature = text(reasoningText['signature']);
    sink.reasoningEnd(signature === '' ? undefined : { kind: 'thinking-signature', signature });
  }
  const usage = asRecord(record['usage']);
  if (usage !== undefined) sink.usage(usageOf(usage));
  sink.stop(fromConverseStopReason(record['stopReason']));
  sink.end();
}

/** The usage a whole Converse answer reports (zeros when it reports none). */
export function converseAnswerUsage(answer: Record<string, unknown>): TokenUsage {
  return fromConverseUsage(asRecord(answer['usage']));
}
