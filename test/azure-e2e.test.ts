/**
 * Azure OpenAI through llmux (llmux.md section 8), over sockets against a fake Azure resource
 * (test/helpers/fake-azure.ts) that checks `api-key` (or an Entra bearer) and `api-version` as Azure
 * does: the v1 surface and classic deployments, for chat, messages and Responses clients; Azure's
 * prompt-filter chunk and content-filter refusal read leniently; no credential in any answer or log.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { startFakeAzure } from './helpers/fake-azure.ts';
import type { FakeAzure } from './helpers/fake-azure.ts';
import { assertNoSecrets, createPlatformClient, logText, platformScript } from './helpers/platform-clients.ts';
import type { PlatformClient } from './helpers/platform-clients.ts';

const API_KEY = 'azkey0123456789abcdef0123456789ab';
const AD_TOKEN = 'eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-token.signature';

let fake: FakeAzure;
let gw: TestGateway;
let client: PlatformClient;

before(async () => {
  fake = await startFakeAzure({ apiKey: API_KEY, adToken: AD_TOKEN, deployments: ['gpt-4o-prod', 'o4-mini-prod'], script: (body) => platformScript(body) });
  gw = await startTestGateway({
    env: { AZURE_OPENAI_API_KEY: API_KEY, AZURE_AD_TOKEN: AD_TOKEN },
    config: {
      providers: {
        'azure-v1': { format: 'openai', platform: 'azure', base_url: `${fake.url}/openai/v1`, api_key: 'env:AZURE_OPENAI_API_KEY', responses: true },
        'azure-classic': { format: 'openai', platform: 'azure', base_url: fake.url, api_version: '2025-03-01-preview', azure_ad_token: 'env:AZURE_AD_TOKEN', responses: true },
        'azure-unset': { format: 'openai', platform: 'azure', base_url: `${fake.url}/openai/v1`, api_key: 'env:AZURE_NOT_SET' },
      },
      models: [
        { id: 'gpt-azure', provider: 'azure-v1', upstream_id: 'gpt-4o-prod', max_output_tokens: 8192 },
        { id: 'gpt-azure-classic', provider: 'azure-classic', upstream_id: 'o4-mini-prod', max_output_tokens: 8192 },
        { id: 'gpt-azure-unset', provider: 'azure-unset', upstream_id: 'gpt-4o-prod', max_output_tokens: 8192 },
      ],
    },
  });
  client = createPlatformClient(gw);
});

after(async () => {
  await gw.close();
  await fake.close();
});

for (const [surface, model, deployment] of [['v1', 'gpt-azure', 'gpt-4o-prod'], ['classic', 'gpt-azure-classic', 'o4-mini-prod']] as const) {
  describe(`the ${surface} form`, () => {
    it('serves a chat client, whole and streamed (through the prompt-filter chunk), with a tool round trip', async () => {
      await client.chatToolRoundTrip(model, false);
      await client.chatToolRoundTrip(model, true);
      const seen = fake.requests.at(-1);
      assert.equal(seen?.surface, surface);
      assert.equal(seen?.deployment, deployment);
      if (surface === 'v1') {
        assert.equal(seen?.path, '/openai/v1/chat/completions');
        assert.equal(seen?.query.get('api-version'), null);
        assert.equal(seen?.headers['api-key'], API_KEY);
      } else {
        assert.equal(seen?.path, `/openai/deployments/${deployment}/chat/completions`);
        assert.equal(seen?.query.get('api-version'), '2025-03-01-preview');
        assert.equal(seen?.headers['authorization'], `Bearer ${AD_TOKEN}`);
      }
      assert.deepEqual(fake.refusals, []);
    });

    it('serves a messages client, translated, with a tool round trip', async () => {
      await client.messagesToolRoundTrip(model, false);
      await client.messagesToolRoundTrip(model, true);
    });

    it('serves a Responses client at its /responses, the deployment as model', async () => {
      assert.equal(await client.responsesText(model, false), 'Hello from the platform.');
      assert.equal(await client.responsesText(model, true), 'Hello from the platform.');
      const seen = fake.requests.at(-1);
      assert.equal(seen?.operation, 'responses');
      assert.equal(seen?.body['model'], deployment);
      assert.equal(seen?.path, surface === 'v1' ? '/openai/v1/responses' : '/openai/responses');
    });
  });
}

describe('Azure errors', () => {
  it('a prompt the content filter refuses is a 400 with code content_filter', async () => {
    const answer = await client.chat({ model: 'gpt-azure', messages: [{ role: 'user', content: 'FILTER-ME please' }] });
    assert.equal(answer.status, 400);
    const body = JSON.parse(answer.text) as { error: { type: string; code: string; message: string } };
    assert.equal(body.error.code, 'content_filter');
    assert.match(body.error.message, /content management policy/);
  });

  it('a 429 is retried, then our 429', async () => {
    const limited = { status: 429, body: { error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 1 second.' } }, headers: { 'retry-after': '0' } };
    fake.faults.push(limited);
    assert.equal((await client.chat({ model: 'gpt-azure', messages: [{ role: 'user', content: 'Hi' }] })).status, 200);
    fake.faults.push(limited, limited, limited);
    const answer = await client.chat({ model: 'gpt-azure', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.status, 429);
    assert.match(answer.text, /exceeded call rate limit/);
  });

  it('an unset key keeps the provider\'s models unlisted', async () => {
    const list = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${gw.key}` } });
    const ids = ((await list.json()) as { data: Array<{ id: string }> }).data.map((model) => model.id);
    assert.ok(ids.includes('gpt-azure') && ids.includes('gpt-azure-classic'), ids.join(', '));
    assert.ok(!ids.includes('gpt-azure-unset'));
  });

  it('leaves no credential in any answer or log line', () => {
    assertNoSecrets([...client.seen, ...logText(gw)], [API_KEY, AD_TOKEN]);
  });
});
