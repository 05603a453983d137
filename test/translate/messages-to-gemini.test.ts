import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';
import { validateMessagesRequest } from '../../src/formats/messages.ts';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { messagesRequestToGemini } from '../../src/translate/messages-to-gemini.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';

const MODEL: UpstreamModel = { upstreamId: 'gemini-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 65536 };
const REASONING: UpstreamModel = { ...MODEL, reasoning: true };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const SKIP = 'skip_thought_signature_validator';

function translate(body: Record<string, unknown>, model = MODEL): { out: GeminiRequest; warnings: string[] } {
  const warnings: string[] = [];
  const request: MessagesRequest = validateMessagesRequest({ model: 'client-model', max_tokens: 1000, messages: [{ role: 'user', content: 'Hi' }], ...body }, { interleavedThinking: true });
  const out = messagesRequestToGemini(request, model, { onWarning: (message) => warnings.push(message) });
  validateGeminiRequest(JSON.parse(JSON.stringify(out)));
  return { out, warnings };
}

describe('messagesRequestToGemini: contents and roles', () => {
  it('makes system the system instruction, merges same-role turns and keeps a mid-conversation system turn as user text', () => {
    const { out } = translate({
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'Be kind.' }],
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'user', content: [{ type: 'text', text: 'Anyone?' }] },
        { role: 'assistant', content: 'Hello.' },
        { role: 'system', content: 'Reminder: French.' },
        { role: 'user', content: 'Ça va?' },
      ],
    });
    assert.deepEqual(out.systemInstruction, { parts: [{ text: 'Be brief.\n\nBe kind.' }] });
    assert.deepEqual(out.contents, [
      { role: 'user', parts: [{ text: 'Hi' }, { text: 'Anyone?' }] },
      { role: 'model', parts: [{ text: 'Hello.' }] },
      { role: 'user', parts: [{ text: 'Reminder: French.' }, { text: 'Ça va?' }] },
    ]);
  });

  it('sends images and documents inline or as files, and text documents as text', () => {
    const { out } = translate({
      messages: [{ role: 'user', content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.gif' } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
        { type: 'document', source: { type: 'url', url: 'https://example.com/paper' } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
      ] }],
    });
    assert.deepEqual(out.contents[0]?.parts, [
      { inlineData: { mimeType: 'image/png', data: PNG } },
      { fileData: { mimeType: 'image/gif', fileUri: 'https://example.com/a.gif' } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
      { fileData: { mimeType: 'application/pdf', fileUri: 'https://example.com/paper' } },
      { text: 'plain words' },
    ]);
  });
});

describe('messagesRequestToGemini: tools and calls', () => {
  const tool = { name: 'read_file', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };

  it('declares custom tools with their schema as parametersJsonSchema', () => {
    const { out } = translate({ tools: [tool] });
    assert.deepEqual(out.tools, [{ functionDeclarations: [{ name: 'read_file', description: 'Reads a file', parametersJsonSchema: tool.input_schema }] }]);
  });

  it("maps Anthropic's server tools to Gemini's own and drops other Anthropic-defined tools", () => {
    const { out, warnings } = translate({
      tools: [tool, { type: 'web_search_20250305', name: 'web_search' }, { type: 'web_fetch_20250910', name: 'web_fetch' }, { type: 'code_execution_20250825', name: 'code_execution' }, { type: 'bash_20250124', name: 'bash' }],
      tool_choice: { type: 'tool', name: 'bash' },
    });
    assert.deepEqual(out.tools, [{ googleSearch: {} }, { urlContext: {} }, { codeExecution: {} }, { functionDeclarations: [{ name: 'read_file', description: 'Reads a file', parametersJsonSchema: tool.input_schema }] }]);
    assert.equal(out.toolConfig, undefined);
    assert.deepEqual(warnings, [
      'tools.4: dropped, "bash_20250124" is an Anthropic-defined tool, which a Gemini upstream cannot run',
      'tool_choice: dropped, it names tool "bash", which a Gemini upstream cannot run',
    ]);
  });

  it('maps tool_choice to function-calling modes', () => {
    const mode = (tool_choice: Record<string, unknown>) => translate({ tools: [tool], tool_choice }).out.toolConfig;
    assert.deepEqual(mode({ type: 'auto' }), { functionCallingConfig: { mode: 'AUTO' } });
    assert.deepEqual(mode({ type: 'any' }), { functionCallingConfig: { mode: 'ANY' } });
    assert.deepEqual(mode({ type: 'none' }), { functionCallingConfig: { mode: 'NONE' } });
    assert.deepEqual(mode({ type: 'tool', name: 'read_file' }), { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['read_file'] } });
    assert.deepEqual(translate({ tools: [tool], tool_choice: { type: 'auto', disable_parallel_tool_use: true } }).warnings, [
      'tool_choice.disable_parallel_tool_use: dropped, a Gemini upstream cannot be told to call one function at a time',
    ]);
  });

  it('sends tool_use as calls with their ids and tool_result as named responses, images after them', () => {
    const { out } = translate({
      tools: [tool],
      messages: [
        { role: 'user', content: 'Read a and b' },
        { role: 'assistant', content: [
          { type: 'thinking', thinking: 'Two files.', signature: 'anthropic-signature' },
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } },
          { type: 'tool_use', id: 'toolu_2', name: 'read_file', input: { path: 'b' } },
        ] },
        { role: 'user', content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'A' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'missing', is_error: true },
        ] },
      ],
    });
    assert.deepEqual(out.contents.slice(1), [
      { role: 'model', parts: [
        { text: 'Reading.' },
        { functionCall: { id: 'toolu_1', name: 'read_file', args: { path: 'a' } }, thoughtSignature: SKIP },
        { functionCall: { id: 'toolu_2', name: 'read_file', args: { path: 'b' } } },
      ] },
      { role: 'user', parts: [
        { functionResponse: { id: 'toolu_1', name: 'read_file', response: { output: 'A' } } },
        { inlineData: { mimeType: 'image/png', data: PNG } },
        { functionResponse: { id: 'toolu_2', name: 'read_file', response: { error: 'missing' } } },
      ] },
    ]);
  });

  it('sends a result whose call is not in the history as user text, with a warning', () => {
    const { out, warnings } = translate({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_3' }, { type: 'text', text: 'Go on' }] }] });
    assert.deepEqual(out.contents, [{ role: 'user', parts: [{ text: 'Output of tool call toolu_3:\n' }, { text: 'Go on' }] }]);
    assert.deepEqual(warnings, ['messages.0.content.0: answers tool_use "toolu_3", which is not in the messages; sent as user text']);
  });
});

describe('messagesRequestToGemini: generation config and thinking', () => {
  it('maps max_tokens, sampling and stop sequences, cutting them to five', () => {
    const { out, warnings } = translate({ max_tokens: 700, temperature: 0.3, top_p: 0.9, top_k: 40, stop_sequences: ['a', 'b', 'c', 'd', 'e', 'f'], metadata: { user_id: 'u' } });
    assert.deepEqual(out.generationConfig, { maxOutputTokens: 700, temperature: 0.3, topP: 0.9, topK: 40, stopSequences: ['a', 'b', 'c', 'd', 'e'] });
    assert.deepEqual(warnings, ['stop_sequences: only the first 5 are sent, the most a Gemini upstream takes']);
  });

  it('maps enabled, adaptive and disabled thinking, for reasoning models only', () => {
    const thinking = (body: Record<string, unknown>, model = REASONING) => translate({ max_tokens: 64000, ...body }, model).out.generationConfig?.thinkingConfig;
    assert.deepEqual(thinking({ thinking: { type: 'enabled', budget_tokens: 4000 } }), { thinkingBudget: 4000, includeThoughts: true });
    assert.deepEqual(thinking({ thinking: { type: 'enabled', budget_tokens: 50000 } }), { thinkingBudget: 24576, includeThoughts: true });
    assert.deepEqual(thinking({ thinking: { type: 'adaptive' } }), { thinkingBudget: -1, includeThoughts: true });
    assert.deepEqual(thinking({ thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }), { thinkingBudget: 1024, includeThoughts: true });
    assert.deepEqual(thinking({ thinking: { type: 'disabled' } }), { thinkingBudget: 0 });
    assert.equal(thinking({ thinking: { type: 'enabled', budget_tokens: 4000 } }, MODEL), undefined);
    assert.deepEqual(translate({ max_tokens: 3000, thinking: { type: 'enabled', budget_tokens: 2500 } }, REASONING).out.generationConfig?.thinkingConfig, { thinkingBudget: 1500, includeThoughts: true });
  });

  it("turns Anthropic's structured outputs into Gemini's JSON mode and drops other output settings", () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    const { out, warnings } = translate({ output_config: { format: { type: 'json_schema', schema }, effort: 'high', verbosity: 'low' } });
    assert.deepEqual(out.generationConfig, { maxOutputTokens: 1000, responseMimeType: 'application/json', responseJsonSchema: schema });
    assert.deepEqual(warnings, ['output_config.verbosity: dropped, a Gemini upstream has no equivalent']);
  });

  it('refuses a thread continuation and drops a thread creation with a warning', () => {
    assert.throws(() => translate({ thread: { type: 'continue', id: 'thr_1' } }), (error: unknown) => error instanceof GatewayError && error.code === 'thread_unsupported_request');
    assert.deepEqual(translate({ thread: { type: 'create' } }).warnings, ['thread: dropped, a Gemini upstream keeps no message threads (the request carries the whole history)']);
  });

  it('drops fields newer than this file, and server tool blocks in history, with warnings', () => {
    const { warnings } = translate({
      context_management: { edits: [] },
      messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'server_tool_use', id: 's1', name: 'web_search', input: {} }] }, { role: 'user', content: 'y' }],
    });
    assert.deepEqual(warnings, ['context_management: dropped, a Gemini upstream has no equivalent', 'messages.1.content.0: dropped, a Gemini upstream has nothing for a "server_tool_use" block in a model turn']);
  });
});
