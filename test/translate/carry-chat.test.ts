import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatMessage } from '../../src/formats/wire.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import type { CarriedRecord } from '../../src/translate/carried.ts';
import { carryChatHistory, carryIntoChatMessage, fillChatGaps, stripForeign } from '../../src/translate/carry-chat.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI, OPENROUTER, reader } from '../helpers/carry.ts';

const MODEL: UpstreamModel = { upstreamId: 'up', reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 0 };
const REPLAY: UpstreamModel = { ...MODEL, replayReasoning: true };

function call(id: string, extra?: Record<string, unknown>): NonNullable<ChatMessage['tool_calls']>[number] {
  return { id, type: 'function', function: { name: 'lookup', arguments: '{}' }, ...(extra === undefined ? {} : { extra_content: extra }) };
}

function history(): ChatMessage[] {
  return [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] },
    { role: 'tool', tool_call_id: 'c1', content: 'r' },
    { role: 'tool', tool_call_id: 'c2', content: 'r' },
    { role: 'assistant', content: null, tool_calls: [call('c3')] },
    { role: 'tool', tool_call_id: 'c3', content: 'r' },
  ];
}

describe('carried state into a chat message', () => {
  it('puts a thought signature on the call it names, else the first call without one', () => {
    const message: ChatMessage = { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] };
    assert.equal(carryIntoChatMessage(message, [{ kind: 'thought-signature', signature: 's2', callId: 'c2' }, { kind: 'thought-signature', signature: 's1' }], MODEL), true);
    assert.deepEqual(message.tool_calls?.map((c) => c.extra_content), [{ google: { thought_signature: 's1' } }, { google: { thought_signature: 's2' } }]);
    assert.equal(carryIntoChatMessage(message, [{ kind: 'thought-signature', signature: 's2', callId: 'c2' }], MODEL), false, 'already there: nothing changes');
  });

  it('puts reasoning details on the message whole, over a client\'s own cut copy, and reasoning text only for a replay_reasoning model', () => {
    const details = [{ type: 'reasoning.text', text: 'whole', index: 0 }, { type: 'reasoning.encrypted', data: 'e', index: 1 }];
    const message: ChatMessage = { role: 'assistant', content: null, tool_calls: [call('c1')], reasoning_details: [{ type: 'reasoning.encrypted', data: 'e', index: 1 }], reasoning_content: 'cut' };
    carryIntoChatMessage(message, [{ kind: 'reasoning-details', details }, { kind: 'reasoning', text: 'the whole reasoning' }], MODEL);
    assert.deepEqual(message['reasoning_details'], details);
    assert.equal(message.reasoning_content, 'cut');
    carryIntoChatMessage(message, [{ kind: 'reasoning', text: 'the whole reasoning' }], REPLAY);
    assert.equal(message.reasoning_content, 'the whole reasoning');
  });

  it('ignores signed thinking: no chat upstream reads it', () => {
    const message: ChatMessage = { role: 'assistant', content: 'x' };
    assert.equal(carryIntoChatMessage(message, [{ kind: 'thinking', thinking: 't', signature: 's' }, { kind: 'redacted-thinking', data: 'd' }], MODEL), false);
    assert.deepEqual(message, { role: 'assistant', content: 'x' });
  });
});

describe('what another family cannot read, and what the target needs', () => {
  it('takes a client\'s own Gemini extra_content and reasoning_details out for an upstream of another family, keeping other vendor data', () => {
    const messages: ChatMessage[] = [{ role: 'assistant', content: null, tool_calls: [call('c1', { google: { thought_signature: 'g' }, other: 1 })], reasoning_details: [] }];
    const warnings: string[] = [];
    const carry = reader(DEEPSEEK, warnings);
    assert.equal(stripForeign(messages, carry), true);
    assert.deepEqual(messages[0]?.tool_calls?.[0]?.extra_content, { other: 1 });
    assert.equal('reasoning_details' in (messages[0] ?? {}), false);
    carry.finish();
    assert.equal(warnings.length, 2);
    const kept: ChatMessage[] = [{ role: 'assistant', content: null, tool_calls: [call('c1', { google: { thought_signature: 'g' } })] }];
    assert.equal(stripForeign(kept, reader(GEMINI)), false);
  });

  it('gives a Gemini upstream the placeholder on the first call of each step of the current turn only', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'earlier' },
      { role: 'assistant', content: null, tool_calls: [call('c0')] },
      { role: 'tool', tool_call_id: 'c0', content: 'r' },
      ...history(),
    ];
    assert.equal(fillChatGaps(messages, MODEL, reader(GEMINI)), true);
    const signed = messages.flatMap((message) => (message.tool_calls ?? []).map((c) => [c.id, c.extra_content !== undefined]));
    assert.deepEqual(signed, [['c0', false], ['c1', true], ['c2', false], ['c3', true]]);
  });

  it('gives a replay_reasoning upstream an empty reasoning_content on every tool-call turn that has none', () => {
    const messages = history();
    assert.equal(fillChatGaps(messages, REPLAY, reader(DEEPSEEK)), true);
    assert.deepEqual(messages.filter((message) => message.role === 'assistant').map((message) => message.reasoning_content), ['', '']);
    assert.equal(fillChatGaps(history(), MODEL, reader(ANTHROPIC)), false);
  });
});

describe('a chat client\'s history to a chat upstream', () => {
  it('gets what the store recalled back on copies of its messages, never changing the client\'s', () => {
    const messages = history();
    const before = JSON.stringify(messages);
    const recalled = new Map<string, CarriedRecord>([
      ['c1', { issuer: GEMINI, call: { kind: 'thought-signature', signature: 'g1', callId: 'c1' } }],
      ['c3', { issuer: GEMINI, call: { kind: 'thought-signature', signature: 'g3', callId: 'c3' } }],
    ]);
    const carried = carryChatHistory(messages, recalled, MODEL, reader(GEMINI));
    assert.equal(JSON.stringify(messages), before);
    assert.deepEqual(carried?.flatMap((message) => (message.tool_calls ?? []).map((c) => c.extra_content)), [
      { google: { thought_signature: 'g1' } }, undefined, { google: { thought_signature: 'g3' } },
    ]);
  });

  it('changes nothing (undefined) for a plain conversation, or one whose state is already as the target wants it', () => {
    assert.equal(carryChatHistory([{ role: 'user', content: 'hi' }], new Map(), MODEL, reader(OPENROUTER)), undefined);
    assert.equal(carryChatHistory(history(), new Map(), MODEL, reader(ANTHROPIC)), undefined);
  });

  it('strips a recalled record of another family and counts it', () => {
    const warnings: string[] = [];
    const carry = reader(DEEPSEEK, warnings);
    const carried = carryChatHistory(history(), new Map([['c1', { issuer: GEMINI, call: { kind: 'thought-signature' as const, signature: 'g1', callId: 'c1' } }]]), REPLAY, carry);
    carry.finish();
    assert.equal(JSON.stringify(carried).includes('g1'), false);
    assert.match(warnings.join('\n'), /issued by provider "gemini-up" \(family gemini\) stripped/);
  });
});
