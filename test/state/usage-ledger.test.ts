import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createFileLedger } from '../../src/usage/ledger.ts';
import type { UsageEntry, UsageQuery } from '../../src/usage/ledger.ts';
import { createRowTable } from '../../src/usage/ledger-format.ts';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedLedger } from '../../src/state/usage-ledger.ts';
import type { SharedLedger } from '../../src/state/usage-ledger.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';
import { waitUntil } from '../helpers/wait.ts';

const skip = redisSkip();
const T0 = Date.UTC(2026, 2, 14, 10, 30, 0);
const HOUR = 3_600_000;

let redis: TestRedis;
let prefixCount = 0;
const clients: RespClient[] = [];
const ledgers: SharedLedger[] = [];

function openLedger(prefix: string, now: () => number, url = redis.url, timeoutMs = 2000): SharedLedger {
  const client = createRespClient({ url, timeoutMs });
  clients.push(client);
  const ledger = createSharedLedger({ client, prefix, now, flushIntervalMs: 60_000 });
  ledgers.push(ledger);
  return ledger;
}

function entry(keyId: string, model: string, at: number, costUsd: number, tokens = 10): UsageEntry {
  return { keyId, model, at, inputTokens: tokens, outputTokens: tokens * 2, cacheReadTokens: 3, cacheCreationTokens: 1, costUsd };
}

describe('the shared usage ledger on a real state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const ledger of ledgers) await ledger.close();
    for (const client of clients) await client.close();
    await redis?.stop();
  });

  it('answers queries from every process\'s usage exactly as the file ledger answers from the same usage', async () => {
    prefixCount += 1;
    const prefix = `u${prefixCount}:`;
    const nowMs = T0 + 3 * 86_400_000;
    const now = (): number => nowMs;
    const [a, b, reader] = [openLedger(prefix, now), openLedger(prefix, now), openLedger(prefix, now)];
    const dir = mkdtempSync(join(tmpdir(), 'llmux-ledger-'));
    const files = await createFileLedger({ dir, now, flushIntervalMs: 60_000 });
    try {
      const entries = [
        entry('key_aaaaaaaaaaaaaaaa', 'gpt-test', T0, 0.0036),
        entry('key_aaaaaaaaaaaaaaaa', 'gpt-test', T0 + 10 * 60_000, 0.001),
        entry('key_bbbbbbbbbbbbbbbb', 'claude|with|bars', T0 + 2 * HOUR, 0.5, 1000),
        entry('key_aaaaaaaaaaaaaaaa', 'claude|with|bars', T0 + 26 * HOUR, 0.25),
        entry('key_bbbbbbbbbbbbbbbb', 'gpt-test', T0 + 49 * HOUR, 0, 7),
        entry('key_cccccccccccccccc', 'llmux-echo', nowMs + 5 * HOUR, 0.125),
      ];
      entries.forEach((e, i) => {
        (i % 2 === 0 ? a : b).record(e);
        files.record(e);
      });
      await Promise.all([a.flush(), b.flush()]);
      const queries: UsageQuery[] = [
        { since: T0 - HOUR, until: nowMs + HOUR, groupBy: ['day', 'model'] },
        { since: T0 - HOUR, until: nowMs + HOUR, groupBy: 'key' },
        { since: T0 + HOUR, until: T0 + 30 * HOUR, groupBy: ['hour'], keyId: 'key_aaaaaaaaaaaaaaaa' },
        { since: T0, until: nowMs + HOUR, groupBy: ['model', 'key'] },
        { since: T0 + 100 * HOUR, until: T0 + 101 * HOUR, groupBy: 'day' },
      ];
      for (const query of queries) assert.deepEqual(await reader.query(query), await files.query(query), JSON.stringify(query));
      // This process's own rows are in its answers before they are flushed.
      a.record(entry('key_dddddddddddddddd', 'gpt-test', nowMs, 1));
      assert.equal((await a.query({ since: nowMs - HOUR, until: nowMs + HOUR, groupBy: 'key', keyId: 'key_dddddddddddddddd' }))[0]?.cost_usd, 1);
    } finally {
      await files.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tells budgets what a key spent on every process, within one flush', async () => {
    prefixCount += 1;
    const prefix = `u${prefixCount}:`;
    const now = (): number => T0;
    const [a, b] = [openLedger(prefix, now), openLedger(prefix, now)];
    const dayStart = Date.UTC(2026, 2, 14);
    assert.equal(b.spendCached('key_spender000000', dayStart), 0);
    a.record(entry('key_spender000000', 'gpt-test', T0, 1.5));
    assert.equal(a.spendCached('key_spender000000', dayStart), 1.5, 'its own spend at once');
    await a.flush();
    assert.equal(a.spendCached('key_spender000000', dayStart), 1.5, 'not counted twice once flushed');
    await b.flush();
    assert.equal(b.spendCached('key_spender000000', dayStart), 1.5, 'another process\'s, after its next read');
    b.record(entry('key_spender000000', 'gpt-test', T0, 0.5));
    assert.equal(await a.spend('key_spender000000', dayStart), 1.5, 'b has not flushed yet');
    await b.flush();
    assert.equal(await a.spend('key_spender000000', dayStart), 2);
    assert.equal(await a.spend('key_spender000000', dayStart + 86_400_000), 0, 'counted from the start of the day asked for');
  });

  it('adds a batch once, however often it is sent', async () => {
    prefixCount += 1;
    const prefix = `u${prefixCount}:`;
    const ledger = openLedger(prefix, () => T0);
    const rows = createRowTable();
    rows.add(Math.floor(T0 / HOUR), 'key_import00000000', 'gpt-test', [3, 30, 60, 0, 0, 9_000_000]);
    assert.equal(await ledger.addRows(rows, 'import-1'), true);
    assert.equal(await ledger.addRows(rows, 'import-1'), false);
    const [row] = await ledger.query({ since: T0 - HOUR, until: T0 + HOUR, groupBy: 'key' });
    assert.equal(row?.requests, 3);
    assert.equal(row?.cost_usd, 0.009);
  });

  it('keeps usage while the server is paused and delivers it once when it is back', async () => {
    const own = await startRedis();
    try {
      prefixCount += 1;
      const prefix = `u${prefixCount}:`;
      const ledger = openLedger(prefix, () => T0, own.url, 200);
      ledger.record(entry('key_outage00000000', 'gpt-test', T0, 0.1));
      own.pause();
      await assert.rejects(ledger.flush());
      ledger.record(entry('key_outage00000000', 'gpt-test', T0, 0.2));
      own.resume();
      await waitUntil(() => ledger.flush().then(() => true, () => false), 'a flush once the server is back', { pollMs: 50 });
      await ledger.flush();
      const reader = openLedger(prefix, () => T0, own.url);
      const [row] = await reader.query({ since: T0 - HOUR, until: T0 + HOUR, groupBy: 'key' });
      assert.equal(row?.requests, 2, 'each request once: the batch that timed out and ran anyway is not added again');
      assert.equal(row?.cost_usd, 0.3);
    } finally {
      own.resume();
      await own.stop();
    }
  });
});
