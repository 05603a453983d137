/**
 * A clock a test moves by hand: `now()` for the code under test, and `timers` (the
 * src/common/timers.ts seam) that fire only when `advance` passes their time, in order, each
 * interval as often as it falls due. A test that used to sleep through a poll, an idle bound or a
 * flush interval advances this clock instead: it takes no time, and what it asserts is exact.
 */
import { realTimers } from '../../src/common/timers.ts';
import type { TimerHandle, Timers } from '../../src/common/timers.ts';

class ManualTimer implements TimerHandle {
  cancelled = false;
  constructor(
    readonly callback: () => void,
    public dueMs: number,
    readonly everyMs: number | undefined,
    readonly order: number,
  ) {}

  unref(): this {
    return this;
  }
}

export interface ManualClock {
  now(): number;
  timers: Timers;
  /** Moves time on by `ms`, running every timer that falls due on the way, earliest first. */
  advance(ms: number): void;
  /**
   * Sets `now()` to `ms` and fires nothing, as when the system clock is set: Node's timers run on
   * a monotonic clock that such a change does not move.
   */
  jump(ms: number): void;
  /** How many timers are armed (not yet fired, for a timeout; not cleared, for an interval). */
  pending(): number;
}

export function createManualClock(startMs = Date.UTC(2026, 2, 14, 10)): ManualClock {
  let nowMs = startMs; // the timers' (monotonic) time
  let wallOffsetMs = 0; // what jump() added to it for now()
  let armed: ManualTimer[] = [];
  let made = 0;
  const arm = (callback: () => void, ms: number, every: boolean): ManualTimer => {
    const delay = Math.max(1, ms); // as Node's: a timer of 0 ms fires on the next turn, never now
    const timer = new ManualTimer(callback, nowMs + delay, every ? delay : undefined, made++);
    armed.push(timer);
    return timer;
  };
  const cancel = (timer: TimerHandle | undefined): void => {
    if (timer instanceof ManualTimer) timer.cancelled = true;
    armed = armed.filter((t) => !t.cancelled);
  };
  const nextDue = (untilMs: number): ManualTimer | undefined => {
    let next: ManualTimer | undefined;
    for (const t of armed) {
      if (t.cancelled || t.dueMs > untilMs) continue;
      if (next === undefined || t.dueMs < next.dueMs || (t.dueMs === next.dueMs && t.order < next.order)) next = t;
    }
    return next;
  };
  return {
    now: () => nowMs + wallOffsetMs,
    timers: {
      setTimeout: (callback, ms) => arm(callback, ms, false),
      clearTimeout: cancel,
      setInterval: (callback, ms) => arm(callback, ms, true),
      clearInterval: cancel,
    },
    advance(ms) {
      const untilMs = nowMs + ms;
      for (let timer = nextDue(untilMs); timer !== undefined; timer = nextDue(untilMs)) {
        nowMs = timer.dueMs;
        if (timer.everyMs === undefined) cancel(timer);
        else timer.dueMs += timer.everyMs;
        timer.callback();
      }
      nowMs = untilMs;
    },
    jump(ms) {
      wallOffsetMs = ms - nowMs;
    },
    pending: () => armed.filter((t) => !t.cancelled).length,
  };
}

/**
 * Node's timeouts, with intervals that never fire: for a test that must see a change come through
 * an event (a directory watch) and not through the poll that backs it up.
 */
export const timeoutsOnly: Timers = {
  ...realTimers,
  setInterval: () => ({ unref: () => undefined }),
  clearInterval: () => {},
};
