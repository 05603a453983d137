/**
 * The Responses API's state on the shared-state server (llmux.md section 6, responses.md "State"):
 * stored responses, so `previous_response_id` and `item_reference` work whichever process answers,
 * and the reasoning-seal secret, so every process opens what any of them sealed.
 *
 * - A response is one string key, `resp:{KEY}:ID` (the record as JSON, the owning key in the name:
 *   to any other key it does not exist), with the store's TTL. Each item id it holds is indexed in
 *   `respitem:{KEY}:ITEM`, a sorted set of the responses holding it in the order they were stored
 *   (a counter on the server, `respseq`), with the same TTL, so `findItem` finds the latest still there.
 * - The total is bounded, with each key its share, as the in-memory store bounds it: one record
 *   larger than `maxBytes` is refused; beyond `maxBytes` in all, room is made in the key holding
 *   the most (its oldest go first), so a key that floods the store evicts its own responses and
 *   never those of a key holding less (issue 25). What is counted: per key `respidx:{KEY}` (its
 *   response ids scored by when they expire) and `respsize:{KEY}` (their bytes), and for all keys
 *   `respkeys` (each key's bytes, to find the largest) and `resptotal`. Responses that expired are
 *   taken out of the count when their key is next written or looked at for room. (Unlike the
 *   in-memory store, reading a response does not make it younger: that would be a write per read.)
 * - The seal secret is `seal-secret`, set once with SET NX by whichever process needs it first;
 *   every process then reads the same one. It is never written anywhere else, nor logged.
 *
 * Every call needs the server; without it the call rejects (the pipeline answers 503, or keeps
 * going without storing: see where it is wired).
 */
import { randomBytes } from 'node:crypto';
import { createSealer, SEAL_SECRET_BYTES } from '../responses/seal.ts';
import type { Sealer } from '../responses/seal.ts';
import { DEFAULT_STORE_MAX_BYTES, DEFAULT_STORE_TTL_MS } from '../responses/store.ts';
import type { ResponseStore, StoredItem, StoredResponse } from '../responses/store.ts';
import { stateUnavailable } from '../common/errors.ts';
import type { RespClient } from './resp.ts';
import { orUnavailable } from './health.ts';

export interface SharedResponseStoreOptions {
  client: RespClient;
  /** Prefix of every key this store writes; default `llmux:`. */
  prefix?: string;
  /** How long a response is kept after it was stored; default 86400 s. */
  ttlMs?: number;
  /** The largest record kept, in bytes of JSON; default 64 MiB. */
  maxBytes?: number;
}

/**
 * What the store's scripts share: the server's time, and the byte count of responses (see the
 * header). Keys of other llmux keys are named from the prefix (one server, not a cluster).
 */
const COUNTING = `
local P = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function idx(k) return P .. 'respidx:{' .. k .. '}' end
local function sizes(k) return P .. 'respsize:{' .. k .. '}' end
-- Takes response rid of key k out of the count (not the response itself).
local function uncount(k, rid)
  local b = tonumber(redis.call('HGET', sizes(k), rid))
  redis.call('ZREM', idx(k), rid)
  if not b then return end
  redis.call('HDEL', sizes(k), rid)
  redis.call('DECRBY', P .. 'resptotal', b)
  if tonumber(redis.call('ZINCRBY', P .. 'respkeys', -b, k)) <= 0 then redis.call('ZREM', P .. 'respkeys', k) end
end
-- Takes key k's expired responses out of the count; how many there were.
local function purge(k)
  local gone = redis.call('ZRANGEBYSCORE', idx(k), '-inf', now)
  for _, rid in ipairs(gone) do uncount(k, rid) end
  return #gone
end
`;

/**
 * KEYS: the response, the counter, then its items' indexes. ARGV: prefix, JSON, TTL ms, response
 * id, key id, bytes, the most bytes in all. Makes room (the largest holder's oldest first), then
 * stores and counts the response.
 */
const PUT_SCRIPT = `${COUNTING}
local json, ttl, id, key, bytes, max = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
uncount(key, id)
purge(key)
for _ = 1, 100000 do
  if (tonumber(redis.call('GET', P .. 'resptotal')) or 0) + bytes <= max then break end
  local top = redis.call('ZREVRANGE', P .. 'respkeys', 0, 0, 'WITHSCORES')
  if #top == 0 then break end
  local k = top[1]
  if purge(k) == 0 then
    local oldest = redis.call('ZRANGE', idx(k), 0, 0)
    if #oldest == 0 then
      -- Its index expired with all its responses: nothing of it is left to count.
      redis.call('DECRBY', P .. 'resptotal', tonumber(top[2]))
      redis.call('ZREM', P .. 'respkeys', k)
      redis.call('DEL', sizes(k))
    else
      uncount(k, oldest[1])
      redis.call('DEL', P .. 'resp:{' .. k .. '}:' .. oldest[1])
    end
  end
end
local seq = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], json, 'PX', ttl)
for i = 3, #KEYS do
  redis.call('ZADD', KEYS[i], seq, id)
  redis.call('PEXPIRE', KEYS[i], ttl)
end
redis.call('ZADD', idx(key), now + ttl, id)
redis.call('HSET', sizes(key), id, bytes)
redis.call('PEXPIRE', idx(key), ttl)
redis.call('PEXPIRE', sizes(key), ttl)
redis.call('ZINCRBY', P .. 'respkeys', bytes, key)
redis.call('INCRBY', P .. 'resptotal', bytes)
return seq
`;

/** KEYS: the response. ARGV: prefix, key id, response id. 1 when it was there (and is gone, uncounted). */
const DELETE_SCRIPT = `${COUNTING}
local deleted = redis.call('DEL', KEYS[1])
uncount(ARGV[2], ARGV[3])
return deleted
`;

/** Responses held per item id that `findItem` looks through, newest first. */
const ITEM_HOLDERS_READ = 10;

function itemIdsOf(record: StoredResponse): string[] {
  const ids = [...record.input, ...record.response.output]
    .map((item) => (item as { id?: unknown }).id)
    .filter((id): id is string => typeof id === 'string' && id !== '');
  return [...new Set(ids)];
}

function parseRecord(text: unknown): StoredResponse | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text) as StoredResponse;
  } catch {
    return undefined;
  }
}

/** Stored responses on the state server, as the in-memory store keeps them but for the total size. */
export function createSharedResponseStore(options: SharedResponseStoreOptions): ResponseStore {
  const { client } = options;
  const prefix = options.prefix ?? 'llmux:';
  const ttlMs = options.ttlMs ?? DEFAULT_STORE_TTL_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_STORE_MAX_BYTES;
  const putScript = client.script(PUT_SCRIPT);
  const deleteScript = client.script(DELETE_SCRIPT);
  const responseKey = (keyId: string, id: string): string => `${prefix}resp:{${keyId}}:${id}`;
  const itemKey = (keyId: string, itemId: string): string => `${prefix}respitem:{${keyId}}:${itemId}`;


  return {
    async put(record) {
      const json = JSON.stringify(record);
      const bytes = Buffer.byteLength(json);
      if (bytes > maxBytes) return false;
      const keys = [responseKey(record.keyId, record.id), `${prefix}respseq`, ...itemIdsOf(record).map((itemId) => itemKey(record.keyId, itemId))];
      // A large record takes longer to send than a command; it is stored after the answer anyway.
      await orUnavailable('Storing a response', () => putScript.run(keys, [prefix, json, ttlMs, record.id, record.keyId, bytes, maxBytes], { timeoutMs: Math.max(1000, Math.ceil(json.length / 10_000)) }));
      return true;
    },

    async get(keyId, id) {
      return parseRecord(await orUnavailable('Reading a stored response', () => client.command(['GET', responseKey(keyId, id)])));
    },

    async delete(keyId, id) {
      return (await orUnavailable('Deleting a stored response', () => deleteScript.run([responseKey(keyId, id)], [prefix, keyId, id]))) === 1;
    },

    async findItem(keyId, itemId) {
      const holders = await orUnavailable('Reading a stored item', () => client.command(['ZREVRANGE', itemKey(keyId, itemId), 0, ITEM_HOLDERS_READ - 1]));
      if (!Array.isArray(holders) || holders.length === 0) return undefined;
      const records = await orUnavailable('Reading a stored item', () => client.command(['MGET', ...holders.map((id) => responseKey(keyId, String(id)))]));
      if (!Array.isArray(records)) return undefined;
      for (const text of records) {
        const record = parseRecord(text);
        if (record === undefined) continue;
        const found: StoredItem | undefined = [...record.response.output, ...record.input].find((item) => (item as { id?: unknown }).id === itemId);
        if (found !== undefined) return found;
      }
      return undefined;
    },
  };
}

/**
 * The seal secret every process shares: made by the first to ask (SET NX), read by all. Rejects
 * when the server cannot be reached, or holds something that is not a 32-byte secret.
 */
export async function sharedSealSecret(client: RespClient, prefix = 'llmux:'): Promise<Buffer> {
  const key = `${prefix}seal-secret`;
  const fresh = randomBytes(SEAL_SECRET_BYTES).toString('base64url');
  let current: unknown;
  try {
    [, current] = await client.batch([['SET', key, fresh, 'NX'], ['GET', key]]);
  } catch (error) {
    throw Object.assign(stateUnavailable('Sealed reasoning'), { cause: error });
  }
  const secret = typeof current === 'string' ? Buffer.from(current, 'base64url') : Buffer.alloc(0);
  if (secret.length !== SEAL_SECRET_BYTES) {
    throw new Error(`the state server's ${key} does not hold a ${SEAL_SECRET_BYTES}-byte seal secret; delete it to make a new one (reasoning sealed under the old one can no longer be replayed)`);
  }
  return secret;
}

/** Stored responses and the sealer, shared: the shape the gateway holds the Responses API's state in. */
export interface SharedResponsesState {
  readonly store: ResponseStore;
  /** The sealer under the shared secret; made once, retried after a failure. */
  sealer(): Promise<Sealer>;
  /** The sealer once the shared secret has been read, else undefined. */
  sealerNow(): Sealer | undefined;
}

/** The shared store and a sealer under the shared secret, made on first use. */
export function createSharedResponsesState(options: SharedResponseStoreOptions): SharedResponsesState {
  const store = createSharedResponseStore(options);
  let sealer: Promise<Sealer> | undefined;
  // The same sealer as `sealer`'s promise gives, once it has: the secret never changes after.
  let made: Sealer | undefined;
  return {
    store,
    sealer() {
      if (sealer === undefined) {
        sealer = sharedSealSecret(options.client, options.prefix).then(createSealer);
        sealer.then((value) => {
          made = value;
        }, () => {
          sealer = undefined;
        });
      }
      return sealer;
    },
    sealerNow: () => made,
  };
}
