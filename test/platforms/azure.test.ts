import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { platforms } from '../../src/platforms/index.ts';
import type { OutgoingRequest, PlatformServices, UpstreamCall } from '../../src/platforms/index.ts';
import type { ProviderConfig } from '../../src/config/types.ts';

const env: Record<string, string | undefined> = { AZ_KEY: 'azure-key-value', AZ_TOKEN: 'entra-token-value' };
const services: PlatformServices = {
  secret: (written) => (written === undefined ? undefined : written.startsWith('env:') ? env[written.slice(4)] : written),
  env,
  now: () => 0,
};

function provider(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return { id: 'az', format: 'chat', platform: 'azure', baseUrl: 'https://res.openai.azure.com/openai/v1', apiKey: 'env:AZ_KEY', keyless: false, headers: {}, azure: {}, ...overrides };
}

const call = (format: 'chat' | 'responses', stream = false): UpstreamCall => ({ upstreamId: 'gpt-4o prod', format, stream, formatHeaders: {} });

function authorised(p: ProviderConfig, c: UpstreamCall): Record<string, string> {
  const carrier = platforms.azure.bind(p, services);
  const request: OutgoingRequest = { call: c, target: carrier.target(c), body: '{}', headers: carrier.headers(c) };
  assert.equal(carrier.authorise(request), undefined, 'nothing to wait for');
  return request.headers;
}

describe('the azure platform', () => {
  it('reaches the v1 surface as OpenAI is reached, with no api-version', () => {
    const carrier = platforms.azure.bind(provider(), services);
    assert.equal(carrier.endpoint, 'https://res.openai.azure.com/openai/v1');
    assert.equal(carrier.target(call('chat')), '/chat/completions');
    assert.equal(carrier.target(call('responses')), '/responses');
    assert.equal(carrier.envelope(call('chat')), undefined);
  });

  it('reaches classic deployments with api-version, Responses at /responses', () => {
    const carrier = platforms.azure.bind(provider({ baseUrl: 'https://res.openai.azure.com/openai', azure: { apiVersion: '2024-10-21' } }), services);
    assert.equal(carrier.target(call('chat', true)), '/deployments/gpt-4o%20prod/chat/completions?api-version=2024-10-21');
    assert.equal(carrier.target(call('responses')), '/responses?api-version=2024-10-21');
    assert.throws(() => carrier.target({ ...call('chat'), format: 'messages' }), /does not carry the messages format/);
  });

  it('adds the api-version of the classic form to a stored response read back for its client, and nothing on the v1 surface', () => {
    const classic = platforms.azure.bind(provider({ baseUrl: 'https://res.openai.azure.com/openai', azure: { apiVersion: '2025-03-01-preview' } }), services);
    const read: OutgoingRequest = { call: call('responses'), target: '/responses/resp_1/input_items?after=item_2', body: '', headers: {} };
    classic.authorise(read);
    assert.equal(read.target, '/responses/resp_1/input_items?after=item_2&api-version=2025-03-01-preview');
    const posted: OutgoingRequest = { call: call('responses'), target: classic.target(call('responses')), body: '{}', headers: {} };
    classic.authorise(posted);
    assert.equal(posted.target, '/responses?api-version=2025-03-01-preview', 'not twice');
    const v1 = platforms.azure.bind(provider(), services);
    const v1Read: OutgoingRequest = { call: call('responses'), target: '/responses/resp_1', body: '', headers: {} };
    v1.authorise(v1Read);
    assert.equal(v1Read.target, '/responses/resp_1');
  });

  it('sends api_key as api-key, or an Entra token as a bearer', () => {
    assert.deepEqual(authorised(provider(), call('chat', true)), { accept: 'text/event-stream', 'api-key': 'azure-key-value' });
    assert.deepEqual(authorised(provider({ apiKey: undefined, azure: { azureAdToken: 'env:AZ_TOKEN' } }), call('chat')), { accept: 'application/json', authorization: 'Bearer entra-token-value' });
  });

  it('refuses to send a request without its credential, naming where it is set', async () => {
    const carrier = platforms.azure.bind(provider({ apiKey: 'env:AZ_UNSET' }), services);
    assert.equal(carrier.credentialSetting, 'the environment variable AZ_UNSET (providers.az.api_key)');
    assert.throws(() => carrier.authorise({ call: call('chat'), target: '/chat/completions', body: '{}', headers: {} }), /not set/);
    assert.deepEqual(await carrier.credentials?.(), { ok: false, reason: 'the environment variable AZ_UNSET (providers.az.api_key) is not set' });
    const token = platforms.azure.bind(provider({ apiKey: undefined, azure: { azureAdToken: 'literal-token' } }), services);
    assert.equal(token.credentialSetting, 'providers.az.azure_ad_token in the llmux config');
    assert.deepEqual(await token.credentials?.(), { ok: true, detail: 'from providers.az.azure_ad_token in the llmux config' });
    assert.deepEqual(token.secrets?.(), ['literal-token']);
  });

  it("reads Azure's error bodies: the content filter's code, an APIM gateway's bare message", () => {
    const carrier = platforms.azure.bind(provider(), services);
    const filtered = carrier.readError(400, {}, '{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}');
    assert.deepEqual(filtered, { status: 400, message: 'filtered', type: undefined, code: 'content_filter' });
    assert.deepEqual(carrier.readError(401, {}, '{"statusCode":401,"message":"Unauthorized. Access token is missing"}'), { status: 401, message: 'Unauthorized. Access token is missing', type: undefined, code: undefined });
  });
});
