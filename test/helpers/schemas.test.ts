/**
 * The schema checks themselves (./schemas.ts): real recorded answers of the current APIs pass, and
 * each kind of drift the e2e tests are there to catch fails, naming the field.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSseParser } from '../../src/sse/parser.ts';
import { fixture } from './fake-upstream.ts';
import { ALLOWED, eventProblems, problemsOf } from './schemas.ts';

type Json = Record<string, unknown>;

function events(name: string): Json[] {
  const out: Json[] = [];
  const parser = createSseParser({ onEvent: (event) => { if (event.data !== '[DONE]') out.push(JSON.parse(event.data) as Json); } });
  parser.feed(fixture(name));
  parser.end();
  return out;
}

const json = (name: string): Json => JSON.parse(fixture(name).toString('utf8')) as Json;

/** A Responses answer as OpenAI writes it (responses.md "Response object"), completed. */
function response(extra: Json = {}): Json {
  return {
    id: 'resp_1', object: 'response', created_at: 1741290958, status: 'completed', error: null, incomplete_details: null,
    instructions: null, max_output_tokens: null, model: 'gpt-5.4',
    output: [{ id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hi', annotations: [], logprobs: [] }] }],
    parallel_tool_calls: true, previous_response_id: null, reasoning: { effort: null, summary: null }, store: true, temperature: 1, text: { format: { type: 'text' } },
    tool_choice: 'auto', tools: [], top_p: 1, truncation: 'disabled',
    usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 6 },
    metadata: {},
    ...extra,
  };
}

describe('the official schemas', () => {
  it('accept recorded answers of the current APIs, streamed and whole', () => {
    for (const name of ['anthropic-stream-tool-use.sse', 'anthropic-stream-structured-output-padded.sse', 'anthropic-stream-text.sse']) {
      for (const event of events(name)) {
        if (event['type'] === 'ping') continue;
        assert.deepEqual(eventProblems('anthropic', 'RawMessageStreamEvent', event), [], `${name}: ${JSON.stringify(event)}`);
      }
    }
    for (const name of ['openai-stream-text-include-usage.sse', 'openai-stream-tool-call.sse', 'openai-stream-logprobs.sse', 'openai-stream-refusal.sse']) {
      for (const chunk of events(name)) assert.deepEqual(problemsOf('openai', 'CreateChatCompletionStreamResponse', chunk), [], name);
    }
    assert.deepEqual(problemsOf('anthropic', 'Message', json('anthropic-nonstream-text.json')), []);
    assert.deepEqual(problemsOf('openai', 'CreateChatCompletionResponse', json('openai-nonstream-parallel-tool-calls.json')), []);
    assert.deepEqual(problemsOf('anthropic', 'ErrorResponse', json('anthropic-error-429-rate-limit.json')), []);
    assert.deepEqual(problemsOf('openai', 'ErrorResponse', json('openai-error-400-max-tokens-unsupported.json')), []);
    assert.deepEqual(problemsOf('openai', 'Response', response()), []);
  });

  it('fail a field of the wrong type, one missing, or one invented, naming it', () => {
    assert.deepEqual(problemsOf('openai', 'Response', response({ user: null })), ['openai Response at /user: must be string']);
    const usage = { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 6 };
    assert.ok(problemsOf('openai', 'Response', response({ usage })).includes("openai Response at /usage/input_tokens_details: must have required property 'cache_write_tokens'"));
    assert.ok(problemsOf('openai', 'Response', response({ usage: null })).includes('openai Response at /usage: must be object'), 'a completed response has its usage');
    assert.deepEqual(problemsOf('openai', 'Response', response({ colour: 'blue' })), ['openai Response: must NOT have unevaluated properties ("colour")']);
    assert.deepEqual(eventProblems('openai', 'ResponseStreamEvent', { type: 'response.failed', response: response({ status: 'failed' }) }), [
      "openai ResponseFailedEvent: must have required property 'sequence_number'",
    ]);
    const toolUse = events('anthropic-stream-tool-use.sse').find((event) => (event['content_block'] as Json | undefined)?.['type'] === 'tool_use') as Json;
    const { caller: _, ...withoutCaller } = toolUse['content_block'] as Json;
    assert.deepEqual(eventProblems('anthropic', 'RawMessageStreamEvent', { ...toolUse, content_block: withoutCaller }), [
      "anthropic RawContentBlockStartEvent at /content_block: must have required property 'caller'",
    ]);
    assert.deepEqual(problemsOf('openai', 'ErrorResponse', { error: { message: 'no', type: 'invalid_request_error', code: 'invalid_api_key' } }), [
      "openai ErrorResponse at /error: must have required property 'param'",
    ]);
    assert.deepEqual(problemsOf('openai', 'Model', { id: 'm', object: 'model', created_at: '2026-01-01T00:00:00Z', owned_by: 'x' }), [
      "openai Model: must have required property 'created'",
    ]);
    assert.deepEqual(problemsOf('anthropic', 'ErrorResponse', { type: 'error', error: { type: 'unauthorised', message: 'no' } }).length > 0, true);
  });

  it('let through only what ALLOWED names, where it names it', () => {
    assert.deepEqual(problemsOf('anthropic', 'ErrorResponse', { type: 'error', error: { type: 'authentication_error', message: 'no', code: 'invalid_api_key' }, request_id: 'req_1' }), []);
    assert.deepEqual(problemsOf('anthropic', 'ErrorResponse', { type: 'error', error: { type: 'request_too_large', message: 'big', code: 'request_too_large' }, request_id: null }), []);
    // llmux's error fields belong to error objects, not to a message.
    assert.notDeepEqual(problemsOf('anthropic', 'Message', { ...json('anthropic-nonstream-text.json'), code: 'x' }), []);
    for (const allowance of ALLOWED) assert.ok(allowance.why.length > 20, `every allowance says why: ${allowance.at.join(', ')}`);
  });
});
