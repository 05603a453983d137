import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnswerEvents } from '../../src/translate/answer-events.ts';
import type { CarriedItem } from '../../src/translate/carried.ts';
import { createMessagesEncoder } from '../../src/translate/messages-encoder.ts';
import { assembleMessagesStream } from '../helpers/assemble.ts';

const SEAL = (item: CarriedItem): string => `seal:${JSON.stringify(item)}`;

/** The same events told to a streaming and a whole encoder: the content blocks the stream assembles, and the whole answer's. */
function both(tell: (sink: AnswerEvents) => void): { streamed: unknown[]; whole: unknown[] } {
  let output = '';
  const streaming = createMessagesEncoder({ write: (text) => (output += text), messageId: 'msg_t', sealItem: SEAL });
  const whole = createMessagesEncoder({ messageId: 'msg_t', sealItem: SEAL });
  tell(streaming);
  tell(whole);
  return { streamed: (assembleMessagesStream(output)?.['content'] ?? []) as unknown[], whole: whole.answer().content };
}

describe('the messages encoder\'s thinking signatures', () => {
  it('seals a chat upstream\'s plain reasoning as the provider\'s, and its reasoning details whole', () => {
    const details = [{ type: 'reasoning.encrypted', data: 'e' }];
    const { streamed, whole } = both((sink) => {
      sink.reasoning('Plain.');
      sink.text('a');
      sink.reasoning('Detailed.');
      sink.reasoningEnd({ kind: 'reasoning-details', details });
      sink.stop({ reason: 'end_turn' });
      sink.end();
    });
    const expected = [
      { type: 'thinking', thinking: 'Plain.', signature: SEAL({ kind: 'reasoning' }) },
      { type: 'text', text: 'a' },
      { type: 'thinking', thinking: 'Detailed.', signature: SEAL({ kind: 'reasoning-details', details }) },
    ];
    assert.deepEqual(streamed, expected);
    assert.deepEqual(whole, expected);
  });

  it('puts a call\'s own state (a Gemini thought signature) in a thinking block with no text right before the call, naming the call', () => {
    const { streamed, whole } = both((sink) => {
      sink.callStart({ id: 'call_1', name: 'f', state: { kind: 'thought-signature', signature: 'g' } });
      sink.callArguments('{}');
      sink.callEnd();
      sink.callStart({ id: 'call_2', name: 'f' });
      sink.callEnd();
      sink.stop({ reason: 'tool_use' });
      sink.end();
    });
    const expected = [
      { type: 'thinking', thinking: '', signature: SEAL({ kind: 'thought-signature', signature: 'g', callId: 'call_1' }) },
      { type: 'tool_use', id: 'call_1', name: 'f', caller: { type: 'direct' }, input: {} },
      { type: 'tool_use', id: 'call_2', name: 'f', caller: { type: 'direct' }, input: {} },
    ];
    assert.deepEqual(streamed, expected);
    assert.deepEqual(whole, expected);
  });

  it('seals a Gemini thought part\'s signature with its thinking, for no call in particular', () => {
    const { streamed, whole } = both((sink) => {
      sink.reasoning('Gemini thought.');
      sink.reasoningEnd({ kind: 'thought-signature', signature: 'g' });
      sink.stop({ reason: 'end_turn' });
      sink.end();
    });
    const expected = [{ type: 'thinking', thinking: 'Gemini thought.', signature: SEAL({ kind: 'thought-signature', signature: 'g' }) }];
    assert.deepEqual(streamed, expected);
    assert.deepEqual(whole, expected);
  });

  it('writes the messages format\'s own state as it came, and without sealItem signs nothing', () => {
    const { whole } = both((sink) => {
      sink.reasoning('t');
      sink.reasoningEnd({ kind: 'thinking-signature', signature: 'anthropic-sig' });
      sink.reasoningEnd({ kind: 'redacted-thinking', data: 'd' });
      sink.end();
    });
    assert.deepEqual(whole, [{ type: 'thinking', thinking: 't', signature: 'anthropic-sig' }, { type: 'redacted_thinking', data: 'd' }]);
    const plain = createMessagesEncoder({});
    plain.reasoning('t');
    plain.callStart({ id: 'c', name: 'f', state: { kind: 'thought-signature', signature: 'g' } });
    plain.end();
    assert.deepEqual(plain.answer().content, [{ type: 'thinking', thinking: 't', signature: '' }, { type: 'tool_use', id: 'c', name: 'f', caller: { type: 'direct' }, input: {} }]);
  });
});
