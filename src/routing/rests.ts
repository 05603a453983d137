/**
 * Rests (cooldowns), exactly as llmux.md section 10 says, as a pure machine over one record per
 * subject (a deployment, a provider key on a deployment, or a provider key). Pure, so the shared
 * state (src/state/routing.ts) runs the same steps on the server's record when another process
 * changed it meanwhile: the rule has this one home.
 *
 * - A deployment answering 429, 529 or 503, or not reachable, rests at once, for its
 *   `retry-after` (bounded by an hour), else 5 s. 500, 502 and 504 rest it after three in a row.
 * - When the first request after a rest fails again, the next rest doubles the last one, up to
 *   60 s (a longer `retry-after` is still honoured). A success resets all of it.
 * - A provider key answering 401 or 403 rests 5 minutes, doubling to an hour while it keeps failing.
 * - Which subject a failure rests (the caller decides, src/routing/router.ts): a 429 rests the key
 *   on that deployment (a key's limits are per model upstream), a 401/403 the key everywhere,
 *   other failures the deployment; and only where there is somewhere else to go (a model's only
 *   deployment never rests, a pool's only key neither).
 *
 * Decisions: a failure that arrives while the subject rests (a request that started before the
 * rest) lengthens the rest to what it asks if that is later, without doubling — the later
 * deadline wins, never the earlier; a success that arrives while it rests changes nothing. The
 * "first request after a rest" is the first outcome reported after the rest ended, however long
 * after.
 */

/** One subject's rest state. Times are the local clock's milliseconds. */
export interface RestRecord {
  /** Resting until then (0 or past: not resting). */
  readonly untilMs: number;
  /** Length of the last rest since the last success: what the next one doubles. */
  readonly lastMs: number;
  /** Counted failures (500, 502, 504) in a row. */
  readonly strikes: number;
  /** A rest was taken and no outcome has come since it ended: the next one is its probe. */
  readonly probing: boolean;
}

/** What an outcome means for rests. */
export type RestKind = 'success' | 'immediate' | 'counted' | 'auth' | 'none';

/** How long rests of one kind of subject are: the first, and the doubling's ceiling. */
export interface RestPolicy {
  readonly baseMs: number;
  readonly capMs: number;
}

/** Deployments, and keys on a deployment (429): 5 s, doubling to 60 s. */
export const DEPLOYMENT_REST: RestPolicy = Object.freeze({ baseMs: 5_000, capMs: 60_000 });
/** Provider keys answering 401/403: 5 minutes, doubling to an hour. */
export const KEY_REST: RestPolicy = Object.freeze({ baseMs: 300_000, capMs: 3_600_000 });
/** The longest upstream `retry-after` a rest honours. */
export const MAX_RETRY_AFTER_MS = 3_600_000;
/** Counted failures in a row that make a rest. */
export const STRIKES_TO_REST = 3;

const IMMEDIATE_STATUS = new Set([429, 503, 529]);
const COUNTED_STATUS = new Set([500, 502, 504]);

/**
 * The kind of an attempt's outcome: `status` the upstream's, or `failure` when none came
 * (`unreachable`: no connection or reset before any byte, `timeout`: no answer in time, counted
 * as a 504 would be).
 */
export function restKindOf(status: number | undefined, failure: 'unreachable' | 'timeout' | undefined): RestKind {
  if (failure === 'unreachable') return 'immediate';
  if (failure === 'timeout') return 'counted';
  if (status === undefined) return 'none';
  if (status >= 200 && status < 300) return 'success';
  if (IMMEDIATE_STATUS.has(status)) return 'immediate';
  if (COUNTED_STATUS.has(status)) return 'counted';
  if (status === 401 || status === 403) return 'auth';
  return 'none';
}

/** Whether the record rests its subject at `nowMs`. */
export function isResting(record: RestRecord | undefined, nowMs: number): boolean {
  return record !== undefined && record.untilMs > nowMs;
}

function rest(record: RestRecord | undefined, nowMs: number, askedMs: number | undefined, policy: RestPolicy): RestRecord {
  const base = askedMs !== undefined && askedMs > 0 ? Math.min(askedMs, MAX_RETRY_AFTER_MS) : policy.baseMs;
  if (record !== undefined && record.untilMs > nowMs) {
    // Already resting: a later deadline wins, an earlier one changes nothing.
    return nowMs + base > record.untilMs ? { ...record, untilMs: nowMs + base, strikes: 0 } : record;
  }
  const doubled = record !== undefined && record.probing && record.lastMs > 0 ? Math.min(policy.capMs, record.lastMs * 2) : 0;
  const length = Math.max(base, doubled);
  return { untilMs: nowMs + length, lastMs: length, strikes: 0, probing: true };
}

/**
 * The record after a failure of `kind` at `nowMs` (`retryAfterMs`: the upstream's, if it gave
 * one). `immediate` and `auth` rest at once; `counted` after STRIKES_TO_REST in a row, or at once
 * when it is the probe after a rest.
 */
export function afterFailure(record: RestRecord | undefined, kind: 'immediate' | 'counted' | 'auth', nowMs: number, retryAfterMs: number | undefined, policy: RestPolicy): RestRecord {
  if (kind !== 'counted') return rest(record, nowMs, retryAfterMs, policy);
  if (record !== undefined && record.untilMs > nowMs) return record;
  if (record !== undefined && record.probing) return rest(record, nowMs, retryAfterMs, policy);
  const strikes = (record?.strikes ?? 0) + 1;
  if (strikes >= STRIKES_TO_REST) return rest(record, nowMs, retryAfterMs, policy);
  return { untilMs: record?.untilMs ?? 0, lastMs: record?.lastMs ?? 0, strikes, probing: false };
}

/** The record after a success at `nowMs`: undefined (nothing to remember) unless it still rests. */
export function afterSuccess(record: RestRecord | undefined, nowMs: number): RestRecord | undefined {
  if (record !== undefined && record.untilMs > nowMs) return record;
  return undefined;
}
