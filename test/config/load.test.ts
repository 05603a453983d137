import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DEFAULT_TIERS, loadConfig } from '../../src/config/load.ts';
import { BUILTIN_MODELS } from '../../src/catalog/builtin-models.ts';

const load = (file: unknown, env: Record<string, string> = {}) => loadConfig({ file, env, home: '/tmp/none' });

describe('config', () => {
  it('uses the description\'s tiers and llmux defaults with no file', () => {
    const c = load({});
    assert.deepEqual(c.tiers.basic, { rpm: 60, tpm: 90_000, concurrency: 10 });
    assert.deepEqual(c.tiers.pro, { rpm: 300, tpm: 450_000, concurrency: 40 });
    assert.equal(c.limits.maxBodyBytes, 32 * 1024 * 1024);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8686);
    assert.ok(c.providers['openai'] && c.providers['anthropic']);
    assert.deepEqual(DEFAULT_TIERS.basic, { rpm: 60, tpm: 90_000, concurrency: 10 });
  });

  it('takes flags over environment over defaults', () => {
    assert.equal(loadConfig({ file: {}, env: { LLMUX_PORT: '9000', LLMUX_HOST: '0.0.0.0' } }).port, 9000);
    assert.equal(loadConfig({ file: {}, env: { LLMUX_PORT: '9000' }, port: 1234 }).port, 1234);
    assert.equal(loadConfig({ file: {}, env: { LLMUX_HOST: '::1' } }).host, '::1');
    assert.equal(loadConfig({ file: {}, env: { LLMUX_HOME: '/x' } }).home, '/x');
  });

  it('reads the contract\'s example config', () => {
    const c = load({
      providers: {
        local: { format: 'openai', base_url: 'http://127.0.0.1:11434/v1' },
        anthropic: { format: 'anthropic', base_url: 'https://api.anthropic.com/v1', api_key: 'env:ANTHROPIC_API_KEY' },
      },
      models: [{
        id: 'qwen-local', provider: 'local', upstream_id: 'qwen3:8b', display_name: 'Qwen3 8B (local)', context_length: 32768, max_output_tokens: 8192,
        fallbacks: ['claude-haiku-4-5'], reasoning: true,
        capabilities: { supports_function_calling: true, supports_vision: false, supports_streaming: true, supports_structured_output: true },
        pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
      }],
      tiers: { basic: { rpm: 60, tpm: 90000, concurrency: 10 } },
      limits: { max_body_bytes: 33554432, upstream_timeout_ms: 600000, stream_idle_timeout_ms: 300000 },
      builtin_catalog: true,
    });
    assert.equal(c.providers['local']?.keyless, true);
    assert.equal(c.providers['anthropic']?.apiKey, 'env:ANTHROPIC_API_KEY');
    const m = c.models[0]!;
    assert.equal(m.upstream_id, 'qwen3:8b');
    assert.deepEqual(m.fallbacks, ['claude-haiku-4-5']);
    assert.equal(m.reasoning, true);
  });

  it('starts a config model with a built-in id from the built-in entry', () => {
    const other = BUILTIN_MODELS.find((b) => b.id !== 'claude-haiku-4-5')!.id;
    const c = load({ models: [{ id: 'claude-haiku-4-5', fallbacks: [other] }] });
    const m = c.models[0]!;
    assert.equal(m.provider, 'anthropic');
    assert.ok(m.context_length > 100_000);
    assert.deepEqual(m.fallbacks, [other]);
  });

  const bad: Array<[unknown, RegExp]> = [
    [[], /\(top level\): must be a JSON object/],
    [{ nope: 1 }, /nope: unknown field/],
    [{ providers: { x: { format: 'openai' } } }, /providers\.x\.base_url: must be an http\(s\) URL string/],
    [{ providers: { x: { format: 'openai', base_url: 'ftp://a' } } }, /providers\.x\.base_url: must start with http/],
    [{ providers: { x: { format: 'openai', base_url: 'not a url' } } }, /providers\.x\.base_url: "not a url" is not a URL/],
    [{ providers: { x: { format: 'openai', base_url: 'http://a', api_key: 5 } } }, /providers\.x\.api_key/],
    [{ providers: { x: { format: 'openai', base_url: 'http://a', headers: { a: 1 } } } }, /providers\.x\.headers\.a: must be a string/],
    [{ providers: { x: { format: 'openai', base_url: 'http://a', headers: { 'x-team': 'a\r\nx-injected: 1' } } } }, /providers\.x\.headers\.x-team: has a line break or another control character/],
    [{ providers: { x: { format: 'openai', base_url: 'http://a', headers: { 'bad name': 'v' } } } }, /providers\.x\.headers: "bad name" is not a header name/],
    [{ providers: { 'bad name!': { format: 'openai', base_url: 'http://a' } } }, /providers\.bad name!/],
    [{ models: {} }, /models: must be an array/],
    [{ models: [{ id: 'm' }] }, /models\.0\.provider: must name a provider/],
    [{ models: [{ id: 'm', provider: 'nope' }] }, /models\.0\.provider: "nope" is not a configured provider/],
    [{ models: [{ id: 'm', provider: 'openai' }, { id: 'm', provider: 'openai' }] }, /models\.1\.id: "m" appears twice/],
    [{ models: [{ id: 'm', provider: 'openai', fallbacks: ['ghost'] }] }, /models\.0\.fallbacks\.0: "ghost" is not a known model id/],
    [{ models: [{ id: 'm', provider: 'openai', fallbacks: ['m'] }] }, /cannot fall back to itself/],
    [{ models: [{ id: 'm', provider: 'openai', context_length: -1 }] }, /models\.0\.context_length: must be a whole number >= 1/],
    [{ models: [{ id: 'm', provider: 'openai', capabilities: { flying: true } }] }, /models\.0\.capabilities\.flying: unknown capability/],
    [{ models: [{ id: 'm', provider: 'openai', capabilities: { supports_vision: 'yes' } }] }, /must be true or false/],
    [{ models: [{ id: 'm', provider: 'openai', pricing: { input_tokens_cost_per_million: -1 } }] }, /pricing\.input_tokens_cost_per_million: must be a number >= 0/],
    [{ models: [{ id: 'm', provider: 'openai', pricing: { currency: '' } }] }, /pricing\.currency/],
    [{ models: [{ id: 'm', provider: 'openai', max_tokens_param: 'x' }] }, /max_tokens_param/],
    [{ models: [{ id: 'm', provider: 'openai', created_at: 'yesterday' }] }, /created_at: must be an ISO 8601 timestamp/],
    [{ models: [{ id: 'm', provider: 'openai', type: 'embedding' }] }, /type: must be "chat"/],
    [{ models: [{ id: 'm', provider: 'openai', reasoning: 'yes' }] }, /reasoning: must be true or false/],
    [{ models: [{ id: 'm', provider: 'openai', wings: 2 }] }, /models\.0\.wings: unknown field/],
    [{ tiers: { gold: {} } }, /tiers\.gold: unknown tier/],
    [{ tiers: { basic: { rpm: 0 } } }, /tiers\.basic\.rpm: must be a whole number >= 1/],
    [{ tiers: { basic: { burst: 1 } } }, /tiers\.basic\.burst: unknown field/],
    [{ limits: { max_body_bytes: 'big' } }, /limits\.max_body_bytes/],
    [{ limits: { speed: 1 } }, /limits\.speed: unknown field/],
    [{ limits: { keep_alive_timeout_ms: 0 } }, /limits\.keep_alive_timeout_ms: must be a whole number >= 1/],
    [{ retry: { attempts: 0 } }, /retry\.attempts/],
    [{ retry: { jitter: 1 } }, /retry\.jitter: unknown field/],
    [{ builtin_catalog: 'no' }, /builtin_catalog: must be true or false/],
    [{ tiers: { basic: { budget_usd: -1 } } }, /tiers\.basic\.budget_usd: must be a number of US dollars >= 0/],
    [{ tiers: { basic: { budget_usd: '25' } } }, /tiers\.basic\.budget_usd/],
    [{ tiers: { pro: { budget_usd: 5, budget_period: 'week' } } }, /tiers\.pro\.budget_period: must be "day" or "month"/],
    [{ tiers: { pro: { budget_period: 'day' } } }, /tiers\.pro\.budget_period: needs budget_usd beside it/],
    [{ telemetry: { otlp_endpoint: 'grpc://collector:4317' } }, /telemetry\.otlp_endpoint: must be an http:\/\/ or https:\/\/ URL/],
    [{ telemetry: { otlp_endpoint: 4318 } }, /telemetry\.otlp_endpoint/],
    [{ telemetry: { headers: { 'x-token': 1 } } }, /telemetry\.headers\.x-token: must be a string/],
    [{ telemetry: { sampler: 'always' } }, /telemetry\.sampler: unknown field/],
    [{ responses: { store_ttl_s: 0 } }, /responses\.store_ttl_s: must be a whole number >= 1/],
    [{ responses: { store_max_bytes: '64MiB' } }, /responses\.store_max_bytes: must be a whole number >= 1/],
    [{ responses: { store: true } }, /responses\.store: unknown field/],
    [{ providers: { x: { format: 'openai', base_url: 'http://a', responses: 'yes' } } }, /providers\.x\.responses: must be true or false/],
    [{ providers: { x: { format: 'anthropic', base_url: 'http://a', responses: true } } }, /providers\.x\.responses: only an "openai" provider/],
    [{ state: 'redis://127.0.0.1' }, /state: must be an object with url/],
    [{ state: {} }, /state\.url: is required \(or set LLMUX_STATE_URL\)/],
    [{ state: { url: 'http://127.0.0.1:6379' } }, /state\.url: state URL must start with redis:\/\/ or rediss:\/\//],
    [{ state: { url: 'redis://127.0.0.1:6379/zero' } }, /state\.url: state URL database must be a number/],
    [{ state: { url: 'redis://127.0.0.1', timeout_ms: 0 } }, /state\.timeout_ms: must be a whole number >= 1/],
    [{ state: { url: 'redis://127.0.0.1', on_failure: 'open' } }, /state\.on_failure: must be "local" .* or "closed"/],
    [{ state: { url: 'redis://127.0.0.1', lease_ms: 500 } }, /state\.lease_ms: must be at least 1000/],
    [{ state: { url: 'redis://127.0.0.1', prefix: 'x' } }, /state\.prefix: unknown field \(url, timeout_ms, on_failure, lease_ms\)/],
    [{ validation: 'lenient' }, /validation: must be "compatible" \(the default\) or "strict"/],
    [{ providers: { x: { format: 'anthropic', platform: 'gcp', base_url: 'http://a' } } }, /providers\.x\.platform: must be "http", "bedrock", "vertex", "azure"/],
    [{ providers: { x: { format: 'openai', platform: 7, base_url: 'http://a' } } }, /providers\.x\.platform: must be "http"/],
  ];
  for (const [file, message] of bad) {
    it(`refuses ${JSON.stringify(file).slice(0, 90)} with one clear line`, () => {
      assert.throws(() => load(file), (err: Error) => err instanceof ConfigError && message.test(err.message) && !err.message.includes('\n'));
    });
  }

  it('reads tier budgets beside the limits, a month by default, and none when not given', () => {
    const c = load({ tiers: { basic: { rpm: 5, budget_usd: 25 }, pro: { budget_usd: 0.5, budget_period: 'day' } } });
    assert.deepEqual(c.tiers.basic, { rpm: 5, tpm: 90_000, concurrency: 10 }, 'the limits stay limits');
    assert.deepEqual(c.tierBudgets, { basic: { usd: 25, period: 'month' }, pro: { usd: 0.5, period: 'day' } });
    assert.deepEqual(load({}).tierBudgets, {});
  });

  it('reads the OTLP endpoint and collector headers, and exports nothing without an endpoint', () => {
    const c = load({ telemetry: { otlp_endpoint: 'http://127.0.0.1:4318/', headers: { 'X-Honeycomb-Team': 'abc' } } });
    assert.deepEqual(c.telemetry, { otlpEndpoint: 'http://127.0.0.1:4318', headers: { 'x-honeycomb-team': 'abc' } });
    assert.deepEqual(load({}).telemetry, { otlpEndpoint: undefined, headers: {} });
  });

  it('keeps stored responses a day and 64 MiB by default, and reads responses.store_ttl_s and store_max_bytes', () => {
    assert.deepEqual(load({}).responses, { storeTtlMs: 86_400_000, storeMaxBytes: 64 * 1024 * 1024 });
    assert.deepEqual(load({ responses: { store_ttl_s: 600, store_max_bytes: 1_000_000 } }).responses, { storeTtlMs: 600_000, storeMaxBytes: 1_000_000 });
  });

  it('carries a provider on the platform it names, http when it names none', () => {
    const c = load({ providers: { plain: { format: 'openai', base_url: 'http://a/v1' }, named: { format: 'anthropic', platform: 'http', base_url: 'http://b/v1' } } });
    assert.equal(c.providers['plain']?.platform, 'http');
    assert.equal(c.providers['named']?.platform, 'http');
  });

  it('marks a provider that serves /responses (and the built-in openai one) as serving the Responses format', () => {
    const c = load({ providers: { proxy: { format: 'openai', base_url: 'http://a/v1', responses: true }, plain: { format: 'openai', base_url: 'http://b/v1' } } });
    assert.deepEqual(c.providers['proxy']?.serves, ['responses']);
    assert.equal(c.providers['plain']?.serves, undefined);
    assert.deepEqual(c.providers['openai']?.serves, ['responses']);
    assert.equal(c.providers['anthropic']?.serves, undefined);
  });

  it('keeps state in the process without a state section, and fills the state defaults beside a url', () => {
    assert.equal(load({}).state, undefined);
    assert.deepEqual(load({ state: { url: 'redis://127.0.0.1:6379' } }).state, { url: 'redis://127.0.0.1:6379', timeoutMs: 250, onFailure: 'local', leaseMs: 30_000 });
    assert.deepEqual(load({ state: { url: 'rediss://u:p@cache:6380/2', timeout_ms: 100, on_failure: 'closed', lease_ms: 5000 } }).state, {
      url: 'rediss://u:p@cache:6380/2', timeoutMs: 100, onFailure: 'closed', leaseMs: 5000,
    });
  });

  it('takes LLMUX_STATE_URL over the file\'s state.url, with or without a state section', () => {
    assert.equal(load({}, { LLMUX_STATE_URL: 'redis://10.0.0.5:6379' }).state?.url, 'redis://10.0.0.5:6379');
    const both = load({ state: { url: 'redis://file:6379', on_failure: 'closed' } }, { LLMUX_STATE_URL: 'redis://env:6379' }).state;
    assert.deepEqual(both, { url: 'redis://env:6379', timeoutMs: 250, onFailure: 'closed', leaseMs: 30_000 });
    assert.throws(() => load({}, { LLMUX_STATE_URL: 'valkey://x' }), /LLMUX_STATE_URL: state URL must start with redis:\/\//);
  });

  it('never repeats a state URL\'s password in an error', () => {
    assert.throws(() => load({ state: { url: 'redis://user:hunter2@host:6379/x' } }), (err: Error) => /state\.url/.test(err.message) && !err.message.includes('hunter2'));
    assert.throws(() => load({ state: { url: 'redis://user:hunter2@ho st:6379' } }), (err: Error) => /state\.url/.test(err.message) && !err.message.includes('hunter2'));
  });

  it('validates requests as the official APIs do by default, and by the description with "validation": "strict"', () => {
    assert.equal(load({}).validation, 'compatible');
    assert.equal(load({ validation: 'compatible' }).validation, 'compatible');
    assert.equal(load({ validation: 'strict' }).validation, 'strict');
  });

  it('names the file when it is unreadable or not JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmux-config-'));
    writeFileSync(join(dir, 'config.json'), '{ nope');
    assert.throws(() => loadConfig({ home: dir, env: {} }), new RegExp(`config file ${join(dir, 'config.json')}: not valid JSON`));
    assert.throws(() => loadConfig({ configPath: join(dir, 'missing.json'), env: {} }), /cannot be read \(ENOENT\)/);
    assert.equal(loadConfig({ home: join(dir, 'empty'), env: {} }).configPath, undefined);
    assert.throws(() => loadConfig({ file: {}, env: { LLMUX_PORT: '70000' } }), /LLMUX_PORT: "70000" is not a port number/);
  });
});
