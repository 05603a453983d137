/**
 * Device-flow grants on the shared-state server (llmux.md section 6), so a device may start on one
 * process, be approved on a second and collect its key on a third. Same rules as
 * src/auth/device-flow.ts (read its header): the cap on live grants, expiry and the grace after it,
 * slow_down, one key per grant. Each call is one script, so two processes can never both approve
 * a grant, or both hand out its key.
 *
 * On the server, under the prefix:
 * - `dev:g:HASH`: a hash per grant, HASH the SHA-256 of its device code (the code itself is never
 *   stored), with its view fields, the polling pace and the approval; it expires one `expiresInMs`
 *   after the grant does, as the in-memory store forgets it.
 * - `dev:u:CODE`: the user code's grant HASH, with the same life.
 * - `dev:live` and `dev:party:PARTY`: sorted sets of the live grants (pending, or approved and not
 *   redeemed), scored by expiry, for the cap and the per-address count. Denied and redeemed grants
 *   leave them at once, expired ones when next counted.
 *
 * Times are the caller's clock (grants live for minutes; a second of skew between machines does
 * not matter). Scripts name keys built from the prefix, so this needs one server, not a cluster.
 * Without the server every call fails with 503 `state_unavailable`.
 */
import { randomBytes } from 'node:crypto';
import {
  DEFAULT_EXPIRES_IN_MS, DEFAULT_INTERVAL_SECONDS, DEFAULT_MAX_PENDING, POLL_TOLERANCE_MS, SLOW_DOWN_STEP_SECONDS,
  hashDeviceCode, newUserCode, normalizeUserCode,
} from '../auth/device-flow.ts';
import type { Approval, DecideResult, DeviceFlow, DeviceFlowOptions, GrantStatus, GrantView, PollResult, StartedGrant } from '../auth/device-flow.ts';
import { isTierName } from '../config/types.ts';
import { stateUnavailable } from '../common/errors.ts';
import type { Reply, RespArg, RespClient } from './resp.ts';

export interface SharedDeviceFlowOptions extends DeviceFlowOptions {
  client: RespClient;
  /** Prefix of every key this store writes; default `llmux:`. */
  prefix?: string;
}

/** The shared store: every answer comes from the server. */
export interface SharedDeviceFlow extends DeviceFlow {
  start(clientName: string, party?: string): Promise<StartedGrant | undefined>;
  poll(deviceCode: string): Promise<PollResult>;
  redeem(deviceCode: string): Promise<boolean>;
  find(userCode: string): Promise<GrantView | undefined>;
  approve(userCode: string, approval: Approval): Promise<DecideResult>;
  deny(userCode: string): Promise<DecideResult>;
  pending(): Promise<GrantView[]>;
  liveCount(party?: string): Promise<number>;
}

/** Key names, from the prefix (ARGV[1] of every script). */
const KEYS_LUA = `
local P = ARGV[1]
local function grant_key(hash) return P .. 'dev:g:' .. hash end
local function user_key(code) return P .. 'dev:u:' .. code end
local function party_key(party) return P .. 'dev:party:' .. party end
local LIVE = P .. 'dev:live'
`;

/**
 * ARGV: prefix, now, maxPending, lifetime ms (expiry + grace), hash, user code, then the grant's
 * fields as name, value pairs (party among them). 0: the cap is reached; -1: the user code is taken.
 */
const START_SCRIPT = `${KEYS_LUA}
local now, max_pending, lifetime = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local hash, code = ARGV[5], ARGV[6]
redis.call('ZREMRANGEBYSCORE', LIVE, '-inf', now)
if redis.call('ZCARD', LIVE) >= max_pending then return 0 end
if redis.call('EXISTS', user_key(code)) == 1 then return -1 end
local fields, party, expires_at = {}, '', 0
for i = 7, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
  if ARGV[i] == 'party' then party = ARGV[i + 1] end
  if ARGV[i] == 'expiresAt' then expires_at = tonumber(ARGV[i + 1]) end
end
-- The order grants were started in, for listing those started in the same millisecond.
fields[#fields + 1] = 'seq'
fields[#fields + 1] = redis.call('INCR', P .. 'dev:seq')
redis.call('HSET', grant_key(hash), unpack(fields))
redis.call('PEXPIRE', grant_key(hash), lifetime)
redis.call('SET', user_key(code), hash, 'PX', lifetime)
redis.call('ZADD', LIVE, expires_at, hash)
redis.call('ZADD', party_key(party), expires_at, hash)
redis.call('PEXPIRE', party_key(party), lifetime)
return 1
`;

/**
 * ARGV: prefix, now, grace ms, tolerance ms, slow_down step s, hash. Returns `{outcome, interval}`,
 * or `{'approved', field, value, …}` with the whole grant.
 */
const POLL_SCRIPT = `${KEYS_LUA}
local now, grace, tolerance, step, hash = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local key = grant_key(hash)
local g = redis.call('HMGET', key, 'status', 'expiresAt', 'interval', 'lastPollAt')
if not g[1] then return {'invalid_grant'} end
local expires_at = tonumber(g[2])
if now >= expires_at + grace then return {'invalid_grant'} end
if g[1] == 'denied' then return {'access_denied'} end
if now >= expires_at then return {'expired_token'} end
if g[1] == 'approved' then
  local all = redis.call('HGETALL', key)
  table.insert(all, 1, 'approved')
  return all
end
local interval, last = tonumber(g[3]), tonumber(g[4])
redis.call('HSET', key, 'lastPollAt', now)
if last and now - last < interval * 1000 - tolerance then
  interval = interval + step
  redis.call('HSET', key, 'interval', interval)
  return {'slow_down', interval}
end
return {'authorization_pending', interval}
`;

/** ARGV: prefix, hash. 1 for the one caller that claims the approved grant, else 0. */
const REDEEM_SCRIPT = `${KEYS_LUA}
local hash = ARGV[2]
local key = grant_key(hash)
local g = redis.call('HMGET', key, 'status', 'userCode', 'party')
if g[1] ~= 'approved' then return 0 end
redis.call('DEL', key)
if redis.call('GET', user_key(g[2])) == hash then redis.call('DEL', user_key(g[2])) end
redis.call('ZREM', LIVE, hash)
redis.call('ZREM', party_key(g[3]), hash)
return 1
`;

/** ARGV: prefix, user code. The grant's fields, or an empty array. */
const FIND_SCRIPT = `${KEYS_LUA}
local hash = redis.call('GET', user_key(ARGV[2]))
if not hash then return {} end
return redis.call('HGETALL', grant_key(hash))
`;

/**
 * ARGV: prefix, now, user code, action (approve|deny), then for approve: tier, name ('' for none),
 * decider's key id. Returns `{outcome, …}`: `{'ok', field, value, …}`, `{'already_decided', status}`,
 * `{'not_found'}`, `{'expired'}`.
 */
const DECIDE_SCRIPT = `${KEYS_LUA}
local now, code, action = tonumber(ARGV[2]), ARGV[3], ARGV[4]
local hash = redis.call('GET', user_key(code))
if not hash then return {'not_found'} end
local key = grant_key(hash)
local g = redis.call('HMGET', key, 'status', 'expiresAt', 'party')
if not g[1] then return {'not_found'} end
if now >= tonumber(g[2]) then return {'expired'} end
if g[1] ~= 'pending' then return {'already_decided', g[1]} end
if action == 'approve' then
  redis.call('HSET', key, 'status', 'approved', 'tier', ARGV[5], 'name', ARGV[6], 'byKeyId', ARGV[7])
else
  redis.call('HSET', key, 'status', 'denied')
  redis.call('ZREM', LIVE, hash)
  redis.call('ZREM', party_key(g[3]), hash)
end
local all = redis.call('HGETALL', key)
table.insert(all, 1, 'ok')
return all
`;

/** ARGV: prefix, now. Every live grant's fields, one array each. */
const LIVE_SCRIPT = `${KEYS_LUA}
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', LIVE, '-inf', now)
local out = {}
for _, hash in ipairs(redis.call('ZRANGE', LIVE, 0, -1)) do
  local all = redis.call('HGETALL', grant_key(hash))
  if #all > 0 then out[#out + 1] = all end
end
return out
`;

/** ARGV: prefix, now, party ('' for all). Live grants, of the party or in all. */
const COUNT_SCRIPT = `${KEYS_LUA}
local now, party = tonumber(ARGV[2]), ARGV[3]
local key = LIVE
if party ~= '' then key = party_key(party) end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
return redis.call('ZCARD', key)
`;

/** Tries at a user code nobody holds (20^8 codes: a clash is rare). */
const MAX_CODE_TRIES = 10;

function fieldsOf(reply: Reply, from = 0): Map<string, string> {
  const fields = new Map<string, string>();
  if (!Array.isArray(reply)) return fields;
  for (let i = from; i + 1 < reply.length; i += 2) {
    const name = reply[i];
    const value = reply[i + 1];
    if (typeof name === 'string' && typeof value === 'string') fields.set(name, value);
  }
  return fields;
}

function viewOf(fields: Map<string, string>): GrantView | undefined {
  const status = fields.get('status');
  if (status !== 'pending' && status !== 'approved' && status !== 'denied') return undefined;
  return {
    id: fields.get('id') ?? '',
    userCode: fields.get('userCode') ?? '',
    clientName: fields.get('clientName') ?? '',
    createdAt: Number(fields.get('createdAt')),
    expiresAt: Number(fields.get('expiresAt')),
    status: status as GrantStatus,
  };
}

/** A grant store on the state server, with the in-memory store's settings and rules (see the header). */
export function createSharedDeviceFlow(options: SharedDeviceFlowOptions): SharedDeviceFlow {
  const { client } = options;
  const prefix = options.prefix ?? 'llmux:';
  const now = options.now ?? Date.now;
  const maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
  const expiresInMs = options.expiresInMs ?? DEFAULT_EXPIRES_IN_MS;
  const intervalSeconds = options.intervalSeconds ?? DEFAULT_INTERVAL_SECONDS;
  const scripts = {
    start: client.script(START_SCRIPT),
    poll: client.script(POLL_SCRIPT),
    redeem: client.script(REDEEM_SCRIPT),
    find: client.script(FIND_SCRIPT),
    decide: client.script(DECIDE_SCRIPT),
    live: client.script(LIVE_SCRIPT),
    count: client.script(COUNT_SCRIPT),
  };

  async function run(script: keyof typeof scripts, args: RespArg[]): Promise<Reply> {
    try {
      return await scripts[script].run([], [prefix, ...args]);
    } catch (error) {
      throw Object.assign(stateUnavailable('The device flow'), { cause: error });
    }
  }

  async function decide(userCode: string, action: 'approve' | 'deny', approval?: Approval): Promise<DecideResult> {
    const code = normalizeUserCode(userCode);
    if (code === undefined) return { outcome: 'not_found' };
    const args: RespArg[] = [now(), code, action];
    if (approval !== undefined) args.push(approval.tier, approval.name ?? '', approval.byKeyId);
    const reply = await run('decide', args);
    const outcome = Array.isArray(reply) ? reply[0] : undefined;
    if (outcome === 'ok') {
      const grant = viewOf(fieldsOf(reply, 1));
      if (grant !== undefined) return { outcome: 'ok', grant };
    }
    if (outcome === 'already_decided' && Array.isArray(reply)) {
      const status = reply[1];
      if (status === 'pending' || status === 'approved' || status === 'denied') return { outcome: 'already_decided', status };
    }
    if (outcome === 'expired') return { outcome: 'expired' };
    return { outcome: 'not_found' };
  }

  return {
    intervalSeconds,
    expiresInMs,
    maxPending,

    async start(clientName, party = '') {
      const t = now();
      const deviceCode = randomBytes(32).toString('base64url');
      const hash = hashDeviceCode(deviceCode);
      const id = `dev_${randomBytes(6).toString('hex')}`;
      for (let tries = 0; tries < MAX_CODE_TRIES; tries++) {
        const userCode = newUserCode();
        const reply = await run('start', [
          t, maxPending, 2 * expiresInMs, hash, userCode,
          'id', id, 'userCode', userCode, 'clientName', clientName, 'party', party, 'createdAt', t, 'expiresAt', t + expiresInMs,
          'status', 'pending', 'interval', intervalSeconds,
        ]);
        if (reply === 0) return undefined;
        if (reply === 1) return { id, deviceCode, userCode, expiresInSeconds: Math.round(expiresInMs / 1000), intervalSeconds };
      }
      throw stateUnavailable('Starting a device grant (no free user code was found)');
    },

    async poll(deviceCode) {
      const reply = await run('poll', [now(), expiresInMs, POLL_TOLERANCE_MS, SLOW_DOWN_STEP_SECONDS, hashDeviceCode(deviceCode)]);
      const outcome = Array.isArray(reply) ? reply[0] : undefined;
      const interval = Array.isArray(reply) && typeof reply[1] === 'number' ? reply[1] : intervalSeconds;
      switch (outcome) {
        case 'authorization_pending':
        case 'slow_down':
          return { outcome, intervalSeconds: interval };
        case 'expired_token':
        case 'access_denied':
          return { outcome };
        case 'approved': {
          const fields = fieldsOf(reply, 1);
          const grant = viewOf(fields);
          const tier = fields.get('tier');
          if (grant === undefined || !isTierName(tier)) return { outcome: 'invalid_grant' };
          const name = fields.get('name');
          return { outcome: 'approved', grant, keyName: name === undefined || name === '' ? grant.clientName : name, tier };
        }
        default:
          return { outcome: 'invalid_grant' };
      }
    },

    async redeem(deviceCode) {
      return (await run('redeem', [hashDeviceCode(deviceCode)])) === 1;
    },

    async find(userCode) {
      const code = normalizeUserCode(userCode);
      if (code === undefined) return undefined;
      const grant = viewOf(fieldsOf(await run('find', [code])));
      return grant === undefined || grant.status === 'denied' || now() >= grant.expiresAt ? undefined : grant;
    },

    approve: (userCode, approval) => decide(userCode, 'approve', approval),
    deny: (userCode) => decide(userCode, 'deny'),

    async pending() {
      const t = now();
      const reply = await run('live', [t]);
      const list: Array<{ grant: GrantView; seq: number }> = [];
      if (Array.isArray(reply)) {
        for (const entry of reply) {
          const fields = fieldsOf(entry);
          const grant = viewOf(fields);
          if (grant !== undefined && grant.status === 'pending' && t < grant.expiresAt) list.push({ grant, seq: Number(fields.get('seq') ?? 0) });
        }
      }
      return list.sort((a, b) => a.grant.createdAt - b.grant.createdAt || a.seq - b.seq).map((entry) => entry.grant);
    },

    async liveCount(party) {
      const reply = await run('count', [now(), party ?? '']);
      return typeof reply === 'number' ? reply : 0;
    },
  };
}
