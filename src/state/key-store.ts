/**
 * The key store on the shared-state server (llmux.md section 6): the same records as
 * `$LLMUX_HOME/keys.json` (only a SHA-256 of each key, see src/auth/key-store.ts), in one hash,
 * `PREFIX keys` (field: key id, value: the record as JSON).
 *
 * Authentication never waits on the server: every process keeps a replica of the records and
 * answers `findBySecret`, `list` and `get` from it. A create or revoke bumps `PREFIX keys:version`
 * and publishes on `PREFIX keys:changed` in the same script; every process re-reads the hash when
 * the message comes, and also when a poll (every `pollMs`, default 500) sees another version, which
 * covers messages lost while its pub/sub connection was down. So a change is honoured everywhere
 * within a second. While the server is down the replica is the last copy, and it serves on.
 *
 * Creating and revoking need the server and answer once it holds the change; without it they fail
 * with 503 `state_unavailable`. Keys are never deleted, only revoked: a server found with no keys
 * and no version at all has lost its data (restarted without persistence, flushed), and each
 * process writes its copy back rather than locking every client out. Revocation is a compare-and-set on the record's JSON, retried when
 * another process changed the record in between.
 */
import type { KeyRecord, KeyStore, NewKey, NewKeyResult } from '../auth/key-store.ts';
import { createSecretIndex, findKey, keyRecordProblem, newKeyRecord, revokedRecord } from '../auth/key-store.ts';
import { stateUnavailable } from '../common/errors.ts';
import type { Reply, RespClient, Subscription } from './resp.ts';

export interface SharedKeyStoreOptions {
  client: RespClient;
  /** Shown as the store's `path`: the server without its password (`StateTarget.displayUrl`). */
  displayUrl: string;
  /** Prefix of every key this store writes; default `llmux:`. */
  prefix?: string;
  now?: () => number;
  /** How often the version is polled, in case a change message was lost; default 500. */
  pollMs?: number;
  /** Deadline of a create or revoke (they wait for the server); default: the client's. */
  writeTimeoutMs?: number;
}

export interface SharedKeyStore extends KeyStore {
  create(options: NewKey): Promise<NewKeyResult>;
  createFirst(options: NewKey): Promise<NewKeyResult | undefined>;
  revoke(idOrName: string): Promise<KeyRecord | undefined>;
  /** Settles once the first read of the keys has succeeded or failed (then the replica starts empty). */
  readonly ready: Promise<void>;
  /** Re-reads every record now. Rejects when the server cannot be read (the replica stays as it was). */
  refresh(): Promise<void>;
  /** Adds records made elsewhere (`llmux state migrate`); a key whose id is there already is left as it is. */
  importRecords(records: readonly KeyRecord[]): Promise<{ added: number; skipped: number }>;
}

/** Writes a record and announces it: KEYS hash, version, channel; ARGV id, JSON. */
const CREATE_SCRIPT = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local version = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', KEYS[3], version)
return version
`;

/** The same, only into an empty store: returns 0 when it holds any key. */
const CREATE_FIRST_SCRIPT = `
if redis.call('HLEN', KEYS[1]) > 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local version = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', KEYS[3], version)
return version
`;

/** Replaces a record if it is still what the caller read: ARGV id, old JSON, new JSON; 0 on a conflict. */
const REPLACE_SCRIPT = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
local version = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', KEYS[3], version)
return version
`;

/** Adds records whose ids are new: ARGV id, JSON, id, JSON, …; returns how many were added. */
const IMPORT_SCRIPT = `
local added = 0
for i = 1, #ARGV, 2 do added = added + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
if added > 0 then
  local version = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[3], version)
end
return added
`;

/** Tries of a revocation racing other changes to the same record. */
const MAX_REPLACE_TRIES = 5;

/** The key store on the state server; reads its first copy at once (`ready`), follows changes after `watch`. */
export function createSharedKeyStore(options: SharedKeyStoreOptions): SharedKeyStore {
  const { client } = options;
  const prefix = options.prefix ?? 'llmux:';
  const now = options.now ?? Date.now;
  const pollMs = options.pollMs ?? 500;
  const writeOptions = options.writeTimeoutMs === undefined ? undefined : { timeoutMs: options.writeTimeoutMs };
  const hashKey = `${prefix}keys`;
  const versionKey = `${prefix}keys:version`;
  const channel = `${prefix}keys:changed`;
  const scriptKeys = [hashKey, versionKey, channel];
  const createScript = client.script(CREATE_SCRIPT);
  const createFirstScript = client.script(CREATE_FIRST_SCRIPT);
  const replaceScript = client.script(REPLACE_SCRIPT);
  const importScript = client.script(IMPORT_SCRIPT);

  let records: KeyRecord[] = [];
  /** The JSON each record was read as, for revocation's compare-and-set. */
  let stored = new Map<string, string>();
  let bySecret = createSecretIndex([]);
  let version: string | null | undefined;
  let timer: NodeJS.Timeout | undefined;
  let subscription: Subscription | undefined;
  let reading: Promise<void> | undefined;
  let rereadAfter = false;
  let onWarning: ((message: string) => void) | undefined;
  let lastWarning = '';

  function warn(message: string): void {
    // Said once, to whoever watches; a read before `watch` says it again after.
    if (onWarning === undefined || message === lastWarning) return;
    lastWarning = message;
    onWarning?.(message);
  }

  function take(fields: Reply, nextVersion: string | null): void {
    const next: KeyRecord[] = [];
    const json = new Map<string, string>();
    if (Array.isArray(fields)) {
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const id = fields[i];
        const text = fields[i + 1];
        if (typeof id !== 'string' || typeof text !== 'string') continue;
        let record: unknown;
        try {
          record = JSON.parse(text);
        } catch {
          record = undefined;
        }
        const problem = keyRecordProblem(record);
        if (problem !== undefined) {
          // One bad record must not lock every other key out: it is skipped, and said once.
          warn(`shared key store: the record of key ${id.slice(0, 40)} is not a valid key (${problem.replace(/^\./, '')}); it is ignored until fixed`);
          continue;
        }
        next.push(record as KeyRecord);
        json.set((record as KeyRecord).id, text);
      }
    }
    next.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
    records = next;
    stored = json;
    bySecret = createSecretIndex(next);
    version = nextVersion;
  }

  async function read(): Promise<void> {
    const [nextVersion, fields] = await client.batch([['GET', versionKey], ['HGETALL', hashKey]]);
    const serverVersion = typeof nextVersion === 'string' ? nextVersion : null;
    const empty = !Array.isArray(fields) || fields.length === 0;
    if (serverVersion === null && empty && typeof version === 'string' && records.length > 0) {
      // The server holds no keys and never counted a change: it lost its data (a restart without
      // persistence, a flush). Keys are never deleted, only revoked, so this process's copy is
      // written back (a key another process wrote back first is left as it is).
      await restore();
      return;
    }
    take(fields ?? null, serverVersion);
  }

  async function restore(): Promise<void> {
    const copy = records.slice();
    const reply = await importScript.run(scriptKeys, copy.flatMap((record) => [record.id, stored.get(record.id) ?? JSON.stringify(record)]), writeOptions);
    warn(`shared key store: state server ${options.displayUrl} had lost every key; ${typeof reply === 'number' ? reply : 0} of this process's ${copy.length} were written back`);
    const [nextVersion, fields] = await client.batch([['GET', versionKey], ['HGETALL', hashKey]]);
    take(fields ?? null, typeof nextVersion === 'string' ? nextVersion : null);
  }

  /** One read at a time; a change announced during a read is read again after it. */
  function refresh(): Promise<void> {
    if (reading !== undefined) {
      rereadAfter = true;
      return reading;
    }
    reading = read().finally(() => {
      reading = undefined;
      if (rereadAfter) {
        rereadAfter = false;
        void refresh().catch(() => {});
      }
    });
    return reading;
  }

  function refreshQuietly(): void {
    refresh().catch(() => {
      // The health logs the server going away; the replica serves on meanwhile.
    });
  }

  async function poll(): Promise<void> {
    const current = await client.command(['GET', versionKey]);
    if ((typeof current === 'string' ? current : null) !== version) await refresh();
  }

  const ready = refresh().catch(() => {});

  async function write(what: string, run: () => Promise<Reply>): Promise<Reply> {
    try {
      return await run();
    } catch (error) {
      throw Object.assign(stateUnavailable(what), { cause: error });
    }
  }

  function remember(record: KeyRecord): void {
    // Seen at once by this process; the others hear of it from the server.
    const json = JSON.stringify(record);
    records = [...records.filter((r) => r.id !== record.id), record];
    stored = new Map(stored).set(record.id, json);
    bySecret = createSecretIndex(records);
  }

  return {
    path: options.displayUrl,
    ready,
    refresh,
    findBySecret: (secret) => bySecret(secret),
    list: () => records.slice(),
    get: (idOrName) => findKey(records, idOrName),

    async create(newKey) {
      const made = newKeyRecord(newKey, now());
      await write('Creating a key', () => createScript.run(scriptKeys, [made.record.id, JSON.stringify(made.record)], writeOptions));
      remember(made.record);
      return made;
    },

    async createFirst(newKey) {
      const made = newKeyRecord(newKey, now());
      const reply = await write('Creating the first key', () => createFirstScript.run(scriptKeys, [made.record.id, JSON.stringify(made.record)], writeOptions));
      if (reply === 0) {
        refreshQuietly();
        return undefined;
      }
      remember(made.record);
      return made;
    },

    async revoke(idOrName) {
      for (let tries = 0; tries < MAX_REPLACE_TRIES; tries++) {
        await write('Revoking a key', async () => {
          await refresh();
          return null;
        });
        const target = findKey(records, idOrName);
        if (target === undefined) return undefined;
        const before = stored.get(target.id) ?? JSON.stringify(target);
        const after = revokedRecord(target, now());
        const reply = await write('Revoking a key', () => replaceScript.run(scriptKeys, [target.id, before, JSON.stringify(after)], writeOptions));
        if (reply !== 0) {
          remember(after);
          return after;
        }
      }
      throw stateUnavailable('Revoking a key (it kept changing under this revocation)');
    },

    async importRecords(imported) {
      if (imported.length === 0) return { added: 0, skipped: 0 };
      const args = imported.flatMap((record) => [record.id, JSON.stringify(record)]);
      const added = await write('Importing keys', () => importScript.run(scriptKeys, args, writeOptions));
      const count = typeof added === 'number' ? added : 0;
      refreshQuietly();
      return { added: count, skipped: imported.length - count };
    },

    reload: refreshQuietly,

    watch(onError) {
      if (timer !== undefined) return;
      onWarning = onError;
      subscription = client.subscribe(channel, refreshQuietly, { onSubscribed: refreshQuietly });
      timer = setInterval(() => {
        poll().catch(() => {});
      }, pollMs);
      timer.unref();
    },

    close() {
      clearInterval(timer);
      timer = undefined;
      subscription?.unsubscribe();
      subscription = undefined;
    },
  };
}
