import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.ts';

const load = (file: unknown) => loadConfig({ file, env: {}, home: '/tmp/none' });

/** The contract's section 10 example, with the providers it names. */
const EXAMPLE = {
  providers: {
    openai: { format: 'openai', base_url: 'https://api.openai.com/v1', api_keys: ['env:OPENAI_KEY_A', 'env:OPENAI_KEY_B'] },
    'bedrock-us': { format: 'anthropic', base_url: 'https://bedrock.invalid/v1' },
    local: { format: 'openai', base_url: 'http://127.0.0.1:11434/v1', discover: true },
  },
  models: [
    { id: 'claude-sonnet', routing: 'least_busy', sticky: true,
      deployments: [
        { provider: 'anthropic', upstream_id: 'claude-sonnet-4-5', weight: 3 },
        { provider: 'bedrock-us', upstream_id: 'anthropic.claude-sonnet-4-5-v1:0', weight: 1, rpm: 500, tpm: 2000000 },
      ] },
    { id: 'qwen-local', provider: 'local', upstream_id: 'qwen3:8b' },
    { id: 'claude-opus', provider: 'anthropic', upstream_id: 'claude-opus-4-1' },
  ],
  aliases: { 'claude-3-5-haiku-*': 'qwen-local', 'gpt-4o': 'gpt-5.4-mini' },
  routes: [
    { when: { model: 'claude-sonnet*', thinking: true }, model: 'claude-opus' },
    { when: { model: 'claude-*', input_tokens_over: 100000 }, model: 'gemini-2.5-pro' },
    { when: { has_images: true, model: 'qwen-local' }, model: 'gpt-5.4-mini' },
  ],
};

function refuses(file: unknown, message: RegExp): void {
  assert.throws(() => load(file), (error: Error) => {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${error.message}`);
    assert.match(error.message, message);
    assert.ok(!error.message.includes('\n'));
    return true;
  });
}

describe('routing settings in the config file', () => {
  it('reads the contract\'s example: deployments, routing, sticky, api_keys, discover, aliases and routes', () => {
    const c = load(EXAMPLE);
    const sonnet = c.models.find((m) => m.id === 'claude-sonnet')!;
    assert.equal(sonnet.routing, 'least_busy');
    assert.equal(sonnet.sticky, true);
    assert.deepEqual(sonnet.deployments, [
      { provider: 'anthropic', upstream_id: 'claude-sonnet-4-5', weight: 3 },
      { provider: 'bedrock-us', upstream_id: 'anthropic.claude-sonnet-4-5-v1:0', weight: 1, rpm: 500, tpm: 2000000 },
    ]);
    assert.deepEqual([sonnet.provider, sonnet.upstream_id], ['anthropic', 'claude-sonnet-4-5'], 'the first deployment stands for the model where one is expected');
    const openai = c.providers['openai']!;
    assert.deepEqual(openai.apiKeys, ['env:OPENAI_KEY_A', 'env:OPENAI_KEY_B']);
    assert.equal(openai.apiKey, 'env:OPENAI_KEY_A');
    assert.equal(openai.keyless, false);
    assert.equal(c.providers['local']!.discover, true);
    assert.deepEqual(c.routing?.aliases, [{ pattern: 'claude-3-5-haiku-*', target: 'qwen-local' }, { pattern: 'gpt-4o', target: 'gpt-5.4-mini' }]);
    assert.deepEqual(c.routing?.routes[1], { when: { model: 'claude-*', input_tokens_over: 100000 }, model: 'gemini-2.5-pro' });
  });

  it('keeps today\'s one-provider form as a model with one deployment', () => {
    const c = load({ models: [{ id: 'x', provider: 'openai', upstream_id: 'gpt-x' }] });
    assert.equal(c.models[0]!.deployments, undefined);
    assert.deepEqual(c.routing, { aliases: [], routes: [] });
  });

  it('takes a weight of 1 by default, and one name or a list for client_format and key_tier', () => {
    const c = load({
      models: [{ id: 'x', deployments: [{ provider: 'openai', upstream_id: 'a' }, { provider: 'anthropic', upstream_id: 'b', weight: 0.5 }] }],
      routes: [{ when: { client_format: 'chat', key_tier: ['basic', 'pro'] }, model: 'x' }],
    });
    assert.deepEqual(c.models[0]!.deployments!.map((d) => d.weight), [1, 0.5]);
    assert.deepEqual(c.routing?.routes[0]?.when, { client_format: ['chat'], key_tier: ['basic', 'pro'] });
  });

  const cases: Array<[string, unknown, RegExp]> = [
    ['api_key with api_keys', { providers: { p: { format: 'openai', base_url: 'http://x', api_key: 'a', api_keys: ['b'] } } }, /providers\.p\.api_keys: give api_key or api_keys, not both/],
    ['an empty key pool', { providers: { p: { format: 'openai', base_url: 'http://x', api_keys: [] } } }, /providers\.p\.api_keys: must be an array of 1 to 64 keys/],
    ['a repeated key', { providers: { p: { format: 'openai', base_url: 'http://x', api_keys: ['env:A', 'env:A'] } } }, /providers\.p\.api_keys\.1: appears twice/],
    ['a key that is not a string', { providers: { p: { format: 'openai', base_url: 'http://x', api_keys: ['env:A', 3] } } }, /providers\.p\.api_keys\.1: must be a non-empty string/],
    ['discover not a boolean', { providers: { p: { format: 'openai', base_url: 'http://x', discover: 'yes' } } }, /providers\.p\.discover: must be true or false/],
    ['deployments beside provider', { models: [{ id: 'x', provider: 'openai', deployments: [{ provider: 'openai', upstream_id: 'a' }] }] }, /models\.0\.deployments: give provider and upstream_id, or deployments, not both/],
    ['no deployments', { models: [{ id: 'x', deployments: [] }] }, /models\.0\.deployments: must be an array of 1 to 64 deployments/],
    ['an unknown provider', { models: [{ id: 'x', deployments: [{ provider: 'nope', upstream_id: 'a' }] }] }, /models\.0\.deployments\.0\.provider: "nope" is not a configured provider/],
    ['no upstream_id', { models: [{ id: 'x', deployments: [{ provider: 'openai' }] }] }, /models\.0\.deployments\.0\.upstream_id: must be a non-empty string/],
    ['a bad weight', { models: [{ id: 'x', deployments: [{ provider: 'openai', upstream_id: 'a', weight: 0 }] }] }, /models\.0\.deployments\.0\.weight: must be a number > 0/],
    ['a bad rpm', { models: [{ id: 'x', deployments: [{ provider: 'openai', upstream_id: 'a', rpm: 1.5 }] }] }, /models\.0\.deployments\.0\.rpm: must be a whole number >= 1/],
    ['an unknown deployment field', { models: [{ id: 'x', deployments: [{ provider: 'openai', upstream_id: 'a', region: 'us' }] }] }, /models\.0\.deployments\.0\.region: unknown field/],
    ['a deployment twice', { models: [{ id: 'x', deployments: [{ provider: 'openai', upstream_id: 'a' }, { provider: 'openai', upstream_id: 'a' }] }] }, /models\.0\.deployments\.1: "openai\/a" appears twice/],
    ['one deployment, two limits', { models: [
      { id: 'x', deployments: [{ provider: 'openai', upstream_id: 'a', rpm: 5 }] },
      { id: 'y', deployments: [{ provider: 'openai', upstream_id: 'a', rpm: 6 }] },
    ] }, /models\.1\.deployments\.0\.rpm: "openai\/a" is one deployment under several models: its rpm is 5 elsewhere/],
    ['an unknown strategy', { models: [{ id: 'x', provider: 'openai', routing: 'round_robin' }] }, /models\.0\.routing: must be one of "weighted", "least_busy", "latency", "usage"/],
    ['sticky not a boolean', { models: [{ id: 'x', provider: 'openai', sticky: 'no' }] }, /models\.0\.sticky: must be true or false/],
    ['aliases not an object', { aliases: ['x'] }, /aliases: must be an object of requested id -> model id/],
    ['an alias to nothing known', { aliases: { a: 'no-such-model' } }, /aliases\.a: "no-such-model" is not a known model id/],
    ['an alias to an alias', { aliases: { a: 'b', b: 'gpt-5.4-mini' } }, /aliases\.a: "b" is an alias: a target must be a model id \(aliases do not chain\)/],
    ['routes not an array', { routes: {} }, /routes: must be an array/],
    ['a route to nothing known', { routes: [{ when: {}, model: 'nope' }] }, /routes\.0\.model: "nope" is not a known model id/],
    ['an unknown condition', { routes: [{ when: { streaming: true }, model: 'gpt-5.4-mini' }] }, /routes\.0\.when\.streaming: unknown condition/],
    ['a bad client format', { routes: [{ when: { client_format: 'openai' }, model: 'gpt-5.4-mini' }] }, /routes\.0\.when\.client_format: must be one of "chat", "messages", "responses", "gemini"/],
    ['a bad tier', { routes: [{ when: { key_tier: ['gold'] }, model: 'gpt-5.4-mini' }] }, /routes\.0\.when\.key_tier: must be one of "basic", "pro", "enterprise"/],
    ['a bad token bound', { routes: [{ when: { input_tokens_over: -1 }, model: 'gpt-5.4-mini' }] }, /routes\.0\.when\.input_tokens_over: must be a whole number of tokens >= 0/],
    ['a bad boolean condition', { routes: [{ when: { thinking: 'yes' }, model: 'gpt-5.4-mini' }] }, /routes\.0\.when\.thinking: must be true or false/],
    ['an unknown route field', { routes: [{ when: {}, model: 'gpt-5.4-mini', note: 'x' }] }, /routes\.0\.note: unknown field \(when, model\)/],
  ];
  for (const [what, file, message] of cases) {
    it(`refuses ${what} with one line naming the field`, () => refuses(file, message));
  }

  it('accepts an alias or route target no config names when a provider discovers its models', () => {
    const c = load({
      providers: { local: { format: 'openai', base_url: 'http://127.0.0.1:1234/v1', discover: true } },
      aliases: { 'claude-3-5-haiku-*': 'llama3.2:3b' },
      routes: [{ when: { has_images: true }, model: 'qwen2.5vl:7b' }],
    });
    assert.equal(c.routing?.aliases[0]?.target, 'llama3.2:3b');
  });
});
