import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { platforms } from '../../src/platforms/index.ts';
import type { OutgoingRequest, PlatformServices, UpstreamCall } from '../../src/platforms/index.ts';
import { readVertexError, vertexEndpoint } from '../../src/platforms/vertex.ts';
import type { ProviderConfig } from '../../src/config/types.ts';
import { createServiceAccount, startFakeGoogleOAuth } from '../helpers/fake-google-oauth.ts';

const account = createServiceAccount();
const oauth = await startFakeGoogleOAuth({ serviceAccounts: [account] });
const dir = mkdtempSync(join(tmpdir(), 'llmux-vertex-unit-'));
const keyPath = join(dir, 'sa.json');
writeFileSync(keyPath, JSON.stringify(account.keyFile(oauth.tokenUrl)));
after(async () => {
  await oauth.close();
  rmSync(dir, { recursive: true, force: true });
});

const services: PlatformServices = { secret: (written) => written, env: {}, now: Date.now };

function provider(format: 'messages' | 'chat', vertex: Partial<NonNullable<ProviderConfig['vertex']>> = {}): ProviderConfig {
  return {
    id: 'vertex', format, platform: 'vertex', baseUrl: 'https://aiplatform.googleapis.com', apiKey: undefined, keyless: false, headers: {},
    vertex: { project: 'my-project', location: 'global', credentialsFile: keyPath, ...vertex },
  };
}

const call = (format: 'messages' | 'chat', stream: boolean, beta?: string): UpstreamCall => ({
  upstreamId: format === 'messages' ? 'claude-opus-4-1@20250805' : 'google/gemini-2.5-pro',
  format,
  stream,
  formatHeaders: format === 'messages' ? { 'anthropic-version': '2023-06-01', ...(beta === undefined ? {} : { 'anthropic-beta': beta }) } : {},
});

describe('the vertex platform', () => {
  it('reaches Claude through rawPredict and streamRawPredict, and the OpenAI-compatible endpoint, under the project and location', () => {
    const claude = platforms.vertex.bind(provider('messages'), services);
    assert.equal(claude.endpoint, 'https://aiplatform.googleapis.com/v1/projects/my-project/locations/global');
    assert.equal(claude.target(call('messages', false)), '/publishers/anthropic/models/claude-opus-4-1@20250805:rawPredict');
    assert.equal(claude.target(call('messages', true)), '/publishers/anthropic/models/claude-opus-4-1@20250805:streamRawPredict');
    assert.equal(platforms.vertex.bind(provider('chat'), services).target(call('chat', true)), '/endpoints/openapi/chat/completions');
    assert.equal(vertexEndpoint('https://us-east5-aiplatform.googleapis.com', { project: 'p', location: 'us-east5' }), 'https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5');
    assert.throws(() => claude.target({ ...call('messages', false), format: 'responses' }), /does not carry the responses format/);
  });

  it('sends Claude the body without model, with vertex-2023-10-16, the betas split between header and body', () => {
    const carrier = platforms.vertex.bind(provider('messages'), services);
    const beta = 'claude-code-20250219,interleaved-thinking-2025-05-14,context-1m-2025-08-07,effort-2025-11-24';
    assert.deepEqual([...(carrier.envelope(call('messages', true, beta)) ?? [])], [['model', undefined], ['anthropic_version', 'vertex-2023-10-16'], ['anthropic_beta', ['context-1m-2025-08-07']]]);
    assert.deepEqual(carrier.headers(call('messages', true, beta)), { accept: 'text/event-stream', 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
    assert.deepEqual(carrier.headers(call('messages', false)), { accept: 'application/json' });
    assert.equal(carrier.envelope(call('messages', false))?.get('anthropic_beta'), undefined);
    const configured = platforms.vertex.bind(provider('messages', { betas: ['effort-2025-11-24'] }), services);
    assert.deepEqual(configured.headers(call('messages', false, beta)), { accept: 'application/json', 'anthropic-beta': 'effort-2025-11-24' });
  });

  it('sends an OpenAI-format body as it is', () => {
    const carrier = platforms.vertex.bind(provider('chat'), services);
    assert.equal(carrier.envelope(call('chat', false)), undefined);
    assert.deepEqual(carrier.headers(call('chat', true)), { accept: 'text/event-stream' });
  });

  it('authorises with a bearer token from the service account, and renews a token refused with 401 once', async () => {
    const carrier = platforms.vertex.bind(provider('messages'), services);
    const c = call('messages', false);
    const request: OutgoingRequest = { call: c, target: carrier.target(c), body: '{}', headers: carrier.headers(c) };
    await carrier.authorise(request);
    const token = (request.headers['authorization'] ?? '').replace('Bearer ', '');
    assert.ok(oauth.isIssued(token));
    assert.ok(carrier.secrets?.().includes(token), 'the token is among the secrets to redact');
    assert.equal(carrier.renew?.(403, request), false, 'only a 401 says the token went stale');
    const before = oauth.counts.jwtBearer;
    assert.equal(carrier.renew?.(401, request), true);
    const again: OutgoingRequest = { ...request, headers: carrier.headers(c) };
    await carrier.authorise(again);
    assert.notEqual(again.headers['authorization'], request.headers['authorization']);
    assert.equal(oauth.counts.jwtBearer, before + 1);
    carrier.renew?.(401, request);
    await carrier.authorise({ ...request, headers: {} });
    assert.equal(oauth.counts.jwtBearer, before + 1, 'a refusal of the old token does not drop the new one');
  });

  it('says where its credentials come from', async () => {
    const carrier = platforms.vertex.bind(provider('messages'), services);
    assert.equal(carrier.credentialSetting, `providers.vertex.credentials_file (${keyPath})`);
    const state = await carrier.credentials?.();
    assert.equal(state?.ok, true);
    assert.match(state?.ok === true ? state.detail : '', new RegExp(`service account ${account.clientEmail} in ${keyPath}`));
    const missing = platforms.vertex.bind(provider('messages', { credentialsFile: join(dir, 'missing.json') }), services);
    assert.equal((await missing.credentials?.())?.ok, false);
  });

  it('passes streams on as they are', () => {
    const carrier = platforms.vertex.bind(provider('messages'), services);
    const sse = Object.assign(Readable.from([]), { statusCode: 200, headers: { 'content-type': 'text/event-stream; charset=UTF-8' } });
    assert.equal(carrier.events(sse), sse);
    assert.equal(carrier.events({ ...sse, headers: { 'content-type': 'application/json' } } as typeof sse), undefined);
  });

  it("reads Google's error shape, a list of them, and Anthropic's", () => {
    assert.deepEqual(readVertexError(429, {}, '{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}'), { status: 429, message: 'Quota exceeded', type: undefined, code: 'RESOURCE_EXHAUSTED' });
    assert.deepEqual(readVertexError(400, {}, '[{"error":{"code":400,"message":"Bad","status":"INVALID_ARGUMENT"}}]'), { status: 400, message: 'Bad', type: undefined, code: 'INVALID_ARGUMENT' });
    assert.deepEqual(readVertexError(400, {}, '{"type":"error","error":{"type":"invalid_request_error","message":"Unexpected value(s)"}}'), { status: 400, message: 'Unexpected value(s)', type: 'invalid_request_error', code: undefined });
    assert.deepEqual(readVertexError(503, {}, 'upstream connect error'), { status: 503, message: 'upstream connect error', type: undefined, code: undefined });
  });
});
