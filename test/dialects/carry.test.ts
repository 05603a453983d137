import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_RECALLED, carryTurnOf, chatCallIds, chatCarryOf } from '../../src/dialects/carry.ts';
import { createMemoryCarriedStore } from '../../src/carry/store.ts';
import type { CarriedStore } from '../../src/carry/store.ts';
import { createSealer } from '../../src/responses/seal.ts';
import type { ChatRequest } from '../../src/formats/wire.ts';
import { ANTHROPIC, GEMINI, KEY_A, KEY_B, TEST_SEALER } from '../helpers/carry.ts';

function chat(ids: string[]): ChatRequest {
  return { model: 'm', messages: [{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } })) }] };
}

describe('a turn\'s seals', () => {
  it('open for the key they were issued to, with their issuer, and for no other', () => {
    const sealed = carryTurnOf(TEST_SEALER, KEY_A).seal(GEMINI, { kind: 'thought-signature', signature: 'g', callId: 'c' });
    assert.deepEqual(carryTurnOf(TEST_SEALER, KEY_A).open(sealed), { state: 'open', carried: { issuer: GEMINI, item: { kind: 'thought-signature', signature: 'g', callId: 'c' } } });
    assert.deepEqual(carryTurnOf(TEST_SEALER, KEY_B).open(sealed), { state: 'other-key' });
  });

  it('are unreadable when they do not open, hold no item llmux knows, or are an earlier llmux\'s', () => {
    const turn = carryTurnOf(TEST_SEALER, KEY_A);
    for (const sealed of [
      createSealer(Buffer.alloc(32, 1)).seal({ k: KEY_A, p: 'p', f: 'f', i: { kind: 'reasoning' } }),
      TEST_SEALER.seal({ k: KEY_A, p: 'p', f: 'f', i: { kind: 'unknown' } }),
      TEST_SEALER.seal({ k: KEY_A, i: { kind: 'reasoning' } }),
      'llmux.v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ]) assert.deepEqual(turn.open(sealed), { state: 'unreadable' });
  });
});

describe('a turn\'s prompt cache key', () => {
  it('is asked of the request\'s conversation only when first read, once, and is the same as from the conversation given at once', () => {
    let asked = 0;
    const turn = carryTurnOf(TEST_SEALER, KEY_A, () => {
      asked++;
      return 'prompt:abc';
    });
    assert.equal(asked, 0);
    assert.equal(turn.cacheKey, carryTurnOf(TEST_SEALER, KEY_A, 'prompt:abc').cacheKey);
    assert.notEqual(turn.cacheKey, undefined);
    assert.equal(asked, 1);
  });

  it('of a chat turn, is none when the client gave its own, and its conversation is then not asked', async () => {
    const store = createMemoryCarriedStore({ now: () => 0 });
    let asked = 0;
    const { turn } = await chatCarryOf({ ...chat([]), prompt_cache_key: 'mine' }, KEY_A, TEST_SEALER, store, undefined, () => {
      asked++;
      return 'cache:mine';
    });
    assert.equal(turn.cacheKey, undefined);
    assert.equal(asked, 0);
  });
});

describe('a chat turn', () => {
  it('recalls the state of its assistant messages\' calls, its latest MAX_RECALLED', async () => {
    assert.deepEqual(chatCallIds(chat(['a', 'b'])), ['a', 'b']);
    const many = Array.from({ length: MAX_RECALLED + 5 }, (_, i) => `c${i}`);
    const ids = chatCallIds(chat(many));
    assert.equal(ids.length, MAX_RECALLED);
    assert.equal(ids[0], 'c5');
    const store = createMemoryCarriedStore();
    await store.put(KEY_A, 'a', JSON.stringify({ issuer: ANTHROPIC, message: [{ kind: 'thinking', thinking: 't', signature: 's' }] }));
    await store.put(KEY_A, 'b', 'not a record');
    const { turn } = await chatCarryOf(chat(['a', 'b']), KEY_A, TEST_SEALER, store);
    assert.deepEqual([...turn.recalled], [['a', { issuer: ANTHROPIC, message: [{ kind: 'thinking', thinking: 't', signature: 's' }] }]]);
  });

  it('remembers the answer\'s calls at once, and finishing waits for the writes; a store that fails costs the state, not the request', async () => {
    const store = createMemoryCarriedStore();
    const carry = chatCarryOf(chat([]), KEY_A, TEST_SEALER, store);
    assert.ok(!(carry instanceof Promise), 'a body with no calls to recall reads nothing from the store: its turn is there at once');
    const { turn, settled } = carry;
    turn.remember('new', { issuer: GEMINI, call: { kind: 'thought-signature', signature: 'g' } });
    await settled();
    assert.equal((await store.get(KEY_A, ['new'])).size, 1);
    const broken: CarriedStore = { get: () => Promise.reject(new Error('down')), put: () => Promise.reject(new Error('down')) };
    const failing = await chatCarryOf(chat(['a']), KEY_A, TEST_SEALER, broken);
    assert.equal(failing.turn.recalled.size, 0);
    failing.turn.remember('x', { issuer: GEMINI });
    await failing.settled();
  });
});
