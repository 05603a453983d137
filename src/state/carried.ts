/**
 * Chat clients' carried state on the shared-state server (llmux.md sections 6 and 11): the store of
 * src/carry/store.ts, so a tool call answered by one process brings its state back whichever
 * process takes the next turn.
 *
 * - An entry is one string key, `carry:{KEY}:CALL`, with the store's TTL (one hour).
 * - Each key's entries are counted in `carryidx:{KEY}` (call ids scored by when they expire, a
 *   millisecond apart at least, so the oldest is always the first) and `carrysize:{KEY}` (their
 *   bytes, counted as the memory store counts them); a put drops the key's expired entries, then
 *   its oldest while it holds more than `maxEntriesPerKey` entries or `maxBytesPerKey` bytes, in
 *   one script. Values over `maxValueBytes` are not kept. (The memory store's bound on all keys together is the state
 *   server's `maxmemory` here: each key's share is bounded, and keys are the operator's.)
 * - A read is one MGET of the calls asked for.
 *
 * A server that cannot be reached rejects: the dialect then goes on without the state (the
 * conversation's next turn is filled or stripped as for another family), never fails the request.
 */
import { ENTRY_OVERHEAD_BYTES, carriedLimits } from '../carry/store.ts';
import type { CarriedStore, CarriedStoreLimits } from '../carry/store.ts';
import type { RespClient } from './resp.ts';
import { orUnavailable } from './health.ts';

export interface SharedCarriedStoreOptions extends CarriedStoreLimits {
  client: RespClient;
  /** Prefix of every key this store writes; default `llmux:`. */
  prefix?: string;
}

/**
 * KEYS: the entry, the key's index, the key's sizes. ARGV: call id, value, bytes, TTL ms, most
 * entries, most bytes, the entry key's prefix (up to the call id).
 */
const PUT_SCRIPT = `
local entry, idx, sizes = KEYS[1], KEYS[2], KEYS[3]
local id, value, bytes, ttl, maxEntries, maxBytes, base = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function drop(old)
  redis.call('DEL', base .. old)
  redis.call('ZREM', idx, old)
  redis.call('HDEL', sizes, old)
end
for _, old in ipairs(redis.call('ZRANGEBYSCORE', idx, '-inf', now)) do drop(old) end
drop(id)
local held = 0
for _, size in ipairs(redis.call('HVALS', sizes)) do held = held + tonumber(size) end
while redis.call('ZCARD', idx) >= maxEntries or held + bytes > maxBytes do
  local oldest = redis.call('ZRANGE', idx, 0, 0)
  if #oldest == 0 then break end
  held = held - (tonumber(redis.call('HGET', sizes, oldest[1])) or 0)
  drop(oldest[1])
end
-- Entries put in the same millisecond stay in the order they were put (ties would sort by call id).
local newest = redis.call('ZRANGE', idx, -1, -1, 'WITHSCORES')
local score = now + ttl
if #newest == 2 and tonumber(newest[2]) >= score then score = tonumber(newest[2]) + 1 end
redis.call('SET', entry, value, 'PX', ttl)
redis.call('ZADD', idx, score, id)
redis.call('HSET', sizes, id, bytes)
redis.call('PEXPIRE', idx, ttl)
redis.call('PEXPIRE', sizes, ttl)
return 1
`;

/** The store on the state server. */
export function createSharedCarriedStore(options: SharedCarriedStoreOptions): CarriedStore {
  const { client } = options;
  const prefix = options.prefix ?? 'llmux:';
  const limits = carriedLimits(options);
  const putScript = client.script(PUT_SCRIPT);
  const base = (keyId: string): string => `${prefix}carry:{${keyId}}:`;


  return {
    async get(keyId, callIds) {
      const found = new Map<string, string>();
      if (callIds.length === 0) return found;
      const values = await orUnavailable('Reading carried reasoning state', () => client.command(['MGET', ...callIds.map((id) => base(keyId) + id)]));
      if (!Array.isArray(values)) return found;
      values.forEach((value, index) => {
        if (typeof value === 'string') found.set(callIds[index] as string, value);
      });
      return found;
    },
    async put(keyId, callId, value) {
      const bytes = Buffer.byteLength(value) + Buffer.byteLength(callId) + ENTRY_OVERHEAD_BYTES;
      if (Buffer.byteLength(value) > limits.maxValueBytes || bytes > limits.maxBytesPerKey) return false;
      const keys = [base(keyId) + callId, `${prefix}carryidx:{${keyId}}`, `${prefix}carrysize:{${keyId}}`];
      await orUnavailable('Keeping carried reasoning state', () => putScript.run(keys, [callId, value, bytes, limits.ttlMs, limits.maxEntriesPerKey, limits.maxBytesPerKey, base(keyId)], { timeoutMs: Math.max(1000, Math.ceil(value.length / 10_000)) }));
      return true;
    },
  };
}
