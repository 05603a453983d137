import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import { carryMessagesHistory } from '../../src/translate/carry-messages.ts';
import { ANTHROPIC, GEMINI, KEY_B, reader, sealed } from '../helpers/carry.ts';

function request(blocks: unknown[], thinking = true): MessagesRequest {
  return {
    model: 'm',
    max_tokens: 2048,
    ...(thinking ? { thinking: { type: 'enabled' as const, budget_tokens: 1024 } } : {}),
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: blocks as MessagesRequest['messages'][number]['content'] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'r' }] },
    ],
  };
}

const CALL = { type: 'tool_use', id: 'c1', name: 'lookup', input: {} };

describe('a messages client\'s history to a messages upstream', () => {
  it('goes on as it is (undefined) without llmux seals: Anthropic\'s own signatures are not llmux\'s', () => {
    const body = request([{ type: 'thinking', thinking: 't', signature: 'EqQBanthropic' }, CALL]);
    assert.equal(carryMessagesHistory(body, reader(ANTHROPIC), () => {}), undefined);
    assert.equal(carryMessagesHistory(request([{ type: 'thinking', thinking: 't', signature: sealed({ kind: 'reasoning' }, GEMINI) }, CALL]), reader(ANTHROPIC), () => {}, false), undefined, 'the bytes said no seal is there');
  });

  it('gives back the signed block a seal holds when a messages upstream issued it', () => {
    const body = request([{ type: 'thinking', thinking: 'shown', signature: sealed({ kind: 'thinking', thinking: 'signed', signature: 'sig' }) }, CALL]);
    const carried = carryMessagesHistory(body, reader(ANTHROPIC), () => {});
    assert.deepEqual(carried?.messages[1]?.content, [{ type: 'thinking', thinking: 'signed', signature: 'sig' }, CALL]);
    assert.deepEqual(carried?.thinking, { type: 'enabled', budget_tokens: 1024 }, 'thinking stays: the turn starts with signed thinking');
  });

  it('takes another family\'s and another key\'s sealed blocks out, turning thinking off (and saying so) when the continued turn is left unsigned, without changing the client\'s body', () => {
    const body = request([{ type: 'thinking', thinking: '', signature: sealed({ kind: 'thought-signature', signature: 'g', callId: 'c1' }, GEMINI) }, { type: 'thinking', thinking: 'x', signature: sealed({ kind: 'thinking', thinking: 'x', signature: 's' }, ANTHROPIC, KEY_B) }, CALL]);
    const before = JSON.stringify(body);
    const warnings: string[] = [];
    const carry = reader(ANTHROPIC, warnings);
    const carried = carryMessagesHistory(body, carry, (message) => warnings.push(message));
    carry.finish();
    assert.equal(JSON.stringify(body), before);
    assert.deepEqual(carried?.messages[1]?.content, [CALL]);
    assert.equal(carried?.thinking, undefined);
    assert.equal(warnings.length, 3);
    assert.match(warnings[0] ?? '', /^thinking turned off for this request/);
  });

  it('keeps thinking when the request does not continue a tool loop, or had it off already', () => {
    const text = { type: 'text', text: 'hi' };
    const noLoop: MessagesRequest = { ...request([{ type: 'thinking', thinking: '', signature: sealed({ kind: 'reasoning' }, GEMINI) }, text]), messages: [{ role: 'user', content: 'go' }, { role: 'assistant', content: [{ type: 'thinking', thinking: '', signature: sealed({ kind: 'reasoning' }, GEMINI) }, text] as never }, { role: 'user', content: 'more' }] };
    assert.deepEqual(carryMessagesHistory(noLoop, reader(ANTHROPIC), () => {})?.thinking, { type: 'enabled', budget_tokens: 1024 });
    const emptied = carryMessagesHistory(request([{ type: 'thinking', thinking: '', signature: sealed({ kind: 'reasoning' }, GEMINI) }], false), reader(ANTHROPIC), () => {});
    assert.deepEqual(emptied?.messages[1]?.content, [{ type: 'text', text: '.' }], 'an emptied turn keeps its place');
  });
});
