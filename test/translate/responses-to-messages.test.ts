import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateResponsesRequest, type ResponsesInputItem, type ResponsesRequest } from '../../src/formats/responses.ts';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI, reader, sealed } from '../helpers/carry.ts';
import { responsesRequestToMessages } from '../../src/translate/responses-to-messages.ts';
import { CODEX_TOOLS } from '../helpers/responses-stream.ts';

const MODEL: UpstreamModel = { upstreamId: 'claude-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 0 };
function translate(request: Omit<ResponsesRequest, 'model'>, model: Partial<UpstreamModel> = {}): { body: MessagesRequest; warnings: string[] } {
  const warnings: string[] = [];
  const carry = reader(ANTHROPIC, warnings);
  const { body } = responsesRequestToMessages({ model: 'llmux-model', ...request } as ResponsesRequest, {
    model: { ...MODEL, ...model },
    carry,
    warn: (message) => warnings.push(message),
  });
  carry.finish();
  return { body, warnings };
}

function input(...items: ResponsesInputItem[]): { input: ResponsesInputItem[] } {
  return { input: items };
}

const thinkingSeal = sealed({ kind: 'thinking', thinking: 'Use the shell.', signature: 'sig-1' });

describe('responsesRequestToMessages turns', () => {
  it('joins instructions and the leading system and developer messages into system', () => {
    const { body } = translate({ instructions: 'From instructions.', ...input({ role: 'developer', content: 'From developer.' }, { role: 'system', content: [{ type: 'input_text', text: 'From system.' }] }, { role: 'user', content: 'Hi' }) });
    assert.equal(body.system, 'From instructions.\n\nFrom developer.\n\nFrom system.');
    assert.deepEqual(body.messages, [{ role: 'user', content: 'Hi' }]);
  });

  it('makes a later system or developer message a user text turn marked as system instructions, merged into the user turn beside it', () => {
    const { body } = translate(input({ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }, { role: 'developer', content: 'Answer in French.' }, { role: 'user', content: 'Ça va?' }));
    assert.deepEqual(body.messages, [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
      { role: 'user', content: [{ type: 'text', text: '<system-instructions>\nAnswer in French.\n</system-instructions>' }, { type: 'text', text: 'Ça va?' }] },
    ]);
  });

  it('sends images as base64 or url image blocks', () => {
    const { body } = translate(input({ role: 'user', content: [{ type: 'input_text', text: 'Look' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }, { type: 'input_image', image_url: 'https://x/y.png', detail: 'low' }] }));
    assert.deepEqual(body.messages[0]?.content, [
      { type: 'text', text: 'Look' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
    ]);
  });

  it('makes consecutive function calls and the text before them one assistant turn of tool_use blocks, and their outputs tool_result blocks in one user turn', () => {
    const { body, warnings } = translate(input(
      { role: 'user', content: 'List' },
      { role: 'assistant', content: [{ type: 'output_text', text: 'Sure.', annotations: [] }] },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"command":["ls"]}' },
      { type: 'function_call', call_id: 'c2', name: 'shell', arguments: 'not json' },
      { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
      { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'see' }, { type: 'input_image', image_url: 'data:image/png;base64,BBBB' }] },
      { role: 'user', content: 'Thanks' },
    ));
    assert.deepEqual(body.messages, [
      { role: 'user', content: 'List' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Sure.' },
          { type: 'tool_use', id: 'c1', name: 'shell', input: { command: ['ls'] } },
          { type: 'tool_use', id: 'c2', name: 'shell', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'c1', content: 'a.txt' },
          { type: 'tool_result', tool_use_id: 'c2', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'BBBB' } }] },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
    assert.deepEqual(warnings, ['input.3.arguments: not valid JSON; sent upstream as {}']);
  });

  it('puts tool results first in their user turn even when user text came before them', () => {
    const { body } = translate(input({ role: 'user', content: 'go' }, { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' }, { role: 'user', content: 'also this' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' }));
    assert.deepEqual(body.messages[2]?.content, [{ type: 'tool_result', tool_use_id: 'c1', content: 'ok' }, { type: 'text', text: 'also this' }]);
  });

  it('starts with a user turn and trims the end of a final assistant turn', () => {
    const { body } = translate(input({ role: 'assistant', content: 'Prefill   ' }));
    assert.deepEqual(body.messages, [{ role: 'user', content: '.' }, { role: 'assistant', content: 'Prefill' }]);
  });

  it('replays custom, namespaced and local shell calls as tool_use of the tools they were offered as', () => {
    const { body } = translate(input(
      { role: 'user', content: 'go' },
      { type: 'custom_tool_call', call_id: 'p1', name: 'apply_patch', input: 'patch' },
      { type: 'function_call', call_id: 'g1', name: 'create_issue', namespace: 'github', arguments: '{"title":"t"}' },
      { type: 'local_shell_call', call_id: 's1', status: 'completed', action: { type: 'exec', command: ['ls'], env: {} } },
      { type: 'custom_tool_call_output', call_id: 'p1', output: 'Done' },
      { type: 'function_call_output', call_id: 'g1', output: '#1' },
      { type: 'local_shell_call_output', id: 's1', output: 'a.txt' },
    ));
    assert.deepEqual(body.messages[1]?.content, [
      { type: 'tool_use', id: 'p1', name: 'apply_patch', input: { input: 'patch' } },
      { type: 'tool_use', id: 'g1', name: 'github__create_issue', input: { title: 't' } },
      { type: 'tool_use', id: 's1', name: 'local_shell', input: { command: ['ls'], env: {} } },
    ]);
    assert.deepEqual((body.messages[2]?.content as Array<{ tool_use_id: string }>).map((block) => block.tool_use_id), ['p1', 'g1', 's1']);
  });

  it('sends an output whose call is not in the input as user text, with a warning', () => {
    const { body, warnings } = translate(input({ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'gone', output: 'late' }));
    assert.deepEqual(body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'text', text: 'Output of tool call gone:' }, { type: 'text', text: 'late' }] }]);
    assert.match(warnings[0] ?? '', /answers call "gone"/);
  });
});

describe('responsesRequestToMessages reasoning', () => {
  it('replays a sealed thinking block, signature and all, at the start of its assistant turn', () => {
    const redacted = sealed({ kind: 'redacted-thinking', data: 'opaque' });
    const { body, warnings } = translate(input(
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Let me look.' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: thinkingSeal },
      { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: redacted },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    ));
    assert.deepEqual(body.messages[1]?.content, [
      { type: 'thinking', thinking: 'Use the shell.', signature: 'sig-1' },
      { type: 'redacted_thinking', data: 'opaque' },
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'c1', name: 'shell', input: {} },
    ]);
    assert.deepEqual(warnings, []);
  });

  it('drops reasoning from elsewhere quietly, and with a warning each: state another family issued, seals that do not open, seals of another key', () => {
    const deepseek = sealed({ kind: 'reasoning', text: 'from deepseek' }, DEEPSEEK);
    const gemini = sealed({ kind: 'thought-signature', signature: 'g-sig', callId: 'c9' }, GEMINI);
    const altered = `${thinkingSeal.slice(0, -4)}AAAA`;
    const otherKey = sealed({ kind: 'thinking', thinking: 'theirs', signature: 's' }, ANTHROPIC, 'key_b');
    const earlier = 'llmux.v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const { body, warnings } = translate(input(
      { role: 'user', content: 'go' },
      { type: 'reasoning', summary: [], encrypted_content: 'gAAAA-openai' },
      { type: 'reasoning', summary: [], encrypted_content: deepseek },
      { type: 'reasoning', summary: [], encrypted_content: gemini },
      { type: 'reasoning', summary: [], encrypted_content: altered },
      { type: 'reasoning', summary: [], encrypted_content: otherKey },
      { type: 'reasoning', summary: [], encrypted_content: earlier },
      { role: 'assistant', content: 'ok' },
    ));
    assert.deepEqual(body.messages, [{ role: 'user', content: 'go' }, { role: 'assistant', content: 'ok' }]);
    assert.deepEqual(warnings, [
      '1 piece of reasoning state issued by provider "deepseek-up" (family provider:deepseek-up) stripped: the request goes to provider "anthropic-up" (family anthropic)',
      '1 piece of reasoning state issued by provider "gemini-up" (family gemini) stripped: the request goes to provider "anthropic-up" (family anthropic)',
      '1 llmux seal issued to another key ignored',
      '2 llmux seals that do not open (another secret, altered, or an earlier llmux\'s) ignored',
    ]);
  });

  it('asks reasoning models to think with the budget of the effort, raising a default max_tokens to make room', () => {
    const { body } = translate({ input: 'x', reasoning: { effort: 'high' }, temperature: 0.5, top_p: 0.97 }, { reasoning: true });
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 16384 });
    assert.equal(body.max_tokens, 21846, 'the default 4096 is raised to the budget and a third of it, room to answer');
    const capped = translate({ input: 'x', reasoning: { effort: 'high' } }, { reasoning: true, maxOutputTokens: 10000 }).body;
    assert.deepEqual([capped.max_tokens, capped.thinking], [10000, { type: 'enabled', budget_tokens: 7500 }], 'never past the model\'s known limit');
    assert.equal('temperature' in body, false);
    assert.equal(body.top_p, 0.97);
    assert.equal('thinking' in translate({ input: 'x', reasoning: { effort: 'high' } }).body, false, 'not for a model that does not reason');
    assert.equal('thinking' in translate({ input: 'x', reasoning: { effort: 'none' } }, { reasoning: true }).body, false);
  });

  it('keeps the budget below a client\'s max_output_tokens, or drops thinking when no minimum budget fits', () => {
    // Issue 25: a budget of max_output_tokens - 1 left the answer one token; it keeps a quarter.
    assert.deepEqual(translate({ input: 'x', max_output_tokens: 5000, reasoning: { effort: 'xhigh' } }, { reasoning: true }).body.thinking, { type: 'enabled', budget_tokens: 3750 });
    assert.deepEqual(translate({ input: 'x', max_output_tokens: 16384, reasoning: { effort: 'high' } }, { reasoning: true }).body.thinking, { type: 'enabled', budget_tokens: 12288 });
    const tight = translate({ input: 'x', max_output_tokens: 1000, reasoning: { effort: 'low' } }, { reasoning: true });
    assert.equal('thinking' in tight.body, false);
    assert.match(tight.warnings[0] ?? '', /no room for the minimum thinking budget/);
  });

  it('does not think with a forced tool choice, nor when continuing a tool loop without a replayed thinking block', () => {
    const forced = translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: 'required', reasoning: { effort: 'low' } }, { reasoning: true });
    assert.equal('thinking' in forced.body, false);
    assert.match(forced.warnings.at(-1) ?? '', /forced tool_choice/);
    const loop = input({ role: 'user', content: 'go' }, { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' });
    const unsigned = translate({ ...loop, reasoning: { effort: 'low' } }, { reasoning: true });
    assert.equal('thinking' in unsigned.body, false);
    assert.match(unsigned.warnings[0] ?? '', /reasoning\.encrypted_content/);
    const signed = translate({ input: [loop.input[0] as ResponsesInputItem, { type: 'reasoning', summary: [], encrypted_content: thinkingSeal }, ...loop.input.slice(1)], reasoning: { effort: 'low' } }, { reasoning: true });
    assert.deepEqual(signed.body.thinking, { type: 'enabled', budget_tokens: 1024 });
  });
});

describe('responsesRequestToMessages parameters', () => {
  it('offers tools with input_schema and maps tool_choice and parallel_tool_calls', () => {
    const { body } = translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: 'required', parallel_tool_calls: false });
    assert.deepEqual(body.tools?.map((tool) => tool.name), ['shell', 'apply_patch', 'github__create_issue', 'local_shell']);
    assert.deepEqual(body.tools?.[0]?.input_schema, { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'] });
    assert.deepEqual(body.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    assert.deepEqual(translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: { type: 'function', name: 'create_issue', namespace: 'github' } }).body.tool_choice, { type: 'tool', name: 'github__create_issue' });
    assert.deepEqual(translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: 'none' }).body.tool_choice, { type: 'none' });
    assert.deepEqual(translate({ input: 'x', tools: CODEX_TOOLS, parallel_tool_calls: false }).body.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  });

  it('sends max_output_tokens as max_tokens, else the catalog\'s limit capped at 32000, else 4096', () => {
    assert.equal(translate({ input: 'x', max_output_tokens: 77 }).body.max_tokens, 77);
    assert.equal(translate({ input: 'x' }, { maxOutputTokens: 8192 }).body.max_tokens, 8192);
    assert.equal(translate({ input: 'x' }, { maxOutputTokens: 128000 }).body.max_tokens, 32000);
    assert.equal(translate({ input: 'x' }).body.max_tokens, 4096);
  });

  it('instructs json_schema output through the system text, clamps temperature, and sends the end user as metadata.user_id', () => {
    const { body } = translate({ input: 'x', instructions: 'Base.', text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' } } }, temperature: 1.7, safety_identifier: 'user-9' });
    assert.match(String(body.system), /^Base\.\n\nRespond with a single valid JSON value that conforms to the JSON schema "out"/);
    assert.equal(body.temperature, 1);
    assert.deepEqual(body.metadata, { user_id: 'user-9' });
  });

  it('streams when asked, and drops llmux\'s own fields quietly and unknown ones with a warning', () => {
    const { body, warnings } = translate({ input: 'x', stream: true, store: true, include: [], prompt_cache_key: 'k', service_tier: 'auto', truncation: 'disabled', prompt: { id: 'pmpt_1' } });
    assert.deepEqual(body, { model: 'claude-up', messages: [{ role: 'user', content: 'x' }], max_tokens: 4096, stream: true });
    assert.deepEqual(warnings, ['prompt: not understood when translating to a messages upstream; dropped']);
  });
});

describe('responsesRequestToMessages on a Codex-shaped request', () => {
  it('translates a validated Codex turn whole: system, replayed thinking, apply_patch and MCP calls, results, thinking budget', () => {
    const request = validateResponsesRequest({
      model: 'llmux-model',
      instructions: 'You are Codex.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions/>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix the bug' }] },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Use the shell.' }], encrypted_content: thinkingSeal },
        { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch\n' },
        { type: 'function_call', call_id: 'call_g', name: 'create_issue', namespace: 'github', arguments: '{"title":"bug"}' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Success.' },
        { type: 'function_call_output', call_id: 'call_g', output: 'created' },
      ],
      tools: CODEX_TOOLS,
      tool_choice: 'auto',
      parallel_tool_calls: false,
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'thread-1',
    });
    const { body, warnings } = translate(request, { reasoning: true, maxOutputTokens: 64000 });
    assert.deepEqual({ ...body, tools: body.tools?.map((tool) => tool.name) }, {
      model: 'claude-up',
      messages: [
        { role: 'user', content: 'Fix the bug' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Use the shell.', signature: 'sig-1' },
            { type: 'tool_use', id: 'call_p', name: 'apply_patch', input: { input: '*** Begin Patch\n*** End Patch\n' } },
            { type: 'tool_use', id: 'call_g', name: 'github__create_issue', input: { title: 'bug' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_p', content: 'Success.' }, { type: 'tool_result', tool_use_id: 'call_g', content: 'created' }] },
      ],
      max_tokens: 32000,
      system: 'You are Codex.\n\n<permissions/>',
      tools: ['shell', 'apply_patch', 'github__create_issue', 'local_shell'],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      thinking: { type: 'enabled', budget_tokens: 4096 },
      stream: true,
    });
    assert.deepEqual(warnings, ['tools.4: "web_search" is a hosted or unknown tool this model\'s upstream cannot run; dropped']);
  });
});

describe('responsesRequestToMessages with Codex\'s additional_tools input item', () => {
  it('offers its tools, drops the item quietly and keeps the developer messages after it in system', () => {
    const { body, warnings } = translate(input(
      { type: 'additional_tools', role: 'developer', tools: [{ type: 'namespace', name: 'functions', tools: [{ type: 'function', name: 'wait', parameters: { type: 'object', properties: {} } }] }] },
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
    ));
    assert.equal(body.system, 'You are Codex.');
    assert.deepEqual(body.messages, [{ role: 'user', content: 'hi' }]);
    assert.deepEqual(body.tools?.map((tool) => tool.name), ['functions__wait']);
    assert.deepEqual(warnings, []);
  });
});
