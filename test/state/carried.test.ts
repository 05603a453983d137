import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedCarriedStore } from '../../src/state/carried.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';

const skip = redisSkip();

let redis: TestRedis;
let prefixCount = 0;
const clients: RespClient[] = [];

function client(url = redis.url): RespClient {
  const made = createRespClient({ url, timeoutMs: 2000 });
  clients.push(made);
  return made;
}

function freshPrefix(): string {
  prefixCount += 1;
  return `c${prefixCount}:`;
}

describe('chat clients\' carried state on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const made of clients) await made.close();
    await redis?.stop();
  });

  it('gives what one process put to another, for the same key only, with the store\'s TTL', async () => {
    const prefix = freshPrefix();
    const [a, b] = [createSharedCarriedStore({ client: client(), prefix }), createSharedCarriedStore({ client: client(), prefix })];
    assert.equal(await a.put('key_a', 'call_1', '{"issuer":{}}'), true);
    assert.deepEqual([...await b.get('key_a', ['call_1', 'call_2'])], [['call_1', '{"issuer":{}}']]);
    assert.equal((await b.get('key_b', ['call_1'])).size, 0);
    const ttl = await client().command(['PTTL', `${prefix}carry:{key_a}:call_1`]);
    assert.ok(typeof ttl === 'number' && ttl > 3_500_000 && ttl <= 3_600_000, String(ttl));
  });

  it('holds at most maxEntriesPerKey entries and maxBytesPerKey bytes per key, the oldest going first, and refuses a value too large', async () => {
    const prefix = freshPrefix();
    const store = createSharedCarriedStore({ client: client(), prefix, maxEntriesPerKey: 3, maxBytesPerKey: 100_000, maxValueBytes: 500 });
    for (let i = 0; i < 5; i++) await store.put('key_a', `call_${i}`, `value ${i}`);
    assert.deepEqual([...(await store.get('key_a', ['call_0', 'call_1', 'call_2', 'call_3', 'call_4'])).keys()], ['call_2', 'call_3', 'call_4']);
    const bytes = createSharedCarriedStore({ client: client(), prefix: freshPrefix(), maxEntriesPerKey: 10, maxBytesPerKey: 1500, maxValueBytes: 500 });
    for (let i = 0; i < 5; i++) await bytes.put('key_a', `call_${i}`, `value ${i}`);
    for (const big of ['big_1', 'big_2', 'big_3']) await bytes.put('key_a', big, big.repeat(60));
    assert.deepEqual([...(await bytes.get('key_a', ['call_4', 'big_1', 'big_2', 'big_3'])).keys()], ['big_2', 'big_3'], 'bytes made room, oldest first');
    assert.equal(await store.put('key_a', 'huge', 'z'.repeat(501)), false);
    assert.equal((await store.get('key_a', ['huge'])).size, 0);
  });

  it('rejects with state_unavailable when the server cannot be reached', async () => {
    const store = createSharedCarriedStore({ client: createRespClient({ url: 'redis://127.0.0.1:9', timeoutMs: 200, connectTimeoutMs: 200 }), prefix: freshPrefix() });
    await assert.rejects(store.get('key_a', ['c']), /carried reasoning state/);
    await assert.rejects(store.put('key_a', 'c', 'v'), /carried reasoning state/);
  });
});
