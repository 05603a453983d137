/**
 * The shared routing state's server-side scripts (Lua, by EVALSHA): src/state/routing.ts says what
 * each is for. Every script takes the time as its first argument: the caller's clock in
 * milliseconds, or '' for the server's (`TIME`), which every process then shares — so a rest's end
 * is kept in the server's clock and handed to each process as "this many milliseconds from now",
 * and processes whose clocks disagree still agree on when it ends.
 *
 * Keys on the server (PREFIX is `state.prefix`, `llmux:` by default):
 * - `PREFIXroute:rest`, a hash: subject -> `version|untilMs|lastMs|strikes|probing` (server clock);
 * - `PREFIXroute:busy`, a hash: `deployment NUL process` -> `inFlight|requests|tokens|leaseUntil|windowUntil`,
 *   each process's own counts, rewritten on every sync; a process that stops syncing stops counting
 *   once its lease (in flight) and window (requests, tokens) have passed;
 * - `PREFIXroute:sticky`, a hash: conversation -> `deployment NUL key NUL usedMs`, and
 *   `PREFIXroute:sticky:lru`, a sorted set of the same conversations by when they were last used,
 *   which bounds the hash (idle an hour, at most `maxEntries`).
 */

const NOW = `
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n) return string.format('%.0f', n) end
-- A stored rest record, as the caller reads it: its end relative to now.
local function relative(stored, now)
  local v, u, l, s, p = string.match(stored, '^(%d+)|(-?[%d.]+)|([%d.]+)|(%d+)|(%d)$')
  if v == nil then return nil end
  return v .. '|' .. int(tonumber(u) - now) .. '|' .. l .. '|' .. s .. '|' .. p
end
`;

/**
 * Compare-and-set of one subject's rest record. KEYS: rest hash. ARGV: now, subject, expected
 * version ('' when the caller saw none), the new record `remainingMs|lastMs|strikes|probing` ('' to
 * remove it), ttl of the hash. Returns `{1, new version}`, or `{0, current record relative}` when
 * another process changed it first ('' when it is gone).
 */
export const REST_CAS_SCRIPT = `${NOW}
local now = now_ms(ARGV[1])
local current = redis.call('HGET', KEYS[1], ARGV[2])
local version = 0
if current then version = tonumber(string.match(current, '^(%d+)|')) or 0 end
local expected = tonumber(ARGV[3]) or 0
if version ~= expected then
  if current then return {0, relative(current, now) or ''} end
  return {0, ''}
end
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], ARGV[2])
  return {1, 0}
end
local r, l, s, p = string.match(ARGV[4], '^(-?[%d.]+)|([%d.]+)|(%d+)|(%d)$')
if r == nil then return redis.error_reply('bad rest record') end
redis.call('HSET', KEYS[1], ARGV[2], int(version + 1) .. '|' .. int(now + tonumber(r)) .. '|' .. l .. '|' .. s .. '|' .. p)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]))
return {1, version + 1}
`;

/**
 * A process's sync: publishes its own counts and reads everyone else's, and every rest record.
 * KEYS: busy hash, rest hash. ARGV: now, process, leaseMs, windowMs, then per deployment it
 * counts for: deployment, inFlight, requests, tokens. Returns `{totals, rests}`: totals flattened
 * as deployment, inFlight, requests, tokens of the other processes; rests flattened as subject,
 * `version|remainingMs|lastMs|strikes|probing`.
 */
export const SYNC_SCRIPT = `${NOW}
local now = now_ms(ARGV[1])
local proc, lease, window = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local mine = {}
for i = 5, #ARGV, 4 do
  local dep = ARGV[i]
  mine[dep] = true
  local req, tok = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  local window_until = 0
  if req > 0 or tok > 0 then window_until = now + window end
  redis.call('HSET', KEYS[1], dep .. '\\0' .. proc, ARGV[i + 1] .. '|' .. ARGV[i + 2] .. '|' .. ARGV[i + 3] .. '|' .. int(now + lease) .. '|' .. int(window_until))
end
local all = redis.call('HGETALL', KEYS[1])
local sums, order = {}, {}
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  local sep = string.find(field, '\\0', 1, true)
  if sep == nil then
    redis.call('HDEL', KEYS[1], field)
  else
    local dep, owner = string.sub(field, 1, sep - 1), string.sub(field, sep + 1)
    if owner == proc then
      if not mine[dep] then redis.call('HDEL', KEYS[1], field) end
    else
      local f, q, t, lu, wu = string.match(value, '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)$')
      lu, wu = tonumber(lu) or 0, tonumber(wu) or 0
      if lu <= now and wu <= now then
        redis.call('HDEL', KEYS[1], field)
      else
        local sum = sums[dep]
        if sum == nil then
          sum = {0, 0, 0}
          sums[dep] = sum
          order[#order + 1] = dep
        end
        if lu > now then sum[1] = sum[1] + tonumber(f) end
        if wu > now then
          sum[2] = sum[2] + tonumber(q)
          sum[3] = sum[3] + tonumber(t)
        end
      end
    end
  end
end
redis.call('PEXPIRE', KEYS[1], lease + window)
local totals = {}
for _, dep in ipairs(order) do
  local sum = sums[dep]
  totals[#totals + 1] = dep
  totals[#totals + 1] = int(sum[1])
  totals[#totals + 1] = int(sum[2])
  totals[#totals + 1] = int(sum[3])
end
local rests = {}
local stored = redis.call('HGETALL', KEYS[2])
for i = 1, #stored, 2 do
  local record = relative(stored[i + 1], now)
  if record ~= nil then
    rests[#rests + 1] = stored[i]
    rests[#rests + 1] = record
  end
end
return {totals, rests}
`;

/**
 * Binds a conversation. KEYS: sticky hash, its LRU sorted set. ARGV: now, conversation, binding
 * (`deployment NUL key`), maxEntries, idleMs. Drops what has been idle for idleMs and, past
 * maxEntries, the least recently used (at most 100 of each per call, so a call stays short).
 */
export const STICKY_SET_SCRIPT = `${NOW}
local now = now_ms(ARGV[1])
local max, idle = tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3] .. '\\0' .. int(now))
redis.call('ZADD', KEYS[2], now, ARGV[2])
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - idle, 'LIMIT', 0, 100)
for _, conversation in ipairs(gone) do
  redis.call('HDEL', KEYS[1], conversation)
  redis.call('ZREM', KEYS[2], conversation)
end
local over = redis.call('ZCARD', KEYS[2]) - max
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], math.min(over, 100))
  for i = 1, #popped, 2 do redis.call('HDEL', KEYS[1], popped[i]) end
end
redis.call('PEXPIRE', KEYS[1], idle)
redis.call('PEXPIRE', KEYS[2], idle)
return 1
`;

/** A conversation's binding, unless idle for idleMs. KEYS: sticky hash. ARGV: now, conversation, idleMs. Returns `deployment NUL key`, or nil. */
export const STICKY_GET_SCRIPT = `${NOW}
local now = now_ms(ARGV[1])
local value = redis.call('HGET', KEYS[1], ARGV[2])
if not value then return false end
-- Lua 5.1 patterns spell NUL as %z.
local last = string.find(value, '%z[^%z]*$')
if last == nil then return false end
if now - (tonumber(string.sub(value, last + 1)) or 0) >= tonumber(ARGV[3]) then return false end
return string.sub(value, 1, last - 1)
`;
