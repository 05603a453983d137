/**
 * Sliding-window counters with bounded memory per key.
 *
 * Algorithm: a ring of sub-buckets ("granules"). A window of `windowMs` is cut into `granules`
 * granules of `granuleMs = windowMs / granules` (1 s for the default 60 s window). An amount
 * added at time `t` lands in granule `floor(t / granuleMs)` and keeps counting until the end of
 * the granule that contains `t + windowMs`, i.e. it stops counting at
 * `(floor(t / granuleMs) + granules + 1) * granuleMs`. So every amount counts for more than
 * `windowMs` and at most `windowMs + granuleMs`.
 *
 * Why not the weighted two-bucket counter: it estimates the previous fixed window's share, so
 * 60 requests at second 59 then one at second 61 see 60 * 58/60 = 58 and are let through: 61
 * requests within two seconds. Why not a sliding log: it keeps one timestamp per request, so
 * memory grows with the limit. The granule ring is never more permissive than an exact sliding
 * log of `windowMs` (everything added in the last `windowMs` is always counted, so no interval of
 * `windowMs` ever holds more than the limit), it is late by less than one granule, and it keeps
 * at most `granules + 1` entries per key whatever the traffic. Entries are stored sparsely, so an
 * idle or light key holds two entries, not sixty-one.
 *
 * Several "lanes" (for example requests and tokens) share one ring so a key pays for the granule
 * stamps once. The per-key state is plain data; the functions live once in the object returned
 * by `createSlidingWindows`, so a hundred thousand keys do not carry a hundred thousand closures.
 */
import { GatewayError } from '../common/errors.ts';

/** Per-key state. Treat it as opaque; only the `SlidingWindows` methods should touch it. */
export interface WindowState {
  /** Slot of the oldest live entry in `ring`. */
  head: number;
  /** Number of live entries. */
  size: number;
  /** Entries of `1 + lanes` numbers: the granule index, then one amount per lane. */
  ring: number[];
  /** Sum of the live amounts, per lane. */
  totals: number[];
}

export interface SlidingWindowsOptions {
  /** Length of the window. */
  windowMs: number;
  /** Granules per window (default 60): the counting precision is `windowMs / granules`. */
  granules?: number;
  /** Independent amounts kept per state (default 1). */
  lanes?: number;
  /** Clock used when a method is called without `nowMs` (default `Date.now`). */
  now?: () => number;
}

export interface SlidingWindows {
  readonly windowMs: number;
  readonly granuleMs: number;
  /** A fresh, empty state. */
  create(): WindowState;
  /** Counts `amount` in `lane` at `nowMs`; returns the granule it was counted in (for `adjust`). */
  add(state: WindowState, lane: number, amount: number, nowMs?: number): number;
  /**
   * Changes the amount counted in `granule` by `delta` (never below 0) if that granule is still
   * in the window; returns whether it was. Used to replace an estimate counted earlier.
   */
  adjust(state: WindowState, lane: number, granule: number, delta: number, nowMs?: number): boolean;
  /** The amount counted in `lane` over the window ending at `nowMs`. */
  total(state: WindowState, lane: number, nowMs?: number): number;
  /**
   * Milliseconds from `nowMs` until the total of `lane` drops below `limit` with nothing more
   * added: 0 when it already is, `Infinity` when it never can (`limit <= 0`).
   */
  msUntilBelow(state: WindowState, lane: number, limit: number, nowMs?: number): number;
  /** Milliseconds from `nowMs` until every amount in `lane` has stopped counting (0 when none counts). */
  msUntilEmpty(state: WindowState, lane: number, nowMs?: number): number;
  /** Milliseconds from `nowMs` until an amount added at `nowMs` would stop counting. */
  msUntilExpiryOfNew(nowMs?: number): number;
  /** Whether nothing at all is left in the window (every lane, every granule). */
  isEmpty(state: WindowState, nowMs?: number): boolean;
}

const INITIAL_ENTRIES = 2;

function invalidOption(message: string): GatewayError {
  return new GatewayError(500, 'api_error', 'internal_error', message);
}

/** Creates the shared operations for sliding-window states of one window length. */
export function createSlidingWindows(options: SlidingWindowsOptions): SlidingWindows {
  const windowMs = options.windowMs;
  const granules = options.granules ?? 60;
  const lanes = options.lanes ?? 1;
  const now = options.now ?? Date.now;
  if (!(Number.isFinite(windowMs) && windowMs > 0)) {
    throw invalidOption(`windowMs must be a positive number of milliseconds, got ${String(windowMs)}`);
  }
  if (!(Number.isInteger(granules) && granules >= 1)) {
    throw invalidOption(`granules must be a whole number >= 1, got ${String(granules)}`);
  }
  if (!(Number.isInteger(lanes) && lanes >= 1)) {
    throw invalidOption(`lanes must be a whole number >= 1, got ${String(lanes)}`);
  }
  const granuleMs = windowMs / granules;
  const stride = 1 + lanes;
  // Granules current-granules .. current are live: granules + 1 distinct stamps at most.
  const maxEntries = granules + 1;

  function granuleAt(nowMs: number): number {
    return Math.floor(nowMs / granuleMs);
  }

  function expiryOf(granule: number): number {
    return (granule + granules + 1) * granuleMs;
  }

  function zeros(length: number): number[] {
    // Sized exactly (push over-allocates), and doubles from the start so storing granule stamps
    // beyond the small-integer range never converts the array.
    return new Array<number>(length).fill(0.5).fill(0);
  }

  function slotOf(state: WindowState, index: number): number {
    const capacity = state.ring.length / stride;
    const slot = state.head + index;
    return (slot >= capacity ? slot - capacity : slot) * stride;
  }

  function expire(state: WindowState, nowMs: number): void {
    if (state.size === 0) return;
    const oldestLive = granuleAt(nowMs) - granules;
    const ring = state.ring;
    const totals = state.totals;
    const capacity = ring.length / stride;
    let head = state.head;
    let size = state.size;
    while (size > 0 && ring[head * stride]! < oldestLive) {
      for (let lane = 0; lane < lanes; lane++) totals[lane] = totals[lane]! - ring[head * stride + 1 + lane]!;
      head = head + 1 === capacity ? 0 : head + 1;
      size--;
    }
    if (size === 0) {
      head = 0;
      // Exact zero, so fractional amounts cannot leave a residue that blocks a limit of 1.
      totals.fill(0);
    }
    state.head = head;
    state.size = size;
  }

  function grow(state: WindowState): void {
    const capacity = state.ring.length / stride;
    const next = zeros(Math.min(capacity * 2, maxEntries) * stride);
    for (let index = 0; index < state.size; index++) {
      const from = slotOf(state, index);
      for (let offset = 0; offset < stride; offset++) next[index * stride + offset] = state.ring[from + offset]!;
    }
    state.ring = next;
    state.head = 0;
  }

  function findSlot(state: WindowState, granule: number): number {
    for (let index = state.size - 1; index >= 0; index--) {
      const slot = slotOf(state, index);
      const stamp = state.ring[slot]!;
      if (stamp === granule) return slot;
      if (stamp < granule) break;
    }
    return -1;
  }

  return {
    windowMs,
    granuleMs,

    create() {
      return { head: 0, size: 0, ring: zeros(INITIAL_ENTRIES * stride), totals: zeros(lanes) };
    },

    add(state, lane, amount, nowMs = now()) {
      expire(state, nowMs);
      const current = granuleAt(nowMs);
      if (state.size > 0) {
        const tail = slotOf(state, state.size - 1);
        const stamp = state.ring[tail]!;
        // `>=`: a clock that stepped back adds to the newest granule instead of reordering the ring.
        if (stamp >= current) {
          state.ring[tail + 1 + lane] = state.ring[tail + 1 + lane]! + amount;
          state.totals[lane] = state.totals[lane]! + amount;
          return stamp;
        }
      }
      if (state.size === state.ring.length / stride) grow(state);
      const slot = slotOf(state, state.size);
      state.ring[slot] = current;
      for (let offset = 1; offset < stride; offset++) state.ring[slot + offset] = 0;
      state.ring[slot + 1 + lane] = amount;
      state.totals[lane] = state.totals[lane]! + amount;
      state.size++;
      return current;
    },

    adjust(state, lane, granule, delta, nowMs = now()) {
      expire(state, nowMs);
      const slot = findSlot(state, granule);
      if (slot < 0) return false;
      const before = state.ring[slot + 1 + lane]!;
      const after = Math.max(0, before + delta);
      state.ring[slot + 1 + lane] = after;
      state.totals[lane] = Math.max(0, state.totals[lane]! + after - before);
      return true;
    },

    total(state, lane, nowMs = now()) {
      expire(state, nowMs);
      return state.totals[lane]!;
    },

    msUntilBelow(state, lane, limit, nowMs = now()) {
      expire(state, nowMs);
      let remaining = state.totals[lane]!;
      if (remaining < limit) return 0;
      if (limit <= 0) return Infinity;
      for (let index = 0; index < state.size; index++) {
        const slot = slotOf(state, index);
        remaining -= state.ring[slot + 1 + lane]!;
        if (remaining < limit) return expiryOf(state.ring[slot]!) - nowMs;
      }
      return Infinity;
    },

    msUntilEmpty(state, lane, nowMs = now()) {
      expire(state, nowMs);
      for (let index = state.size - 1; index >= 0; index--) {
        const slot = slotOf(state, index);
        if (state.ring[slot + 1 + lane]! > 0) return expiryOf(state.ring[slot]!) - nowMs;
      }
      return 0;
    },

    msUntilExpiryOfNew(nowMs = now()) {
      return expiryOf(granuleAt(nowMs)) - nowMs;
    },

    isEmpty(state, nowMs = now()) {
      // Only the newest entry matters, so a sweep over many keys never walks their rings.
      return state.size === 0 || state.ring[slotOf(state, state.size - 1)]! < granuleAt(nowMs) - granules;
    },
  };
}
