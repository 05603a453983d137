import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCarriers, platforms } from '../../src/platforms/index.ts';
import type { OutgoingRequest, UpstreamCall } from '../../src/platforms/index.ts';
import type { ProviderConfig } from '../../src/config/types.ts';

const bedrock: ProviderConfig = {
  id: 'b', format: 'messages', platform: 'bedrock', baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com', apiKey: undefined, keyless: false, headers: {},
  bedrock: { region: 'us-east-1', credentials: { access_key_id: 'AKIDEXAMPLE', secret_access_key: 'learned-secret-0123456789', session_token: 'learned-session-token-0123' } },
};
const http: ProviderConfig = { id: 'h', format: 'chat', baseUrl: 'https://api.example.test/v1', apiKey: 'sk-http', keyless: false, headers: {} };
const call: UpstreamCall = { upstreamId: 'anthropic.claude-haiku-4-5-20251001-v1:0', format: 'messages', stream: false, formatHeaders: {} };

test('the carriers table tells the redactor the secrets a carrier holds, once it has them', async () => {
  const learned: string[] = [];
  const carriers = createCarriers({ secret: (written) => written, env: {}, now: () => 0, learn: (secret) => learned.push(secret) });
  const carrier = carriers.of(bedrock);
  assert.equal(carriers.of(bedrock), carrier, 'bound once');
  assert.deepEqual(learned, [], 'nothing is resolved before it is needed');
  const request: OutgoingRequest = { call, target: carrier.target(call), body: '{}', headers: carrier.headers(call) };
  await carrier.authorise(request);
  assert.deepEqual(learned, ['learned-secret-0123456789', 'learned-session-token-0123']);
  assert.equal((await carrier.credentials?.())?.ok, true);
  assert.equal(learned.length, 4, 'told again after a credential check (the redactor ignores what it knows)');
});

test('an http carrier is left as it is: its key is configured, and nothing is awaited', () => {
  const carriers = createCarriers({ secret: (written) => written, env: {}, now: () => 0, learn: () => assert.fail('nothing to learn') });
  const carrier = carriers.of(http);
  assert.equal(carrier.secrets, undefined);
  const c: UpstreamCall = { ...call, format: 'chat' };
  assert.equal(carrier.authorise({ call: c, target: carrier.target(c), body: '{}', headers: {} }), undefined);
  assert.equal(platforms.http.bind(http, { secret: (w) => w, env: {}, now: () => 0 }).credentials, undefined);
});
