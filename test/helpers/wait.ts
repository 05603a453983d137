/**
 * Waiting for something to happen, instead of sleeping for a fixed time and hoping it did: polls a
 * condition until it holds, and fails with what never happened once a deadline passes. The
 * deadline is generous (a loaded machine is slow, and a passing test stops waiting at once);
 * where a test asserts how soon something happens, it moves an injected clock instead
 * (./clock.ts).
 */
import assert from 'node:assert/strict';

export interface WaitOptions {
  /** How long to keep trying before failing (default 10 s). */
  timeoutMs?: number;
  /** How long to pause between two looks (default 5 ms). */
  pollMs?: number;
}

/**
 * Resolves with the milliseconds waited once `condition` holds; fails with "`what` never happened
 * within N ms" after `timeoutMs`. `what` names the awaited event: "the request's log line" (a
 * function, when the message should say what was seen instead).
 */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string | (() => string), options: WaitOptions = {}): Promise<number> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const pollMs = options.pollMs ?? 5;
  const started = performance.now();
  for (;;) {
    if (await condition()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) assert.fail(`${typeof what === 'string' ? what : what()} never happened within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
