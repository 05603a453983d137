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
 *   one row per hour × key × model (at most about 25 × keys × models rows). Compaction renames the
 *   day file aside first, writes the totals atomically naming the renamed file as absorbed, then
 *   deletes it, under a per-day lock file; readers read totals before day files and skip absorbed
 *   ones, so a reader racing a compaction counts every row once. A process writing to a day file
 *   more than an hour after that day ended (suspended mid-flush) could lose that one flush.
 * - Several processes may share the directory (`llmux usage` reading while a server writes, or two
 *   servers in a test): each line carries its writer's random id, each process appends whole lines
 *   with O_APPEND, and each one tails the day files incrementally (by inode and byte offset).
 *   Lines of other writers also feed this process's spend totals; its own were counted at `record`.
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
 * returned, sorted by start, then key_id, then model (null first).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { TokenUsage } from '../formats/wire.ts';
import {
  DAY_MS, HOUR_MS, NANOS_PER_USD, addLine, classifyFile, compactingFileName, createRowTable, decodeDeltaLine, decodeTotals,
  encodeDeltaLine, encodeTotals, liveFileName, lockFileName, readLines, totalsFileName,
} from './ledger-format.ts';
import type { Counts, LedgerFile, RowTable, Totals } from './ledger-format.ts';

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

// ---------- query grouping (shared by every implementation) ----------

export interface UsageSummary {
  /** Adds one stored row; rows outside the query's range or key are ignored. */
  add(hour: number, keyId: string, model: string, counts: Readonly<Counts>): void;
  /** The grouped rows, sorted. */
  rows(): UsageRow[];
}

interface Group {
  start: number;
  end: number;
  keyId: string | null;
  model: string | null;
  counts: Counts;
}

/** Normalizes `groupBy`; throws RangeError for both `hour` and `day` (a caller's mistake, not a client's). */
export function groupings(groupBy: UsageQuery['groupBy']): ReadonlySet<UsageGrouping> {
  const set = new Set<UsageGrouping>(typeof groupBy === 'string' ? [groupBy] : groupBy);
  for (const g of set) if (g !== 'hour' && g !== 'day' && g !== 'model' && g !== 'key') throw new RangeError(`unknown usage grouping ${String(g)}`);
  if (set.has('hour') && set.has('day')) throw new RangeError('group usage by hour or by day, not both');
  return set;
}

/** Grouping of stored rows (hour × key × model) into `UsageRow`s for one query. */
export function createUsageSummary(query: UsageQuery): UsageSummary {
  const by = groupings(query.groupBy);
  const fromHour = Math.floor(query.since / HOUR_MS);
  const toHour = Math.ceil(query.until / HOUR_MS);
  const fromMs = fromHour * HOUR_MS;
  const toMs = toHour * HOUR_MS;
  const onlyKey = query.keyId === undefined || query.keyId === 'all' ? undefined : query.keyId;
  const groups = new Map<string, Group>();

  return {
    add(hour, keyId, model, counts) {
      if (hour < fromHour || hour >= toHour) return;
      if (onlyKey !== undefined && keyId !== onlyKey) return;
      let start = fromMs;
      let end = toMs;
      if (by.has('hour')) {
        start = hour * HOUR_MS;
        end = start + HOUR_MS;
      } else if (by.has('day')) {
        const dayStart = Math.floor(hour / 24) * DAY_MS;
        start = Math.max(dayStart, fromMs);
        end = Math.min(dayStart + DAY_MS, toMs);
      }
      const groupKey = by.has('key') ? keyId : onlyKey ?? null;
      const groupModel = by.has('model') ? model : null;
      const id = `${start}\u0000${groupKey ?? ''}\u0000${groupModel ?? ''}`;
      const group = groups.get(id);
      if (group === undefined) {
        groups.set(id, { start, end, keyId: groupKey, model: groupModel, counts: [counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]] });
        return;
      }
      for (let i = 0; i < 6; i++) group.counts[i] = (group.counts[i] as number) + (counts[i] as number);
    },
    rows() {
      const sorted = [...groups.values()].sort((a, b) => a.start - b.start || compareNullable(a.keyId, b.keyId) || compareNullable(a.model, b.model));
      return sorted.map((g) => ({
        start: new Date(g.start).toISOString(),
        end: new Date(g.end).toISOString(),
        key_id: g.keyId,
        model: g.model,
        requests: g.counts[0],
        input_tokens: g.counts[1],
        output_tokens: g.counts[2],
        cache_read_input_tokens: g.counts[3],
        cache_creation_input_tokens: g.counts[4],
        cost_usd: g.counts[5] / NANOS_PER_USD,
      }));
    },
  };
}

function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

// ---------- the file ledger ----------

export interface FileLedgerOptions {
  /** The usage directory (`$LLMUX_HOME/usage`); created when missing. */
  dir: string;
  /** Clock for `at` clamping, day files and compaction (default `Date.now`). */
  now?: () => number;
  /** How often pending usage is written and other writers' lines are read (default 1000). */
  flushIntervalMs?: number;
  /** How long after its UTC day ends a day file is compacted (default one hour). */
  compactAfterMs?: number;
  /** Write, read and compaction failures (default: one line on stderr per new message). */
  onError?: (error: Error) => void;
}

interface Tail {
  /** Bytes read so far (up to the end of the last complete line). */
  offset: number;
  /** The file's first bytes, to tell a reused inode from the file read before. */
  head: Buffer;
  /** Every row read from the file, all writers. */
  table: RowTable;
}

const HEAD_BYTES = 64;
const STALE_LOCK_MS = 10 * 60_000;
const SNAPSHOT_ATTEMPTS = 3;

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function toNanos(usd: unknown): number {
  return typeof usd === 'number' && Number.isFinite(usd) && usd > 0 ? Math.round(usd * NANOS_PER_USD) : 0;
}

/** First UTC day (index) of the month before the one holding `ms`: how far back spend is kept. */
function spendWindowStart(ms: number): number {
  const date = new Date(ms);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() - 1, 1) / DAY_MS;
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
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
  const tails = new Map<string, Tail>();
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

  // ---- reading ----

  async function listDir(): Promise<LedgerFile[]> {
    const files: LedgerFile[] = [];
    for (const name of await readdir(dir)) {
      const file = classifyFile(name);
      if (file !== undefined) files.push(file);
    }
    return files;
  }

  async function readTotals(day: number): Promise<Totals | undefined> {
    let text: string;
    try {
      const file = await open(join(dir, totalsFileName(day)), 'r');
      try {
        text = await file.readFile('utf8');
      } finally {
        await file.close();
      }
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw err;
    }
    const totals = decodeTotals(text);
    if (totals === undefined) throw new Error(`${totalsFileName(day)} is damaged; it is left as it is and not counted`);
    return totals;
  }

  async function sameHead(file: FileHandle, head: Buffer): Promise<boolean> {
    if (head.length === 0) return true;
    const bytes = Buffer.alloc(head.length);
    const { bytesRead } = await file.read(bytes, 0, head.length, 0);
    return bytesRead === head.length && bytes.equals(head);
  }

  /**
   * Reads a day file's new complete lines; returns its tail key, or undefined for something that
   * is not a regular file. Throws ENOENT when it is gone.
   */
  async function tailFile(name: string): Promise<string | undefined> {
    const file = await open(join(dir, name), 'r');
    try {
      const info = await file.stat();
      if (!info.isFile()) return undefined;
      const key = `${info.dev}:${info.ino}`;
      let tail = tails.get(key);
      if (tail !== undefined && (info.size < tail.offset || !(await sameHead(file, tail.head)))) tail = undefined;
      if (tail === undefined) {
        tail = { offset: 0, head: Buffer.alloc(0), table: createRowTable() };
        tails.set(key, tail);
      }
      if (info.size > tail.offset) {
        const table = tail.table;
        tail.offset = await readLines(file, tail.offset, info.size, (text) => {
          const line = decodeDeltaLine(text);
          if (line === undefined) return;
          addLine(table, line);
          if (line.writer !== writer) for (const row of line.rows) addSpend(row[1], row[0], row[8]);
        });
        if (tail.head.length < HEAD_BYTES && tail.offset > tail.head.length) {
          const head = Buffer.alloc(Math.min(HEAD_BYTES, tail.offset));
          const { bytesRead } = await file.read(head, 0, head.length, 0);
          tail.head = head.subarray(0, bytesRead);
        }
      }
      return key;
    } finally {
      await file.close();
    }
  }

  /**
   * Reads the totals of the days >= `fromDay` (and of any day with a compacting file), then
   * tails every day file those totals do not absorb. Totals are read first and each once, so a
   * compaction finishing meanwhile cannot make a row count twice; a day file renamed or deleted
   * meanwhile makes the whole snapshot start again.
   */
  async function snapshot(fromDay: number): Promise<Totals[]> {
    for (let attempt = 1; ; attempt++) {
      const files = await listDir();
      const totals = new Map<number, Totals>();
      for (const f of files) {
        if (f.kind !== 'totals' && f.kind !== 'compacting') continue;
        if (f.kind === 'totals' && f.day < fromDay) continue;
        if (totals.has(f.day)) continue;
        try {
          const read = await readTotals(f.day);
          if (read !== undefined) totals.set(f.day, read);
        } catch (err) {
          report(asError(err));
        }
      }
      const seen = new Set<string>();
      try {
        for (const f of files) {
          if (f.kind === 'live' || (f.kind === 'compacting' && totals.get(f.day)?.absorbed.includes(f.name) !== true)) {
            const key = await tailFile(f.name);
            if (key !== undefined) seen.add(key);
          }
        }
      } catch (err) {
        if (errorCode(err) === 'ENOENT' && attempt < SNAPSHOT_ATTEMPTS) continue;
        throw err;
      }
      for (const key of tails.keys()) if (!seen.has(key)) tails.delete(key);
      return [...totals.entries()].filter(([day]) => day >= fromDay).map(([, t]) => t);
    }
  }

  // ---- compaction ----

  async function writeFileAtomic(name: string, text: string): Promise<void> {
    const tmp = join(dir, `${name}.${randomBytes(6).toString('hex')}.tmp`);
    const file = await open(tmp, 'wx', 0o600);
    try {
      await file.writeFile(text, 'utf8');
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, join(dir, name));
    try {
      const directory = await open(dir, 'r');
      try {
        await directory.sync();
      } finally {
        await directory.close();
      }
    } catch {
      // Some filesystems refuse a directory fsync; the rename is still atomic.
    }
  }

  async function compactDay(day: number): Promise<void> {
    const lockPath = join(dir, lockFileName(day));
    try {
      await (await open(lockPath, 'wx', 0o600)).close();
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      // Another process is compacting this day, or died doing it: a lock this old is taken over next time.
      const info = await stat(lockPath).catch(() => undefined);
      if (info !== undefined && Date.now() - info.mtimeMs > STALE_LOCK_MS) await unlink(lockPath).catch(noop);
      return;
    }
    try {
      try {
        await rename(join(dir, liveFileName(day)), join(dir, compactingFileName(day, randomBytes(8).toString('hex'))));
      } catch (err) {
        if (errorCode(err) !== 'ENOENT') throw err;
      }
      const previous = await readTotals(day);
      const table = previous?.table ?? createRowTable();
      const absorbed = new Set(previous?.absorbed ?? []);
      const compacting = (await listDir()).filter((f) => f.day === day && f.kind === 'compacting').map((f) => f.name);
      for (const name of compacting) {
        if (absorbed.has(name)) continue;
        const file = await open(join(dir, name), 'r');
        try {
          const { size } = await file.stat();
          await readLines(file, 0, size, (text) => {
            const line = decodeDeltaLine(text);
            if (line !== undefined) addLine(table, line);
          });
        } finally {
          await file.close();
        }
      }
      await writeFileAtomic(totalsFileName(day), encodeTotals(compacting, table));
      for (const name of compacting) {
        await unlink(join(dir, name)).catch((err: unknown) => {
          if (errorCode(err) !== 'ENOENT') throw err;
        });
      }
    } finally {
      await unlink(lockPath).catch(noop);
    }
  }

  function closedDays(files: readonly LedgerFile[]): number[] {
    const nowMs = now();
    const days = new Set<number>();
    for (const f of files) {
      if ((f.kind === 'live' || f.kind === 'compacting') && nowMs >= (f.day + 1) * DAY_MS + compactAfterMs) days.add(f.day);
    }
    return [...days].sort((a, b) => a - b);
  }

  async function compact(days: readonly number[]): Promise<void> {
    for (const day of days) {
      try {
        await compactDay(day);
      } catch (err) {
        report(new Error(`could not compact usage of ${liveFileName(day)}: ${asError(err).message}`));
      }
    }
  }

  function startCompaction(days: readonly number[]): void {
    if (compaction !== undefined || days.length === 0 || closed) return;
    compaction = compact(days).finally(() => {
      compaction = undefined;
    });
  }

  // ---- life cycle ----

  async function tick(): Promise<void> {
    if (ticking || closed) return;
    ticking = true;
    try {
      let files: LedgerFile[] = [];
      await serial(async () => {
        await writePending();
        await snapshot(Infinity);
        pruneSpend();
        files = await listDir();
      });
      startCompaction(closedDays(files));
    } catch (err) {
      report(asError(err));
    } finally {
      ticking = false;
    }
  }

  await mkdir(dir, { recursive: true, mode: 0o700 });
  await compact(closedDays(await listDir()));
  // Spend of the window from files: totals (compacted days) and day files (tailed from byte 0).
  for (const totals of await snapshot(spendFromDay)) {
    totals.table.forEach((hour, keyId, _model, counts) => addSpend(keyId, hour, counts[5]));
  }

  const timer = setInterval(() => void tick(), flushIntervalMs);
  timer.unref();

  async function query(request: UsageQuery): Promise<UsageRow[]> {
    const summary = createUsageSummary(request);
    if (!(request.until > request.since)) return [];
    const fromDay = Math.floor(request.since / DAY_MS);
    await serial(async () => {
      for (const totals of await snapshot(fromDay)) totals.table.forEach(summary.add);
      for (const tail of tails.values()) tail.table.forEach(summary.add);
      pending.forEach(summary.add);
    });
    return summary.rows();
  }

  return {
    record(entry) {
      if (closed) return;
      const nowMs = now();
      // Usage is never later than its write, which keeps every row in a file of its day or later.
      const at = typeof entry.at === 'number' && entry.at <= nowMs ? entry.at : nowMs;
      const hour = Math.floor(at / HOUR_MS);
      const keyId = String(entry.keyId);
      const nanos = toNanos(entry.costUsd);
      pending.add(hour, keyId, String(entry.model), [
        1, count(entry.inputTokens), count(entry.outputTokens), count(entry.cacheReadTokens), count(entry.cacheCreationTokens), nanos,
      ]);
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
      await serial(() => snapshot(Infinity));
      return spendCached(keyId, sinceMs);
    },

    spendCached,

    async flush() {
      const files = await serial(async () => {
        await writePending();
        await snapshot(Infinity);
        pruneSpend();
        return listDir();
      });
      await compaction;
      await compact(closedDays(files));
    },

    close() {
      if (closing !== undefined) return closing;
      closed = true;
      clearInterval(timer);
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
