/**
 * The usage ledger (llmux.md section 7): every answered model request adds its usage, per key ×
 * model × UTC hour; `GET /v1/usage`, `llmux usage`, budgets and the dashboard read it back.
 * `UsageLedger` is the interface; `createFileLedger` keeps it in `$LLMUX_HOME/usage/`, and a
 * shared-state (Redis) implementation can come later behind the same interface (section 6).
 *
 * The file ledger, and why it is shaped this way:
 * - `record` only adds to two in-memory maps: the rows not yet written (`pending`) and the running
 *   spend per key per UTC day. No I/O, no await, no string building beyond map lookups.
 * - A timer (every `flushIntervalMs`, default 1 s) appends what is pending as ONE line to the file
 *   of the current UTC day, in one write, then fdatasyncs. So a kill -9 loses at most what was
 *   recorded since the last completed flush: about one interval, plus the time the disk takes to
 *   sync. A line torn by a crash is not valid JSON and is skipped on read; the next writer that
 *   opens the file starts with a newline so the torn fragment stays on a line of its own.
 * - Files are named by the day they are WRITTEN, not the day of the usage inside. Usage is never
 *   later than the write (a future `at` is clamped to now), so the rows of hour H are all in files
 *   of days >= the day of H: a query reads the files from its first day to today and nothing older.
 *   And a file receives writes only during its own day, so it can be compacted safely afterwards.
 * - Bounded files: a line holds one aggregated row per hour × key × model touched during that
 *   flush, so a file grows with flushes × active rows, never with the number of requests. One
 *   hour (`compactAfterMs`) after its day ends, a day file is compacted into `DAY.totals.json`:
 *   one row per hour × key × model (at most about 25 × keys × models rows); `ledger-compaction.ts`
 *   says how, and `ledger-reader.ts` why a reader racing it counts every row once. A process
 *   writing to a day file more than an hour after that day ended (suspended mid-flush) could lose
 *   that one flush.
 * - Several processes may share the directory (`llmux usage` reading while a server writes, or two
 *   servers in a test): each line carries its writer's random id, each process appends whole lines
 *   with O_APPEND, and each one tails the day files incrementally (`ledger-reader.ts`). Lines of
 *   other writers also feed this process's spend totals; its own were counted at `record`.
 * - Costs are whole nano-dollars (1e-9 USD) inside, so sums are exact; `cost_usd` is a number.
 *
 * Memory: `pending` holds the rows recorded since the last successful flush (normally 1 s of
 * traffic: at most the active keys × models; while the disk refuses writes it keeps growing by one
 * row per key × model × hour, and nothing is lost). The tail of each uncompacted day file (today,
 * and yesterday until 01:00 UTC) holds its rows aggregated: at most about 49 hours × keys ×
 * models. Spend is kept per key per UTC day from the start of the previous UTC month: at most
 * keys × 62 numbers. Totals files are read per query and not kept.
 *
 * Query rows (`GET /v1/usage`): hour buckets are counted when they overlap [since, until), so the
 * range is widened to whole hours. `start`/`end` are ISO times: the bucket for `hour`, the UTC day
 * clipped to the widened range for `day`, the widened range itself when there is no time grouping.
 * `key_id` holds the key when grouped by key or when the query asked for one key, else null (a sum
 * over keys); `model` holds the model when grouped by model, else null. Only non-empty groups are
 * returned, sorted by start, then key_id, then model (null first). The grouping is
 * `ledger-query.ts`, shared by every implementation.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { TokenUsage } from '../formats/wire.ts';
import { DAY_MS, HOUR_MS, NANOS_PER_USD, createRowTable, encodeDeltaLine, entryCounts, entryHour, liveFileName, spendWindowStart } from './ledger-format.ts';
import type { LedgerFile } from './ledger-format.ts';
import { createUsageSummary } from './ledger-query.ts';
import { asError, createLedgerReader, listLedgerDir } from './ledger-reader.ts';
import { closedDays, compactDays } from './ledger-compaction.ts';
import { realTimers } from '../common/timers.ts';
import type { Timers } from '../common/timers.ts';

export { createUsageSummary, groupings } from './ledger-query.ts';
export type { UsageSummary } from './ledger-query.ts';

/** One answered model request. Token counts as in `TokenUsage`: input excludes the two cache counts. */
export interface UsageEntry extends TokenUsage {
  keyId: string;
  /** The llmux model id that answered. */
  model: string;
  /** When the request was answered (ms since the epoch). */
  at: number;
  /** At the catalog's prices; 0 for a model with no price. */
  costUsd: number;
}

export type UsageGrouping = 'hour' | 'day' | 'model' | 'key';

export interface UsageQuery {
  /** Inclusive, ms since the epoch. */
  since: number;
  /** Exclusive, ms since the epoch. */
  until: number;
  /** One key's usage, or every key's (`'all'`, the default). */
  keyId?: string | 'all' | undefined;
  /** One grouping, or several (`['day', 'model']`); at most one of `hour` and `day`. */
  groupBy: UsageGrouping | readonly UsageGrouping[];
}

/** One row of `GET /v1/usage` (llmux.md section 7). */
export interface UsageRow {
  start: string;
  end: string;
  key_id: string | null;
  model: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cost_usd: number;
}

export interface UsageLedger {
  /** Adds one request's usage. Synchronous and cheap: the hot path calls it for every request. */
  record(entry: UsageEntry): void;
  /** Usage in a range, grouped; includes what is not written to disk yet. */
  query(query: UsageQuery): Promise<UsageRow[]>;
  /** USD the key spent since `sinceMs`, counted from the start of that UTC day, after reading other writers' latest lines. */
  spend(keyId: string, sinceMs: number): Promise<number>;
  /**
   * The same from memory, synchronously, for the budget check on the hot path. Fresh for this
   * process's own records (counted at `record`); other processes' spend is as of the last flush
   * tick (at most about two flush intervals old). `sinceMs` is counted from the start of its UTC
   * day, and no earlier than the start of the previous UTC month (what is kept in memory).
   */
  spendCached(keyId: string, sinceMs: number): number;
  /** Writes what is pending (durably) and reads other writers' new lines. */
  flush(): Promise<void>;
  /** Flushes and stops the timer. Records after `close` are ignored. */
  close(): Promise<void>;
}

export interface FileLedgerOptions {
  /** The usage directory (`$LLMUX_HOME/usage`); created when missing. */
  dir: string;
  /** Clock for `at` clamping, day files and compaction (default `Date.now`). */
  now?: () => number;
  /** How often pending usage is written and other writers' lines are read (default 1000). */
  flushIntervalMs?: number;
  /** The flush timer's (default: Node's). */
  timers?: Timers;
  /** How long after its UTC day ends a day file is compacted (default one hour). */
  compactAfterMs?: number;
  /** Write, read and compaction failures (default: one line on stderr per new message). */
  onError?: (error: Error) => void;
}

const noop = (): void => {};

function stderrReporter(): (error: Error) => void {
  let last = '';
  return (error) => {
    if (error.message === last) return;
    last = error.message;
    process.stderr.write(`llmux usage ledger: ${error.message}\n`);
  };
}

/**
 * Opens the file ledger in `dir`: compacts closed days, reads existing files back, and starts
 * the flush timer (unref'd, so it never keeps a process alive).
 */
export async function createFileLedger(options: FileLedgerOptions): Promise<UsageLedger> {
  const { dir } = options;
  const now = options.now ?? Date.now;
  const flushIntervalMs = options.flushIntervalMs ?? 1000;
  const compactAfterMs = options.compactAfterMs ?? HOUR_MS;
  const report = options.onError ?? stderrReporter();
  const writer = randomBytes(8).toString('hex');

  let pending = createRowTable();
  const spendNanos = new Map<string, Map<number, number>>();
  let spendFromDay = spendWindowStart(now());
  const reader = createLedgerReader({ dir, writer, report, onOtherRow: (row) => addSpend(row[1], row[0], row[8]) });
  let handle: FileHandle | undefined;
  let handleDay = -1;
  let needsSeparator = false;
  let chain: Promise<unknown> = Promise.resolve();
  let compaction: Promise<void> | undefined;
  let ticking = false;
  let closed = false;
  let closing: Promise<void> | undefined;

  /** Runs disk work one task at a time, so a query never sees a flush half done. */
  function serial<T>(task: () => Promise<T>): Promise<T> {
    const run = chain.then(task, task);
    chain = run.then(noop, noop);
    return run;
  }

  function addSpend(keyId: string, hour: number, nanos: number): void {
    if (nanos === 0) return;
    const day = Math.floor(hour / 24);
    if (day < spendFromDay) return;
    let days = spendNanos.get(keyId);
    if (days === undefined) spendNanos.set(keyId, days = new Map());
    days.set(day, (days.get(day) ?? 0) + nanos);
  }

  function spendCached(keyId: string, sinceMs: number): number {
    const days = spendNanos.get(keyId);
    if (days === undefined) return 0;
    const fromDay = Math.floor(sinceMs / DAY_MS);
    let nanos = 0;
    for (const [day, amount] of days) if (day >= fromDay) nanos += amount;
    return nanos / NANOS_PER_USD;
  }

  function pruneSpend(): void {
    spendFromDay = spendWindowStart(now());
    for (const [keyId, days] of spendNanos) {
      for (const day of days.keys()) if (day < spendFromDay) days.delete(day);
      if (days.size === 0) spendNanos.delete(keyId);
    }
  }

  // ---- writing ----

  async function openDay(day: number): Promise<FileHandle> {
    if (handle !== undefined) await handle.close().catch(noop);
    handle = undefined;
    // a+ (append, and read to see how the file ends).
    const opened = await open(join(dir, liveFileName(day)), 'a+', 0o600);
    try {
      const { size } = await opened.stat();
      needsSeparator = false;
      if (size > 0) {
        const last = Buffer.alloc(1);
        await opened.read(last, 0, 1, size - 1);
        // A torn line left by a killed writer: our first line must not be glued to it.
        needsSeparator = last[0] !== 0x0a;
      }
    } catch (err) {
      await opened.close().catch(noop);
      throw err;
    }
    handle = opened;
    handleDay = day;
    return opened;
  }

  async function writePending(): Promise<void> {
    if (pending.size === 0) return;
    const batch = pending;
    pending = createRowTable();
    let written = false;
    try {
      const day = Math.floor(now() / DAY_MS);
      const file = handle !== undefined && handleDay === day ? handle : await openDay(day);
      const bytes = Buffer.from((needsSeparator ? '\n' : '') + encodeDeltaLine(writer, batch));
      const { bytesWritten } = await file.write(bytes, 0, bytes.length, null);
      if (bytesWritten !== bytes.length) {
        // A partial line can never parse; end it so the retry starts on a line of its own.
        needsSeparator = true;
        throw new Error(`short write to ${liveFileName(day)} (${bytesWritten} of ${bytes.length} bytes)`);
      }
      written = true;
      needsSeparator = false;
      await file.datasync();
    } catch (err) {
      // Written but not synced: the line is in the file and readers see it, so writing it again
      // would count it twice. Only an unwritten batch is kept for the next flush.
      if (!written) {
        batch.merge(pending);
        pending = batch;
      }
      if (handle !== undefined) await handle.close().catch(noop);
      handle = undefined;
      report(new Error(`could not write usage to ${dir}: ${asError(err).message}`));
    }
  }

  // ---- life cycle ----

  function startCompaction(days: readonly number[]): void {
    if (compaction !== undefined || days.length === 0 || closed) return;
    compaction = compactDays(dir, days, report).finally(() => {
      compaction = undefined;
    });
  }

  /** Writes what is pending, reads other writers' new lines, and lists the files for compaction. */
  function writeAndRead(): Promise<LedgerFile[]> {
    return serial(async () => {
      await writePending();
      await reader.snapshot(Infinity);
      pruneSpend();
      return listLedgerDir(dir);
    });
  }

  async function tick(): Promise<void> {
    if (ticking || closed) return;
    ticking = true;
    try {
      startCompaction(closedDays(await writeAndRead(), now(), compactAfterMs));
    } catch (err) {
      report(asError(err));
    } finally {
      ticking = false;
    }
  }

  await mkdir(dir, { recursive: true, mode: 0o700 });
  await compactDays(dir, closedDays(await listLedgerDir(dir), now(), compactAfterMs), report);
  // Spend of the window from files: totals (compacted days) and day files (tailed from byte 0).
  for (const totals of await reader.snapshot(spendFromDay)) {
    totals.table.forEach((hour, keyId, _model, counts) => addSpend(keyId, hour, counts[5]));
  }

  const timers = options.timers ?? realTimers;
  const timer = timers.setInterval(() => void tick(), flushIntervalMs);
  timer.unref();

  async function query(request: UsageQuery): Promise<UsageRow[]> {
    const summary = createUsageSummary(request);
    if (!(request.until > request.since)) return [];
    const fromDay = Math.floor(request.since / DAY_MS);
    await serial(async () => {
      for (const totals of await reader.snapshot(fromDay)) totals.table.forEach(summary.add);
      for (const table of reader.tails()) table.forEach(summary.add);
      pending.forEach(summary.add);
    });
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
      addSpend(keyId, hour, nanos);
    },

    query,

    async spend(keyId, sinceMs) {
      const fromDay = Math.floor(sinceMs / DAY_MS);
      if (fromDay < spendFromDay) {
        // Older than what memory keeps: ask the files.
        const rows = await query({ since: fromDay * DAY_MS, until: now() + HOUR_MS, keyId, groupBy: 'key' });
        return rows.reduce((sum, row) => sum + row.cost_usd, 0);
      }
      await serial(() => reader.snapshot(Infinity));
      return spendCached(keyId, sinceMs);
    },

    spendCached,

    async flush() {
      const files = await writeAndRead();
      await compaction;
      await compactDays(dir, closedDays(files, now(), compactAfterMs), report);
    },

    close() {
      if (closing !== undefined) return closing;
      closed = true;
      timers.clearInterval(timer);
      closing = (async () => {
        await compaction;
        await serial(writePending);
        if (handle !== undefined) await handle.close().catch(noop);
        handle = undefined;
      })();
      return closing;
    },
  };
}
