/**
 * The key store: `$LLMUX_HOME/keys.json`, holding only a SHA-256 of each key (llmux.md section 1).
 * Writes are atomic (temp file, fsync, rename, directory fsync) under a lock file
 * (./key-store-lock.ts), so the CLI and a running server can change it side by side; a running
 * server re-reads it when it changes (checked every 500 ms, so a change is seen within 1 s). A corrupt or half-written file is reported with a
 * clear message and never silently replaced.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync, constants as fsc,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Budget, TierLimits, TierName } from '../config-types.ts';
import { isBudget, isLimit, isTierName } from '../config-types.ts';
import type { KeyRecord } from './key-record.ts';
import { writeFileAtomic } from '../files.ts';
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
  create(options: NewKey): { key: string; record: KeyRecord };
  /** Revokes by id or name; returns the record, or undefined when no key matches. */
  revoke(idOrName: string): KeyRecord | undefined;
  /** Re-reads the file if it changed on disk. */
  reload(): void;
  /** Starts polling the file for changes made by other processes (unref'd timer). */
  watch(onError?: (message: string) => void): void;
  close(): void;
}

export class KeyStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyStoreError';
  }
}

/** SHA-256 of a key: the only form in which keys are kept. */
function digestKey(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export function hashKey(secret: string): string {
  return digestKey(secret).toString('hex');
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
    if (typeof k !== 'object' || k === null) bad(`keys.${i} is not an object`);
    if (typeof k.id !== 'string' || !/^key_[0-9a-f]{16}$/.test(k.id)) bad(`keys.${i}.id`);
    if (typeof k.hash !== 'string' || !/^[0-9a-f]{64}$/.test(k.hash)) bad(`keys.${i}.hash`);
    if (!isTierName(k.tier)) bad(`keys.${i}.tier`);
    if (typeof k.name !== 'string') bad(`keys.${i}.name`);
    if (typeof k.admin !== 'boolean') bad(`keys.${i}.admin`);
    if (typeof k.limits !== 'object' || k.limits === null) bad(`keys.${i}.limits`);
    for (const [name, value] of Object.entries(k.limits as Record<string, unknown>)) {
      if (!LIMIT_NAMES.has(name)) bad(`keys.${i}.limits.${name}: unknown limit (rpm, tpm, concurrency)`);
      if (!isLimit(value)) bad(`keys.${i}.limits.${name}: must be a whole number >= 0`);
    }
    if (k.models !== null && !Array.isArray(k.models)) bad(`keys.${i}.models`);
    if (k.budget !== undefined && !isBudget(k.budget)) bad(`keys.${i}.budget: must be {"usd": a number >= 0, "period": "day" or "month"}`);
    // A hand-edited expiry that does not parse would otherwise never expire.
    if (k.expires_at !== null && (typeof k.expires_at !== 'string' || Number.isNaN(Date.parse(k.expires_at)))) {
      bad(`keys.${i}.expires_at: ${JSON.stringify(k.expires_at)?.slice(0, 60) ?? 'undefined'} is not a date; write it like 2026-12-31T00:00:00Z, or null for no expiry`);
    }
    if (k.revoked_at !== null && typeof k.revoked_at !== 'string') bad(`keys.${i}.revoked_at: must be a date string or null`);
  });
  return keys;
}

export { writeFileAtomic } from '../files.ts';

export interface KeyStoreOptions {
  now?: () => number;
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
export function createKeyStore(home: string, options: KeyStoreOptions = {}): KeyStore {
  const path = join(home, 'keys.json');
  const now = options.now ?? Date.now;
  const lockWaitMs = options.lockWaitMs ?? 0;
  let records: KeyRecord[] = [];
  // Hash (hex) -> record and the hash's bytes, so a lookup decodes nothing per request.
  let byHash = new Map<string, { record: KeyRecord; hash: Buffer }>();
  let signature = '';
  let timer: NodeJS.Timeout | undefined;

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
    byHash = new Map(next.map((r) => [r.hash, { record: r, hash: Buffer.from(r.hash, 'hex') }]));
    signature = sig;
  }

  function save(next: KeyRecord[]): void {
    const data: FileShape = { version: 1, keys: next };
    writeFileAtomic(path, `${JSON.stringify(data, null, 2)}\n`);
    signature = ''; // force the next load to read what was written
    load();
  }

  function find(idOrName: string): KeyRecord | undefined {
    return records.find((r) => r.id === idOrName) ?? records.find((r) => r.name === idOrName && r.revoked_at === null);
  }

  load();

  return {
    path,
    findBySecret(secret) {
      const digest = digestKey(secret);
      const entry = byHash.get(digest.toString('hex'));
      if (entry === undefined) return undefined;
      // The map lookup narrows by hash; the final comparison is constant-time all the same.
      return timingSafeEqual(entry.hash, digest) ? entry.record : undefined;
    },
    list: () => records.slice(),
    get: (idOrName) => find(idOrName),
    create(options) {
      // Checked before writing: a bad budget in the file would stop the next load.
      if (options.budget !== undefined && !isBudget(options.budget)) throw new RangeError('budget: usd must be a number >= 0 and period "day" or "month"');
      const key = generateKey();
      const t = now();
      const record: KeyRecord = {
        id: generateId(),
        name: options.name ?? 'key',
        hash: hashKey(key),
        tier: options.tier ?? 'basic',
        limits: { ...(options.limits ?? {}) },
        ...(options.budget === undefined ? {} : { budget: { usd: options.budget.usd, period: options.budget.period } }),
        models: options.models ?? null,
        admin: options.admin ?? false,
        created_at: new Date(t).toISOString(),
        expires_at: options.expiresInMs === undefined ? null : new Date(t + options.expiresInMs).toISOString(),
        revoked_at: null,
      };
      withLock(path, lockWaitMs, () => {
        signature = '';
        load();
        save([...records, record]);
      });
      return { key, record };
    },
    revoke(idOrName) {
      let revoked: KeyRecord | undefined;
      withLock(path, lockWaitMs, () => {
        signature = '';
        load();
        const target = find(idOrName);
        if (target === undefined) return;
        revoked = { ...target, revoked_at: target.revoked_at ?? new Date(now()).toISOString() };
        save(records.map((r) => (r.id === target.id ? (revoked as KeyRecord) : r)));
      });
      return revoked;
    },
    reload: load,
    watch(onError) {
      if (timer !== undefined) return;
      let failedSignature = '';
      timer = setInterval(() => {
        try {
          load();
        } catch (err) {
          // Keep serving with the last good state; say once why the file was not taken.
          const sig = fileSignature();
          if (sig !== failedSignature) onError?.((err as Error).message);
          failedSignature = sig;
        }
      }, 500);
      timer.unref();
    },
    close() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
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
