import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateResponsesRequest, type ResponsesInputItem, type ResponsesRequest } from '../../src/formats/responses.ts';
import type { ConverseRequest } from '../../src/formats/converse.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import type { Issuer } from '../../src/translate/carried.ts';
import { reader, sealed } from '../helpers/carry.ts';
import { responsesRequestToConverse } from '../../src/translate/responses-to-converse.ts';
import type { ToolNames } from '../../src/translate/responses-tools.ts';
import { converseRequestProblem } from '../helpers/converse-validate.ts';

const LLAMA = 'us.meta.llama3-3-70b-instruct-v1:0';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
/** A Converse provider: the family of the state it issues is its own. */
const CONVERSE: Issuer = { provider: 'bedrock-converse', family: 'provider:bedrock-converse' };

function translate(request: Record<string, unknown>, model: Partial<UpstreamModel> = {}): { body: ConverseRequest; toolNames: ToolNames; warnings: string[] } {
  const warnings: string[] = [];
  const upstream: UpstreamModel = { upstreamId: LLAMA, reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192, ...model };
  const validated: ResponsesRequest = validateResponsesRequest({ model: 'llmux-model', ...request });
  const { body, toolNames } = responsesRequestToConverse(validated, { model: upstream, carry: reader(CONVERSE, warnings), warn: (message) => warnings.push(message) });
  const problem = converseRequestProblem(JSON.parse(JSON.stringify(body)) as Record<string, unknown>, upstream.upstreamId);
  assert.equal(problem, undefined, `Bedrock would refuse it: ${problem ?? ''}`);
  return { body, toolNames, warnings };
}

function input(...items: ResponsesInputItem[]): { input: ResponsesInputItem[] } {
  return { input: items };
}

const SHELL = { type: 'function', name: 'shell', description: 'Runs a command.', parameters: { type: 'object', properties: { command: { type: 'string' } } } };

describe('responsesRequestToConverse', () => {
  it('makes instructions and leading system messages the system prompt, later ones tagged user text', () => {
    const { body } = translate({
      instructions: 'From instructions.',
      ...input({ role: 'developer', content: 'From developer.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }, { role: 'system', content: 'French now.' }, { role: 'user', content: 'Ça va?' }),
      max_output_tokens: 500,
    });
    assert.deepEqual(body, {
      system: [{ text: 'From instructions.\n\nFrom developer.' }],
      messages: [
        { role: 'user', content: [{ text: 'Hi' }] },
        { role: 'assistant', content: [{ text: 'Hello' }] },
        { role: 'user', content: [{ text: '<system-instructions>\nFrench now.\n</system-instructions>' }, { text: 'Ça va?' }] },
      ],
      inferenceConfig: { maxTokens: 500 },
    });
  });

  it('sends function, custom and local shell calls with their outputs as toolUse and toolResult, with the tool names map', () => {
    const { body, toolNames } = translate({
      ...input(
        { role: 'user', content: 'Patch and list.' },
        { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"command":"ls"}' },
        { type: 'custom_tool_call', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
        { type: 'custom_tool_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'Done.' }] },
      ),
      tools: [SHELL, { type: 'custom', name: 'apply_patch', description: 'Patch files.' }, { type: 'web_search' }],
      tool_choice: 'required',
    });
    assert.deepEqual(body.messages.slice(1), [
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'call_1', name: 'shell', input: { command: 'ls' } } }, { toolUse: { toolUseId: 'call_2', name: 'apply_patch', input: { input: '*** Begin Patch' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'call_1', content: [{ text: 'a.txt' }] } }, { toolResult: { toolUseId: 'call_2', content: [{ text: 'Done.' }] } }] },
    ]);
    assert.deepEqual(body.toolConfig?.tools.map((tool) => tool.toolSpec.name), ['shell', 'apply_patch']);
    assert.equal(body.toolConfig?.toolChoice, undefined, 'Llama cannot be made to call a tool');
    assert.ok(toolNames.custom.has('apply_patch'));
  });

  it('replays reasoning llmux sealed to Claude, signed, and drops it for another model family', () => {
    const items = input(
      { role: 'user', content: 'Weather?' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: sealed({ kind: 'thinking', thinking: 'Use the tool.', signature: 'sig-1' }, CONVERSE) },
      { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
    );
    const claude = translate({ ...items, tools: [SHELL] }, { upstreamId: CLAUDE });
    assert.deepEqual(claude.body.messages[1]?.content[0], { reasoningContent: { reasoningText: { text: 'Use the tool.', signature: 'sig-1' } } });
    const llama = translate({ ...items, tools: [SHELL] });
    assert.deepEqual(llama.body.messages[1]?.content, [{ toolUse: { toolUseId: 'call_1', name: 'shell', input: {} } }]);
  });

  it('gives Claude a thinking budget for reasoning.effort unless the request continues a tool loop without its signed thinking', () => {
    assert.deepEqual(translate({ input: 'x', reasoning: { effort: 'medium' }, temperature: 0.4 }, { upstreamId: CLAUDE, reasoning: true }).body, {
      messages: [{ role: 'user', content: [{ text: 'x' }] }],
      inferenceConfig: { maxTokens: 8192 },
      additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 4096 } },
    });
    const loop = translate({
      ...input({ role: 'user', content: 'Go' }, { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{}' }, { type: 'function_call_output', call_id: 'call_1', output: 'ok' }),
      tools: [SHELL],
      reasoning: { effort: 'high' },
    }, { upstreamId: CLAUDE, reasoning: true });
    assert.equal(loop.body.additionalModelRequestFields, undefined);
    assert.match(loop.warnings.join('\n'), /reasoning\.effort: dropped, Claude wants the signed thinking/);
  });

  it('asks for JSON through the system prompt, and warns about what it drops', () => {
    const { body, warnings } = translate({ input: 'x', text: { format: { type: 'json_object' } }, parallel_tool_calls: false, tools: [SHELL], frequency_penalty: 1 });
    assert.equal(body.system?.[0]?.text, 'Respond with a single valid JSON object and nothing else: no prose and no code fences.');
    assert.deepEqual(warnings.sort(), ['frequency_penalty: not understood when translating to a Converse upstream; dropped', 'parallel_tool_calls: dropped, a Converse upstream cannot be told to call one tool at a time']);
  });
});
