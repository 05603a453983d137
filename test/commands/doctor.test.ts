import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/commands/io.ts';
import { doctorTable } from '../../src/commands/doctor.ts';
import { respond, startFakeUpstream } from '../helpers/fake-upstream.ts';
import { freePort } from '../helpers/redis.ts';

function io(env: Record<string, string | undefined>): CliIo & { out: string; err: string } {
  const state = { out: '', err: '', env, stdout(t: string) { state.out += t; }, stderr(t: string) { state.err += t; } };
  return state;
}

describe('llmux doctor', () => {
  it('exits 0 when everything needed passes and 1 when something fails, reading --config and --home', async () => {
    const upstream = await startFakeUpstream();
    try {
      const h = mkdtempSync(join(tmpdir(), 'llmux-doctor-cli-'));
      const file = join(h, 'llmux.json');
      writeFileSync(file, JSON.stringify({ builtin_catalog: false, providers: { up: { format: 'openai', base_url: `${upstream.url}/v1`, api_key: 'env:UP_KEY' } }, models: [{ id: 'm', provider: 'up' }] }));
      upstream.fallback = respond.json(200, { data: [] });
      const good = io({ UP_KEY: 'k' });
      assert.equal(await main(['doctor', '--config', file, '--home', h], good), 0, good.out);
      assert.match(good.out, /^check +verdict +found\nconfig +ok +\S+llmux\.json\n/);
      assert.match(good.out, /\nprovider up: endpoint +ok +GET http:\/\/127\.0\.0\.1:\d+\/v1\/models: 200 in \d+ ms\n/);
      assert.match(good.out, /\n\neverything needed passes\n$/);

      upstream.fallback = respond.json(401, {});
      const refused = io({ UP_KEY: 'k' });
      assert.equal(await main(['doctor', '--config', file, '--home', h], refused), 1);
      assert.match(refused.out, /\nprovider up: endpoint +FAIL +.*401.*\n +-> the provider refused the key in env:UP_KEY: check it\n/);
      assert.match(refused.out, /1 check\(s\) failed: fix the FAIL rows\n$/);

      const json = io({});
      assert.equal(await main(['doctor', '--config', file, '--home', h, '--json', '--timeout-ms', '1000'], json), 1);
      const report = JSON.parse(json.out) as { ok: boolean; checks: Array<{ name: string; verdict: string; hint?: string }> };
      assert.equal(report.ok, false);
      assert.deepEqual(report.checks.find((c) => c.name === 'provider up: credential'), { name: 'provider up: credential', verdict: 'fail', detail: 'env:UP_KEY is not set', hint: 'set UP_KEY' });
    } finally {
      await upstream.close();
    }
  });

  it('checks the state server of LLMUX_STATE_URL, as serve would', async () => {
    const port = await freePort();
    const t = io({ LLMUX_HOME: mkdtempSync(join(tmpdir(), 'llmux-doctor-cli-')), LLMUX_STATE_URL: `redis://127.0.0.1:${port}` });
    assert.equal(await main(['doctor', '--timeout-ms', '500'], t), 1);
    assert.match(t.out, new RegExp(`\\nstate server +FAIL +redis://127\\.0\\.0\\.1:${port}/0: .*\\n +-> is the state server at redis://127\\.0\\.0\\.1:${port}/0 running\\?`));
  });

  it('lays the hint of a problem under its row, in the column of what was found', () => {
    const text = doctorTable({ ok: true, checks: [
      { name: 'config', verdict: 'ok', detail: 'x.json' },
      { name: 'provider a: endpoint', verdict: 'warn', detail: 'slow', hint: 'wait' },
      { name: 'state server', verdict: 'off', detail: 'none' },
    ] });
    assert.equal(text, [
      'check                 verdict  found',
      'config                ok       x.json',
      'provider a: endpoint  warn     slow',
      '                               -> wait',
      'state server          off      none',
      '',
      'everything needed passes (1 warning(s))',
      '',
    ].join('\n'));
  });
});
