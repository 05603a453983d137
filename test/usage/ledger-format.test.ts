import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HOUR_MS, NANOS_PER_USD, entryHour, toNanos } from '../../src/usage/ledger-format.ts';

describe('the ledger format', () => {
  it('keeps usage under its own hour, but never later than its write', () => {
    const now = 100 * HOUR_MS + 5;
    assert.equal(entryHour(99 * HOUR_MS + 1, now), 99);
    assert.equal(entryHour(now + 3 * HOUR_MS, now), 100, 'a future time is the write\'s');
    assert.equal(entryHour(undefined, now), 100);
    assert.equal(entryHour('yesterday', now), 100);
  });

  it('counts costs in whole nano-dollars, anything not finite and positive as 0', () => {
    assert.equal(toNanos(1.5), 1.5 * NANOS_PER_USD);
    assert.equal(toNanos(0.000_000_000_4), 0);
    for (const bad of [-1, 0, Infinity, Number.NaN, '2', undefined]) assert.equal(toNanos(bad), 0);
  });
});
