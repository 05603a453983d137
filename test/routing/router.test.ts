import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelEntry } from '../../src/config/types.ts';
import type { AttemptOutcome, Plan, PlanOptions } from '../../src/routing/router.ts';
import { scopedConversationKey } from '../../src/routing/sticky.ts';
import { model, pool, provider, routingFixture } from '../helpers/routing.ts';
import type { RoutingFixture } from '../helpers/routing.ts';

type Planned = Plan & { ok: true };

function planned(plan: Plan | Promise<Plan>): Planned {
  assert.ok(!(plan instanceof Promise), 'the in-memory state answers at once');
  assert.equal(plan.ok, true, `expected candidates, got ${JSON.stringify(plan)}`);
  return plan as Planned;
}

/** Plans, tries the first candidate with its first key, reports `outcome`, ends; returns `deployment#key`. */
function attempt(fx: RoutingFixture, m: ModelEntry, outcome: AttemptOutcome, options: Partial<PlanOptions> = {}, usage: { tokens?: number; responseId?: string } = {}): string {
  const plan = planned(fx.router.plan(m, { keyId: 'key_a', ...options }));
  const candidate = plan.candidates[0]!;
  const handle = fx.router.begin(plan, candidate.deployment, candidate.keys[0]);
  handle.outcome(outcome);
  handle.end(usage);
  return `${candidate.deployment.id}#${candidate.keys[0]?.label ?? '-'}`;
}

function ids(plan: Plan | Promise<Plan>): string[] {
  return planned(plan).candidates.map((c) => c.deployment.id);
}

const twoDeployments = model('m', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1 }, { provider: 'b', upstream_id: 'x', weight: 1 }] });

describe('deployments and their rests', () => {
  it('plans a model\'s only deployment with its only key, and never rests it', () => {
    const fx = routingFixture([provider('p', { apiKey: 'env:P_KEY', keyless: false })], []);
    const m = model('solo');
    for (let i = 0; i < 5; i++) assert.equal(attempt(fx, m, { status: 429, retryAfterMs: 30_000 }), 'p/solo#P_KEY');
    for (let i = 0; i < 5; i++) attempt(fx, m, { status: 503 });
    assert.deepEqual(ids(fx.router.plan(m, { keyId: 'k' })), ['p/solo']);
    assert.equal(fx.events.length, 0);
  });

  it('rests a deployment answering 429 for its retry-after, leaving it out until then', () => {
    const fx = routingFixture([provider('a'), provider('b')], [twoDeployments], { random: () => 0 });
    assert.equal(attempt(fx, twoDeployments, { status: 429, retryAfterMs: 3_000 }), 'a/x#-');
    assert.deepEqual(ids(fx.router.plan(twoDeployments, { keyId: 'k' })), ['b/x']);
    fx.clock.now += 2_999;
    assert.deepEqual(ids(fx.router.plan(twoDeployments, { keyId: 'k' })), ['b/x']);
    fx.clock.now += 1;
    assert.deepEqual(ids(fx.router.plan(twoDeployments, { keyId: 'k' })), ['a/x', 'b/x']);
    assert.deepEqual(fx.events.map((e) => [e.kind, e.deployment, e.cause, e.restMs]), [['deployment', 'a/x', '429', 3_000]]);
  });

  it('rests a deployment answering 503 for 5 s, then 10 s when the first request after fails again', () => {
    const fx = routingFixture([provider('a'), provider('b')], [twoDeployments], { random: () => 0 });
    attempt(fx, twoDeployments, { status: 503 });
    fx.clock.now += 4_999;
    assert.deepEqual(ids(fx.router.plan(twoDeployments, { keyId: 'k' })), ['b/x']);
    fx.clock.now += 1;
    assert.equal(attempt(fx, twoDeployments, { status: 503 }), 'a/x#-');
    fx.clock.now += 9_999;
    assert.deepEqual(ids(fx.router.plan(twoDeployments, { keyId: 'k' })), ['b/x']);
    fx.clock.now += 1;
    assert.equal(attempt(fx, twoDeployments, { status: 200 }), 'a/x#-');
    attempt(fx, twoDeployments, { failure: 'unreachable' });
    fx.clock.now += 5_000;
    assert.deepEqual(ids(fx.router.plan(twoDeployments, { keyId: 'k' })), ['a/x', 'b/x'], 'a success reset the doubling: 5 s again');
    assert.deepEqual(fx.events.map((e) => e.restMs), [5_000, 10_000, 5_000]);
  });

  it('rests a deployment after three 500-class failures in a row', () => {
    const fx = routingFixture([provider('a'), provider('b')], [twoDeployments], { random: () => 0 });
    attempt(fx, twoDeployments, { status: 500 });
    attempt(fx, twoDeployments, { status: 502 });
    assert.equal(fx.router.usable(twoDeployments, fx.router.deployments.get('a/x')!), true);
    attempt(fx, twoDeployments, { failure: 'timeout' });
    assert.equal(fx.router.usable(twoDeployments, fx.router.deployments.get('a/x')!), false);
  });

  it('refuses when every deployment rests, with the earliest moment one is back', () => {
    const fx = routingFixture([provider('a'), provider('b')], [twoDeployments], { random: () => 0 });
    attempt(fx, twoDeployments, { status: 429, retryAfterMs: 8_000 });
    attempt(fx, twoDeployments, { status: 429, retryAfterMs: 4_000 });
    const plan = fx.router.plan(twoDeployments, { keyId: 'k' });
    assert.deepEqual(plan, { ok: false, model: twoDeployments, reason: 'resting', retryAfterMs: 4_000 });
  });

  it('shares one deployment\'s state between two models that list it', () => {
    const other = model('m2', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1 }, { provider: 'c', upstream_id: 'y', weight: 1 }] });
    const solo = model('m3', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1 }] });
    const fx = routingFixture([provider('a'), provider('b'), provider('c')], [twoDeployments, other, solo], { random: () => 0 });
    attempt(fx, twoDeployments, { status: 529 });
    assert.deepEqual(ids(fx.router.plan(other, { keyId: 'k' })), ['c/y']);
    assert.deepEqual(ids(fx.router.plan(solo, { keyId: 'k' })), ['a/x'], 'the only deployment of a model never rests for it');
    assert.equal(fx.router.deployments.of(solo)[0]!.deployment, fx.router.deployments.of(twoDeployments)[0]!.deployment);
  });
});

describe('limits of a deployment', () => {
  it('leaves out a deployment at its rpm and refuses with the wait when every one is', () => {
    const limited = model('l', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1, rpm: 2 }, { provider: 'b', upstream_id: 'x', weight: 1, rpm: 1 }] });
    const fx = routingFixture([provider('a'), provider('b')], [limited], { random: () => 0 });
    attempt(fx, limited, { status: 200 });
    attempt(fx, limited, { status: 200 });
    assert.deepEqual(ids(fx.router.plan(limited, { keyId: 'k' })), ['b/x']);
    attempt(fx, limited, { status: 200 });
    const refused = fx.router.plan(limited, { keyId: 'k' });
    assert.equal(refused instanceof Promise ? undefined : refused.ok === false && refused.reason, 'limits');
    assert.ok(!(refused instanceof Promise) && !refused.ok && refused.retryAfterMs > 59_000 && refused.retryAfterMs <= 61_000);
    fx.clock.now += 61_000;
    assert.deepEqual(ids(fx.router.plan(limited, { keyId: 'k' })).sort(), ['a/x', 'b/x']);
  });

  it('counts a request\'s reservation against tpm while it runs, then what it used', () => {
    const limited = model('t', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1, tpm: 1_000 }, { provider: 'b', upstream_id: 'x', weight: 1 }] });
    const fx = routingFixture([provider('a'), provider('b')], [limited], { random: () => 0 });
    const plan = planned(fx.router.plan(limited, { keyId: 'k', reservedTokens: 1_000 }));
    const running = fx.router.begin(plan, plan.candidates[0]!.deployment, undefined);
    assert.deepEqual(ids(fx.router.plan(limited, { keyId: 'k' })), ['b/x'], 'the reservation fills the tpm');
    running.outcome({ status: 200 });
    running.end({ tokens: 300 });
    assert.equal(fx.state.usage('a/x').tokens, 300);
    assert.deepEqual(ids(fx.router.plan(limited, { keyId: 'k' })), ['a/x', 'b/x']);
  });
});

describe('provider key pools', () => {
  const pooled = model('k', { provider: 'p', upstream_id: 'x' });

  it('spreads requests over the keys in turn', () => {
    const fx = routingFixture([pool('p', ['env:KEY_A', 'env:KEY_B', 'literal-secret'])], [pooled]);
    const used = Array.from({ length: 6 }, () => attempt(fx, pooled, { status: 200 }));
    assert.deepEqual(used, ['p/x#KEY_A', 'p/x#KEY_B', 'p/x#api_keys[2]', 'p/x#KEY_A', 'p/x#KEY_B', 'p/x#api_keys[2]']);
  });

  it('rests a key answering 401 for 5 minutes, reports it by label only, and goes on with the others', () => {
    const fx = routingFixture([pool('p', ['sk-live-first', 'env:KEY_B'])], [pooled]);
    assert.equal(attempt(fx, pooled, { status: 401 }), 'p/x#api_keys[0]');
    assert.deepEqual(fx.events, [{ kind: 'key', provider: 'p', deployment: undefined, key: 'api_keys[0]', cause: '401', restMs: 300_000 }]);
    assert.ok(!JSON.stringify(fx.events).includes('sk-live-first'));
    for (let i = 0; i < 4; i++) assert.equal(attempt(fx, pooled, { status: 200 }), 'p/x#KEY_B');
    fx.clock.now += 300_000;
    const keys = planned(fx.router.plan(pooled, { keyId: 'k' })).candidates[0]!.keys.map((k) => k.label);
    assert.deepEqual(keys.sort(), ['KEY_B', 'api_keys[0]']);
  });

  it('rests a key answering 429 on that deployment only, not the deployment', () => {
    const two = model('k2', { deployments: [{ provider: 'p', upstream_id: 'x', weight: 1 }, { provider: 'p', upstream_id: 'y', weight: 1 }] });
    const fx = routingFixture([pool('p', ['env:KEY_A', 'env:KEY_B'])], [two], { random: () => 0 });
    assert.equal(attempt(fx, two, { status: 429, retryAfterMs: 10_000 }), 'p/x#KEY_A');
    const plan = planned(fx.router.plan(two, { keyId: 'k' }));
    const keysOf = (id: string): string[] => plan.candidates.find((c) => c.deployment.id === id)!.keys.map((k) => k.label).sort();
    assert.deepEqual(keysOf('p/x'), ['KEY_B']);
    assert.deepEqual(keysOf('p/y'), ['KEY_A', 'KEY_B']);
    assert.deepEqual(fx.events.map((e) => [e.kind, e.deployment, e.key]), [['deployment_key', 'p/x', 'KEY_A']]);
  });

  it('leaves out keys whose credential does not resolve, and a deployment with none', () => {
    const two = model('k3', { deployments: [{ provider: 'p', upstream_id: 'x', weight: 1 }, { provider: 'q', upstream_id: 'x', weight: 1 }] });
    const fx = routingFixture([pool('p', ['env:KEY_A', 'env:KEY_B']), provider('q', { apiKey: 'env:Q', keyless: false })], [two], { random: () => 0 });
    fx.missing.add('p#0');
    fx.missing.add('q#0');
    const plan = planned(fx.router.plan(two, { keyId: 'k' }));
    assert.deepEqual(plan.candidates.map((c) => [c.deployment.id, c.keys.map((k) => k.label)]), [['p/x', ['KEY_B']]]);
    fx.missing.add('p#1');
    assert.deepEqual(fx.router.plan(two, { keyId: 'k' }), { ok: false, model: two, reason: 'credentials', retryAfterMs: 0 });
  });

  it('never rests the only key of a provider', () => {
    const fx = routingFixture([provider('p', { apiKey: 'env:ONLY', keyless: false })], [pooled]);
    attempt(fx, pooled, { status: 401 });
    assert.equal(attempt(fx, pooled, { status: 200 }), 'p/x#ONLY');
    assert.equal(fx.events.length, 0);
  });
});

describe('sticky conversations', () => {
  const three = model('s', {
    deployments: [{ provider: 'a', upstream_id: 'x', weight: 1 }, { provider: 'b', upstream_id: 'x', weight: 1 }, { provider: 'c', upstream_id: 'x', weight: 1 }],
  });
  const providers = [pool('a', ['env:A1', 'env:A2']), pool('b', ['env:B1', 'env:B2']), pool('c', ['env:C1', 'env:C2'])];

  it('keeps ten turns of one conversation on one deployment and key while new conversations spread', () => {
    const fx = routingFixture(providers, [three]);
    const conversation = { conversation: () => 'user:session-1' };
    const first = attempt(fx, three, { status: 200 }, conversation);
    for (let turn = 2; turn <= 10; turn++) assert.equal(attempt(fx, three, { status: 200 }, conversation), first);
    const others = new Set(Array.from({ length: 60 }, (_, i) => attempt(fx, three, { status: 200 }, { conversation: () => `user:other-${i}` }).split('#')[0]));
    assert.equal(others.size, 3, 'new conversations spread over every deployment');
  });

  it('moves a conversation when its deployment rests, then keeps it on the new one', () => {
    const fx = routingFixture(providers, [three]);
    const conversation = { conversation: () => 'cache:abc' };
    const first = attempt(fx, three, { status: 200 }, conversation);
    const [deployment] = first.split('#');
    // Its deployment answers 503 to another request: it rests.
    const plan = planned(fx.router.plan(three, { keyId: 'key_a' }));
    const there = plan.candidates.find((c) => c.deployment.id === deployment)!;
    const handle = fx.router.begin(plan, there.deployment, there.keys[0]);
    handle.outcome({ status: 503 });
    handle.end();
    const moved = attempt(fx, three, { status: 200 }, conversation);
    assert.notEqual(moved.split('#')[0], deployment);
    fx.clock.now += 5_000;
    for (let turn = 0; turn < 5; turn++) assert.equal(attempt(fx, three, { status: 200 }, conversation), moved, 'stays on its new deployment after the rest ends');
  });

  it('scopes a conversation by the llmux key: another key\'s same conversation is its own', () => {
    const fx = routingFixture(providers, [three]);
    const first = attempt(fx, three, { status: 200 }, { keyId: 'key_a', conversation: () => 'user:same' });
    assert.equal(fx.state.sticky(scopedConversationKey('key_a', 'user:same')) === undefined, false);
    assert.equal(fx.state.sticky(scopedConversationKey('key_b', 'user:same')), undefined);
    const [deployment, key] = first.split('#');
    assert.deepEqual(fx.state.sticky(scopedConversationKey('key_a', 'user:same')), { deployment, key });
  });

  it('binds a Responses answer\'s id, so the next turn (previous_response_id) finds its deployment', () => {
    const fx = routingFixture(providers, [three]);
    const first = attempt(fx, three, { status: 200 }, { conversation: () => 'prompt:digest' }, { responseId: 'resp_1' });
    for (let i = 0; i < 5; i++) assert.equal(attempt(fx, three, { status: 200 }, { conversation: () => 'response:resp_1' }), first);
  });

  it('does not read the conversation of a model with sticky off, nor of one with no choice to keep', () => {
    const off = model('off', { ...three, id: 'off', sticky: false });
    const single = model('single', { provider: 'z', upstream_id: 'x' });
    const fx = routingFixture([...providers, provider('z')], [off, single]);
    const read = (): string => assert.fail('the conversation key was read');
    attempt(fx, off, { status: 200 }, { conversation: read });
    attempt(fx, single, { status: 200 }, { conversation: read });
  });
});

describe('what the router counts', () => {
  it('reports per deployment requests, errors by code, time to first byte, in flight and resting', () => {
    const fx = routingFixture([provider('a'), provider('b')], [twoDeployments], { random: () => 0 });
    attempt(fx, twoDeployments, { status: 200, ttfbMs: 100 });
    attempt(fx, twoDeployments, { status: 200, ttfbMs: 200 });
    attempt(fx, twoDeployments, { status: 400, ttfbMs: 50 });
    attempt(fx, twoDeployments, { failure: 'unreachable' });
    const plan = planned(fx.router.plan(twoDeployments, { keyId: 'k' }));
    fx.router.begin(plan, plan.candidates[0]!.deployment, undefined);
    const a = fx.router.snapshot().find((s) => s.deployment === 'a/x')!;
    assert.equal(a.requests, 4);
    assert.deepEqual(a.errors, { 400: 1, unreachable: 1 });
    assert.equal(a.ttfbCount, 3);
    assert.equal(a.ttfbSumMs, 350);
    assert.equal(a.resting, true);
    assert.equal(a.restingForMs, 5_000);
    const b = fx.router.snapshot().find((s) => s.deployment === 'b/x')!;
    assert.deepEqual([b.requests, b.inFlight, b.resting], [1, 1, false]);
  });

  it('holds an attempt\'s lease until it ends, so least_busy avoids a deployment holding long streams', () => {
    const busy = model('busy', { ...twoDeployments, id: 'busy', routing: 'least_busy' });
    const fx = routingFixture([provider('a'), provider('b')], [busy]);
    const plan = planned(fx.router.plan(busy, { keyId: 'k' }));
    const streaming = plan.candidates.map((c) => fx.router.begin(plan, c.deployment, undefined));
    streaming[0]!.outcome({ status: 200 });
    const longStream = streaming[0]!.deployment.id;
    streaming[1]!.outcome({ status: 200 });
    streaming[1]!.end({ tokens: 10 });
    for (let i = 0; i < 20; i++) assert.notEqual(ids(fx.router.plan(busy, { keyId: 'k' }))[0], longStream);
    streaming[0]!.end({ tokens: 10 });
    streaming[0]!.end({ tokens: 10 });
    assert.equal(fx.state.inFlight(longStream), 0, 'ending twice frees the slot once');
  });

  it('learns the latency strategy\'s average from each answer\'s time to first byte', () => {
    const fast = model('fast', { ...twoDeployments, id: 'fast', routing: 'latency' });
    const fx = routingFixture([provider('a'), provider('b')], [fast], { random: () => 0.5 });
    const plan = planned(fx.router.plan(fast, { keyId: 'k' }));
    for (const candidate of plan.candidates) {
      const handle = fx.router.begin(plan, candidate.deployment, undefined);
      handle.outcome({ status: 200, ttfbMs: candidate.deployment.id === 'a/x' ? 900 : 100 });
      handle.end();
    }
    assert.deepEqual(ids(fx.router.plan(fast, { keyId: 'k' })), ['b/x', 'a/x']);
  });
});
