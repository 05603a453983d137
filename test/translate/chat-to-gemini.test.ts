import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatRequest } from '../../src/formats/wire.ts';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';
import { validateChatRequest } from '../../src/formats/chat.ts';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import { chatRequestToGemini } from '../../src/translate/chat-to-gemini.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import type { CarriedRecord } from '../../src/translate/carried.ts';
import { ANTHROPIC, GEMINI, reader } from '../helpers/carry.ts';

const MODEL: UpstreamModel = { upstreamId: 'gemini-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 65536 };
const REASONING: UpstreamModel = { ...MODEL, reasoning: true };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function translate(body: Partial<ChatRequest>, model = MODEL): { out: GeminiRequest; warnings: string[] } {
  const warnings: string[] = [];
  const request = validateChatRequest({ model: 'client-model', messages: [{ role: 'user', content: 'Hi' }], ...body });
  const out = chatRequestToGemini(request, model, { onWarning: (message) => warnings.push(message) });
  // Whatever comes out is a body the Gemini format takes.
  validateGeminiRequest(JSON.parse(JSON.stringify(out)));
  return { out, warnings };
}

describe('chatRequestToGemini: contents and roles', () => {
  it('makes leading system messages the system instruction and the rest user and model contents, merged by role', () => {
    const { out } = translate({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'Be kind.' },
        { role: 'user', content: 'Hi' },
        { role: 'user', content: [{ type: 'text', text: 'Anyone?' }] },
        { role: 'assistant', content: 'Hello!' },
        { role: 'system', content: 'Now in French.' },
        { role: 'user', content: 'How are you?' },
      ],
    });
    assert.deepEqual(out.systemInstruction, { parts: [{ text: 'Be brief.\n\nBe kind.' }] });
    assert.deepEqual(out.contents, [
      { role: 'user', parts: [{ text: 'Hi' }, { text: 'Anyone?' }] },
      { role: 'model', parts: [{ text: 'Hello!' }] },
      { role: 'user', parts: [{ text: 'Now in French.' }, { text: 'How are you?' }] },
    ]);
    assert.equal('model' in out, false, 'the model goes in the URL');
    assert.equal('stream' in out, false, 'so does streaming');
  });

  it('puts a user turn first when the conversation opens with the assistant', () => {
    const { out } = translate({ messages: [{ role: 'assistant', content: 'Welcome.' }, { role: 'user', content: 'Hi' }] });
    assert.deepEqual(out.contents[0], { role: 'user', parts: [{ text: '.' }] });
  });
});

describe('chatRequestToGemini: media', () => {
  it('sends data-URL images inline and http(s) images as files, audio and PDFs inline', () => {
    const { out, warnings } = translate({
      messages: [{
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/photo.webp?size=large' } },
          { type: 'image_url', image_url: { url: 'https://example.com/photo' } },
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
          { type: 'file', file: { file_id: 'file-abc' } },
        ],
      }],
    });
    assert.deepEqual(out.contents[0]?.parts, [
      { inlineData: { mimeType: 'image/png', data: PNG } },
      { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/photo.webp?size=large' } },
      { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/photo' } },
      { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
      { text: '[file omitted: an uploaded file]' },
    ]);
    assert.equal(warnings.length, 1);
  });
});

describe('chatRequestToGemini: tools and calls', () => {
  const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: ['string', 'null'] } }, additionalProperties: false }, strict: true } };

  it('declares functions with their JSON Schema as parametersJsonSchema', () => {
    const { out } = translate({ tools: [weather, { type: 'function', function: { name: 'ping' } }] });
    assert.deepEqual(out.tools, [{ functionDeclarations: [
      { name: 'get_weather', description: 'Weather', parametersJsonSchema: weather.function.parameters },
      { name: 'ping' },
    ] }]);
  });

  it('maps tool_choice to function-calling modes', () => {
    const mode = (tool_choice: ChatRequest['tool_choice']) => translate(tool_choice === undefined ? { tools: [weather] } : { tools: [weather], tool_choice }).out.toolConfig;
    assert.deepEqual(mode('auto'), { functionCallingConfig: { mode: 'AUTO' } });
    assert.deepEqual(mode('required'), { functionCallingConfig: { mode: 'ANY' } });
    assert.deepEqual(mode('none'), { functionCallingConfig: { mode: 'NONE' } });
    assert.deepEqual(mode({ type: 'function', function: { name: 'get_weather' } }), { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    assert.equal(mode(undefined), undefined);
  });

  it('warns that parallel_tool_calls false cannot be said', () => {
    assert.deepEqual(translate({ tools: [weather], parallel_tool_calls: false }).warnings, ['parallel_tool_calls: dropped, a Gemini upstream cannot be told to call one function at a time']);
  });

  it('sends calls with their ids and results as function responses named after their call, in a user turn', () => {
    const { out } = translate({
      messages: [
        { role: 'user', content: 'Weather in Paris and London?' },
        { role: 'assistant', content: null, tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"London"}' } },
        ] },
        { role: 'tool', tool_call_id: 'call_1', content: 'rain' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'fog' }] },
      ],
    });
    assert.deepEqual(out.contents.slice(1), [
      { role: 'model', parts: [
        { functionCall: { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'skip_thought_signature_validator' },
        { functionCall: { id: 'call_2', name: 'get_weather', args: { city: 'London' } } },
      ] },
      { role: 'user', parts: [
        { functionResponse: { id: 'call_1', name: 'get_weather', response: { output: 'rain' } } },
        { functionResponse: { id: 'call_2', name: 'get_weather', response: { output: 'fog' } } },
      ] },
    ]);
  });

  it('puts the placeholder signature only on the current turn, since the last user text', () => {
    const call = (id: string) => ({ role: 'assistant' as const, content: null, tool_calls: [{ id, type: 'function' as const, function: { name: 'f', arguments: '{}' } }] });
    const { out } = translate({
      messages: [
        { role: 'user', content: 'one' }, call('a'), { role: 'tool', tool_call_id: 'a', content: '1' }, { role: 'assistant', content: 'done' },
        { role: 'user', content: 'two' }, call('b'), { role: 'tool', tool_call_id: 'b', content: '2' }, call('c'), { role: 'tool', tool_call_id: 'c', content: '3' },
      ],
    });
    const signatures = out.contents.flatMap((content) => content.parts.filter((part) => part.functionCall !== undefined).map((part) => [part.functionCall?.id, part.thoughtSignature]));
    assert.deepEqual(signatures, [['a', undefined], ['b', 'skip_thought_signature_validator'], ['c', 'skip_thought_signature_validator']]);
  });

  it('sends a result whose call is not in the history as user text, and bad arguments as {}', () => {
    const { out, warnings } = translate({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: 'Trying.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{oops' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
        { role: 'tool', tool_call_id: 'ghost', content: 'boo' },
      ],
    });
    assert.deepEqual(out.contents[1]?.parts, [{ text: 'Trying.' }, { functionCall: { id: 'c1', name: 'f', args: {} }, thoughtSignature: 'skip_thought_signature_validator' }]);
    assert.deepEqual(out.contents[2]?.parts[1], { text: 'Output of tool call ghost:\nboo' });
    assert.deepEqual(warnings, ['messages.1.tool_calls.0.function.arguments: not valid JSON; sent upstream as {}', 'messages.3: answers call "ghost", which is not in the messages; sent as user text']);
  });

  it('pairs legacy function_call and function messages', () => {
    const { out } = translate({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null, function_call: { name: 'f', arguments: '{"a":1}' } },
        { role: 'function', name: 'f', content: 'r' },
      ],
    });
    assert.deepEqual(out.contents.slice(1).map((content) => content.parts[0]), [
      { functionCall: { id: 'call_legacy_1', name: 'f', args: { a: 1 } }, thoughtSignature: 'skip_thought_signature_validator' },
      { functionResponse: { id: 'call_legacy_1', name: 'f', response: { output: 'r' } } },
    ]);
  });

  it('drops reasoning_content, which has no signature Gemini would take', () => {
    const { out } = translate({ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'y', reasoning_content: 'thought' }, { role: 'user', content: 'z' }] });
    assert.deepEqual(out.contents[1], { role: 'model', parts: [{ text: 'y' }] });
  });
});

describe('chatRequestToGemini: generation config', () => {
  it('maps sampling, length, stops, seed and penalties', () => {
    const { out } = translate({ temperature: 1.2, top_p: 0.9, max_completion_tokens: 400, stop: 'END', seed: 5, presence_penalty: 0.1, frequency_penalty: 0.2 });
    assert.deepEqual(out.generationConfig, { maxOutputTokens: 400, temperature: 1.2, topP: 0.9, stopSequences: ['END'], seed: 5, presencePenalty: 0.1, frequencyPenalty: 0.2 });
  });

  it('turns response_format into a JSON MIME type with the schema as it is', () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'], additionalProperties: false };
    assert.deepEqual(translate({ response_format: { type: 'json_schema', json_schema: { name: 'a', schema, strict: true } } }).out.generationConfig, { responseMimeType: 'application/json', responseJsonSchema: schema });
    assert.deepEqual(translate({ response_format: { type: 'json_object' } }).out.generationConfig, { responseMimeType: 'application/json' });
    assert.equal(translate({ response_format: { type: 'text' } }).out.generationConfig, undefined);
  });

  it('refuses more than one choice', () => {
    assert.throws(() => translate({ n: 2 }), /n: must be 1 for model "gemini-up"/);
  });

  it('drops what Gemini has no field for, with warnings', () => {
    assert.deepEqual(translate({ user: 'u1', logprobs: true, store: true }).warnings, [
      'user: dropped, a Gemini upstream has no equivalent',
      'logprobs: dropped, a Gemini upstream has no equivalent',
      'store: dropped, a Gemini upstream has no equivalent',
    ]);
  });
});

describe('chatRequestToGemini: thinking', () => {
  const config = (body: Partial<ChatRequest>, model = REASONING) => translate(body, model).out.generationConfig;

  it("maps reasoning_effort to Google's budgets and asks for thoughts, for reasoning models only", () => {
    assert.deepEqual(config({ reasoning_effort: 'low' })?.thinkingConfig, { thinkingBudget: 1024, includeThoughts: true });
    assert.deepEqual(config({ reasoning_effort: 'medium' })?.thinkingConfig, { thinkingBudget: 8192, includeThoughts: true });
    assert.deepEqual(config({ reasoning_effort: 'high' })?.thinkingConfig, { thinkingBudget: 24576, includeThoughts: true });
    assert.deepEqual(config({ reasoning_effort: 'xhigh' })?.thinkingConfig, { thinkingBudget: 24576, includeThoughts: true });
    assert.deepEqual(config({ reasoning_effort: 'none' })?.thinkingConfig, { thinkingBudget: 0 });
    assert.equal(config({ reasoning_effort: 'high' }, MODEL), undefined);
  });

  it("keeps the answer its share of the client's cap", () => {
    assert.deepEqual(config({ reasoning_effort: 'high', max_tokens: 10000 })?.thinkingConfig, { thinkingBudget: 10000 - 4096, includeThoughts: true });
    assert.deepEqual(config({ reasoning_effort: 'high', max_tokens: 2000 })?.thinkingConfig, { thinkingBudget: 1000, includeThoughts: true });
    const { out, warnings } = translate({ reasoning_effort: 'high', max_tokens: 200 }, REASONING);
    assert.deepEqual(out.generationConfig, { maxOutputTokens: 200 });
    assert.match(warnings[0] ?? '', /^reasoning_effort: dropped, an output cap of 200 tokens leaves no room for thinking/);
  });
});

describe('chatRequestToGemini: carried state (llmux.md section 11)', () => {
  const GEMINI_MODEL: UpstreamModel = { ...MODEL, issuer: GEMINI };
  const history = (extra?: Record<string, unknown>): Partial<ChatRequest> => ({
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' }, ...(extra === undefined ? {} : { extra_content: extra }) }, { id: 'call_b', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: 'x' },
      { role: 'tool', tool_call_id: 'call_b', content: 'y' },
    ],
  });
  const signatures = (recalled: ReadonlyMap<string, CarriedRecord>, extra?: Record<string, unknown>): { signatures: unknown[]; warnings: string[] } => {
    const warnings: string[] = [];
    const carry = reader(GEMINI, warnings);
    const out = chatRequestToGemini(validateChatRequest({ model: 'm', ...history(extra) }), GEMINI_MODEL, { onWarning: (message) => warnings.push(message), carry, recalled });
    carry.finish();
    return { signatures: out.contents.find((content) => content.role === 'model')?.parts.map((part) => part.thoughtSignature) ?? [], warnings };
  };

  it('gives a call back the signature the store recalled for it, else the client\'s own copy, else Google\'s placeholder (said in the log)', () => {
    assert.deepEqual(signatures(new Map([['call_a', { issuer: GEMINI, call: { kind: 'thought-signature', signature: 'stored', callId: 'call_a' } }]])).signatures, ['stored', undefined]);
    assert.deepEqual(signatures(new Map(), { google: { thought_signature: 'kept' } }).signatures, ['kept', undefined]);
    const filled = signatures(new Map([['call_a', { issuer: ANTHROPIC, message: [{ kind: 'thinking', thinking: 't', signature: 's' }] }]]));
    assert.deepEqual(filled.signatures, ['skip_thought_signature_validator', undefined]);
    assert.match(filled.warnings.join('\n'), /issued by provider "anthropic-up" \(family anthropic\) stripped/);
    assert.match(filled.warnings.join('\n'), /placeholder thought signature/);
  });
});
