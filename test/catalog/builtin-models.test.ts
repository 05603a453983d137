import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_MODELS, ECHO_MODEL, PRICES_TAKEN_AT } from '../../src/catalog/builtin-models.ts';
import { builtinProviders } from '../../src/catalog/providers.ts';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
const HOSTS = new Set(['groq', 'together', 'fireworks', 'openrouter', 'cerebras', 'ollama']);
const providers = builtinProviders({});

describe('BUILTIN_MODELS', () => {
  it('holds more than 70 models across at least 10 providers, every built-in provider included', () => {
    assert.ok(BUILTIN_MODELS.length > 70, `only ${BUILTIN_MODELS.length} models`);
    const used = new Set(BUILTIN_MODELS.map((m) => m.provider));
    assert.ok(used.size >= 10);
    assert.deepEqual([...used].sort(), Object.keys(providers).sort());
  });

  it('gives every model a unique public id', () => {
    const seen = new Set<string>();
    for (const m of BUILTIN_MODELS) {
      assert.ok(!seen.has(m.id), `duplicate id ${m.id}`);
      seen.add(m.id);
    }
    assert.ok(!seen.has(ECHO_MODEL.id));
  });

  it('names no upstream model twice for the same provider', () => {
    const seen = new Set<string>();
    for (const m of BUILTIN_MODELS) {
      const key = `${m.provider} ${m.upstream_id}`;
      assert.ok(!seen.has(key), `duplicate upstream ${key}`);
      seen.add(key);
    }
  });

  for (const m of BUILTIN_MODELS) {
    it(`describes ${m.id} completely and consistently`, () => {
      assert.ok(Object.hasOwn(providers, m.provider), `unknown provider ${m.provider}`);
      assert.ok(m.id.length > 0 && m.upstream_id.length > 0 && m.display_name.length > 0);
      assert.equal(m.owned_by, m.provider);
      assert.equal(m.type, 'chat');
      assert.match(m.created_at, ISO_UTC);
      const released = Date.parse(m.created_at);
      assert.ok(Number.isFinite(released));
      assert.ok(released <= Date.parse(`${PRICES_TAKEN_AT}T23:59:59Z`), 'released after the prices were taken');
      assert.ok(Number.isInteger(m.context_length) && m.context_length > 0);
      assert.ok(Number.isInteger(m.max_output_tokens) && m.max_output_tokens > 0);
      assert.ok(m.max_output_tokens <= m.context_length, 'output cap above the context window');
      const { input_tokens_cost_per_million: input, output_tokens_cost_per_million: output, currency } = m.pricing;
      assert.ok(Number.isFinite(input) && input >= 0);
      assert.ok(Number.isFinite(output) && output >= 0);
      assert.equal(currency, 'USD');
      for (const flag of Object.values(m.capabilities)) assert.equal(typeof flag, 'boolean');
      assert.equal(Object.keys(m.capabilities).length, 4);
      assert.equal(m.capabilities.supports_streaming, true);
      assert.deepEqual(m.fallbacks, []);
      assert.equal(typeof m.reasoning, 'boolean');
    });
  }

  it('prefixes hosted models with their provider and keeps the labs\' own ids bare', () => {
    for (const m of BUILTIN_MODELS) {
      if (HOSTS.has(m.provider)) {
        assert.ok(m.id.startsWith(`${m.provider}/`), m.id);
        const shortUpstream = m.upstream_id.replace('accounts/fireworks/models/', '');
        assert.equal(m.id, `${m.provider}/${shortUpstream}`);
      } else {
        assert.ok(!m.id.includes('/'), m.id);
      }
    }
  });

  it('lets the same open model be served by several hosts under distinct ids', () => {
    const ids = BUILTIN_MODELS.filter((m) => m.upstream_id.endsWith('gpt-oss-120b')).map((m) => m.id).sort();
    assert.deepEqual(ids, [
      'cerebras/gpt-oss-120b',
      'fireworks/gpt-oss-120b',
      'groq/openai/gpt-oss-120b',
      'together/openai/gpt-oss-120b',
    ]);
  });

  it('sends max_completion_tokens exactly to OpenAI reasoning models, which all accept reasoning', () => {
    for (const m of BUILTIN_MODELS) {
      const openaiReasoning = m.provider === 'openai' && /^(o\d|gpt-5|gpt-6)/.test(m.upstream_id);
      assert.equal(m.max_tokens_param, openaiReasoning ? 'max_completion_tokens' : 'max_tokens', m.id);
      if (openaiReasoning) assert.equal(m.reasoning, true, m.id);
    }
    assert.equal(BUILTIN_MODELS.find((m) => m.id === 'gpt-4o')?.reasoning, false);
  });

  it('replays reasoning only to DeepSeek, whose thinking mode requires it after tool calls', () => {
    for (const m of BUILTIN_MODELS) assert.equal(m.replay_reasoning, m.provider === 'deepseek', m.id);
    for (const m of BUILTIN_MODELS.filter((x) => x.provider === 'deepseek')) assert.equal(m.reasoning, true);
  });

  it('prices local Ollama models at zero and every cloud model above zero', () => {
    for (const m of BUILTIN_MODELS) {
      const { input_tokens_cost_per_million: input, output_tokens_cost_per_million: output } = m.pricing;
      if (m.provider === 'ollama') assert.deepEqual([input, output], [0, 0], m.id);
      else assert.ok(input > 0 && output > 0, m.id);
    }
  });

  it('includes the models the description names', () => {
    const ids = new Set(BUILTIN_MODELS.map((m) => m.id));
    for (const id of ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3', 'gpt-5', 'claude-haiku-4-5', 'claude-opus-4-6', 'claude-sonnet-4-6']) {
      assert.ok(ids.has(id), id);
    }
  });

  it('uses Anthropic\'s dated snapshot upstream behind the claude-haiku-4-5 id', () => {
    const haiku = BUILTIN_MODELS.find((m) => m.id === 'claude-haiku-4-5');
    assert.equal(haiku?.upstream_id, 'claude-haiku-4-5-20251001');
  });
});

describe('PRICES_TAKEN_AT', () => {
  it('is a real calendar day', () => {
    assert.match(PRICES_TAKEN_AT, /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(new Date(`${PRICES_TAKEN_AT}T00:00:00Z`).toISOString().slice(0, 10), PRICES_TAKEN_AT);
  });
});

describe('ECHO_MODEL', () => {
  it('is the free llmux-owned echo model that streams but offers no tools, vision or schemas', () => {
    assert.equal(ECHO_MODEL.id, 'llmux-echo');
    assert.equal(ECHO_MODEL.provider, 'llmux');
    assert.equal(ECHO_MODEL.owned_by, 'llmux');
    assert.equal(ECHO_MODEL.type, 'chat');
    assert.match(ECHO_MODEL.created_at, ISO_UTC);
    assert.deepEqual(ECHO_MODEL.capabilities, {
      supports_function_calling: false,
      supports_vision: false,
      supports_streaming: true,
      supports_structured_output: false,
    });
    assert.deepEqual(ECHO_MODEL.pricing, { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' });
    assert.ok(ECHO_MODEL.context_length > 0 && ECHO_MODEL.max_output_tokens > 0);
    assert.equal(ECHO_MODEL.reasoning, false);
    assert.deepEqual(ECHO_MODEL.fallbacks, []);
  });
});
