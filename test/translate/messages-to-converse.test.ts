import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import type { ConverseRequest } from '../../src/formats/converse.ts';
import { validateMessagesRequest } from '../../src/formats/messages.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { messagesRequestToConverse } from '../../src/translate/messages-to-converse.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { converseRequestProblem } from '../helpers/converse-validate.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const LLAMA = 'us.meta.llama3-3-70b-instruct-v1:0';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'us.amazon.nova-2-lite-v1:0';

function translate(request: Record<string, unknown>, model: Partial<UpstreamModel> = {}): { body: ConverseRequest; warnings: string[] } {
  const warnings: string[] = [];
  const upstream: UpstreamModel = { upstreamId: LLAMA, reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192, ...model };
  const validated: MessagesRequest = validateMessagesRequest({ model: 'llmux-model', max_tokens: 1024, ...request });
  const body = messagesRequestToConverse(validated, upstream, { onWarning: (message) => warnings.push(message) });
  const problem = converseRequestProblem(JSON.parse(JSON.stringify(body)) as Record<string, unknown>, upstream.upstreamId);
  assert.equal(problem, undefined, `Bedrock would refuse it: ${problem ?? ''}`);
  return { body, warnings };
}

const WEATHER = { name: 'get_weather', description: 'Weather of a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };

/** A Claude Code-like turn: a tool round trip whose assistant turn starts with signed thinking. */
const TOOL_LOOP = [
  { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?', cache_control: { type: 'ephemeral' } }] },
  { role: 'assistant', content: [
    { type: 'thinking', thinking: 'Use the tool.', signature: 'sig-1' },
    { type: 'redacted_thinking', data: 'b3BhcXVl' },
    { type: 'text', text: 'Checking.' },
    { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
  ] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'no data' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }], is_error: true }] },
];

describe('messagesRequestToConverse: messages', () => {
  it('sends system blocks as the system prompt and a mid-conversation system turn as user text', () => {
    const { body } = translate({
      system: [{ type: 'text', text: 'You are Claude Code.' }, { type: 'text', text: 'Be careful.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }, { role: 'system', content: 'Mind the time.' }, { role: 'user', content: 'Go on' }],
      metadata: { user_id: 'user_abc_account_123_session_456' },
      temperature: 0.2,
      top_p: 0.9,
      stop_sequences: ['</done>'],
    });
    assert.deepEqual(body, {
      messages: [
        { role: 'user', content: [{ text: 'Hi' }] },
        { role: 'assistant', content: [{ text: 'Hello' }] },
        { role: 'user', content: [{ text: 'Mind the time.' }, { text: 'Go on' }] },
      ],
      system: [{ text: 'You are Claude Code.\n\nBe careful.' }],
      inferenceConfig: { maxTokens: 1024, temperature: 0.2, topP: 0.9, stopSequences: ['</done>'] },
    });
  });

  it('replays a tool round trip to Claude with its signed and redacted thinking first, the error status and the result image', () => {
    const { body } = translate({ messages: TOOL_LOOP, tools: [WEATHER] }, { upstreamId: CLAUDE });
    assert.deepEqual(body.messages.slice(1), [
      { role: 'assistant', content: [
        { reasoningContent: { reasoningText: { text: 'Use the tool.', signature: 'sig-1' } } },
        { reasoningContent: { redactedContent: 'b3BhcXVl' } },
        { text: 'Checking.' },
        { toolUse: { toolUseId: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } } },
      ] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'toolu_1', content: [{ text: 'no data' }, { image: { format: 'png', source: { bytes: PNG } } }], status: 'error' } }] },
    ]);
  });

  it('drops Claude\'s thinking for another family, and words the failed result as text', () => {
    const { body } = translate({ messages: TOOL_LOOP, tools: [WEATHER] });
    assert.deepEqual(body.messages.slice(1), [
      { role: 'assistant', content: [{ text: 'Checking.' }, { toolUse: { toolUseId: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'toolu_1', content: [{ text: 'Error: no data' }, { text: '[image omitted: this model takes text tool results only]' }] } }] },
    ]);
  });

  it('sends images and documents as bytes, a URL as a placeholder, a text document as text', () => {
    const { body, warnings } = translate({ messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PNG }, title: 'Spec v2.pdf' },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' } },
      { type: 'text', text: 'Summarise.' },
    ] }] });
    assert.deepEqual(body.messages[0]?.content, [
      { image: { format: 'jpeg', source: { bytes: PNG } } },
      { text: '[image omitted: https://example.com/a.png]' },
      { document: { format: 'pdf', name: 'Spec v2', source: { bytes: PNG } } },
      { text: 'plain notes' },
      { text: 'Summarise.' },
    ]);
    assert.deepEqual(warnings, ['messages.0.content.1: a Converse upstream takes images as bytes only; a placeholder stands in its place']);
  });

  it('drops Anthropic-defined tools with a tool_choice naming one, and maps the other choices', () => {
    const { body, warnings } = translate({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER, { type: 'bash_20250124', name: 'bash' }], tool_choice: { type: 'tool', name: 'bash' } }, { upstreamId: CLAUDE });
    assert.deepEqual(body.toolConfig?.tools.map((tool) => tool.toolSpec.name), ['get_weather']);
    assert.equal(body.toolConfig?.toolChoice, undefined);
    assert.deepEqual(warnings, ['tools.1: dropped, "bash_20250124" is an Anthropic-defined tool, which a Converse upstream cannot run', 'tool_choice: dropped, it names tool "bash", which a Converse upstream cannot run']);
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER], tool_choice: { type: 'any' } }, { upstreamId: CLAUDE }).body.toolConfig?.toolChoice, { any: {} });
  });

  it('refuses an Anthropic server tool with a 400 naming it (llmux.md section 11): Converse has nothing like it', () => {
    for (const type of ['web_search_20250305', 'web_fetch_20250910', 'code_execution_20250825']) {
      assert.throws(() => translate({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER, { type, name: 'server' }] }, { upstreamId: CLAUDE }), (err: unknown) => err instanceof GatewayError && err.status === 400 && err.message.startsWith(`tools.1: "${type}" is an Anthropic server tool`));
    }
  });

  it('refuses a thread continuation, and sends top_k where the family takes it', () => {
    assert.throws(() => translate({ messages: [{ role: 'user', content: 'x' }], thread: { type: 'continue', id: 'th_1' } }), (err: unknown) => err instanceof GatewayError && err.code === 'thread_unsupported_request' && /speaks the Converse format/.test(err.message));
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'x' }], top_k: 5 }, { upstreamId: CLAUDE }).body.additionalModelRequestFields, { top_k: 5 });
  });
});

describe('messagesRequestToConverse: thinking', () => {
  it('gives Claude its thinking as the client wrote it, adaptive with its effort', () => {
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'x' }], max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 4000 } }, { upstreamId: CLAUDE, reasoning: true }).body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 4000 } });
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'x' }], thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }, { upstreamId: CLAUDE, reasoning: true }).body.additionalModelRequestFields, { thinking: { type: 'adaptive' }, output_config: { effort: 'low' } });
  });

  it('gives an effort family the budget as an effort, and a model not marked reasoning nothing', () => {
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'x' }], max_tokens: 20000, thinking: { type: 'enabled', budget_tokens: 16000 } }, { upstreamId: NOVA, reasoning: true }).body.additionalModelRequestFields, { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'medium' } });
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'x' }], thinking: { type: 'adaptive' } }, { upstreamId: 'openai.gpt-oss-120b-1:0', reasoning: true }).body.additionalModelRequestFields, { reasoning_effort: 'medium' });
    assert.equal(translate({ messages: [{ role: 'user', content: 'x' }], max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 4000 } }, { upstreamId: CLAUDE, reasoning: false }).body.additionalModelRequestFields, undefined);
  });
});
