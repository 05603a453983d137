/**
 * A reasoning effort as a messages-format thinking budget: the one rule for every request
 * translator that maps an effort (chat's `reasoning_effort`, Responses' `reasoning.effort`) to
 * `thinking.budget_tokens` (translation.md).
 *
 * - Effort to budget: minimal and low 1024, medium 4096, high 16384, xhigh and max 32768; `none`
 *   and unknown values ask for no thinking.
 * - The answer keeps its share. Thinking counts inside `max_tokens`, so a budget as large as the
 *   cap leaves the answer almost nothing (issue 25: `max_tokens: 16384` with `high` became
 *   `budget_tokens: 16383`, one token to answer with). The budget is at most three quarters of
 *   `max_tokens`: the answer keeps at least a quarter of it.
 * - A client's own cap is kept and the budget lowered to fit it. A cap llmux chose (the client sent
 *   none) is raised to make room instead: to the budget plus a third of it, and at least the budget
 *   plus 4096, within the model's known output maximum.
 * - A budget that cannot reach Anthropic's minimum of 1024 means no thinking (the caller warns).
 */

/** Anthropic's smallest thinking budget. */
export const MIN_THINKING_BUDGET = 1024;
/** The least room a raised cap leaves the answer beside the budget. */
const ANSWER_HEADROOM_TOKENS = 4096;

const BUDGETS: ReadonlyMap<string, number> = new Map([
  ['minimal', 1024],
  ['low', 1024],
  ['medium', 4096],
  ['high', 16384],
  ['xhigh', 32768],
  ['max', 32768],
]);

/** The budget an effort asks for, before any cap; undefined for none or an unknown effort. */
export function effortBudget(effort: unknown): number | undefined {
  return typeof effort === 'string' ? BUDGETS.get(effort) : undefined;
}

/** The largest budget a cap allows: the answer keeps at least a quarter of it. */
export function largestBudget(maxTokens: number): number {
  return Math.floor(maxTokens * 3 / 4);
}

/** What the request is sent with: its `max_tokens`, and the thinking budget, or none when it does not fit. */
export interface ThinkingPlan {
  maxTokens: number;
  budget: number | undefined;
}

/**
 * The cap and budget for a wanted `budget` under `cap` (`requested`: the client's own, kept;
 * otherwise llmux's default, raised within `maxOutputTokens`, 0 when unknown).
 */
export function planThinking(budget: number, cap: { value: number; requested: boolean }, maxOutputTokens: number): ThinkingPlan {
  let maxTokens = cap.value;
  if (!cap.requested && budget > largestBudget(maxTokens)) {
    const ceiling = maxOutputTokens > 0 ? maxOutputTokens : Number.POSITIVE_INFINITY;
    const roomy = Math.max(budget + ANSWER_HEADROOM_TOKENS, Math.ceil(budget * 4 / 3));
    maxTokens = Math.max(maxTokens, Math.min(roomy, ceiling));
  }
  const fitted = Math.min(budget, largestBudget(maxTokens));
  return { maxTokens, budget: fitted >= MIN_THINKING_BUDGET ? fitted : undefined };
}
