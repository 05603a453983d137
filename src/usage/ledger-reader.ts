/**
 * Reading the file ledger's directory: the listing, totals files, and day files tailed
 * incrementally (by inode and byte offset), so a query or a flush tick reads only the lines added
 * since the last read. Several processes may write the directory; each line carries its writer's
 * id, and lines of other writers are handed to `onOtherRow` (for the spend totals of budgets).
 *
 * Why a snapshot reads totals first: a compaction renames a day file aside, then writes the
 * totals naming that file as absorbed, then deletes it. Reading totals before day files, and
 * skipping the absorbed ones, counts every row once whatever point a racing compaction reached.
 */
import { open, readdir } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { addLine, classifyFile, createRowTable, decodeDeltaLine, decodeTotals, readLines, totalsFileName } from './ledger-format.ts';
import type { LedgerFile, RowTable, RowTuple, Totals } from './ledger-format.ts';

interface Tail {
  /** Bytes read so far (up to the end of the last complete line). */
  offset: number;
  /** The file's first bytes, to tell a reused inode from the file read before. */
  head: Buffer;
  /** Every row read from the file, all writers. */
  table: RowTable;
}

const HEAD_BYTES = 64;
const SNAPSHOT_ATTEMPTS = 3;

export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The ledger's files in `dir` (anything else there is ignored). */
export async function listLedgerDir(dir: string): Promise<LedgerFile[]> {
  const files: LedgerFile[] = [];
  for (const name of await readdir(dir)) {
    const file = classifyFile(name);
    if (file !== undefined) files.push(file);
  }
  return files;
}

/** A day's totals, or undefined when it has none. Throws when the file is damaged. */
export async function readTotals(dir: string, day: number): Promise<Totals | undefined> {
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

export interface LedgerReaderOptions {
  dir: string;
  /** This process's writer id: its own lines are not handed to `onOtherRow`. */
  writer: string;
  /** Each row of another writer's line, the first time it is read. */
  onOtherRow(row: Readonly<RowTuple>): void;
  /** Totals that cannot be read (the snapshot goes on without them). */
  report(error: Error): void;
}

export interface LedgerReader {
  /**
   * Reads the totals of the days >= `fromDay` (and of any day with a compacting file), then
   * tails every day file those totals do not absorb. Returns the totals of the days >= `fromDay`;
   * the day files' rows are in `tails()`.
   */
  snapshot(fromDay: number): Promise<Totals[]>;
  /** The rows of every day file read so far, one table per file. */
  tails(): Iterable<RowTable>;
}

export function createLedgerReader(options: LedgerReaderOptions): LedgerReader {
  const { dir, writer, onOtherRow, report } = options;
  const tails = new Map<string, Tail>();

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
          if (line.writer !== writer) for (const row of line.rows) onOtherRow(row);
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

  async function snapshot(fromDay: number): Promise<Totals[]> {
    // Totals are read first and each once, so a compaction finishing meanwhile cannot make a row
    // count twice; a day file renamed or deleted meanwhile makes the whole snapshot start again.
    for (let attempt = 1; ; attempt++) {
      const files = await listLedgerDir(dir);
      const totals = new Map<number, Totals>();
      for (const f of files) {
        if (f.kind !== 'totals' && f.kind !== 'compacting') continue;
        if (f.kind === 'totals' && f.day < fromDay) continue;
        if (totals.has(f.day)) continue;
        try {
          const read = await readTotals(dir, f.day);
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

  return {
    snapshot,
    *tails() {
      for (const tail of tails.values()) yield tail.table;
    },
  };
}
