/**
 * The timers a module arms (a poll, an idle bound, a flush interval), as an option its factory
 * takes: production code uses {@link realTimers}; a test passes a manual clock's timers and moves
 * time on instead of sleeping through it.
 */

/** What a module keeps of a timer it armed: enough to cancel it, or let the process exit past it. */
export interface TimerHandle {
  unref(): unknown;
}

/** `setTimeout` and `setInterval` and their cancels, as one injectable value. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(timer: TimerHandle | undefined): void;
  setInterval(callback: () => void, ms: number): TimerHandle;
  clearInterval(timer: TimerHandle | undefined): void;
}

/** Node's own timers. */
export const realTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  // A handle only ever comes from the matching real call above.
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (callback, ms) => setInterval(callback, ms),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
};
