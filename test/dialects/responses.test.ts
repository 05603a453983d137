import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { responsesDialect, responsesErrorFrame } from '../../src/dialects/responses.ts';
import { parseResponsesEvents } from '../helpers/responses-stream.ts';
import { runDialectCases } from './common.case.ts';

describe('the Responses dialect', () => {
  it('fails a stream with the response it started, or a response of its own when none came', () => {
    const started = { id: 'resp_started', object: 'response', created_at: 1, status: 'in_progress', model: 'm', output: [], usage: null };
    const [withStarted] = parseResponsesEvents(responsesErrorFrame({ message: 'cut off', type: 'api_error', answer: started }));
    assert.equal(withStarted?.event, 'response.failed');
    assert.deepEqual(withStarted?.data['response'], { ...started, status: 'failed', error: { code: 'server_error', message: 'cut off' }, incomplete_details: null });

    const [fresh] = parseResponsesEvents(responsesErrorFrame({ message: 'nothing came', type: 'rate_limit_error' }));
    const response = fresh?.data['response'] as { id: string; status: string; error: { code: string } };
    assert.match(response.id, /^resp_/);
    assert.equal(response.status, 'failed');
    assert.equal(response.error.code, 'rate_limit_exceeded');
  });

  it('numbers its failure event after the last event the client got, or 0 when it got none', () => {
    const [after] = parseResponsesEvents(responsesErrorFrame({ message: 'cut off', sequenceNumber: 7 }));
    assert.equal(after?.data['sequence_number'], 7);
    const [first] = parseResponsesEvents(responsesErrorFrame({ message: 'cut off' }));
    assert.equal(first?.data['sequence_number'], 0);
  });

  it('writes the llmux model id into a whole pass-through answer, and leaves bytes it cannot read as they are', () => {
    const passed = responsesDialect.passThroughAnswer(Buffer.from('{"id":"resp_1","model":"gpt-upstream","output":[]}'), 'llmux-model');
    assert.equal(passed.bytes.toString(), '{"id":"resp_1","model":"llmux-model","output":[]}');
    assert.deepEqual(passed.answer, { id: 'resp_1', model: 'llmux-model', output: [] });
    const unreadable = Buffer.from('not json');
    assert.equal(responsesDialect.passThroughAnswer(unreadable, 'llmux-model').bytes, unreadable);
    assert.equal(responsesDialect.passThroughAnswer(Buffer.from('[1]'), 'llmux-model').answer, undefined);
  });

  it('sends a Responses upstream the client\'s body with its model id, without reasoning llmux sealed', () => {
    const body = {
      model: 'llmux-model',
      input: [{ role: 'user' as const, content: 'hi' }, { type: 'reasoning', summary: [], encrypted_content: 'llmux.v1.abc' }, { type: 'reasoning', summary: [], encrypted_content: 'gAAAAopenai' }],
      client_metadata: { a: 'b' },
    };
    assert.deepEqual(JSON.parse(responsesDialect.passThroughBody(body, 'gpt-upstream').toString()), {
      model: 'gpt-upstream',
      input: [{ role: 'user', content: 'hi' }, { type: 'reasoning', summary: [], encrypted_content: 'gAAAAopenai' }],
      client_metadata: { a: 'b' },
    });
    assert.equal(responsesDialect.passThroughBody({ model: 'm', input: 'hi' }, 'up'), '{"model":"up","input":"hi"}');
  });
});

type Json = Record<string, unknown>;

runDialectCases({
  dialect: responsesDialect,
  headers: {},
  badHeaders: [],
  keyIn: (key) => ({ headers: { 'x-api-key': key }, query: '' }),
  request: ({ text, model, stream, maxTokens }) => ({
    path: '/v1/responses',
    params: {},
    query: '',
    body: {
      model,
      instructions: 'Be brief.',
      input: [{ role: 'user', content: [{ type: 'input_text', text }] }],
      ...(stream ? { stream } : {}),
      ...(maxTokens === undefined ? {} : { max_output_tokens: maxTokens }),
    },
  }),
  invalid: [
    { body: { input: 'hi' }, field: /^model:/ },
    { body: { model: 'm', input: 5 }, field: /^input:/ },
  ],
  helloEstimate: 21,
  modelInBody: true,
  answer: {
    body: { id: 'resp_1', object: 'response', output: [], usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15, input_tokens_details: { cached_tokens: 0 } } },
    usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 },
  },
  rateLimitedBody: { error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } },
  streamErrorMessage: (events) => {
    const event = events[0];
    return event?.event === 'response.failed' ? String((((JSON.parse(event.data) as Json)['response'] as Json)['error'] as Json)['message']) : '';
  },
  answerText: (answer) => {
    const message = ((answer as Json)['output'] as Json[]).find((item) => item['type'] === 'message');
    return String(((message?.['content'] as Json[])[0] as Json)['text']);
  },
  streamText: (events) => events
    .filter((event) => event.event === 'response.output_text.delta')
    .map((event) => String((JSON.parse(event.data) as Json)['delta']))
    .join(''),
});
