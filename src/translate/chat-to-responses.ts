/**
 * A chat-completions answer (from a chat upstream) given back to a Responses client, whole
 * (responses.md "Answer"). Built by the same emitter as the stream translator, without writing
 * events, so the whole answer and the assembled stream come out alike.
 *
 * Items in the order a chat answer streams them: reasoning (`reasoning_content`, or `reasoning` as
 * Groq and OpenRouter send it), then a message (`content` as an `output_text` part, `refusal` as a
 * `refusal` part), then one item per tool call, ids unchanged as `call_id`. Calls of flattened,
 * custom and local shell tools come back as what the client declared (responses-tools.ts).
 * Stop reason and usage per responses.md: `length` -> incomplete (`max_output_tokens`); a refusal or
 * `content_filter` -> incomplete (`content_filter`); anything else completed, tool calls included.
 * An upstream answer is not validated, so every field is read leniently.
 */
import type { ChatResponse, TokenUsage } from '../formats/wire.ts';
import type { ResponsesResponse } from '../formats/responses.ts';
import { createResponsesEmitter, type ResponsesEmitter } from './responses-events.ts';
import { type ResponsesAnswerOptions, answerUsage, chatStop, tokenCount } from './responses-output.ts';
import { fromChatUsage } from '../formats/usage.ts';
import { asRecord, isRecord, records } from '../common/json.ts';

/** Translates a chat-completions answer (choice 0) into a Responses answer. */
export function chatResponseToResponses(answer: ChatResponse, options: ResponsesAnswerOptions): ResponsesResponse {
  const emitter = createResponsesEmitter(options);
  emitter.start();
  const record = asRecord(answer) ?? {};
  const choices = Array.isArray(record['choices']) ? record['choices'] : [];
  const choice = asRecord(choices.find((entry) => isRecord(entry) && (entry['index'] ?? 0) === 0));
  const message = asRecord(choice?.['message']) ?? {};

  emitter.reasoning(nonEmpty(message['reasoning_content']) ?? nonEmpty(message['reasoning']) ?? '');
  emitter.text(chatContentText(message['content']));
  const refusal = nonEmpty(message['refusal']);
  if (refusal !== undefined) emitter.refusal(refusal);
  addCalls(emitter, message);

  const finishReason = typeof choice?.['finish_reason'] === 'string' ? choice['finish_reason'] : null;
  emitter.settle(chatStop(finishReason, refusal !== undefined));
  const { usage, reasoningTokens } = chatUsage(record['usage']);
  emitter.complete(answerUsage(usage, reasoningTokens, options));
  return emitter.response();
}

/** Usage of a chat answer or stream chunk, and the reasoning tokens it reports; undefined without usage. */
export function chatUsage(raw: unknown): { usage: TokenUsage | undefined; reasoningTokens: number } {
  const usage = asRecord(raw);
  if (usage === undefined) return { usage: undefined, reasoningTokens: 0 };
  return { usage: fromChatUsage(usage), reasoningTokens: tokenCount(asRecord(usage['completion_tokens_details'])?.['reasoning_tokens']) };
}

function addCalls(emitter: ResponsesEmitter, message: Record<string, unknown>): void {
  for (const call of records(message['tool_calls'])) {
    const fn = asRecord(call['function']) ?? {};
    emitter.openCall(nonEmpty(call['id']), typeof fn['name'] === 'string' ? fn['name'] : '');
    emitter.callArguments(typeof fn['arguments'] === 'string' ? fn['arguments'] : '');
  }
  const legacy = asRecord(message['function_call']);
  if (legacy !== undefined) {
    emitter.openCall(undefined, typeof legacy['name'] === 'string' ? legacy['name'] : '');
    emitter.callArguments(typeof legacy['arguments'] === 'string' ? legacy['arguments'] : '');
  }
}

/** Chat content: a string, or parts whose text is joined (some compatible servers send parts). */
function chatContentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return records(content).map((part) => (typeof part['text'] === 'string' ? part['text'] : '')).join('');
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
