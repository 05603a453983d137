import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateResponsesRequest, type ResponsesInputItem, type ResponsesRequest } from '../../src/formats/responses.ts';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { ANTHROPIC, GEMINI, reader, sealed } from '../helpers/carry.ts';
import { responsesRequestToGemini } from '../../src/translate/responses-to-gemini.ts';
import type { ToolNames } from '../../src/translate/responses-tools.ts';

const MODEL: UpstreamModel = { upstreamId: 'gemini-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 65536 };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const SKIP = 'skip_thought_signature_validator';

function translate(request: Record<string, unknown>, model: Partial<UpstreamModel> = {}): { body: GeminiRequest; toolNames: ToolNames; warnings: string[] } {
  const warnings: string[] = [];
  const validated: ResponsesRequest = validateResponsesRequest({ model: 'llmux-model', ...request });
  const { body, toolNames } = responsesRequestToGemini(validated, { model: { ...MODEL, ...model }, carry: reader(GEMINI), warn: (message) => warnings.push(message) });
  validateGeminiRequest(JSON.parse(JSON.stringify(body)));
  return { body, toolNames, warnings };
}

function input(...items: ResponsesInputItem[]): { input: ResponsesInputItem[] } {
  return { input: items };
}

describe('responsesRequestToGemini: contents', () => {
  it('makes instructions and leading system messages the system instruction, later ones tagged user text', () => {
    const { body } = translate({
      instructions: 'From instructions.',
      ...input({ role: 'developer', content: 'From developer.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }, { role: 'system', content: 'French now.' }, { role: 'user', content: 'Ça va?' }),
    });
    assert.deepEqual(body.systemInstruction, { parts: [{ text: 'From instructions.\n\nFrom developer.' }] });
    assert.deepEqual(body.contents, [
      { role: 'user', parts: [{ text: 'Hi' }] },
      { role: 'model', parts: [{ text: 'Hello' }] },
      { role: 'user', parts: [{ text: '<system-instructions>\nFrench now.\n</system-instructions>' }, { text: 'Ça va?' }] },
    ]);
  });

  it('sends a string input as one user content, and images inline or as files', () => {
    assert.deepEqual(translate({ input: 'Hello' }).body.contents, [{ role: 'user', parts: [{ text: 'Hello' }] }]);
    const { body } = translate(input({ role: 'user', content: [{ type: 'input_text', text: 'Look' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }, { type: 'input_image', image_url: 'https://example.com/x.png' }] }));
    assert.deepEqual(body.contents[0]?.parts, [{ text: 'Look' }, { inlineData: { mimeType: 'image/png', data: PNG } }, { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/x.png' } }]);
  });
});

describe('responsesRequestToGemini: tools and calls', () => {
  it('declares function, custom and namespace tools, and maps tool_choice', () => {
    const { body, toolNames, warnings } = translate({
      input: 'x',
      tools: [
        { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true },
        { type: 'custom', name: 'apply_patch', description: 'Patch files' },
        { type: 'namespace', name: 'mcp__fs', description: 'Files', tools: [{ type: 'function', name: 'read', parameters: { type: 'object', properties: {} } }] },
        { type: 'web_search' },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    assert.deepEqual(body.tools?.[0]?.functionDeclarations?.map((declaration) => declaration.name), ['get_weather', 'apply_patch', 'mcp__fs__read']);
    assert.deepEqual(body.tools?.[0]?.functionDeclarations?.[0], { name: 'get_weather', description: 'Weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } } });
    assert.deepEqual(body.toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    assert.ok(toolNames.custom.has('apply_patch'));
    assert.match(warnings[0] ?? '', /"web_search" is a hosted or unknown tool/);
  });

  it('sends calls with their call ids and outputs as responses named after them, images following', () => {
    const { body } = translate({
      tools: [{ type: 'function', name: 'shot', parameters: { type: 'object', properties: {} } }, { type: 'custom', name: 'apply_patch' }],
      ...input(
        { role: 'user', content: 'Go' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: sealed({ kind: 'thinking', thinking: 't', signature: 's' }, ANTHROPIC) },
        { type: 'function_call', call_id: 'call_1', name: 'shot', arguments: '{"full":true}' },
        { type: 'custom_tool_call', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'taken' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }] },
        { type: 'custom_tool_call_output', call_id: 'call_2', output: 'applied' },
      ),
    });
    assert.deepEqual(body.contents.slice(1), [
      { role: 'model', parts: [
        { functionCall: { id: 'call_1', name: 'shot', args: { full: true } }, thoughtSignature: SKIP },
        { functionCall: { id: 'call_2', name: 'apply_patch', args: { input: '*** Begin Patch' } } },
      ] },
      { role: 'user', parts: [
        { functionResponse: { id: 'call_1', name: 'shot', response: { output: 'taken' } } },
        { inlineData: { mimeType: 'image/png', data: PNG } },
        { functionResponse: { id: 'call_2', name: 'apply_patch', response: { output: 'applied' } } },
      ] },
    ]);
  });

  it('sends an output whose call is not in the input as user text, with a warning', () => {
    const { body, warnings } = translate(input({ role: 'user', content: 'x' }, { type: 'function_call_output', call_id: 'ghost', output: 'boo' }));
    assert.deepEqual(body.contents, [{ role: 'user', parts: [{ text: 'x' }, { text: 'Output of tool call ghost:\nboo' }] }]);
    assert.deepEqual(warnings, ['input.1: answers call "ghost", which is not in the input; sent as user text']);
  });

  it('calls the local shell by its action', () => {
    const { body } = translate({
      tools: [{ type: 'local_shell' }],
      ...input({ role: 'user', content: 'ls' }, { type: 'local_shell_call', call_id: 'sh_1', status: 'completed', action: { type: 'exec', command: ['ls'], env: {} } }, { type: 'local_shell_call_output', id: 'sh_1', output: 'a b' }),
    });
    assert.deepEqual(body.contents[1]?.parts[0]?.functionCall, { id: 'sh_1', name: 'local_shell', args: { command: ['ls'], env: {} } });
    assert.deepEqual(body.contents[2]?.parts[0]?.functionResponse, { id: 'sh_1', name: 'local_shell', response: { output: 'a b' } });
  });
});

describe('responsesRequestToGemini: generation config and thinking', () => {
  it('maps the cap, sampling and a JSON schema format', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    const { body } = translate({ input: 'x', max_output_tokens: 900, temperature: 0.5, top_p: 0.8, text: { format: { type: 'json_schema', name: 'out', schema, strict: true } } });
    assert.deepEqual(body.generationConfig, { maxOutputTokens: 900, temperature: 0.5, topP: 0.8, responseMimeType: 'application/json', responseJsonSchema: schema });
  });

  it('maps reasoning.effort to a thinking budget for reasoning models, keeping the answer its share', () => {
    assert.deepEqual(translate({ input: 'x', reasoning: { effort: 'medium', summary: 'auto' } }, { reasoning: true }).body.generationConfig, { thinkingConfig: { thinkingBudget: 8192, includeThoughts: true } });
    assert.deepEqual(translate({ input: 'x', max_output_tokens: 3000, reasoning: { effort: 'high' } }, { reasoning: true }).body.generationConfig?.thinkingConfig, { thinkingBudget: 1500, includeThoughts: true });
    assert.equal(translate({ input: 'x', reasoning: { effort: 'high' } }).body.generationConfig, undefined);
    assert.deepEqual(translate({ input: 'x', reasoning: { summary: 'detailed' } }, { reasoning: true }).body.generationConfig, { thinkingConfig: { includeThoughts: true } });
  });

  it('warns about parallel_tool_calls false and fields it does not understand', () => {
    const { warnings } = translate({ input: 'x', tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }], parallel_tool_calls: false, prompt_variables: {} });
    assert.deepEqual(warnings, ['prompt_variables: not understood when translating to a Gemini upstream; dropped', 'parallel_tool_calls: dropped, a Gemini upstream cannot be told to call one function at a time']);
  });
});

describe('responsesRequestToGemini: carried state (llmux.md section 11)', () => {
  it('gives a Gemini signature sealed in a reasoning item back to its call, and the step without one Google\'s placeholder', () => {
    const call = (callId: string): ResponsesInputItem => ({ type: 'function_call', call_id: callId, name: 'f', arguments: '{}' });
    const output = (callId: string): ResponsesInputItem => ({ type: 'function_call_output', call_id: callId, output: 'x' });
    const { body } = translate(input(
      { role: 'user', content: 'go' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: sealed({ kind: 'thought-signature', signature: 'google-sig' }, GEMINI) },
      call('a'), call('b'), output('a'), output('b'),
      { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: sealed({ kind: 'thinking', thinking: 't', signature: 's' }, ANTHROPIC) },
      call('c'), output('c'),
    ));
    assert.deepEqual(body.contents.filter((content) => content.role === 'model').map((content) => content.parts.map((part) => part.thoughtSignature)), [['google-sig', undefined], [SKIP]]);
  });
});
