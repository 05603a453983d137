import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLimiter } from '../../src/limits/limiter.ts';
import type { Admission, LimitSet, Limiter, Refusal } from '../../src/limits/limiter.ts';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createStateHealth } from '../../src/state/health.ts';
import type { StateHealth } from '../../src/state/health.ts';
import { createSharedLimiter } from '../../src/state/limiter.ts';
import type { SharedLimiter } from '../../src/state/limiter.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { waitUntil } from '../helpers/wait.ts';

const skip = redisSkip();
const T0 = Date.UTC(2026, 2, 14, 10, 0, 0);
const LIMITS: LimitSet = { rpm: 5, tpm: 1000, concurrency: 2 };

let redis: TestRedis;
let prefixCount = 0;
const opened: Array<{ client: RespClient; health: StateHealth; limiter: SharedLimiter }> = [];

/** A fresh prefix per test: one server, no test sees another's keys. */
function freshPrefix(): string {
  prefixCount += 1;
  return `t${prefixCount}:`;
}

interface Process { client: RespClient; health: StateHealth; limiter: SharedLimiter }

/** One "process": its own client, health and limiter on the shared server. */
function openProcess(prefix: string, options: { now?: () => number; leaseMs?: number; policy?: 'local' | 'closed'; url?: string; timeoutMs?: number } = {}): Process {
  const client = createRespClient({ url: options.url ?? redis.url, timeoutMs: options.timeoutMs ?? 2000 });
  const health = createStateHealth({ client, policy: options.policy ?? 'local', displayUrl: 'test' });
  const limiter = createSharedLimiter({ client, health, prefix, leaseMs: options.leaseMs ?? 30_000, ...(options.now === undefined ? {} : { now: options.now }) });
  const process = { client, health, limiter };
  opened.push(process);
  return process;
}

/** Lets settle and release (sent a turn later, then possibly an adjust) reach the server. */
async function quiesce(client: RespClient): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    await client.command(['PING']);
  }
}

function admitted(result: Admission | Refusal): Admission {
  assert.equal(result.ok, true, `expected an admission, got ${JSON.stringify(result)}`);
  return result as Admission;
}

function refused(result: Admission | Refusal): Refusal {
  assert.equal(result.ok, false, 'expected a refusal');
  return result as Refusal;
}

async function evalshaCalls(client: RespClient): Promise<number> {
  const info = String(await client.command(['INFO', 'commandstats']));
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

describe('the shared limiter on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const { client, health, limiter } of opened) {
      limiter.close();
      health.close();
      await client.close();
    }
    await redis?.stop();
  });

  it('answers exactly as the in-memory limiter through admissions, settles, releases, refusals and the passing window', async () => {
    let nowMs = T0 + 200;
    const now = (): number => nowMs;
    const { client, limiter: shared } = openProcess(freshPrefix(), { now });
    const local = createLimiter({ now });
    const both = async <T>(step: (limiter: Limiter) => T | Promise<T>): Promise<[T, T]> => {
      const fromLocal = await step(local);
      const fromShared = await step(shared);
      await quiesce(client);
      return [fromLocal, fromShared];
    };
    const comparable = (result: Admission | Refusal): unknown => (result.ok ? { ok: true, state: result.state } : result);
    const script: Array<{ at: number; reserve: number; settle?: number; release?: 'before-settle' | 'after-settle' | 'never' }> = [
      { at: 0, reserve: 300, settle: 120, release: 'after-settle' },
      { at: 1_500, reserve: 500, release: 'never' },
      { at: 2_100, reserve: 400, settle: 50, release: 'before-settle' },
      { at: 2_200, reserve: 200 },
      { at: 9_000, reserve: 100, settle: 100, release: 'after-settle' },
      { at: 15_000, reserve: 10, settle: 9, release: 'after-settle' },
      { at: 16_000, reserve: 10, release: 'before-settle' },
      { at: 20_000, reserve: 10 },
      { at: 61_500, reserve: 700, settle: 900, release: 'after-settle' },
      { at: 62_000, reserve: 50 },
      { at: 125_000, reserve: 5000 },
    ];
    const open: Array<[Admission, Admission]> = [];
    for (const step of script) {
      nowMs = T0 + 200 + step.at;
      // A live process keeps its leases; the in-memory limiter has none to lose.
      await shared.refreshLeases();
      const [a, b] = await both((limiter) => limiter.admit('key_a', LIMITS, step.reserve));
      assert.deepEqual(comparable(b), comparable(a), `admission at +${step.at} ms`);
      if (!a.ok || !b.ok) continue;
      const mine = (limiter: Limiter): Admission => (limiter === local ? a : b);
      if (step.release === 'before-settle') await both((limiter) => mine(limiter).release());
      if (step.settle !== undefined) await both((limiter) => mine(limiter).settle(step.settle as number));
      if (step.release === 'after-settle') await both((limiter) => mine(limiter).release());
      if (step.release === undefined) open.push([a, b]);
      const [pa, pb] = await both((limiter) => limiter.peek('key_a', LIMITS));
      assert.deepEqual(pb, pa, `peek after the step at +${step.at} ms`);
    }
    for (const [a, b] of open) {
      a.release();
      b.release();
    }
    await quiesce(client);
    for (const at of [130_000, 190_000]) {
      nowMs = T0 + at;
      await shared.refreshLeases();
      assert.deepEqual(await shared.peek('key_a', LIMITS), local.peek('key_a', LIMITS), `peek at +${at} ms`);
    }
  });

  it('admits exactly the key\'s requests per minute across processes, one after another or all at once', async () => {
    const limits: LimitSet = { rpm: 60, tpm: Infinity, concurrency: Infinity };
    for (const parallel of [false, true]) {
      const prefix = freshPrefix();
      const processes = [openProcess(prefix), openProcess(prefix), openProcess(prefix)];
      const admit = (i: number): Promise<Admission | Refusal> => processes[i % 3]!.limiter.admit('key_rpm', limits, 0);
      const results: Array<Admission | Refusal> = [];
      if (parallel) results.push(...await Promise.all(Array.from({ length: 80 }, (_, i) => admit(i))));
      else for (let i = 0; i < 80; i++) results.push(await admit(i));
      assert.equal(results.filter((r) => r.ok).length, 60, parallel ? 'sent at once' : 'sent in turn');
      for (const result of results) if (result.ok) result.release();
      const refusal = results.find((r): r is Refusal => !r.ok);
      assert.equal(refusal?.reason, 'requests');
      assert.equal(refusal?.state.requestsRemaining, 0);
      assert.ok((refusal?.retryAfterSeconds ?? 0) >= 59, 'the whole minute must pass before there is room');
      if (parallel) continue;
      // Each process was refused in turn, and remembers it: no body is read for nothing until the minute is over.
      for (const p of processes) assert.equal(p.limiter.check('key_rpm', limits, 'model')?.reason, 'requests');
    }
  });

  it('holds concurrency across processes and frees a slot released on another one', async () => {
    const prefix = freshPrefix();
    const [a, b, c] = [openProcess(prefix), openProcess(prefix), openProcess(prefix)];
    const first = admitted(await a.limiter.admit('key_c', LIMITS, 10));
    admitted(await b.limiter.admit('key_c', LIMITS, 10));
    const third = refused(await c.limiter.admit('key_c', LIMITS, 10));
    assert.equal(third.reason, 'concurrency');
    assert.equal(third.retryAfterSeconds, 1);
    assert.equal(c.limiter.check('key_c', LIMITS, 'model'), undefined, 'a concurrency refusal is not remembered: a slot may free any moment');
    first.release();
    await quiesce(a.client);
    admitted(await c.limiter.admit('key_c', LIMITS, 10));
  });

  it('refuses tokens per minute once usage settled on another process fills them', async () => {
    const prefix = freshPrefix();
    const [a, b] = [openProcess(prefix), openProcess(prefix)];
    const limits: LimitSet = { rpm: 100, tpm: 1000, concurrency: 10 };
    const big = admitted(await a.limiter.admit('key_t', limits, 100));
    big.settle(950);
    big.release();
    await quiesce(a.client);
    const refusal = refused(await b.limiter.admit('key_t', limits, 100));
    assert.equal(refusal.reason, 'tokens');
    assert.equal(refusal.state.tokensRemaining, 50);
    admitted(await b.limiter.admit('key_t', limits, 50));
  });

  it('gives back the slot and counts the reservation of a process that stopped refreshing its lease, once the lease runs out', async () => {
    let nowMs = T0;
    const now = (): number => nowMs;
    const prefix = freshPrefix();
    const dead = openProcess(prefix, { now, leaseMs: 5000 });
    const alive = openProcess(prefix, { now, leaseMs: 5000 });
    const limits: LimitSet = { rpm: 100, tpm: 1000, concurrency: 1 };
    admitted(await dead.limiter.admit('key_l', limits, 400));
    dead.limiter.close();
    nowMs += 3000;
    await alive.limiter.refreshLeases();
    assert.equal(refused(await alive.limiter.admit('key_l', limits, 1)).reason, 'concurrency', 'still leased');
    nowMs += 2001;
    const back = admitted(await alive.limiter.admit('key_l', limits, 1));
    assert.equal(back.state.tokensRemaining, 1000 - 400 - 1, 'the dead request\'s reservation counts as used');
  });

  it('keeps a lease its process refreshes, however long the request runs', async () => {
    let nowMs = T0;
    const now = (): number => nowMs;
    const prefix = freshPrefix();
    const runner = openProcess(prefix, { now, leaseMs: 5000 });
    const other = openProcess(prefix, { now, leaseMs: 5000 });
    const limits: LimitSet = { rpm: 100, tpm: Infinity, concurrency: 1 };
    const long = admitted(await runner.limiter.admit('key_r', limits, 0));
    for (let i = 0; i < 6; i++) {
      nowMs += 4000;
      await runner.limiter.refreshLeases();
    }
    assert.equal(refused(await other.limiter.admit('key_r', limits, 0)).reason, 'concurrency');
    long.release();
    await quiesce(runner.client);
    admitted(await other.limiter.admit('key_r', limits, 0));
  });

  it('spends one script on the admission and one on settle and release together', async () => {
    const { client, limiter } = openProcess(freshPrefix());
    const admission = admitted(await limiter.admit('key_s', LIMITS, 100));
    const before = await evalshaCalls(client);
    admission.settle(40);
    admission.release();
    await quiesce(client);
    assert.equal(await evalshaCalls(client) - before, 1);
    assert.equal((await limiter.peek('key_s', LIMITS)).tokens, 40);
  });

  it('falls back to its own limits at once while the server is paused, and shares them again once it answers', async () => {
    const own = await startRedis();
    try {
      const prefix = freshPrefix();
      const p = openProcess(prefix, { url: own.url, timeoutMs: 200 });
      const limits: LimitSet = { rpm: 2, tpm: Infinity, concurrency: Infinity };
      admitted(await p.limiter.admit('key_d', limits, 0));
      own.pause();
      // Real time: the 200 ms timeout is a real socket's, against a paused real server.
      const started = performance.now();
      const during = await p.limiter.admit('key_d', limits, 0);
      assert.ok(performance.now() - started < 1200, 'no admission waits much longer than the timeout');
      assert.equal(during.ok, true, 'admitted by the process\'s own limiter');
      assert.equal(p.health.degraded(), true);
      const fast = performance.now();
      admitted(await p.limiter.admit('key_d', limits, 0));
      assert.ok(performance.now() - fast < 50, 'while degraded, nothing waits for the server');
      refused(await p.limiter.admit('key_d', limits, 0));
      own.resume();
      await waitUntil(() => !p.health.degraded(), 'back without a restart', { pollMs: 20 });
      // The admission that timed out may still have run once the server woke (RESP cannot take a
      // command back): shared counts are never under, at worst over by what was in flight.
      admitted(await p.limiter.admit('key_e', limits, 0));
      const other = openProcess(prefix, { url: own.url });
      assert.equal((await other.limiter.peek('key_e', limits)).requests, 1, 'counted on the server again');
    } finally {
      own.resume();
      await own.stop();
    }
  });

  it('refuses model requests with 503 state_unavailable under on_failure closed while the server is down', async () => {
    const own = await startRedis();
    try {
      const p = openProcess(freshPrefix(), { url: own.url, timeoutMs: 200, policy: 'closed' });
      admitted(await p.limiter.admit('key_x', LIMITS, 0));
      await own.stop();
      await waitUntil(() => p.health.degraded(), 'the process noticing the server gone', { pollMs: 20 });
      assert.throws(() => p.limiter.check('key_x', LIMITS, 'model'), (err: unknown) => err instanceof GatewayError && err.status === 503 && err.code === 'state_unavailable');
      await assert.rejects(p.limiter.admit('key_x', LIMITS, 0), (err: unknown) => err instanceof GatewayError && err.code === 'state_unavailable');
      assert.equal(p.limiter.check('key_x', LIMITS, 'unadmitted'), undefined, 'count_tokens is not a model request');
      assert.equal((await p.limiter.peek('key_x', LIMITS)).state.requestLimit, 5, 'headers still come, from this process');
    } finally {
      await own.stop();
    }
  });
});
