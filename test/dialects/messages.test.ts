import { messagesDialect } from '../../src/dialects/messages.ts';
import { runDialectCases } from './common.case.ts';

type Json = Record<string, unknown>;

runDialectCases({
  dialect: messagesDialect,
  headers: { 'anthropic-version': '2023-06-01' },
  badHeaders: [
    { headers: {}, error: /^alt-version: header is required/ },
    { headers: { 'alt-version': 'yesterday' }, error: /^alt-version: "yesterday" must be a date/ },
  ],
  keyIn: (key) => ({ headers: { 'x-api-key': key }, query: '' }),
  request: ({ text, model, stream, maxTokens }) => ({
    path: '/v1/messages',
    params: {},
    query: '',
    body: { model, max_tokens: maxTokens ?? 1024, system: 'Be brief.', messages: [{ role: 'user', content: text }], ...(stream ? { stream } : {}) },
  }),
  invalid: [
    { body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, field: /^max_tokens:/ },
    { body: { max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, field: /^model:/ },
  ],
  helloEstimate: 14,
  modelInBody: true,
  answer: {
    body: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 12, output_tokens: 3, cache_read_input_tokens: 0 } },
    usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 },
  },
  rateLimitedBody: { type: 'error', error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' }, request_id: null },
  streamErrorMessage: (events) => {
    const event = events[0];
    return event?.event === 'error' ? String(((JSON.parse(event.data) as Json)['error'] as Json)['message']) : '';
  },
  answerText: (answer) => String((((answer as Json)['content'] as Json[])[0] as Json)['text']),
  streamText: (events) => events
    .filter((event) => event.event === 'content_block_delta')
    .map((event) => String(((JSON.parse(event.data) as Json)['delta'] as Json)['text'] ?? ''))
    .join(''),
});
