/**
 * The messages dialect (Anthropic's `POST /messages`). Its version header is required from clients
 * (`alt-version` or `anthropic-version`, llmux.md section 3) and forwarded to messages upstreams
 * with the client's beta header; a chat client's request gets the stable version.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { validateMessagesRequest } from '../formats/messages.ts';
import { MESSAGES_EVENT_NAMES, MESSAGES_PING_FRAME, messagesErrorFrame } from '../formats/frames.ts';
import { fromMessagesUsage } from '../formats/usage.ts';
import { LAZY_REQUEST_MEMBERS } from '../formats/text-members.ts';
import { estimateTokens } from '../formats/estimate.ts';
import { errorObject, invalidParameters } from '../common/errors.ts';
import type { ErrorContext, GatewayError } from '../common/errors.ts';
import { asRecord } from '../common/json.ts';
import { newId } from '../common/ids.ts';
import { STANDARD_CREDENTIALS } from '../common/credentials.ts';
import { withModel } from '../passthrough/model-field.ts';
import type { MessagesRequest } from '../formats/wire.ts';
import type { JsonObjectBytes } from '../common/json-bytes.ts';
import { messagesTraits } from '../formats/traits.ts';
import { messagesConversationKey } from '../formats/conversation-key.ts';
import { createCarryReader } from '../translate/carried.ts';
import { carryMessagesHistory } from '../translate/carry-messages.ts';
import { keepNothing, mayHoldSeals, noAnswerId, passedOn } from './dialect.ts';
import type { Dialect, ForwardedHeaders, PassThroughCarry, TextAnswer } from './dialect.ts';
import { carryTurnOf } from './carry.ts';
import { withSealer } from '../responses/state.ts';
import { lastUserText } from './user-text.ts';

const DEFAULT_VERSION = '2023-06-01';
const VERSION_FORMAT = /^\d{4}-\d{2}-\d{2}$/;
/** With Anthropic's interleaved-thinking beta the thinking budget may reach max_tokens. */
const INTERLEAVED_THINKING_BETA = 'interleaved-thinking-2025-05-14';

/**
 * Anthropic's `error.type` by HTTP status (its errors page, and the SDK's error objects): what its
 * SDKs and tools read, where llmux's own types are the description's for every other format
 * (gateway-api.md "Errors"). Another 4xx is `invalid_request_error` and another 5xx `api_error`,
 * as Anthropic answers them; llmux's `code` stays beside the type.
 */
const ANTHROPIC_ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The `error.type` an Anthropic client is answered with for `status`. */
export function anthropicErrorType(status: number): string {
  return ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * Anthropic's error body: `{"type": "error", "error": {type, message}, "request_id"}`, the type
 * by status, with llmux's `code` (and any extra) in `error` too.
 */
export function anthropicErrorBody(error: GatewayError, context: ErrorContext = {}): string {
  return JSON.stringify({ type: 'error', error: errorObject(error, anthropicErrorType(error.status)), request_id: context.requestId ?? null });
}

/** Checks `alt-version` / `anthropic-version` on the messages operation; returns the value. */
export function checkVersionHeader(headers: IncomingHttpHeaders): string {
  const raw = headers['anthropic-version'] ?? headers['alt-version'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === '') {
    throw invalidParameters('alt-version: header is required on /v1/messages (for example "alt-version: 2023-06-01"; "anthropic-version" is accepted too)');
  }
  if (!VERSION_FORMAT.test(value)) throw invalidParameters(`alt-version: "${value.slice(0, 40)}" must be a date like 2023-06-01`);
  return value;
}

/**
 * Whether a request comes from an Anthropic client: it sends the version header (`anthropic-version`,
 * or the description's `alt-version`). A route that all formats share (the model list) answers it
 * in Anthropic's shapes.
 */
export function isAnthropicClient(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  return headers['anthropic-version'] !== undefined || headers['alt-version'] !== undefined;
}

function betaHeader(headers: IncomingHttpHeaders): string | undefined {
  const raw = headers['anthropic-beta'] ?? headers['alt-beta'];
  const value = Array.isArray(raw) ? raw.join(',') : raw;
  return value === undefined || value === '' ? undefined : value;
}

export const messagesDialect: Dialect<'messages'> = {
  format: 'messages',
  routes: ['/v1/messages', '/messages'],
  credentials: STANDARD_CREDENTIALS,
  eventNames: MESSAGES_EVENT_NAMES,

  readHeaders: (headers): ForwardedHeaders => ({ version: checkVersionHeader(headers), beta: betaHeader(headers) }),
  readRequest(raw, { forwarded, strict }) {
    const body = validateMessagesRequest(raw, { interleavedThinking: forwarded.beta?.includes(INTERLEAVED_THINKING_BETA) === true, strict });
    return { format: 'messages', body, model: body.model, stream: body.stream === true, version: forwarded.version, beta: forwarded.beta };
  },
  lazyMembers: LAZY_REQUEST_MEMBERS,
  maxTokens: (body) => body.max_tokens,
  estimate: (body, texts) => estimateTokens([body.system, body.messages, body.tools], texts),
  wantsStreamUsage: () => true,
  // Not async: with the sealer made (every request after the first) the turn is there at once.
  beginTurn: (request, scope) => withSealer(scope.services.responses, (sealer) => ({
    request,
    translation: carryTurnOf(sealer, scope.keyId, scope.conversation ?? messagesConversationKey(request.body, request.raw?.texts)),
    keep: keepNothing,
  })),
  traits: messagesTraits,
  conversationKey: messagesConversationKey,
  answerId: noAnswerId,

  formatHeaders(forwarded) {
    const headers: Record<string, string> = { 'anthropic-version': forwarded.version ?? DEFAULT_VERSION };
    if (forwarded.beta !== undefined) headers['anthropic-beta'] = forwarded.beta;
    return headers;
  },
  passThroughBody(body, upstreamId, raw, envelope, carry) {
    const edits = new Map<string, string | undefined>([['model', JSON.stringify(upstreamId)]]);
    const carried = carry === undefined ? undefined : carriedBody(body, raw, carry);
    if (carried === undefined) return passedOn(body, { ...body, model: upstreamId }, raw, edits, envelope);
    edits.set('messages', JSON.stringify(carried.messages));
    if (carried.thinking === undefined && body.thinking !== undefined) edits.set('thinking', undefined);
    return passedOn(body, { ...carried, model: upstreamId }, raw, edits, envelope);
  },
  // The top-level `model` names the llmux id that answered; nothing else is touched.
  passThroughAnswer: (bytes, modelId) => ({ bytes: withModel(bytes, Buffer.from(JSON.stringify(modelId))), answer: undefined }),
  usageKey: 'usage',
  readUsage: (usage) => fromMessagesUsage(asRecord(usage)),

  pingFrame: MESSAGES_PING_FRAME,
  errorFrame: messagesErrorFrame,
  // Anthropic's error body also carries a top-level `"type": "error"`, which its SDKs read (llmux.md section 3).
  errorBody: anthropicErrorBody,

  userText: (body, limit) => lastUserText(body.messages, limit),

  textAnswer({ model, text, cut, usage }) {
    return JSON.stringify({
      id: newId('msg_'),
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text }],
      stop_reason: cut ? 'max_tokens' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  },
  textStream: messagesTextStream,
};

/** The body with its sealed thinking sorted for the upstream (src/translate/carry-messages.ts); undefined when it has none. */
function carriedBody(body: MessagesRequest, raw: JsonObjectBytes | undefined, carry: PassThroughCarry<'messages'>): MessagesRequest | undefined {
  const reader = createCarryReader(carry.turn, carry.model.issuer, carry.onWarning);
  const carried = carryMessagesHistory(body, reader, carry.onWarning, mayHoldSeals(body, raw));
  reader.finish();
  return carried;
}

function* messagesTextStream({ model, words, cut, usage }: TextAnswer & { words: Iterable<string> }): Generator<string> {
  const ev = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  yield ev('message_start', {
    type: 'message_start',
    message: {
      id: newId('msg_'), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: usage.inputTokens, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    },
  });
  yield ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  yield ev('ping', { type: 'ping' });
  for (const word of words) yield ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } });
  yield ev('content_block_stop', { type: 'content_block_stop', index: 0 });
  yield ev('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: cut ? 'max_tokens' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: usage.outputTokens },
  });
  yield ev('message_stop', { type: 'message_stop' });
}
