/**
 * The chat-completions dialect (OpenAI's `POST /chat/completions`).
 *
 * Its turn carries what the server-side store remembered for the request's tool calls (the
 * format has no place for opaque state: llmux.md section 11, src/dialects/carry.ts), and remembers
 * the answer's; its body to a chat upstream gets that state back where the upstream reads it.
 */
import type { ChatRequest } from '../formats/wire.ts';
import { validateChatRequest } from '../formats/chat.ts';
import { COMMENT_PING_FRAME, chatErrorFrame } from '../formats/frames.ts';
import { fromChatUsage } from '../formats/usage.ts';
import { LAZY_REQUEST_MEMBERS } from '../formats/text-members.ts';
import { estimateTokens } from '../formats/estimate.ts';
import { chatTraits } from '../formats/traits.ts';
import { chatConversationKey } from '../formats/conversation-key.ts';
import { chatUserId } from '../translate/chat-user.ts';
import { asRecord } from '../common/json.ts';
import { newId } from '../common/ids.ts';
import { STANDARD_CREDENTIALS } from '../common/credentials.ts';
import { errorBody } from '../common/errors.ts';
import { withModel } from '../passthrough/model-field.ts';
import { NO_HEADERS, noAnswerId, passedOn } from './dialect.ts';
import type { Dialect, PassThroughCarry, TextAnswer } from './dialect.ts';
import { NOTHING_FOUND, chatCarryOf, promptCacheKeyFor } from './carry.ts';
import { withSealer } from '../responses/state.ts';
import { createCarryReader } from '../translate/carried.ts';
import { carryChatHistory } from '../translate/carry-chat.ts';
import { lastUserText } from './user-text.ts';

export const chatDialect: Dialect<'chat'> = {
  format: 'chat',
  routes: ['/v1/chat/completions', '/chat/completions'],
  credentials: STANDARD_CREDENTIALS,
  eventNames: [],

  readHeaders: () => ({}),
  readRequest(raw) {
    const body = validateChatRequest(raw);
    return { format: 'chat', body, model: body.model, stream: body.stream === true };
  },
  lazyMembers: LAZY_REQUEST_MEMBERS,
  maxTokens: (body) => body.max_completion_tokens ?? body.max_tokens,
  estimate: (body, texts) => estimateTokens([body.messages, body.tools], texts),
  wantsStreamUsage: (body) => body.stream_options?.include_usage === true,
  // Not async: a turn with the sealer made and no tool calls to recall is there at once.
  beginTurn: (request, scope) => withSealer(scope.services.responses, (sealer) => {
    const carry = chatCarryOf(request.body, scope.keyId, sealer, scope.services.carried, request.raw?.texts, scope.conversation);
    return carry instanceof Promise ? carry.then(({ turn, settled }) => ({ request, translation: turn, keep: settled })) : { request, translation: carry.turn, keep: carry.settled };
  }),
  traits: chatTraits,
  conversationKey: chatConversationKey,
  answerId: noAnswerId,

  formatHeaders: () => NO_HEADERS,
  passThroughBody(body, upstreamId, raw, envelope, carry) {
    const copy: ChatRequest = { ...body, model: upstreamId };
    const edits = new Map<string, string | undefined>([['model', JSON.stringify(upstreamId)]]);
    const messages = carry === undefined ? undefined : carriedMessages(body, carry);
    if (messages !== undefined) {
      copy.messages = messages;
      edits.set('messages', JSON.stringify(messages));
    }
    const cacheKey = carry === undefined ? undefined : promptCacheKeyFor(body['prompt_cache_key'], carry);
    if (cacheKey !== undefined) {
      copy['prompt_cache_key'] = cacheKey;
      edits.set('prompt_cache_key', JSON.stringify(cacheKey));
    }
    // OpenAI refuses a `user` over 64 characters (llmux.md section 5).
    if (typeof body.user === 'string') {
      copy.user = chatUserId(body.user);
      if (copy.user !== body.user) edits.set('user', JSON.stringify(copy.user));
    }
    // Ask for usage so tokens/min counts what was really used; the usage tap hides the extra
    // chunk from clients that did not ask for it.
    if (body.stream === true) {
      copy.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
      if (body.stream_options?.include_usage !== true) edits.set('stream_options', JSON.stringify(copy.stream_options));
    }
    return passedOn(body, copy, raw, edits, envelope);
  },
  // The top-level `model` names the llmux id that answered; nothing else is touched.
  passThroughAnswer: (bytes, modelId) => ({ bytes: withModel(bytes, Buffer.from(JSON.stringify(modelId))), answer: undefined }),
  usageKey: 'usage',
  readUsage: (usage) => fromChatUsage(asRecord(usage)),

  pingFrame: COMMENT_PING_FRAME,
  errorFrame: chatErrorFrame,
  errorBody,

  userText: (body, limit) => lastUserText(body.messages, limit),

  textAnswer({ model, text, cut, usage }) {
    return JSON.stringify({
      id: newId('chatcmpl-'),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: cut ? 'length' : 'stop' }],
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens,
        prompt_tokens_details: { cached_tokens: 0 },
      },
    });
  },
  textStream: chatTextStream,
};

/** The request's messages with its carried state sorted for the upstream; undefined when nothing changes. */
function carriedMessages(body: ChatRequest, carry: PassThroughCarry<'chat'>): ChatRequest['messages'] | undefined {
  const reader = createCarryReader(carry.turn, carry.model.issuer, carry.onWarning);
  const messages = carryChatHistory(Array.isArray(body.messages) ? body.messages : [], carry.turn?.recalled ?? NOTHING_FOUND, carry.model, reader);
  reader.finish();
  return messages;
}

function* chatTextStream({ model, words, cut, usage, includeUsage }: TextAnswer & { words: Iterable<string>; includeUsage: boolean }): Generator<string> {
  const chunkId = newId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: unknown, finish: string | null): string =>
    `data: ${JSON.stringify({ id: chunkId, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  yield chunk({ role: 'assistant', content: '', refusal: null }, null);
  for (const word of words) yield chunk({ content: word }, null);
  yield chunk({}, cut ? 'length' : 'stop');
  if (includeUsage) {
    yield `data: ${JSON.stringify({
      id: chunkId, object: 'chat.completion.chunk', created, model, choices: [],
      usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens },
    })}\n\n`;
  }
  yield 'data: [DONE]\n\n';
}
