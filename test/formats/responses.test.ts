import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateResponsesRequest, wantsEncryptedReasoning } from '../../src/formats/responses.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { responsesRequestToChat } from '../../src/translate/responses-to-chat.ts';
import { responsesRequestToMessages } from '../../src/translate/responses-to-messages.ts';
import { assertOnlyRefusals, createMutator } from '../helpers/mutate.ts';
import { DEEPSEEK, reader } from '../helpers/carry.ts';

type Body = Record<string, unknown>;

/** A Codex-like request that exercises every field the validator knows, in a valid shape. */
function fullRequest(): Body {
  return {
    model: 'gpt-5-codex',
    instructions: 'You are Codex.',
    input: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions/>' }] },
      { role: 'user', content: 'Fix the bug' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'See:' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto', file_id: null }] },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Plan' }], encrypted_content: 'llmux.v1.abc' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'On it.', annotations: [] }, { type: 'refusal', refusal: '' }], phase: 'commentary' },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'shell', arguments: '{"command":["ls"]}', status: 'completed' },
      { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'a.txt' }] },
      { type: 'function_call', call_id: 'call_2', name: 'create_issue', namespace: 'github', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_2', output: 'ok' },
      { type: 'custom_tool_call', call_id: 'call_3', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
      { type: 'custom_tool_call_output', call_id: 'call_3', output: 'Success.' },
      { type: 'local_shell_call', id: 'lsh_1', call_id: 'call_4', status: 'completed', action: { type: 'exec', command: ['pwd'], env: {} } },
      { type: 'local_shell_call_output', id: 'call_4', output: '/w' },
      { type: 'item_reference', id: 'msg_old' },
      { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'x' } },
    ],
    tools: [
      { type: 'function', name: 'shell', description: 'Run', parameters: { type: 'object', properties: {} }, strict: false },
      { type: 'custom', name: 'apply_patch', description: 'Patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: x' } },
      { type: 'namespace', name: 'github', description: 'GitHub', tools: [{ type: 'function', name: 'create_issue', parameters: null }, { type: 'custom', name: 'free.form' }] },
      { type: 'local_shell' },
      { type: 'web_search', search_context_size: 'low' },
      { type: 'mcp', server_label: 'x', server_url: 'https://mcp.example' },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    max_output_tokens: 2000,
    temperature: 1,
    top_p: 1,
    reasoning: { effort: 'medium', summary: 'auto' },
    text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true }, verbosity: 'low' },
    store: false,
    stream: true,
    previous_response_id: 'resp_1',
    include: ['reasoning.encrypted_content'],
    metadata: { user_id: 'u1' },
    user: 'u1',
    safety_identifier: 's1',
    prompt_cache_key: 'thread-1',
    service_tier: 'auto',
    truncation: 'disabled',
    client_metadata: { anything: true },
  };
}

function rejection(body: unknown, options: Parameters<typeof validateResponsesRequest>[1] = {}): GatewayError {
  try {
    validateResponsesRequest(body, options);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 400);
    assert.equal(err.type, 'invalid_request_error');
    return err;
  }
  assert.fail('expected a 400');
}

describe('validateResponsesRequest accepts', () => {
  it('a string input with only a model', () => {
    const body = { model: 'm', input: 'Hi' };
    assert.equal(validateResponsesRequest(body), body);
  });

  it('a full Codex-like request, unknown fields, items, parts and tool types kept for pass-through', () => {
    const body = fullRequest();
    const request = validateResponsesRequest(body);
    assert.equal(request, body);
    assert.deepEqual(request['client_metadata'], { anything: true });
    assert.equal(request.tools?.length, 6);
    assert.equal(wantsEncryptedReasoning(request), true);
  });

  it('an item without type as a message when it has a role, and as an item reference when it has only an id', () => {
    validateResponsesRequest({ model: 'm', input: [{ role: 'user', content: 'x' }, { id: 'msg_1' }] });
    assert.match(rejection({ model: 'm', input: [{ content: 'x' }] }).message, /^input\.0: must have a "type"/);
  });

  it('null for the optional parameters OpenAI declares nullable, leaving them out of a copy', () => {
    const body = { model: 'm', input: 'x', instructions: null, temperature: null, max_output_tokens: null, previous_response_id: null, conversation: null, background: null, reasoning: null, text: null, tool_choice: null };
    const request = validateResponsesRequest(body);
    assert.notEqual(request, body);
    assert.deepEqual(request, { model: 'm', input: 'x' });
  });

  it('background: false, a local shell call identified by id only, and no model for an input_tokens count', () => {
    validateResponsesRequest({ model: 'm', input: 'x', background: false });
    validateResponsesRequest({ model: 'm', input: [{ type: 'local_shell_call', id: 'lsh_1', action: { type: 'exec', command: ['ls'] } }] });
    validateResponsesRequest({ input: 'x' }, { countTokens: true });
    assert.match(rejection({ input: 'x' }).message, /^model: is required/);
  });
});

describe('validateResponsesRequest refuses', () => {
  it('background responses and conversations, which llmux does not offer', () => {
    assert.match(rejection({ model: 'm', input: 'x', background: true }).message, /^background: background responses are not offered by llmux/);
    assert.match(rejection({ model: 'm', input: 'x', conversation: 'conv_1' }).message, /^conversation: conversations are not offered by llmux; chain responses with previous_response_id instead$/);
  });

  it('input_file parts and input_image parts by file_id, naming the item, since llmux has no files API', () => {
    const file = rejection({ model: 'm', input: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'user', content: 'c' }, { role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] });
    assert.match(file.message, /^input\.3\.content\.0: input_file is not supported: llmux has no files API; /);
    assert.match(rejection({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-2', detail: 'auto' }] }] }).message, /^input\.0\.content\.0: input_image with a file_id is not supported: llmux has no files API/);
    assert.match(rejection({ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file', file_data: 'x' }] }] }).message, /^input\.0\.output\.0: input_file is not supported/);
  });

  it('fields of the wrong type, naming their path', () => {
    const cases: Array<[Body, RegExp]> = [
      [{ model: 'm', input: 5 }, /^input: must be a string or an array of input items$/],
      [{ model: 'm', input: [{ role: 'robot', content: 'x' }] }, /^input\.0\.role: must be one of user, assistant, system, developer$/],
      [{ model: 'm', input: [{ role: 'user', content: 7 }] }, /^input\.0\.content: must be a string or an array of content parts$/],
      [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'ftp://x' }] }] }, /^input\.0\.content\.0\.image_url: must be an http\(s\) URL or a data: URL$/],
      [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x', detail: 'huge' }] }] }, /^input\.0\.content\.0\.detail: must be one of/],
      [{ model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }] }, /^input\.0\.arguments: must be a string$/],
      [{ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] }, /^input\.0\.call_id: is required and must be a string$/],
      [{ model: 'm', input: [{ type: 'custom_tool_call', call_id: 'c', name: 'f' }] }, /^input\.0\.input: is required and must be a string$/],
      [{ model: 'm', input: [{ type: 'local_shell_call', call_id: 'c', action: { command: 'ls' } }] }, /^input\.0\.action\.command: must be an array of strings$/],
      [{ model: 'm', input: [{ type: 'reasoning', summary: 'x' }] }, /^input\.0\.summary: must be an array$/],
      [{ model: 'm', input: [{ type: 'item_reference' }] }, /^input\.0\.id: is required and must be a non-empty string$/],
      [{ model: 'm', tools: [{ type: 'function', name: 'bad name' }] }, /^tools\.0\.name: must be a string of 1 to 64 characters/],
      [{ model: 'm', tools: [{ type: 'custom', name: 'p', format: { type: 'grammar', syntax: 'peg', definition: 'x' } }] }, /^tools\.0\.format\.syntax: must be one of lark, regex$/],
      [{ model: 'm', tools: [{ type: 'namespace', name: 'n', tools: [{ type: 'web_search' }] }] }, /^tools\.0\.tools\.0\.type: must be one of function, custom$/],
      [{ model: 'm', tools: [{ name: 'x' }] }, /^tools\.0\.type: is required and must be a string$/],
      [{ model: 'm', tool_choice: 'any' }, /^tool_choice: must be one of auto, none, required/],
      [{ model: 'm', tool_choice: { type: 'function' } }, /^tool_choice\.name: is required/],
      [{ model: 'm', temperature: 3 }, /^temperature: must be a number from 0 to 2$/],
      [{ model: 'm', top_p: -1 }, /^top_p: must be a number from 0 to 1$/],
      [{ model: 'm', max_output_tokens: 1.5 }, /^max_output_tokens: must be an integer >= 1$/],
      [{ model: 'm', reasoning: { effort: 'extreme' } }, /^reasoning\.effort: must be one of none, minimal, low, medium, high, xhigh, max$/],
      [{ model: 'm', text: { format: { type: 'json_schema', name: 'out' } } }, /^text\.format\.schema: is required and must be a JSON schema object$/],
      [{ model: 'm', text: { format: { type: 'xml' } } }, /^text\.format\.type: must be one of text, json_object, json_schema$/],
      [{ model: 'm', store: 'yes' }, /^store: must be a boolean$/],
      [{ model: 'm', include: ['x', 1] }, /^include\.1: must be a string$/],
      [{ model: 'm', truncation: 'middle' }, /^truncation: must be one of auto, disabled$/],
      [{ model: 'm', metadata: { a: 1 } }, /^metadata\.a: must be a string$/],
      [{ model: 'm', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, /^metadata: must have at most 16 keys$/],
      [{ model: 'm', previous_response_id: 5 }, /^previous_response_id: must be a string$/],
    ];
    for (const [body, message] of cases) assert.match(rejection(body).message, message, JSON.stringify(body));
  });

  it('a body that is not an object', () => {
    assert.match(rejection([]).message, /^body: must be a JSON object$/);
  });

  it('never reads an inherited property as a field', () => {
    const body = JSON.parse('{"model":"m","input":[{"__proto__":{"role":"user"},"content":"x"}]}') as Body;
    assert.match(rejection(body).message, /^input\.0: must have a "type"/);
  });
});

describe('validateResponsesRequest under random mutation', () => {
  it('throws only GatewayError 400s, and whatever it accepts both request translators take without throwing', () => {
    const model = { upstreamId: 'u', reasoning: true, maxTokensParam: 'max_tokens' as const, replayReasoning: true, maxOutputTokens: 8192 };
    const context = { model, carry: reader(DEEPSEEK), warn: () => {} };
    assertOnlyRefusals({
      validate: (body) => {
        const request = validateResponsesRequest(body);
        responsesRequestToChat(request, context);
        responsesRequestToMessages(request, context);
        return request;
      },
      seeds: [fullRequest(), { model: 'm', input: 'hi' }],
      mutate,
      seed: 0x5e5,
      rounds: 4000,
    });
  });
});

// ---------- random mutation ----------

const mutate = createMutator({
  words: ['message', 'function_call', 'function_call_output', 'custom_tool_call', 'reasoning', 'item_reference', 'input_text', 'input_image', 'input_file', 'namespace', 'custom', 'local_shell', 'developer', 'grammar', 'json_schema'],
  shapes: [{ type: 'input_image', image_url: 'https://x/y.png' }, { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }, { type: 'namespace', name: 'n', tools: [] }, { role: 'user', content: 'x' }],
  keys: ['type', 'role', 'content', 'call_id', 'name', 'arguments', 'output', 'tools', 'namespace', 'format', 'id', 'encrypted_content'],
});

describe('input items and tools found valid before', () => {
  it('are checked again when they may have changed (not frozen), and a frozen item is accepted again', () => {
    const item: Record<string, unknown> = { type: 'function_call_output', call_id: 'c1', output: 'ok' };
    const kept = Object.freeze({ type: 'message', role: 'user', content: 'hi' });
    validateResponsesRequest({ model: 'm', input: [kept, item] });
    validateResponsesRequest({ model: 'm', input: [kept, item] });
    item['type'] = 7;
    assert.throws(() => validateResponsesRequest({ model: 'm', input: [kept, item] }), /input\.1\.type/);
  });
});
