/**
 * The Anthropic SDK's message threads (`thread`) in a messages request translated for an upstream
 * of another format: the server holds the conversation, which a translated request cannot give.
 * A `create` is dropped with a warning (the request carries the whole history); a `continue`, which
 * sends only the new messages, is a 400 `thread_unsupported_request` with `error.details.error_code`
 * saying so, on which the SDK goes on without threads and sends the whole history.
 */
import { GatewayError } from '../common/errors.ts';
import { asRecord } from '../common/json.ts';

/**
 * Checks `thread` for an upstream that speaks `format` (`the chat-completions format`, `the Gemini
 * format`, …) and is described as `upstream` in the warning (`a chat-completions upstream`).
 * @throws GatewayError 400 `thread_unsupported_request` for a continuation.
 */
export function checkThread(thread: unknown, format: string, upstream: string, warn: (message: string) => void): void {
  if (thread === undefined || thread === null || thread === false) return;
  if (asRecord(thread)?.['type'] === 'continue') {
    throw new GatewayError(
      400,
      'invalid_request_error',
      'thread_unsupported_request',
      `thread: this model's provider speaks ${format}, which keeps no message threads; send the whole conversation without thread`,
      { extra: { details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] } } },
    );
  }
  warn(`thread: dropped, ${upstream} keeps no message threads (the request carries the whole history)`);
}
