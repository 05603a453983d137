/**
 * Compaction of the file ledger: one hour (`compactAfterMs`) after its UTC day ends, a day file is
 * folded into `DAY.totals.json`, one row per hour × key × model, so files stay bounded by the
 * number of active rows rather than the number of flushes.
 *
 * The steps, under a per-day lock file (O_EXCL; a lock older than ten minutes is taken over):
 * rename the day file aside (`DAY.TOKEN.compacting.jsonl`), read the previous totals and every
 * compacting file they do not absorb yet, write the new totals atomically naming those files as
 * absorbed, then delete them. Readers (`ledger-reader.ts`) read totals before day files and skip
 * absorbed ones, so a reader racing a compaction, or a compaction that died midway, counts every
 * row once. Damaged totals are never overwritten: the error is reported and the day left alone.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DAY_MS, addLine, compactingFileName, createRowTable, decodeDeltaLine, encodeTotals, liveFileName, lockFileName, readLines, totalsFileName,
} from './ledger-format.ts';
import type { LedgerFile } from './ledger-format.ts';
import { asError, errorCode, listLedgerDir, readTotals } from './ledger-reader.ts';

const STALE_LOCK_MS = 10 * 60_000;

const noop = (): void => {};

async function writeFileAtomic(dir: string, name: string, text: string): Promise<void> {
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

async function compactDay(dir: string, day: number): Promise<void> {
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
    const previous = await readTotals(dir, day);
    const table = previous?.table ?? createRowTable();
    const absorbed = new Set(previous?.absorbed ?? []);
    const compacting = (await listLedgerDir(dir)).filter((f) => f.day === day && f.kind === 'compacting').map((f) => f.name);
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
    await writeFileAtomic(dir, totalsFileName(day), encodeTotals(compacting, table));
    for (const name of compacting) {
      await unlink(join(dir, name)).catch((err: unknown) => {
        if (errorCode(err) !== 'ENOENT') throw err;
      });
    }
  } finally {
    await unlink(lockPath).catch(noop);
  }
}

/** The days with a day file (live or being compacted) that are due for compaction at `nowMs`, oldest first. */
export function closedDays(files: readonly LedgerFile[], nowMs: number, compactAfterMs: number): number[] {
  const days = new Set<number>();
  for (const f of files) {
    if ((f.kind === 'live' || f.kind === 'compacting') && nowMs >= (f.day + 1) * DAY_MS + compactAfterMs) days.add(f.day);
  }
  return [...days].sort((a, b) => a - b);
}

/** Compacts each day in turn; a day that fails is reported and the others still go. */
export async function compactDays(dir: string, days: readonly number[], report: (error: Error) => void): Promise<void> {
  for (const day of days) {
    try {
      await compactDay(dir, day);
    } catch (err) {
      report(new Error(`could not compact usage of ${liveFileName(day)}: ${asError(err).message}`));
    }
  }
}
