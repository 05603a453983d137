import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConverseContentBlock, ConverseRequest } from '../../src/formats/converse.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import {
  type ConverseBuild,
  buildConverseRequest,
  createConverseTurns,
  documentBlock,
  mediaFromUrl,
  toolResultBlock,
  toolUseBlock,
} from '../../src/translate/converse-build.ts';
import { converseRequestProblem } from '../helpers/converse-validate.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function model(upstreamId: string): UpstreamModel {
  return { upstreamId, reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192 };
}

/** Builds a request from turns given as [role, blocks], checked as Bedrock checks it. */
function build(upstreamId: string, turns: Array<['user' | 'assistant', ConverseContentBlock[]]>, settings: Partial<ConverseBuild> = {}): { body: ConverseRequest; warnings: string[] } {
  const warnings: string[] = [];
  const built = createConverseTurns();
  for (const [role, blocks] of turns) built.add(role, blocks);
  const body = buildConverseRequest(built, {
    model: model(upstreamId),
    system: [],
    tools: [],
    choice: undefined,
    oneCallAtATime: undefined,
    inference: { stop: [] },
    warn: (message) => warnings.push(message),
    ...settings,
  });
  const problem = converseRequestProblem(JSON.parse(JSON.stringify(body)) as Record<string, unknown>, upstreamId);
  assert.equal(problem, undefined, `Bedrock would refuse it: ${problem ?? ''}`);
  return { body, warnings };
}

const TOOL = { name: 'get_weather', description: 'Weather of a city.', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
const LLAMA = 'us.meta.llama3-3-70b-instruct-v1:0';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

describe('buildConverseRequest: messages', () => {
  it('merges same-role turns, leaves out blank text, opens with a user turn, and trims a final assistant turn', () => {
    const { body } = build(LLAMA, [
      ['assistant', [{ text: 'Earlier answer' }]],
      ['user', [{ text: 'a' }, { text: '  ' }]],
      ['user', [{ text: 'b' }]],
      ['assistant', [{ text: 'The answer is ' }]],
    ]);
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ text: '.' }] },
      { role: 'assistant', content: [{ text: 'Earlier answer' }] },
      { role: 'user', content: [{ text: 'a' }, { text: 'b' }] },
      { role: 'assistant', content: [{ text: 'The answer is' }] },
    ]);
  });

  it('puts tool results first in their user message and reasoning first in its assistant message', () => {
    const { body } = build(CLAUDE, [
      ['user', [{ text: 'go' }]],
      ['assistant', [{ text: 'calling' }, toolUseBlock('tooluse_1', 'get_weather', { city: 'Oslo' }), { reasoningContent: { reasoningText: { text: 'hm', signature: 'sig' } } }]],
      ['user', [{ text: 'and also' }, toolResultBlock('anthropic', 'tooluse_1', { texts: ['5°C'], images: [] }, false)]],
    ], { tools: [TOOL] });
    assert.deepEqual(body.messages[1]?.content.map((block) => Object.keys(block)[0]), ['reasoningContent', 'text', 'toolUse']);
    assert.deepEqual(body.messages[2]?.content.map((block) => Object.keys(block)[0]), ['toolResult', 'text']);
  });

  it('sends the history\'s calls and results as text when no tool is offered, with a warning', () => {
    const { body, warnings } = build(LLAMA, [
      ['user', [{ text: 'go' }]],
      ['assistant', [toolUseBlock('call_1', 'get_weather', { city: 'Oslo' })]],
      ['user', [toolResultBlock('other', 'call_1', { texts: ['5°C'], images: [] }, true)]],
    ]);
    assert.deepEqual(body.messages.slice(1), [
      { role: 'assistant', content: [{ text: '[tool call call_1: get_weather({"city":"Oslo"})]' }] },
      { role: 'user', content: [{ text: 'Output of tool call call_1:\nError: 5°C' }] },
    ]);
    assert.equal(body.toolConfig, undefined);
    assert.match(warnings.join('\n'), /sent as text: a Converse upstream takes them only with tools offered/);
  });

  it('sends a result that answers no call of the assistant turn before it as text', () => {
    const { body, warnings } = build(LLAMA, [
      ['user', [toolResultBlock('other', 'call_9', { texts: ['lost'], images: [] }, false), { text: 'hi' }]],
    ], { tools: [TOOL] });
    assert.deepEqual(body.messages, [{ role: 'user', content: [{ text: 'Output of tool call call_9:\nlost' }, { text: 'hi' }] }]);
    assert.match(warnings[0] ?? '', /answers call "call_9", which is not in the assistant turn before it/);
  });

  it('gives a message with a document a text block naming it', () => {
    const document = documentBlock('application/pdf', PNG, 'Q3 report (final).pdf');
    assert.deepEqual(document, { document: { format: 'pdf', name: 'Q3 report (final)', source: { bytes: PNG } } });
    const { body } = build(LLAMA, [['user', [document as ConverseContentBlock]]]);
    assert.deepEqual(body.messages[0]?.content[1], { text: 'The attached document: Q3 report (final)' });
    assert.deepEqual(documentBlock('text/plain', PNG, 'notes: v2/draft?.txt'), { document: { format: 'txt', name: 'notes v2 draft', source: { bytes: PNG } } });
  });

  it('takes images as data URLs only: an http(s) URL or an unsupported type is a placeholder, with a warning', () => {
    const warnings: string[] = [];
    assert.deepEqual(mediaFromUrl(`data:image/png;base64,${PNG}`, 'p', (m) => warnings.push(m)), { image: { format: 'png', source: { bytes: PNG } } });
    assert.deepEqual(mediaFromUrl('https://example.com/cat.png', 'p', (m) => warnings.push(m)), { text: '[image omitted: only images sent as data URLs can be sent to this model]' });
    assert.deepEqual(mediaFromUrl('data:image/tiff;base64,AAAA', 'p', (m) => warnings.push(m)), { text: '[file omitted: image/tiff cannot be sent to this model]' });
    assert.equal(warnings.length, 2);
  });

  it('puts the system prompt first in the conversation for the models that take none', () => {
    const { body } = build('mistral.mixtral-8x7b-instruct-v0:1', [['user', [{ text: 'hi' }]]], { system: ['Be brief.'] });
    assert.equal(body.system, undefined);
    assert.deepEqual(body.messages[0]?.content, [{ text: 'Be brief.' }, { text: 'hi' }]);
    assert.deepEqual(build(LLAMA, [['user', [{ text: 'hi' }]]], { system: ['Be brief.', '', 'Use French.'] }).body.system, [{ text: 'Be brief.\n\nUse French.' }]);
  });
});

describe('toolResultBlock', () => {
  it('gives Claude and Nova the error status and Claude its images; others the text with an Error prefix and a placeholder', () => {
    const image = { image: { format: 'png' as const, source: { bytes: PNG } } };
    assert.deepEqual(toolResultBlock('anthropic', 't', { texts: ['bad'], images: [image] }, true), { toolResult: { toolUseId: 't', content: [{ text: 'bad' }, image], status: 'error' } });
    assert.deepEqual(toolResultBlock('nova', 't', { texts: ['bad'], images: [] }, true), { toolResult: { toolUseId: 't', content: [{ text: 'bad' }], status: 'error' } });
    assert.deepEqual(toolResultBlock('other', 't', { texts: ['bad'], images: [image] }, true), { toolResult: { toolUseId: 't', content: [{ text: 'Error: bad' }, { text: '[image omitted: this model takes text tool results only]' }] } });
    assert.deepEqual(toolResultBlock('other', 't', { texts: [''], images: [] }, false), { toolResult: { toolUseId: 't', content: [{ text: '.' }] } });
    assert.deepEqual(toolResultBlock('anthropic', 't', { texts: [], images: [image] }, false), { toolResult: { toolUseId: 't', content: [image] } });
  });
});

describe('buildConverseRequest: tools and settings', () => {
  it('offers tools as tool specs; none offers none', () => {
    const { body } = build(LLAMA, [['user', [{ text: 'hi' }]]], { tools: [TOOL], choice: { mode: 'auto' } });
    assert.deepEqual(body.toolConfig, { tools: [{ toolSpec: { name: 'get_weather', description: 'Weather of a city.', inputSchema: { json: TOOL.parameters } } }] });
    assert.equal(build(LLAMA, [['user', [{ text: 'hi' }]]], { tools: [TOOL], choice: { mode: 'none' } }).body.toolConfig, undefined);
  });

  it('forces a tool where the family takes it, and drops the choice with a warning where Bedrock would refuse it', () => {
    assert.deepEqual(build(CLAUDE, [['user', [{ text: 'hi' }]]], { tools: [TOOL], choice: { mode: 'tool', name: 'get_weather' } }).body.toolConfig?.toolChoice, { tool: { name: 'get_weather' } });
    assert.deepEqual(build('mistral.mistral-large-2407-v1:0', [['user', [{ text: 'hi' }]]], { tools: [TOOL], choice: { mode: 'required' } }).body.toolConfig?.toolChoice, { any: {} });
    const llama = build(LLAMA, [['user', [{ text: 'hi' }]]], { tools: [TOOL], choice: { mode: 'required' }, oneCallAtATime: 'parallel_tool_calls' });
    assert.equal(llama.body.toolConfig?.toolChoice, undefined);
    assert.deepEqual(llama.warnings, ['tool_choice: dropped, this model on Converse cannot be made to call a tool', 'parallel_tool_calls: dropped, a Converse upstream cannot be told to call one tool at a time']);
  });

  it('holds temperature and top_p to 0..1, keeps non-empty stop sequences, and places top_k as the family takes it', () => {
    const { body } = build(CLAUDE, [['user', [{ text: 'hi' }]]], { inference: { maxTokens: 100, temperature: 1.7, topP: 0.9, stop: ['END', '', 3] }, topK: 40 });
    assert.deepEqual(body.inferenceConfig, { maxTokens: 100, temperature: 1, topP: 0.9, stopSequences: ['END'] });
    assert.deepEqual(body.additionalModelRequestFields, { top_k: 40 });
    assert.deepEqual(build('amazon.nova-pro-v1:0', [['user', [{ text: 'hi' }]]], { topK: 20 }).body.additionalModelRequestFields, { inferenceConfig: { topK: 20 } });
    const llama = build(LLAMA, [['user', [{ text: 'hi' }]]], { topK: 20 });
    assert.equal(llama.body.additionalModelRequestFields, undefined);
    assert.deepEqual(llama.warnings, ['top_k: dropped, this model on Converse takes no top_k']);
  });
});
