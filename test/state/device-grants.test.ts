import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { POLL_TOLERANCE_MS, createDeviceFlow, formatUserCode, hashDeviceCode } from '../../src/auth/device-flow.ts';
import type { DeviceFlow, GrantView, StartedGrant } from '../../src/auth/device-flow.ts';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedDeviceFlow } from '../../src/state/device-grants.ts';
import type { SharedDeviceFlow } from '../../src/state/device-grants.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';

const skip = redisSkip();
const ADMIN = 'key_0000000000000000';

let redis: TestRedis;
let prefixCount = 0;
const clients: RespClient[] = [];

function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => { t += ms; } };
}

/** Three "processes" on one server, sharing a clock and a prefix. */
function threeProcesses(now: () => number, options: { maxPending?: number } = {}): [SharedDeviceFlow, SharedDeviceFlow, SharedDeviceFlow] {
  prefixCount += 1;
  const prefix = `d${prefixCount}:`;
  const open = (): SharedDeviceFlow => {
    const client = createRespClient({ url: redis.url, timeoutMs: 2000 });
    clients.push(client);
    return createSharedDeviceFlow({ client, prefix, now, ...options });
  };
  return [open(), open(), open()];
}

function started(grant: StartedGrant | undefined): StartedGrant {
  assert.ok(grant, 'the grant should start');
  return grant;
}

/** What a view says, without the random parts. */
const shape = (view: GrantView | undefined) => (view === undefined ? undefined : { clientName: view.clientName, status: view.status, expiresAt: view.expiresAt });

describe('device grants on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const client of clients) await client.close();
    await redis?.stop();
  });

  it('follows a grant started on one process, approved on a second and collected once on a third, as the in-memory store does', async () => {
    const c = clock();
    const [a, b, d] = threeProcesses(c.now);
    const local = createDeviceFlow({ now: c.now });
    const grants = [started(await a.start('my cli', '10.0.0.1')), started(local.start('my cli', '10.0.0.1'))] as const;
    const [shared, mine] = grants;
    const both = async <T>(ask: (flow: DeviceFlow, grant: StartedGrant) => T | Promise<T>, on: DeviceFlow = b): Promise<void> => {
      assert.deepEqual(await ask(on, shared), await ask(local, mine));
    };
    await both((flow, g) => flow.poll(g.deviceCode), d);
    c.advance(2_000);
    await both((flow, g) => flow.poll(g.deviceCode), b);
    c.advance(5_000);
    await both((flow, g) => flow.poll(g.deviceCode), a);
    c.advance(15_000 - POLL_TOLERANCE_MS);
    await both((flow, g) => flow.poll(g.deviceCode), d);
    await both(async (flow, g) => shape(await flow.find(formatUserCode(g.userCode).toLowerCase())));
    await both(async (flow) => (await flow.pending()).map(shape));
    await both((flow) => flow.liveCount('10.0.0.1'));
    await both(async (flow, g) => (await flow.approve(g.userCode, { tier: 'pro', name: 'laptop', byKeyId: ADMIN })).outcome);
    await both(async (flow, g) => (await flow.approve(g.userCode, { tier: 'basic', byKeyId: ADMIN })), d);
    await both(async (flow, g) => {
      const result = await flow.poll(g.deviceCode);
      return result.outcome === 'approved' ? { tier: result.tier, keyName: result.keyName, grant: shape(result.grant) } : result;
    }, d);
    // Two processes collecting at once: the key is for exactly one of them.
    const claims = await Promise.all([a.redeem(shared.deviceCode), d.redeem(shared.deviceCode), b.redeem(shared.deviceCode)]);
    assert.deepEqual(claims.sort(), [false, false, true]);
    assert.equal(local.redeem(mine.deviceCode), true);
    await both((flow, g) => flow.poll(g.deviceCode), a);
    await both((flow) => flow.liveCount());
    // Only a hash of the device code is kept.
    const raw = createRespClient({ url: redis.url });
    clients.push(raw);
    const keys = await raw.command(['KEYS', `d${prefixCount}:*`]);
    assert.ok(Array.isArray(keys) && !keys.some((k) => String(k).includes(shared.deviceCode)));
    assert.equal(await raw.command(['EXISTS', `d${prefixCount}:dev:g:${hashDeviceCode(shared.deviceCode)}`]), 0, 'a redeemed grant is forgotten');
  });

  it('denies, expires and forgets as the in-memory store does', async () => {
    const c = clock();
    const [a, b] = threeProcesses(c.now);
    const local = createDeviceFlow({ now: c.now });
    const denied = [started(await a.start('denied')), started(local.start('denied'))] as const;
    const expiring = [started(await a.start('slow')), started(local.start('slow'))] as const;
    assert.deepEqual(await b.deny(formatUserCode(denied[0].userCode)).then((r) => r.outcome), local.deny(denied[1].userCode).outcome);
    assert.deepEqual(await b.deny(denied[0].userCode).then((r) => r.outcome === 'already_decided' && r.status), 'denied');
    assert.deepEqual(await a.poll(denied[0].deviceCode), local.poll(denied[1].deviceCode));
    assert.equal(await b.find(denied[0].userCode), undefined, 'a denied grant is not offered for approval');
    assert.equal(await a.liveCount(), local.liveCount());
    c.advance(900_000);
    assert.deepEqual(await b.poll(expiring[0].deviceCode), local.poll(expiring[1].deviceCode));
    assert.deepEqual(await b.approve(expiring[0].userCode, { tier: 'basic', byKeyId: ADMIN }), local.approve(expiring[1].userCode, { tier: 'basic', byKeyId: ADMIN }));
    assert.equal(await a.liveCount(), 0);
    c.advance(900_000);
    assert.deepEqual(await b.poll(expiring[0].deviceCode), local.poll(expiring[1].deviceCode));
    assert.deepEqual(await a.poll('never-issued'), { outcome: 'invalid_grant' });
    assert.deepEqual(await a.approve('BCDF-GHJK', { tier: 'basic', byKeyId: ADMIN }), { outcome: 'not_found' });
  });

  it('holds the cap on live grants across processes, and makes room as grants are decided', async () => {
    const c = clock();
    const [a, b, d] = threeProcesses(c.now, { maxPending: 3 });
    const first = started(await a.start('one', 'p1'));
    started(await b.start('two', 'p1'));
    started(await d.start('three', 'p2'));
    assert.equal(await a.start('four', 'p3'), undefined);
    assert.equal(await d.liveCount('p1'), 2);
    assert.equal(await d.liveCount('p2'), 1);
    await b.deny(first.userCode);
    assert.equal(await d.liveCount('p1'), 1);
    started(await d.start('four', 'p3'));
    assert.deepEqual((await a.pending()).map((g) => g.clientName), ['two', 'three', 'four']);
  });

  it('refuses with 503 state_unavailable when the server is gone', async () => {
    const own = await startRedis();
    const client = createRespClient({ url: own.url, timeoutMs: 200 });
    clients.push(client);
    const flow = createSharedDeviceFlow({ client, prefix: 'gone:' });
    started(await flow.start('cli'));
    await own.stop();
    await assert.rejects(flow.start('cli'), (err: unknown) => err instanceof GatewayError && err.status === 503 && err.code === 'state_unavailable');
    await assert.rejects(flow.poll('x'), (err: unknown) => err instanceof GatewayError && err.code === 'state_unavailable');
  });
});
