import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatConversationKey, geminiConversationKey, messagesConversationKey, responseConversationKey, responsesConversationKey } from '../../src/formats/conversation-key.ts';
import type { ChatRequest, MessagesRequest } from '../../src/formats/wire.ts';
import type { ResponsesRequest } from '../../src/formats/responses-types.ts';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';

describe('the conversation key of a chat request', () => {
  it('is its prompt_cache_key when it has one', () => {
    assert.equal(chatConversationKey({ model: 'm', messages: [{ role: 'user', content: 'hi' }], prompt_cache_key: 'conv-7' }), 'cache:conv-7');
  });

  it('else hashes the system prompt and the first user message: the same on every turn, different for another conversation', () => {
    const turn1: ChatRequest = { model: 'm', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Plan a trip' }] };
    const turn3: ChatRequest = {
      model: 'm',
      messages: [...turn1.messages, { role: 'assistant', content: 'Where to?' }, { role: 'user', content: 'Rome' }],
    };
    const key = chatConversationKey(turn1);
    assert.match(key ?? '', /^prompt:[A-Za-z0-9_-]{22}$/);
    assert.equal(chatConversationKey(turn3), key);
    assert.notEqual(chatConversationKey({ model: 'm', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Plan a party' }] }), key);
    assert.notEqual(chatConversationKey({ model: 'm', messages: [{ role: 'system', content: 'You are verbose.' }, { role: 'user', content: 'Plan a trip' }] }), key);
    assert.equal(chatConversationKey({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'Plan a trip' }] }] }) === key, false);
  });

  it('does not let the boundary between system and user text move without changing the key', () => {
    const a = chatConversationKey({ model: 'm', messages: [{ role: 'system', content: 'ab' }, { role: 'user', content: 'c' }] });
    const b = chatConversationKey({ model: 'm', messages: [{ role: 'system', content: 'a' }, { role: 'user', content: 'bc' }] });
    assert.notEqual(a, b);
  });
});

describe('the conversation key of a messages request', () => {
  it('is its metadata.user_id (Claude Code\'s carries the session), else the prompt hash', () => {
    const request: MessagesRequest = { model: 'm', max_tokens: 10, system: [{ type: 'text', text: 'sys' }], messages: [{ role: 'user', content: 'hello' }] };
    assert.equal(messagesConversationKey({ ...request, metadata: { user_id: 'user_abc_account_x_session_y' } }), 'user:user_abc_account_x_session_y');
    const key = messagesConversationKey(request);
    assert.match(key ?? '', /^prompt:/);
    assert.equal(messagesConversationKey({ ...request, messages: [...request.messages, { role: 'assistant', content: 'hi' }, { role: 'user', content: 'more' }] }), key);
    assert.notEqual(messagesConversationKey({ ...request, system: 'other' }), key);
  });

  it('hashes an image by its type only, not its bytes', () => {
    const image = (data: string): MessagesRequest => ({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }] });
    assert.equal(messagesConversationKey(image('AAAA')), messagesConversationKey(image('BBBB')));
  });
});

describe('the conversation key of a Responses request', () => {
  it('follows a previous_response_id chain, then prompt_cache_key, then the prompt', () => {
    const base: ResponsesRequest = { model: 'm', instructions: 'be kind', input: 'hello' };
    assert.equal(responsesConversationKey({ ...base, previous_response_id: 'resp_1', prompt_cache_key: 'k' }), responseConversationKey('resp_1'));
    assert.equal(responsesConversationKey({ ...base, prompt_cache_key: 'k' }), 'cache:k');
    const asText = responsesConversationKey(base);
    const asItems = responsesConversationKey({ ...base, input: [{ role: 'developer', content: 'extra' }, { role: 'user', content: 'hello' }, { type: 'function_call_output', call_id: 'c', output: 'x' }] });
    assert.match(asText ?? '', /^prompt:/);
    assert.notEqual(asItems, asText, 'a developer message is part of the system prompt');
    assert.equal(responsesConversationKey({ ...base, input: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }] }), responsesConversationKey({ ...base, input: [{ role: 'user', content: 'hello' }] }));
  });

  it('has none for a request with neither system prompt nor user message', () => {
    assert.equal(responsesConversationKey({ model: 'm', input: [] }), undefined);
    assert.equal(chatConversationKey({ model: 'm', messages: [{ role: 'assistant', content: 'x' }] }), undefined);
  });
});

describe('the conversation key of a Gemini request', () => {
  it('hashes the system instruction and the first user content: the same on every turn, different for another conversation', () => {
    const first: GeminiRequest = { systemInstruction: { parts: [{ text: 'be brief' }] }, contents: [{ role: 'user', parts: [{ text: 'list files' }] }] };
    const later: GeminiRequest = {
      ...first,
      contents: [...first.contents, { role: 'model', parts: [{ functionCall: { name: 'ls', args: {} } }] }, { role: 'user', parts: [{ functionResponse: { name: 'ls', response: {} } }] }],
    };
    const key = geminiConversationKey(first);
    assert.match(key ?? '', /^prompt:[\w-]{22}$/);
    assert.equal(geminiConversationKey(later), key);
    assert.notEqual(geminiConversationKey({ ...first, contents: [{ role: 'user', parts: [{ text: 'list dirs' }] }] }), key);
    assert.notEqual(geminiConversationKey({ ...first, systemInstruction: { parts: [{ text: 'be long' }] } }), key);
  });

  it('has none for a request with neither system instruction nor user content', () => {
    assert.equal(geminiConversationKey({ contents: [] }), undefined);
  });
});
