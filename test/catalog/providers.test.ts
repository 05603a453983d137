import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ProviderConfig } from '../../src/config/types.ts';
import {
  OLLAMA_DEFAULT_BASE_URL,
  builtinProviders,
  isProviderUsable,
  ollamaBaseUrl,
  resolveApiKey,
  resolvePoolKeys,
} from '../../src/catalog/providers.ts';

function provider(overrides: Partial<ProviderConfig>): ProviderConfig {
  return { id: 'p', format: 'chat', baseUrl: 'https://x.test/v1', apiKey: undefined, keyless: false, headers: {}, ...overrides };
}

describe('builtinProviders', () => {
  const providers = builtinProviders({});

  it('offers the twelve built-in providers, keyed by their own id', () => {
    assert.deepEqual(Object.keys(providers).sort(), [
      'anthropic', 'cerebras', 'deepseek', 'fireworks', 'gemini', 'groq',
      'mistral', 'ollama', 'openai', 'openrouter', 'together', 'xai',
    ]);
    for (const [key, config] of Object.entries(providers)) assert.equal(config.id, key);
  });

  it('points each provider at its documented base URL', () => {
    const urls = Object.fromEntries(Object.entries(providers).map(([id, p]) => [id, p.baseUrl]));
    assert.deepEqual(urls, {
      openai: 'https://api.openai.com/v1',
      anthropic: 'https://api.anthropic.com/v1',
      gemini: 'https://generativelanguage.googleapis.com/v1beta',
      mistral: 'https://api.mistral.ai/v1',
      groq: 'https://api.groq.com/openai/v1',
      deepseek: 'https://api.deepseek.com/v1',
      xai: 'https://api.x.ai/v1',
      together: 'https://api.together.xyz/v1',
      fireworks: 'https://api.fireworks.ai/inference/v1',
      openrouter: 'https://openrouter.ai/api/v1',
      cerebras: 'https://api.cerebras.ai/v1',
      ollama: 'http://127.0.0.1:11434/v1',
    });
  });

  it('speaks the anthropic format only for Anthropic, the gemini format only for Gemini', () => {
    for (const p of Object.values(providers)) assert.equal(p.format, p.id === 'anthropic' ? 'messages' : p.id === 'gemini' ? 'gemini' : 'chat');
  });

  it('reads every cloud credential from <PROVIDER>_API_KEY and leaves Ollama keyless', () => {
    for (const p of Object.values(providers)) {
      if (p.id === 'ollama') {
        assert.equal(p.keyless, true);
        assert.equal(p.apiKey, undefined);
      } else {
        assert.equal(p.keyless, false);
        assert.equal(p.apiKey, `env:${p.id.toUpperCase()}_API_KEY`);
      }
      assert.deepEqual(p.headers, {});
    }
  });

  it('derives the Ollama base URL from OLLAMA_HOST', () => {
    assert.equal(builtinProviders({ OLLAMA_HOST: 'gpu-box:11500' }).ollama?.baseUrl, 'http://gpu-box:11500/v1');
  });
});

describe('ollamaBaseUrl', () => {
  const cases: Array<[string | undefined, string]> = [
    [undefined, 'http://127.0.0.1:11434/v1'],
    ['', 'http://127.0.0.1:11434/v1'],
    ['   ', 'http://127.0.0.1:11434/v1'],
    ['localhost', 'http://localhost:11434/v1'],
    ['gpu-box:8080', 'http://gpu-box:8080/v1'],
    ['0.0.0.0', 'http://127.0.0.1:11434/v1'],
    ['0.0.0.0:11435', 'http://127.0.0.1:11435/v1'],
    [':11436', 'http://127.0.0.1:11436/v1'],
    ['http://gpu-box', 'http://gpu-box:80/v1'],
    ['https://ollama.example.com', 'https://ollama.example.com:443/v1'],
    ['HTTPS://ollama.example.com:8443/', 'https://ollama.example.com:8443/v1'],
    ['https://proxy.example/ollama/', 'https://proxy.example:443/ollama/v1'],
    ['::1', 'http://[::1]:11434/v1'],
    ['[::1]:9000', 'http://[::1]:9000/v1'],
    ['[::]:9000', 'http://[::1]:9000/v1'],
    ['gpu-box:99999', 'http://gpu-box:11434/v1'],
    ['gpu-box:', 'http://gpu-box:11434/v1'],
    ['tcp://gpu-box:1234', 'http://gpu-box:1234/v1'],
    ['ollama.com', 'https://ollama.com:443/v1'],
  ];
  for (const [input, expected] of cases) {
    it(`reads OLLAMA_HOST=${JSON.stringify(input)} as Ollama does: ${expected}`, () => {
      assert.equal(ollamaBaseUrl(input), expected);
    });
  }

  it('uses the default address constant when unset', () => {
    assert.equal(ollamaBaseUrl(undefined), OLLAMA_DEFAULT_BASE_URL);
  });
});

describe('resolveApiKey', () => {
  it('resolves env:NAME from the environment given', () => {
    assert.equal(resolveApiKey(provider({ apiKey: 'env:MY_KEY' }), { MY_KEY: 'sk-123' }), 'sk-123');
  });

  it('treats a missing or empty variable as no credential', () => {
    assert.equal(resolveApiKey(provider({ apiKey: 'env:MY_KEY' }), {}), undefined);
    assert.equal(resolveApiKey(provider({ apiKey: 'env:MY_KEY' }), { MY_KEY: '' }), undefined);
  });

  it('returns a literal key as written and an empty literal as none', () => {
    assert.equal(resolveApiKey(provider({ apiKey: 'sk-literal' }), {}), 'sk-literal');
    assert.equal(resolveApiKey(provider({ apiKey: '' }), {}), undefined);
  });

  it('returns undefined when no credential is configured', () => {
    assert.equal(resolveApiKey(provider({ apiKey: undefined, keyless: true }), { ANY: 'x' }), undefined);
  });
});

describe('isProviderUsable', () => {
  const builtin = builtinProviders({});

  it('needs the credential of a keyed provider', () => {
    const openai = builtin.openai!;
    assert.equal(isProviderUsable(openai, {}), false);
    assert.equal(isProviderUsable(openai, { OPENAI_API_KEY: '' }), false);
    assert.equal(isProviderUsable(openai, { OPENAI_API_KEY: 'sk-x' }), true);
    assert.equal(isProviderUsable(provider({ apiKey: 'sk-literal' }), {}), true);
  });

  it('counts the built-in Ollama as usable only when OLLAMA_HOST is set', () => {
    const ollama = builtin.ollama!;
    assert.equal(isProviderUsable(ollama, {}), false);
    assert.equal(isProviderUsable(ollama, { OLLAMA_HOST: '  ' }), false);
    assert.equal(isProviderUsable(ollama, { OLLAMA_HOST: '127.0.0.1:11434' }), true);
  });

  it('trusts an Ollama the config file points elsewhere, and any other keyless provider', () => {
    const configured = provider({ id: 'ollama', baseUrl: 'http://gpu-box:11434/v1', keyless: true });
    assert.equal(isProviderUsable(configured, {}), true);
    assert.equal(isProviderUsable(provider({ id: 'local', keyless: true }), {}), true);
  });

  it('counts a provider with api_keys as usable when any of its keys resolves', () => {
    const pooled = provider({ apiKey: 'env:K1', apiKeys: ['env:K1', 'env:K2'] });
    assert.equal(isProviderUsable(pooled, {}), false);
    assert.equal(isProviderUsable(pooled, { K2: 'sk-2' }), true);
    assert.deepEqual(resolvePoolKeys(pooled, { K1: 'sk-1', K2: 'sk-2' }), ['sk-1', 'sk-2']);
    assert.deepEqual(resolvePoolKeys(provider({ apiKey: 'sk-lone' }), {}), [], 'a lone api_key is not a pool');
  });
});
