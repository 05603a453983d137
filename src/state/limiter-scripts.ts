/**
 * The shared limiter's server-side scripts (Lua, run by EVALSHA): src/limits/limiter.ts's rules,
 * written once more where every process's requests meet. Each script is one atomic step, so two
 * processes can never both take the last request of a minute or the last concurrency slot.
 *
 * Per key, two keys on the server:
 * - a hash (`KEYS[1]`): the sliding window of one-second slots as in src/limits/window.ts, lane by
 *   lane: `r:G` (admissions) and `t:G` (settled tokens) for granule G = floor(ms / granuleMs), with
 *   their running totals `R` and `T`, the range `lo`..`hi` of granules that may hold amounts, the
 *   reservations of requests not settled `res`, and each such request's own reservation `L:LEASE`;
 * - a sorted set (`KEYS[2]`): the concurrency leases, scored by when they expire. A process
 *   refreshes its leases while their requests run; one that died stops, and the next script to
 *   touch the key reclaims its leases: the slot is free again, and an unsettled reservation is
 *   counted as used, as `release` without `settle` does.
 * Both expire on their own after a window plus a lease of silence.
 *
 * Every script takes the time as its first argument: the caller's clock in milliseconds, or ''
 * for the server's (`TIME`), which every process then shares. Tests pass their own clock.
 * Limits are whole numbers, -1 for none. Amounts are whole numbers (the caller rounds tokens up).
 */

/**
 * `now`, in milliseconds, from the script's first argument: the caller's clock, or '' for the
 * server's (`TIME`). Shared with the other scripts that take the time so (./budget-holds.ts).
 */
export const NOW_FROM_FIRST_ARGUMENT = `
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local now = now_ms(ARGV[1])
`;

/** Definitions every script starts with: the window and the key's state, loaded once. */
const PRELUDE = `${NOW_FROM_FIRST_ARGUMENT}
local H, Z = KEYS[1], KEYS[2]
local GRANULES = 60
local window = tonumber(ARGV[2])
local gms = window / GRANULES
local cur = math.floor(now / gms)
local st = redis.call('HMGET', H, 'R', 'T', 'lo', 'hi', 'res')
local R, T, lo, hi, res = tonumber(st[1]) or 0, tonumber(st[2]) or 0, tonumber(st[3]), tonumber(st[4]), tonumber(st[5]) or 0

-- Drops the granules that left the window (at most 61 exist: lo >= hi - 60 after every add).
local function expire()
  if lo == nil then return end
  local oldest = cur - GRANULES
  if lo >= oldest then return end
  for g = lo, math.min(hi, oldest - 1) do
    local a = redis.call('HMGET', H, 'r:' .. g, 't:' .. g)
    if a[1] or a[2] then
      R = R - (tonumber(a[1]) or 0)
      T = T - (tonumber(a[2]) or 0)
      redis.call('HDEL', H, 'r:' .. g, 't:' .. g)
    end
  end
  if hi < oldest then
    lo, hi, R, T = nil, nil, 0, 0
  else
    lo = oldest
  end
end

-- Counts amount in lane 'r' or 't' now; a clock that stepped back adds to the newest granule.
local function add(lane, amount)
  local g = cur
  if hi ~= nil and hi > g then g = hi end
  if amount > 0 then redis.call('HINCRBY', H, lane .. ':' .. g, amount) end
  if lane == 'r' then R = R + amount else T = T + amount end
  if lo == nil or g < lo then lo = g end
  if hi == nil or g > hi then hi = g end
  return g
end

local function amount(lane, g)
  return tonumber(redis.call('HGET', H, lane .. ':' .. g)) or 0
end

local function expiry(g) return (g + GRANULES + 1) * gms end

-- Milliseconds until the lane's total drops below limit (limit > 0) with nothing added.
local function below(lane, total, limit)
  if total < limit then return 0 end
  if lo == nil then return window end
  local remaining = total
  for g = lo, hi do
    remaining = remaining - amount(lane, g)
    if remaining < limit then return expiry(g) - now end
  end
  return window
end

-- Milliseconds until every amount of the lane has left the window.
local function until_empty(lane)
  if lo == nil then return 0 end
  for g = hi, lo, -1 do
    if amount(lane, g) > 0 then return expiry(g) - now end
  end
  return 0
end

-- Reclaims the leases of requests whose process stopped refreshing them.
local function reclaim()
  local expired = redis.call('ZRANGEBYSCORE', Z, '-inf', now)
  if #expired == 0 then return end
  for _, lease in ipairs(expired) do
    local r = tonumber(redis.call('HGET', H, 'L:' .. lease))
    if r ~= nil then
      res = math.max(0, res - r)
      add('t', r)
      redis.call('HDEL', H, 'L:' .. lease)
    end
  end
  redis.call('ZREMRANGEBYSCORE', Z, '-inf', now)
end

local function save(ttl)
  redis.call('HSET', H, 'R', math.max(0, R), 'T', math.max(0, T), 'res', res)
  if lo == nil then redis.call('HDEL', H, 'lo', 'hi') else redis.call('HSET', H, 'lo', lo, 'hi', hi) end
  redis.call('PEXPIRE', H, ttl)
  if redis.call('EXISTS', Z) == 1 then redis.call('PEXPIRE', Z, ttl) end
end

-- Seconds-to-reset inputs: requests lane, and tokens (a reservation in flight counts from now).
local function resets()
  local tokens_reset
  if res > 0 then tokens_reset = expiry(cur) - now else tokens_reset = until_empty('t') end
  return until_empty('r'), tokens_reset
end
`;

/**
 * Admission. ARGV: now, windowMs, leaseMs, rpm, tpm, concurrency, reservation, lease id.
 * Returns `[admitted (1|0), reason (0, 1 requests, 2 tokens, 3 concurrency), limit, waitMs,
 * requests, tokens in use, in flight, requests reset ms, tokens reset ms]`, the counts after the
 * admission when admitted, unchanged when refused.
 */
export const ADMIT_SCRIPT = `${PRELUDE}
local lease_ms = tonumber(ARGV[3])
local rpm, tpm, concurrency = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local reservation, lease = tonumber(ARGV[7]), ARGV[8]
local ttl = window + gms + lease_ms
expire()
reclaim()
local inflight = redis.call('ZCARD', Z)
local tokens = T + res

-- The request waits for the slowest limit it is over; that one is the reason.
local reason, limit, wait = 0, 0, -1
local function over(code, lim, w)
  if w > wait then reason, limit, wait = code, lim, w end
end
if rpm >= 0 and R >= rpm then
  if rpm == 0 then over(1, rpm, window) else over(1, rpm, below('r', R, rpm)) end
end
if tpm >= 0 then
  local need = math.max(1, math.min(reservation, tpm))
  if tokens + need > tpm then
    -- Room comes when the window drops below what the reservations in flight and this one leave.
    local window_limit = tpm - res - need + 1
    if tpm == 0 then over(2, tpm, window)
    elseif window_limit <= 0 then over(2, tpm, 1000)
    else over(2, tpm, below('t', T, window_limit)) end
  end
end
if concurrency >= 0 and inflight >= concurrency then
  if concurrency == 0 then over(3, concurrency, window) else over(3, concurrency, 1000) end
end

if reason ~= 0 then
  save(ttl)
  local rr, tr = resets()
  return {0, reason, limit, wait, R, tokens, inflight, rr, tr}
end
add('r', 1)
res = res + reservation
redis.call('HSET', H, 'L:' .. lease, reservation)
redis.call('ZADD', Z, now + lease_ms, lease)
save(ttl)
local rr, tr = resets()
return {1, 0, 0, 0, R, T + res, inflight + 1, rr, tr}
`;

/**
 * The end of a request, or half of it. ARGV: now, windowMs, leaseMs, lease id, used tokens ('' when
 * not known: the reservation is counted instead), release (1: the slot is freed; 0: settle only).
 * The request's unsettled reservation, if it still has one, is replaced by what it used, counted
 * now. Returns the granule the reservation was counted in when it was counted for want of usage
 * (so a later settle can replace it there), else -1.
 */
export const END_SCRIPT = `${PRELUDE}
local lease_ms = tonumber(ARGV[3])
local lease, used, release = ARGV[4], ARGV[5], ARGV[6]
expire()
if release == '1' then redis.call('ZREM', Z, lease) end
local counted_in = -1
local r = tonumber(redis.call('HGET', H, 'L:' .. lease))
if r ~= nil then
  res = math.max(0, res - r)
  redis.call('HDEL', H, 'L:' .. lease)
  if used == '' then counted_in = add('t', r) else add('t', tonumber(used)) end
end
save(window + gms + lease_ms)
return counted_in
`;

/**
 * A settle that came after its release: replaces the reservation counted in granule G by the usage.
 * ARGV: now, windowMs, leaseMs, G, delta (used - reservation). Nothing when G has left the window.
 */
export const ADJUST_SCRIPT = `${PRELUDE}
local lease_ms = tonumber(ARGV[3])
local g, delta = tonumber(ARGV[4]), tonumber(ARGV[5])
expire()
if lo ~= nil and g >= lo and g <= hi then
  local before = amount('t', g)
  if before > 0 then
    local after = math.max(0, before + delta)
    redis.call('HSET', H, 't:' .. g, after)
    T = math.max(0, T + after - before)
  end
end
save(window + gms + lease_ms)
return 1
`;

/**
 * Keeps a process's leases alive. ARGV: now, windowMs, leaseMs, lease ids… A lease already
 * reclaimed stays gone (XX): its request runs on, outside the count.
 */
export const REFRESH_SCRIPT = `${PRELUDE}
local lease_ms = tonumber(ARGV[3])
local refreshed = 0
for i = 4, #ARGV do
  if redis.call('ZADD', Z, 'XX', 'CH', now + lease_ms, ARGV[i]) == 1 then refreshed = refreshed + 1 end
end
local ttl = window + gms + lease_ms
if redis.call('EXISTS', H) == 1 then redis.call('PEXPIRE', H, ttl) end
if redis.call('EXISTS', Z) == 1 then redis.call('PEXPIRE', Z, ttl) end
return refreshed
`;

/**
 * Where a key stands, counting nothing. ARGV: now, windowMs, leaseMs.
 * Returns `[requests, tokens in use, in flight, requests reset ms, tokens reset ms]`.
 */
export const PEEK_SCRIPT = `${PRELUDE}
local lease_ms = tonumber(ARGV[3])
if redis.call('EXISTS', H) == 0 and redis.call('EXISTS', Z) == 0 then return {0, 0, 0, 0, 0} end
expire()
reclaim()
save(window + gms + lease_ms)
local rr, tr = resets()
return {R, T + res, redis.call('ZCARD', Z), rr, tr}
`;
