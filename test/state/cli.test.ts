import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/cli.ts';
import { createKeyStore } from '../../src/auth/key-store.ts';
import { createFileLedger } from '../../src/usage/ledger.ts';
import { createRespClient } from '../../src/state/resp.ts';
import type { RespClient } from '../../src/state/resp.ts';
import { createSharedKeyStore } from '../../src/state/key-store.ts';
import { createSharedLedger } from '../../src/state/usage-ledger.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis } from '../helpers/redis.ts';

const skip = redisSkip();

let redis: TestRedis;
let database = 0;
const clients: RespClient[] = [];

function io(env: Record<string, string | undefined>): CliIo & { out: string; err: string } {
  const state = {
    out: '',
    err: '',
    env,
    stdout(t: string) { state.out += t; },
    stderr(t: string) { state.err += t; },
  };
  return state;
}

/** A database of its own on the test server: the CLI writes under the default prefix. */
function freshStateUrl(): string {
  database += 1;
  return `${redis.url}/${database}`;
}

function client(url: string): RespClient {
  const made = createRespClient({ url, timeoutMs: 2000 });
  clients.push(made);
  return made;
}

const home = (): string => mkdtempSync(join(tmpdir(), 'llmux-state-cli-'));

describe('the command line with a state server', { skip }, () => {
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const made of clients) await made.close();
    await redis?.stop();
  });

  it('creates, lists and revokes keys on the state server named by LLMUX_STATE_URL, leaving LLMUX_HOME untouched', async () => {
    const url = freshStateUrl();
    const h = home();
    const env = { LLMUX_HOME: h, LLMUX_STATE_URL: url };
    const created = io(env);
    assert.equal(await main(['keys', 'create', '--name', 'ci', '--tier', 'pro', '--rpm', '9'], created), 0, created.err);
    assert.match(created.out, /^sk-llmux-[A-Za-z0-9_-]{43}\n$/);
    const shared = createSharedKeyStore({ client: client(url), displayUrl: url });
    await shared.refresh();
    assert.equal(shared.findBySecret(created.out.trim())?.limits.rpm, 9);
    assert.deepEqual(readdirSync(h), [], 'no keys.json');

    const listed = io(env);
    assert.equal(await main(['keys', 'list', '--json'], listed), 0);
    const list = JSON.parse(listed.out) as Array<Record<string, unknown>>;
    assert.deepEqual(list.map((k) => [k['name'], k['tier'], k['revoked_at']]), [['ci', 'pro', null]]);
    assert.ok(!listed.out.includes('"hash"'), 'hashes are not shown');

    const revoked = io(env);
    assert.equal(await main(['keys', 'revoke', 'ci'], revoked), 0);
    assert.match(revoked.err, /revoked key_[0-9a-f]{16} "ci"/);
    await shared.refresh();
    assert.notEqual(shared.findBySecret(created.out.trim())?.revoked_at, null);
    const none = io(env);
    assert.equal(await main(['keys', 'revoke', 'ci'], none), 1);
  });

  it('reads the state URL from the config file in LLMUX_HOME too', async () => {
    const url = freshStateUrl();
    const h = home();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(h, 'config.json'), JSON.stringify({ state: { url } }));
    const created = io({ LLMUX_HOME: h });
    assert.equal(await main(['keys', 'create', '--name', 'from-config'], created), 0, created.err);
    const shared = createSharedKeyStore({ client: client(url), displayUrl: url });
    await shared.refresh();
    assert.equal(shared.get('from-config')?.name, 'from-config');
  });

  it('says so, and fails, when the state server cannot be reached', async () => {
    const gone = await startRedis();
    const url = gone.url;
    await gone.stop();
    const t = io({ LLMUX_HOME: home(), LLMUX_STATE_URL: url });
    assert.equal(await main(['keys', 'list'], t), 1);
    assert.match(t.err, /cannot read the keys on state server redis:\/\/127\.0\.0\.1:\d+\/0/);
  });

  it('migrates a file key store and its usage once, however often it is run, changing nothing in the old home', async () => {
    const url = freshStateUrl();
    const old = home();
    const store = createKeyStore(old);
    const alice = store.create({ name: 'alice', tier: 'pro' });
    store.create({ name: 'bob', budget: { usd: 5, period: 'day' } });
    const at = Date.UTC(2026, 2, 14, 10, 0, 0);
    const ledger = await createFileLedger({ dir: join(old, 'usage'), now: () => at + 60_000 });
    ledger.record({ keyId: alice.record.id, model: 'gpt-test', at, inputTokens: 100, outputTokens: 50, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.25 });
    ledger.record({ keyId: alice.record.id, model: 'gpt-test', at, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.5 });
    await ledger.close();
    const before = readdirSync(join(old, 'usage')).map((name) => [name, statSync(join(old, 'usage', name)).mtimeMs]);
    const keysBefore = readFileSync(join(old, 'keys.json'), 'utf8');

    const env = { LLMUX_HOME: home(), LLMUX_STATE_URL: url };
    const first = io(env);
    assert.equal(await main(['state', 'migrate', '--from-home', old], first), 0, first.err);
    assert.match(first.err, /migrated 2 key\(s\) from .* to redis:\/\/127\.0\.0\.1:\d+\/\d+\n/);
    assert.match(first.err, /migrated usage: 1 row\(s\), 2 request\(s\), \$0\.7500/);
    const again = io(env);
    assert.equal(await main(['state', 'migrate', '--from-home', old], again), 0);
    assert.match(again.err, /migrated 0 key\(s\) .* \(2 already there, left as they are\)/);
    assert.match(again.err, /this usage was migrated before; it was not added again/);

    const shared = createSharedKeyStore({ client: client(url), displayUrl: url });
    await shared.refresh();
    assert.deepEqual(shared.list().map((k) => k.name).sort(), ['alice', 'bob']);
    assert.equal(shared.findBySecret(alice.key)?.id, alice.record.id, 'the same secret works against the shared store');
    const sharedUsage = createSharedLedger({ client: client(url) });
    const rows = await sharedUsage.query({ since: at - 3_600_000, until: at + 3_600_000, groupBy: 'key' });
    assert.deepEqual(rows.map((r) => [r.key_id, r.requests, r.input_tokens, r.cost_usd]), [[alice.record.id, 2, 110, 0.75]]);
    assert.equal(await sharedUsage.spend(alice.record.id, Date.UTC(2026, 2, 1)), 0.75, 'budgets see the migrated spend');
    await sharedUsage.close();
    const report = io(env);
    assert.equal(await main(['usage', '--since', '2026-03-14', '--until', '2026-03-15', '--by', 'key', '--json'], report), 0, report.err);
    const { data } = JSON.parse(report.out) as { data: Array<{ key_id: string; requests: number; cost_usd: number }> };
    assert.deepEqual(data.map((r) => [r.key_id, r.requests, r.cost_usd]), [[alice.record.id, 2, 0.75]], 'llmux usage reads the state server');
    const table = io(env);
    assert.equal(await main(['usage', '--since', '2026-03-14', '--until', '2026-03-15', '--key', 'alice'], table), 0, table.err);
    assert.match(table.out, /for alice \(key_[0-9a-f]{16}\)/, 'names come from the shared keys');

    assert.deepEqual(readdirSync(join(old, 'usage')).map((name) => [name, statSync(join(old, 'usage', name)).mtimeMs]), before);
    assert.equal(readFileSync(join(old, 'keys.json'), 'utf8'), keysBefore);
  });

  it('refuses to migrate without a state server or a home to migrate from', async () => {
    const noState = io({ LLMUX_HOME: home() });
    assert.equal(await main(['state', 'migrate', '--from-home', home()], noState), 1);
    assert.match(noState.err, /no state server to migrate to: set LLMUX_STATE_URL/);
    const noFrom = io({ LLMUX_STATE_URL: freshStateUrl() });
    assert.equal(await main(['state', 'migrate'], noFrom), 2);
    assert.match(noFrom.err, /state migrate: --from-home DIR is required/);
    const unknown = io({});
    assert.equal(await main(['state', 'frobnicate'], unknown), 2);
  });
});
