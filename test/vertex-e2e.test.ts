/**
 * Google Vertex AI through llmux (llmux.md section 8), over sockets against a fake Vertex endpoint
 * (test/helpers/fake-vertex.ts) that takes only access tokens the fake OAuth server issued
 * (test/helpers/fake-google-oauth.ts, which takes only assertions signed with the service account's
 * key): Claude through rawPredict and streamRawPredict for messages, chat and Responses clients;
 * the OpenAI-compatible endpoint; betas where Vertex takes them; an expired token refreshed once
 * for many requests, a revoked one renewed once; a token endpoint failing as 502
 * upstream_auth_failed; no credential in any answer or log line.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { createServiceAccount, startFakeGoogleOAuth } from './helpers/fake-google-oauth.ts';
import type { FakeGoogleOAuth } from './helpers/fake-google-oauth.ts';
import { startFakeVertex } from './helpers/fake-vertex.ts';
import type { FakeVertex } from './helpers/fake-vertex.ts';
import { assertNoSecrets, createPlatformClient, logText, platformScript, THINKING } from './helpers/platform-clients.ts';
import type { PlatformClient } from './helpers/platform-clients.ts';
import { assembleMessagesStream } from './helpers/assemble.ts';
import { SCRIPTED_THOUGHT_SIGNATURE } from './helpers/scripted-answers.ts';

const CLAUDE = 'claude-sonnet-4-5@20250929';
const GEMINI = 'google/gemini-2.5-flash';
const account = createServiceAccount('llmux-vertex@llmux-project.iam.gserviceaccount.com');
/** One clock for the gateway and the OAuth server: a test moves it to expire tokens. */
let offsetMs = 0;
const now = (): number => Date.now() + offsetMs;

let oauth: FakeGoogleOAuth;
let vertex: FakeVertex;
let gw: TestGateway;
let client: PlatformClient;
let dir: string;
let keyPath: string;

before(async () => {
  oauth = await startFakeGoogleOAuth({ serviceAccounts: [account], now });
  vertex = await startFakeVertex({ oauth, project: 'llmux-project', location: 'global', script: (body) => platformScript(body) });
  dir = mkdtempSync(join(tmpdir(), 'llmux-vertex-'));
  keyPath = join(dir, 'sa.json');
  writeFileSync(keyPath, JSON.stringify(account.keyFile(oauth.tokenUrl)));
  gw = await startTestGateway({
    now,
    config: {
      providers: {
        vertex: { format: 'anthropic', platform: 'vertex', project: 'llmux-project', base_url: vertex.url, credentials_file: keyPath },
        // Written as Claude Code users write ANTHROPIC_VERTEX_BASE_URL, with /v1: not doubled.
        'vertex-openai': { format: 'openai', platform: 'vertex', project: 'llmux-project', base_url: `${vertex.url}/v1`, credentials_file: keyPath },
        'vertex-gemini': { format: 'gemini', platform: 'vertex', project: 'llmux-project', base_url: vertex.url, credentials_file: keyPath },
      },
      models: [
        { id: 'claude-vertex', provider: 'vertex', upstream_id: CLAUDE, reasoning: true, max_output_tokens: 8192 },
        { id: 'gemini-vertex', provider: 'vertex-openai', upstream_id: GEMINI, max_output_tokens: 8192 },
        { id: 'gemini-native', provider: 'vertex-gemini', upstream_id: 'gemini-2.5-flash', max_output_tokens: 8192 },
      ],
    },
  });
  client = createPlatformClient(gw);
});

after(async () => {
  await gw.close();
  await vertex.close();
  await oauth.close();
  rmSync(dir, { recursive: true, force: true });
});

const ask = { model: 'claude-vertex', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };


/** A messages request with a cache breakpoint in each place a client puts one. */
const CACHED_ASK = {
  max_tokens: 64,
  system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
  tools: [{ name: 'Read', input_schema: { type: 'object', properties: {} }, cache_control: { type: 'ephemeral', ttl: '1h' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
};

describe('a messages client through Vertex AI', () => {
  it('keeps a messages client\'s cache_control markers as they came (llmux.md section 11)', async () => {
    const answer = await client.messages({ ...CACHED_ASK, model: 'claude-vertex' });
    assert.equal(answer.status, 200, answer.text);
    const seen = vertex.requests.at(-1)?.body ?? {};
    assert.deepEqual([seen['system'], seen['tools'], seen['messages']], [CACHED_ASK.system, CACHED_ASK.tools, CACHED_ASK.messages]);
  });

  it('gets a whole answer from rawPredict, the body without model and with anthropic_version', async () => {
    const answer = await client.messages(ask);
    assert.equal(answer.status, 200, answer.text);
    assert.equal((JSON.parse(answer.text) as { model: string }).model, 'claude-vertex');
    const seen = vertex.requests.at(-1);
    assert.equal(seen?.path, `/v1/projects/llmux-project/locations/global/publishers/anthropic/models/${CLAUDE}:rawPredict`);
    assert.equal(seen?.body['anthropic_version'], 'vertex-2023-10-16');
    assert.ok(!('model' in (seen?.body ?? {})));
    assert.ok(oauth.assertions.some((assertion) => assertion.claims['iss'] === account.clientEmail && assertion.claims['aud'] === oauth.tokenUrl), 'a token from an assertion signed with the key');
  });

  it('gets a streamed answer with thinking from streamRawPredict', async () => {
    const answer = await client.messages({ ...ask, max_tokens: 4096, stream: true, thinking: { type: 'enabled', budget_tokens: 2048 } });
    assert.equal(answer.status, 200, answer.text);
    const message = assembleMessagesStream(answer.text);
    assert.deepEqual(message?.['content'], [{ type: 'thinking', thinking: THINKING.text, signature: THINKING.signature }, { type: 'text', text: 'Hello from the platform.' }]);
    assert.equal(vertex.requests.at(-1)?.operation, 'streamRawPredict');
    assert.equal(vertex.requests.at(-1)?.body['stream'], true);
  });

  it('completes a tool round trip, whole and streamed', async () => {
    await client.messagesToolRoundTrip('claude-vertex', false);
    await client.messagesToolRoundTrip('claude-vertex', true);
  });

  it('keeps in the header the betas Vertex takes there, moves context-1m into the body, drops the rest', async () => {
    const beta = 'claude-code-20250219,interleaved-thinking-2025-05-14,effort-2025-11-24,context-1m-2025-08-07,prompt-caching-scope-2026-01-05';
    const answer = await client.messages(ask, { 'anthropic-beta': beta });
    assert.equal(answer.status, 200, `${answer.text} ${vertex.refusals.join(' ')}`);
    const seen = vertex.requests.at(-1);
    assert.equal(seen?.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
    assert.deepEqual(seen?.body['anthropic_beta'], ['context-1m-2025-08-07']);
    assert.equal(seen?.headers['anthropic-version'], undefined);
  });

  it('a chat client and a Responses client reach Claude on Vertex too', async () => {
    await client.chatToolRoundTrip('claude-vertex', false);
    await client.chatToolRoundTrip('claude-vertex', true);
    assert.equal(await client.responsesText('claude-vertex', false), 'Hello from the platform.');
    assert.equal(await client.responsesText('claude-vertex', true), 'Hello from the platform.');
  });
});

describe("Vertex AI's OpenAI-compatible endpoint", () => {
  it('serves a chat client whole and streamed, the model named publisher/model, under a base_url given with /v1', async () => {
    await client.chatToolRoundTrip('gemini-vertex', false);
    await client.chatToolRoundTrip('gemini-vertex', true);
    const seen = vertex.requests.at(-1);
    assert.equal(seen?.path, '/v1/projects/llmux-project/locations/global/endpoints/openapi/chat/completions');
    assert.equal(seen?.body['model'], GEMINI);
  });

  it('serves messages and Responses clients, translated', async () => {
    await client.messagesToolRoundTrip('gemini-vertex', true);
    assert.equal(await client.responsesText('gemini-vertex', true), 'Hello from the platform.');
  });
});

describe('Gemini on Vertex AI, in its own format', () => {
  it("passes a Gemini client's request through to generateContent and streamGenerateContent?alt=sse, its call's signature back as it came", async () => {
    for (const stream of [false, true]) {
      const before = vertex.requests.length;
      await client.geminiToolRoundTrip('gemini-native', stream);
      const [first, second] = vertex.requests.slice(before);
      assert.equal(first?.path, `/v1/projects/llmux-project/locations/global/publishers/google/models/gemini-2.5-flash:${stream ? 'streamGenerateContent' : 'generateContent'}`);
      assert.equal(first?.operation, stream ? 'streamGenerateContent' : 'generateContent');
      assert.ok(!('model' in (first?.body ?? {})), 'the body names no model');
      const history = JSON.stringify(second?.body['contents']);
      assert.ok(history.includes(SCRIPTED_THOUGHT_SIGNATURE), "Google's signature went back untouched");
    }
  });

  it('serves chat, messages and Responses clients, translated to generateContent', async () => {
    await client.chatToolRoundTrip('gemini-native', false);
    await client.chatToolRoundTrip('gemini-native', true);
    await client.messagesToolRoundTrip('gemini-native', true);
    assert.equal(await client.responsesText('gemini-native', true), 'Hello from the platform.');
    assert.ok(vertex.requests.slice(-5).every((seen) => seen.path.includes('/publishers/google/models/gemini-2.5-flash:')));
  });
});

describe('Vertex AI access tokens', () => {
  it('an expired token is refreshed once for many concurrent requests', async () => {
    await client.messages(ask);
    const before = oauth.counts.jwtBearer;
    offsetMs += 2 * 3600_000;
    const answers = await Promise.all(Array.from({ length: 12 }, () => client.messages(ask)));
    assert.deepEqual(answers.map((answer) => answer.status), Array.from({ length: 12 }, () => 200));
    assert.equal(oauth.counts.jwtBearer, before + 1);
    assert.equal(new Set(vertex.requests.slice(-12).map((seen) => seen.token)).size, 1);
  });

  it('a token refused before it expires is renewed once, and each request retried once', async () => {
    await client.messages(ask);
    const revoked = vertex.requests.at(-1)?.token ?? '';
    oauth.revoke(revoked);
    const before = oauth.counts.jwtBearer;
    const refusalsBefore = vertex.refusals.length;
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.messages(ask)));
    assert.deepEqual(answers.map((answer) => answer.status), Array.from({ length: 6 }, () => 200));
    assert.equal(oauth.counts.jwtBearer, before + 1, 'one new token for all');
    assert.equal(vertex.refusals.length - refusalsBefore, 6, 'each request was refused once with the revoked token');
  });

  it('a token refused again after its renewal is 502 upstream_auth_failed', async () => {
    await client.messages(ask);
    vertex.faults.push({ status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } } });
    vertex.faults.push({ status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } } });
    const answer = await client.messages(ask);
    assert.equal(answer.status, 502);
    const body = JSON.parse(answer.text) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'upstream_auth_failed');
    assert.match(body.error.message, /UNAUTHENTICATED/);
    assert.ok(body.error.message.includes(`providers.vertex.credentials_file (${keyPath})`), body.error.message);
  });

  it('a token endpoint failing is 502 upstream_auth_failed naming the setting to check', async () => {
    offsetMs += 2 * 3600_000;
    oauth.failNext(3, 503);
    const answer = await client.messages(ask);
    assert.equal(answer.status, 502, answer.text);
    const body = JSON.parse(answer.text) as { error: { type: string; code: string; message: string } };
    assert.equal(body.error.code, 'upstream_auth_failed');
    assert.match(body.error.message, /answered HTTP 503/);
    assert.ok(body.error.message.includes(`providers.vertex.credentials_file (${keyPath})`), body.error.message);
    assert.equal((await client.messages(ask)).status, 200, 'the next request gets a token');
  });

  it('a rate limit from Vertex is retried, then our 429', async () => {
    const exhausted = { status: 429, body: { error: { code: 429, message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model', status: 'RESOURCE_EXHAUSTED' } } };
    vertex.faults.push(exhausted, exhausted, exhausted);
    const answer = await client.messages(ask);
    assert.equal(answer.status, 429);
    assert.match(answer.text, /Quota exceeded/);
  });

  it('an upstream that echoes the token it was sent hands it on to nobody', async () => {
    await client.messages(ask);
    const token = vertex.requests.at(-1)?.token ?? '';
    vertex.faults.push({ status: 400, body: { error: { code: 400, message: `bad request from Bearer ${token}`, status: 'INVALID_ARGUMENT' } } });
    const answer = await client.messages(ask);
    assert.equal(answer.status, 400);
    assert.match(answer.text, /INVALID_ARGUMENT|\[redacted\]/);
    assert.ok(!answer.text.includes(token));
  });

  it('leaves no credential in any answer or log line: no key, no assertion, no access token', () => {
    const assertions = oauth.bodies.map((body) => new URLSearchParams(body).get('assertion') ?? '');
    const tokens = [...new Set(vertex.requests.map((seen) => seen.token))];
    assert.ok(tokens.length >= 3 && assertions.length >= 3);
    const pemBody = account.privateKeyPem.split('\n').filter((line) => !line.startsWith('-----') && line !== '');
    assertNoSecrets([...client.seen, ...logText(gw)], [...assertions, ...tokens, ...pemBody]);
  });
});
