/**
 * Issue 24's check on the shared routing state with real processes: three `llmux serve`, each with
 * its own LLMUX_HOME, sharing one real redis-server (started here and stopped), and a model with
 * two deployments on a fake upstream. A rest (cooldown) learned by one process is honoured by the
 * other two within a second (llmux.md sections 6 and 10).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedKeyStore } from '../../src/state/key-store.ts';
import type { SharedKeyStore } from '../../src/state/key-store.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { serve } from '../helpers/scale-out.ts';
import type { Serving } from '../helpers/scale-out.ts';
import { respond, startFakeUpstream } from '../helpers/fake-upstream.ts';
import type { FakeUpstream } from '../helpers/fake-upstream.ts';

const skip = redisSkip();
/** A change learned by one process is honoured by all within this (llmux.md section 10). */
const WITHIN_MS = 1000;

let conversation = 0;
async function chat(url: string, key: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    // A conversation of its own each: sticky routing pins none of them.
    body: JSON.stringify({ model: 'pair', messages: [{ role: 'user', content: `conversation ${conversation++}` }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function resting(url: string, adminKey: string, deployment: string): Promise<boolean> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${adminKey}` } });
  return (await res.text()).includes(`llmux_deployment_resting{deployment="${deployment}"} 1`);
}

describe('three llmux serve processes sharing routing state on one redis-server', { skip, timeout: 240_000 }, () => {
  let redis: TestRedis;
  let upstream: FakeUpstream;
  let client: RespClient;
  let keys: SharedKeyStore;
  let processes: Serving[];
  let key: string;
  let adminKey: string;
  /** Whether up-a answers 429: not while the processes start and read the key. */
  let limiting = false;

  before(async () => {
    redis = await startRedis();
    upstream = await startFakeUpstream();
    // Once the test starts, up-a is rate limiting llmux for 30 s; up-b answers.
    const fallback = upstream.fallback;
    upstream.fallback = (req, res, seen) => (limiting && seen.body['model'] === 'up-a'
      ? respond.json(429, { error: { message: 'slow down' } }, { 'retry-after': '30' })(req, res, seen)
      : fallback(req, res, seen));
    client = createRespClient({ url: redis.url, timeoutMs: 2000 });
    keys = createSharedKeyStore({ client, displayUrl: 'test' });
    await keys.ready;
    adminKey = (await keys.create({ name: 'admin', admin: true, tier: 'pro' })).key;
    key = (await keys.create({ name: 'user', tier: 'pro', limits: { rpm: 100_000, tpm: 1_000_000_000, concurrency: 100 } })).key;
    const config = {
      providers: { fake: { format: 'openai', base_url: `${upstream.url}/v1`, api_key: 'upstream-secret' } },
      models: [{ id: 'pair', deployments: [{ provider: 'fake', upstream_id: 'up-a' }, { provider: 'fake', upstream_id: 'up-b' }] }],
      retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 5 },
      limits: { shutdown_timeout_ms: 1000 },
    };
    processes = await Promise.all([0, 1, 2].map(() => serve(redis.url, config)));
    // Every process knows the key (its replica of the key store has read it).
    for (const p of processes) {
      for (let i = 0; i < 250 && (await chat(p.url, key)) !== 200; i++) await delay(20);
    }
  });
  after(async () => {
    await Promise.all((processes ?? []).map((p) => p.stop()));
    keys?.close();
    await client?.close();
    await upstream?.close();
    await redis?.stop();
  });

  it('honours a rest learned by one process on the other two within a second', async () => {
    const [a, b, c] = processes as [Serving, Serving, Serving];
    for (const p of processes) assert.equal(await resting(p.url, adminKey, 'fake/up-a'), false);
    limiting = true;
    // Requests to A until one reaches up-a and learns its 429 (each reaches it first with chance 1/2).
    for (let i = 0; i < 60 && !(await resting(a.url, adminKey, 'fake/up-a')); i++) assert.equal(await chat(a.url, key), 200);
    const learned = performance.now();
    assert.ok(await resting(a.url, adminKey, 'fake/up-a'), 'A learned the rest');
    const seenBy = await Promise.all([b, c].map(async (p) => {
      while (!(await resting(p.url, adminKey, 'fake/up-a'))) {
        if (performance.now() - learned > 5 * WITHIN_MS) return Infinity;
        await delay(20);
      }
      return performance.now() - learned;
    }));
    for (const ms of seenBy) assert.ok(ms <= WITHIN_MS, `seen after ${Math.round(ms)} ms`);

    // And honoured: 20 requests to each of B and C, none to up-a (without the rest each would
    // reach it with chance 1/2: 2^-40 for none).
    const before = upstream.requests.length;
    for (let i = 0; i < 20; i++) {
      assert.equal(await chat(b.url, key), 200);
      assert.equal(await chat(c.url, key), 200);
    }
    assert.equal(upstream.requests.slice(before).filter((r) => r.body['model'] === 'up-a').length, 0);
  });
});
