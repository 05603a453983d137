/**
 * Budget reservations on a real state server: two gateways sharing it hold one budget between
 * them, and a hold whose process stopped refreshing it is reclaimed after its lease.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import type { Responder } from '../helpers/fake-upstream.ts';
import { PRICED_MODELS, chat, chatJson } from '../helpers/usage.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { createRespClient } from '../../src/state/resp.ts';
import { createStateHealth } from '../../src/state/health.ts';
import { createSharedBudgetHolds } from '../../src/state/budget-holds.ts';
import { GatewayError } from '../../src/common/errors.ts';

const skip = redisSkip();

describe('budget holds on a shared state server', { skip }, () => {
  let redis: TestRedis;
  before(async () => { redis = await startRedis(); });
  after(async () => { await redis?.stop(); });

  it('holds one budget across two gateways: forty requests at once spend past it by at most one request', async () => {
    // Issue 25: budgets were checked against the spend alone, so requests in flight together overspent it 801 times.
    const config = { models: PRICED_MODELS, state: { url: redis.url, timeout_ms: 1000 }, limits: { shutdown_timeout_ms: 500 } };
    const gateways: TestGateway[] = [await startTestGateway({ config }), await startTestGateway({ config })];
    try {
      const [a, b] = gateways as [TestGateway, TestGateway];
      const capped = await a.gateway.keys.create({ name: 'capped', tier: 'pro', budget: { usd: 0.05, period: 'day' } });
      a.gateway.usage.record({ keyId: capped.record.id, model: 'gpt-test', at: Date.now(), inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.049 });
      await a.gateway.usage.flush();
      const slow: Responder = async (req, res, seen) => {
        await new Promise((r) => setTimeout(r, 200));
        await chatJson({ prompt: 1000, completion: 100, cached: 0 })(req, res, seen);
      };
      a.upstream.fallback = slow;
      b.upstream.fallback = slow;
      // Each reserves about what it is reported to cost: 1,000 tokens in, 100 out ($0.0028).
      const content = 'word '.repeat(790);
      await new Promise((r) => setTimeout(r, 1_100)); // the key reaches b's replica
      const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
        const res = await chat(i % 2 === 0 ? a : b, capped.key, 'gpt-test', { max_tokens: 100, messages: [{ role: 'user', content }] });
        return { status: res.status, body: await res.text() };
      }));
      const admitted = answers.filter((x) => x.status === 200).length;
      assert.ok(admitted >= 1, JSON.stringify(answers.map((x) => x.status)));
      for (const answer of answers.filter((x) => x.status !== 200)) assert.match(answer.body, /budget_reserved|budget_exceeded/);
      await a.gateway.usage.flush();
      await b.gateway.usage.flush();
      const spent = await a.gateway.usage.spend(capped.record.id, Date.now() - 3_600_000);
      assert.ok(spent <= 0.05 + 0.0028 + 1e-9, `spent $${spent.toFixed(4)} with ${admitted} of 40 admitted`);
    } finally {
      for (const t of gateways) await t.close();
    }
  });

  it('reclaims the hold of a process that stopped refreshing it once its lease runs out', async () => {
    const client = createRespClient({ url: redis.url, timeoutMs: 1000 });
    const health = createStateHealth({ client, policy: 'local', displayUrl: 'test' });
    let clock = Date.UTC(2026, 2, 14, 12);
    const flushed: Array<() => void> = [];
    const ledger = { spendCached: () => 0, afterFlush: (fn: () => void) => { flushed.push(fn); } };
    const dead = createSharedBudgetHolds({ client, health, ledger, prefix: 'bh1:', leaseMs: 1_000, now: () => clock });
    const alive = createSharedBudgetHolds({ client, health, ledger, prefix: 'bh1:', leaseMs: 1_000, now: () => clock });
    dead.close();
    alive.close();
    try {
      const budget = { usd: 1, period: 'day' as const };
      await dead.reserve('key_x', budget, 0.6);
      await assert.rejects(alive.reserve('key_x', budget, 0.6), (err: unknown) => err instanceof GatewayError && err.status === 429 && err.code === 'budget_reserved');
      clock += 1_001;
      const hold = await alive.reserve('key_x', budget, 0.6);
      assert.ok(hold, 'the dead process\'s $0.60 is free again');
      await assert.rejects(alive.reserve('key_x', budget, 0.6), (err: unknown) => err instanceof GatewayError && err.code === 'budget_reserved');
      hold.release();
      assert.equal(flushed.length, 1, 'a hold is let go once the ledger has flushed its cost');
    } finally {
      health.close();
      await client.close();
    }
  });
});
