/**
 * The limiter shared by every process on one state server (llmux.md section 6): the same rules as
 * src/limits/limiter.ts (read its header), counted on the server by the scripts of
 * ./limiter-scripts.ts, so a key's requests/min, tokens/min and concurrency hold across processes
 * exactly.
 *
 * Cost per request: ONE round trip before the request goes upstream (the admission script, by
 * EVALSHA); at its end one more script, sent without waiting (settle and release leave together
 * when they come within one turn of the event loop, and in one write with whatever else is being
 * sent). Concurrency slots are leases the process refreshes every third of `leaseMs` while their
 * requests run, all of its leases in one write.
 *
 * What stays in the process, and why:
 * - The budget for unadmitted work (refused bodies, count_tokens) protects this process's CPU from
 *   bodies it reads for nothing, so it is counted here, per process.
 * - `check`, before a body is read, asks nobody: it refuses on a limit of 0, on that budget, and on
 *   a requests/min refusal the server gave this key earlier, until the moment the server said
 *   there would be room (nothing another process does can bring it sooner). Anything else is for
 *   the admission to decide, after the body.
 *
 * When the server is slow or down (`health`): no admission waits longer than the client's timeout;
 * under `on_failure: "local"` the request is admitted by this process's own limiter instead (and
 * released there), under `"closed"` it is refused with 503 `state_unavailable`. A settle or release
 * that cannot reach the server is lost; the lease then runs out, and its reservation counts as used.
 */
import { randomBytes } from 'node:crypto';
import { createLimiter } from '../limits/limiter.ts';
import type { Admission, CheckScope, LimitSet, Limiter, LimiterPeek, RateLimitState, Refusal, RefusalReason } from '../limits/limiter.ts';
import type { StateHealth } from './health.ts';
import { RespError } from './resp.ts';
import type { Reply, RespClient } from './resp.ts';
import { ADJUST_SCRIPT, ADMIT_SCRIPT, END_SCRIPT, PEEK_SCRIPT, REFRESH_SCRIPT } from './limiter-scripts.ts';

export interface SharedLimiterOptions {
  client: RespClient;
  health: StateHealth;
  /** Prefix of every key this limiter writes; default `llmux:`. */
  prefix?: string;
  /** How long a slot outlives a process that stopped refreshing it (`state.lease_ms`). */
  leaseMs: number;
  /** Window of rpm and tpm; default 60 000. */
  windowMs?: number;
  /** Body bytes of unadmitted requests a key may send per window, in this process; default 128 MiB. */
  unadmittedBytes?: number;
  /** A clock for the scripts instead of the server's (tests); also this process's fallback clock. */
  now?: () => number;
  /** A settle, release or refresh the server refused with an error (not for want of an answer). */
  onError?(message: string): void;
}

export interface SharedLimiter extends Limiter {
  admit(keyId: string, limits: LimitSet, reservedTokens: number): Promise<Admission | Refusal>;
  peek(keyId: string, limits: LimitSet): Promise<LimiterPeek>;
  /** Leases this process holds now. */
  leasesHeld(): number;
  /** Extends every lease this process holds by `leaseMs` from now (what its timer does every third of a lease). */
  refreshLeases(): Promise<void>;
  /** Stops refreshing leases (they run out on the server). */
  close(): void;
}

const REASONS: Readonly<Record<number, RefusalReason>> = { 1: 'requests', 2: 'tokens', 3: 'concurrency' };
const MAX_TOKEN_FIGURE = 2 ** 32;
/** Remembered requests/min refusals, at most; past it they are forgotten (only an optimisation). */
const MAX_REMEMBERED_REFUSALS = 10_000;

/** As src/limits/limiter.ts counts them: not a positive finite number is 0, fractions round up, capped. */
function toTokens(value: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(MAX_TOKEN_FIGURE, Math.ceil(value)) : 0;
}

function toSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/** A limit as the scripts take it: -1 for none. */
function limitArg(limit: number): number {
  return limit === Infinity ? -1 : limit;
}

function numbers(reply: Reply, length: number): number[] {
  if (!Array.isArray(reply) || reply.length < length || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`state server: unexpected limiter script reply ${JSON.stringify(reply).slice(0, 100)}`);
  }
  return reply as number[];
}

function stateOf(limits: LimitSet, requests: number, tokens: number, requestsResetMs: number, tokensResetMs: number): RateLimitState {
  return {
    requestLimit: limits.rpm,
    requestsRemaining: Math.max(0, limits.rpm - requests),
    requestsResetSeconds: toSeconds(requestsResetMs),
    tokenLimit: limits.tpm,
    tokensRemaining: Math.max(0, limits.tpm - tokens),
    tokensResetSeconds: toSeconds(tokensResetMs),
  };
}

/** The limiter on the state server, with this process's own as the fallback (see the header). */
export function createSharedLimiter(options: SharedLimiterOptions): SharedLimiter {
  const { client, health, leaseMs } = options;
  const prefix = options.prefix ?? 'llmux:';
  const windowMs = options.windowMs ?? 60_000;
  const clock = options.now;
  const localOptions = {
    windowMs,
    ...(clock === undefined ? {} : { now: clock }),
    ...(options.unadmittedBytes === undefined ? {} : { unadmittedBytes: options.unadmittedBytes }),
  };
  // Refused and count_tokens bodies, always counted here; and the fallback while degraded.
  const unadmitted = createLimiter(localOptions);
  const fallback = createLimiter(localOptions);
  const admitScript = client.script(ADMIT_SCRIPT);
  const endScript = client.script(END_SCRIPT);
  const adjustScript = client.script(ADJUST_SCRIPT);
  const refreshScript = client.script(REFRESH_SCRIPT);
  const peekScript = client.script(PEEK_SCRIPT);
  const localNow = clock ?? Date.now;
  const processToken = randomBytes(6).toString('hex');
  let leaseCount = 0;
  /** Leases this process holds, by key id: refreshed together. */
  const held = new Map<string, Set<string>>();
  /** Requests/min refusals, by key id: refused again by `check` until `untilMs` (local clock). */
  const refusedUntil = new Map<string, { untilMs: number; rpm: number; refusal: Refusal }>();

  const keysOf = (keyId: string): [string, string] => [`${prefix}lim:{${keyId}}`, `${prefix}lease:{${keyId}}`];
  /** The first script arguments: now ('' for the server's clock), window, lease. */
  const timeArgs = (): [string, number, number] => [clock === undefined ? '' : String(clock()), windowMs, leaseMs];

  function reportError(error: unknown): void {
    // Unavailability is the health's to report (once); an error reply is worth saying.
    if (error instanceof RespError) options.onError?.(`shared limiter: ${error.message}`);
  }

  function hold(keyId: string, lease: string): void {
    let leases = held.get(keyId);
    if (leases === undefined) held.set(keyId, leases = new Set());
    leases.add(lease);
  }

  function letGo(keyId: string, lease: string): void {
    const leases = held.get(keyId);
    if (leases === undefined) return;
    leases.delete(lease);
    if (leases.size === 0) held.delete(keyId);
  }

  /** All leases in one write: one script per key, all sent in one tick. */
  async function refreshLeases(): Promise<void> {
    if (held.size === 0 || health.degraded()) return;
    const runs = [...held].map(([keyId, leases]) => refreshScript.run(keysOf(keyId), [...timeArgs(), ...leases]).catch(reportError));
    await Promise.all(runs);
  }

  const refreshTimer = setInterval(() => void refreshLeases(), Math.max(100, Math.floor(leaseMs / 3)));
  refreshTimer.unref();

  function degradedAdmit(keyId: string, limits: LimitSet, reservedTokens: number): Admission | Refusal {
    if (health.policy === 'closed') throw health.unavailable();
    return fallback.admit(keyId, limits, reservedTokens);
  }

  /** The admission of a request the server admitted: its end goes back to the server, once. */
  function sharedAdmission(keyId: string, lease: string, reservation: number, state: RateLimitState): Admission {
    let settled = false;
    let released = false;
    let used = 0;
    let settleSent = false;
    let releaseSent = false;
    let scheduled = false;
    // Where the server counted the reservation for want of usage, when the release went first.
    let countedIn: Promise<number> | undefined;

    function send(usedArg: string, release: boolean): Promise<number> {
      return endScript.run(keysOf(keyId), [...timeArgs(), lease, usedArg, release ? '1' : '0'])
        .then((reply) => (typeof reply === 'number' ? reply : -1));
    }

    // Settle and release called within one turn of the event loop leave as one script.
    function flush(): void {
      scheduled = false;
      if (released && !releaseSent) {
        releaseSent = true;
        letGo(keyId, lease);
        if (settled && !settleSent) {
          settleSent = true;
          send(String(used), true).catch(reportError);
          return;
        }
        countedIn = send('', true);
        countedIn.catch(reportError);
      }
      if (settled && !settleSent) {
        settleSent = true;
        if (countedIn === undefined) {
          send(String(used), false).catch(reportError);
          return;
        }
        countedIn.then((granule) => {
          if (granule < 0) return undefined;
          return adjustScript.run(keysOf(keyId), [...timeArgs(), granule, used - reservation]);
        }).catch(reportError);
      }
    }

    function schedule(): void {
      if (scheduled) return;
      scheduled = true;
      setImmediate(flush);
    }

    return {
      ok: true,
      state,
      settle(tokens) {
        if (settled) return;
        settled = true;
        used = toTokens(tokens);
        schedule();
      },
      release() {
        if (released) return;
        released = true;
        schedule();
      },
    };
  }

  function remember(keyId: string, limits: LimitSet, refusal: Refusal, waitMs: number): void {
    if (refusal.reason !== 'requests') return;
    if (refusedUntil.size >= MAX_REMEMBERED_REFUSALS) refusedUntil.clear();
    refusedUntil.set(keyId, { untilMs: localNow() + waitMs, rpm: limits.rpm, refusal });
  }

  /** A requests/min refusal the server gave, while it still holds. */
  function rememberedRefusal(keyId: string, limits: LimitSet): Refusal | undefined {
    const entry = refusedUntil.get(keyId);
    if (entry === undefined) return undefined;
    const leftMs = entry.untilMs - localNow();
    if (leftMs <= 0 || entry.rpm !== limits.rpm) {
      refusedUntil.delete(keyId);
      return undefined;
    }
    return { ...entry.refusal, reservation: 0, retryAfterSeconds: Math.max(1, toSeconds(leftMs)) };
  }

  async function admit(keyId: string, limits: LimitSet, reservedTokens: number): Promise<Admission | Refusal> {
    if (health.degraded()) return degradedAdmit(keyId, limits, reservedTokens);
    const reservation = toTokens(reservedTokens);
    const lease = `${processToken}.${(leaseCount++).toString(36)}`;
    let reply: number[];
    try {
      reply = numbers(await admitScript.run(keysOf(keyId), [
        ...timeArgs(), limitArg(limits.rpm), limitArg(limits.tpm), limitArg(limits.concurrency), reservation, lease,
      ]), 9);
    } catch (error) {
      reportError(error);
      return degradedAdmit(keyId, limits, reservedTokens);
    }
    const [admitted, reason, limit, waitMs, requests, tokens, , requestsResetMs, tokensResetMs] = reply as [number, number, number, number, number, number, number, number, number];
    const state = stateOf(limits, requests, tokens, requestsResetMs, tokensResetMs);
    if (admitted === 1) {
      hold(keyId, lease);
      return sharedAdmission(keyId, lease, reservation, state);
    }
    const refusal: Refusal = {
      ok: false,
      reason: REASONS[reason] ?? 'requests',
      limit,
      reservation,
      windowMs,
      retryAfterSeconds: Math.max(1, toSeconds(waitMs)),
      state,
    };
    remember(keyId, limits, refusal, waitMs);
    return refusal;
  }

  return {
    check(keyId: string, limits: LimitSet, scope: CheckScope) {
      if (health.degraded()) {
        if (health.policy === 'closed' && scope === 'model') throw health.unavailable();
        return unadmitted.check(keyId, limits, scope) ?? (scope === 'model' ? fallback.check(keyId, limits, 'model') : undefined);
      }
      // `unadmitted` admits nothing: for a model request it refuses only a limit of 0, or the budget.
      return unadmitted.check(keyId, limits, scope) ?? (scope === 'model' ? rememberedRefusal(keyId, limits) : undefined);
    },

    admit,

    chargeUnadmitted(keyId, limits, bodyBytes) {
      unadmitted.chargeUnadmitted(keyId, limits, bodyBytes);
    },

    async peek(keyId, limits) {
      if (health.degraded()) return fallback.peek(keyId, limits);
      try {
        const [requests, tokens, concurrent, requestsResetMs, tokensResetMs] = numbers(await peekScript.run(keysOf(keyId), timeArgs()), 5) as [number, number, number, number, number];
        return { requests, tokens, concurrent, state: stateOf(limits, requests, tokens, requestsResetMs, tokensResetMs) };
      } catch (error) {
        reportError(error);
        return fallback.peek(keyId, limits);
      }
    },

    sweep() {
      unadmitted.sweep();
      fallback.sweep();
    },

    size() {
      return held.size + fallback.size();
    },

    refreshLeases,

    leasesHeld() {
      let n = 0;
      for (const leases of held.values()) n += leases.size;
      return n;
    },

    close() {
      clearInterval(refreshTimer);
    },
  };
}
