import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DEFAULT_TIERS, loadConfig } from '../src/config.ts';
import { BUILTIN_MODELS } from '../src/catalog/builtin-models.ts';

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
    [{ retry: { attempts: 0 } }, /retry\.attempts/],
    [{ retry: { jitter: 1 } }, /retry\.jitter: unknown field/],
    [{ builtin_catalog: 'no' }, /builtin_catalog: must be true or false/],
    [{ validation: 'lenient' }, /validation: must be "compatible" \(the default\) or "strict"/],
  ];
  for (const [file, message] of bad) {
    it(`refuses ${JSON.stringify(file).slice(0, 90)} with one clear line`, () => {
      assert.throws(() => load(file), (err: Error) => err instanceof ConfigError && message.test(err.message) && !err.message.includes('\n'));
    });
  }

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
