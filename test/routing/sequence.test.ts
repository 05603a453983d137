import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelEntry } from '../../src/config/types.ts';
import { createAttemptSequence } from '../../src/routing/sequence.ts';
import type { AttemptSequence, SequenceOptions, Step } from '../../src/routing/sequence.ts';
import type { AttemptOutcome } from '../../src/routing/router.ts';
import { createMemoryRoutingState } from '../../src/routing/state.ts';
import type { RoutingState } from '../../src/routing/state.ts';
import { model, pool, provider, routingFixture, T0 } from '../helpers/routing.ts';
import type { RoutingFixture } from '../helpers/routing.ts';

const OPTIONS: SequenceOptions = { keyId: 'key_a', attempts: 3, maxRetryAfterMs: 10_000 };

async function nextStep(sequence: AttemptSequence): Promise<Step | undefined> {
  return await sequence.next();
}

/** Runs the sequence answering each step from `answers` in turn; returns what was tried. */
async function run(fx: RoutingFixture, chain: ModelEntry[], answers: AttemptOutcome[], options: Partial<SequenceOptions> = {}): Promise<{ tried: string[]; sequence: AttemptSequence }> {
  const sequence = createAttemptSequence(fx.router, chain, { ...OPTIONS, ...options });
  const tried: string[] = [];
  for (let step = await nextStep(sequence); step !== undefined; step = await nextStep(sequence)) {
    const answer = answers[tried.length] ?? { status: 200 };
    tried.push(`${step.attempt}:${step.model.id}:${step.deployment.id}${step.key === undefined ? '' : `#${step.key.label}`}${step.backoff ? ` backoff${step.retryAfterMs === undefined ? '' : ` ${step.retryAfterMs}`}` : ''}`);
    const kind = step.outcome(answer);
    step.end();
    if (kind === 'success' || (kind === 'none' && answer.status !== undefined)) break;
  }
  return { tried, sequence };
}

const two = model('two', { deployments: [{ provider: 'a', upstream_id: 'x', weight: 1 }, { provider: 'b', upstream_id: 'x', weight: 1 }] });
const fallback = model('fb', { provider: 'c', upstream_id: 'y' });
const solo = model('solo', { provider: 'a', upstream_id: 'solo' });

describe('one request\'s attempts', () => {
  it('moves to the next deployment without a backoff after a retryable failure, and the client sees the 200', async () => {
    const fx = routingFixture([provider('a'), provider('b')], [two], { random: () => 0 });
    const { tried } = await run(fx, [two], [{ status: 500 }, { status: 200 }]);
    assert.deepEqual(tried, ['1:two:a/x', '2:two:b/x']);
  });

  it('goes to the fallbacks once the model\'s deployments are tried, counting attempts across all of them', async () => {
    const fx = routingFixture([provider('a'), provider('b'), provider('c')], [two, fallback], { random: () => 0 });
    const { tried } = await run(fx, [two, fallback], [{ status: 503 }, { status: 502 }, { status: 529 }, { status: 200 }]);
    assert.deepEqual(tried, ['1:two:a/x', '2:two:b/x', '3:fb:c/y'], 'three attempts in all: the fourth answer is never asked for');
  });

  it('retries a model\'s only deployment after a backoff, honouring its retry-after (section 4)', async () => {
    const fx = routingFixture([provider('a')], [solo]);
    const { tried } = await run(fx, [solo], [{ status: 429, retryAfterMs: 2_000 }, { status: 500 }, { status: 200 }]);
    assert.deepEqual(tried, ['1:solo:a/solo', '2:solo:a/solo backoff 2000', '3:solo:a/solo backoff']);
  });

  it('tries a fallback before retrying the model asked for', async () => {
    const fx = routingFixture([provider('a'), provider('c')], [solo, fallback]);
    const { tried } = await run(fx, [solo, fallback], [{ status: 503 }, { status: 503 }, { status: 200 }]);
    assert.deepEqual(tried, ['1:solo:a/solo', '2:fb:c/y', '3:solo:a/solo backoff']);
  });

  it('does not retry after a retry-after longer than the bound', async () => {
    const fx = routingFixture([provider('a')], [solo]);
    const { tried } = await run(fx, [solo], [{ status: 429, retryAfterMs: 60_000 }]);
    assert.deepEqual(tried, ['1:solo:a/solo']);
  });

  it('stops at an answer that is not retryable', async () => {
    const fx = routingFixture([provider('a'), provider('b')], [two], { random: () => 0 });
    const { tried } = await run(fx, [two], [{ status: 400 }]);
    assert.deepEqual(tried, ['1:two:a/x']);
  });

  it('goes on with another key of the deployment at once when a key answers 401, and that request still succeeds', async () => {
    const keyed = model('keyed', { provider: 'p', upstream_id: 'x' });
    const fx = routingFixture([pool('p', ['env:KEY_A', 'env:KEY_B'])], [keyed]);
    const { tried } = await run(fx, [keyed], [{ status: 401 }, { status: 200 }]);
    assert.deepEqual(tried, ['1:keyed:p/x#KEY_A', '2:keyed:p/x#KEY_B']);
    for (let i = 0; i < 5; i++) {
      const again = await run(fx, [keyed], [{ status: 200 }]);
      assert.deepEqual(again.tried, ['1:keyed:p/x#KEY_B'], 'the key that answered 401 is not used again for minutes');
    }
  });

  it('moves on to the next deployment when every key of one answered 401', async () => {
    const keyed = model('keyed2', { deployments: [{ provider: 'p', upstream_id: 'x', weight: 1 }, { provider: 'b', upstream_id: 'x', weight: 1 }] });
    const fx = routingFixture([pool('p', ['env:KEY_A', 'env:KEY_B']), provider('b')], [keyed], { random: () => 0 });
    const { tried } = await run(fx, [keyed], [{ status: 401 }, { status: 403 }, { status: 200 }]);
    assert.deepEqual(tried, ['1:keyed2:p/x#KEY_A', '2:keyed2:p/x#KEY_B', '3:keyed2:b/x']);
  });

  it('skips a deployment that began to rest during the request', async () => {
    const shared = model('shared', { deployments: [{ provider: 'b', upstream_id: 'x', weight: 1 }, { provider: 'a', upstream_id: 'x', weight: 1 }] });
    const fx = routingFixture([provider('a'), provider('b')], [two, shared], { random: () => 0 });
    const sequence = createAttemptSequence(fx.router, [shared, two], { ...OPTIONS, attempts: 5 });
    const first = (await nextStep(sequence))!;
    assert.equal(first.deployment.id, 'b/x');
    // Meanwhile another request learned that a/x is overloaded.
    const other = createAttemptSequence(fx.router, [two], OPTIONS);
    const step = (await nextStep(other))!;
    assert.equal(step.deployment.id, 'a/x');
    step.outcome({ status: 529 });
    step.end();
    first.outcome({ status: 503 });
    first.end();
    assert.equal(await nextStep(sequence), undefined, 'a/x rests and b/x was tried: nothing is left to try at once or after a backoff');
  });

  it('refuses with the earliest retry-after when every deployment of every model rests before anything is tried', async () => {
    const fx = routingFixture([provider('a'), provider('b'), provider('c')], [two, fallback], { random: () => 0 });
    await run(fx, [two], [{ status: 429, retryAfterMs: 9_000 }, { status: 429, retryAfterMs: 7_000 }], { attempts: 2 });
    const sequence = createAttemptSequence(fx.router, [two], OPTIONS);
    assert.equal(await nextStep(sequence), undefined);
    assert.deepEqual(sequence.refusal(), { reason: 'resting', retryAfterMs: 7_000 });
    const withFallback = createAttemptSequence(fx.router, [two, fallback], OPTIONS);
    assert.equal((await nextStep(withFallback))?.model.id, 'fb');
    assert.equal(withFallback.refusal(), undefined);
  });

  it('moves on when a step is ended without an outcome (its provider could not take the request)', async () => {
    const fx = routingFixture([provider('a'), provider('b')], [two], { random: () => 0 });
    const sequence = createAttemptSequence(fx.router, [two], OPTIONS);
    const first = (await nextStep(sequence))!;
    first.end();
    assert.equal(fx.state.inFlight('a/x'), 0);
    assert.equal((await nextStep(sequence))?.deployment.id, 'b/x');
    assert.equal(await nextStep(sequence), undefined, 'no retryable failure: no repeat');
  });

  it('waits for a sticky lookup that the state answers later', async () => {
    const memory = createMemoryRoutingState({ now: () => T0 });
    const slow: RoutingState = { ...memory, sticky: (conversation) => Promise.resolve(memory.sticky(conversation)) };
    const fx = routingFixture([provider('a'), provider('b')], [two], { state: slow });
    const conversation = { conversation: () => 'user:u1' };
    const first = await run(fx, [two], [{ status: 200 }], conversation);
    for (let i = 0; i < 5; i++) assert.deepEqual((await run(fx, [two], [{ status: 200 }], conversation)).tried, first.tried);
  });
});
