import { chatDialect } from '../../src/dialects/chat.ts';
import { runDialectCases } from './common.case.ts';
import type { SseEvent } from '../../src/sse/parser.ts';

type Json = Record<string, unknown>;

runDialectCases({
  dialect: chatDialect,
  headers: {},
  badHeaders: [],
  keyIn: (key) => ({ headers: { authorization: `Bearer ${key}` }, query: '' }),
  request: ({ text, model, stream, maxTokens }) => ({
    path: '/v1/chat/completions',
    params: {},
    query: '',
    body: { model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }], ...(stream ? { stream } : {}), ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }) },
  }),
  invalid: [
    { body: { model: 'm' }, field: /^messages:/ },
    { body: { messages: [{ role: 'user', content: 'hi' }] }, field: /^model:/ },
  ],
  helloEstimate: 21,
  modelInBody: true,
  answer: {
    body: { id: 'chatcmpl-1', object: 'chat.completion', choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } },
    usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 },
  },
  rateLimitedBody: { error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } },
  streamErrorMessage: (events) => String(((JSON.parse(events[0]?.data ?? '{}') as Json)['error'] as Json)['message']),
  answerText: (answer) => String((((answer as Json)['choices'] as Json[])[0]?.['message'] as Json)['content']),
  streamText: (events: SseEvent[]) => events
    .filter((event) => event.data !== '[DONE]')
    .map((event) => ((JSON.parse(event.data) as Json)['choices'] as Json[])[0]?.['delta'] as Json | undefined)
    .map((delta) => (typeof delta?.['content'] === 'string' ? delta['content'] : ''))
    .join(''),
});
