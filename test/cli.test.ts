import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../src/cli.ts';
import type { CliIo } from '../src/cli.ts';
import { createKeyStore } from '../src/auth/key-store.ts';
import { VERSION } from '../src/common/version.ts';
import { readFileSync } from 'node:fs';

function io(env: Record<string, string | undefined> = {}): CliIo & { out: string; err: string } {
  const state = {
    out: '',
    err: '',
    env,
    stdout(t: string) { state.out += t; },
    stderr(t: string) { state.err += t; },
  };
  return state;
}

const home = () => mkdtempSync(join(tmpdir(), 'llmux-cli-'));

describe('llmux keys', () => {
  it('create prints the new key and nothing else on stdout, details on stderr', async () => {
    const h = home();
    const t = io({ LLMUX_HOME: h });
    const code = await main(['keys', 'create', '--name', 'laptop', '--tier', 'pro', '--rpm', '5', '--models', 'a,b', '--expires-in', '30d'], t);
    assert.equal(code, 0);
    assert.match(t.out, /^sk-llmux-[A-Za-z0-9_-]{43}\n$/);
    assert.match(t.err, /created key_[0-9a-f]{16} "laptop" \(pro; 5 rpm, 450000 tpm, 40 concurrent; models a, b; expires /);
    const record = createKeyStore(h).get('laptop')!;
    assert.equal(record.tier, 'pro');
    assert.deepEqual(record.limits, { rpm: 5 });
    assert.deepEqual(record.models, ['a', 'b']);
    assert.ok(record.expires_at);
    assert.equal(statSync(join(h, 'keys.json')).mode & 0o777, 0o600);
  });

  it('create takes --admin, --concurrency, --tpm and refuses bad flags with exit 2', async () => {
    const h = home();
    const t = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'create', '--admin', '--tier', 'enterprise', '--tpm', '1000', '--concurrency', '3'], t), 0);
    const rec = createKeyStore(h).list()[0]!;
    assert.equal(rec.admin, true);
    assert.deepEqual(rec.limits, { tpm: 1000, concurrency: 3 });
    for (const args of [['--tier', 'gold'], ['--rpm', '0'], ['--expires-in', 'soon'], ['--bogus'], ['--models', ',']]) {
      const e = io({ LLMUX_HOME: h });
      assert.equal(await main(['keys', 'create', ...args], e), 2, args.join(' '));
      assert.equal(e.out, '');
      assert.match(e.err, /llmux: /);
    }
  });

  it('create takes a budget per day or month, a month by default, and refuses a bad one with exit 2', async () => {
    const h = home();
    const t = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'create', '--name', 'capped', '--budget-usd', '25', '--budget-period', 'day'], t), 0);
    assert.match(t.err, /created key_[0-9a-f]{16} "capped" \(basic; 60 rpm, 90000 tpm, 10 concurrent, \$25 a day\)/);
    assert.deepEqual(createKeyStore(h).get('capped')?.budget, { usd: 25, period: 'day' });
    assert.equal(await main(['keys', 'create', '--name', 'monthly', '--budget-usd', '2.50'], io({ LLMUX_HOME: h })), 0);
    assert.deepEqual(createKeyStore(h).get('monthly')?.budget, { usd: 2.5, period: 'month' });
    const listed = io({ LLMUX_HOME: h });
    await main(['keys', 'list'], listed);
    assert.match(listed.out, /capped .*\$25 a day/);
    for (const args of [['--budget-usd', '-1'], ['--budget-usd', 'lots'], ['--budget-usd', ''], ['--budget-usd', '5', '--budget-period', 'week'], ['--budget-period', 'day']]) {
      const e = io({ LLMUX_HOME: h });
      assert.equal(await main(['keys', 'create', ...args], e), 2, args.join(' '));
      assert.match(e.err, /--budget-/);
    }
    assert.equal(createKeyStore(h).list().length, 2, 'nothing created by a refused command');
  });

  it('list shows keys without secrets, and --json without hashes', async () => {
    const h = home();
    const made = io({ LLMUX_HOME: h });
    await main(['keys', 'create', '--name', 'one'], made);
    const key = made.out.trim();
    const t = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'list'], t), 0);
    assert.match(t.out, /key_[0-9a-f]{16}\s+one\s+basic\s+active/);
    assert.ok(!t.out.includes(key));
    const j = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'list', '--json'], j), 0);
    const list = JSON.parse(j.out) as Array<Record<string, unknown>>;
    assert.equal(list.length, 1);
    assert.equal(list[0]?.['hash'], undefined);
    assert.equal(list[0]?.['name'], 'one');
    const empty = io({ LLMUX_HOME: home() });
    await main(['keys', 'list'], empty);
    assert.match(empty.out, /no keys yet/);
  });

  it('revoke works by id or name and fails clearly for an unknown one', async () => {
    const h = home();
    await main(['keys', 'create', '--name', 'gone'], io({ LLMUX_HOME: h }));
    const t = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'revoke', 'gone'], t), 0);
    assert.match(t.err, /revoked key_/);
    assert.ok(createKeyStore(h).list()[0]?.revoked_at);
    const u = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'revoke', 'nobody'], u), 1);
    assert.match(u.err, /no key with id or name "nobody"/);
    assert.equal(await main(['keys', 'revoke'], io({ LLMUX_HOME: h })), 2);
    assert.equal(await main(['keys', 'frobnicate'], io({ LLMUX_HOME: h })), 2);
  });

  it('reports a corrupt key store with exit 1 and a clear message', async () => {
    const h = home();
    writeFileSync(join(h, 'keys.json'), '{"keys": [');
    const t = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'list'], t), 1);
    assert.match(t.err, /corrupt or half-written/);
  });
});

describe('llmux CLI', () => {
  it('prints its version, matching package.json', async () => {
    const t = io();
    assert.equal(await main(['--version'], t), 0);
    assert.equal(t.out, `${VERSION}\n`);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(VERSION, pkg.version);
  });

  it('prints help, and refuses unknown commands with exit 2', async () => {
    const t = io();
    assert.equal(await main(['--help'], t), 0);
    assert.match(t.out, /llmux serve/);
    const u = io();
    assert.equal(await main(['launch'], u), 2);
    assert.match(u.err, /unknown command "launch"/);
    assert.equal(await main([], io()), 2);
  });

  it('lists the usable models', async () => {
    const t = io({ LLMUX_HOME: home() });
    assert.equal(await main(['models'], t), 0);
    assert.match(t.out, /^llmux-echo/);
    const withKey = io({ LLMUX_HOME: home(), OPENAI_API_KEY: 'sk-test' });
    await main(['models', '--json'], withKey);
    const list = JSON.parse(withKey.out) as Array<{ provider: string }>;
    assert.ok(list.some((m) => m.provider === 'openai'));
    assert.ok(!list.some((m) => m.provider === 'anthropic'));
  });

  it('stops serve with one clear line when the config file is bad', async () => {
    const h = home();
    writeFileSync(join(h, 'config.json'), JSON.stringify({ providers: { x: { format: 'grpc', base_url: 'http://a' } } }));
    const t = io({ LLMUX_HOME: h });
    assert.equal(await main(['serve', '--port', '0'], t), 1);
    assert.equal(t.err, `llmux: config file ${join(h, 'config.json')}: providers.x.format: must be "openai", "anthropic", "gemini" or "converse"\n`);
    // A bad flag is a usage error (exit 2), before the config is read.
    assert.equal(await main(['serve', '--port', 'abc'], io({ LLMUX_HOME: h })), 2);
  });
});
