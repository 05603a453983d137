/**
 * A messages answer (from a messages upstream) given back to a Responses client, whole
 * (responses.md "Answer"). Built by the same emitter as the stream translator, without writing
 * events, so the whole answer and the assembled stream come out alike.
 *
 * Blocks in order: `thinking` -> a reasoning item (its text as `summary_text`; sealed into
 * `encrypted_content`, signature included, when `seal` is given); `redacted_thinking` -> a
 * summary-less reasoning item, only when sealed (there is nothing else to show); consecutive `text`
 * blocks -> one message with one `output_text` part; `tool_use` -> a call item (`arguments` =
 * JSON of `input`; flattened, custom and local shell calls restored). Server tool blocks
 * (`server_tool_use`, `web_search_tool_result`, …) have no Responses item here and are left out.
 * Stop reason and usage per responses.md: `max_tokens` -> incomplete (`max_output_tokens`),
 * `refusal` -> incomplete (`content_filter`) with a refusal part (`stop_details.explanation` when
 * given). Reasoning tokens are Anthropic's `output_tokens_details.thinking_tokens` when reported.
 * An upstream answer is not validated, so every field is read leniently.
 */
import type { MessagesResponse, TokenUsage } from '../formats/wire.ts';
import type { ResponsesResponse } from '../formats/responses.ts';
import { createResponsesEmitter } from './responses-events.ts';
import { type ResponsesAnswerOptions, answerUsage, messagesStop, tokenCount } from './responses-output.ts';
import { fromMessagesUsage } from '../formats/usage.ts';
import { asRecord, records } from '../common/json.ts';

/** Translates a messages answer into a Responses answer. */
export function messagesResponseToResponses(answer: MessagesResponse, options: ResponsesAnswerOptions): ResponsesResponse {
  const emitter = createResponsesEmitter(options);
  emitter.start();
  const record = asRecord(answer) ?? {};
  for (const block of records(record['content'])) {
    switch (block['type']) {
      case 'thinking': {
        const thinking = text(block['thinking']);
        emitter.reasoning(thinking);
        emitter.endReasoning({ type: 'thinking', thinking, signature: text(block['signature']) });
        break;
      }
      case 'redacted_thinking':
        emitter.endReasoning({ type: 'redacted_thinking', data: text(block['data']) });
        break;
      case 'text':
        emitter.text(text(block['text']));
        break;
      case 'tool_use':
        emitter.openCall(text(block['id']), text(block['name']));
        emitter.callArguments(JSON.stringify(asRecord(block['input']) ?? {}));
        break;
      default:
        break;
    }
  }
  emitter.settle(messagesStop(record['stop_reason'], record['stop_details']));
  const { usage, reasoningTokens } = messagesUsage(record['usage']);
  emitter.complete(answerUsage(usage, reasoningTokens, options));
  return emitter.response();
}

/** Usage of a messages answer and the thinking tokens it reports; undefined without usage. */
export function messagesUsage(raw: unknown): { usage: TokenUsage | undefined; reasoningTokens: number } {
  const usage = asRecord(raw);
  if (usage === undefined) return { usage: undefined, reasoningTokens: 0 };
  return { usage: fromMessagesUsage(usage), reasoningTokens: tokenCount(asRecord(usage['output_tokens_details'])?.['thinking_tokens']) };
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
