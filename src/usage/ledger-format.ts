/**
 * The file ledger's data on disk and in memory: aggregated rows keyed by UTC hour × key × model,
 * the JSON line one flush appends, the totals file a compaction writes, the file names, and a
 * chunked reader of complete lines. Pure helpers; `ledger.ts` decides when to read and write.
 *
 * Files in the usage directory (`$LLMUX_HOME/usage/`), named by the UTC day on which they were
 * WRITTEN (not the day of the usage they hold, see `ledger.ts` for why):
 * - `YYYY-MM-DD.jsonl`: one line per flush, `{"v":1,"w":WRITER,"r":[ROW,…]}\n`, where ROW is
 *   `[hour, key_id, model, requests, input, output, cache_read, cache_creation, cost_nanos]`
 *   (hour = whole hours since the Unix epoch, cost in whole nano-dollars). Appended only.
 * - `YYYY-MM-DD.TOKEN.compacting.jsonl`: the same file renamed by a compaction in progress.
 * - `YYYY-MM-DD.totals.json`: `{"v":1,"absorbed":[NAME,…],"rows":[ROW,…]}`, one row per hour ×
 *   key × model, written atomically; `absorbed` names the compacting files it already contains.
 * - `YYYY-MM-DD.lock`: held by the one process compacting that day.
 */
import { parseJsonObject } from '../common/json.ts';
import type { FileHandle } from 'node:fs/promises';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** Costs are kept in whole nano-dollars, so sums are exact and never drift. */
export const NANOS_PER_USD = 1_000_000_000;

/** requests, input, output, cache-read and cache-creation tokens, cost in nano-dollars. */
export type Counts = [number, number, number, number, number, number];

/** One aggregated row as stored: hour index, key id, model, then the six counts. */
export type RowTuple = [number, string, string, number, number, number, number, number, number];

/** One request's counts as a row adds them: numbers that are not finite and positive count 0, tokens whole, cost in nano-dollars. */
export function entryCounts(entry: { inputTokens?: unknown; outputTokens?: unknown; cacheReadTokens?: unknown; cacheCreationTokens?: unknown; costUsd?: unknown }): Counts {
  return [1, count(entry.inputTokens), count(entry.outputTokens), count(entry.cacheReadTokens), count(entry.cacheCreationTokens), toNanos(entry.costUsd)];
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** A cost in whole nano-dollars: anything not finite and positive costs 0. */
export function toNanos(usd: unknown): number {
  return typeof usd === 'number' && Number.isFinite(usd) && usd > 0 ? Math.round(usd * NANOS_PER_USD) : 0;
}

/**
 * The hour a usage entry is kept under: its `at`, but never later than its write (`nowMs`), which
 * keeps every row in a file of its day or later and no spend in an hour that has not come.
 */
export function entryHour(at: unknown, nowMs: number): number {
  return Math.floor((typeof at === 'number' && at <= nowMs ? at : nowMs) / HOUR_MS);
}

/** First UTC day (index) of the month before the one holding `ms`: how far back spend is kept. */
export function spendWindowStart(ms: number): number {
  const date = new Date(ms);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() - 1, 1) / DAY_MS;
}

/** Rows aggregated by hour × key × model. */
export interface RowTable {
  /** Adds `counts` to the row of (hour, keyId, model), creating it at zero. */
  add(hour: number, keyId: string, model: string, counts: Readonly<Counts>): void;
  /** Visits every row; `counts` must not be kept or changed. */
  forEach(visit: (hour: number, keyId: string, model: string, counts: Readonly<Counts>) => void): void;
  /** Adds every row of `other` to this table. */
  merge(other: RowTable): void;
  /** Number of rows. */
  readonly size: number;
}

/** An empty table. Nested maps, so adding to a known row builds no key string. */
export function createRowTable(): RowTable {
  const hours = new Map<number, Map<string, Map<string, Counts>>>();
  let size = 0;

  const table: RowTable = {
    add(hour, keyId, model, counts) {
      let keys = hours.get(hour);
      if (keys === undefined) hours.set(hour, keys = new Map());
      let models = keys.get(keyId);
      if (models === undefined) keys.set(keyId, models = new Map());
      const row = models.get(model);
      if (row === undefined) {
        models.set(model, [counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]]);
        size++;
        return;
      }
      for (let i = 0; i < 6; i++) row[i] = (row[i] as number) + (counts[i] as number);
    },
    forEach(visit) {
      for (const [hour, keys] of hours) {
        for (const [keyId, models] of keys) {
          for (const [model, counts] of models) visit(hour, keyId, model, counts);
        }
      }
    },
    merge(other) {
      other.forEach((hour, keyId, model, counts) => table.add(hour, keyId, model, counts));
    },
    get size() {
      return size;
    },
  };
  return table;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The row as stored, or undefined when any field has the wrong type (a damaged line). */
function readRow(value: unknown): RowTuple | undefined {
  if (!Array.isArray(value) || value.length !== 9) return undefined;
  const [hour, keyId, model] = value as unknown[];
  if (!isCount(hour) || typeof keyId !== 'string' || typeof model !== 'string') return undefined;
  for (let i = 3; i < 9; i++) if (!isCount(value[i])) return undefined;
  return value as RowTuple;
}

function rowsOf(table: RowTable): RowTuple[] {
  const rows: RowTuple[] = [];
  table.forEach((hour, keyId, model, c) => rows.push([hour, keyId, model, c[0], c[1], c[2], c[3], c[4], c[5]]));
  return rows;
}

function addRows(table: RowTable, rows: readonly RowTuple[]): void {
  for (const r of rows) table.add(r[0], r[1], r[2], [r[3], r[4], r[5], r[6], r[7], r[8]]);
}

/** One flush of one writer, as the line appended to a day file (newline included). */
export function encodeDeltaLine(writer: string, table: RowTable): string {
  return `${JSON.stringify({ v: 1, w: writer, r: rowsOf(table) })}\n`;
}

export interface DeltaLine {
  writer: string;
  rows: RowTuple[];
}

/**
 * A line read back, or undefined when it is not one of ours: torn by a crash, damaged, or from a
 * newer format version. A line with one bad row is dropped whole, so a flush counts all or nothing.
 */
export function decodeDeltaLine(text: string): DeltaLine | undefined {
  const value = parseJsonObject(text);
  if (value === undefined) return undefined;
  const { v, w, r } = value;
  if (v !== 1 || typeof w !== 'string' || !Array.isArray(r)) return undefined;
  const rows: RowTuple[] = [];
  for (const item of r) {
    const row = readRow(item);
    if (row === undefined) return undefined;
    rows.push(row);
  }
  return { writer: w, rows };
}

/** Adds a decoded line's rows to a table. */
export function addLine(table: RowTable, line: DeltaLine): void {
  addRows(table, line.rows);
}

export interface Totals {
  /** Names of the compacting files whose lines these totals already hold. */
  absorbed: string[];
  table: RowTable;
}

/** A totals file's text. */
export function encodeTotals(absorbed: readonly string[], table: RowTable): string {
  return `${JSON.stringify({ v: 1, absorbed, rows: rowsOf(table) })}\n`;
}

/** A totals file read back, or undefined when it is damaged (it is written atomically, so it never is torn). */
export function decodeTotals(text: string): Totals | undefined {
  const value = parseJsonObject(text);
  if (value === undefined) return undefined;
  const { v, absorbed, rows } = value;
  if (v !== 1 || !Array.isArray(absorbed) || !Array.isArray(rows)) return undefined;
  if (!absorbed.every((name) => typeof name === 'string')) return undefined;
  const table = createRowTable();
  const checked: RowTuple[] = [];
  for (const item of rows) {
    const row = readRow(item);
    if (row === undefined) return undefined;
    checked.push(row);
  }
  addRows(table, checked);
  return { absorbed: absorbed as string[], table };
}

// ---------- names ----------

/** `YYYY-MM-DD` of a UTC day index (days since the epoch). */
export function dayName(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

export type LedgerFileKind = 'live' | 'compacting' | 'totals' | 'lock';

export interface LedgerFile {
  name: string;
  /** The UTC day index the file belongs to. */
  day: number;
  kind: LedgerFileKind;
}

const FILE_NAME = /^(\d{4}-\d{2}-\d{2})(?:\.jsonl|\.([0-9a-f]{8,32})\.compacting\.jsonl|\.totals\.json|\.lock)$/;

/** What a directory entry is, or undefined for anything else (temp files, strangers). */
export function classifyFile(name: string): LedgerFile | undefined {
  const match = FILE_NAME.exec(name);
  if (match === null) return undefined;
  const ms = Date.parse(`${match[1] as string}T00:00:00Z`);
  if (!Number.isFinite(ms)) return undefined;
  const day = ms / DAY_MS;
  if (name.endsWith('.compacting.jsonl')) return { name, day, kind: 'compacting' };
  if (name.endsWith('.jsonl')) return { name, day, kind: 'live' };
  if (name.endsWith('.totals.json')) return { name, day, kind: 'totals' };
  return { name, day, kind: 'lock' };
}

export const liveFileName = (day: number): string => `${dayName(day)}.jsonl`;
export const compactingFileName = (day: number, token: string): string => `${dayName(day)}.${token}.compacting.jsonl`;
export const totalsFileName = (day: number): string => `${dayName(day)}.totals.json`;
export const lockFileName = (day: number): string => `${dayName(day)}.lock`;

// ---------- reading lines ----------

const NEWLINE = 0x0a;
const CHUNK_BYTES = 1 << 20;

/**
 * Reads the complete lines of `handle` between byte `from` and byte `to`, calling `onLine` with
 * each one (without its newline). Returns the offset just after the last complete line: bytes of
 * an unfinished last line (another process's write in progress, or a line torn by a crash) are
 * left for the next read. Reads 1 MiB at a time; only an unfinished line is carried over.
 */
export async function readLines(handle: FileHandle, from: number, to: number, onLine: (text: string) => void): Promise<number> {
  let position = from;
  let consumed = from;
  let carry: Buffer | undefined;
  while (position < to) {
    const length = Math.min(CHUNK_BYTES, to - position);
    const chunk = Buffer.allocUnsafe(length);
    const { bytesRead } = await handle.read(chunk, 0, length, position);
    if (bytesRead === 0) break;
    // File offset of bytes[0]: the carried part of an unfinished line comes first.
    const bytesOffset = position - (carry === undefined ? 0 : carry.length);
    position += bytesRead;
    const bytes = carry === undefined ? chunk.subarray(0, bytesRead) : Buffer.concat([carry, chunk.subarray(0, bytesRead)]);
    let start = 0;
    for (let nl = bytes.indexOf(NEWLINE); nl !== -1; nl = bytes.indexOf(NEWLINE, start)) {
      if (nl > start) onLine(bytes.toString('utf8', start, nl));
      start = nl + 1;
    }
    consumed = bytesOffset + start;
    carry = start < bytes.length ? Buffer.from(bytes.subarray(start)) : undefined;
  }
  return consumed;
}
