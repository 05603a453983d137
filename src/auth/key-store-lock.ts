/**
 * The key store's lock file, `keys.json.lock` (created with O_EXCL, holding its owner's pid and
 * host), which keeps two writers from interleaving read-modify-write. A write holds it for
 * milliseconds, so:
 * - a lock is stale when its owner is gone (same host, no such pid), when its owner is this very
 *   process (nothing here holds it across a call), when it is empty for over a second (its owner
 *   died between creating and writing it), or when it is older than {@link LOCK_STALE_MS}; a stale
 *   lock is broken at once, under a second lock file (`.break`) so two processes breaking the same
 *   stale lock cannot remove a fresh one;
 * - a live lock is waited for only by callers that may block (the CLI: `lockWaitMs`); a server
 *   never waits on it (it once froze for 10 s on a stale lock): the write is refused with 503
 *   `key_store_busy` and can be retried.
 */
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { GatewayError } from '../common/errors.ts';

const LOCK_STALE_MS = 10_000;
/** An empty lock or a breaker lock older than this was left by a process that died holding it. */
const LOCK_ABANDONED_MS = 1_000;
/** Pause between two tries of a caller that waits (the CLI). */
const LOCK_RETRY_MS = 10;

/** 503 key_store_busy: another process is writing the key store right now. */
function keyStoreBusy(lock: string, owner: string): GatewayError {
  return new GatewayError(
    503,
    'overloaded_error',
    'key_store_busy',
    `The key store is being written by another process (${owner}, lock ${lock}); try again in a moment`,
    { headers: { 'retry-after': '1' } },
  );
}

/** Creates the lock file with this process's pid and host; false when it exists. */
function tryCreate(lock: string): boolean {
  try {
    const fd = openSync(lock, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600);
    try {
      writeSync(fd, `${process.pid}\n${hostname()}\n`);
    } finally {
      closeSync(fd);
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Whether a process with this pid exists on this host (EPERM: it exists, owned by another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why the lock at `lock` (as `stat` saw it) is stale, or undefined when its owner may be writing. */
function staleness(lock: string, mtimeMs: number): string | undefined {
  const ageMs = Date.now() - mtimeMs;
  if (ageMs > LOCK_STALE_MS) return `older than ${LOCK_STALE_MS} ms`;
  let text = '';
  try {
    text = readFileSync(lock, 'utf8');
  } catch {
    return undefined; // gone or unreadable: try again
  }
  const [pidText, host] = text.split('\n');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return ageMs > LOCK_ABANDONED_MS ? 'empty' : undefined;
  if (host !== undefined && host !== '' && host !== hostname()) return undefined;
  if (pid === process.pid) return 'left by this process';
  return isAlive(pid) ? undefined : `its owner ${pid} is gone`;
}

/**
 * Removes `lock` if it is still the stale file `ino`, holding `${lock}.break` while it checks and
 * removes, so a lock created by another process in between is never removed. Returns whether the
 * caller should try to take the lock again at once.
 */
function breakStale(lock: string, ino: number): boolean {
  const breaker = `${lock}.break`;
  if (!tryCreate(breaker)) {
    try {
      if (Date.now() - statSync(breaker).mtimeMs > LOCK_ABANDONED_MS) unlinkSync(breaker);
    } catch { /* released meanwhile */ }
    return false;
  }
  try {
    const now = statSync(lock, { throwIfNoEntry: false });
    if (now === undefined) return true;
    if (now.ino === ino && staleness(lock, now.mtimeMs) !== undefined) unlinkSync(lock);
    return true;
  } finally {
    try { unlinkSync(breaker); } catch { /* already gone */ }
  }
}

/** Blocks the thread for `ms`: only for callers that may block (the CLI), never in a server. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `fn` holding `${path}.lock`. A stale lock is broken at once; a live one is waited for up to
 * `waitMs` (0: refused at once with 503 key_store_busy).
 */
export function withLock<T>(path: string, waitMs: number, fn: () => T): T {
  const lock = `${path}.lock`;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (tryCreate(lock)) break;
    const seen = statSync(lock, { throwIfNoEntry: false });
    if (seen === undefined) continue; // released between the two calls
    const stale = staleness(lock, seen.mtimeMs);
    if (stale !== undefined && breakStale(lock, seen.ino)) continue;
    if (Date.now() >= deadline) {
      let owner = 'unknown process';
      try { owner = `pid ${readFileSync(lock, 'utf8').split('\n')[0] ?? '?'}`; } catch { /* gone */ }
      throw keyStoreBusy(lock, owner);
    }
    sleepSync(LOCK_RETRY_MS);
  }
  try {
    return fn();
  } finally {
    try { unlinkSync(lock); } catch { /* removed as stale by someone else */ }
  }
}
