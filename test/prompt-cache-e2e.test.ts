/**
 * Prompt caching through llmux (llmux.md section 11), over sockets with the official SDKs: a chat,
 * Responses or Gemini client sending the same long system prompt and tools twice to a messages upstream
 * gets cached tokens reported on the second answer (llmux adds the breakpoints; the fake Anthropic
 * reports cache reads for a prefix it saw with them), `prompt_cache: "off"` adds none, cache reads
 * and writes are priced at the model's cache prices in the log, and an OpenAI upstream gets the
 * conversation's `prompt_cache_key`, the same every turn and another for another key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { logLineOf, startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { type StatefulFake, startStatefulFake } from './helpers/fake-stateful.ts';

const SYSTEM = `You are a careful assistant. ${'Follow the house rules to the letter. '.repeat(200)}`;
const PRICING = { input_tokens_cost_per_million: 3, output_tokens_cost_per_million: 15, cache_read_tokens_cost_per_million: 0.3, cache_write_tokens_cost_per_million: 3.75 };

let claude: StatefulFake;
let gw: TestGateway;

before(async () => {
  claude = await startStatefulFake('anthropic');
  gw = await startTestGateway({
    configFor: (url) => ({
      providers: {
        'anthropic-up': { format: 'anthropic', base_url: `${claude.url}/v1`, api_key: 'a-secret' },
        'openai-up': { format: 'openai', base_url: `${url}/v1`, api_key: 'o-secret', family: 'openai', responses: true },
        'other-up': { format: 'openai', base_url: `${url}/v1`, api_key: 'x-secret' },
      },
      models: [
        { id: 'claude-cache', provider: 'anthropic-up', upstream_id: 'claude-up', max_output_tokens: 4096, context_length: 200_000, pricing: PRICING },
        { id: 'claude-nocache', provider: 'anthropic-up', upstream_id: 'claude-up', max_output_tokens: 4096, context_length: 200_000, prompt_cache: 'off' },
        { id: 'gpt-cache', provider: 'openai-up', upstream_id: 'gpt-up', context_length: 200_000 },
        { id: 'other-x', provider: 'other-up', upstream_id: 'other', context_length: 200_000 },
      ],
      tiers: { basic: { rpm: 10_000, tpm: 100_000_000, concurrency: 50 } },
    }),
  });
});

after(async () => {
  await gw?.close();
  await claude?.close();
});

function chatClient(key = gw.key): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', description: 'Looks a thing up in the house records.', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];

describe('a chat client to a messages upstream', () => {
  test('sending the same long system prompt and tools twice gets cached tokens reported on the second answer', async () => {
    const client = chatClient();
    const ask = (question: string) => client.chat.completions.create({ model: 'claude-cache', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: question }], tools: TOOLS });
    const first = await ask('What is rule one?');
    const second = await ask('What is rule one?');
    assert.equal(first.usage?.prompt_tokens_details?.cached_tokens, 0);
    const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    assert.ok(cached > 1000, `the second answer read the long prefix from the cache (${cached})`);
    assert.ok((second.usage?.prompt_tokens ?? 0) > cached, 'prompt tokens count the cached ones too');
    const sent = claude.requests.at(-1)?.body ?? {};
    assert.deepEqual((sent['system'] as Array<Record<string, unknown>>)[0]?.['cache_control'], { type: 'ephemeral' });
    assert.deepEqual((sent['tools'] as Array<Record<string, unknown>>).at(-1)?.['cache_control'], { type: 'ephemeral' });
  });

  test('a model with prompt_cache "off" gets no breakpoints, and nothing is cached', async () => {
    const client = chatClient();
    const ask = () => client.chat.completions.create({ model: 'claude-nocache', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Rule two?' }], tools: TOOLS });
    await ask();
    const second = await ask();
    assert.equal(second.usage?.prompt_tokens_details?.cached_tokens, 0);
    assert.equal(JSON.stringify(claude.requests.at(-1)?.body).includes('cache_control'), false);
  });

  test('a Responses client gets them as input_tokens_details.cached_tokens', async () => {
    const client = chatClient();
    const ask = () => client.responses.create({ model: 'claude-cache', instructions: SYSTEM, input: 'Rule three?', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false }], store: false });
    const first = await ask();
    const second = await ask();
    assert.equal(first.usage?.input_tokens_details.cached_tokens, 0);
    assert.ok((second.usage?.input_tokens_details.cached_tokens ?? 0) > 1000, 'the second answer read the prefix from the cache');
  });

  test('a Gemini client gets them as cachedContentTokenCount', async () => {
    const ai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: gw.url } });
    const ask = () => ai.models.generateContent({
      model: 'claude-cache',
      contents: 'Rule five?',
      config: { systemInstruction: SYSTEM, tools: [{ functionDeclarations: [{ name: 'lookup', parametersJsonSchema: { type: 'object', properties: {} } }] }] },
    });
    const first = await ask();
    const second = await ask();
    assert.equal(first.usageMetadata?.cachedContentTokenCount, undefined);
    assert.ok((second.usageMetadata?.cachedContentTokenCount ?? 0) > 1000, 'the second answer read the prefix from the cache');
  });
});

describe('cache reads and writes in the log', () => {
  test('are priced at the model\'s cache prices', async () => {
    const client = new Anthropic({ apiKey: gw.key, baseURL: gw.url, maxRetries: 0 });
    const params = { model: 'claude-cache', max_tokens: 100, system: [{ type: 'text' as const, text: `${SYSTEM} (priced)`, cache_control: { type: 'ephemeral' as const } }], messages: [{ role: 'user' as const, content: 'Rule four?' }] };
    for (const expect of ['write', 'read'] as const) {
      const { data, response } = await client.messages.create(params).withResponse();
      const usage = data.usage;
      assert.ok(((expect === 'write' ? usage.cache_creation_input_tokens : usage.cache_read_input_tokens) ?? 0) > 0, expect);
      const line = await logLineOf(gw, response);
      const cost = (usage.input_tokens * 3 + (usage.cache_read_input_tokens ?? 0) * 0.3 + (usage.cache_creation_input_tokens ?? 0) * 3.75 + usage.output_tokens * 15) / 1e6;
      assert.equal(line['cost_usd'], Math.round(cost * 1e8) / 1e8, expect);
    }
  });
});

describe('prompt_cache_key to an OpenAI upstream', () => {
  function lastKey(): unknown {
    return gw.upstream.requests.at(-1)?.body['prompt_cache_key'];
  }

  test('is derived from the conversation for a messages client: the same every turn, another for another key, none for another family', async () => {
    const client = new Anthropic({ apiKey: gw.key, baseURL: gw.url, maxRetries: 0 });
    const turn = (messages: Anthropic.MessageParam[]) => client.messages.create({ model: 'gpt-cache', max_tokens: 50, system: 'You help.', messages });
    await turn([{ role: 'user', content: 'Hello' }]);
    const first = lastKey();
    assert.match(String(first), /^llmux-[A-Za-z0-9_-]{32}$/);
    await turn([{ role: 'user', content: 'Hello' }, { role: 'assistant', content: 'Hi' }, { role: 'user', content: 'More' }]);
    assert.equal(lastKey(), first, 'the same conversation, the same key');
    const other = new Anthropic({ apiKey: (await gw.gateway.keys.create({ name: 'other', tier: 'basic' })).key, baseURL: gw.url, maxRetries: 0 });
    await other.messages.create({ model: 'gpt-cache', max_tokens: 50, system: 'You help.', messages: [{ role: 'user', content: 'Hello' }] });
    assert.notEqual(lastKey(), first, 'another key, another cache key');
    await client.messages.create({ model: 'other-x', max_tokens: 50, system: 'You help.', messages: [{ role: 'user', content: 'Hello' }] });
    assert.equal(lastKey(), undefined, 'an upstream that is not OpenAI\'s may refuse the field');
  });

  test('is added to a chat or Responses client\'s own body when it gave none, and its own kept', async () => {
    const client = chatClient();
    await client.chat.completions.create({ model: 'gpt-cache', messages: [{ role: 'user', content: 'Hello' }] });
    assert.match(String(lastKey()), /^llmux-/);
    await client.chat.completions.create({ model: 'gpt-cache', messages: [{ role: 'user', content: 'Hello' }], prompt_cache_key: 'mine' });
    assert.equal(lastKey(), 'mine');
    gw.upstream.queue.push((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'resp_up', object: 'response', created_at: 1, status: 'completed', model: 'gpt-up', output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }));
    });
    // A made-up upstream answer passed through as it came: what it says is the test's, not llmux's.
    await gw.replaying(() => client.responses.create({ model: 'gpt-cache', input: 'Hello', store: false }));
    assert.equal(gw.upstream.requests.at(-1)?.path, '/v1/responses');
    assert.match(String(lastKey()), /^llmux-/);
  });
});
