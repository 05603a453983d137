import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { anthropicErrorBody, isAnthropicClient, messagesDialect } from '../../src/dialects/messages.ts';
import { GatewayError } from '../../src/common/errors.ts';
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

describe("the messages dialect's error body", () => {
  it("says Anthropic's error type for each status, keeps llmux's code beside it, and names the request", () => {
    const typeFor = (status: number): unknown => (JSON.parse(anthropicErrorBody(new GatewayError(status, 'invalid_request_error', 'x', 'm'))) as { error: Json }).error['type'];
    const expected: Array<[number, string]> = [
      [400, 'invalid_request_error'], [401, 'authentication_error'], [402, 'billing_error'], [403, 'permission_error'], [404, 'not_found_error'],
      [405, 'invalid_request_error'], [408, 'invalid_request_error'], [413, 'request_too_large'], [429, 'rate_limit_error'], [500, 'api_error'],
      [502, 'api_error'], [503, 'api_error'], [504, 'timeout_error'], [529, 'overloaded_error'],
    ];
    assert.deepEqual(expected.map(([status]) => [status, typeFor(status)]), expected);
    const body = JSON.parse(messagesDialect.errorBody(new GatewayError(401, 'invalid_request_error', 'invalid_api_key', 'no key'), { requestId: 'req_42' })) as Json;
    assert.deepEqual(body, { type: 'error', error: { message: 'no key', type: 'authentication_error', code: 'invalid_api_key' }, request_id: 'req_42' });
  });

  it('tells an Anthropic client by its version header', () => {
    assert.equal(isAnthropicClient({ 'anthropic-version': '2023-06-01' }), true);
    assert.equal(isAnthropicClient({ 'alt-version': '2023-06-01' }), true);
    assert.equal(isAnthropicClient({ authorization: 'Bearer x' }), false);
  });
});
