import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatRequest } from '../../src/formats/wire.ts';
import type { ConverseRequest } from '../../src/formats/converse.ts';
import { validateChatRequest } from '../../src/formats/chat.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { chatRequestToConverse } from '../../src/translate/chat-to-converse.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { converseRequestProblem } from '../helpers/converse-validate.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const LLAMA = 'us.meta.llama3-3-70b-instruct-v1:0';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'us.amazon.nova-2-lite-v1:0';

function translate(request: Record<string, unknown>, model: Partial<UpstreamModel> = {}): { body: ConverseRequest; warnings: string[] } {
  const warnings: string[] = [];
  const upstream: UpstreamModel = { upstreamId: LLAMA, reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192, ...model };
  const validated: ChatRequest = validateChatRequest({ model: 'llmux-model', ...request });
  const body = chatRequestToConverse(validated, upstream, { onWarning: (message) => warnings.push(message) });
  const problem = converseRequestProblem(JSON.parse(JSON.stringify(body)) as Record<string, unknown>, upstream.upstreamId);
  assert.equal(problem, undefined, `Bedrock would refuse it: ${problem ?? ''}`);
  return { body, warnings };
}

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'Weather of a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

describe('chatRequestToConverse: messages', () => {
  it('makes the leading system messages the system prompt and a later one user text, and sends the turns as Converse messages', () => {
    const { body } = translate({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use French.' }] },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Bonjour' },
        { role: 'system', content: 'Now English.' },
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] },
      ],
      max_tokens: 300,
      temperature: 0.3,
      stop: 'END',
    });
    assert.deepEqual(body, {
      messages: [
        { role: 'user', content: [{ text: 'Hi' }] },
        { role: 'assistant', content: [{ text: 'Bonjour' }] },
        { role: 'user', content: [{ text: 'Now English.' }, { text: 'What is this?' }, { image: { format: 'png', source: { bytes: PNG } } }] },
      ],
      system: [{ text: 'Be brief.\n\nUse French.' }],
      inferenceConfig: { maxTokens: 300, temperature: 0.3, stopSequences: ['END'] },
    });
  });

  it('sends a tool round trip as toolUse and toolResult blocks with the tools offered', () => {
    const { body, warnings } = translate({
      messages: [
        { role: 'user', content: 'Weather in Oslo and Lima?' },
        { role: 'assistant', content: null, tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: 'not json' } },
        ] },
        { role: 'tool', tool_call_id: 'call_1', content: '5°C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '21°C' }] },
      ],
      tools: [WEATHER],
      tool_choice: 'auto',
    });
    assert.deepEqual(body.messages.slice(1), [
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'call_1', name: 'get_weather', input: { city: 'Oslo' } } }, { toolUse: { toolUseId: 'call_2', name: 'get_weather', input: {} } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'call_1', content: [{ text: '5°C' }] } }, { toolResult: { toolUseId: 'call_2', content: [{ text: '21°C' }] } }] },
    ]);
    assert.deepEqual(body.toolConfig, { tools: [{ toolSpec: { name: 'get_weather', description: 'Weather of a city.', inputSchema: { json: WEATHER.function.parameters } } }] });
    assert.deepEqual(warnings, ['messages.1.tool_calls.1.function.arguments: not valid JSON; sent upstream as {}']);
  });

  it('offers no tools for tool_choice none, the history then going as text', () => {
    const { body } = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '5°C' },
      ],
      tools: [WEATHER],
      tool_choice: 'none',
    });
    assert.equal(body.toolConfig, undefined);
    assert.deepEqual(body.messages[1], { role: 'assistant', content: [{ text: 'Checking.' }, { text: '[tool call call_1: get_weather({"city":"Oslo"})]' }] });
  });

  it('pairs legacy function_call and function messages by order', () => {
    const { body } = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        { role: 'function', name: 'get_weather', content: '5°C' },
      ],
      functions: [WEATHER.function],
      tools: [WEATHER],
    });
    assert.deepEqual(body.messages.slice(1).map((message) => message.content[0]), [
      { toolUse: { toolUseId: 'call_legacy_1', name: 'get_weather', input: { city: 'Oslo' } } },
      { toolResult: { toolUseId: 'call_legacy_1', content: [{ text: '5°C' }] } },
    ]);
  });

  it('puts placeholders for what Converse cannot take: image URLs, audio, uploaded files; a PDF goes as a document', () => {
    const { body, warnings } = translate({
      messages: [{ role: 'user', content: [
        { type: 'text', text: 'Read these' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
        { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
        { type: 'file', file: { file_id: 'file-123' } },
        { type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${PNG}` } },
      ] }],
    });
    assert.deepEqual(body.messages[0]?.content, [
      { text: 'Read these' },
      { text: '[image omitted: only images sent as data URLs can be sent to this model]' },
      { text: '[audio omitted: this model does not take audio input]' },
      { text: '[file omitted: an uploaded file]' },
      { document: { format: 'pdf', name: 'report', source: { bytes: PNG } } },
    ]);
    assert.equal(warnings.length, 3);
  });

  it('refuses n above 1, and names each dropped field', () => {
    assert.throws(() => translate({ messages: [{ role: 'user', content: 'x' }], n: 2 }), (err: unknown) => err instanceof GatewayError && err.status === 400 && /n: must be 1/.test(err.message));
    const { warnings } = translate({ messages: [{ role: 'user', content: 'x' }], seed: 1, user: 'u-1', logprobs: true, stream_options: { include_usage: true } });
    assert.deepEqual(warnings.sort(), ['logprobs: dropped, a Converse upstream has no equivalent', 'seed: dropped, a Converse upstream has no equivalent', 'user: dropped, a Converse upstream has no equivalent']);
  });

  it('asks for JSON through the system prompt', () => {
    const { body } = translate({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } } });
    assert.match(body.system?.[0]?.text ?? '', /^Respond with a single valid JSON value that conforms to the JSON schema "answer".*\n\{"type":"object"\}$/s);
  });
});

describe('chatRequestToConverse: reasoning_effort', () => {
  const request = { messages: [{ role: 'user', content: 'Think.' }], reasoning_effort: 'high', temperature: 0.5, top_p: 0.9 };

  it('gives Claude a thinking budget, raising our default cap to make room and dropping the sampling Claude refuses with thinking', () => {
    const { body } = translate(request, { upstreamId: CLAUDE, reasoning: true, maxOutputTokens: 64000 });
    assert.deepEqual(body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 16384 } });
    assert.deepEqual(body.inferenceConfig, { maxTokens: 32000 });
  });

  it('keeps the client\'s own cap for Claude, the budget fitted under it', () => {
    const { body } = translate({ ...request, max_tokens: 8000 }, { upstreamId: CLAUDE, reasoning: true });
    assert.deepEqual(body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 6000 } });
    assert.equal(body.inferenceConfig?.maxTokens, 8000);
  });

  it('sends Claude no thinking with a forced tool, with a warning', () => {
    const { body, warnings } = translate({ ...request, tools: [WEATHER], tool_choice: 'required' }, { upstreamId: CLAUDE, reasoning: true });
    assert.equal(body.additionalModelRequestFields, undefined);
    assert.deepEqual(body.toolConfig?.toolChoice, { any: {} });
    assert.match(warnings.join('\n'), /reasoning_effort: dropped, Claude cannot think with a forced tool choice/);
  });

  it('gives Nova its reasoning config, and sends nothing for a model not marked reasoning', () => {
    assert.deepEqual(translate(request, { upstreamId: NOVA, reasoning: true }).body.additionalModelRequestFields, { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'high' } });
    const plain = translate(request, { upstreamId: NOVA, reasoning: false });
    assert.equal(plain.body.additionalModelRequestFields, undefined);
    assert.deepEqual(plain.warnings, []);
  });

  it('drops it with a warning for a family with no setting', () => {
    const { body, warnings } = translate(request, { upstreamId: LLAMA, reasoning: true });
    assert.equal(body.additionalModelRequestFields, undefined);
    assert.deepEqual(body.inferenceConfig, { temperature: 0.5, topP: 0.9 });
    assert.deepEqual(warnings, ['reasoning_effort: dropped, this model on Converse takes no reasoning setting']);
  });
});
