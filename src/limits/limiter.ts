/**
 * Per-key limits (gateway-api.md "Limits", llmux.md section 3): requests per window, tokens per
 * window and concurrent requests. The limiter counts and answers in numbers; src/http/rate-limit.ts
 * renders them as the `x-ratelimit-*` headers and the 429 that go with them.
 *
 * Counting rules:
 * - Requests count at admission, in the sliding window of `./window.ts`: a request stops counting
 *   at the end of the second (1/60 of the window) that holds its admission time + `windowMs`, so
 *   never more than `rpm` requests are admitted within any `windowMs`, and a request counts at most
 *   one second longer than an exact sliding log would count it.
 * - Tokens count real usage of finished requests, at the time it becomes known (`settle`). While a
 *   request is in flight its estimate is held outside the window, so it keeps counting however long
 *   the request runs, and `settle` simply swaps it for the real figure counted now. A request
 *   released without `settle` counts its estimate as its usage, at release time; a `settle` that
 *   comes after `release` replaces that figure in place while it is still in the window.
 * - A request is refused when the key is already at or over a limit (`requests >= rpm`,
 *   `tokens >= tpm`, `inFlight >= concurrency`); a refused request counts nothing. One admitted
 *   request may therefore take the token count past `tpm`; the next one then waits.
 * - A limit is a whole number >= 0 or `Infinity`. 0 refuses everything on that dimension;
 *   `Infinity` never refuses, and the headers of an unlimited dimension are left out.
 *
 * The state reported with every answer ({@link RateLimitState}, whole seconds):
 * - the key's limit per dimension;
 * - what remains: limit minus what counts now, never below 0 (tokens include the estimates of
 *   requests in flight, this one included);
 * - reset: seconds until the window is back to its full allowance if nothing else is sent and the
 *   requests in flight finished now (0 when nothing counts). This is the OpenAI meaning of "reset";
 *   it is later than the moment there is room again.
 * - retry after (refusals only): seconds until this request would be admitted if it were sent
 *   again and nothing else changed, at least 1. When only in-flight requests can make room (the
 *   concurrency cap, or estimates in flight at or over `tpm`) the moment is unknown and it is 1;
 *   with a limit of 0 it is the window length.
 *
 * State is swept (a key with nothing in the window and nothing in flight is forgotten) at most once
 * per window, by the first `admit` after it: one pass over the keys, about 0.1 to 0.3 µs per key.
 * There is no timer, so nothing keeps the process alive. Memory is about 300 bytes per key with
 * light traffic and at most about 1.7 KB for a key busy in every second of the window.
 */
import { isLimit } from '../config-types.ts';
import type { TierLimits } from '../config-types.ts';
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
  /** The request's real usage is known: replace its input-token estimate by `tokens` (input+output). Idempotent-ish: only the first call counts. */
  settle(tokens: number): void;
  /** Free the concurrency slot. Exactly-once: later calls do nothing. If settle was never called, the estimate stays counted. */
  release(): void;
}

export interface Refusal {
  ok: false;
  reason: 'requests' | 'tokens' | 'concurrency';
  /** The limit that refused (of `reason`'s dimension). */
  limit: number;
  /** The window of the rpm and tpm limits. */
  windowMs: number;
  /** Whole seconds, >= 1. */
  retryAfterSeconds: number;
  /** The key's state, unchanged by the refusal. */
  state: RateLimitState;
}

export interface Limiter {
  /** Admits a request for `keyId` and counts it, or refuses it and counts nothing. */
  admit(keyId: string, limits: LimitSet, estimatedTokens: number): Admission | Refusal;
  /**
   * Current state without counting anything (for headers on operations that don't count, and the
   * dashboard). `tokens` includes the estimates of requests in flight.
   */
  peek(keyId: string, limits: LimitSet): { requests: number; tokens: number; concurrent: number; state: RateLimitState };
  /** Drop state of keys idle for more than a window with nothing in flight. Also run automatically from `admit`, at most once per window. */
  sweep(): void;
  /** Keys with state. */
  size(): number;
}

export interface LimiterOptions {
  /** Clock in epoch milliseconds (default `Date.now`). */
  now?: () => number;
  /** Window of the rpm and tpm limits (default 60 000: "per minute"). */
  windowMs?: number;
}

interface KeyState {
  /** Lane REQUESTS: admissions; lane TOKENS: usage of finished requests. */
  window: WindowState;
  inFlight: number;
  /** Estimates of the requests in flight that have not settled. */
  inFlightTokens: number;
}

const REQUESTS = 0;
const TOKENS = 1;
/** Wait reported when only an in-flight request finishing can make room: nobody knows when. */
const UNKNOWN_WAIT_MS = 1000;

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
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.ceil(value) : 0;
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

/**
 * Creates an in-memory limiter. Everything is synchronous, so admissions from concurrent
 * requests cannot interleave between the check and the count.
 */
export function createLimiter(options: LimiterOptions = {}): Limiter {
  const now = options.now ?? Date.now;
  const windowMs = options.windowMs ?? 60_000;
  const windows = createSlidingWindows({ windowMs, lanes: 2, now });
  let keys = new Map<string, KeyState>();
  let nextSweepMs = -Infinity;

  /** The state of a key whose counts at `nowMs` the caller already has (`tokens` includes estimates in flight). */
  function stateOf(state: KeyState | undefined, limits: LimitSet, nowMs: number, requests: number, tokens: number): RateLimitState {
    if (state === undefined) return rateLimitState(limits, 0, 0, 0, 0);
    // An estimate in flight will be counted no earlier than now, so the window is full again no
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

  function refuse(state: KeyState | undefined, limits: LimitSet, nowMs: number, requests: number, tokens: number, inFlight: number): Refusal {
    let requestsWaitMs = 0;
    if (requests >= limits.rpm) {
      requestsWaitMs = limits.rpm === 0 || state === undefined ? windowMs : windows.msUntilBelow(state.window, REQUESTS, limits.rpm, nowMs);
    }
    let tokensWaitMs = 0;
    if (tokens >= limits.tpm) {
      if (limits.tpm === 0 || state === undefined) tokensWaitMs = windowMs;
      else if (state.inFlightTokens >= limits.tpm) tokensWaitMs = UNKNOWN_WAIT_MS;
      else tokensWaitMs = windows.msUntilBelow(state.window, TOKENS, limits.tpm - state.inFlightTokens, nowMs);
    }
    let concurrencyWaitMs = 0;
    if (inFlight >= limits.concurrency) concurrencyWaitMs = limits.concurrency === 0 ? windowMs : UNKNOWN_WAIT_MS;

    // The request waits for the slowest of the limits it is over; that one is the reason given.
    let reason: Refusal['reason'] = 'requests';
    let waitMs = -1;
    if (requests >= limits.rpm) waitMs = requestsWaitMs;
    if (tokens >= limits.tpm && tokensWaitMs > waitMs) {
      reason = 'tokens';
      waitMs = tokensWaitMs;
    }
    if (inFlight >= limits.concurrency && concurrencyWaitMs > waitMs) {
      reason = 'concurrency';
      waitMs = concurrencyWaitMs;
    }
    const retryAfterSeconds = Math.max(1, toSeconds(waitMs));
    return {
      ok: false,
      reason,
      limit: reason === 'requests' ? limits.rpm : reason === 'tokens' ? limits.tpm : limits.concurrency,
      windowMs,
      retryAfterSeconds,
      state: stateOf(state, limits, nowMs, requests, tokens),
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

  function admit(keyId: string, limits: LimitSet, estimatedTokens: number): Admission | Refusal {
    checkLimits(limits);
    const nowMs = now();
    // Amortised: one pass over the keys per window, paid by the first admission after it.
    if (nowMs >= nextSweepMs) sweepAt(nowMs);
    let state = keys.get(keyId);
    const requests = state === undefined ? 0 : windows.total(state.window, REQUESTS, nowMs);
    const tokens = state === undefined ? 0 : windows.total(state.window, TOKENS, nowMs) + state.inFlightTokens;
    const inFlight = state === undefined ? 0 : state.inFlight;
    if (requests >= limits.rpm || tokens >= limits.tpm || inFlight >= limits.concurrency) {
      return refuse(state, limits, nowMs, requests, tokens, inFlight);
    }
    if (state === undefined) {
      state = { window: windows.create(), inFlight: 0, inFlightTokens: 0 };
      keys.set(keyId, state);
    }
    const held: KeyState = state;
    const estimate = toTokens(estimatedTokens);
    windows.add(held.window, REQUESTS, 1, nowMs);
    held.inFlight++;
    held.inFlightTokens += estimate;

    let settled = false;
    let released = false;
    // Where the estimate went when released unsettled, so a late settle can replace it there.
    let releasedGranule = 0;
    return {
      ok: true,
      state: stateOf(held, limits, nowMs, requests + 1, tokens + estimate),
      settle(tokensUsed: number) {
        if (settled) return;
        settled = true;
        const used = toTokens(tokensUsed);
        if (released) {
          windows.adjust(held.window, TOKENS, releasedGranule, used - estimate);
          return;
        }
        held.inFlightTokens -= estimate;
        windows.add(held.window, TOKENS, used);
      },
      release() {
        if (released) return;
        released = true;
        held.inFlight--;
        if (settled) return;
        held.inFlightTokens -= estimate;
        releasedGranule = windows.add(held.window, TOKENS, estimate);
      },
    };
  }

  return {
    admit,

    peek(keyId, limits) {
      checkLimits(limits);
      const nowMs = now();
      const state = keys.get(keyId);
      if (state === undefined) return { requests: 0, tokens: 0, concurrent: 0, state: stateOf(undefined, limits, nowMs, 0, 0) };
      const requests = windows.total(state.window, REQUESTS, nowMs);
      const tokens = windows.total(state.window, TOKENS, nowMs) + state.inFlightTokens;
      return { requests, tokens, concurrent: state.inFlight, state: stateOf(state, limits, nowMs, requests, tokens) };
    },

    sweep() {
      sweepAt(now());
    },

    size() {
      return keys.size;
    },
  };
}
