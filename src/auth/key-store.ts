/**
 * The key store: `$LLMUX_HOME/keys.json`, holding only a SHA-256 of each key (llmux.md section 1).
 * Writes are atomic (temp file, fsync, rename, directory fsync) under a lock file, so the CLI and a
 * running server can change it side by side; a running server re-reads it when it changes: at once,
 * by watching the directory (the file is replaced by a rename, which a watch on the file itself
 * would lose), and every 500 ms as well, so a change is seen within 1 s where watching is not to be
 * had (some network and container filesystems). A corrupt or half-written file is reported with a
 * clear message and never silently replaced.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, watch as fsWatch, writeSync, constants as fsc,
} from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { TierLimits, TierName } from '../config-types.ts';
import { isLimit, isTierName } from '../config-types.ts';
import type { KeyRecord } from './key-record.ts';

export type { KeyRecord } from './key-record.ts';

export const KEY_PREFIX = 'sk-llmux-';
/** `sk-llmux-` + 43 base64url characters (32 random bytes). */
export const KEY_LENGTH = KEY_PREFIX.length + 43;

export interface NewKey {
  name?: string | undefined;
  tier?: TierName | undefined;
  limits?: Partial<TierLimits> | undefined;
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
  /** Starts watching the file for changes made by other processes (a directory watch, and an unref'd poll). */
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
  });
  return keys;
}

/** Writes a file atomically: a temp file beside it, fsync, rename over, fsync the directory. */
export function writeFileAtomic(path: string, text: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (err) {
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw err;
  }
  try {
    const dfd = openSync(dirname(path), 'r');
    try { fsyncSync(dfd); } finally { closeSync(dfd); }
  } catch {
    // Some filesystems refuse a directory fsync; the rename is still atomic.
  }
}

const LOCK_STALE_MS = 10_000;
/** How long a watched change may keep changing before it is read. */
const WATCH_SETTLE_MS = 20;

/** Runs `fn` holding `${path}.lock` (O_EXCL), so two writers never interleave read-modify-write. */
function withLock<T>(path: string, fn: () => T): T {
  const lock = `${path}.lock`;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const started = Date.now();
  for (;;) {
    try {
      const fd = openSync(lock, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) unlinkSync(lock);
      } catch { /* raced with its owner */ }
      if (Date.now() - started > LOCK_STALE_MS * 2) throw new KeyStoreError(`key store lock ${lock} is held by another process; try again`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
  try {
    return fn();
  } finally {
    try { unlinkSync(lock); } catch { /* removed as stale by someone else */ }
  }
}

/**
 * Opens (or starts) the key store at `$home/keys.json`. Throws KeyStoreError when the file is
 * corrupt.
 */
export function createKeyStore(home: string, options: { now?: () => number } = {}): KeyStore {
  const path = join(home, 'keys.json');
  const now = options.now ?? Date.now;
  let records: KeyRecord[] = [];
  // Hash (hex) -> record and the hash's bytes, so a lookup decodes nothing per request.
  let byHash = new Map<string, { record: KeyRecord; hash: Buffer }>();
  let signature = '';
  let timer: NodeJS.Timeout | undefined;
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
      const key = generateKey();
      const t = now();
      const record: KeyRecord = {
        id: generateId(),
        name: options.name ?? 'key',
        hash: hashKey(key),
        tier: options.tier ?? 'basic',
        limits: { ...(options.limits ?? {}) },
        models: options.models ?? null,
        admin: options.admin ?? false,
        created_at: new Date(t).toISOString(),
        expires_at: options.expiresInMs === undefined ? null : new Date(t + options.expiresInMs).toISOString(),
        revoked_at: null,
      };
      withLock(path, () => {
        signature = '';
        load();
        save([...records, record]);
      });
      return { key, record };
    },
    revoke(idOrName) {
      let revoked: KeyRecord | undefined;
      withLock(path, () => {
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
      timer = setInterval(check, 500);
      timer.unref();
      try {
        // Temp and lock files come and go beside it; only the store's own name matters (some
        // platforms give no name: then any change is checked, which costs one stat). A burst of
        // events (a hand edit truncates, then writes) is read once, when it has settled.
        const name = basename(path);
        let pending: NodeJS.Timeout | undefined;
        watcher = fsWatch(dirname(path), { persistent: false }, (_event, changed) => {
          if ((changed !== null && changed !== name) || pending !== undefined) return;
          pending = setTimeout(() => {
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
      if (timer !== undefined) clearInterval(timer);
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
