import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createFileLedger, createUsageSummary } from '../../src/usage/ledger.ts';
import type { UsageEntry, UsageLedger } from '../../src/usage/ledger.ts';
import { createManualClock } from '../helpers/clock.ts';
import { waitUntil } from '../helpers/wait.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 14, 10, 0); // 2026-03-14T10:00Z
const LEDGER_URL = new URL('../../src/usage/ledger.ts', import.meta.url).pathname;

const roots: string[] = [];
function tempDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'llmux-usage-'));
  roots.push(root);
  return join(root, 'usage');
}
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function clock(start = T0 + 3 * HOUR) {
  const state = { ms: start };
  return { now: () => state.ms, set: (ms: number) => { state.ms = ms; } };
}

function entry(keyId: string, model: string, at: number, input: number, output: number, costUsd: number, cacheRead = 0, cacheCreation = 0): UsageEntry {
  return { keyId, model, at, inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheCreationTokens: cacheCreation, costUsd };
}

/** Known records over two days, two keys and two models. */
function recordSample(ledger: UsageLedger): void {
  ledger.record(entry('key_a', 'm1', T0 + 5 * 60_000, 100, 50, 0.001234, 10, 5));
  ledger.record(entry('key_a', 'm1', T0 + 50 * 60_000, 200, 20, 0.002));
  ledger.record(entry('key_a', 'm2', T0 + HOUR + 10 * 60_000, 300, 30, 0.1));
  ledger.record(entry('key_b', 'm1', T0 + HOUR + 20 * 60_000, 400, 40, 0.3, 7, 0));
  ledger.record(entry('key_b', 'm2', T0 - 11 * HOUR + 30 * 60_000, 500, 60, 1.5)); // 2026-03-13T23:30Z
}

const RANGE = { since: T0 - DAY, until: T0 + DAY };

function open(dir: string, now: () => number, extra: { onError?: (e: Error) => void; compactAfterMs?: number } = {}): Promise<UsageLedger> {
  return createFileLedger({ dir, now, flushIntervalMs: 60_000, ...extra });
}

describe('usage ledger: aggregation and queries', () => {
  it('sums requests, the four token counts and cost exactly per hour, key and model', async () => {
    const c = clock();
    const ledger = await open(tempDir(), c.now);
    recordSample(ledger);
    const rows = await ledger.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] });
    assert.deepEqual(rows, [
      { start: '2026-03-13T23:00:00.000Z', end: '2026-03-14T00:00:00.000Z', key_id: 'key_b', model: 'm2', requests: 1, input_tokens: 500, output_tokens: 60, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost_usd: 1.5 },
      { start: '2026-03-14T10:00:00.000Z', end: '2026-03-14T11:00:00.000Z', key_id: 'key_a', model: 'm1', requests: 2, input_tokens: 300, output_tokens: 70, cache_read_input_tokens: 10, cache_creation_input_tokens: 5, cost_usd: 0.003234 },
      { start: '2026-03-14T11:00:00.000Z', end: '2026-03-14T12:00:00.000Z', key_id: 'key_a', model: 'm2', requests: 1, input_tokens: 300, output_tokens: 30, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost_usd: 0.1 },
      { start: '2026-03-14T11:00:00.000Z', end: '2026-03-14T12:00:00.000Z', key_id: 'key_b', model: 'm1', requests: 1, input_tokens: 400, output_tokens: 40, cache_read_input_tokens: 7, cache_creation_input_tokens: 0, cost_usd: 0.3 },
    ]);
    await ledger.close();
  });

  it('keeps cost exact over many small amounts (no floating-point drift)', async () => {
    const ledger = await open(tempDir(), clock().now);
    for (let i = 0; i < 10_000; i++) ledger.record(entry('key_a', 'm1', T0, 1, 1, 0.0000001));
    const [row] = await ledger.query({ ...RANGE, groupBy: 'key' });
    assert.equal(row?.cost_usd, 0.001);
    assert.equal(row?.requests, 10_000);
    await ledger.close();
  });

  it('groups by day, model and key, with null for what is summed over', async () => {
    const ledger = await open(tempDir(), clock().now);
    recordSample(ledger);
    const byDay = await ledger.query({ ...RANGE, groupBy: 'day' });
    assert.deepEqual(byDay.map((r) => [r.start, r.end, r.key_id, r.model, r.requests, r.cost_usd]), [
      ['2026-03-13T10:00:00.000Z', '2026-03-14T00:00:00.000Z', null, null, 1, 1.5],
      ['2026-03-14T00:00:00.000Z', '2026-03-15T00:00:00.000Z', null, null, 4, 0.403234],
    ], 'the first day is clipped to the range');
    const byModel = await ledger.query({ ...RANGE, groupBy: 'model' });
    assert.deepEqual(byModel.map((r) => [r.start, r.end, r.key_id, r.model, r.requests, r.input_tokens]), [
      ['2026-03-13T10:00:00.000Z', '2026-03-15T10:00:00.000Z', null, 'm1', 3, 700],
      ['2026-03-13T10:00:00.000Z', '2026-03-15T10:00:00.000Z', null, 'm2', 2, 800],
    ]);
    const byKey = await ledger.query({ ...RANGE, groupBy: 'key' });
    assert.deepEqual(byKey.map((r) => [r.key_id, r.model, r.requests, r.cost_usd]), [['key_a', null, 3, 0.103234], ['key_b', null, 2, 1.8]]);
    const dayModel = await ledger.query({ ...RANGE, groupBy: ['day', 'model'] });
    assert.deepEqual(dayModel.map((r) => [r.start.slice(0, 10), r.model, r.requests]), [['2026-03-13', 'm2', 1], ['2026-03-14', 'm1', 3], ['2026-03-14', 'm2', 1]]);
    await ledger.close();
  });

  it('filters one key, which then names every row, and treats "all" as every key', async () => {
    const ledger = await open(tempDir(), clock().now);
    recordSample(ledger);
    const own = await ledger.query({ ...RANGE, keyId: 'key_b', groupBy: 'model' });
    assert.deepEqual(own.map((r) => [r.key_id, r.model, r.requests]), [['key_b', 'm1', 1], ['key_b', 'm2', 1]]);
    const all = await ledger.query({ ...RANGE, keyId: 'all', groupBy: 'model' });
    assert.deepEqual(all.map((r) => [r.key_id, r.model, r.requests]), [[null, 'm1', 3], [null, 'm2', 2]]);
    assert.deepEqual(await ledger.query({ ...RANGE, keyId: 'key_nobody', groupBy: 'day' }), []);
    await ledger.close();
  });

  it('counts the hour buckets that overlap [since, until): until is exclusive and ranges widen to whole hours', async () => {
    const ledger = await open(tempDir(), clock().now);
    recordSample(ledger);
    const total = async (since: number, until: number) => (await ledger.query({ since, until, groupBy: 'key' })).reduce((n, r) => n + r.requests, 0);
    assert.equal(await total(T0, T0 + HOUR), 2, 'exactly the 10:00 hour');
    assert.equal(await total(T0 + 30 * 60_000, T0 + HOUR + 1), 4, '10:30 to 11:00:00.001 overlaps both hours');
    assert.equal(await total(T0 + HOUR, T0 + 2 * HOUR), 2, 'the 10:00 hour ends where 11:00 starts');
    assert.equal(await total(T0 - DAY, T0), 1, 'only the day before');
    assert.equal(await total(T0, T0), 0, 'an empty range');
    assert.equal(await total(T0 + HOUR, T0), 0, 'a reversed range');
    const [row] = await ledger.query({ since: T0 + 30 * 60_000, until: T0 + HOUR + 1, groupBy: 'model' });
    assert.equal(row?.start, '2026-03-14T10:00:00.000Z');
    assert.equal(row?.end, '2026-03-14T12:00:00.000Z');
    await ledger.close();
  });

  it('refuses to group by hour and by day at once', async () => {
    const ledger = await open(tempDir(), clock().now);
    await assert.rejects(ledger.query({ ...RANGE, groupBy: ['hour', 'day'] }), RangeError);
    await ledger.close();
  });

  it('counts usage dated in the future at the present hour, and treats bad numbers as zero', async () => {
    const c = clock(T0);
    const ledger = await open(tempDir(), c.now);
    ledger.record(entry('key_a', 'm1', T0 + 5 * HOUR, 10, 1, 0.5));
    ledger.record({ keyId: 'key_a', model: 'm1', at: T0, inputTokens: -5, outputTokens: Number.NaN, cacheReadTokens: 2.7, cacheCreationTokens: Infinity, costUsd: -1 });
    const rows = await ledger.query({ since: T0, until: T0 + DAY, groupBy: 'hour' });
    assert.deepEqual(rows.map((r) => [r.start, r.requests, r.input_tokens, r.output_tokens, r.cache_read_input_tokens, r.cache_creation_input_tokens, r.cost_usd]), [
      ['2026-03-14T10:00:00.000Z', 2, 10, 1, 2, 0, 0.5],
    ]);
    await ledger.close();
  });

  it('a summary can be fed by any store: it filters by range and key and sorts nulls first', () => {
    const summary = createUsageSummary({ since: T0, until: T0 + 2 * HOUR, keyId: 'k', groupBy: ['hour', 'model'] });
    const hour = T0 / HOUR;
    summary.add(hour + 1, 'k', 'b', [1, 1, 1, 1, 1, 1000]);
    summary.add(hour, 'k', 'b', [1, 0, 0, 0, 0, 0]);
    summary.add(hour, 'k', 'a', [1, 0, 0, 0, 0, 0]);
    summary.add(hour, 'other', 'a', [5, 0, 0, 0, 0, 0]);
    summary.add(hour + 2, 'k', 'a', [7, 0, 0, 0, 0, 0]);
    assert.deepEqual(summary.rows().map((r) => [r.start.slice(11, 13), r.key_id, r.model, r.requests, r.cost_usd]), [
      ['10', 'k', 'a', 1, 0], ['10', 'k', 'b', 1, 0], ['11', 'k', 'b', 1, 0.000001],
    ]);
  });
});

describe('usage ledger: files', () => {
  it('writes at flush time, reads everything back after reopening, and counts nothing twice', async () => {
    const dir = tempDir();
    const c = clock();
    const first = await open(dir, c.now);
    recordSample(first);
    assert.deepEqual(readdirSync(dir), [], 'record does no I/O');
    const before = await first.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] });
    await first.flush();
    assert.deepEqual(readdirSync(dir), ['2026-03-14.jsonl']);
    assert.deepEqual(await first.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] }), before, 'flushed rows are not counted again');
    await first.close();
    const second = await open(dir, c.now);
    assert.deepEqual(await second.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] }), before);
    assert.equal(second.spendCached('key_b', T0 - DAY), 1.8);
    assert.equal(second.spendCached('key_b', T0 - 10 * HOUR), 0.3, 'from the start of 2026-03-14');
    await second.close();
  });

  it('writes on its own every flushIntervalMs, and compacts closed days in the background', async () => {
    const dir = tempDir();
    const c = createManualClock(T0 + 3 * HOUR);
    const ledger = await createFileLedger({ dir, now: c.now, timers: c.timers, flushIntervalMs: 20 });
    ledger.record(entry('key_a', 'm1', T0, 1, 1, 0.5));
    c.advance(19);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(readdirSync(dir), [], 'nothing written before the interval');
    c.advance(1);
    await waitUntil(() => readdirSync(dir).includes('2026-03-14.jsonl') && readFileSync(join(dir, '2026-03-14.jsonl'), 'utf8').endsWith('\n'), 'the flush 20 ms after the record');
    c.jump(Date.UTC(2026, 2, 15, 2));
    // A tick that finds the last one still at work skips; each look lets one more interval pass.
    await waitUntil(() => {
      c.advance(20);
      return readdirSync(dir).join() === '2026-03-14.totals.json';
    }, 'the compaction of the closed day');
    assert.deepEqual((await ledger.query({ ...RANGE, groupBy: 'key' })).map((r) => [r.requests, r.cost_usd]), [[1, 0.5]]);
    await ledger.close();
  });

  it('appends one line per flush holding one row per hour × key × model, not one per request', async () => {
    const dir = tempDir();
    const ledger = await open(dir, clock().now);
    for (let i = 0; i < 500; i++) ledger.record(entry('key_a', 'm1', T0 + i, 1, 1, 0.001));
    await ledger.flush();
    await ledger.flush(); // nothing pending: nothing written
    ledger.record(entry('key_a', 'm1', T0, 1, 1, 0.001));
    await ledger.close();
    const lines = readFileSync(join(dir, '2026-03-14.jsonl'), 'utf8').split('\n');
    assert.equal(lines.length, 3, 'two lines and the final newline');
    const first = JSON.parse(lines[0] as string) as { v: number; w: string; r: unknown[] };
    assert.equal(first.v, 1);
    assert.match(first.w, /^[0-9a-f]{16}$/);
    assert.deepEqual(first.r, [[T0 / HOUR, 'key_a', 'm1', 500, 500, 500, 0, 0, 500_000_000]]);
  });

  it('ignores a torn last line, and the next writer keeps its own lines apart from it', async () => {
    const dir = tempDir();
    const c = clock();
    const first = await open(dir, c.now);
    first.record(entry('key_a', 'm1', T0, 10, 1, 0.25));
    await first.close();
    const file = join(dir, '2026-03-14.jsonl');
    // What a crash mid-write leaves: the start of a line, no newline.
    appendFileSync(file, '{"v":1,"w":"dead","r":[[491786,"key_a","m1",1000,1');
    const second = await open(dir, c.now);
    assert.deepEqual((await second.query({ ...RANGE, groupBy: 'key' })).map((r) => [r.requests, r.cost_usd]), [[1, 0.25]]);
    second.record(entry('key_a', 'm1', T0, 10, 1, 0.5));
    await second.close();
    const third = await open(dir, c.now);
    assert.deepEqual((await third.query({ ...RANGE, groupBy: 'key' })).map((r) => [r.requests, r.cost_usd]), [[2, 0.75]]);
    assert.equal(third.spendCached('key_a', T0), 0.75);
    await third.close();
    const lines = readFileSync(file, 'utf8').split('\n');
    assert.equal(lines.length, 4);
    assert.ok(lines[1]?.startsWith('{"v":1,"w":"dead"'), 'the torn fragment stays on its own line');
  });

  it('skips damaged lines and rows of the wrong shape without losing the rest', async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const good = JSON.stringify({ v: 1, w: 'other', r: [[T0 / HOUR, 'key_a', 'm1', 1, 2, 3, 4, 5, 6]] });
    writeFileSync(join(dir, '2026-03-14.jsonl'), [
      good,
      'not json',
      JSON.stringify({ v: 1, w: 'other', r: [[T0 / HOUR, 'key_a', 'm1', -1, 0, 0, 0, 0, 0]] }),
      JSON.stringify({ v: 2, w: 'other', r: [] }),
      JSON.stringify({ v: 1, w: 'other', r: [[T0 / HOUR, 'key_a']] }),
      good,
      '',
    ].join('\n'));
    const ledger = await open(dir, clock().now);
    const [row] = await ledger.query({ ...RANGE, groupBy: 'key' });
    assert.deepEqual([row?.requests, row?.input_tokens, row?.cost_usd], [2, 4, 0.000000012]);
    await ledger.close();
  });

  it('keeps usage pending while the file cannot be written, and writes it once it can', async () => {
    const dir = tempDir();
    const errors: string[] = [];
    const ledger = await open(dir, clock().now, { onError: (e) => errors.push(e.message) });
    // A directory where the day file should be: every open fails.
    mkdirSync(join(dir, '2026-03-14.jsonl'));
    ledger.record(entry('key_a', 'm1', T0, 1, 1, 0.1));
    await ledger.flush();
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /could not write usage/);
    ledger.record(entry('key_a', 'm1', T0, 1, 1, 0.1));
    assert.deepEqual((await ledger.query({ ...RANGE, groupBy: 'key' })).map((r) => r.requests), [2], 'pending usage still counts');
    rmSync(join(dir, '2026-03-14.jsonl'), { recursive: true });
    await ledger.flush();
    await ledger.close();
    const reopened = await open(dir, clock().now);
    assert.deepEqual((await reopened.query({ ...RANGE, groupBy: 'key' })).map((r) => [r.requests, r.cost_usd]), [[2, 0.2]]);
    await reopened.close();
  });

  it('two ledgers on one directory see each other after a flush, and count each line once', async () => {
    const dir = tempDir();
    const c = clock();
    const a = await open(dir, c.now);
    const b = await open(dir, c.now);
    a.record(entry('key_a', 'm1', T0, 1, 0, 1));
    b.record(entry('key_a', 'm2', T0, 2, 0, 2));
    b.record(entry('key_b', 'm2', T0, 3, 0, 4));
    assert.equal(a.spendCached('key_a', T0), 1, 'before b flushes, a knows only its own');
    await b.flush();
    await a.flush();
    for (const ledger of [a, b]) {
      assert.deepEqual((await ledger.query({ ...RANGE, groupBy: ['key', 'model'] })).map((r) => [r.key_id, r.model, r.requests, r.input_tokens]), [
        ['key_a', 'm1', 1, 1], ['key_a', 'm2', 1, 2], ['key_b', 'm2', 1, 3],
      ]);
    }
    assert.equal(a.spendCached('key_a', T0), 3);
    assert.equal(a.spendCached('key_b', T0), 4);
    await a.flush();
    await b.flush();
    assert.equal(b.spendCached('key_a', T0), 3, 'nothing is counted twice by repeated reads');
    assert.equal(await a.spend('key_a', T0), 3);
    await a.close();
    await b.close();
  });
});

describe('usage ledger: spend for budgets', () => {
  it('counts spend from the start of the UTC day of sinceMs, at once for own records', async () => {
    const c = clock(Date.UTC(2026, 2, 14, 12));
    const ledger = await open(tempDir(), c.now);
    ledger.record(entry('key_a', 'm1', Date.UTC(2026, 2, 14, 0, 0, 1), 1, 1, 1.25));
    ledger.record(entry('key_a', 'm1', Date.UTC(2026, 2, 13, 23, 59, 59), 1, 1, 2));
    ledger.record(entry('key_a', 'm1', Date.UTC(2026, 2, 1, 0, 0), 1, 1, 4));
    ledger.record(entry('key_a', 'm1', Date.UTC(2026, 1, 28, 23, 0), 1, 1, 8));
    assert.equal(ledger.spendCached('key_a', Date.UTC(2026, 2, 14)), 1.25, 'today');
    assert.equal(ledger.spendCached('key_a', Date.UTC(2026, 2, 14, 11)), 1.25, 'from the start of that day');
    assert.equal(ledger.spendCached('key_a', Date.UTC(2026, 2, 1)), 7.25, 'this month');
    assert.equal(ledger.spendCached('key_a', Date.UTC(2026, 1, 1)), 15.25, 'the previous month is kept too');
    assert.equal(ledger.spendCached('key_other', Date.UTC(2026, 2, 1)), 0);
    assert.equal(await ledger.spend('key_a', Date.UTC(2026, 2, 1)), 7.25);
    await ledger.close();
  });

  it('answers spend older than the memory window from the files', async () => {
    const dir = tempDir();
    const c = clock(Date.UTC(2026, 0, 20, 12));
    const first = await open(dir, c.now);
    first.record(entry('key_a', 'm1', Date.UTC(2026, 0, 20, 11), 1, 1, 3));
    await first.close();
    c.set(Date.UTC(2026, 3, 2, 12)); // April: January is out of the window
    const second = await open(dir, c.now);
    second.record(entry('key_a', 'm1', Date.UTC(2026, 3, 2, 11), 1, 1, 1));
    assert.equal(second.spendCached('key_a', Date.UTC(2026, 0, 1)), 1, 'memory keeps March and April only');
    assert.equal(await second.spend('key_a', Date.UTC(2026, 0, 1)), 4);
    await second.close();
  });

  it('forgets spend before the previous month when the month turns', async () => {
    const c = clock(Date.UTC(2026, 2, 31, 23));
    const ledger = await open(tempDir(), c.now, { compactAfterMs: 365 * DAY });
    ledger.record(entry('key_a', 'm1', Date.UTC(2026, 1, 10), 1, 1, 5));
    ledger.record(entry('key_a', 'm1', Date.UTC(2026, 2, 10), 1, 1, 1));
    assert.equal(ledger.spendCached('key_a', 0), 6);
    c.set(Date.UTC(2026, 3, 1, 1));
    await ledger.flush();
    assert.equal(ledger.spendCached('key_a', 0), 1, 'in April, March is the first month kept');
    assert.equal(await ledger.spend('key_a', Date.UTC(2026, 1, 1)), 6, 'the files still have February');
    await ledger.close();
  });
});

describe('usage ledger: compaction', () => {
  it('compacts a closed day into totals, with the same answers before and after', async () => {
    const dir = tempDir();
    const c = clock();
    const ledger = await open(dir, c.now);
    recordSample(ledger);
    await ledger.flush();
    c.set(T0 + 2 * HOUR + 60_000);
    for (let i = 0; i < 20; i++) {
      ledger.record(entry('key_a', 'm1', T0 + 2 * HOUR, 1, 1, 0.01));
      await ledger.flush();
    }
    const before = await ledger.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] });
    c.set(Date.UTC(2026, 2, 15, 0, 59)); // the next day, but within the grace hour
    await ledger.flush();
    assert.deepEqual(readdirSync(dir).sort(), ['2026-03-14.jsonl']);
    c.set(Date.UTC(2026, 2, 15, 1, 0));
    await ledger.flush();
    assert.deepEqual(readdirSync(dir).sort(), ['2026-03-14.totals.json']);
    const totals = JSON.parse(readFileSync(join(dir, '2026-03-14.totals.json'), 'utf8')) as { rows: unknown[]; absorbed: string[] };
    assert.equal(totals.rows.length, 5, 'one row per hour × key × model, whatever the number of flushes');
    assert.equal(totals.absorbed.length, 1);
    assert.deepEqual(await ledger.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] }), before);
    await ledger.close();
    const reopened = await open(dir, c.now);
    assert.deepEqual(await reopened.query({ ...RANGE, groupBy: ['hour', 'key', 'model'] }), before);
    assert.equal(reopened.spendCached('key_b', T0 - DAY), 1.8);
    await reopened.close();
  });

  it('merges a day file written after its day was compacted into the existing totals', async () => {
    const dir = tempDir();
    const c = clock(Date.UTC(2026, 2, 15, 2));
    mkdirSync(dir, { recursive: true });
    const line = (n: number) => `${JSON.stringify({ v: 1, w: 'late', r: [[T0 / HOUR, 'key_a', 'm1', n, n, 0, 0, 0, 0]] })}\n`;
    writeFileSync(join(dir, '2026-03-14.jsonl'), line(1));
    const first = await open(dir, c.now);
    await first.close();
    writeFileSync(join(dir, '2026-03-14.jsonl'), line(2));
    const second = await open(dir, c.now);
    assert.deepEqual(readdirSync(dir).sort(), ['2026-03-14.totals.json']);
    assert.deepEqual((await second.query({ ...RANGE, groupBy: 'key' })).map((r) => r.requests), [3]);
    await second.close();
  });

  it('reads a compaction that died midway without losing or double counting a row', async () => {
    const dir = tempDir();
    const c = clock(Date.UTC(2026, 2, 15, 0, 30));
    mkdirSync(dir, { recursive: true });
    const row = (n: number) => [T0 / HOUR, 'key_a', 'm1', n, 0, 0, 0, 0, 0];
    // Died after renaming the day file aside, before writing totals: the renamed file still counts.
    writeFileSync(join(dir, '2026-03-14.00000000000000a1.compacting.jsonl'), `${JSON.stringify({ v: 1, w: 'x', r: [row(1)] })}\n`);
    // Died after writing totals, before deleting the file they absorbed: the file no longer counts.
    writeFileSync(join(dir, '2026-03-13.00000000000000b2.compacting.jsonl'), `${JSON.stringify({ v: 1, w: 'x', r: [[T0 / HOUR - 12, 'key_a', 'm1', 10, 0, 0, 0, 0, 0]] })}\n`);
    writeFileSync(join(dir, '2026-03-13.totals.json'), JSON.stringify({ v: 1, absorbed: ['2026-03-13.00000000000000b2.compacting.jsonl'], rows: [[T0 / HOUR - 12, 'key_a', 'm1', 10, 0, 0, 0, 0, 0]] }));
    const ledger = await open(dir, c.now, { compactAfterMs: 2 * DAY });
    const requests = async () => (await ledger.query({ ...RANGE, groupBy: 'day' })).map((r) => r.requests);
    assert.deepEqual(readdirSync(dir).length, 3, 'nothing compacted yet');
    assert.deepEqual(await requests(), [10, 1]);
    c.set(Date.UTC(2026, 2, 17, 1));
    await ledger.flush();
    assert.deepEqual(readdirSync(dir).sort(), ['2026-03-13.totals.json', '2026-03-14.totals.json']);
    assert.deepEqual(await requests(), [10, 1]);
    await ledger.close();
  });

  it('leaves a day alone while another process holds its lock, and takes over a stale lock', async () => {
    const dir = tempDir();
    const c = clock(Date.UTC(2026, 2, 16));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '2026-03-14.jsonl'), `${JSON.stringify({ v: 1, w: 'x', r: [[T0 / HOUR, 'key_a', 'm1', 1, 0, 0, 0, 0, 0]] })}\n`);
    writeFileSync(join(dir, '2026-03-14.lock'), '');
    const ledger = await open(dir, c.now);
    assert.ok(readdirSync(dir).includes('2026-03-14.jsonl'), 'a fresh lock is respected');
    const { utimesSync } = await import('node:fs');
    const old = new Date(Date.now() - 11 * 60_000);
    utimesSync(join(dir, '2026-03-14.lock'), old, old);
    await ledger.flush(); // removes the stale lock
    await ledger.flush(); // compacts
    assert.deepEqual(readdirSync(dir).sort(), ['2026-03-14.totals.json']);
    assert.deepEqual((await ledger.query({ ...RANGE, groupBy: 'key' })).map((r) => r.requests), [1]);
    await ledger.close();
  });

  it('never overwrites damaged totals, and reports them', async () => {
    const dir = tempDir();
    const errors: string[] = [];
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '2026-03-14.totals.json'), '{"v":1,"absorbed":[],"rows":[[1,2');
    writeFileSync(join(dir, '2026-03-14.jsonl'), `${JSON.stringify({ v: 1, w: 'x', r: [[T0 / HOUR, 'key_a', 'm1', 1, 0, 0, 0, 0, 0]] })}\n`);
    const ledger = await open(dir, clock(Date.UTC(2026, 2, 16)).now, { onError: (e) => errors.push(e.message) });
    assert.ok(errors.some((m) => /2026-03-14\.totals\.json is damaged/.test(m)), errors.join('\n'));
    assert.equal(readFileSync(join(dir, '2026-03-14.totals.json'), 'utf8'), '{"v":1,"absorbed":[],"rows":[[1,2');
    assert.deepEqual((await ledger.query({ ...RANGE, groupBy: 'key' })).map((r) => r.requests), [1], 'the readable day file still counts');
    await ledger.close();
  });
});

describe('usage ledger: processes', () => {
  it('after kill -9, everything recorded more than flushIntervalMs before the kill is there, once', { timeout: 30_000 }, async () => {
    const dir = tempDir();
    const flushIntervalMs = 100;
    // Record i has i input tokens: a persisted prefix of n records sums to n(n+1)/2 exactly, so a
    // lost record in the middle or one counted twice both show.
    const script = `import { createFileLedger } from ${JSON.stringify(LEDGER_URL)};
      const ledger = await createFileLedger({ dir: process.argv[1], flushIntervalMs: ${flushIntervalMs} });
      let i = 0;
      setInterval(() => {
        for (let j = 0; j < 5; j++) {
          i++;
          ledger.record({ keyId: 'key_a', model: 'm1', at: Date.now(), inputTokens: i, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.001 });
          process.stdout.write(i + ' ' + Date.now() + '\\n');
        }
      }, 2);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    const recorded: Array<{ i: number; at: number }> = [];
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const [i, at] = line.split(' ').map(Number);
      recorded.push({ i: i as number, at: at as number });
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // A real process on real time: it runs until a few hundred of its records are older than what
    // the assertion below lets a kill lose, and is then killed wherever it is.
    const lossWindowMs = flushIntervalMs + 400;
    await waitUntil(() => recorded.filter((r) => r.at < Date.now() - lossWindowMs).length > 300, 'the child recording for a while', { timeoutMs: 20_000, pollMs: 20 });
    const killedAt = Date.now();
    child.kill('SIGKILL');
    await exited;
    const ledger = await open(dir, Date.now);
    const [row] = await ledger.query({ since: 0, until: Date.now() + HOUR, groupBy: 'key' });
    await ledger.close();
    const n = row?.requests ?? 0;
    // One flush interval, plus time for a flush in progress to reach the disk on a busy machine.
    const mustHave = recorded.filter((r) => r.at < killedAt - lossWindowMs).length;
    assert.ok(mustHave > 100, `the child recorded for long enough (${mustHave})`);
    assert.ok(n >= mustHave, `kept ${n} records; ${mustHave} were recorded more than ${flushIntervalMs} ms before the kill`);
    assert.ok(n <= recorded.length + 1, `kept ${n}, more than the ${recorded.length} recorded`);
    assert.equal(row?.input_tokens, (n * (n + 1)) / 2, 'a prefix of the records, each counted once');
    assert.equal(row?.cost_usd, n / 1000);
  });

  it('two processes appending to one day file at once lose and mix nothing', { timeout: 30_000 }, async () => {
    const dir = tempDir();
    const script = `import { createFileLedger } from ${JSON.stringify(LEDGER_URL)};
      const ledger = await createFileLedger({ dir: process.argv[1], flushIntervalMs: 5 });
      const key = process.argv[2];
      for (let round = 0; round < 40; round++) {
        for (let j = 0; j < 50; j++) {
          ledger.record({ keyId: key, model: 'm' + (j % 7), at: Date.now(), inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.5 });
        }
        await ledger.flush();
      }
      await ledger.close();`;
    const run = (key: string) => new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dir, key], { stdio: ['ignore', 'ignore', 'inherit'] });
      child.on('exit', (code) => resolve(code ?? 1));
    });
    assert.deepEqual(await Promise.all([run('key_a'), run('key_b')]), [0, 0]);
    const ledger = await open(dir, Date.now);
    const rows = await ledger.query({ since: 0, until: Date.now() + HOUR, groupBy: 'key' });
    await ledger.close();
    assert.deepEqual(rows.map((r) => [r.key_id, r.requests, r.input_tokens, r.output_tokens, r.cost_usd]), [
      ['key_a', 2000, 2000, 4000, 1000], ['key_b', 2000, 2000, 4000, 1000],
    ]);
    // Every line of the day file(s) (two around midnight UTC) is whole JSON: no write interleaved with another.
    for (const file of readdirSync(dir)) {
      for (const line of readFileSync(join(dir, file), 'utf8').trimEnd().split('\n')) JSON.parse(line);
    }
  });
});
