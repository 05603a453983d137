/**
 * Budget reservations on the shared-state server (llmux.md sections 6 and 7): the rule of
 * src/usage/budget.ts (read its header), decided by one script where every process's requests
 * meet (the rule written once more in Lua, as the limiter's are), so two processes can never both
 * take the last of a budget.
 *
 * Per key, beside the ledger's `spend:KEY` (the server's spend per UTC day, which the script reads):
 * - `bhold:{KEY}`, a sorted set of the holds of requests in flight, scored by when their lease
 *   runs out. The process refreshes its leases while their requests run (every third of
 *   `state.lease_ms`); a process that died stops, and the next script reclaims its holds.
 * - `bholdamt:{KEY}`, a hash of each hold's amount in nano-dollars.
 * Both expire on their own after a lease of silence.
 *
 * A hold is released only once the ledger has sent the request's usage to the server (the shared
 * ledger's `afterFlush`), so what a request cost is always counted, as a hold or as spend, by every
 * process: for about a second it is counted as both, which can only refuse early, never overspend.
 *
 * When the server is slow or down (`health`): under `on_failure: "local"` the hold is this
 * process's own (src/usage/budget.ts, against the ledger's cached spend), under `"closed"` the
 * request is refused with 503 `state_unavailable`, as the limiter does.
 */
import { randomBytes } from 'node:crypto';
import { budgetExceededError, budgetReservedError, budgetStatus, createBudgetHolds, periodStartMs, toNanos } from '../usage/budget.ts';
import type { BudgetHold, BudgetHolds } from '../usage/budget.ts';
import { DAY_MS, NANOS_PER_USD } from '../usage/ledger-format.ts';
import type { UsageLedger } from '../usage/ledger.ts';
import type { StateHealth } from './health.ts';
import { NOW_FROM_FIRST_ARGUMENT } from './limiter-scripts.ts';
import { RespError } from './resp.ts';
import type { RespClient } from './resp.ts';

export interface SharedBudgetHoldsOptions {
  client: RespClient;
  health: StateHealth;
  /** The shared ledger: its cached spend for the fallback, and when a request's usage is on the server. */
  ledger: Pick<UsageLedger, 'spendCached'> & { afterFlush(fn: () => void): void };
  prefix?: string;
  /** How long a hold outlives a process that stopped refreshing it (`state.lease_ms`). */
  leaseMs: number;
  /** A clock for the scripts instead of the server's (tests); also the budget's period. */
  now?: () => number;
  /** A script the server refused with an error (not for want of an answer). */
  onError?(message: string): void;
}

export interface SharedBudgetHolds extends BudgetHolds {
  reserve(keyId: string, budget: Parameters<BudgetHolds['reserve']>[1], worstUsd: number): Promise<BudgetHold>;
  /** Holds this process has on the server now. */
  holdsHeld(): number;
  /** Stops refreshing leases. */
  close(): void;
}


/**
 * KEYS: holds, amounts, spend. ARGV: now, lease ms, budget nanos, first day of the period, worst
 * nanos, hold id. Reclaims expired holds, then answers {verdict, spent, held}: verdict 1 held,
 * 0 spend reached the budget, 2 what is left is held by others.
 */
const RESERVE_SCRIPT = `${NOW_FROM_FIRST_ARGUMENT}
local lease, budget, from, worst, id = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, old in ipairs(gone) do redis.call('HDEL', KEYS[2], old) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
local spent = 0
local days = redis.call('HGETALL', KEYS[3])
for i = 1, #days, 2 do
  if tonumber(days[i]) >= from then spent = spent + (tonumber(days[i + 1]) or 0) end
end
local held = 0
for _, amount in ipairs(redis.call('HVALS', KEYS[2])) do held = held + (tonumber(amount) or 0) end
if spent >= budget then return {0, spent, held} end
if held > 0 and spent + held + worst > budget then return {2, spent, held} end
redis.call('ZADD', KEYS[1], now + lease, id)
redis.call('HSET', KEYS[2], id, worst)
redis.call('PEXPIRE', KEYS[1], lease)
redis.call('PEXPIRE', KEYS[2], lease)
return {1, spent, held}
`;

/** KEYS: holds, amounts. ARGV: now, the hold id, its new amount (settle) or '' (release). */
const END_SCRIPT = `${NOW_FROM_FIRST_ARGUMENT}
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[2])
  redis.call('HDEL', KEYS[2], ARGV[2])
else
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
return 1
`;

/** KEYS: holds, amounts. ARGV: now, lease ms, then the hold ids whose leases are extended. */
const REFRESH_SCRIPT = `${NOW_FROM_FIRST_ARGUMENT}
local lease = tonumber(ARGV[2])
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], lease)
redis.call('PEXPIRE', KEYS[2], lease)
return 1
`;

/** Budget holds on the state server, with this process's own as the fallback (see the header). */
export function createSharedBudgetHolds(options: SharedBudgetHoldsOptions): SharedBudgetHolds {
  const { client, health, leaseMs, ledger } = options;
  const prefix = options.prefix ?? 'llmux:';
  const clock = options.now;
  const localNow = clock ?? Date.now;
  const fallback = createBudgetHolds({ ledger, now: localNow });
  const reserveScript = client.script(RESERVE_SCRIPT);
  const endScript = client.script(END_SCRIPT);
  const refreshScript = client.script(REFRESH_SCRIPT);
  const processToken = randomBytes(6).toString('hex');
  let holdCount = 0;
  /** Hold ids this process has on the server, by key id: their leases are refreshed together. */
  const held = new Map<string, Set<string>>();

  const keysOf = (keyId: string): [string, string] => [`${prefix}bhold:{${keyId}}`, `${prefix}bholdamt:{${keyId}}`];
  const nowArg = (): string => (clock === undefined ? '' : String(clock()));

  function reportError(error: unknown): void {
    if (error instanceof RespError) options.onError?.(`shared budget holds: ${error.message}`);
  }

  function letGo(keyId: string, id: string): void {
    const ids = held.get(keyId);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) held.delete(keyId);
  }

  async function refreshLeases(): Promise<void> {
    if (held.size === 0 || health.degraded()) return;
    await Promise.all([...held].map(([keyId, ids]) => refreshScript.run(keysOf(keyId), [nowArg(), leaseMs, ...ids]).catch(reportError)));
  }
  const refreshTimer = setInterval(() => void refreshLeases(), Math.max(100, Math.floor(leaseMs / 3)));
  refreshTimer.unref();

  function sharedHold(keyId: string, id: string, worstNanos: number): BudgetHold {
    let settled = false;
    let released = false;
    return {
      settle(costUsd) {
        if (settled || released) return;
        settled = true;
        const real = Math.min(worstNanos, toNanos(costUsd));
        endScript.run(keysOf(keyId), [nowArg(), id, real]).catch(reportError);
      },
      release() {
        if (released) return;
        released = true;
        // Once the ledger's batch holding this request's cost is on the server: counted there then.
        ledger.afterFlush(() => {
          letGo(keyId, id);
          endScript.run(keysOf(keyId), [nowArg(), id, '']).catch(reportError);
        });
      },
    };
  }

  return {
    async reserve(keyId, budget, worstUsd) {
      if (health.degraded()) {
        if (health.policy === 'closed') throw health.unavailable();
        return fallback.reserve(keyId, budget, worstUsd);
      }
      const nowMs = localNow();
      const worst = toNanos(worstUsd);
      const budgetNanos = toNanos(budget.usd);
      const id = `${processToken}.${(holdCount++).toString(36)}`;
      let reply: unknown;
      try {
        reply = await reserveScript.run([...keysOf(keyId), `${prefix}spend:${keyId}`], [
          nowArg(), leaseMs, budgetNanos, Math.floor(periodStartMs(budget.period, nowMs) / DAY_MS), worst, id,
        ]);
      } catch (error) {
        reportError(error);
        if (health.policy === 'closed') throw health.unavailable();
        return fallback.reserve(keyId, budget, worstUsd);
      }
      const [verdict, spent, heldNanos] = Array.isArray(reply) ? reply.map(Number) : [];
      const status = budgetStatus(budget, (spent ?? 0) / NANOS_PER_USD, nowMs);
      if (verdict === 1) {
        let ids = held.get(keyId);
        if (ids === undefined) held.set(keyId, ids = new Set());
        ids.add(id);
        return sharedHold(keyId, id, worst);
      }
      if (verdict === 0) throw budgetExceededError(status);
      throw budgetReservedError(status, (heldNanos ?? 0) / NANOS_PER_USD, worstUsd);
    },
    holdsHeld() {
      let n = 0;
      for (const ids of held.values()) n += ids.size;
      return n;
    },
    close() {
      clearInterval(refreshTimer);
    },
  };
}
