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
 *
 * Reservations ({@link BudgetHolds}, llmux.md section 7): checking the spend alone let a key at
 * $0.049 of $0.05 fire 40 requests at once and spend $40.05 (issue 25). So each admitted request
 * holds its worst case (its tokens/min reservation at the model's prices) against the budget until
 * its real cost is in the ledger, as tokens/min holds reservations:
 * - a request is admitted when the spend plus what is held leaves room for its worst case, or when
 *   nothing is held for the key (it runs alone); refused otherwise (429 `budget_reserved`, retry in
 *   a second: the room comes back when a request in flight ends);
 * - `settle` shrinks the hold to the real cost; `release` drops it once the ledger counts that cost.
 * So requests in flight at once never spend past the budget by more than one of them may cost.
 * The shared-state implementation (src/state/budget-holds.ts) keeps the holds on the server.
 */
import type { Budget, BudgetPeriod, ModelPricing } from '../config/types.ts';
import { GatewayError } from '../common/errors.ts';
import { worstCostOf } from './cost.ts';
import type { UsageLedger } from './ledger.ts';
import { NANOS_PER_USD, toNanos } from './ledger-format.ts';

export { toNanos };

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

/** One admitted request's hold on its key's budget. */
export interface BudgetHold {
  /** The request's real cost is known: the hold shrinks to it. Only the first call counts. */
  settle(costUsd: number): void;
  /** The ledger counts the request's cost now: the hold stops counting. Later calls do nothing. */
  release(): void;
}

/** Reservations against budgets, in this process or on the state server. */
export interface BudgetHolds {
  /**
   * Holds `worstUsd` for a request of `keyId` against `budget`, or throws the refusal: 403
   * `budget_exceeded` once the spend has reached the budget, 429 `budget_reserved` while the
   * requests in flight hold what is left.
   */
  reserve(keyId: string, budget: Budget, worstUsd: number): BudgetHold | Promise<BudgetHold>;
}

/** A request's worst case: its tokens/min reservation (estimated input, output cap) at the model's prices. */
export function worstCaseUsd(pricing: ModelPricing, inputTokens: number, outputTokens: number): number {
  return worstCostOf(inputTokens, outputTokens, pricing);
}

/** 429 `rate_limit_error` / `budget_reserved`: what is left of the budget is held by requests in flight. */
export function budgetReservedError(status: BudgetStatus, heldUsd: number, worstUsd: number): GatewayError {
  return new GatewayError(
    429,
    'rate_limit_error',
    'budget_reserved',
    `This key's requests in progress hold ${formatUsd(heldUsd)} of the ${formatUsd(status.remainingUsd)} left of its budget, and this request may cost up to ${formatUsd(worstUsd)} (its estimated input and its max_tokens at the model's prices); retry when one has finished, or ask for fewer max_tokens`,
    { headers: { 'retry-after': '1', [BUDGET_REMAINING_HEADER]: budgetRemainingHeader(status) } },
  );
}

/**
 * The admission rule, in nano-dollars: 'exceeded' once spend reaches the budget; 'reserved' when
 * something is held and the worst case does not fit beside it; else 'ok'.
 */
export function holdVerdict(budgetNanos: number, spentNanos: number, heldNanos: number, worstNanos: number): 'ok' | 'exceeded' | 'reserved' {
  if (spentNanos >= budgetNanos) return 'exceeded';
  if (heldNanos > 0 && spentNanos + heldNanos + worstNanos > budgetNanos) return 'reserved';
  return 'ok';
}

export interface LocalBudgetHoldsOptions {
  /** The spend: this process's own records count at once (`spendCached`). */
  ledger: Pick<UsageLedger, 'spendCached'>;
  now?: () => number;
}

/** Holds in this process's memory: every answer is immediate. */
export interface LocalBudgetHolds extends BudgetHolds {
  reserve(keyId: string, budget: Budget, worstUsd: number): BudgetHold;
}

/** Holds in this process's memory, against the ledger's cached spend. */
export function createBudgetHolds(options: LocalBudgetHoldsOptions): LocalBudgetHolds {
  const now = options.now ?? Date.now;
  const held = new Map<string, number>();
  const change = (keyId: string, nanos: number): void => {
    const next = (held.get(keyId) ?? 0) + nanos;
    if (next > 0) held.set(keyId, next);
    else held.delete(keyId);
  };
  return {
    reserve(keyId, budget, worstUsd) {
      const status = currentBudgetStatus(budget, keyId, options.ledger, now());
      const worst = toNanos(worstUsd);
      const heldNanos = held.get(keyId) ?? 0;
      const verdict = holdVerdict(toNanos(status.budgetUsd), toNanos(status.spentUsd), heldNanos, worst);
      if (verdict === 'exceeded') throw budgetExceededError(status);
      if (verdict === 'reserved') throw budgetReservedError(status, heldNanos / NANOS_PER_USD, worstUsd);
      let holding = worst;
      change(keyId, holding);
      let settled = false;
      return {
        settle(costUsd) {
          if (settled || holding === 0) return;
          settled = true;
          const real = Math.min(holding, toNanos(costUsd));
          change(keyId, real - holding);
          holding = real;
        },
        release() {
          change(keyId, -holding);
          holding = 0;
        },
      };
    },
  };
}
