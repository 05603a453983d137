import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { validateResponsesRequest, type ResponsesInputItem, type ResponsesRequest } from '../../src/formats/responses.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { createSealer } from '../../src/responses/seal.ts';
import type { Issuer } from '../../src/translate/carried.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI, OPENROUTER, reader, sealed as sealAs } from '../helpers/carry.ts';
import { responsesRequestToChat } from '../../src/translate/responses-to-chat.ts';
import { CODEX_TOOLS } from '../helpers/responses-stream.ts';

const MODEL: UpstreamModel = { upstreamId: 'gpt-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 0 };
function translate(request: Omit<ResponsesRequest, 'model'>, model: Partial<UpstreamModel> = {}, target: Issuer = DEEPSEEK): { body: ReturnType<typeof responsesRequestToChat>['body']; warnings: string[]; toolNames: ReturnType<typeof responsesRequestToChat>['toolNames'] } {
  const warnings: string[] = [];
  const carry = reader(target, warnings);
  const { body, toolNames } = responsesRequestToChat({ model: 'llmux-model', ...request } as ResponsesRequest, {
    model: { ...MODEL, ...model },
    carry,
    warn: (message) => warnings.push(message),
  });
  carry.finish();
  return { body, warnings, toolNames };
}

function input(...items: ResponsesInputItem[]): { input: ResponsesInputItem[] } {
  return { input: items };
}

describe('responsesRequestToChat messages', () => {
  it('sends a string input as one user message and instructions as the leading system message', () => {
    const { body, warnings } = translate({ input: 'Hi', instructions: 'Be brief.' });
    assert.deepEqual(body, { model: 'gpt-up', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] });
    assert.deepEqual(warnings, []);
  });

  it('keeps instructions and leading system and developer messages, none replacing another, and later ones in place', () => {
    const { body } = translate({
      instructions: 'From instructions.',
      ...input(
        { role: 'developer', content: 'From developer.' },
        { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'From system.' }] },
        { role: 'user', content: 'Question' },
        { role: 'developer', content: 'Later rule.' },
      ),
    });
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'From instructions.' },
      { role: 'system', content: 'From developer.' },
      { role: 'system', content: 'From system.' },
      { role: 'user', content: 'Question' },
      { role: 'system', content: 'Later rule.' },
    ]);
  });

  it('sends text parts as text and images as image_url parts, keeping a detail chat knows', () => {
    const { body, warnings } = translate(input({
      role: 'user',
      content: [
        { type: 'input_text', text: 'Look:' },
        { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'high' },
        { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'original' },
        { type: 'input_audio', input_audio: { data: 'x', format: 'wav' } },
      ],
    }));
    assert.deepEqual(body.messages, [{
      role: 'user',
      content: [
        { type: 'text', text: 'Look:' },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'high' } },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ],
    }]);
    assert.deepEqual(warnings, ['input.0.content.3: input_audio part cannot be sent to a chat-completions upstream; dropped']);
  });

  it('joins text-only parts into one string', () => {
    const { body } = translate(input({ role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_text', text: 'b' }] }));
    assert.deepEqual(body.messages, [{ role: 'user', content: 'a\n\nb' }]);
  });

  it('makes consecutive function_call items and the assistant text before them one assistant message, their outputs tool messages', () => {
    const { body } = translate(input(
      { role: 'user', content: 'List files' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Sure.', annotations: [] }] },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"command":["ls"]}' },
      { type: 'function_call', call_id: 'c2', name: 'shell', arguments: '{"command":["pwd"]}' },
      { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
      { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: '/w' }, { type: 'input_image', image_url: 'https://x/y.png' }] },
    ));
    assert.deepEqual(body.messages, [
      { role: 'user', content: 'List files' },
      {
        role: 'assistant',
        content: 'Sure.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'shell', arguments: '{"command":["ls"]}' } },
          { id: 'c2', type: 'function', function: { name: 'shell', arguments: '{"command":["pwd"]}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
      { role: 'tool', tool_call_id: 'c2', content: '/w\n\n[image omitted: tool results sent to this model carry text only]' },
    ]);
  });

  it('gives an assistant turn of calls only null content', () => {
    const { body } = translate(input({ role: 'user', content: 'x' }, { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' }));
    assert.equal(body.messages[1]?.content, null);
  });

  it('sends an output whose call is not in the input as user text, with a warning', () => {
    const { body, warnings } = translate(input({ type: 'function_call_output', call_id: 'gone', output: 'late result' }));
    assert.deepEqual(body.messages, [{ role: 'user', content: 'Output of tool call gone:\nlate result' }]);
    assert.match(warnings[0] ?? '', /^input\.0: answers call "gone", which is not in the input/);
  });

  it('replays custom, namespaced and local shell calls as calls of the functions they were offered as', () => {
    const { body } = translate(input(
      { role: 'user', content: 'go' },
      { type: 'custom_tool_call', call_id: 'p1', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
      { type: 'function_call', call_id: 'g1', name: 'create_issue', namespace: 'github', arguments: '{"title":"t"}' },
      { type: 'local_shell_call', id: 'lsh_1', call_id: 's1', status: 'completed', action: { type: 'exec', command: ['ls'], env: {}, timeout_ms: null, working_directory: '/w' } },
      { type: 'custom_tool_call_output', call_id: 'p1', output: 'Done!' },
      { type: 'function_call_output', call_id: 'g1', output: 'issue #1' },
      { type: 'local_shell_call_output', id: 's1', output: '{"output":"a.txt"}' },
    ));
    assert.deepEqual(body.messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'p1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch\\n*** End Patch"}' } },
          { id: 'g1', type: 'function', function: { name: 'github__create_issue', arguments: '{"title":"t"}' } },
          { id: 's1', type: 'function', function: { name: 'local_shell', arguments: '{"command":["ls"],"working_directory":"/w","env":{}}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'p1', content: 'Done!' },
      { role: 'tool', tool_call_id: 'g1', content: 'issue #1' },
      { role: 'tool', tool_call_id: 's1', content: '{"output":"a.txt"}' },
    ]);
  });

  it('replays sealed reasoning as reasoning_content only for models that want it, and drops foreign reasoning quietly', () => {
    const sealed = sealAs({ kind: 'reasoning', text: 'I should list.' }, DEEPSEEK);
    const items = input(
      { role: 'user', content: 'go' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: sealed },
      { type: 'reasoning', id: 'rs_2', summary: [{ type: 'summary_text', text: 'openai' }], encrypted_content: 'gAAAAforeign' },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    );
    const replayed = translate(items, { replayReasoning: true });
    assert.equal(replayed.body.messages[1]?.reasoning_content, 'I should list.');
    assert.deepEqual(replayed.warnings, []);
    const dropped = translate(items);
    assert.equal('reasoning_content' in (dropped.body.messages[1] ?? {}), false);
  });

  it('replays the text a reasoning item shows (its summary first) to a replay_reasoning model whoever issued it, while the opaque state of another family is stripped', () => {
    const anthropic = sealAs({ kind: 'thinking', thinking: 'Signed thought.', signature: 'sig' }, ANTHROPIC);
    const { body, warnings } = translate(input(
      { role: 'user', content: 'go' },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Shown thought.' }], encrypted_content: anthropic },
      { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    ), { replayReasoning: true });
    assert.equal(body.messages[1]?.reasoning_content, 'Shown thought.');
    assert.deepEqual(warnings, ['1 piece of reasoning state issued by provider "anthropic-up" (family anthropic) stripped: the request goes to provider "deepseek-up" (family provider:deepseek-up)']);
  });

  it('gives a Gemini upstream its thought signature on the call it came with, and a replay_reasoning upstream an empty reasoning_content on a tool-call turn with none', () => {
    // Gemini signs the first call of a step of parallel calls only.
    const signature = sealAs({ kind: 'thought-signature', signature: 'gemini-sig', callId: 'c1' }, GEMINI);
    const items = input(
      { role: 'user', content: 'go' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: signature },
      { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
      { type: 'function_call', call_id: 'c2', name: 'b', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
      { type: 'function_call_output', call_id: 'c2', output: 'ok' },
    );
    const gemini = translate(items, {}, GEMINI);
    const calls = gemini.body.messages[1]?.tool_calls ?? [];
    assert.deepEqual(calls.map((call) => call.extra_content), [{ google: { thought_signature: 'gemini-sig' } }, undefined]);
    assert.deepEqual(gemini.warnings, []);
    const deepseek = translate(items, { replayReasoning: true });
    assert.equal(deepseek.body.messages[1]?.reasoning_content, '');
    assert.equal(deepseek.body.messages[1]?.tool_calls?.[0]?.extra_content, undefined);
    assert.match(deepseek.warnings.join('\n'), /issued by provider "gemini-up" \(family gemini\) stripped/);
    assert.match(deepseek.warnings.join('\n'), /an empty reasoning_content/);
  });

  it('gives OpenRouter its reasoning_details back on the message, all entries as issued', () => {
    const details = [{ type: 'reasoning.text', text: 'Think.', signature: 'or-sig', index: 0 }, { type: 'reasoning.encrypted', data: 'enc', index: 1 }];
    const { body, warnings } = translate(input(
      { role: 'user', content: 'go' },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Think.' }], encrypted_content: sealAs({ kind: 'reasoning-details', details }, OPENROUTER) },
      { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    ), {}, OPENROUTER);
    assert.deepEqual(body.messages[1]?.['reasoning_details'], details);
    assert.deepEqual(warnings, []);
  });

  it('drops a seal that does not open (another secret, altered) with a warning, never a 500', () => {
    const other = createSealer(Buffer.alloc(32, 9)).seal({ k: 'key_a', p: 'deepseek-up', f: 'provider:deepseek-up', i: { kind: 'reasoning', text: 'x' } });
    const { body, warnings } = translate(input({ role: 'user', content: 'go' }, { type: 'reasoning', summary: [], encrypted_content: other }, { role: 'assistant', content: 'ok' }), { replayReasoning: true });
    assert.deepEqual(body.messages, [{ role: 'user', content: 'go' }, { role: 'assistant', content: 'ok' }]);
    assert.deepEqual(warnings, ['1 llmux seal that does not open (another secret, altered, or an earlier llmux\'s) ignored']);
  });

  it('drops unresolved item references and items of hosted tools with a warning', () => {
    const { body, warnings } = translate(input({ role: 'user', content: 'go' }, { type: 'item_reference', id: 'msg_1' }, { type: 'web_search_call', id: 'ws_1', status: 'completed' }));
    assert.deepEqual(body.messages, [{ role: 'user', content: 'go' }]);
    assert.deepEqual(warnings, [
      'input.1: item_reference items cannot be sent to a chat-completions upstream; dropped',
      'input.2: web_search_call items cannot be sent to a chat-completions upstream; dropped',
    ]);
  });
});

describe('responsesRequestToChat parameters', () => {
  it('offers Codex\'s tools as functions and gives the tool names the answer translators need', () => {
    const { body, warnings, toolNames } = translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: 'auto', parallel_tool_calls: false });
    assert.deepEqual(body.tools?.map((tool) => tool.function.name), ['shell', 'apply_patch', 'github__create_issue', 'local_shell']);
    assert.equal(body.tools?.[0]?.function.strict, false);
    assert.deepEqual(body.tools?.[1]?.function.parameters, { type: 'object', properties: { input: { type: 'string', description: 'The whole input for the tool, as raw text.' } }, required: ['input'], additionalProperties: false });
    assert.equal(body.tool_choice, 'auto');
    assert.equal(body.parallel_tool_calls, false);
    assert.deepEqual(warnings, ['tools.4: "web_search" is a hosted or unknown tool this model\'s upstream cannot run; dropped']);
    assert.deepEqual([...toolNames.custom], ['apply_patch']);
  });

  it('maps tool_choice required and a named flattened function', () => {
    assert.equal(translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: 'required' }).body.tool_choice, 'required');
    assert.deepEqual(translate({ input: 'x', tools: CODEX_TOOLS, tool_choice: { type: 'function', name: 'create_issue' } }).body.tool_choice, { type: 'function', function: { name: 'github__create_issue' } });
  });

  it('sends no tools, tool_choice or parallel_tool_calls when only hosted tools were asked for', () => {
    const { body } = translate({ input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required', parallel_tool_calls: false });
    assert.deepEqual(Object.keys(body), ['model', 'messages']);
  });

  it('sends max_output_tokens as the model\'s output cap parameter', () => {
    assert.equal(translate({ input: 'x', max_output_tokens: 300 }).body.max_tokens, 300);
    const reasoningModel = translate({ input: 'x', max_output_tokens: 300 }, { maxTokensParam: 'max_completion_tokens' }).body;
    assert.deepEqual([reasoningModel.max_completion_tokens, 'max_tokens' in reasoningModel], [300, false]);
  });

  it('sends reasoning.effort as reasoning_effort to reasoning models only, max as xhigh', () => {
    assert.equal(translate({ input: 'x', reasoning: { effort: 'high' } }, { reasoning: true }).body.reasoning_effort, 'high');
    assert.equal(translate({ input: 'x', reasoning: { effort: 'max' } }, { reasoning: true }).body.reasoning_effort, 'xhigh');
    assert.equal('reasoning_effort' in translate({ input: 'x', reasoning: { effort: 'high' } }).body, false);
  });

  it('sends text.format json_schema as response_format json_schema, and json_object as json_object', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    assert.deepEqual(translate({ input: 'x', text: { format: { type: 'json_schema', name: 'out', schema, strict: true } } }).body.response_format, { type: 'json_schema', json_schema: { name: 'out', schema, strict: true } });
    assert.deepEqual(translate({ input: 'x', text: { format: { type: 'json_object' } } }).body.response_format, { type: 'json_object' });
    assert.equal('response_format' in translate({ input: 'x', text: { format: { type: 'text' }, verbosity: 'low' } }).body, false);
  });

  it('sends user, else safety_identifier, else metadata.user_id as user, hashed when longer than 64 characters', () => {
    assert.equal(translate({ input: 'x', user: 'u1', safety_identifier: 's1' }).body.user, 'u1');
    assert.equal(translate({ input: 'x', safety_identifier: 's1', metadata: { user_id: 'm1' } }).body.user, 's1');
    assert.equal(translate({ input: 'x', metadata: { user_id: 'm1' } }).body.user, 'm1');
    const long = 'x'.repeat(65);
    assert.equal(translate({ input: 'x', user: long }).body.user, createHash('sha256').update(long).digest('hex'));
    assert.equal(translate({ input: 'x', user: 'y'.repeat(64) }).body.user, 'y'.repeat(64));
  });

  it('asks a streamed answer for usage, passes temperature and top_p, and drops llmux\'s own fields quietly and unknown ones with a warning', () => {
    const { body, warnings } = translate({
      input: 'x',
      stream: true,
      temperature: 1.5,
      top_p: 0.5,
      store: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'k',
      truncation: 'auto',
      service_tier: 'flex',
      previous_response_id: 'resp_1',
      top_logprobs: 3,
    });
    assert.deepEqual(body, { model: 'gpt-up', messages: [{ role: 'user', content: 'x' }], temperature: 1.5, top_p: 0.5, stream: true, stream_options: { include_usage: true } });
    assert.deepEqual(warnings, ['top_logprobs: not understood when translating to a chat-completions upstream; dropped']);
  });
});

describe('responsesRequestToChat on a Codex-shaped request', () => {
  it('translates a validated Codex turn (developer instructions, reasoning, apply_patch, MCP and shell calls) whole', () => {
    const sealed = sealAs({ kind: 'reasoning', text: 'Patch it.' }, DEEPSEEK);
    const request = validateResponsesRequest({
      model: 'llmux-model',
      instructions: 'You are Codex.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>workspace-write</permissions>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd=/w</environment_context>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix the bug' }] },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Patch it.' }], encrypted_content: sealed },
        { type: 'custom_tool_call', id: 'ctc_1', status: 'completed', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch\n' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Success.' },
        { type: 'function_call', id: 'fc_1', call_id: 'call_g', name: 'create_issue', namespace: 'github', arguments: '{"title":"bug"}' },
        { type: 'function_call_output', call_id: 'call_g', output: 'created' },
      ],
      tools: CODEX_TOOLS,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'thread-1',
      text: { verbosity: 'low' },
    });
    const { body, warnings } = translate(request, { reasoning: true, replayReasoning: true, maxTokensParam: 'max_completion_tokens' });
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You are Codex.' },
      { role: 'system', content: '<permissions>workspace-write</permissions>' },
      { role: 'user', content: '<environment_context>cwd=/w</environment_context>' },
      { role: 'user', content: 'Fix the bug' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch\\n*** End Patch\\n"}' } }], reasoning_content: 'Patch it.' },
      { role: 'tool', tool_call_id: 'call_p', content: 'Success.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_g', type: 'function', function: { name: 'github__create_issue', arguments: '{"title":"bug"}' } }], reasoning_content: '' },
      { role: 'tool', tool_call_id: 'call_g', content: 'created' },
    ]);
    assert.equal(body.reasoning_effort, 'medium');
    assert.equal(body.tool_choice, 'auto');
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.deepEqual(warnings, [
      'tools.4: "web_search" is a hosted or unknown tool this model\'s upstream cannot run; dropped',
      'an empty reasoning_content put on an assistant message with tool calls, 1 time: the upstream needs it there, and the conversation carried none it issued',
    ]);
  });
});

describe('responsesRequestToChat with Codex\'s additional_tools input item', () => {
  it('offers its tools and drops the item quietly; client_metadata is dropped without a warning too', () => {
    const { body, warnings } = translate({
      client_metadata: { session: 'abc' },
      ...input(
        { type: 'additional_tools', role: 'developer', tools: [{ type: 'namespace', name: 'functions', tools: [{ type: 'function', name: 'wait', parameters: { type: 'object', properties: {} } }] }] },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
      ),
    });
    assert.deepEqual(body.messages, [{ role: 'system', content: 'You are Codex.' }, { role: 'user', content: 'hi' }]);
    assert.deepEqual(body.tools?.map((tool) => tool.function.name), ['functions__wait']);
    assert.deepEqual(warnings, []);
  });
});
