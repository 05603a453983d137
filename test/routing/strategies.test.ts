/**
 * The strategies' distributions, proved statistically with `Math.random` (the router's default).
 *
 * Tolerances: Hoeffding's inequality bounds the chance that a share measured over N independent
 * draws strays from its probability p by t or more: P(|X/N − p| ≥ t) ≤ 2·exp(−2·N·t²). For a
 * false-failure probability below 1e-6 per assertion, t = sqrt(ln(2e6) / (2N)); with N = 20 000
 * that is t = sqrt(14.51 / 40 000) = 0.0191. When one test checks k shares, each uses
 * ln(2k·1e6) instead (a union bound), so the test as a whole still fails wrongly less than once in
 * a million runs. No normal approximation is involved.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXPLORE_ONE_IN, orderDeployments } from '../../src/routing/strategies.ts';
import type { StrategyView } from '../../src/routing/strategies.ts';
import type { Deployment, ModelDeployment } from '../../src/routing/deployments.ts';

const N = 20_000;

/** Hoeffding's t for N draws and k shares checked at once, false failure < 1e-6. */
function tolerance(draws: number, shares = 1): number {
  return Math.sqrt(Math.log(2 * shares * 1e6) / (2 * draws));
}

function deployment(id: string, tpm = Infinity): Deployment {
  return { id, provider: id.split('/')[0]!, upstreamId: id.split('/')[1]!, rpm: Infinity, tpm };
}

function entry(id: string, weight = 1, tpm = Infinity): ModelDeployment {
  return { deployment: deployment(id, tpm), weight };
}

function viewOf(values: { inFlight?: Record<string, number>; tokens?: Record<string, number>; latency?: Record<string, number> }): StrategyView {
  return {
    inFlight: (d) => values.inFlight?.[d.id] ?? 0,
    tokens: (d) => values.tokens?.[d.id] ?? 0,
    latencyMs: (d) => values.latency?.[d.id],
  };
}

function firstShares(run: () => readonly ModelDeployment[], draws: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < draws; i++) {
    const first = run()[0]!.deployment.id;
    counts.set(first, (counts.get(first) ?? 0) + 1);
  }
  return new Map([...counts].map(([id, count]) => [id, count / draws]));
}

function assertNear(actual: number | undefined, expected: number, t: number, what: string): void {
  assert.ok(actual !== undefined && Math.abs(actual - expected) < t, `${what}: ${actual} not within ${expected} ± ${t.toFixed(4)}`);
}

describe('weighted', () => {
  it('puts each deployment first in proportion to its weight', () => {
    const candidates = [entry('a/x', 1), entry('b/x', 2), entry('c/x', 3)];
    const shares = firstShares(() => orderDeployments('weighted', candidates, viewOf({}), Math.random), N);
    const t = tolerance(N, 3);
    assertNear(shares.get('a/x'), 1 / 6, t, 'weight 1 of 6');
    assertNear(shares.get('b/x'), 2 / 6, t, 'weight 2 of 6');
    assertNear(shares.get('c/x'), 3 / 6, t, 'weight 3 of 6');
  });

  it('orders every deployment once, the others by further weighted draws', () => {
    const candidates = [entry('a/x', 1), entry('b/x', 2), entry('c/x', 3)];
    // P(b second) = P(a first)·2/5 + P(c first)·2/3 = 1/15 + 1/3 = 0.4.
    let bSecond = 0;
    for (let i = 0; i < N; i++) {
      const order = orderDeployments('weighted', candidates, viewOf({}), Math.random);
      assert.deepEqual(order.map((c) => c.deployment.id).sort(), ['a/x', 'b/x', 'c/x']);
      if (order[1]!.deployment.id === 'b/x') bSecond++;
    }
    assertNear(bSecond / N, 0.4, tolerance(N), 'b second');
  });

  it('follows the injected random source: the draw decides the first place', () => {
    const candidates = [entry('a/x', 3), entry('b/x', 1)];
    assert.equal(orderDeployments('weighted', candidates, viewOf({}), () => 0.74)[0]!.deployment.id, 'a/x');
    assert.equal(orderDeployments('weighted', candidates, viewOf({}), () => 0.76)[0]!.deployment.id, 'b/x');
  });
});

describe('least_busy', () => {
  it('puts the deployment with fewest requests in flight first, then the others by count', () => {
    const candidates = [entry('a/x'), entry('b/x'), entry('c/x')];
    const order = orderDeployments('least_busy', candidates, viewOf({ inFlight: { 'a/x': 5, 'b/x': 0, 'c/x': 2 } }), Math.random);
    assert.deepEqual(order.map((c) => c.deployment.id), ['b/x', 'c/x', 'a/x']);
  });

  it('breaks ties at random, not by the order of the list', () => {
    const candidates = [entry('a/x'), entry('b/x')];
    const shares = firstShares(() => orderDeployments('least_busy', candidates, viewOf({}), Math.random), N);
    assertNear(shares.get('a/x'), 0.5, tolerance(N), 'a first on a tie');
  });
});

describe('latency', () => {
  it('tries a deployment without a sample first', () => {
    const candidates = [entry('a/x'), entry('b/x'), entry('c/x')];
    for (let i = 0; i < 200; i++) {
      const order = orderDeployments('latency', candidates, viewOf({ latency: { 'a/x': 100, 'c/x': 50 } }), Math.random);
      assert.equal(order[0]!.deployment.id, 'b/x');
      assert.deepEqual(order.slice(1).map((c) => c.deployment.id), ['c/x', 'a/x']);
    }
  });

  it('prefers the fastest, yet sends about one request in twenty elsewhere so a slow deployment is measured again', () => {
    const candidates = [entry('fast/x'), entry('slow/x')];
    const view = viewOf({ latency: { 'fast/x': 100, 'slow/x': 2_000 } });
    const shares = firstShares(() => orderDeployments('latency', candidates, view, Math.random), N);
    assertNear(shares.get('slow/x'), 1 / EXPLORE_ONE_IN, tolerance(N), 'slow first');
  });
});

describe('usage', () => {
  it('puts the deployment with most tokens/min headroom first', () => {
    const candidates = [entry('a/x', 1, 10_000), entry('b/x', 1, 100_000), entry('c/x', 1, 50_000)];
    const order = orderDeployments('usage', candidates, viewOf({ tokens: { 'a/x': 0, 'b/x': 95_000, 'c/x': 10_000 } }), Math.random);
    assert.deepEqual(order.map((c) => c.deployment.id), ['c/x', 'a/x', 'b/x']);
  });

  it('counts a deployment without tpm as unbounded, the least used of those first', () => {
    const candidates = [entry('a/x', 1, 1_000_000), entry('b/x'), entry('c/x')];
    const order = orderDeployments('usage', candidates, viewOf({ tokens: { 'a/x': 0, 'b/x': 500, 'c/x': 20 } }), Math.random);
    assert.deepEqual(order.map((c) => c.deployment.id), ['c/x', 'b/x', 'a/x']);
  });
});

it('leaves a single candidate as it is, whatever the strategy', () => {
  const one = [entry('a/x')];
  for (const strategy of ['weighted', 'least_busy', 'latency', 'usage'] as const) {
    assert.equal(orderDeployments(strategy, one, viewOf({}), () => 0.5), one);
  }
});
