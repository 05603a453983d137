import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  BUDGET_REMAINING_HEADER, budgetExceededError, budgetExceededMessage, budgetRemainingHeader, budgetStatus, createBudgetHolds, formatUsd, periodEndMs, periodStartMs, worstCaseUsd,
} from '../../src/usage/budget.ts';
import { GatewayError } from '../../src/common/errors.ts';

const NOW = Date.UTC(2026, 2, 14, 20, 47, 30); // 2026-03-14T20:47:30Z

describe('budget periods', () => {
  it('starts at the UTC day or month holding now and resets at the next one', () => {
    assert.equal(new Date(periodStartMs('day', NOW)).toISOString(), '2026-03-14T00:00:00.000Z');
    assert.equal(new Date(periodEndMs('day', NOW)).toISOString(), '2026-03-15T00:00:00.000Z');
    assert.equal(new Date(periodStartMs('month', NOW)).toISOString(), '2026-03-01T00:00:00.000Z');
    assert.equal(new Date(periodEndMs('month', NOW)).toISOString(), '2026-04-01T00:00:00.000Z');
  });

  it('rolls over the end of a month and of a year', () => {
    assert.equal(new Date(periodEndMs('day', Date.UTC(2026, 1, 28, 23, 59))).toISOString(), '2026-03-01T00:00:00.000Z');
    assert.equal(new Date(periodEndMs('month', Date.UTC(2026, 11, 31, 23, 59))).toISOString(), '2027-01-01T00:00:00.000Z');
    assert.equal(new Date(periodStartMs('day', Date.UTC(2026, 11, 31))).toISOString(), '2026-12-31T00:00:00.000Z', 'midnight is the start of its own day');
  });
});

describe('budget status', () => {
  it('is not exceeded below the budget and says what remains', () => {
    const status = budgetStatus({ usd: 25, period: 'day' }, 24.9963, NOW);
    assert.deepEqual(status, {
      exceeded: false, spentUsd: 24.9963, budgetUsd: 25, remainingUsd: 0.0037, period: 'day', resetsAt: '2026-03-15T00:00:00.000Z', resetsInSeconds: 11_550,
    });
  });

  it('is exceeded once spend reaches the budget exactly, even when float sums land a hair below', () => {
    const spent = 0.1 + 0.2; // 0.30000000000000004
    assert.equal(budgetStatus({ usd: 0.3, period: 'day' }, spent, NOW).exceeded, true);
    assert.equal(budgetStatus({ usd: 0.3, period: 'day' }, 0.3, NOW).exceeded, true);
    assert.equal(budgetStatus({ usd: 0.3, period: 'day' }, 0.299999999, NOW).exceeded, false);
  });

  it('treats a zero or invalid budget as nothing to spend (fails closed)', () => {
    assert.equal(budgetStatus({ usd: 0, period: 'month' }, 0, NOW).exceeded, true);
    assert.equal(budgetStatus({ usd: Number.NaN, period: 'month' }, 0, NOW).exceeded, true);
    assert.equal(budgetStatus({ usd: -5, period: 'month' }, 0, NOW).exceeded, true);
  });

  it('never reports a negative remainder', () => {
    const status = budgetStatus({ usd: 10, period: 'month' }, 12.5, NOW);
    assert.equal(status.remainingUsd, 0);
    assert.equal(budgetRemainingHeader(status), '0.0000');
  });
});

describe('budget header', () => {
  it('rounds the remainder down to four decimals so it never promises more than is left', () => {
    const header = (usd: number, spent: number) => budgetRemainingHeader(budgetStatus({ usd, period: 'day' }, spent, NOW));
    assert.equal(header(25, 0), '25.0000');
    assert.equal(header(25, 0.0037), '24.9963');
    assert.equal(header(25, 0.00001), '24.9999');
    assert.equal(header(0.5, 0.49999), '0.0000');
    assert.equal(header(1234.5, 0.25), '1234.2500');
    assert.equal(BUDGET_REMAINING_HEADER, 'x-llmux-budget-remaining-usd');
  });
});

describe('budget exceeded answer', () => {
  it('is a 403 permission_error / budget_exceeded naming spend, budget and reset time', () => {
    const status = budgetStatus({ usd: 25, period: 'day' }, 25.01, NOW);
    const error = budgetExceededError(status);
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 403);
    assert.equal(error.type, 'permission_error');
    assert.equal(error.code, 'budget_exceeded');
    assert.equal(error.message, 'Budget exceeded: this key has spent $25.01 of its $25.00 daily budget. '
      + 'Model requests are refused until it resets at 2026-03-15 00:00 UTC (in 3 h 13 min); ask an admin to raise the budget to continue sooner.');
    assert.deepEqual(error.headers, { 'x-llmux-budget-remaining-usd': '0.0000' });
  });

  it('names a monthly budget and a wait in days, with small amounts to the hundredth of a cent', () => {
    const message = budgetExceededMessage(budgetStatus({ usd: 0.05, period: 'month' }, 0.0512, Date.UTC(2026, 2, 3, 12)));
    assert.match(message, /spent \$0\.0512 of its \$0\.0500 monthly budget/);
    assert.match(message, /resets at 2026-04-01 00:00 UTC \(in 29 days\)/);
  });

  it('gives the wait in seconds or minutes just before the reset', () => {
    assert.match(budgetExceededMessage(budgetStatus({ usd: 1, period: 'day' }, 1, Date.UTC(2026, 2, 14, 23, 59, 30))), /\(in 30 s\)/);
    assert.match(budgetExceededMessage(budgetStatus({ usd: 1, period: 'day' }, 1, Date.UTC(2026, 2, 14, 23, 15))), /\(in 45 min\)/);
    assert.match(budgetExceededMessage(budgetStatus({ usd: 1, period: 'day' }, 1, Date.UTC(2026, 2, 14, 22))), /\(in 2 h\)/);
  });

  it('formats dollars with separators and cents', () => {
    assert.equal(formatUsd(1234.5), '$1,234.50');
    assert.equal(formatUsd(0), '$0.0000');
    assert.equal(formatUsd(0.1), '$0.1000');
  });
});

describe('createBudgetHolds', () => {
  const budget = { usd: 1, period: 'day' as const };
  const nowMs = Date.UTC(2026, 2, 14, 12);

  it('admits a worst case that fits beside the holds, one alone whatever it may cost, and refuses the rest with 429 budget_reserved', () => {
    let spent = 0.5;
    const holds = createBudgetHolds({ ledger: { spendCached: (keyId) => (keyId === 'k' ? spent : 0) }, now: () => nowMs });
    const alone = holds.reserve('k', budget, 2);
    assert.throws(() => holds.reserve('k', budget, 0.01), (err: unknown) => err instanceof GatewayError && err.status === 429 && err.code === 'budget_reserved');
    alone.release();
    const first = holds.reserve('k', budget, 0.3);
    holds.reserve('k', budget, 0.2);
    assert.throws(() => holds.reserve('k', budget, 0.01), /hold \$0\.5000 of the \$0\.5000 left/);
    first.settle(0.1);
    holds.reserve('k', budget, 0.2);
    spent = 1;
    assert.throws(() => holds.reserve('k', budget, 0), (err: unknown) => err instanceof GatewayError && err.status === 403 && err.code === 'budget_exceeded');
    assert.doesNotThrow(() => holds.reserve('other', budget, 0.9), 'holds are per key');
  });

  it('prices the worst case at the model\'s input and output prices', () => {
    assert.equal(worstCaseUsd({ input_tokens_cost_per_million: 2, output_tokens_cost_per_million: 8, currency: 'USD' }, 1000, 100), 0.0028);
  });
});
