import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { createDiscovery, createHttpModelsFetcher, MAX_MODELS, parseModelList } from '../../src/routing/discovery.ts';
import type { ModelsFetcher } from '../../src/routing/discovery.ts';
import { DEFAULT_CAPABILITIES } from '../../src/config/types.ts';
import type { ProviderConfig } from '../../src/config/types.ts';
import { provider } from '../helpers/routing.ts';

const T0 = Date.UTC(2026, 2, 14, 10, 0, 0);

/** What each server answers to GET /v1/models, as their own code writes it. */
const OLLAMA = { object: 'list', data: [{ id: 'qwen3:8b', object: 'model', created: 1_745_000_000, owned_by: 'library' }, { id: 'llama3.2:3b', object: 'model', created: 1_740_000_000, owned_by: 'library' }] };
const LM_STUDIO = { data: [{ id: 'qwen/qwen3-coder-30b', object: 'model', owned_by: 'organization_owner' }], object: 'list' };
const VLLM = { object: 'list', data: [{ id: 'meta-llama/Llama-3.1-8B-Instruct', object: 'model', created: 1_745_000_000, owned_by: 'vllm', root: 'meta-llama/Llama-3.1-8B-Instruct', parent: null, max_model_len: 131_072, permission: [{ id: 'modelperm-1', object: 'model_permission' }] }] };
const OPENROUTER = {
  data: [{
    id: 'anthropic/claude-sonnet-4.5', canonical_slug: 'anthropic/claude-4.5-sonnet-20250929', name: 'Anthropic: Claude Sonnet 4.5', created: 1_759_161_676,
    description: '…', context_length: 1_000_000,
    architecture: { modality: 'text+image->text', input_modalities: ['text', 'image'], output_modalities: ['text'], tokenizer: 'Claude' },
    pricing: { prompt: '0.000003', completion: '0.000015', request: '0', image: '0.0048' },
    top_provider: { context_length: 1_000_000, max_completion_tokens: 64_000, is_moderated: false },
    supported_parameters: ['tools', 'reasoning'],
  }],
};

describe('a provider\'s model list', () => {
  const local = provider('local');

  it('reads Ollama\'s and LM Studio\'s lists as models with default capabilities, no price, under their own ids', () => {
    const models = parseModelList(local, OLLAMA, T0);
    assert.deepEqual(models.map((m) => [m.id, m.provider, m.upstream_id, m.owned_by]), [['qwen3:8b', 'local', 'qwen3:8b', 'local'], ['llama3.2:3b', 'local', 'llama3.2:3b', 'local']]);
    assert.deepEqual(models[0]!.capabilities, DEFAULT_CAPABILITIES);
    assert.deepEqual(models[0]!.pricing, { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' });
    assert.equal(models[0]!.created_at, new Date(1_745_000_000_000).toISOString());
    const studio = parseModelList(local, LM_STUDIO, T0)[0]!;
    assert.deepEqual([studio.id, studio.created_at, studio.context_length], ['qwen/qwen3-coder-30b', new Date(T0).toISOString(), 32_768]);
  });

  it('keeps what vLLM and OpenRouter say of a model\'s size, and not OpenRouter\'s price', () => {
    assert.equal(parseModelList(local, VLLM, T0)[0]!.context_length, 131_072);
    const sonnet = parseModelList(local, OPENROUTER, T0)[0]!;
    assert.deepEqual([sonnet.display_name, sonnet.context_length, sonnet.max_output_tokens], ['Anthropic: Claude Sonnet 4.5', 1_000_000, 64_000]);
    assert.equal(sonnet.pricing.input_tokens_cost_per_million, 0);
  });

  it('refuses what is not a list, skips bad or repeated ids, and keeps at most MAX_MODELS', () => {
    assert.throws(() => parseModelList(local, { models: [] }, T0), /not a model list/);
    assert.throws(() => parseModelList(local, 'x', T0), /not a model list/);
    const odd = parseModelList(local, { data: [{ id: '' }, { id: 'a' }, { id: 'a' }, { id: 'bad\nid' }, { id: 'x'.repeat(300) }, 'str', { id: 7 }, { id: 'b' }] }, T0);
    assert.deepEqual(odd.map((m) => m.id), ['a', 'b']);
    const many = parseModelList(local, { data: Array.from({ length: MAX_MODELS + 10 }, (_, i) => ({ id: `m${i}` })) }, T0);
    assert.equal(many.length, MAX_MODELS);
  });
});

interface Scheduled { run: () => void; ms: number; cancelled: boolean }

function discoveryFixture(providers: ProviderConfig[], answers: Map<string, unknown | Error>, configured: string[] = []) {
  const scheduled: Scheduled[] = [];
  const errors: string[] = [];
  let changes = 0;
  const fetchModels: ModelsFetcher = async (p) => {
    const answer = answers.get(p.id);
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const discovery = createDiscovery({
    providers,
    fetchModels,
    isConfigured: (id) => configured.includes(id),
    now: () => T0,
    schedule: (run, ms) => {
      const entry = { run, ms, cancelled: false };
      scheduled.push(entry);
      return () => {
        entry.cancelled = true;
      };
    },
    onError: (id, message) => errors.push(`${id}: ${message}`),
    onChange: () => changes++,
  });
  return { discovery, scheduled, errors, changes: () => changes };
}

describe('discovery', () => {
  const first = provider('first', { discover: true });
  const second = provider('second', { discover: true });
  const quiet = provider('quiet');

  it('lists the models of discovering providers only: a configured id wins, then the first provider in the config', async () => {
    const answers = new Map<string, unknown>([
      ['first', { data: [{ id: 'shared' }, { id: 'configured' }, { id: 'only-first' }] }],
      ['second', { data: [{ id: 'shared' }, { id: 'only-second' }] }],
      ['quiet', { data: [{ id: 'never' }] }],
    ]);
    const { discovery } = discoveryFixture([first, second, quiet], answers, ['configured']);
    await discovery.refresh();
    assert.deepEqual(discovery.models().map((m) => `${m.provider}:${m.id}`), ['first:shared', 'first:only-first', 'second:only-second']);
    assert.equal(discovery.get('only-second')?.provider, 'second');
    assert.equal(discovery.get('configured'), undefined);
  });

  it('drops models gone from a provider\'s list with its next read, and reads every 5 minutes', async () => {
    const answers = new Map<string, unknown>([['first', { data: [{ id: 'a' }, { id: 'b' }] }]]);
    const { discovery, scheduled, changes } = discoveryFixture([first], answers);
    await discovery.refresh();
    assert.deepEqual(scheduled.map((s) => s.ms), [300_000]);
    answers.set('first', { data: [{ id: 'b' }] });
    scheduled[0]!.run();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(discovery.models().map((m) => m.id), ['b']);
    assert.equal(changes(), 2);
    assert.equal(scheduled[0]!.cancelled, true, 'a read cancels the one planned');
  });

  it('does not hold up start, keeps the last list when a provider cannot be read, and reads it again sooner', async () => {
    const answers = new Map<string, unknown>([['first', { data: [{ id: 'kept' }] }]]);
    const { discovery, scheduled, errors } = discoveryFixture([first], answers);
    await discovery.refresh();
    answers.set('first', new Error('connect ECONNREFUSED 127.0.0.1:11434'));
    for (let i = 0; i < 6; i++) await discovery.refresh();
    assert.deepEqual(discovery.models().map((m) => m.id), ['kept']);
    assert.deepEqual(scheduled.slice(1).map((s) => s.ms / 1000), [30, 60, 120, 240, 300, 300]);
    assert.match(errors[0]!, /^first: model discovery: GET http:\/\/first\.invalid\/v1\/models failed \(connect ECONNREFUSED 127\.0\.0\.1:11434\); read again in 30 s$/);
    answers.set('first', { data: [{ id: 'back' }] });
    await discovery.refresh('first');
    assert.deepEqual(discovery.models().map((m) => m.id), ['back']);
    assert.equal(scheduled.at(-1)!.ms, 300_000, 'back to the 5-minute period');

    let release: () => void = () => {};
    const slow = createDiscovery({ providers: [first], fetchModels: () => new Promise((resolve) => (release = () => resolve({ data: [] }))), isConfigured: () => false, schedule: () => () => {} });
    let reads = 0;
    const counting = createDiscovery({ providers: [first], fetchModels: async () => ({ data: [{ id: `read-${++reads}` }] }), isConfigured: () => false, schedule: () => () => {} });
    counting.start();
    counting.start();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(reads, 1, 'a second start reads nothing more');
    slow.start();
    assert.deepEqual(slow.models(), [], 'start returned before the provider answered');
    release();
    slow.close();
  });
});

describe('reading GET /models over HTTP', () => {
  async function serve(handler: http.RequestListener): Promise<{ base: string; close: () => Promise<void> }> {
    const server = http.createServer(handler);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    return { base: `http://127.0.0.1:${port}/v1`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }

  it('reads a local server\'s list with the provider\'s headers, and discovery lists its models', async () => {
    let seen: http.IncomingHttpHeaders | undefined;
    let path: string | undefined;
    const fake = await serve((req, res) => {
      seen = req.headers;
      path = req.url;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(OLLAMA));
    });
    try {
      const local = provider('local', { baseUrl: fake.base, discover: true });
      const fetchModels = createHttpModelsFetcher({ headers: () => ({ authorization: 'Bearer local-secret' }) });
      const discovery = createDiscovery({ providers: [local], fetchModels, isConfigured: () => false, schedule: () => () => {} });
      await discovery.refresh();
      assert.deepEqual(discovery.models().map((m) => m.id), ['qwen3:8b', 'llama3.2:3b']);
      assert.equal(path, '/v1/models');
      assert.equal(seen?.['authorization'], 'Bearer local-secret');
      discovery.close();
    } finally {
      await fake.close();
    }
  });

  it('fails on a status that is not 2xx, an answer too large, no answer in time, and a closed port', async () => {
    const fake = await serve((req, res) => {
      if (req.url === '/err/models') res.writeHead(503).end('busy');
      else if (req.url === '/big/models') res.writeHead(200).end(JSON.stringify({ data: Array.from({ length: 5_000 }, (_, i) => ({ id: `model-${i}` })) }));
      else setTimeout(() => res.writeHead(200).end('{"data":[]}'), 2_000).unref();
    });
    const base = fake.base.replace(/\/v1$/, '');
    try {
      const fetcher = createHttpModelsFetcher({ headers: () => ({}), maxBytes: 10_000, timeoutMs: 200 });
      await assert.rejects(fetcher(provider('e', { baseUrl: `${base}/err` })), /status 503/);
      await assert.rejects(fetcher(provider('b', { baseUrl: `${base}/big` })), /larger than 10000 bytes/);
      await assert.rejects(fetcher(provider('s', { baseUrl: `${base}/slow` })), /no answer within 200 ms/);
    } finally {
      await fake.close();
    }
    await assert.rejects(createHttpModelsFetcher({ headers: () => ({}) })(provider('gone', { baseUrl: fake.base })));
  });
});
