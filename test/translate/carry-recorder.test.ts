import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CarriedRecord } from '../../src/translate/carried.ts';
import { createCarryRecorder } from '../../src/translate/carry-recorder.ts';
import { createChatEncoder } from '../../src/translate/chat-encoder.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI } from '../helpers/carry.ts';

function recorder(issuer = ANTHROPIC): { remembered: Array<[string, CarriedRecord]>; events: ReturnType<typeof createCarryRecorder> } {
  const remembered: Array<[string, CarriedRecord]> = [];
  return { remembered, events: createCarryRecorder(issuer, (id, record) => remembered.push([id, record])) };
}

describe('the carry recorder', () => {
  it('keeps the reasoning before a call with that call, and each call\'s own state with it', () => {
    const { remembered, events } = recorder(GEMINI);
    events.reasoning('Plan.');
    events.callStart({ id: 'c1', name: 'f', state: { kind: 'thought-signature', signature: 's1' } });
    events.callStart({ id: 'c2', name: 'f' });
    events.reasoning('Late.');
    assert.deepEqual(remembered, [['c1', { issuer: GEMINI, message: [{ kind: 'reasoning', text: 'Plan.' }], call: { kind: 'thought-signature', signature: 's1', callId: 'c1' } }]]);
  });

  it('keeps Anthropic\'s signed thinking and redacted blocks, and reasoning details with their text', () => {
    const { remembered, events } = recorder();
    events.reasoning('Signed.');
    events.reasoningEnd({ kind: 'thinking-signature', signature: 'sig' });
    events.reasoningEnd({ kind: 'redacted-thinking', data: 'd' });
    events.callStart({ id: 'c1', name: 'f' });
    assert.deepEqual(remembered[0]?.[1].message, [{ kind: 'thinking', thinking: 'Signed.', signature: 'sig' }, { kind: 'redacted-thinking', data: 'd' }]);
    const details = recorder(DEEPSEEK);
    details.events.reasoning('R.');
    details.events.reasoningEnd({ kind: 'reasoning-details', details: [{ index: 0 }] });
    details.events.callStart({ id: 'c2', name: 'f' });
    assert.deepEqual(details.remembered[0]?.[1].message, [{ kind: 'reasoning-details', details: [{ index: 0 }] }, { kind: 'reasoning', text: 'R.' }]);
  });

  it('keeps a Gemini thought part\'s signature with the next call, for it to go back on a call without one', () => {
    const { remembered, events } = recorder(GEMINI);
    events.reasoning('Thought.');
    events.reasoningEnd({ kind: 'thought-signature', signature: 'g' });
    events.callStart({ id: 'c1', name: 'f' });
    assert.deepEqual(remembered, [['c1', { issuer: GEMINI, message: [{ kind: 'thought-signature', signature: 'g' }, { kind: 'reasoning', text: 'Thought.' }] }]]);
  });

  it('is told by the chat encoder with the call ids the client sees, made-up ones included', () => {
    const { remembered, events } = recorder();
    const encoder = createChatEncoder({ recorder: events });
    encoder.reasoning('Think.');
    encoder.reasoningEnd({ kind: 'thinking-signature', signature: 'sig' });
    encoder.callStart({ id: undefined, name: 'f', madeUpIdPrefix: 'call_' });
    encoder.end();
    const id = encoder.answer().choices[0]?.message.tool_calls?.[0]?.id;
    assert.match(String(id), /^call_/);
    assert.deepEqual(remembered, [[id, { issuer: ANTHROPIC, message: [{ kind: 'thinking', thinking: 'Think.', signature: 'sig' }] }]]);
  });
});
