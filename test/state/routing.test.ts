import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createStateHealth } from '../../src/state/health.ts';
import type { StateHealth } from '../../src/state/health.ts';
import { createSharedRoutingState } from '../../src/state/routing.ts';
import type { SharedRoutingState, SharedRoutingStateOptions } from '../../src/state/routing.ts';
import { afterFailure, DEPLOYMENT_REST, isResting } from '../../src/routing/rests.ts';
import { createRouter } from '../../src/routing/router.ts';
import type { Plan } from '../../src/routing/router.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { model, provider, T0 } from '../helpers/routing.ts';

const skip = redisSkip();

let redis: TestRedis;
let prefixCount = 0;
const opened: Array<{ client: RespClient; health: StateHealth; routing: SharedRoutingState }> = [];

function freshPrefix(): string {
  prefixCount += 1;
  return `r${prefixCount}:`;
}

type ProcessOptions = Partial<Omit<SharedRoutingStateOptions, 'client' | 'health'>> & { timeoutMs?: number };

/** One "process": its own connection, health and routing state on the shared server. */
function openProcess(prefix: string, options: ProcessOptions = {}): { client: RespClient; health: StateHealth; routing: SharedRoutingState } {
  const { timeoutMs, ...rest } = options;
  const client = createRespClient({ url: redis.url, timeoutMs: timeoutMs ?? 2_000 });
  const health = createStateHealth({ client, policy: 'local', displayUrl: 'test' });
  const routing = createSharedRoutingState({ client, health, prefix, leaseMs: 30_000, ...rest });
  const process = { client, health, routing };
  opened.push(process);
  return process;
}

/** Resolves once `check` holds, polling every 10 ms; fails after `withinMs`. Returns the time it took. */
async function within(withinMs: number, check: () => boolean): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > withinMs) assert.fail(`not seen within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - started;
}

/** Lets writes sent without waiting reach the server. */
async function settle(client: RespClient): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    await client.command(['PING']);
  }
}

const rest5s = (nowMs: number) => (current: Parameters<typeof afterFailure>[0]) => afterFailure(current, 'immediate', nowMs, undefined, DEPLOYMENT_REST);

describe('the routing state on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const { client, health, routing } of opened) {
      routing.close();
      health.close();
      await client.close();
    }
    await redis?.stop();
  });

  it('honours a rest learned by one of three processes in the other two within 1 s, through each one\'s router', async () => {
    const prefix = freshPrefix();
    const two = model('two', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1 }, { provider: 'b', upstream_id: 'x', weight: 1 }] });
    const providers = new Map([['a', provider('a')], ['b', provider('b')]]);
    const routerOn = (routing: SharedRoutingState) => createRouter({ models: [two], provider: (id) => providers.get(id), hasCredential: () => true, state: routing, random: () => 0 });
    const [one, ...others] = [routerOn(openProcess(prefix).routing), routerOn(openProcess(prefix).routing), routerOn(openProcess(prefix).routing)];
    const firstChoice = (router: ReturnType<typeof routerOn>): string | undefined => {
      const seen = router.plan(two, { keyId: 'k' }) as Plan;
      return seen.ok ? seen.candidates[0]!.deployment.id : undefined;
    };
    for (const router of [one!, ...others]) assert.equal(firstChoice(router), 'a/x');
    const plan = one!.plan(two, { keyId: 'k' }) as Plan & { ok: true };
    const attempt = one!.begin(plan, plan.candidates[0]!.deployment, undefined);
    attempt.outcome({ status: 503 });
    attempt.end();
    assert.equal(firstChoice(one!), 'b/x', 'at once where it was learned');
    const tookMs = await within(1_000, () => others.every((router) => firstChoice(router) === 'b/x'));
    assert.ok(tookMs < 1_000, `${tookMs} ms`);
  });

  it('counts three 500s in a row across processes, and doubles the rest after a probe another process made', async () => {
    const prefix = freshPrefix();
    let now = T0;
    const clock = { now: () => now };
    const a = openProcess(prefix, clock);
    const b = openProcess(prefix, clock);
    const counted = (at: number) => (current: Parameters<typeof afterFailure>[0]) => afterFailure(current, 'counted', at, undefined, DEPLOYMENT_REST);
    const stale = openProcess(prefix, clock);
    a.routing.changeRest('deployment:d', counted(now));
    await settle(a.client);
    await b.routing.sync();
    await stale.routing.sync();
    b.routing.changeRest('deployment:d', counted(now));
    await settle(b.client);
    await a.routing.sync();
    assert.equal(a.routing.rest('deployment:d')?.strikes, 2);
    // The third failure comes from a process whose copy missed the second: the server's record
    // decides (the step runs again over it), so it is the third strike, not the second.
    assert.equal(stale.routing.rest('deployment:d')?.strikes, 1);
    stale.routing.changeRest('deployment:d', counted(now));
    await settle(stale.client);
    await settle(stale.client);
    await b.routing.sync();
    assert.ok(isResting(b.routing.rest('deployment:d'), now), 'the third strike, counted across processes, rests it');
    now += 5_000;
    b.routing.changeRest('deployment:d', rest5s(now));
    await settle(b.client);
    await a.routing.sync();
    assert.equal(a.routing.rest('deployment:d')!.untilMs - now, 10_000, 'the probe failing again doubled the rest, seen by the other process');
  });

  it('runs the step again on the server\'s record when two processes change one subject at once', async () => {
    const prefix = freshPrefix();
    const a = openProcess(prefix, { now: () => T0 });
    const b = openProcess(prefix, { now: () => T0 });
    const strike = (current: Parameters<typeof afterFailure>[0]) => afterFailure(current, 'counted', T0, undefined, DEPLOYMENT_REST);
    a.routing.changeRest('deployment:e', strike);
    b.routing.changeRest('deployment:e', strike);
    await settle(a.client);
    await settle(b.client);
    await a.routing.sync();
    assert.equal(a.routing.rest('deployment:e')?.strikes, 2, 'neither strike was lost');
  });

  it('shares requests in flight and per-deployment windows, and a dead process\'s in-flight leases run out', async () => {
    const prefix = freshPrefix();
    const a = openProcess(prefix, { leaseMs: 300 });
    const b = openProcess(prefix, { leaseMs: 300 });
    const leases = [a.routing.begin('p/x', 100), a.routing.begin('p/x', 100), a.routing.begin('p/x', 100)];
    b.routing.begin('p/x', 50).end(40);
    await a.routing.sync();
    await b.routing.sync();
    assert.equal(b.routing.inFlight('p/x'), 3);
    assert.equal(a.routing.inFlight('p/x'), 3, 'its own, and none of b\'s: they ended');
    assert.deepEqual(b.routing.usage('p/x'), { requests: 4, tokens: 340 });
    leases[0]!.end(10);
    await a.routing.sync();
    await b.routing.sync();
    assert.equal(b.routing.inFlight('p/x'), 2);
    assert.deepEqual(b.routing.usage('p/x'), { requests: 4, tokens: 250 });
    // a stops syncing, as a process that died does.
    a.routing.close();
    await new Promise((resolve) => setTimeout(resolve, 400));
    await b.routing.sync();
    assert.equal(b.routing.inFlight('p/x'), 0, 'its leases ran out');
    assert.deepEqual(b.routing.usage('p/x'), { requests: 4, tokens: 250 }, 'what it sent still counts for the window');
  });

  it('shares the sticky map, bounded by idle time and by count', async () => {
    const prefix = freshPrefix();
    let now = T0;
    const a = openProcess(prefix, { now: () => now, sticky: { maxEntries: 3, idleMs: 60_000 } });
    const b = openProcess(prefix, { now: () => now, sticky: { maxEntries: 3, idleMs: 60_000 } });
    a.routing.bind('key_a\u0000user:u1', { deployment: 'a/x', key: 'KEY_A' });
    a.routing.bind('key_a\u0000user:u2', { deployment: 'b/x', key: undefined });
    await settle(a.client);
    assert.deepEqual(await b.routing.sticky('key_a\u0000user:u1'), { deployment: 'a/x', key: 'KEY_A' });
    assert.deepEqual(await b.routing.sticky('key_a\u0000user:u2'), { deployment: 'b/x', key: undefined });
    assert.equal(await b.routing.sticky('key_a\u0000user:nobody'), undefined);
    now += 1;
    for (const u of ['u3', 'u4']) a.routing.bind(`key_a\u0000user:${u}`, { deployment: 'a/x', key: undefined });
    await settle(a.client);
    assert.equal(await b.routing.sticky('key_a\u0000user:u1'), undefined, 'the least recently used went past 3 entries');
    now += 60_000;
    assert.equal(await b.routing.sticky('key_a\u0000user:u4'), undefined, 'an hour (here a minute) idle is gone');
  });

  it('falls back to its own state at once when the server does not answer, and shares again when it is back', async () => {
    const prefix = freshPrefix();
    const a = openProcess(prefix, { timeoutMs: 150 });
    a.routing.bind('key_a\u0000user:solo', { deployment: 'a/x', key: undefined });
    await settle(a.client);
    redis.pause();
    try {
      const started = performance.now();
      assert.deepEqual(await a.routing.sticky('key_a\u0000user:solo'), { deployment: 'a/x', key: undefined }, 'its own copy');
      assert.ok(performance.now() - started < 1_000);
      await within(2_000, () => a.health.degraded());
      a.routing.changeRest('deployment:z', rest5s(Date.now()));
      assert.ok(isResting(a.routing.rest('deployment:z'), Date.now()), 'a rest still takes effect here');
      const quick = performance.now();
      await a.routing.sticky('key_a\u0000user:other');
      await a.routing.sync();
      assert.ok(performance.now() - quick < 50, 'nothing waits on a server known to be down');
    } finally {
      redis.resume();
    }
    await within(5_000, () => !a.health.degraded());
    a.routing.bind('key_a\u0000user:later', { deployment: 'b/x', key: undefined });
    await settle(a.client);
    const b = openProcess(prefix);
    assert.deepEqual(await b.routing.sticky('key_a\u0000user:later'), { deployment: 'b/x', key: undefined });
  });
});
