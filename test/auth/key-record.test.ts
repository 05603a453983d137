import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { budgetFor, limitsFor } from '../../src/auth/key-record.ts';
import { DEFAULT_TIERS } from '../../src/config/load.ts';

describe('key rules', () => {
  it('applies a key\'s own budget before its tier\'s, and none when neither has one', () => {
    const tierBudgets = { basic: { usd: 10, period: 'month' as const } };
    assert.deepEqual(budgetFor({ tier: 'basic', budget: { usd: 2, period: 'day' } }, tierBudgets), { usd: 2, period: 'day' });
    assert.deepEqual(budgetFor({ tier: 'basic' }, tierBudgets), { usd: 10, period: 'month' });
    assert.equal(budgetFor({ tier: 'pro' }, tierBudgets), undefined);
    assert.deepEqual(budgetFor({ tier: 'pro', budget: { usd: 0, period: 'month' } }, {}), { usd: 0, period: 'month' }, 'a budget of 0 is a budget');
  });

  it('applies a key\'s own limits over its tier\'s, one by one', () => {
    assert.deepEqual(limitsFor({ tier: 'basic', limits: { rpm: 5 } }, DEFAULT_TIERS), { rpm: 5, tpm: 90_000, concurrency: 10 });
  });
});
