/**
 * The attempts of one request across a model's deployments, its provider keys and its fallbacks
 * (llmux.md sections 4 and 10), as a sequence the attempts loop pulls from: each `next()` says
 * what to try and whether to wait a backoff first.
 *
 * 1. The model asked for, then each fallback in order; for each, its candidates in the plan's order
 *    (the conversation's deployment first, then the strategy's), each deployment once, skipping any
 *    that became unusable during this request (a rest just learned) — no backoff between them.
 * 2. A key answering 401/403: the same deployment again at once with another key, if it has one.
 * 3. Every distinct target tried and attempts left after a retryable failure: a usable target
 *    again, the model asked for first, after a backoff (exponential, jittered, at least the
 *    upstream's `retry-after`) — section 4's retries, which is all a model with one deployment
 *    gets. Never when the last `retry-after` asked for more than `maxRetryAfterMs`.
 * 4. `retry.attempts` counts every attempt of the request, across all of the above.
 *
 * Decision (the contract is silent on the order): distinct targets before repeats, so a fallback
 * is tried before the model asked for is retried; with `attempts: 3`, one deployment and one
 * fallback, that is model, fallback, then one more try of the model after a backoff.
 *
 * When nothing was ever tried because every deployment of every model was resting or at its
 * limits, `refusal` says so with the earliest moment one is back: our 429 `rate_limit_exceeded`.
 */
import type { ModelEntry } from '../config/types.ts';
import type { Deployment } from './deployments.ts';
import type { ProviderKey } from './key-pool.ts';
import type { RestKind } from './rests.ts';
import type { AttemptHandle, AttemptOutcome, Candidate, Plan, PlanOptions, Router, Unusable } from './router.ts';

export interface SequenceOptions extends PlanOptions {
  /** `retry.attempts`: attempts of the whole request. */
  attempts: number;
  /** `retry.max_retry_after_ms`: a longer upstream `retry-after` ends the repeats. */
  maxRetryAfterMs: number;
}

/** One attempt to make. Call `outcome` when the upstream answered (or failed), and `end` exactly once. */
export interface Step extends AttemptHandle {
  /** 1-based, across the whole request. */
  readonly attempt: number;
  /** Wait a backoff before sending: this repeats a target already tried. */
  readonly backoff: boolean;
  /** The floor of that backoff: the upstream's `retry-after` for this target, if it gave one. */
  readonly retryAfterMs: number | undefined;
}

export interface AttemptSequence {
  /** The next attempt, or undefined when there is none left. */
  next(): Step | undefined | Promise<Step | undefined>;
  /** When nothing could be tried because every deployment was resting or at its limits: why, and the earliest retry. */
  refusal(): Refusal | undefined;
}

export interface Refusal {
  reason: Exclude<Unusable, 'credentials'>;
  retryAfterMs: number;
}

type Planned = Plan & { ok: true };

interface Last {
  deployment: Deployment;
  candidate: Candidate;
  plan: Planned;
  kind: RestKind | undefined;
  retryAfterMs: number | undefined;
}

/** Retryable before the first byte: move on, or repeat after a backoff. */
function retryable(kind: RestKind | undefined): boolean {
  return kind === 'immediate' || kind === 'counted';
}

/**
 * One request's sequence, as data: the functions below work on it, so a sequence costs one object
 * and its two methods, not a closure per helper (most requests make one step and are done).
 */
interface SequenceState {
  readonly router: Router;
  readonly chain: readonly ModelEntry[];
  readonly options: SequenceOptions;
  // Arrays, not sets: a request tries a handful of targets, and a Set costs more to make than to search.
  readonly plans: Array<Plan | undefined>;
  readonly tried: Deployment[];
  /** Keys refused (401/403) in this request; made on the first. */
  failedKeys: ProviderKey[] | undefined;
  modelIndex: number;
  made: number;
  last: Last | undefined;
  refusal: Refusal | undefined;
}

function step(s: SequenceState, plan: Planned, candidate: Candidate, key: ProviderKey | undefined, backoff: boolean, retryAfterMs: number | undefined): Step {
  const handle = s.router.begin(plan, candidate.deployment, key);
  const record: Last = { deployment: candidate.deployment, candidate, plan, kind: undefined, retryAfterMs: undefined };
  s.last = record;
  s.tried.push(candidate.deployment);
  s.made++;
  return {
    model: handle.model,
    deployment: handle.deployment,
    key: handle.key,
    attempt: s.made,
    backoff,
    retryAfterMs,
    outcome(outcome: AttemptOutcome) {
      const kind = handle.outcome(outcome);
      if (record.kind === undefined) {
        record.kind = kind;
        record.retryAfterMs = outcome.retryAfterMs;
        if (kind === 'auth' && key !== undefined) (s.failedKeys ??= []).push(key);
      }
      return kind;
    },
    end: handle.end,
  };
}

/** The first key of the candidate usable now and not refused in this request; null when none is. */
function keyFor(s: SequenceState, plan: Planned, candidate: Candidate): ProviderKey | undefined | null {
  if (candidate.keys.length === 0) return undefined;
  for (const key of candidate.keys) {
    if (!(s.failedKeys?.includes(key) ?? false) && s.router.keyUsable(plan.model, candidate.deployment, key)) return key;
  }
  return null;
}

function noteRefusal(s: SequenceState, plan: Plan): void {
  if (plan.ok || plan.reason === 'credentials') return;
  if (s.refusal === undefined || plan.retryAfterMs < s.refusal.retryAfterMs) s.refusal = { reason: plan.reason, retryAfterMs: plan.retryAfterMs };
}

/** The first untried candidate usable now; `justPlanned`: the plan was made now, so its first candidate is usable as it stands. */
function fresh(s: SequenceState, plan: Planned, justPlanned: boolean): Step | undefined {
  for (const candidate of plan.candidates) {
    if (justPlanned && s.tried.length === 0) return step(s, plan, candidate, candidate.keys[0], false, undefined);
    if (s.tried.includes(candidate.deployment) || !s.router.usable(plan.model, candidate.deployment)) continue;
    const key = keyFor(s, plan, candidate);
    if (key !== null) return step(s, plan, candidate, key, false, undefined);
  }
  return undefined;
}

function repeat(s: SequenceState): Step | undefined {
  const last = s.last;
  if (last === undefined || !retryable(last.kind)) return undefined;
  if (last.retryAfterMs !== undefined && last.retryAfterMs > s.options.maxRetryAfterMs) return undefined;
  for (const plan of s.plans) {
    if (plan === undefined || !plan.ok) continue;
    for (const candidate of plan.candidates) {
      if (!s.router.usable(plan.model, candidate.deployment)) continue;
      const key = keyFor(s, plan, candidate);
      if (key === null) continue;
      return step(s, plan, candidate, key, true, candidate.deployment === last.deployment ? last.retryAfterMs : undefined);
    }
  }
  return undefined;
}

function next(s: SequenceState): Step | undefined | Promise<Step | undefined> {
  if (s.made >= s.options.attempts) return undefined;
  const last = s.last;
  if (last !== undefined && last.kind === 'auth') {
    const key = keyFor(s, last.plan, last.candidate);
    if (key !== null && key !== undefined) return step(s, last.plan, last.candidate, key, false, undefined);
  }
  while (s.modelIndex < s.chain.length) {
    let plan = s.plans[s.modelIndex];
    const justPlanned = plan === undefined;
    if (plan === undefined) {
      const planned = s.router.plan(s.chain[s.modelIndex]!, s.options);
      if (planned instanceof Promise) {
        const index = s.modelIndex;
        return planned.then((resolved) => {
          s.plans[index] = resolved;
          return resolved.ok && s.tried.length === 0 ? fresh(s, resolved, true) ?? next(s) : next(s);
        });
      }
      s.plans[s.modelIndex] = plan = planned;
    }
    if (plan.ok) {
      const found = fresh(s, plan, justPlanned);
      if (found !== undefined) return found;
    } else if (s.made === 0) {
      noteRefusal(s, plan);
    }
    s.modelIndex++;
  }
  return repeat(s);
}

/** The attempts of one request over `chain` (the model asked for, then its usable fallbacks). */
export function createAttemptSequence(router: Router, chain: readonly ModelEntry[], options: SequenceOptions): AttemptSequence {
  const s: SequenceState = { router, chain, options, plans: [], tried: [], failedKeys: undefined, modelIndex: 0, made: 0, last: undefined, refusal: undefined };
  return {
    next: () => next(s),
    refusal: () => (s.made === 0 ? s.refusal : undefined),
  };
}
