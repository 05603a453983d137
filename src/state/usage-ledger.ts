/**
 * The usage ledger on the shared-state server (llmux.md sections 6 and 7): every process's usage in
 * one place, for `GET /v1/usage`, the usage view and budgets. The same interface and the same rows
 * as the file ledger (src/usage/ledger.ts, whose header says what a row is and how queries group):
 * per key × model × UTC hour, requests, four token counts and cost in whole nano-dollars.
 *
 * - `record` stays synchronous and cheap: it adds to a table in memory. Once a second (and on
 *   `flush`/`close`) the table goes to the server as ONE script, which adds every row in one step.
 *   Each batch has an id the server remembers for a day, so a batch sent again after a reply was
 *   lost is not counted twice. While the server is away batches wait in memory (one row per key ×
 *   model × hour, whatever the traffic) and go when it is back: nothing is lost but a kill -9's
 *   last second, as with files.
 * - On the server, under the prefix: `usage:day:D` (a hash per UTC day D since the epoch, field
 *   `HOUR|KEY|MODEL`, value the six counts joined by commas), `usage:days` (the days that have
 *   any), and `spend:KEY` (a hash per key, field D, value the key's nano-dollars that day), which
 *   budgets read. Usage is kept until deleted, as files are; a key's spend hash expires after 70
 *   days without spending.
 * - Budgets read `spendCached`: this process's own records at once, and the server's totals of the
 *   keys it was asked about, re-read after each flush (so within about a second of another
 *   process's flush). A process's first request of a key is checked against its own records and
 *   what it last read; the next second, against everyone's.
 * - Queries read a few days per round trip, on a connection of their own when given one
 *   (`queryClient`): a long range is a large reply, and it must not hold up the admissions behind
 *   it. This process's rows not yet flushed are included, other processes' last second is not.
 *
 * Scripts name keys built from the prefix, so this needs one server, not a cluster.
 */
import { randomBytes } from 'node:crypto';
import { DAY_MS, HOUR_MS, NANOS_PER_USD, createRowTable, entryCounts, entryHour, spendWindowStart } from '../usage/ledger-format.ts';
import type { Counts, RowTable } from '../usage/ledger-format.ts';
import { createUsageSummary } from '../usage/ledger.ts';
import type { UsageLedger, UsageQuery, UsageRow } from '../usage/ledger.ts';
import { stateUnavailable } from '../common/errors.ts';
import type { RespArg, RespClient } from './resp.ts';

export interface SharedLedgerOptions {
  client: RespClient;
  /**
   * The connection queries read on (default: `client`). A long range is a large reply; on a
   * connection of its own, with a deadline of its own, it never holds up the admissions.
   */
  queryClient?: RespClient;
  /** Deadline of each round trip of a query; default: the query client's. */
  queryTimeoutMs?: number;
  /** Prefix of every key this ledger writes; default `llmux:`. */
  prefix?: string;
  now?: () => number;
  /** How often pending usage goes to the server and spend is re-read; default 1000. */
  flushIntervalMs?: number;
  /** A batch the server refused with an error (not for want of an answer), once per message. */
  onError?(error: Error): void;
}

export interface SharedLedger extends UsageLedger {
  /**
   * Adds rows as one batch named `batchId`: a batch already added (by this or any process) is not
   * added again, so an import can be run twice. Resolves with whether it was added now.
   */
  addRows(rows: RowTable, batchId: string): Promise<boolean>;
  /**
   * Calls `fn` once everything recorded so far is on the server (after the flush that sends it;
   * at the next flush when nothing is pending). Budget holds are released so (./budget-holds.ts).
   */
  afterFlush(fn: () => void): void;
}

/**
 * ARGV: prefix, batch id, then per row: day, hour, key id, model, and the six counts. Adds each row
 * to its day (a read, a sum, a write: values are packed), its day to the list, its cost to the
 * key's spend. 0 when the batch was added before.
 */
const ADD_SCRIPT = `
local P, batch = ARGV[1], ARGV[2]
if not redis.call('SET', P .. 'usage:batch:' .. batch, '1', 'NX', 'PX', 86400000) then return 0 end
local days = {}
for i = 3, #ARGV, 10 do
  local day, hour, key, model = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local h = P .. 'usage:day:' .. day
  local field = hour .. '|' .. key .. '|' .. model
  local sums = {0, 0, 0, 0, 0, 0}
  local old = redis.call('HGET', h, field)
  if old then
    local n = 0
    for part in string.gmatch(old, '[^,]+') do
      n = n + 1
      sums[n] = tonumber(part) or 0
    end
  end
  for c = 1, 6 do sums[c] = sums[c] + tonumber(ARGV[i + 3 + c]) end
  redis.call('HSET', h, field, string.format('%d,%d,%d,%d,%d,%d', sums[1], sums[2], sums[3], sums[4], sums[5], sums[6]))
  days[day] = true
  if ARGV[i + 9] ~= '0' then
    local spend = P .. 'spend:' .. key
    redis.call('HINCRBY', spend, math.floor(tonumber(hour) / 24), ARGV[i + 9])
    redis.call('PEXPIRE', spend, 6048000000)
  end
end
for day in pairs(days) do redis.call('SADD', P .. 'usage:days', day) end
return 1
`;

/** Days read per round trip by a query. */
const QUERY_DAYS_PER_TRIP = 4;
/** Keys whose spend is re-read after each flush, once asked about: forgotten after this long unasked. */
const SPEND_WATCH_MS = 3_600_000;
/** At most this many keys' spend re-read per flush (the most recently asked). */
const MAX_WATCHED_KEYS = 1_000;

/** `HOUR|KEY|MODEL` (a model id may hold '|'; a key id never does). */
function parseField(field: string): { hour: number; keyId: string; model: string } | undefined {
  const first = field.indexOf('|');
  const second = field.indexOf('|', first + 1);
  if (first < 1 || second < 0) return undefined;
  const hour = Number(field.slice(0, first));
  return Number.isInteger(hour) ? { hour, keyId: field.slice(first + 1, second), model: field.slice(second + 1) } : undefined;
}

function parseCounts(value: string): Counts | undefined {
  const parts = value.split(',').map(Number);
  if (parts.length !== 6 || !parts.every((n) => Number.isFinite(n) && n >= 0)) return undefined;
  return parts as Counts;
}

function rowArgs(table: RowTable): RespArg[] {
  const args: RespArg[] = [];
  table.forEach((hour, keyId, model, counts) => {
    args.push(Math.floor(hour / 24), hour, keyId, model, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
  });
  return args;
}

/** The usage ledger on the state server; starts its flush timer (unref'd). */
export function createSharedLedger(options: SharedLedgerOptions): SharedLedger {
  const { client } = options;
  const queryClient = options.queryClient ?? client;
  const queryOptions = options.queryTimeoutMs === undefined ? undefined : { timeoutMs: options.queryTimeoutMs };
  const prefix = options.prefix ?? 'llmux:';
  const now = options.now ?? Date.now;
  const flushIntervalMs = options.flushIntervalMs ?? 1000;
  const addScript = client.script(ADD_SCRIPT);

  let pending = createRowTable();
  /** Called once what is pending now is on the server. */
  let pendingWaiters: Array<() => void> = [];
  /** A batch sent and not confirmed: sent again, under the same id, before anything newer; then its waiters are called. */
  let unconfirmed: { id: string; table: RowTable; waiters: Array<() => void> } | undefined;
  /** Own cost not yet confirmed by the server, per key per day. */
  const ownSpend = new Map<string, Map<number, number>>();
  /** The server's spend per key per day, as last read, and when each key was last asked about. */
  const serverSpend = new Map<string, Map<number, number>>();
  const watched = new Map<string, number>();
  let closed = false;
  let closing: Promise<void> | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let lastError = '';

  /** Server work one task at a time, so a batch is never sent twice at once. */
  function serial<T>(task: () => Promise<T>): Promise<T> {
    const run = chain.then(task, task);
    chain = run.catch(() => {});
    return run;
  }

  function report(error: unknown): void {
    if (!(error instanceof Error) || error.name !== 'RespError' || error.message === lastError) return;
    lastError = error.message;
    options.onError?.(new Error(`shared usage ledger: ${error.message}`));
  }

  function addTo(spend: Map<string, Map<number, number>>, keyId: string, day: number, nanos: number): void {
    let days = spend.get(keyId);
    if (days === undefined) spend.set(keyId, days = new Map());
    days.set(day, (days.get(day) ?? 0) + nanos);
  }

  function sumFrom(days: Map<number, number> | undefined, fromDay: number): number {
    let nanos = 0;
    if (days !== undefined) for (const [day, amount] of days) if (day >= fromDay) nanos += amount;
    return nanos;
  }

  function spendCached(keyId: string, sinceMs: number): number {
    const fromDay = Math.floor(sinceMs / DAY_MS);
    if (!watched.has(keyId) && watched.size >= MAX_WATCHED_KEYS) {
      const oldest = [...watched].sort((a, b) => a[1] - b[1])[0];
      if (oldest !== undefined) watched.delete(oldest[0]);
    }
    watched.set(keyId, now());
    return (sumFrom(serverSpend.get(keyId), fromDay) + sumFrom(ownSpend.get(keyId), fromDay)) / NANOS_PER_USD;
  }

  async function send(batch: { id: string; table: RowTable }): Promise<void> {
    const args = rowArgs(batch.table);
    if (args.length === 0) return;
    await addScript.run([], [prefix, batch.id, ...args]);
  }

  /** Sends what is pending (after the unconfirmed batch, if any); own spend moves to the server's as it is confirmed. */
  async function writePending(): Promise<void> {
    if (unconfirmed === undefined && pending.size > 0) {
      unconfirmed = { id: randomBytes(12).toString('base64url'), table: pending, waiters: pendingWaiters };
      pending = createRowTable();
      pendingWaiters = [];
    }
    if (unconfirmed === undefined) {
      // Nothing was pending: what the waiters wait for is on the server already.
      callAll(pendingWaiters.splice(0));
      return;
    }
    await send(unconfirmed);
    unconfirmed.table.forEach((hour, keyId, _model, counts) => {
      const days = ownSpend.get(keyId);
      if (days === undefined || counts[5] === 0) return;
      const day = Math.floor(hour / 24);
      const left = (days.get(day) ?? 0) - counts[5];
      if (left > 0) days.set(day, left);
      else days.delete(day);
      if (days.size === 0) ownSpend.delete(keyId);
      // Counted as the server's until the next read brings the real figure.
      addTo(serverSpend, keyId, day, counts[5]);
    });
    const { waiters } = unconfirmed;
    unconfirmed = undefined;
    callAll(waiters);
  }

  function callAll(waiters: Array<() => void>): void {
    for (const waiter of waiters) {
      try {
        waiter();
      } catch (error) {
        report(error);
      }
    }
  }

  async function readSpend(): Promise<void> {
    const cutoff = now() - SPEND_WATCH_MS;
    for (const [keyId, askedAt] of watched) if (askedAt < cutoff) watched.delete(keyId);
    for (const keyId of serverSpend.keys()) if (!watched.has(keyId)) serverSpend.delete(keyId);
    const keys = [...watched.keys()];
    if (keys.length === 0) return;
    const replies = await client.batch(keys.map((keyId) => ['HGETALL', `${prefix}spend:${keyId}`]));
    const fromDay = spendWindowStart(now());
    keys.forEach((keyId, i) => {
      const days = new Map<number, number>();
      const reply = replies[i];
      if (Array.isArray(reply)) {
        for (let j = 0; j + 1 < reply.length; j += 2) {
          const day = Number(reply[j]);
          const nanos = Number(reply[j + 1]);
          if (Number.isInteger(day) && day >= fromDay && Number.isFinite(nanos)) days.set(day, nanos);
        }
      }
      serverSpend.set(keyId, days);
    });
  }

  async function tick(): Promise<void> {
    await serial(async () => {
      await writePending();
      await readSpend();
    });
  }

  const timer = setInterval(() => {
    tick().catch(report);
  }, flushIntervalMs);
  timer.unref();

  async function readDays(days: number[], visit: (hour: number, keyId: string, model: string, counts: Counts) => void): Promise<void> {
    for (let i = 0; i < days.length; i += QUERY_DAYS_PER_TRIP) {
      const chunk = days.slice(i, i + QUERY_DAYS_PER_TRIP);
      const replies = await queryClient.batch(chunk.map((day) => ['HGETALL', `${prefix}usage:day:${day}`]), queryOptions);
      for (const reply of replies) {
        if (!Array.isArray(reply)) continue;
        for (let j = 0; j + 1 < reply.length; j += 2) {
          const field = parseField(String(reply[j]));
          const counts = parseCounts(String(reply[j + 1]));
          if (field !== undefined && counts !== undefined) visit(field.hour, field.keyId, field.model, counts);
        }
      }
    }
  }

  async function query(request: UsageQuery): Promise<UsageRow[]> {
    const summary = createUsageSummary(request);
    if (!(request.until > request.since)) return [];
    const fromDay = Math.floor(request.since / DAY_MS);
    const toDay = Math.floor((request.until - 1) / DAY_MS);
    try {
      const listed = await queryClient.command(['SMEMBERS', `${prefix}usage:days`], queryOptions);
      const days = (Array.isArray(listed) ? listed : []).map(Number).filter((d) => Number.isInteger(d) && d >= fromDay && d <= toDay).sort((a, b) => a - b);
      await readDays(days, summary.add);
    } catch (error) {
      throw Object.assign(stateUnavailable('Usage'), { cause: error });
    }
    // This process's rows not yet confirmed (a batch sent but unanswered may be counted in both: rare, and only until it is).
    unconfirmed?.table.forEach(summary.add);
    pending.forEach(summary.add);
    return summary.rows();
  }

  return {
    record(entry) {
      if (closed) return;
      const nowMs = now();
      const hour = entryHour(entry.at, nowMs);
      const keyId = String(entry.keyId);
      const counts = entryCounts(entry);
      const nanos = counts[5];
      pending.add(hour, keyId, String(entry.model), counts);
      if (nanos > 0) addTo(ownSpend, keyId, Math.floor(hour / 24), nanos);
    },

    query,

    async spend(keyId, sinceMs) {
      const fromDay = Math.floor(sinceMs / DAY_MS);
      if (fromDay < spendWindowStart(now())) {
        const rows = await query({ since: fromDay * DAY_MS, until: now() + HOUR_MS, keyId, groupBy: 'key' });
        return rows.reduce((sum, row) => sum + row.cost_usd, 0);
      }
      watched.set(keyId, now());
      try {
        await tick();
      } catch (error) {
        throw Object.assign(stateUnavailable('Spend'), { cause: error });
      }
      return spendCached(keyId, sinceMs);
    },

    spendCached,

    async flush() {
      await tick();
    },

    afterFlush(fn) {
      if (closed) return;
      pendingWaiters.push(fn);
    },

    async addRows(rows, batchId) {
      const args = rowArgs(rows);
      if (args.length === 0) return false;
      return (await serial(() => addScript.run([], [prefix, batchId, ...args], { timeoutMs: 10_000 }))) === 1;
    },

    close() {
      if (closing !== undefined) return closing;
      closed = true;
      clearInterval(timer);
      closing = serial(writePending).catch(report);
      return closing;
    },
  };
}

