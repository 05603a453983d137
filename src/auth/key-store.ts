/**
 * The key store: `$LLMUX_HOME/keys.json`, holding only a SHA-256 of each key (llmux.md section 1).
 * Writes are atomic (temp file, fsync, rename, directory fsync) under a lock file
 * (./key-store-lock.ts), so the CLI and a running server can change it side by side; a running
 * server re-reads it when it changes: at once, by watching the directory (the file is replaced by a
 * rename, which a watch on the file itself would lose), and every 500 ms as well, so a change is
 * seen within 1 s where watching is not to be had (some network and container filesystems). A corrupt or half-written file is reported with a
 * clear message and never silently replaced.
 */
import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync, watch as fsWatch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Budget, TierLimits, TierName } from '../config/types.ts';
import { isBudget, isLimit, isTierName } from '../config/types.ts';
import type { KeyRecord } from './key-record.ts';
import { writeFileAtomic } from '../common/files.ts';
import { realTimers } from '../common/timers.ts';
import type { TimerHandle, Timers } from '../common/timers.ts';
import { withLock } from './key-store-lock.ts';

export type { KeyRecord } from './key-record.ts';

export const KEY_PREFIX = 'sk-llmux-';
/** `sk-llmux-` + 43 base64url characters (32 random bytes). */
export const KEY_LENGTH = KEY_PREFIX.length + 43;

export interface NewKey {
  name?: string | undefined;
  tier?: TierName | undefined;
  limits?: Partial<TierLimits> | undefined;
  /** A spending budget of the key's own, instead of its tier's. */
  budget?: Budget | undefined;
  models?: string[] | null | undefined;
  admin?: boolean | undefined;
  /** Lifetime in milliseconds from now. */
  expiresInMs?: number | undefined;
}

export interface KeyStore {
  /** The file path. */
  readonly path: string;
  /** Finds a key record by the presented secret (constant-time hash comparison). */
  findBySecret(secret: string): KeyRecord | undefined;
  list(): KeyRecord[];
  get(idOrName: string): KeyRecord | undefined;
  /** Creates a key; a shared store answers once the state server holds it. */
  create(options: NewKey): NewKeyResult | Promise<NewKeyResult>;
  /**
   * Creates the key only when the store holds no key at all (the first `serve`), as one step, so
   * that of several processes starting together exactly one creates it; undefined otherwise.
   */
  createFirst(options: NewKey): NewKeyResult | undefined | Promise<NewKeyResult | undefined>;
  /** Revokes by id or name; returns the record, or undefined when no key matches. */
  revoke(idOrName: string): KeyRecord | undefined | Promise<KeyRecord | undefined>;
  /** Re-reads the store if it changed (a shared store starts a re-read and returns). */
  reload(): void;
  /** Starts watching the file for changes made by other processes (a directory watch, and an unref'd poll). */
  watch(onError?: (message: string) => void): void;
  close(): void;
}

/** A key just made: the secret, shown once, and its record. */
export interface NewKeyResult { key: string; record: KeyRecord }

/** The key store in `$LLMUX_HOME/keys.json`: every answer is immediate. */
export interface FileKeyStore extends KeyStore {
  create(options: NewKey): NewKeyResult;
  createFirst(options: NewKey): NewKeyResult | undefined;
  revoke(idOrName: string): KeyRecord | undefined;
}

export class KeyStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyStoreError';
  }
}

/**
 * SHA-256 of a key as hex: the only form in which keys are kept. Every request hashes its key, so
 * the one-shot `crypto.hash` (Node 20.12+; a quarter of the cost: no Hash object, no Buffer) is
 * used where there is one; it is read from the module object because older Node 20s lack it.
 */
const sha256Hex: (secret: string) => string = typeof crypto.hash === 'function'
  ? (secret) => crypto.hash('sha256', secret, 'hex')
  : (secret) => createHash('sha256').update(secret).digest('hex');

export function hashKey(secret: string): string {
  return sha256Hex(secret);
}

export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

function generateId(): string {
  return `key_${randomBytes(8).toString('hex')}`;
}

interface FileShape {
  version: 1;
  keys: KeyRecord[];
}

const LIMIT_NAMES: ReadonlySet<string> = new Set(['rpm', 'tpm', 'concurrency']);

/** Parses and checks the store file; throws KeyStoreError naming the problem. */
export function parseKeyFile(text: string, path: string): KeyRecord[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new KeyStoreError(
      `key store ${path} is corrupt or half-written (${(err as Error).message}); llmux left it untouched: restore it from a backup, or move it away to start with an empty store`,
    );
  }
  const bad = (why: string): never => {
    throw new KeyStoreError(`key store ${path} is not a valid llmux key store (${why}); llmux left it untouched: fix or move it away`);
  };
  if (typeof data !== 'object' || data === null || !Array.isArray((data as FileShape).keys)) bad('expected {"version":1,"keys":[...]}');
  const keys = (data as FileShape).keys;
  keys.forEach((k, i) => {
    const problem = keyRecordProblem(k);
    if (problem !== undefined) bad(`keys.${i}${problem}`);
  });
  return keys;
}

/**
 * What is wrong with a stored key record, as a field path and problem (`.tier`, `.limits.rpm: must
 * be …`), or undefined when it is a valid `KeyRecord`. Shared by the file and the shared store.
 */
export function keyRecordProblem(k: unknown): string | undefined {
  if (typeof k !== 'object' || k === null) return ' is not an object';
  const r = k as Record<string, unknown>;
  if (typeof r['id'] !== 'string' || !/^key_[0-9a-f]{16}$/.test(r['id'])) return '.id';
  if (typeof r['hash'] !== 'string' || !/^[0-9a-f]{64}$/.test(r['hash'])) return '.hash';
  if (!isTierName(r['tier'])) return '.tier';
  if (typeof r['name'] !== 'string') return '.name';
  if (typeof r['admin'] !== 'boolean') return '.admin';
  if (typeof r['limits'] !== 'object' || r['limits'] === null) return '.limits';
  for (const [name, value] of Object.entries(r['limits'] as Record<string, unknown>)) {
    if (!LIMIT_NAMES.has(name)) return `.limits.${name}: unknown limit (rpm, tpm, concurrency)`;
    if (!isLimit(value)) return `.limits.${name}: must be a whole number >= 0`;
  }
  if (r['models'] !== null && !Array.isArray(r['models'])) return '.models';
  if (r['budget'] !== undefined && !isBudget(r['budget'])) return '.budget: must be {"usd": a number >= 0, "period": "day" or "month"}';
  // A hand-edited expiry that does not parse would otherwise never expire.
  const expires = r['expires_at'];
  if (expires !== null && (typeof expires !== 'string' || Number.isNaN(Date.parse(expires)))) {
    return `.expires_at: ${JSON.stringify(expires)?.slice(0, 60) ?? 'undefined'} is not a date; write it like 2026-12-31T00:00:00Z, or null for no expiry`;
  }
  if (r['revoked_at'] !== null && typeof r['revoked_at'] !== 'string') return '.revoked_at: must be a date string or null';
  return undefined;
}

/**
 * A new key and its record, as every store makes them: a random secret, a random id, and the
 * options filled in. Throws RangeError for a bad budget (it would stop the next load).
 */
export function newKeyRecord(options: NewKey, nowMs: number): NewKeyResult {
  if (options.budget !== undefined && !isBudget(options.budget)) throw new RangeError('budget: usd must be a number >= 0 and period "day" or "month"');
  const key = generateKey();
  const record: KeyRecord = {
    id: generateId(),
    name: options.name ?? 'key',
    hash: hashKey(key),
    tier: options.tier ?? 'basic',
    limits: { ...(options.limits ?? {}) },
    ...(options.budget === undefined ? {} : { budget: { usd: options.budget.usd, period: options.budget.period } }),
    models: options.models ?? null,
    admin: options.admin ?? false,
    created_at: new Date(nowMs).toISOString(),
    expires_at: options.expiresInMs === undefined ? null : new Date(nowMs + options.expiresInMs).toISOString(),
    revoked_at: null,
  };
  return { key, record };
}

/** How long a watched change may keep changing before it is read. */
const WATCH_SETTLE_MS = 20;

/** The record a key's revocation leaves: revoked now, or when it already was. */
export function revokedRecord(record: KeyRecord, nowMs: number): KeyRecord {
  return { ...record, revoked_at: record.revoked_at ?? new Date(nowMs).toISOString() };
}

/**
 * Finds a key by id, or by name among the keys not revoked (ids win): how `keys revoke` and the
 * dashboard name a key, in every store.
 */
export function findKey(records: readonly KeyRecord[], idOrName: string): KeyRecord | undefined {
  return records.find((r) => r.id === idOrName) ?? records.find((r) => r.name === idOrName && r.revoked_at === null);
}

/**
 * A lookup of records by the presented secret: the SHA-256 of the secret, then a constant-time
 * comparison of the digests. Built once per change of the records, so a lookup decodes nothing.
 */
export function createSecretIndex(records: readonly KeyRecord[]): (secret: string) => KeyRecord | undefined {
  const byHash = new Map(records.map((r) => [r.hash, { record: r, hash: Buffer.from(r.hash, 'hex') }]));
  return (secret) => {
    const digest = hashKey(secret);
    const entry = byHash.get(digest);
    if (entry === undefined) return undefined;
    // The map lookup narrows by hash; the final comparison is constant-time all the same.
    return timingSafeEqual(entry.hash, Buffer.from(digest, 'hex')) ? entry.record : undefined;
  };
}

export { writeFileAtomic } from '../common/files.ts';

export interface KeyStoreOptions {
  now?: () => number;
  /** The watch's poll and settle timers (default: Node's). */
  timers?: Timers;
  /**
   * How long a write may block the thread waiting for another process's live lock (default 0:
   * never; refused with 503 key_store_busy). Only for callers that may block, like the CLI.
   */
  lockWaitMs?: number;
}

/**
 * Opens (or starts) the key store at `$home/keys.json`. Throws KeyStoreError when the file is
 * corrupt.
 */
export function createKeyStore(home: string, options: KeyStoreOptions = {}): FileKeyStore {
  const path = join(home, 'keys.json');
  const now = options.now ?? Date.now;
  const lockWaitMs = options.lockWaitMs ?? 0;
  const timers = options.timers ?? realTimers;
  let records: KeyRecord[] = [];
  let bySecret = createSecretIndex([]);
  let signature = '';
  let timer: TimerHandle | undefined;
  let watcher: FSWatcher | undefined;

  function fileSignature(): string {
    try {
      const st = statSync(path);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
      throw err;
    }
  }

  function load(): void {
    const sig = fileSignature();
    if (sig === signature) return;
    let next: KeyRecord[] = [];
    if (sig !== 'absent') next = parseKeyFile(readFileSync(path, 'utf8'), path);
    records = next;
    bySecret = createSecretIndex(next);
    signature = sig;
  }

  function save(next: KeyRecord[]): void {
    const data: FileShape = { version: 1, keys: next };
    writeFileAtomic(path, `${JSON.stringify(data, null, 2)}\n`);
    signature = ''; // force the next load to read what was written
    load();
  }

  function find(idOrName: string): KeyRecord | undefined {
    return findKey(records, idOrName);
  }

  load();

  return {
    path,
    findBySecret: (secret) => bySecret(secret),
    list: () => records.slice(),
    get: (idOrName) => find(idOrName),
    create(options) {
      const made = newKeyRecord(options, now());
      withLock(path, lockWaitMs, () => {
        signature = '';
        load();
        save([...records, made.record]);
      });
      return made;
    },
    createFirst(options) {
      let made: NewKeyResult | undefined;
      withLock(path, lockWaitMs, () => {
        signature = '';
        load();
        if (records.length > 0) return;
        made = newKeyRecord(options, now());
        save([made.record]);
      });
      return made;
    },
    revoke(idOrName) {
      let revoked: KeyRecord | undefined;
      withLock(path, lockWaitMs, () => {
        signature = '';
        load();
        const target = find(idOrName);
        if (target === undefined) return;
        revoked = revokedRecord(target, now());
        save(records.map((r) => (r.id === target.id ? (revoked as KeyRecord) : r)));
      });
      return revoked;
    },
    reload: load,
    watch(onError) {
      if (timer !== undefined) return;
      let failedSignature = '';
      const check = (): void => {
        try {
          load();
        } catch (err) {
          // Keep serving with the last good state; say once why the file was not taken.
          const sig = fileSignature();
          if (sig !== failedSignature) onError?.((err as Error).message);
          failedSignature = sig;
        }
      };
      timer = timers.setInterval(check, 500);
      timer.unref();
      try {
        // Temp and lock files come and go beside it; only the store's own name matters (some
        // platforms give no name: then any change is checked, which costs one stat). A burst of
        // events (a hand edit truncates, then writes) is read once, when it has settled.
        const name = basename(path);
        let pending: TimerHandle | undefined;
        watcher = fsWatch(dirname(path), { persistent: false }, (_event, changed) => {
          if ((changed !== null && changed !== name) || pending !== undefined) return;
          pending = timers.setTimeout(() => {
            pending = undefined;
            check();
          }, WATCH_SETTLE_MS);
          pending.unref();
        });
        watcher.on('error', () => {
          watcher?.close();
          watcher = undefined;
        });
      } catch {
        // No directory yet, or no watching on this filesystem: the poll covers it.
        watcher = undefined;
      }
    },
    close() {
      timers.clearInterval(timer);
      timer = undefined;
      watcher?.close();
      watcher = undefined;
    },
  };
}

/** Parses `30d`, `12h`, `15m`, `45s` into milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+)([smhdw])$/.exec(text.trim());
  if (m === null) return undefined;
  const n = Number(m[1]);
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  return n > 0 ? n * unit : undefined;
}
