import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CARRIED_TTL_MS, ENTRY_OVERHEAD_BYTES, createMemoryCarriedStore } from '../../src/carry/store.ts';
import { createManualClock } from '../helpers/clock.ts';

describe('the memory store of chat clients\' carried state', () => {
  it('gives back what was put for a key\'s calls, to that key only, and nothing it does not hold', async () => {
    const store = createMemoryCarriedStore();
    assert.equal(await store.put('key_a', 'call_1', '{"a":1}'), true);
    assert.deepEqual([...await store.get('key_a', ['call_1', 'call_2'])], [['call_1', '{"a":1}']]);
    assert.deepEqual([...await store.get('key_b', ['call_1'])], []);
  });

  it('keeps an entry one hour after it was put, then forgets it', async () => {
    const clock = createManualClock();
    const store = createMemoryCarriedStore({ now: clock.now });
    await store.put('key_a', 'call_1', 'x');
    clock.advance(CARRIED_TTL_MS - 1);
    assert.equal((await store.get('key_a', ['call_1'])).size, 1);
    clock.advance(1);
    assert.equal((await store.get('key_a', ['call_1'])).size, 0);
  });

  it('replaces what a call had, and the replaced entry lives an hour from then', async () => {
    const clock = createManualClock();
    const store = createMemoryCarriedStore({ now: clock.now });
    await store.put('key_a', 'call_1', 'old');
    clock.advance(CARRIED_TTL_MS / 2);
    await store.put('key_a', 'call_1', 'new');
    clock.advance(CARRIED_TTL_MS / 2 + 1);
    assert.deepEqual([...await store.get('key_a', ['call_1'])], [['call_1', 'new']]);
  });

  it('holds at most maxEntriesPerKey entries per key, its oldest going first, and never another key\'s', async () => {
    const store = createMemoryCarriedStore({ maxEntriesPerKey: 3 });
    await store.put('key_b', 'call_b', 'b');
    for (let i = 0; i < 5; i++) await store.put('key_a', `call_${i}`, `v${i}`);
    assert.deepEqual([...(await store.get('key_a', ['call_0', 'call_1', 'call_2', 'call_3', 'call_4'])).keys()], ['call_2', 'call_3', 'call_4']);
    assert.equal((await store.get('key_b', ['call_b'])).size, 1);
  });

  it('holds at most maxBytesPerKey bytes per key and refuses a value over maxValueBytes', async () => {
    // An entry counts its value, its call id and its overhead in memory.
    const store = createMemoryCarriedStore({ maxBytesPerKey: 2 * ENTRY_OVERHEAD_BYTES + 100, maxValueBytes: 60 });
    assert.equal(await store.put('key_a', 'c1', 'x'.repeat(55)), true);
    assert.equal(await store.put('key_a', 'c2', 'y'.repeat(55)), true);
    assert.deepEqual([...(await store.get('key_a', ['c1', 'c2'])).keys()], ['c2'], 'the oldest made room');
    assert.equal(await store.put('key_a', 'c3', 'z'.repeat(61)), false);
    assert.equal((await store.get('key_a', ['c3'])).size, 0);
  });

  it('counts what an entry costs besides its value, so many tiny entries cannot outgrow maxBytes', async () => {
    const store = createMemoryCarriedStore({ maxBytes: 10 * (ENTRY_OVERHEAD_BYTES + 8), maxBytesPerKey: 1_000_000, maxEntriesPerKey: 1_000_000 });
    for (let i = 0; i < 100; i++) await store.put('key_a', `c${String(i).padStart(3, '0')}`, 'vvvv');
    const held = await store.get('key_a', Array.from({ length: 100 }, (_, i) => `c${String(i).padStart(3, '0')}`));
    assert.equal(held.size, 10);
  });

  it('counts a value with characters past U+00FF at two bytes a character, as the heap holds it', async () => {
    const store = createMemoryCarriedStore({ maxBytesPerKey: ENTRY_OVERHEAD_BYTES + 2 + 100, maxValueBytes: 1000 });
    assert.equal(await store.put('key_a', 'c1', 'x'.repeat(100)), true);
    assert.equal(await store.put('key_a', 'c2', '推'.repeat(51)), false, '102 bytes do not fit in 100');
    assert.equal(await store.put('key_a', 'c3', '推'.repeat(50)), true);
  });

  it('makes room within maxBytes in the key holding the most, so one key\'s flood evicts its own state only', async () => {
    const store = createMemoryCarriedStore({ maxBytes: 6 * (ENTRY_OVERHEAD_BYTES + 32), maxBytesPerKey: 100_000 });
    await store.put('quiet', 'q1', 'q'.repeat(30));
    for (let i = 0; i < 10; i++) await store.put('flood', `f${i}`, 'f'.repeat(30));
    assert.equal((await store.get('quiet', ['q1'])).size, 1, 'the key holding less keeps its state');
    assert.ok((await store.get('flood', ['f0', 'f1'])).size === 0, 'the flooding key lost its oldest');
    assert.equal((await store.get('flood', ['f9'])).size, 1);
  });
});
