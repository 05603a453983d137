/**
 * The chat-completions dialect (OpenAI's `POST /chat/completions`).
 */
import type { ChatRequest } from '../formats/wire.ts';
import { validateChatRequest } from '../formats/chat.ts';
import { COMMENT_PING_FRAME, chatErrorFrame } from '../formats/frames.ts';
import { fromChatUsage } from '../formats/usage.ts';
import { chatUserId } from '../translate/chat-user.ts';
import { asRecord } from '../common/json.ts';
import { newId } from '../common/ids.ts';
import { withModel } from '../passthrough/model-field.ts';
import { withMembers } from '../common/json-bytes.ts';
import { bytesOf, statelessTurn } from './dialect.ts';
import type { Dialect, TextAnswer } from './dialect.ts';

export const chatDialect: Dialect<'chat'> = {
  format: 'chat',
  path: '/chat/completions',
  eventNames: [],

  readHeaders: () => ({}),
  readRequest: (body) => ({ format: 'chat', body: validateChatRequest(body) }),
  maxTokens: (body) => body.max_completion_tokens ?? body.max_tokens,
  wantsStreamUsage: (body) => body.stream_options?.include_usage === true,
  beginTurn: statelessTurn,

  upstreamHeaders: (apiKey) => (apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }),
  passThroughBody(body, upstreamId, raw) {
    const copy: ChatRequest = { ...body, model: upstreamId };
    // OpenAI refuses a `user` over 64 characters (llmux.md section 5).
    if (typeof body.user === 'string') copy.user = chatUserId(body.user);
    // Ask for usage so tokens/min counts what was really used; the usage tap hides the extra
    // chunk from clients that did not ask for it.
    if (body.stream === true) copy.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
    const bytes = bytesOf(body, raw);
    if (bytes === undefined) return JSON.stringify(copy);
    const edits = new Map<string, string>([['model', JSON.stringify(upstreamId)]]);
    if (copy.user !== body.user) edits.set('user', JSON.stringify(copy.user));
    if (body.stream === true && body.stream_options?.include_usage !== true) edits.set('stream_options', JSON.stringify(copy.stream_options));
    return withMembers(bytes, edits);
  },
  // The top-level `model` names the llmux id that answered; nothing else is touched.
  passThroughAnswer: (bytes, modelId) => ({ bytes: withModel(bytes, Buffer.from(JSON.stringify(modelId))), answer: undefined }),
  readUsage: (usage) => fromChatUsage(asRecord(usage)),

  pingFrame: COMMENT_PING_FRAME,
  errorFrame: chatErrorFrame,

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
