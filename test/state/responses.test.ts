import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ResponsesResponse } from '../../src/formats/responses.ts';
import type { StoredResponse } from '../../src/responses/store.ts';
import { responseEcho, responseObject } from '../../src/translate/responses-output.ts';
import { NO_TOOL_NAMES } from '../../src/translate/responses-tools.ts';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedResponseStore, createSharedResponsesState, sharedSealSecret } from '../../src/state/responses.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { waitUntil } from '../helpers/wait.ts';

const skip = redisSkip();

let redis: TestRedis;
let prefixCount = 0;
const clients: RespClient[] = [];

function client(url = redis.url, timeoutMs = 2000): RespClient {
  const made = createRespClient({ url, timeoutMs });
  clients.push(made);
  return made;
}

function freshPrefix(): string {
  prefixCount += 1;
  return `r${prefixCount}:`;
}

function record(id: string, keyId = 'key_a', text = 'answer', inputId = `in_${id}`): StoredResponse {
  const response: ResponsesResponse = {
    ...responseObject({ model: 'm', echo: responseEcho({ model: 'm' }), toolNames: NO_TOOL_NAMES }, id, 1),
    status: 'completed',
    output: [{ type: 'message', id: `msg_${id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
  };
  return { id, keyId, created: 1, input: [{ type: 'message', id: inputId, role: 'user', content: 'question' }], response };
}

describe('stored responses and the seal secret on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const made of clients) await made.close();
    await redis?.stop();
  });

  it('gives a response stored through one process to the same key on another, and to no other key', async () => {
    const prefix = freshPrefix();
    const [a, b] = [createSharedResponseStore({ client: client(), prefix }), createSharedResponseStore({ client: client(), prefix })];
    assert.equal(await a.put(record('resp_1')), true);
    assert.deepEqual(await b.get('key_a', 'resp_1'), record('resp_1'));
    assert.equal(await b.get('key_b', 'resp_1'), undefined);
    assert.equal(await b.findItem('key_b', 'msg_resp_1'), undefined);
    assert.equal(await b.delete('key_b', 'resp_1'), false);
    assert.equal(await b.delete('key_a', 'resp_1'), true);
    assert.equal(await a.get('key_a', 'resp_1'), undefined);
    assert.equal(await a.findItem('key_a', 'msg_resp_1'), undefined, 'its items go with it');
  });

  it('finds an item among the key\'s responses, the latest stored first, and an earlier holder once the latest is deleted', async () => {
    const store = createSharedResponseStore({ client: client(), prefix: freshPrefix() });
    const first = record('resp_b', 'key_a', 'first', 'shared_in');
    const second = record('resp_a', 'key_a', 'second', 'shared_in');
    second.input = [{ type: 'message', id: 'shared_in', role: 'user', content: 'asked again' }];
    await store.put(first);
    await store.put(second);
    assert.deepEqual(await store.findItem('key_a', 'msg_resp_b'), first.response.output[0]);
    assert.deepEqual(await store.findItem('key_a', 'shared_in'), second.input[0], 'stored later, found first (whatever its id)');
    await store.delete('key_a', 'resp_a');
    assert.deepEqual(await store.findItem('key_a', 'shared_in'), first.input[0]);
  });

  it('forgets a response after its time to live, and refuses one larger than the largest kept', async () => {
    const store = createSharedResponseStore({ client: client(), prefix: freshPrefix(), ttlMs: 150, maxBytes: 4000 });
    assert.equal(await store.put(record('resp_big', 'key_a', 'x'.repeat(5000))), false);
    assert.equal(await store.put(record('resp_short')), true);
    assert.ok(await store.get('key_a', 'resp_short'));
    // The server's own clock expires it: waited for, not slept through.
    await waitUntil(async () => (await store.get('key_a', 'resp_short')) === undefined, 'the response forgotten after its 150 ms');
    assert.equal(await store.findItem('key_a', 'msg_resp_short'), undefined);
  });

  it('gives each key its share of the total: a key that floods the store evicts its own responses, not another key\'s', async () => {
    // Issue 25: the shared store had no total bound but the server's memory, and one LRU in memory.
    const one = Buffer.byteLength(JSON.stringify(record('resp_0000', 'key_a')));
    const prefix = freshPrefix();
    const store = createSharedResponseStore({ client: client(), prefix, maxBytes: one * 10 + 10 });
    const other = createSharedResponseStore({ client: client(), prefix, maxBytes: one * 10 + 10 });
    assert.equal(await store.put(record('resp_quie', 'key_b')), true);
    for (let i = 0; i < 300; i++) assert.equal(await other.put(record(`resp_${String(i).padStart(4, '0')}`, 'key_a')), true);
    assert.ok(await store.get('key_b', 'resp_quie'), 'the quiet key\'s response survives');
    assert.ok(await store.get('key_a', 'resp_0299'), 'the flooding key keeps its latest');
    assert.equal(await store.get('key_a', 'resp_0000'), undefined);
    let kept = 0;
    for (let i = 0; i < 300; i++) if (await store.get('key_a', `resp_${String(i).padStart(4, '0')}`)) kept++;
    assert.equal(kept, 9, 'within the total: the server holds ten responses');
    assert.equal(await store.delete('key_b', 'resp_quie'), true);
    assert.equal(await store.put(record('resp_next', 'key_a')), true);
    assert.ok(await store.get('key_a', 'resp_0291'), 'a deleted response gives its bytes back');
  });

  it('makes one seal secret for every process: what one seals, another opens', async () => {
    const prefix = freshPrefix();
    const states = [createSharedResponsesState({ client: client(), prefix }), createSharedResponsesState({ client: client(), prefix })];
    const [sealerA, sealerB] = await Promise.all(states.map((state) => state.sealer()));
    const sealed = sealerA!.seal({ type: 'thinking', thinking: 'because', signature: 'sig' });
    assert.deepEqual(sealerB!.open(sealed), { type: 'thinking', thinking: 'because', signature: 'sig' });
    const other = createSharedResponsesState({ client: client(), prefix: freshPrefix() });
    assert.equal((await other.sealer()).open(sealed), undefined, 'another state server, another secret');
  });

  it('has its sealer at hand once the shared secret has been read, and not before', async () => {
    const state = createSharedResponsesState({ client: client(), prefix: freshPrefix() });
    assert.equal(state.sealerNow(), undefined);
    const sealer = await state.sealer();
    assert.equal(state.sealerNow(), sealer);
    assert.equal(await state.sealer(), sealer);
  });

  it('refuses a seal secret that is not 32 bytes rather than sealing under it', async () => {
    const prefix = freshPrefix();
    const raw = client();
    await raw.command(['SET', `${prefix}seal-secret`, 'c2hvcnQ']);
    await assert.rejects(sharedSealSecret(raw, prefix), /does not hold a 32-byte seal secret/);
  });

  it('fails with 503 state_unavailable, and makes a sealer once the server is back', async () => {
    const own = await startRedis();
    try {
      const state = createSharedResponsesState({ client: client(own.url, 200), prefix: freshPrefix() });
      own.pause();
      await assert.rejects(state.store.get('key_a', 'resp_1'), (err: unknown) => err instanceof GatewayError && err.code === 'state_unavailable');
      await assert.rejects(state.sealer(), (err: unknown) => err instanceof GatewayError && err.code === 'state_unavailable');
      assert.equal(state.sealerNow(), undefined, 'no sealer at hand after a failure');
      own.resume();
      let sealer: Awaited<ReturnType<typeof state.sealer>> | undefined;
      await waitUntil(async () => (sealer = await state.sealer().catch(() => undefined)) !== undefined, 'a sealer once the server is back', { pollMs: 50 });
      assert.ok(sealer?.seal({ type: 'redacted_thinking', data: 'x' }).startsWith('llmux.v2.'));
    } finally {
      own.resume();
      await own.stop();
    }
  });
});
