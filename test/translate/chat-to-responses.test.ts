import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ChatResponse } from '../../src/formats/wire.ts';
import { chatResponseToResponses } from '../../src/translate/index.ts';
import { responseEcho } from '../../src/translate/responses-output.ts';
import { answerOptions } from '../helpers/responses-stream.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);

function fixture(name: string): ChatResponse {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as ChatResponse;
}

function answer(message: Record<string, unknown>, finishReason: string | null = 'stop', usage?: Record<string, unknown>): ChatResponse {
  const body: Record<string, unknown> = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: finishReason }] };
  if (usage !== undefined) body['usage'] = usage;
  return body as unknown as ChatResponse;
}

describe('chatResponseToResponses on the recorded chat answers', () => {
  const names = readdirSync(FIXTURES).filter((name) => /^(openai|deepseek)-.*nonstream.*\.json$/.test(name));

  it('translates every recorded answer into a response object with the llmux model, the pinned id and clock, and usage', () => {
    assert.ok(names.length >= 6);
    for (const name of names) {
      const response = chatResponseToResponses(fixture(name), answerOptions());
      assert.equal(response.object, 'response', name);
      assert.equal(response.id, 'resp_test', name);
      assert.equal(response.model, 'llmux-model', name);
      assert.equal(response.created_at, 1_700_000_000, name);
      assert.ok(response.output.length > 0, name);
      assert.ok(response.usage !== null && response.usage.total_tokens === response.usage.input_tokens + response.usage.output_tokens, name);
    }
  });

  it('turns a text answer into one message with an output_text part', () => {
    const response = chatResponseToResponses(fixture('openai-nonstream-text.json'), answerOptions());
    assert.equal(response.status, 'completed');
    assert.equal(response.output.length, 1);
    const message = response.output[0];
    assert.equal(message?.type, 'message');
    if (message?.type !== 'message') return;
    assert.deepEqual(Object.keys(message), ['type', 'id', 'role', 'status', 'content']);
    assert.equal(message.id, 'msg_test_0');
    assert.equal(message.content[0]?.type, 'output_text');
    assert.deepEqual(message.content[0]?.type === 'output_text' ? message.content[0].annotations : undefined, []);
  });

  it('turns parallel tool calls into function_call items with fc_ ids and the upstream ids as call_id', () => {
    const response = chatResponseToResponses(fixture('openai-nonstream-parallel-tool-calls.json'), answerOptions());
    assert.deepEqual(response.output, [
      { type: 'function_call', id: 'fc_test_0', call_id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', name: 'GetWeatherArgs', arguments: '{"city": "Edinburgh", "country": "GB", "units": "c"}', status: 'completed' },
      { type: 'function_call', id: 'fc_test_1', call_id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', name: 'get_stock_price', arguments: '{"ticker": "AAPL", "exchange": "NASDAQ"}', status: 'completed' },
    ]);
    assert.deepEqual(response.usage, { input_tokens: 149, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 60, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 209 });
  });

  it('makes finish_reason length incomplete (max_output_tokens) with the message incomplete', () => {
    const response = chatResponseToResponses(fixture('openai-nonstream-finish-length.json'), answerOptions());
    assert.deepEqual([response.status, response.incomplete_details], ['incomplete', { reason: 'max_output_tokens' }]);
    assert.equal(response.output[0]?.type === 'message' ? response.output[0].status : '', 'incomplete');
  });

  it('puts DeepSeek reasoning_content first as a reasoning item with summary text, sealed', () => {
    const response = chatResponseToResponses(fixture('deepseek-nonstream-reasoning-content.json'), answerOptions());
    const [reasoning, message] = response.output;
    assert.equal(reasoning?.type, 'reasoning');
    assert.equal(message?.type, 'message');
    if (reasoning?.type !== 'reasoning') return;
    assert.equal(reasoning.id, 'rs_test_0');
    assert.ok((reasoning.summary[0]?.text ?? '').length > 0);
    assert.equal(reasoning.encrypted_content, `sealed:${JSON.stringify({ type: 'thinking', thinking: reasoning.summary[0]?.text, signature: '' })}`);
  });
});

describe('chatResponseToResponses rules', () => {
  it('echoes the request fields the response object repeats, with OpenAI\'s defaults', () => {
    const echo = responseEcho({
      model: 'llmux-model',
      instructions: 'Be brief.',
      max_output_tokens: 100,
      parallel_tool_calls: false,
      previous_response_id: 'resp_prev',
      reasoning: { effort: 'high', summary: 'auto' },
      store: false,
      temperature: 0.2,
      top_p: 0.9,
      text: { format: { type: 'json_object' } },
      tool_choice: 'required',
      truncation: 'auto',
      metadata: { a: 'b' },
      user: 'u-1',
    });
    const response = chatResponseToResponses(answer({ content: 'ok' }), answerOptions({ echo }));
    assert.deepEqual(
      { ...response, output: [], usage: null },
      {
        id: 'resp_test',
        object: 'response',
        created_at: 1_700_000_000,
        status: 'completed',
        error: null,
        incomplete_details: null,
        instructions: 'Be brief.',
        max_output_tokens: 100,
        model: 'llmux-model',
        output: [],
        parallel_tool_calls: false,
        previous_response_id: 'resp_prev',
        reasoning: { effort: 'high', summary: 'auto' },
        store: false,
        temperature: 0.2,
        text: { format: { type: 'json_object' } },
        tool_choice: 'required',
        tools: [],
        top_p: 0.9,
        truncation: 'auto',
        usage: null,
        user: 'u-1',
        metadata: { a: 'b' },
      },
    );
    const defaults = chatResponseToResponses(answer({ content: 'ok' }), answerOptions({ echo: responseEcho({ model: 'm' }) }));
    assert.deepEqual(
      [defaults.instructions, defaults.parallel_tool_calls, defaults.store, defaults.text, defaults.tool_choice, defaults.truncation, defaults.metadata, defaults.reasoning],
      [null, true, true, { format: { type: 'text' } }, 'auto', 'disabled', {}, { effort: null, summary: null }],
    );
    const verbosityOnly = chatResponseToResponses(answer({ content: 'ok' }), answerOptions({ echo: responseEcho({ model: 'm', text: { verbosity: 'low' } }) }));
    assert.deepEqual(verbosityOnly.text, { format: { type: 'text' }, verbosity: 'low' });
  });

  it('gives a fresh resp_ id when none is pinned and derives item ids from it', () => {
    const response = chatResponseToResponses(answer({ content: 'ok' }), answerOptions({ responseId: undefined }));
    assert.match(response.id, /^resp_[0-9a-f]{24}$/);
    assert.equal(response.output[0]?.id, `msg_${response.id.slice(5)}_0`);
  });

  it('makes a refusal incomplete (content_filter) with a refusal part after any text', () => {
    const response = chatResponseToResponses(answer({ content: 'Well', refusal: "I can't help with that." }), answerOptions());
    assert.deepEqual(response.incomplete_details, { reason: 'content_filter' });
    assert.deepEqual(response.output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'Well', annotations: [], logprobs: [] }, { type: 'refusal', refusal: "I can't help with that." }] }]);
  });

  it('adds a refusal part saying so when content_filter stops an answer with no refusal text', () => {
    const response = chatResponseToResponses(answer({ content: null }, 'content_filter'), answerOptions());
    assert.deepEqual(response.output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'incomplete', content: [{ type: 'refusal', refusal: "The answer was stopped by the upstream's content filter." }] }]);
  });

  it('keeps tool calls ending with finish_reason stop a completed answer', () => {
    const response = chatResponseToResponses(answer({ tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{}' } }] }, 'stop'), answerOptions());
    assert.equal(response.status, 'completed');
    assert.equal(response.output[0]?.type, 'function_call');
  });

  it('restores custom (raw input, never JSON), namespaced and local shell calls', () => {
    const calls = [
      { id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }) } },
      { id: 'call_g', type: 'function', function: { name: 'github__create_issue', arguments: '{"title":"t"}' } },
      { id: 'call_s', type: 'function', function: { name: 'local_shell', arguments: '{"command":["ls"],"env":{"A":"1","B":2}}' } },
    ];
    const response = chatResponseToResponses(answer({ tool_calls: calls }, 'tool_calls'), answerOptions());
    assert.deepEqual(response.output, [
      { type: 'custom_tool_call', id: 'ctc_test_0', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
      { type: 'function_call', id: 'fc_test_1', call_id: 'call_g', name: 'create_issue', arguments: '{"title":"t"}', status: 'completed', namespace: 'github' },
      { type: 'local_shell_call', id: 'lsh_test_2', call_id: 'call_s', action: { type: 'exec', command: ['ls'], env: { A: '1' } }, status: 'completed' },
    ]);
  });

  it('reads a legacy function_call as a call with a made-up call_id', () => {
    const response = chatResponseToResponses(answer({ function_call: { name: 'shell', arguments: '{}' } }, 'function_call'), answerOptions());
    assert.deepEqual(response.output, [{ type: 'function_call', id: 'fc_test_0', call_id: 'call_test_0', name: 'shell', arguments: '{}', status: 'completed' }]);
  });

  it('counts cached tokens inside input_tokens once, reasoning tokens where reported, and xAI reasoning left out of completion_tokens', () => {
    const cached = chatResponseToResponses(answer({ content: 'a' }, 'stop', { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 60 }, completion_tokens_details: { reasoning_tokens: 8 } }), answerOptions());
    assert.deepEqual(cached.usage, { input_tokens: 100, input_tokens_details: { cached_tokens: 60, cache_write_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 8 }, total_tokens: 120 });
    const xai = chatResponseToResponses(answer({ content: 'a' }, 'stop', { prompt_tokens: 307, completion_tokens: 26, total_tokens: 560, completion_tokens_details: { reasoning_tokens: 227 } }), answerOptions());
    assert.deepEqual(xai.usage, { input_tokens: 307, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 253, output_tokens_details: { reasoning_tokens: 227 }, total_tokens: 560 });
  });

  it('reports the input estimate when the upstream reports no usage', () => {
    const response = chatResponseToResponses(answer({ content: 'a' }), answerOptions({ estimatedInputTokens: 12 }));
    assert.deepEqual(response.usage, { input_tokens: 12, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 });
  });

  it('reads a malformed answer leniently: an empty completed response, never a throw', () => {
    for (const body of [null, {}, { choices: 'x' }, { choices: [{ index: 0, message: 'x' }] }]) {
      const response = chatResponseToResponses(body as unknown as ChatResponse, answerOptions());
      assert.deepEqual([response.status, response.output], ['completed', []]);
    }
  });
});
