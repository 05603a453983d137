/**
 * What `llmux doctor` and the dashboard's Health section show: one row per check, with a verdict,
 * what was found and, for a problem, what to do. A leaf: the pages render it without reaching
 * into the checks.
 */

/**
 * `ok`: passed. `warn`: a problem that does not stop serving (a provider no model uses, an
 * endpoint without a model list). `fail`: something needed is broken. `off`: not checked, and
 * nothing needs it (a built-in provider without its variable, no state server).
 */
export type Verdict = 'ok' | 'warn' | 'fail' | 'off';

export interface CheckResult {
  /** What was checked: `config`, `provider anthropic: credential`, `state server`, `key store`. */
  name: string;
  verdict: Verdict;
  /** What was found, never a secret: `from env:ANTHROPIC_API_KEY`, `200 in 84 ms`. */
  detail: string;
  /** What to do about a `warn` or `fail`: `set ANTHROPIC_API_KEY`. */
  hint?: string;
}

export interface DoctorReport {
  /** No check failed: exit 0. */
  ok: boolean;
  checks: CheckResult[];
}

/** The report of `checks`: ok unless one failed. */
export function reportOf(checks: CheckResult[]): DoctorReport {
  return { ok: checks.every((c) => c.verdict !== 'fail'), checks };
}
