import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/cli.ts';
import { createKeyStore } from '../../src/auth/key-store.ts';
import { createFileLedger } from '../../src/usage/ledger.ts';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 2, 14, 12, 30); // 2026-03-14T12:30Z

/** `llmux usage ARGS` at the clock `nowMs`. */
const usageCommand = (args: string[], t: CliIo, nowMs: number): Promise<number> => main(['usage', ...args], { ...t, now: () => nowMs });

function io(env: Record<string, string | undefined> = {}): CliIo & { out: string; err: string } {
  const state = { out: '', err: '', env, stdout(t: string) { state.out += t; }, stderr(t: string) { state.err += t; } };
  return state;
}

/** A home with two keys and three recorded requests over two days and two models. */
async function seededHome(): Promise<{ home: string; alice: string; ci: string }> {
  const home = mkdtempSync(join(tmpdir(), 'llmux-usage-cli-'));
  const store = createKeyStore(home);
  const alice = store.create({ name: 'alice laptop' }).record.id;
  const ci = store.create({ name: 'ci' }).record.id;
  const ledger = await createFileLedger({ dir: join(home, 'usage'), now: () => NOW });
  const entry = (keyId: string, model: string, at: number, input: number, output: number, costUsd: number, cacheRead = 0) =>
    ledger.record({ keyId, model, at, inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheCreationTokens: 0, costUsd });
  entry(alice, 'claude-sonnet-4-5', NOW - HOUR, 1200, 300, 0.0123, 5000);
  entry(ci, 'gpt-4.1-mini', NOW - 24 * HOUR, 120_000, 3000, 1.5);
  entry(ci, 'claude-sonnet-4-5', NOW, 10, 3, 0.0001);
  await ledger.close();
  return { home, alice, ci };
}

describe('llmux usage', () => {
  it('prints the last 7 days by day as a table with a total, from the files alone', async () => {
    const { home } = await seededHome();
    const t = io();
    assert.equal(await usageCommand(['--home', home], t, NOW), 0);
    assert.equal(t.out, [
      'usage from 2026-03-07 12:30 to 2026-03-14 12:30 UTC',
      '',
      'day         requests    input  output  cache read  cache write     cost',
      '2026-03-13         1  120,000   3,000           0            0  $1.5000',
      '2026-03-14         2    1,210     303       5,000            0  $0.0124',
      'total              3  121,210   3,303       5,000            0  $1.5124',
      '',
    ].join('\n'));
    assert.equal(t.err, '');
  });

  it('groups by model or key, names keys from the key store, and takes one key by name', async () => {
    const { home, alice, ci } = await seededHome();
    const byKey = io();
    assert.equal(await usageCommand(['--home', home, '--by', 'key'], byKey, NOW), 0);
    const lines = byKey.out.split('\n');
    assert.match(lines[2] ?? '', /^key +name +requests +input/);
    assert.ok(lines.some((l) => l.startsWith(`${alice}  alice laptop         1    1,200`)), byKey.out);
    assert.ok(lines.some((l) => l.startsWith(`${ci}  ci                   2  120,010`)), byKey.out);
    const oneKey = io();
    assert.equal(await usageCommand(['--home', home, '--by', 'model', '--key', 'ci', '--since', '2026-03-14'], oneKey, NOW), 0);
    assert.match(oneKey.out, /^usage from 2026-03-14 00:00 to 2026-03-14 12:30 UTC for ci \(key_[0-9a-f]{16}\)\n/);
    assert.match(oneKey.out, /\nkey_[0-9a-f]{16}  ci    claude-sonnet-4-5         1     10       3           0            0  \$0\.0001\n$/);
  });

  it('prints the JSON of GET /v1/usage with --json', async () => {
    const { home, alice } = await seededHome();
    const t = io();
    assert.equal(await usageCommand(['--home', home, '--json', '--by', 'model', '--key', alice], t, NOW), 0);
    assert.deepEqual(JSON.parse(t.out), {
      object: 'list',
      data: [{
        start: '2026-03-07T12:00:00.000Z', end: '2026-03-14T13:00:00.000Z', key_id: alice, model: 'claude-sonnet-4-5', requests: 1,
        input_tokens: 1200, output_tokens: 300, cache_read_input_tokens: 5000, cache_creation_input_tokens: 0, cost_usd: 0.0123,
      }],
    });
  });

  it('says there is no usage yet without creating the usage folder', async () => {
    const home = mkdtempSync(join(tmpdir(), 'llmux-usage-cli-'));
    const t = io();
    assert.equal(await usageCommand(['--home', home, '--since', '2026-03-01', '--until', '2026-03-02T12:00Z'], t, NOW), 0);
    assert.equal(t.out, 'no usage from 2026-03-01 00:00 to 2026-03-02 12:00 UTC\n');
    assert.equal(existsSync(join(home, 'usage')), false);
  });

  it('refuses bad flags with exit 2 and what to write instead', async () => {
    const { home } = await seededHome();
    for (const [args, problem] of [
      [['--by', 'week'], /--by: "week" must be one of day, hour, model, key/],
      [['--by', 'day,hour'], /--by: group by day or by hour, not both/],
      [['--since', 'last tuesday'], /--since: "last tuesday" must be a duration like 7d or 12h, or an ISO 8601 date/],
      [['--since', '1d', '--until', '2d'], /--since must be before --until/],
      [['--key', 'nobody'], /--key: no key with id or name "nobody"/],
      [['--frobnicate'], /unknown option --frobnicate/],
    ] as const) {
      const t = io();
      assert.equal(await usageCommand(['--home', home, ...args], t, NOW), 2, args.join(' '));
      assert.match(t.err, problem);
      assert.match(t.err, /\nRun "llmux usage --help" for usage\.\n$/);
      assert.equal(t.out, '');
    }
  });

  it('is a command of llmux, reading LLMUX_HOME', async () => {
    const { home } = await seededHome();
    const t = io({ LLMUX_HOME: home });
    assert.equal(await main(['usage', '--since', '2026-03-01', '--until', '2026-03-20', '--by', 'model'], t), 0);
    assert.match(t.out, /gpt-4\.1-mini +1 +120,000/);
    const help = io();
    assert.equal(await main(['--help'], help), 0);
    assert.match(help.out, /llmux usage \[--since 7d\]/);
  });
});
