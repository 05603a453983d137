import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelEntry, ProviderConfig } from '../../src/config/types.ts';
import { createCatalog, toModelList, toModelRecord } from '../../src/catalog/catalog.ts';
import { BUILTIN_MODELS, ECHO_MODEL } from '../../src/catalog/builtin-models.ts';
import { builtinProviders } from '../../src/catalog/providers.ts';

const RECORD_KEYS = [
  'id', 'object', 'created', 'type', 'created_at', 'owned_by', 'display_name',
  'capabilities', 'pricing', 'context_length', 'max_output_tokens',
];

function entry(overrides: Partial<ModelEntry>): ModelEntry {
  return {
    id: 'custom',
    provider: 'local',
    upstream_id: 'custom:latest',
    display_name: 'Custom',
    owned_by: 'local',
    type: 'chat',
    created_at: '2026-01-01T00:00:00Z',
    context_length: 32_768,
    max_output_tokens: 8_192,
    capabilities: {
      supports_function_calling: true,
      supports_vision: false,
      supports_streaming: true,
      supports_structured_output: true,
    },
    pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
    reasoning: false,
    fallbacks: [],
    max_tokens_param: 'max_tokens',
    replay_reasoning: false,
    ...overrides,
  };
}

const LOCAL: ProviderConfig = {
  id: 'local', format: 'chat', baseUrl: 'http://127.0.0.1:8080/v1', apiKey: undefined, keyless: true, headers: {},
};

function catalogWith(
  env: Record<string, string | undefined>,
  extra: { models?: ModelEntry[]; builtinCatalog?: boolean; providers?: Record<string, ProviderConfig> } = {},
) {
  return createCatalog({
    providers: { ...builtinProviders(env), ...extra.providers },
    models: extra.models ?? [],
    builtinCatalog: extra.builtinCatalog ?? true,
    env,
  });
}

const ids = (models: ModelEntry[]) => models.map((m) => m.id);

describe('createCatalog: which models are usable', () => {
  it('lists only llmux-echo on a machine with no credentials and no OLLAMA_HOST', () => {
    const catalog = catalogWith({});
    assert.deepEqual(ids(catalog.list()), ['llmux-echo']);
    assert.equal(catalog.get('llmux-echo'), ECHO_MODEL);
    assert.equal(catalog.get('gpt-4o'), undefined);
    assert.equal(catalog.get('ollama/llama3.3'), undefined);
  });

  it('lists a provider\'s models once its key is in the environment, echo first and in catalog order', () => {
    const catalog = catalogWith({ OPENAI_API_KEY: 'sk-test' });
    const openaiIds = BUILTIN_MODELS.filter((m) => m.provider === 'openai').map((m) => m.id);
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', ...openaiIds]);
    assert.equal(catalog.get('gpt-4o')?.upstream_id, 'gpt-4o');
    assert.equal(catalog.get('claude-opus-5-5'), undefined);
  });

  it('lists every built-in model when every provider is usable', () => {
    const env: Record<string, string> = { OLLAMA_HOST: '127.0.0.1' };
    for (const p of Object.values(builtinProviders({}))) if (!p.keyless) env[`${p.id.toUpperCase()}_API_KEY`] = 'k';
    assert.deepEqual(ids(catalogWith(env).list()), ['llmux-echo', ...ids(BUILTIN_MODELS)]);
  });

  it('sees environment changes made after creation', () => {
    const env: Record<string, string | undefined> = {};
    const catalog = catalogWith(env);
    assert.equal(catalog.list().length, 1);
    env['ANTHROPIC_API_KEY'] = 'sk-ant';
    assert.ok(catalog.list().some((m) => m.id === 'claude-sonnet-4-6'));
    assert.equal(catalog.get('claude-sonnet-4-6')?.provider, 'anthropic');
    delete env['ANTHROPIC_API_KEY'];
    assert.deepEqual(ids(catalog.list()), ['llmux-echo']);
    assert.equal(catalog.get('claude-sonnet-4-6'), undefined);
  });

  it('lists local Ollama models once OLLAMA_HOST is set', () => {
    const catalog = catalogWith({ OLLAMA_HOST: 'gpu-box' });
    assert.equal(catalog.get('ollama/llama3.3')?.upstream_id, 'llama3.3');
    assert.equal(catalog.provider('ollama')?.baseUrl, 'http://gpu-box:11434/v1');
  });

  it('hands out copies of its list, so a caller cannot change the next answer', () => {
    const catalog = catalogWith({});
    catalog.list().push(entry({ id: 'intruder' }));
    assert.deepEqual(ids(catalog.list()), ['llmux-echo']);
  });

  it('answers undefined for unknown ids, including object-prototype names', () => {
    const catalog = catalogWith({ OPENAI_API_KEY: 'k' });
    for (const id of ['nope', '', '__proto__', 'constructor', 'toString']) {
      assert.equal(catalog.get(id), undefined);
      assert.equal(catalog.provider(id), undefined);
    }
  });

  it('lists a cloud platform provider\'s models as its credential check says, judging others by their key', () => {
    const bedrock: ProviderConfig = {
      id: 'bedrock', format: 'messages', platform: 'bedrock', baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com', apiKey: undefined, keyless: false, headers: {},
      bedrock: { region: 'us-east-1' },
    };
    let resolved = false;
    const catalog = createCatalog({
      providers: { ...builtinProviders({}), bedrock, local: LOCAL },
      models: [entry({ id: 'claude-bedrock', provider: 'bedrock' }), entry({ id: 'local-model', provider: 'local' })],
      builtinCatalog: false,
      env: {},
      platformUsable: (provider) => (provider.platform === 'bedrock' ? resolved : undefined),
    });
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'local-model']);
    assert.equal(catalog.get('claude-bedrock'), undefined);
    resolved = true;
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'claude-bedrock', 'local-model']);
    assert.equal(catalog.get('claude-bedrock')?.provider, 'bedrock');
  });

  it('never lists a cloud platform provider\'s models without a credential check', () => {
    const vertex: ProviderConfig = {
      id: 'vertex', format: 'messages', platform: 'vertex', baseUrl: 'https://aiplatform.googleapis.com', apiKey: undefined, keyless: false, headers: {},
      vertex: { project: 'p', location: 'global' },
    };
    const catalog = createCatalog({ providers: { vertex }, models: [entry({ id: 'claude-vertex', provider: 'vertex' })], builtinCatalog: false, env: {} });
    assert.deepEqual(ids(catalog.list()), ['llmux-echo']);
  });
});

describe('createCatalog: config-file models', () => {
  it('adds config models after the built-ins', () => {
    const custom = entry({});
    const catalog = catalogWith({}, { models: [custom], providers: { local: LOCAL } });
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'custom']);
    assert.equal(catalog.get('custom'), custom);
    assert.equal(catalog.provider('local'), LOCAL);
  });

  it('replaces a built-in model with the same id, keeping its place', () => {
    const replacement = entry({ id: 'gpt-4o', provider: 'openai', upstream_id: 'gpt-4o-2024-11-20', display_name: 'My GPT-4o' });
    const catalog = catalogWith({ OPENAI_API_KEY: 'k' }, { models: [replacement] });
    const listed = catalog.list();
    assert.equal(listed.filter((m) => m.id === 'gpt-4o').length, 1);
    const builtinIndex = BUILTIN_MODELS.filter((m) => m.provider === 'openai').findIndex((m) => m.id === 'gpt-4o');
    assert.equal(listed[builtinIndex + 1], replacement);
    assert.equal(catalog.get('gpt-4o')?.upstream_id, 'gpt-4o-2024-11-20');
  });

  it('lets a later config model with the same id win over an earlier one', () => {
    const first = entry({ display_name: 'first' });
    const second = entry({ display_name: 'second' });
    const catalog = catalogWith({}, { models: [first, second], providers: { local: LOCAL } });
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'custom']);
    assert.equal(catalog.get('custom')?.display_name, 'second');
  });

  it('hides a config model whose provider is unknown, so the pipeline answers model_not_found', () => {
    const catalog = catalogWith({}, { models: [entry({ provider: 'nowhere' })] });
    assert.deepEqual(ids(catalog.list()), ['llmux-echo']);
    assert.equal(catalog.get('custom'), undefined);
  });

  it('hides a config model whose provider has no credential', () => {
    const keyed: ProviderConfig = { ...LOCAL, id: 'paid', apiKey: 'env:PAID_KEY', keyless: false };
    const env: Record<string, string | undefined> = {};
    const catalog = catalogWith(env, { models: [entry({ provider: 'paid' })], providers: { paid: keyed } });
    assert.equal(catalog.get('custom'), undefined);
    env['PAID_KEY'] = 'secret';
    assert.equal(catalog.get('custom')?.provider, 'paid');
  });

  it('serves only config models and the echo model when builtin_catalog is false', () => {
    const catalog = catalogWith(
      { OPENAI_API_KEY: 'k' },
      { builtinCatalog: false, models: [entry({}), entry({ id: 'mine-4o', provider: 'openai' })], providers: { local: LOCAL } },
    );
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'custom', 'mine-4o']);
    assert.equal(catalog.get('gpt-4o'), undefined);
  });

  it('has no provider entry for the in-process echo model', () => {
    assert.equal(catalogWith({}).provider(ECHO_MODEL.provider), undefined);
  });
});

describe('toModelRecord', () => {
  it('has exactly the description\'s fields, in its order', () => {
    const record = toModelRecord(BUILTIN_MODELS[0]!);
    assert.deepEqual(Object.keys(record), RECORD_KEYS);
    assert.deepEqual(Object.keys(record.capabilities), [
      'supports_function_calling', 'supports_vision', 'supports_streaming', 'supports_structured_output',
    ]);
    assert.deepEqual(Object.keys(record.pricing), [
      'input_tokens_cost_per_million', 'output_tokens_cost_per_million', 'currency',
    ]);
    assert.ok(JSON.stringify(record).startsWith('{"id":'));
  });

  it('copies the public values and leaves out provider, upstream id and internals', () => {
    const model = entry({ id: 'x', upstream_id: 'secret-upstream', owned_by: 'someone' });
    assert.deepEqual(toModelRecord(model), {
      id: 'x',
      object: 'model',
      created: 1767225600,
      type: 'chat',
      created_at: '2026-01-01T00:00:00Z',
      owned_by: 'someone',
      display_name: 'Custom',
      capabilities: model.capabilities,
      pricing: model.pricing,
      context_length: 32_768,
      max_output_tokens: 8_192,
    });
    assert.ok(!JSON.stringify(toModelRecord(model)).includes('secret-upstream'));
  });

  it('drops extra fields smuggled into a config model\'s nested objects', () => {
    const model = entry({});
    Object.assign(model.pricing, { api_key: 'sk-leak' });
    Object.assign(model.capabilities, { note: 'x' });
    Object.assign(model, { api_key: 'sk-leak-2' });
    const json = JSON.stringify(toModelRecord(model));
    assert.ok(!json.includes('sk-leak'));
    assert.ok(!json.includes('"note"'));
  });

  it('builds each record once and protects it from changes', () => {
    const model = entry({});
    const record = toModelRecord(model);
    assert.equal(toModelRecord(model), record);
    assert.ok(Object.isFrozen(record) && Object.isFrozen(record.pricing) && Object.isFrozen(record.capabilities));
  });
});

describe('toModelList', () => {
  it('wraps records with the paging fields the official SDKs read', () => {
    const list = toModelList([ECHO_MODEL, BUILTIN_MODELS[0]!]);
    assert.deepEqual(Object.keys(list), ['object', 'data', 'has_more', 'first_id', 'last_id']);
    assert.equal(list.object, 'list');
    assert.equal(list.has_more, false);
    assert.equal(list.first_id, 'llmux-echo');
    assert.equal(list.last_id, BUILTIN_MODELS[0]!.id);
    assert.deepEqual(list.data, [toModelRecord(ECHO_MODEL), toModelRecord(BUILTIN_MODELS[0]!)]);
  });

  it('reports null first and last ids for an empty list', () => {
    assert.deepEqual(toModelList([]), { object: 'list', data: [], has_more: false, first_id: null, last_id: null });
  });
});

describe('createCatalog: deployments, key pools and discovered models (llmux.md section 10)', () => {
  const keyed = (id: string, fields: Partial<ProviderConfig>): ProviderConfig => ({ id, format: 'chat', baseUrl: `http://${id}.invalid/v1`, apiKey: undefined, keyless: false, headers: {}, ...fields });

  it('serves a model with deployments when any deployment\'s provider is usable, none when none is', () => {
    const providers = { a: keyed('a', { apiKey: 'env:A_KEY' }), b: keyed('b', { apiKey: 'env:B_KEY' }) };
    const model = entry({ id: 'spread', provider: 'a', upstream_id: 'm', deployments: [{ provider: 'a', upstream_id: 'm', weight: 1 }, { provider: 'b', upstream_id: 'm', weight: 1 }] });
    const env: Record<string, string | undefined> = {};
    const catalog = catalogWith(env, { providers, models: [model], builtinCatalog: false });
    assert.equal(catalog.get('spread'), undefined);
    assert.ok(!ids(catalog.list()).includes('spread'));
    env['B_KEY'] = 'sk-b';
    assert.equal(catalog.get('spread'), model, 'the second deployment is enough');
    assert.ok(ids(catalog.list()).includes('spread'));
  });

  it('serves a provider with api_keys when any of its keys resolves', () => {
    const providers = { pool: keyed('pool', { apiKey: 'env:K1', apiKeys: ['env:K1', 'env:K2'] }) };
    const model = entry({ id: 'pooled', provider: 'pool' });
    const env: Record<string, string | undefined> = {};
    const catalog = catalogWith(env, { providers, models: [model], builtinCatalog: false });
    assert.equal(catalog.get('pooled'), undefined);
    env['K2'] = 'sk-two';
    assert.equal(catalog.get('pooled'), model);
  });

  it('adds discovered models after the others while their provider is usable, and says which ids are configured', () => {
    let found: ModelEntry[] = [entry({ id: 'qwen3:8b', provider: 'local' })];
    const catalog = createCatalog({
      providers: { local: { ...LOCAL, discover: true } },
      models: [entry({ id: 'custom' })],
      builtinCatalog: false,
      env: {},
      discovered: { models: () => found, get: (id) => found.find((m) => m.id === id) },
    });
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'custom', 'qwen3:8b']);
    assert.equal(catalog.get('qwen3:8b')?.provider, 'local');
    assert.equal(catalog.configured('custom'), true);
    assert.equal(catalog.configured('qwen3:8b'), false);
    found = [];
    assert.deepEqual(ids(catalog.list()), ['llmux-echo', 'custom'], 'a new list is read at once');
    assert.equal(catalog.get('qwen3:8b'), undefined);
  });
});
