/**
 * Spending budgets per key (llmux.md section 7): pure arithmetic on a budget, the spend in the
 * current UTC period (from the ledger's `spendCached`) and the time. The caller asks the ledger
 * for the spend since `periodStartMs`, then refuses with `budgetExceededError` or answers with
 * the `x-llmux-budget-remaining-usd` header.
 *
 * Decisions beyond the spec:
 * - Amounts are compared in whole nano-dollars, as the ledger keeps them, so a spend exactly equal
 *   to the budget is "reached" whatever the float rounding.
 * - Reaching the budget is enough: spend >= budget refuses. A budget of 0 therefore refuses every
 *   model request, free models included (a key that may spend nothing).
 * - A budget that is not a finite number >= 0 counts as 0: a bad value fails closed.
 * - The header is the remaining amount rounded DOWN to 1/100 of a cent with four decimals
 *   (`24.9963`), never negative, so it never promises more than is left.
 */
import type { Budget, BudgetPeriod } from '../config/types.ts';
import { GatewayError } from '../common/errors.ts';
import type { UsageLedger } from './ledger.ts';
import { NANOS_PER_USD, toNanos } from './ledger-format.ts';

export type { Budget, BudgetPeriod } from '../config/types.ts';

export interface BudgetStatus {
  /** Spend has reached the budget: model requests are refused until `resetsAt`. */
  exceeded: boolean;
  spentUsd: number;
  budgetUsd: number;
  /** Budget minus spend, never below 0. */
  remainingUsd: number;
  period: BudgetPeriod;
  /** Start of the next UTC day or month, ISO 8601. */
  resetsAt: string;
  /** Whole seconds from now until `resetsAt` (at least 1). */
  resetsInSeconds: number;
}

export const BUDGET_REMAINING_HEADER = 'x-llmux-budget-remaining-usd';

/** The header's unit: 1/100 of a cent. */
const NANOS_PER_HEADER_UNIT = 100_000;

/** Start of the UTC day or month holding `nowMs`: what to pass to the ledger's spend. */
export function periodStartMs(period: BudgetPeriod, nowMs: number): number {
  const date = new Date(nowMs);
  return period === 'day'
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate())
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** Start of the next UTC day or month: when the budget resets. */
export function periodEndMs(period: BudgetPeriod, nowMs: number): number {
  const date = new Date(nowMs);
  return period === 'day'
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

/** Where a key stands against its budget, given its spend in the current period. */
export function budgetStatus(budget: Budget, spentUsd: number, nowMs: number): BudgetStatus {
  const budgetNanos = toNanos(budget.usd);
  const spentNanos = toNanos(spentUsd);
  const resetsAtMs = periodEndMs(budget.period, nowMs);
  return {
    exceeded: spentNanos >= budgetNanos,
    spentUsd: spentNanos / NANOS_PER_USD,
    budgetUsd: budgetNanos / NANOS_PER_USD,
    remainingUsd: Math.max(0, budgetNanos - spentNanos) / NANOS_PER_USD,
    period: budget.period,
    resetsAt: new Date(resetsAtMs).toISOString(),
    resetsInSeconds: Math.max(1, Math.ceil((resetsAtMs - nowMs) / 1000)),
  };
}

/** Where a key stands against `budget` now, from the ledger's cached spend of the current period. */
export function currentBudgetStatus(budget: Budget, keyId: string, ledger: Pick<UsageLedger, 'spendCached'>, nowMs: number): BudgetStatus {
  return budgetStatus(budget, ledger.spendCached(keyId, periodStartMs(budget.period, nowMs)), nowMs);
}

/** The `x-llmux-budget-remaining-usd` value: `24.9963`, `0.0000`. */
export function budgetRemainingHeader(status: BudgetStatus): string {
  const units = Math.floor(Math.max(0, toNanos(status.budgetUsd) - toNanos(status.spentUsd)) / NANOS_PER_HEADER_UNIT);
  return `${Math.floor(units / 10_000)}.${String(units % 10_000).padStart(4, '0')}`;
}

/** `$25.00`, `$1,234.50`, `$0.0420`: cents, or four decimals below a dollar where cents say too little. */
export function formatUsd(usd: number): string {
  const digits = Math.abs(usd) < 1 ? 4 : 2;
  return `$${usd.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
  return `${Math.round(hours / 24)} days`;
}

/** The message of the 403: what was spent, the budget, when it resets, and what to do. */
export function budgetExceededMessage(status: BudgetStatus): string {
  const period = status.period === 'day' ? 'daily' : 'monthly';
  const reset = `${status.resetsAt.slice(0, 10)} ${status.resetsAt.slice(11, 16)} UTC`;
  return `Budget exceeded: this key has spent ${formatUsd(status.spentUsd)} of its ${formatUsd(status.budgetUsd)} ${period} budget. `
    + `Model requests are refused until it resets at ${reset} (in ${formatWait(status.resetsInSeconds)}); ask an admin to raise the budget to continue sooner.`;
}

/** 403 `permission_error` / `budget_exceeded`, carrying the remaining-budget header (0). */
export function budgetExceededError(status: BudgetStatus): GatewayError {
  return new GatewayError(403, 'permission_error', 'budget_exceeded', budgetExceededMessage(status), {
    headers: { [BUDGET_REMAINING_HEADER]: budgetRemainingHeader(status) },
  });
}
