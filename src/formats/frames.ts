/**
 * The stream frames llmux writes itself rather than relays: the keep-alive during an upstream's
 * silence and the in-stream error (llmux.md section 3), one per wire format, plus the event names
 * a messages-format stream repeats. The translators and the dialects both use them.
 */
import type { ErrorType } from '../common/errors.ts';
import { geminiErrorBody, geminiHttpStatusOf } from './gemini-errors.ts';

/** What an in-stream error says. */
export interface StreamErrorInfo {
  message: string;
  type?: ErrorType | string;
  /** Chat format only: `error.code`; by default the one {@link streamErrorCode} gives the type. */
  code?: string | null;
  /**
   * What the stream carried of the answer before it failed, when the writer knows it (a Responses
   * pass-through: the response object `response.created` named), so the failure names the same response.
   */
  answer?: unknown;
  /**
   * Responses only: the `sequence_number` of the failure event, one past the last event the client
   * got (a pass-through stream: the upstream's numbering, continued); 0 when it got none.
   */
  sequenceNumber?: number;
}

/**
 * The chat `error.code` of an in-stream failure: the code llmux answers the same failure with
 * before a stream starts (`upstream_overloaded` for an overloaded provider, else `upstream_error`),
 * so one failure reads the same passed through and translated.
 */
export function streamErrorCode(type: string | undefined): string {
  return type === 'overloaded_error' ? 'upstream_overloaded' : 'upstream_error';
}

/** Event names of the Anthropic messages stream, interned by the SSE parser. */
export const MESSAGES_EVENT_NAMES: readonly string[] = [
  'content_block_delta', 'content_block_start', 'content_block_stop', 'message_start', 'message_delta', 'message_stop', 'ping', 'error',
];

/** An error after a messages-format stream has started: `event: error`. */
export function messagesErrorFrame(error: StreamErrorInfo): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: error.type ?? 'api_error', message: error.message } })}\n\n`;
}

/**
 * An error after a chat-format stream has started: an error chunk (OpenAI's error object, whose
 * `param` is required), and no `[DONE]` after it.
 */
export function chatErrorFrame(error: StreamErrorInfo): string {
  const type = error.type ?? 'api_error';
  return `data: ${JSON.stringify({ error: { message: error.message, type, param: null, code: error.code ?? streamErrorCode(type) } })}\n\n`;
}

/** Keep-alive of a messages-format stream, as Anthropic sends it. */
export const MESSAGES_PING_FRAME = 'event: ping\ndata: {"type": "ping"}\n\n';
/** Keep-alive of a chat-format stream: an SSE comment, which clients ignore. */
export const COMMENT_PING_FRAME = ': ping\n\n';

/**
 * An error after a Gemini stream has started: one more `data:` event holding Google's error object
 * (llmux.md section 9), its code and status from the error's type (`api_error`: 500 `INTERNAL`).
 */
export function geminiErrorFrame(error: StreamErrorInfo): string {
  return `data: ${JSON.stringify(geminiErrorBody(geminiHttpStatusOf(error.type), error.message))}\n\n`;
}
