import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResponsesResponse } from '../../src/formats/responses.ts';
import { createMemoryResponseStore, DEFAULT_STORE_TTL_MS, type StoredResponse } from '../../src/responses/store.ts';
import { responseEcho, responseObject } from '../../src/translate/responses-output.ts';
import { NO_TOOL_NAMES } from '../../src/translate/responses-tools.ts';

function record(id: string, keyId = 'key_a', text = 'answer', inputId = `in_${id}`): StoredResponse {
  const response: ResponsesResponse = {
    ...responseObject({ model: 'm', echo: responseEcho({ model: 'm' }), toolNames: NO_TOOL_NAMES }, id, 1),
    status: 'completed',
    output: [{ type: 'message', id: `msg_${id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
  };
  return { id, keyId, created: 1, input: [{ type: 'message', id: inputId, role: 'user', content: 'question' }], response };
}

function bytesOf(value: StoredResponse): number {
  return Buffer.byteLength(JSON.stringify(value));
}

describe('createMemoryResponseStore', () => {
  it('gives a stored response back to the key that stored it, and to no other key', async () => {
    const store = createMemoryResponseStore();
    assert.equal(await store.put(record('resp_1')), true);
    assert.deepEqual(await store.get('key_a', 'resp_1'), record('resp_1'));
    assert.equal(await store.get('key_b', 'resp_1'), undefined);
    assert.equal(await store.findItem('key_b', 'msg_resp_1'), undefined);
    assert.equal(await store.delete('key_b', 'resp_1'), false);
    assert.ok(await store.get('key_a', 'resp_1'));
  });

  it('keeps a copy: changing the stored object afterwards changes nothing', async () => {
    const store = createMemoryResponseStore();
    const original = record('resp_1');
    await store.put(original);
    original.response.status = 'failed';
    assert.equal((await store.get('key_a', 'resp_1'))?.response.status, 'completed');
  });

  it('deletes a response, its items with it', async () => {
    const store = createMemoryResponseStore();
    await store.put(record('resp_1'));
    assert.equal(await store.delete('key_a', 'resp_1'), true);
    assert.equal(await store.get('key_a', 'resp_1'), undefined);
    assert.equal(await store.findItem('key_a', 'msg_resp_1'), undefined);
    assert.equal(await store.delete('key_a', 'resp_1'), false);
  });

  it('finds an item by id among the key\'s responses, in their input or output, the latest stored first', async () => {
    const store = createMemoryResponseStore();
    const first = record('resp_1', 'key_a', 'first', 'shared_in');
    const second = record('resp_2', 'key_a', 'second', 'shared_in');
    second.input = [{ type: 'message', id: 'shared_in', role: 'user', content: 'asked again' }];
    await store.put(first);
    await store.put(second);
    assert.deepEqual(await store.findItem('key_a', 'msg_resp_1'), first.response.output[0]);
    assert.deepEqual(await store.findItem('key_a', 'shared_in'), second.input[0], 'the latest stored holder wins');
    await store.delete('key_a', 'resp_2');
    assert.deepEqual(await store.findItem('key_a', 'shared_in'), first.input[0], 'still held by resp_1');
    assert.equal(await store.findItem('key_a', 'nowhere'), undefined);
  });

  it('forgets a response once its time to live has passed (86400 s by default)', async () => {
    let now = 1_000_000;
    const store = createMemoryResponseStore({ now: () => now });
    await store.put(record('resp_1'));
    now += DEFAULT_STORE_TTL_MS - 1;
    assert.ok(await store.get('key_a', 'resp_1'));
    now += 1;
    assert.equal(await store.get('key_a', 'resp_1'), undefined);
    assert.equal(await store.findItem('key_a', 'msg_resp_1'), undefined);
  });

  it('makes room by dropping expired responses before evicting live ones', async () => {
    let now = 0;
    const one = bytesOf(record('resp_1'));
    const store = createMemoryResponseStore({ now: () => now, ttlMs: 1000, maxBytes: one * 3 + 10 });
    await store.put(record('resp_1'));
    now = 600;
    await store.put(record('resp_2'));
    await store.put(record('resp_3'));
    now = 900;
    assert.ok(await store.get('key_a', 'resp_1'), 'resp_1 is now the most recently used, resp_2 the least');
    now = 1000;
    await store.put(record('resp_4'));
    assert.equal(await store.get('key_a', 'resp_1'), undefined, 'expired');
    for (const id of ['resp_2', 'resp_3', 'resp_4']) assert.ok(await store.get('key_a', id), `${id} kept: the expired one made the room`);
  });

  it('stays within its bytes by dropping the least recently used first', async () => {
    const one = bytesOf(record('resp_1'));
    const store = createMemoryResponseStore({ maxBytes: one * 2 + 10 });
    await store.put(record('resp_1'));
    await store.put(record('resp_2'));
    assert.ok(await store.get('key_a', 'resp_1'), 'reading resp_1 makes resp_2 the least recently used');
    await store.put(record('resp_3'));
    assert.ok(await store.get('key_a', 'resp_1'));
    assert.equal(await store.get('key_a', 'resp_2'), undefined);
    assert.ok(await store.get('key_a', 'resp_3'));
  });

  it('gives each key its share: a key that floods the store evicts its own responses, not another key\'s', async () => {
    // Issue 25: one shared LRU; a key storing ~1,000 large responses in seconds evicted everyone's.
    const id = (i: number): string => `resp_${String(i).padStart(4, '0')}`;
    const one = bytesOf(record(id(0)));
    const store = createMemoryResponseStore({ maxBytes: one * 10 + 10 });
    await store.put(record('resp_quie', 'key_b'));
    for (let i = 0; i < 1_000; i++) await store.put(record(id(i), 'key_a'));
    assert.ok(await store.get('key_b', 'resp_quie'), 'the quiet key\'s response survives');
    assert.ok(await store.findItem('key_b', 'msg_resp_quie'));
    assert.ok(await store.get('key_a', id(999)), 'the flooding key keeps its latest');
    assert.equal(await store.get('key_a', id(0)), undefined);
    let kept = 0;
    for (let i = 0; i < 1_000; i++) if (await store.get('key_a', id(i))) kept++;
    assert.equal(kept, 9, 'within the total: the store holds ten responses');
  });

  it('evicts from the key holding the most when the total is reached, so a key under its share keeps what it has', async () => {
    const one = bytesOf(record('resp_key_a_0'));
    const store = createMemoryResponseStore({ maxBytes: one * 6 + 10 });
    for (const [key, n] of [['key_c', 1], ['key_b', 2], ['key_a', 3]] as const) {
      for (let i = 0; i < n; i++) await store.put(record(`resp_${key}_${i}`, key));
    }
    await store.put(record('resp_key_c_1', 'key_c'));
    assert.equal(await store.get('key_a', 'resp_key_a_0'), undefined, 'key_a held the most: its oldest went');
    for (const id of ['resp_key_b_0', 'resp_key_b_1']) assert.ok(await store.get('key_b', id));
    for (const id of ['resp_key_c_0', 'resp_key_c_1']) assert.ok(await store.get('key_c', id));
  });

  it('refuses a response larger than the whole store, keeping what it has', async () => {
    const store = createMemoryResponseStore({ maxBytes: bytesOf(record('resp_1')) + 10 });
    await store.put(record('resp_1'));
    assert.equal(await store.put(record('resp_big', 'key_a', 'x'.repeat(10_000))), false);
    assert.ok(await store.get('key_a', 'resp_1'));
  });

  it('replaces a response stored again under the same id, counting its bytes once', async () => {
    const one = bytesOf(record('resp_1'));
    const store = createMemoryResponseStore({ maxBytes: one * 2 + 10 });
    await store.put(record('resp_1'));
    await store.put(record('resp_1', 'key_a', 'answer'));
    await store.put(record('resp_2'));
    assert.ok(await store.get('key_a', 'resp_1'));
    assert.ok(await store.get('key_a', 'resp_2'));
  });
});
