/**
 * Per-key limits (gateway-api.md "Limits", llmux.md section 3): requests per window, tokens per
 * window and concurrent requests, plus a budget for work that is never admitted. The limiter counts
 * and answers in numbers; src/http/rate-limit.ts renders them as the `x-ratelimit-*` headers and
 * the 429 that go with them. A shared-state (Redis) limiter implements the same semantics:
 *
 * Per key there are four amounts counted in a sliding window (./window.ts: an amount counted at t
 * stops counting at the end of the second, 1/60 of the window, that holds t + `windowMs`), plus two
 * amounts held outside any window while requests run:
 *   requests   admissions                          inFlight   requests admitted and not released
 *   tokens     settled usage of requests            reserved   reservations of requests not settled
 *   unadmitted requests that read a body and were not admitted (refused, or count_tokens)
 *   unadmittedBytes  the bodies of those
 * and `tokens in use` = tokens (window) + reserved.
 *
 * - `check(key, scope)`, before a request's body is read, counts nothing. Scope `model` refuses when
 *   requests >= rpm, inFlight >= concurrency, tokens in use >= tpm, unadmitted >= rpm or
 *   unadmittedBytes >= the budget; scope `unadmitted` (count_tokens) only on the last two.
 * - `admit(key, reservation)`: one reservation per request, the estimated input plus the output it
 *   may produce. Refused (counting nothing) when requests >= rpm, inFlight >= concurrency, or
 *   tokens in use + max(1, min(reservation, tpm)) > tpm. So a reservation must fit in what is left,
 *   and one larger than the whole tpm is admitted only when nothing is in use, and runs alone.
 *   Admitted: requests += 1 (counted now), inFlight += 1, reserved += reservation.
 * - `settle(used)`, once per request: reserved -= reservation, and `used` (input + output as the
 *   provider reported it) is counted in the tokens window now. Later calls do nothing.
 * - `release()`, once per request: inFlight -= 1. Not settled yet: settles with the reservation
 *   itself, counted now. A `settle` after that replaces the counted figure in place (same second),
 *   unless it has already left the window.
 * - `chargeUnadmitted(key, bytes)`: unadmitted += 1 and unadmittedBytes += bytes, counted now.
 * - A limit is a whole number >= 0 or `Infinity`. 0 refuses everything on that dimension;
 *   `Infinity` never refuses, and the headers of an unlimited dimension are left out. The
 *   unadmitted budget is the key's rpm in requests and `unadmittedBytes` (an option) in bytes.
 * - Token figures that are not positive finite numbers count as 0; fractions round up; a figure
 *   above 2^32 counts as 2^32, so the window's sums stay exact.
 *
 * The state reported with every answer ({@link RateLimitState}, whole seconds):
 * - the key's limit per dimension;
 * - what remains: limit minus what counts now, never below 0 (tokens: tokens in use, this
 *   request's reservation included);
 * - reset: seconds until the window is back to its full allowance if nothing else is sent and the
 *   requests in flight finished now (0 when nothing counts). This is the OpenAI meaning of "reset";
 *   it is later than the moment there is room again.
 * - retry after (refusals only): seconds until this request would be admitted if it were sent
 *   again and nothing else changed, at least 1. When only in-flight requests can make room (the
 *   concurrency cap, or reservations in flight leaving too little) the moment is unknown and it
 *   is 1; with a limit of 0 it is the window length.
 *
 * State is swept (a key with nothing in the window and nothing in flight is forgotten) at most once
 * per window, by the first `admit` after it: one pass over the keys, about 0.1 to 0.3 µs per key.
 * There is no timer, so nothing keeps the process alive. Memory is about 300 bytes per key with
 * light traffic and at most about 2.7 KB for a key busy in every second of the window.
 */
import { isLimit } from '../config/types.ts';
import type { TierLimits } from '../config/types.ts';
import { createSlidingWindows } from './window.ts';
import type { WindowState } from './window.ts';

/** A key's limits: whole numbers >= 0, or Infinity for none. */
export type LimitSet = TierLimits;

/** Where a key stands: per dimension its limit (Infinity: unlimited), what remains, and seconds to a full reset. */
export interface RateLimitState {
  requestLimit: number;
  requestsRemaining: number;
  requestsResetSeconds: number;
  tokenLimit: number;
  tokensRemaining: number;
  tokensResetSeconds: number;
}

export interface Admission {
  ok: true;
  /** The key's state after this admission. */
  state: RateLimitState;
  /** The request's real usage is known: replace its reservation by `tokens` (input+output). Only the first call counts. */
  settle(tokens: number): void;
  /** Free the concurrency slot. Exactly-once: later calls do nothing. If settle was never called, the reservation is counted as the usage. */
  release(): void;
}

/** Why a request was refused: the dimension that makes it wait longest. */
export type RefusalReason = 'requests' | 'tokens' | 'concurrency' | 'unadmitted_requests' | 'unadmitted_bytes';

export interface Refusal {
  ok: false;
  reason: RefusalReason;
  /** The limit that refused (of `reason`'s dimension). */
  limit: number;
  /** The reservation of the refused request (tokens it asked for; 0 before its body was read). */
  reservation: number;
  /** The window of the rpm and tpm limits. */
  windowMs: number;
  /** Whole seconds, >= 1. */
  retryAfterSeconds: number;
  /** The key's state, unchanged by the refusal. */
  state: RateLimitState;
}

/** What `check` looks at: everything a model request needs, or only the unadmitted budget (count_tokens). */
export type CheckScope = 'model' | 'unadmitted';

/** What `peek` sees: counts now (`tokens` includes the reservations in flight) and the state for headers. */
export interface LimiterPeek { requests: number; tokens: number; concurrent: number; state: RateLimitState }

/**
 * The limiter as the gateway uses it: this process's (`createLimiter`, synchronous) or a shared
 * one (src/state/limiter.ts), whose admission and peek are one round trip to the state server, so
 * callers await them. `check` and `chargeUnadmitted` stay synchronous and local everywhere.
 */
export interface Limiter {
  /**
   * Before a body is read: the refusal a request of `scope` would get whatever its body, or
   * undefined. Counts nothing. A shared limiter whose server is down under `on_failure: "closed"`
   * throws the 503 `state_unavailable` GatewayError here.
   */
  check(keyId: string, limits: LimitSet, scope: CheckScope): Refusal | undefined;
  /** Admits a request reserving `reservedTokens` for `keyId` and counts it, or refuses it and counts nothing. */
  admit(keyId: string, limits: LimitSet, reservedTokens: number): Admission | Refusal | Promise<Admission | Refusal>;
  /** Counts a request that read a body of `bodyBytes` and was not admitted (refused, or count_tokens). */
  chargeUnadmitted(keyId: string, limits: LimitSet, bodyBytes: number): void;
  /**
   * Current state without counting anything (for headers on operations that don't count, and the
   * dashboard). `tokens` includes the reservations of requests in flight.
   */
  peek(keyId: string, limits: LimitSet): LimiterPeek | Promise<LimiterPeek>;
  /** Drop state of keys idle for more than a window with nothing in flight. Also run automatically from `admit`, at most once per window. */
  sweep(): void;
  /** Keys with state. */
  size(): number;
}

/** This process's limiter: every answer is immediate. */
export interface LocalLimiter extends Limiter {
  admit(keyId: string, limits: LimitSet, reservedTokens: number): Admission | Refusal;
  peek(keyId: string, limits: LimitSet): LimiterPeek;
}

export interface LimiterOptions {
  /** Clock in epoch milliseconds (default `Date.now`). */
  now?: () => number;
  /** Window of the rpm and tpm limits (default 60 000: "per minute"). */
  windowMs?: number;
  /** Body bytes of unadmitted requests a key may send per window (default 128 MiB). */
  unadmittedBytes?: number;
}

interface KeyState {
  /** Lanes: REQUESTS admissions; TOKENS settled usage; UNADMITTED requests and UNADMITTED_BYTES their bodies. */
  window: WindowState;
  inFlight: number;
  /** Reservations of the requests in flight that have not settled. */
  inFlightTokens: number;
}

const REQUESTS = 0;
const TOKENS = 1;
const UNADMITTED = 2;
const UNADMITTED_BYTES = 3;
const LANES = 4;
/** Wait reported when only an in-flight request finishing can make room: nobody knows when. */
const UNKNOWN_WAIT_MS = 1000;
/** Largest token figure counted for one request: far above any model's context, and sums stay exact. */
const MAX_TOKEN_FIGURE = 2 ** 32;
export const DEFAULT_UNADMITTED_BYTES = 128 * 1024 * 1024;

/**
 * Limits are checked where they are read (config tiers, the key store), so a bad one is a clear
 * error at load; one that gets here anyway is a bug in the caller.
 */
function checkLimits(limits: LimitSet): void {
  if (isLimit(limits.rpm) && isLimit(limits.tpm) && isLimit(limits.concurrency)) return;
  throw new RangeError(`limits must be whole numbers >= 0 or Infinity (rpm ${String(limits.rpm)}, tpm ${String(limits.tpm)}, concurrency ${String(limits.concurrency)})`);
}

/** Token figures from callers and upstreams: anything not a positive finite number is 0. */
function toTokens(value: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(MAX_TOKEN_FIGURE, Math.ceil(value)) : 0;
}

function rateLimitState(limits: LimitSet, requests: number, tokens: number, requestsResetSeconds: number, tokensResetSeconds: number): RateLimitState {
  return {
    requestLimit: limits.rpm,
    requestsRemaining: Math.max(0, limits.rpm - requests),
    requestsResetSeconds,
    tokenLimit: limits.tpm,
    tokensRemaining: Math.max(0, limits.tpm - tokens),
    tokensResetSeconds,
  };
}

function toSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/** What a reservation needs free under tpm: at least 1, at most the whole tpm (see the header). */
function tokensNeeded(reservation: number, tpm: number): number {
  return Math.max(1, Math.min(reservation, tpm));
}

/** A key's counts at one moment. */
interface Counts {
  requests: number;
  /** Tokens in use: the window's and the reservations in flight. */
  tokens: number;
  inFlight: number;
  unadmitted: number;
  unadmittedBytes: number;
}

/**
 * Creates an in-memory limiter. Everything is synchronous, so admissions from concurrent
 * requests cannot interleave between the check and the count.
 */
export function createLimiter(options: LimiterOptions = {}): LocalLimiter {
  const now = options.now ?? Date.now;
  const windowMs = options.windowMs ?? 60_000;
  const unadmittedBytesLimit = options.unadmittedBytes ?? DEFAULT_UNADMITTED_BYTES;
  const windows = createSlidingWindows({ windowMs, lanes: LANES, now });
  let keys = new Map<string, KeyState>();
  let nextSweepMs = -Infinity;

  function countsOf(state: KeyState | undefined, nowMs: number): Counts {
    if (state === undefined) return { requests: 0, tokens: 0, inFlight: 0, unadmitted: 0, unadmittedBytes: 0 };
    return {
      requests: windows.total(state.window, REQUESTS, nowMs),
      tokens: windows.total(state.window, TOKENS, nowMs) + state.inFlightTokens,
      inFlight: state.inFlight,
      unadmitted: windows.total(state.window, UNADMITTED, nowMs),
      unadmittedBytes: windows.total(state.window, UNADMITTED_BYTES, nowMs),
    };
  }

  /** The state of a key whose counts at `nowMs` the caller already has (`tokens` includes reservations in flight). */
  function stateOf(state: KeyState | undefined, limits: LimitSet, nowMs: number, requests: number, tokens: number): RateLimitState {
    if (state === undefined) return rateLimitState(limits, 0, 0, 0, 0);
    // A reservation in flight will be counted no earlier than now, so the window is full again no
    // sooner than an amount added now leaves, which is after everything counted already.
    const resetTokensMs = state.inFlightTokens > 0
      ? windows.msUntilExpiryOfNew(nowMs)
      : windows.msUntilEmpty(state.window, TOKENS, nowMs);
    return rateLimitState(
      limits,
      requests,
      tokens,
      toSeconds(windows.msUntilEmpty(state.window, REQUESTS, nowMs)),
      toSeconds(resetTokensMs),
    );
  }

  /** Milliseconds until `lane` drops below `limit` (the whole window for a limit of 0 or no state). */
  function waitBelow(state: KeyState | undefined, lane: number, limit: number, nowMs: number): number {
    if (limit <= 0 || state === undefined) return windowMs;
    return windows.msUntilBelow(state.window, lane, limit, nowMs);
  }

  /**
   * The refusal for a request reserving `reservation` (0 before the body is read) under `scope`, or
   * undefined when it may go ahead. The request waits for the slowest limit it is over; that one is
   * the reason given.
   */
  function refusalOf(state: KeyState | undefined, limits: LimitSet, nowMs: number, counts: Counts, reservation: number, scope: CheckScope): Refusal | undefined {
    const over: Array<{ reason: RefusalReason; limit: number; waitMs: number }> = [];
    if (scope === 'model') {
      if (counts.requests >= limits.rpm) over.push({ reason: 'requests', limit: limits.rpm, waitMs: waitBelow(state, REQUESTS, limits.rpm, nowMs) });
      const need = tokensNeeded(reservation, limits.tpm);
      if (counts.tokens + need > limits.tpm) {
        // Room comes when the window drops below what the reservations in flight and this one leave.
        const windowLimit = limits.tpm - (state?.inFlightTokens ?? 0) - need + 1;
        const waitMs = limits.tpm === 0 ? windowMs : windowLimit <= 0 ? UNKNOWN_WAIT_MS : waitBelow(state, TOKENS, windowLimit, nowMs);
        over.push({ reason: 'tokens', limit: limits.tpm, waitMs });
      }
      if (counts.inFlight >= limits.concurrency) {
        over.push({ reason: 'concurrency', limit: limits.concurrency, waitMs: limits.concurrency === 0 ? windowMs : UNKNOWN_WAIT_MS });
      }
    }
    if (counts.unadmitted >= limits.rpm) {
      over.push({ reason: 'unadmitted_requests', limit: limits.rpm, waitMs: waitBelow(state, UNADMITTED, limits.rpm, nowMs) });
    }
    if (counts.unadmittedBytes >= unadmittedBytesLimit) {
      over.push({ reason: 'unadmitted_bytes', limit: unadmittedBytesLimit, waitMs: waitBelow(state, UNADMITTED_BYTES, unadmittedBytesLimit, nowMs) });
    }
    if (over.length === 0) return undefined;
    let slowest = over[0]!;
    for (const candidate of over) if (candidate.waitMs > slowest.waitMs) slowest = candidate;
    return {
      ok: false,
      reason: slowest.reason,
      limit: slowest.limit,
      reservation,
      windowMs,
      retryAfterSeconds: Math.max(1, toSeconds(slowest.waitMs)),
      state: stateOf(state, limits, nowMs, counts.requests, counts.tokens),
    };
  }

  function sweepAt(nowMs: number): void {
    nextSweepMs = nowMs + windowMs;
    // Copying the live keys into a new map is several times faster than deleting the idle ones
    // one by one, which makes the map shrink and rehash over and over.
    const live = new Map<string, KeyState>();
    keys.forEach((state, keyId) => {
      if (state.inFlight > 0 || !windows.isEmpty(state.window, nowMs)) live.set(keyId, state);
    });
    keys = live;
  }

  function stateFor(keyId: string): KeyState {
    let state = keys.get(keyId);
    if (state === undefined) {
      state = { window: windows.create(), inFlight: 0, inFlightTokens: 0 };
      keys.set(keyId, state);
    }
    return state;
  }

  function admit(keyId: string, limits: LimitSet, reservedTokens: number): Admission | Refusal {
    checkLimits(limits);
    const nowMs = now();
    // Amortised: one pass over the keys per window, paid by the first admission after it.
    if (nowMs >= nextSweepMs) sweepAt(nowMs);
    const reservation = toTokens(reservedTokens);
    const counts = countsOf(keys.get(keyId), nowMs);
    // The unadmitted budget was checked before the body was read; what this body costs if it is
    // refused now is charged after, so it does not refuse the request that spent it.
    const refusal = refusalOf(keys.get(keyId), limits, nowMs, { ...counts, unadmitted: 0, unadmittedBytes: 0 }, reservation, 'model');
    if (refusal !== undefined) return refusal;
    const held = stateFor(keyId);
    windows.add(held.window, REQUESTS, 1, nowMs);
    held.inFlight++;
    held.inFlightTokens += reservation;

    let settled = false;
    let released = false;
    // Where the reservation went when released unsettled, so a late settle can replace it there.
    let releasedGranule = 0;
    return {
      ok: true,
      state: stateOf(held, limits, nowMs, counts.requests + 1, counts.tokens + reservation),
      settle(tokensUsed: number) {
        if (settled) return;
        settled = true;
        const used = toTokens(tokensUsed);
        if (released) {
          windows.adjust(held.window, TOKENS, releasedGranule, used - reservation);
          return;
        }
        held.inFlightTokens -= reservation;
        windows.add(held.window, TOKENS, used);
      },
      release() {
        if (released) return;
        released = true;
        held.inFlight--;
        if (settled) return;
        held.inFlightTokens -= reservation;
        releasedGranule = windows.add(held.window, TOKENS, reservation);
      },
    };
  }

  return {
    check(keyId, limits, scope) {
      checkLimits(limits);
      const nowMs = now();
      const state = keys.get(keyId);
      return refusalOf(state, limits, nowMs, countsOf(state, nowMs), 0, scope);
    },

    admit,

    chargeUnadmitted(keyId, limits, bodyBytes) {
      checkLimits(limits);
      const nowMs = now();
      const state = stateFor(keyId);
      windows.add(state.window, UNADMITTED, 1, nowMs);
      windows.add(state.window, UNADMITTED_BYTES, Number.isFinite(bodyBytes) && bodyBytes > 0 ? bodyBytes : 0, nowMs);
    },

    peek(keyId, limits) {
      checkLimits(limits);
      const nowMs = now();
      const state = keys.get(keyId);
      const counts = countsOf(state, nowMs);
      return { requests: counts.requests, tokens: counts.tokens, concurrent: counts.inFlight, state: stateOf(state, limits, nowMs, counts.requests, counts.tokens) };
    },

    sweep() {
      sweepAt(now());
    },

    size() {
      return keys.size;
    },
  };
}
