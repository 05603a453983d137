import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatTraits, geminiTraits, messagesTraits, responsesTraits } from '../../src/formats/traits.ts';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';
import type { ChatRequest, MessagesRequest } from '../../src/formats/wire.ts';
import type { ResponsesRequest } from '../../src/formats/responses-types.ts';

const PNG = { type: 'base64' as const, media_type: 'image/png', data: 'iVBORw0KGgo=' };

describe('chat traits', () => {
  it('thinks with a reasoning_effort other than none', () => {
    const base: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(chatTraits(base).thinking, false);
    assert.equal(chatTraits({ ...base, reasoning_effort: 'low' }).thinking, true);
    assert.equal(chatTraits({ ...base, reasoning_effort: 'none' }).thinking, false);
  });

  it('sees an image part in any message, and tools only when some are offered', () => {
    const request: ChatRequest = {
      model: 'm',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] },
      ],
      tools: [],
    };
    assert.deepEqual(chatTraits(request), { thinking: false, hasImages: true, hasTools: false });
    assert.equal(chatTraits({ ...request, tools: [{ type: 'function', function: { name: 'f' } }] }).hasTools, true);
  });
});

describe('messages traits', () => {
  it('thinks with thinking of any type but disabled', () => {
    const base: MessagesRequest = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(messagesTraits(base).thinking, false);
    assert.equal(messagesTraits({ ...base, thinking: { type: 'enabled', budget_tokens: 1024 } }).thinking, true);
    const adaptive = { ...base, thinking: { type: 'adaptive' } } as unknown as MessagesRequest;
    assert.equal(messagesTraits(adaptive).thinking, true);
    assert.equal(messagesTraits({ ...base, thinking: { type: 'disabled' } }).thinking, false);
  });

  it('sees an image in a message or in a tool result', () => {
    const inResult: MessagesRequest = {
      model: 'm', max_tokens: 10,
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'screenshot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: PNG }] }] },
      ],
      tools: [{ name: 'screenshot', input_schema: { type: 'object', properties: {} } }],
    };
    assert.deepEqual(messagesTraits(inResult), { thinking: false, hasImages: true, hasTools: true });
    const plain: MessagesRequest = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'no picture' }] }] };
    assert.equal(messagesTraits(plain).hasImages, false);
  });
});

describe('Responses traits', () => {
  it('thinks with reasoning.effort other than none, sees images in input and tool outputs', () => {
    const base: ResponsesRequest = { model: 'm', input: 'hi' };
    assert.deepEqual(responsesTraits(base), { thinking: false, hasImages: false, hasTools: false });
    assert.equal(responsesTraits({ ...base, reasoning: { effort: 'high' } }).thinking, true);
    assert.equal(responsesTraits({ ...base, reasoning: { effort: 'none' } }).thinking, false);
    assert.equal(responsesTraits({ ...base, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] }).hasImages, true);
    assert.equal(responsesTraits({ ...base, input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'data:,' }] }] }).hasImages, true);
    assert.equal(responsesTraits({ ...base, tools: [{ type: 'web_search' }] }).hasTools, true);
  });
});

describe('Gemini traits', () => {
  const base: GeminiRequest = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

  it('thinks when thinkingConfig asks for it: a budget other than 0, a level, or thoughts included', () => {
    assert.equal(geminiTraits(base).thinking, false);
    assert.equal(geminiTraits({ ...base, generationConfig: { thinkingConfig: { thinkingBudget: 0 } } }).thinking, false);
    assert.equal(geminiTraits({ ...base, generationConfig: { thinkingConfig: { thinkingBudget: 1024 } } }).thinking, true);
    assert.equal(geminiTraits({ ...base, generationConfig: { thinkingConfig: { thinkingLevel: 'low' } } }).thinking, true);
    assert.equal(geminiTraits({ ...base, generationConfig: { thinkingConfig: { includeThoughts: true } } }).thinking, true);
  });

  it('sees an image in inline data, a file, or a function response; tools only when offered', () => {
    assert.deepEqual(geminiTraits(base), { thinking: false, hasImages: false, hasTools: false });
    const pdf: GeminiRequest = { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data: 'JVBE' } }] }], tools: [] };
    assert.equal(geminiTraits(pdf).hasImages, false);
    assert.equal(geminiTraits(pdf).hasTools, false);
    const inline: GeminiRequest = { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: PNG.data } }] }], tools: [{ functionDeclarations: [{ name: 'f' }] }] };
    assert.deepEqual(geminiTraits(inline), { thinking: false, hasImages: true, hasTools: true });
    const file: GeminiRequest = { contents: [{ role: 'user', parts: [{ fileData: { mimeType: 'image/jpeg', fileUri: 'gs://b/x.jpg' } }] }] };
    assert.equal(geminiTraits(file).hasImages, true);
    const screenshot: GeminiRequest = {
      contents: [{ role: 'user', parts: [{ functionResponse: { name: 'shot', response: {}, parts: [{ inlineData: { mimeType: 'image/png', data: PNG.data } }] } }] }],
    };
    assert.equal(geminiTraits(screenshot).hasImages, true);
  });
});
