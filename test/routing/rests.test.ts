import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterFailure, afterSuccess, DEPLOYMENT_REST, isResting, KEY_REST, MAX_RETRY_AFTER_MS, restKindOf } from '../../src/routing/rests.ts';
import type { RestRecord } from '../../src/routing/rests.ts';

const T0 = 1_700_000_000_000;

describe('what an outcome means for rests', () => {
  it('rests at once on 429, 503, 529 and an unreachable upstream; counts 500, 502, 504 and a timeout; 401/403 are the key\'s', () => {
    for (const status of [429, 503, 529]) assert.equal(restKindOf(status, undefined), 'immediate');
    assert.equal(restKindOf(undefined, 'unreachable'), 'immediate');
    for (const status of [500, 502, 504]) assert.equal(restKindOf(status, undefined), 'counted');
    assert.equal(restKindOf(undefined, 'timeout'), 'counted');
    assert.equal(restKindOf(401, undefined), 'auth');
    assert.equal(restKindOf(403, undefined), 'auth');
    assert.equal(restKindOf(200, undefined), 'success');
    assert.equal(restKindOf(204, undefined), 'success');
    for (const status of [400, 404, 413, 422, 501]) assert.equal(restKindOf(status, undefined), 'none');
    assert.equal(restKindOf(undefined, undefined), 'none');
  });
});

describe('the rest machine', () => {
  it('rests a deployment for its retry-after when the upstream gives one, else 5 s', () => {
    const withRetryAfter = afterFailure(undefined, 'immediate', T0, 3_000, DEPLOYMENT_REST);
    assert.equal(withRetryAfter.untilMs, T0 + 3_000);
    assert.ok(isResting(withRetryAfter, T0 + 2_999));
    assert.ok(!isResting(withRetryAfter, T0 + 3_000));
    const without = afterFailure(undefined, 'immediate', T0, undefined, DEPLOYMENT_REST);
    assert.equal(without.untilMs, T0 + 5_000);
  });

  it('doubles the next rest when the first request after a rest fails again, up to 60 s, and a success resets it', () => {
    let record: RestRecord | undefined;
    let now = T0;
    const lengths: number[] = [];
    for (let i = 0; i < 7; i++) {
      record = afterFailure(record, 'immediate', now, undefined, DEPLOYMENT_REST);
      lengths.push(record.untilMs - now);
      now = record.untilMs + 1;
    }
    assert.deepEqual(lengths, [5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
    record = afterSuccess(record, now);
    assert.equal(record, undefined);
    record = afterFailure(record, 'immediate', now, undefined, DEPLOYMENT_REST);
    assert.equal(record.untilMs - now, 5_000, 'after a success the next rest starts over');
  });

  it('honours a retry-after longer than the doubling ceiling, bounded by an hour', () => {
    const long = afterFailure(undefined, 'immediate', T0, 120_000, DEPLOYMENT_REST);
    assert.equal(long.untilMs - T0, 120_000);
    const absurd = afterFailure(undefined, 'immediate', T0, 10 * MAX_RETRY_AFTER_MS, DEPLOYMENT_REST);
    assert.equal(absurd.untilMs - T0, MAX_RETRY_AFTER_MS);
  });

  it('rests after three 500-class failures in a row, and not when a success comes between', () => {
    let record: RestRecord | undefined;
    record = afterFailure(record, 'counted', T0, undefined, DEPLOYMENT_REST);
    record = afterFailure(record, 'counted', T0 + 1, undefined, DEPLOYMENT_REST);
    assert.ok(!isResting(record, T0 + 2));
    record = afterFailure(record, 'counted', T0 + 2, undefined, DEPLOYMENT_REST);
    assert.ok(isResting(record, T0 + 3));
    assert.equal(record.untilMs, T0 + 2 + 5_000);

    let broken: RestRecord | undefined;
    broken = afterFailure(broken, 'counted', T0, undefined, DEPLOYMENT_REST);
    broken = afterFailure(broken, 'counted', T0 + 1, undefined, DEPLOYMENT_REST);
    broken = afterSuccess(broken, T0 + 2);
    broken = afterFailure(broken, 'counted', T0 + 3, undefined, DEPLOYMENT_REST);
    assert.ok(!isResting(broken, T0 + 4));
    assert.equal(broken.strikes, 1);
  });

  it('rests again at once, doubled, when the probe after a rest fails with a 500', () => {
    const first = afterFailure(undefined, 'immediate', T0, undefined, DEPLOYMENT_REST);
    const probe = afterFailure(first, 'counted', first.untilMs + 10, undefined, DEPLOYMENT_REST);
    assert.equal(probe.untilMs - (first.untilMs + 10), 10_000);
  });

  it('keeps the later deadline when a failure arrives while resting, without doubling (LiteLLM #40130)', () => {
    const resting = afterFailure(undefined, 'immediate', T0, 2_000, DEPLOYMENT_REST);
    const earlier = afterFailure(resting, 'immediate', T0 + 100, 1_000, DEPLOYMENT_REST);
    assert.equal(earlier.untilMs, T0 + 2_000, 'an earlier deadline changes nothing');
    const later = afterFailure(resting, 'immediate', T0 + 100, 8_000, DEPLOYMENT_REST);
    assert.equal(later.untilMs, T0 + 8_100, 'a later one wins');
    assert.equal(later.lastMs, resting.lastMs);
    assert.equal(afterFailure(resting, 'counted', T0 + 100, undefined, DEPLOYMENT_REST), resting);
  });

  it('leaves a rest in place when a request that started before it succeeds', () => {
    const resting = afterFailure(undefined, 'immediate', T0, undefined, DEPLOYMENT_REST);
    assert.equal(afterSuccess(resting, T0 + 1), resting);
  });

  it('rests a key answering 401/403 for 5 minutes, doubling to an hour while it keeps failing', () => {
    let record: RestRecord | undefined;
    let now = T0;
    const minutes: number[] = [];
    for (let i = 0; i < 6; i++) {
      record = afterFailure(record, 'auth', now, undefined, KEY_REST);
      minutes.push((record.untilMs - now) / 60_000);
      now = record.untilMs + 1;
    }
    assert.deepEqual(minutes, [5, 10, 20, 40, 60, 60]);
  });
});
