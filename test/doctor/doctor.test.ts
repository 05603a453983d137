/**
 * `llmux doctor`'s checks against fakes the test starts: providers on a fake upstream (answering
 * 200, 401, or nothing), a closed port, a state server (a real redis-server, and a port with
 * nothing listening), and key stores on disk. Each problem is named with its hint.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diagnose } from '../../src/doctor/doctor.ts';
import type { CheckResult, DoctorReport } from '../../src/doctor/report.ts';
import { loadConfig } from '../../src/config/load.ts';
import { createKeyStore } from '../../src/auth/key-store.ts';
import { respond, startFakeUpstream } from '../helpers/fake-upstream.ts';
import type { FakeUpstream } from '../helpers/fake-upstream.ts';
import { freePort, redisSkip, startRedis } from '../helpers/redis.ts';

const SECRET = 'sk-test-doctor-SECRET-0123456789';
const home = (): string => mkdtempSync(join(tmpdir(), 'llmux-doctor-'));

function check(report: DoctorReport, name: string): CheckResult {
  const found = report.checks.find((c) => c.name === name);
  assert.ok(found, `a "${name}" row in ${JSON.stringify(report.checks.map((c) => c.name))}`);
  return found;
}

async function run(file: unknown, env: Record<string, string | undefined> = {}, h = home(), timeoutMs = 2_000): Promise<DoctorReport> {
  const report = await diagnose({ load: () => loadConfig({ file, env, home: h }), timeoutMs });
  assert.ok(!JSON.stringify(report).includes(SECRET), 'no credential in the report');
  return report;
}

/** One provider `p` of `format` at `baseUrl`, with a model using it. */
function oneProvider(format: 'openai' | 'anthropic', baseUrl: string, apiKey?: string): unknown {
  return {
    builtin_catalog: false,
    providers: { p: { format, base_url: baseUrl, ...(apiKey === undefined ? {} : { api_key: apiKey }) } },
    models: [{ id: 'm', provider: 'p' }],
  };
}

describe('llmux doctor checks', () => {
  let upstream: FakeUpstream;
  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    await upstream.close();
  });

  it('passes a healthy setup: the credential from its variable, the model list answering 200 with it', async () => {
    upstream.queue.push(respond.json(200, { object: 'list', data: [] }), respond.json(200, { data: [] }));
    const report = await run({
      builtin_catalog: false,
      providers: {
        chat: { format: 'openai', base_url: `${upstream.url}/v1`, api_key: 'env:TEST_CHAT_KEY' },
        claude: { format: 'anthropic', base_url: `${upstream.url}/anthropic/v1`, api_key: 'env:TEST_CLAUDE_KEY', headers: { 'x-team': 'a' } },
      },
      models: [{ id: 'c', provider: 'chat' }, { id: 'a', provider: 'claude' }],
    }, { TEST_CHAT_KEY: SECRET, TEST_CLAUDE_KEY: SECRET });
    assert.equal(report.ok, true, JSON.stringify(report.checks, null, 2));
    assert.deepEqual(check(report, 'provider chat: credential'), { name: 'provider chat: credential', verdict: 'ok', detail: 'from env:TEST_CHAT_KEY' });
    assert.match(check(report, 'provider chat: endpoint').detail, /^GET http:\/\/127\.0\.0\.1:\d+\/v1\/models: 200 in \d+ ms$/);
    assert.equal(check(report, 'provider claude: endpoint').verdict, 'ok');
    const seen = upstream.requests.splice(0);
    const chat = seen.find((r) => r.path === '/v1/models');
    const claude = seen.find((r) => r.path === '/anthropic/v1/models');
    assert.equal(chat?.method, 'GET');
    assert.equal(chat?.headers.authorization, `Bearer ${SECRET}`, 'openai format: a bearer token');
    assert.equal(claude?.headers['x-api-key'], SECRET, 'anthropic format: x-api-key');
    assert.equal(claude?.headers['anthropic-version'], '2023-06-01');
    assert.equal(claude?.headers['x-team'], 'a', 'the provider\'s own headers');
    assert.equal(claude?.headers.authorization, undefined);
    assert.equal(check(report, 'state server').verdict, 'off');
    assert.equal(check(report, 'key store').verdict, 'ok');
  });

  it('names a missing credential with the variable to set, and does not call the endpoint', async () => {
    const report = await run(oneProvider('anthropic', `${upstream.url}/v1`, 'env:TEST_MISSING_KEY'));
    assert.equal(report.ok, false);
    assert.deepEqual(check(report, 'provider p: credential'), { name: 'provider p: credential', verdict: 'fail', detail: 'env:TEST_MISSING_KEY is not set', hint: 'set TEST_MISSING_KEY' });
    assert.equal(check(report, 'provider p: endpoint').verdict, 'off');
    assert.equal(upstream.requests.splice(0).length, 0);
  });

  it('names a provider that refuses the credential (401) and where the credential came from', async () => {
    upstream.queue.push(respond.json(401, { error: { message: `bad key ${SECRET}` } }));
    const report = await run(oneProvider('openai', `${upstream.url}/v1`, 'env:TEST_REFUSED_KEY'), { TEST_REFUSED_KEY: SECRET });
    assert.equal(report.ok, false);
    const endpoint = check(report, 'provider p: endpoint');
    assert.equal(endpoint.verdict, 'fail');
    assert.match(endpoint.detail, /: 401 in \d+ ms: the credential was refused$/);
    assert.equal(endpoint.hint, 'the provider refused the key in env:TEST_REFUSED_KEY: check it');
    upstream.queue.push(respond.json(403, {}));
    const literal = await run(oneProvider('openai', `${upstream.url}/v1`, SECRET));
    assert.equal(check(literal, 'provider p: credential').detail, 'from providers.p.api_key in the config');
    assert.equal(check(literal, 'provider p: endpoint').hint, 'the provider refused the key in providers.p.api_key in the config: check it');
    upstream.requests.splice(0);
  });

  it('names an unreachable endpoint (a closed port) and asks whether its server runs', async () => {
    const port = await freePort();
    const report = await run(oneProvider('openai', `http://127.0.0.1:${port}/v1`));
    assert.equal(report.ok, false);
    assert.deepEqual(check(report, 'provider p: endpoint'), {
      name: 'provider p: endpoint',
      verdict: 'fail',
      detail: `connection refused by http://127.0.0.1:${port}/v1`,
      hint: `is the server at http://127.0.0.1:${port} running?`,
    });
  });

  it('gives up on an endpoint that accepts but never answers after the timeout', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const report = await run(oneProvider('openai', `http://127.0.0.1:${port}/v1`), {}, home(), 150);
      const endpoint = check(report, 'provider p: endpoint');
      assert.equal(endpoint.verdict, 'fail');
      assert.equal(endpoint.detail, `no answer from http://127.0.0.1:${port}/v1 within 150 ms`);
      assert.match(endpoint.hint ?? '', /raise --timeout-ms/);
    } finally {
      silent.close();
    }
  });

  it('only warns for a provider no model uses, and for an endpoint that lists no models', async () => {
    upstream.queue.push(respond.json(404, {}));
    const port = await freePort();
    const report = await run({
      builtin_catalog: false,
      providers: { used: { format: 'openai', base_url: `${upstream.url}/v1` }, spare: { format: 'openai', base_url: `http://127.0.0.1:${port}/v1` } },
      models: [{ id: 'm', provider: 'used' }],
    });
    assert.equal(report.ok, true, JSON.stringify(report.checks, null, 2));
    assert.equal(check(report, 'provider used: endpoint').verdict, 'warn');
    assert.match(check(report, 'provider used: endpoint').detail, /404 .*lists no models/);
    assert.equal(check(report, 'provider spare: models').verdict, 'warn');
    assert.equal(check(report, 'provider spare: endpoint').verdict, 'warn');
    upstream.requests.splice(0);
  });

  it('leaves built-in providers without their variable off, and checks one whose variable is set', async () => {
    const bare = await run({});
    assert.equal(bare.ok, true);
    assert.equal(check(bare, 'providers not set up').verdict, 'off');
    assert.match(check(bare, 'providers not set up').detail, /^openai, anthropic, .*ollama: set a provider's variable \(OPENAI_API_KEY for openai\)/);
    assert.ok(!bare.checks.some((c) => c.name.startsWith('provider openai')));
    // Ollama pointed at a closed port: set up (OLLAMA_HOST), so needed, and down.
    const port = await freePort();
    const ollama = await run({}, { OLLAMA_HOST: `127.0.0.1:${port}` });
    assert.equal(ollama.ok, false);
    assert.equal(check(ollama, 'provider ollama: credential').detail, 'none needed');
    assert.equal(check(ollama, 'provider ollama: endpoint').hint, `is the server at http://127.0.0.1:${port} running?`);
  });

  it('stops at a config that does not load, naming the field', async () => {
    const report = await run({ providers: { x: { format: 'grpc', base_url: 'http://a' } } });
    assert.equal(report.ok, false);
    assert.match(check(report, 'config').detail, /providers\.x\.format: must be "openai", "anthropic", "gemini" or "converse"/);
    assert.equal(check(report, 'the other checks').verdict, 'off');
  });

  it('reads the key store: counts, a warning without an admin key, a corrupt file with its hint', async () => {
    const h = home();
    const store = createKeyStore(h);
    store.create({ name: 'one' });
    const noAdmin = await run({}, {}, h);
    assert.equal(noAdmin.ok, true);
    assert.equal(check(noAdmin, 'key store').verdict, 'warn');
    assert.match(check(noAdmin, 'key store').detail, /keys\.json: 1 key\(s\), 1 active, 0 admin$/);
    assert.match(check(noAdmin, 'key store').hint ?? '', /llmux keys create --admin/);
    store.create({ name: 'admin', admin: true });
    assert.equal(check(await run({}, {}, h), 'key store').verdict, 'ok');
    writeFileSync(join(h, 'keys.json'), '{"keys": [');
    const corrupt = await run({}, {}, h);
    assert.equal(corrupt.ok, false);
    assert.match(check(corrupt, 'key store').detail, /corrupt or half-written/);
    assert.match(check(corrupt, 'key store').hint ?? '', /restore it from a backup/);
  });

  it('names a state server that is down (nothing listening) with its address to check', async () => {
    const port = await freePort();
    const report = await run({ state: { url: `redis://:${SECRET}@127.0.0.1:${port}` } });
    assert.equal(report.ok, false);
    const server = check(report, 'state server');
    assert.equal(server.verdict, 'fail');
    assert.equal(server.hint, `is the state server at redis://127.0.0.1:${port}/0 running? (state.url or LLMUX_STATE_URL)`);
    assert.equal(check(report, 'key store').verdict, 'fail');
  });
});

describe('llmux doctor with a state server', { skip: redisSkip() }, () => {
  it('reports the server\'s version and reads the keys on it', async () => {
    const redis = await startRedis();
    try {
      const report = await run({ state: { url: redis.url } });
      assert.equal(report.ok, true, JSON.stringify(report.checks, null, 2));
      assert.match(check(report, 'state server').detail, new RegExp(`^redis://127\\.0\\.0\\.1:${redis.port}/0: (Redis|Valkey) \\d+\\.\\d+`));
      assert.match(check(report, 'key store').detail, /^on redis:\/\/127\.0\.0\.1:\d+\/0: empty/);
    } finally {
      await redis.stop();
    }
  });
});
