import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryRoutingState } from '../../src/routing/state.ts';

const T0 = 1_700_000_000_000;

describe('routing state in the process', () => {
  it('counts attempts in flight per deployment until each ends, once', () => {
    const state = createMemoryRoutingState({ now: () => T0 });
    const one = state.begin('a/x', 0);
    const two = state.begin('a/x', 0);
    state.begin('b/x', 0);
    assert.deepEqual([state.inFlight('a/x'), state.inFlight('b/x'), state.inFlight('c/x')], [2, 1, 0]);
    one.end();
    one.end();
    assert.equal(state.inFlight('a/x'), 1);
    two.end(5);
    assert.equal(state.inFlight('a/x'), 0);
  });

  it('counts requests and reservations in a 60 s window, a reservation replaced by what was used', () => {
    let now = T0;
    const state = createMemoryRoutingState({ now: () => now });
    const lease = state.begin('a/x', 1_000);
    assert.deepEqual(state.usage('a/x'), { requests: 1, tokens: 1_000 });
    lease.end(250);
    assert.deepEqual(state.usage('a/x'), { requests: 1, tokens: 250 });
    const unknown = state.begin('a/x', 400);
    unknown.end();
    assert.deepEqual(state.usage('a/x'), { requests: 2, tokens: 650 }, 'no usage known: the reservation counts as used');
    now += 61_000;
    assert.deepEqual(state.usage('a/x'), { requests: 0, tokens: 0 });
  });

  it('counts what an attempt used from its end when its start has left the window', () => {
    let now = T0;
    const state = createMemoryRoutingState({ now: () => now });
    const long = state.begin('a/x', 100);
    now += 120_000;
    long.end(700);
    assert.deepEqual(state.usage('a/x'), { requests: 0, tokens: 700 });
  });

  it('says how long until a deployment is under its rpm and tpm again', () => {
    let now = T0;
    const state = createMemoryRoutingState({ now: () => now });
    assert.equal(state.waitMs('a/x', 1, 100), 0);
    state.begin('a/x', 10).end(10);
    const wait = state.waitMs('a/x', 1, 100);
    assert.ok(wait > 60_000 && wait <= 61_000, `${wait}`);
    now += wait;
    assert.equal(state.waitMs('a/x', 1, 100), 0);
  });

  it('reports its own counts and forgets deployments with nothing left', () => {
    let now = T0;
    const state = createMemoryRoutingState({ now: () => now });
    const lease = state.begin('a/x', 5);
    state.begin('b/x', 0).end(0);
    assert.deepEqual(state.counts(), [{ deployment: 'a/x', inFlight: 1, requests: 1, tokens: 5 }, { deployment: 'b/x', inFlight: 0, requests: 1, tokens: 0 }]);
    lease.end(5);
    now += 61_000;
    assert.deepEqual(state.counts(), []);
  });

  it('keeps rest records by subject, changed by a step over the current one', () => {
    const state = createMemoryRoutingState({ now: () => T0 });
    state.changeRest('deployment:a/x', (current) => ({ untilMs: (current?.untilMs ?? T0) + 5, lastMs: 5, strikes: 0, probing: true }));
    state.changeRest('deployment:a/x', (current) => ({ ...current!, untilMs: current!.untilMs + 5 }));
    assert.equal(state.rest('deployment:a/x')?.untilMs, T0 + 10);
    state.changeRest('deployment:a/x', () => undefined);
    assert.equal(state.rest('deployment:a/x'), undefined);
    assert.equal(state.rests().size, 0);
  });
});
