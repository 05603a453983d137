import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedKeyStore } from '../../src/state/key-store.ts';
import type { SharedKeyStore, SharedKeyStoreOptions } from '../../src/state/key-store.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { waitUntil } from '../helpers/wait.ts';

const skip = redisSkip();
const WITHIN_MS = 1000;

let redis: TestRedis;
let prefixCount = 0;
const clients: RespClient[] = [];
const stores: SharedKeyStore[] = [];

function freshPrefix(): string {
  prefixCount += 1;
  return `k${prefixCount}:`;
}

function client(url = redis.url, timeoutMs = 2000): RespClient {
  const made = createRespClient({ url, timeoutMs });
  clients.push(made);
  return made;
}

async function openStore(prefix: string, options: Partial<SharedKeyStoreOptions> & { url?: string } = {}): Promise<SharedKeyStore> {
  const store = createSharedKeyStore({ client: client(options.url), displayUrl: 'redis://127.0.0.1', prefix, ...options });
  stores.push(store);
  await store.ready;
  return store;
}

/**
 * Waits until `check` holds, failing after `limitMs`: the contract's bound for a change to reach
 * every store (llmux.md section 6), kept on real time because it crosses a real state server.
 */
function within(limitMs: number, what: string, check: () => boolean): Promise<number> {
  return waitUntil(check, what, { timeoutMs: limitMs });
}

describe('the shared key store on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const store of stores) store.close();
    for (const made of clients) await made.close();
    await redis?.stop();
  });

  it('lets every process authenticate a key made on one of them within a second, and refuse it as soon after its revocation', async () => {
    const prefix = freshPrefix();
    const [a, b, c] = await Promise.all([openStore(prefix), openStore(prefix), openStore(prefix)]);
    for (const store of [a, b, c]) store.watch();
    const { key, record } = await a.create({ name: 'shared', tier: 'pro', limits: { rpm: 7 } });
    assert.equal(a.findBySecret(key)?.id, record.id, 'the creating process knows it at once');
    await within(WITHIN_MS, 'the new key on b', () => b.findBySecret(key)?.id === record.id);
    await within(WITHIN_MS, 'the new key on c', () => c.findBySecret(key)?.limits.rpm === 7);
    const revoked = await b.revoke('shared');
    assert.equal(revoked?.id, record.id);
    assert.ok(revoked?.revoked_at !== null);
    await within(WITHIN_MS, 'the revocation on a', () => a.findBySecret(key)?.revoked_at !== null);
    await within(WITHIN_MS, 'the revocation on c', () => c.get(record.id)?.revoked_at !== null);
    assert.equal(await c.revoke('shared'), undefined, 'a revoked key is no longer found by its name');
    assert.equal((await c.revoke(record.id))?.revoked_at, revoked?.revoked_at, 'revoking again keeps the first time');
    assert.equal(a.findBySecret(`${key.slice(0, -1)}x`), undefined);
  });

  it('sees a change whose message was lost within a second, by polling the version', async () => {
    const prefix = freshPrefix();
    const store = await openStore(prefix, { pollMs: 200 });
    store.watch();
    const writer = await openStore(prefix);
    const { key, record } = await writer.create({ name: 'made-elsewhere' });
    await within(WITHIN_MS, 'the key', () => store.findBySecret(key) !== undefined);
    // Another writer's change with no message at all: only the poll can notice it.
    const raw = client();
    await raw.batch([['HSET', `${prefix}keys`, record.id, JSON.stringify({ ...record, name: 'renamed' })], ['INCR', `${prefix}keys:version`]]);
    await within(WITHIN_MS, 'the silent change', () => store.get(record.id)?.name === 'renamed');
  });

  it('creates the first key once, however many processes start on an empty store together', async () => {
    const prefix = freshPrefix();
    const starting = await Promise.all(Array.from({ length: 5 }, () => openStore(prefix)));
    const made = await Promise.all(starting.map((store) => store.createFirst({ name: 'admin', admin: true, tier: 'pro' })));
    assert.equal(made.filter((m) => m !== undefined).length, 1);
    const later = await openStore(prefix);
    assert.equal(later.list().length, 1);
    assert.equal(await later.createFirst({ name: 'admin' }), undefined);
  });

  it('skips a record that is not a valid key, says so once, and serves the others', async () => {
    const prefix = freshPrefix();
    const writer = await openStore(prefix);
    const good = await writer.create({ name: 'good' });
    const raw = client();
    await raw.command(['HSET', `${prefix}keys`, 'key_0000000000000bad', '{"id":"key_0000000000000bad","tier":"gold"}']);
    const warnings: string[] = [];
    const reader = await openStore(prefix);
    reader.watch((message) => warnings.push(message));
    await writer.create({ name: 'another' });
    await within(WITHIN_MS, 'the second key', () => reader.list().length === 2);
    assert.equal(reader.findBySecret(good.key)?.name, 'good');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /key_0000000000000bad is not a valid key \(hash\)/);
  });

  it('writes its copy back to a server that lost every key, and keeps revocations it knew of', async () => {
    const own = await startRedis();
    try {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([openStore(prefix, { url: own.url }), openStore(prefix, { url: own.url })]);
      // Whichever of the two reads the emptied server first writes the keys back; the other then
      // finds them there. So the warning may come from either.
      const warnings: string[] = [];
      a.watch((message) => warnings.push(message));
      b.watch((message) => warnings.push(message));
      const kept = await a.create({ name: 'kept' });
      const gone = await a.create({ name: 'gone' });
      await a.revoke('gone');
      await within(WITHIN_MS, 'both keys on b', () => b.list().length === 2 && b.get(gone.record.id)?.revoked_at !== null);
      await own.restart();
      await within(10_000, 'the keys back on the server', () => a.findBySecret(kept.key) !== undefined && warnings.length > 0);
      const fresh = await openStore(prefix, { url: own.url });
      assert.equal(fresh.findBySecret(kept.key)?.name, 'kept');
      assert.notEqual(fresh.findBySecret(gone.key)?.revoked_at, null, 'a revoked key comes back revoked');
      assert.ok(warnings.some((w) => /had lost every key; \d of this process's 2 were written back/.test(w)), warnings.join('\n'));
    } finally {
      await own.stop();
    }
  });

  it('keeps authenticating from its last copy while the server is down, and refuses changes with 503 state_unavailable without waiting', async () => {
    const own = await startRedis();
    try {
      const store = await openStore(freshPrefix(), { url: own.url });
      store.watch();
      const { key } = await store.create({ name: 'kept' });
      await own.stop();
      await within(5000, 'the connection loss', () => clients.some((c) => c.status === 'down'));
      assert.equal(store.findBySecret(key)?.name, 'kept');
      // Real time: a real client against a server that is gone.
      const started = performance.now();
      await assert.rejects(store.create({ name: 'new' }), (err: unknown) => err instanceof GatewayError && err.status === 503 && err.code === 'state_unavailable');
      await assert.rejects(store.revoke('kept'), (err: unknown) => err instanceof GatewayError && err.code === 'state_unavailable');
      assert.ok(performance.now() - started < 1000, 'a server that is gone is not waited for');
      assert.equal(store.findBySecret(key)?.revoked_at, null, 'the revocation did not happen');
    } finally {
      await own.stop();
    }
  });
});
