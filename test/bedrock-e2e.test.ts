/**
 * Claude on Amazon Bedrock through llmux (llmux.md section 8), over sockets against the Bedrock fake
 * (test/helpers/fake-bedrock.ts), which refuses any request whose SigV4 signature does not cover the
 * exact bytes it received: messages, chat and Responses clients, whole and streamed; the envelope
 * as Bedrock wants it; a mid-stream exception as each client format's in-stream error; a throttle
 * retried, then our 429; and no credential in any answer or log line.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { startFakeBedrock, THROTTLE_MESSAGE } from './helpers/fake-bedrock.ts';
import type { FakeBedrock } from './helpers/fake-bedrock.ts';
import { assertNoSecrets, createPlatformClient, logText, platformScript, THINKING } from './helpers/platform-clients.ts';
import type { PlatformClient } from './helpers/platform-clients.ts';
import { assembleMessagesStream } from './helpers/assemble.ts';

const MODEL_ID = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const credentials = {
  accessKeyId: 'ASIAQEXAMPLE7BEDROCK',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYbedrockKEY',
  sessionToken: 'IQoJb3JpZ2luX2VjEBedrockSessionTokenValue//+/=',
};
const env = { BR_KEY_ID: credentials.accessKeyId, BR_SECRET: credentials.secretAccessKey, BR_TOKEN: credentials.sessionToken };

let fake: FakeBedrock;
let gw: TestGateway;
let client: PlatformClient;

before(async () => {
  fake = await startFakeBedrock({ credentials: [credentials], region: 'eu-west-3', script: (body) => platformScript(body) });
  gw = await startTestGateway({
    env,
    config: {
      providers: {
        bedrock: {
          format: 'anthropic',
          platform: 'bedrock',
          region: 'eu-west-3',
          base_url: fake.url,
          credentials: { access_key_id: 'env:BR_KEY_ID', secret_access_key: 'env:BR_SECRET', session_token: 'env:BR_TOKEN' },
        },
        'bedrock-wrong': {
          format: 'anthropic',
          platform: 'bedrock',
          region: 'eu-west-3',
          base_url: fake.url,
          credentials: { access_key_id: credentials.accessKeyId, secret_access_key: 'not-the-secret-but-long-enough', session_token: 'env:BR_TOKEN' },
        },
      },
      models: [
        { id: 'claude-bedrock', provider: 'bedrock', upstream_id: MODEL_ID, reasoning: true, max_output_tokens: 8192 },
        { id: 'claude-bedrock-wrong', provider: 'bedrock-wrong', upstream_id: MODEL_ID, max_output_tokens: 8192 },
      ],
    },
  });
  client = createPlatformClient(gw);
});

after(async () => {
  await gw.close();
  await fake.close();
});


/** A messages request with a cache breakpoint in each place a client puts one. */
const CACHED_ASK = {
  max_tokens: 64,
  system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
  tools: [{ name: 'Read', input_schema: { type: 'object', properties: {} }, cache_control: { type: 'ephemeral', ttl: '1h' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
};

describe('a messages client through Bedrock', () => {
  it('keeps a messages client\'s cache_control markers as they came (llmux.md section 11)', async () => {
    const answer = await client.messages({ ...CACHED_ASK, model: 'claude-bedrock' });
    assert.equal(answer.status, 200, answer.text);
    const seen = fake.requests.at(-1)?.body ?? {};
    assert.deepEqual([seen['system'], seen['tools'], seen['messages']], [CACHED_ASK.system, CACHED_ASK.tools, CACHED_ASK.messages]);
  });

  it('gets a whole answer, the model id in the path and the body in Bedrock\'s envelope, signed over the exact bytes', async () => {
    const answer = await client.messages({ model: 'claude-bedrock', max_tokens: 512, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.status, 200, answer.text);
    const message = JSON.parse(answer.text) as Record<string, unknown>;
    assert.equal(message['model'], 'claude-bedrock');
    assert.deepEqual(message['content'], [{ type: 'text', text: 'Hello from the platform.' }]);
    assert.deepEqual(fake.refusals, []);
    const seen = fake.requests.at(-1);
    assert.equal(seen?.operation, 'invoke');
    assert.equal(seen?.modelId, MODEL_ID);
    assert.equal(seen?.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke');
    assert.equal(seen?.body['anthropic_version'], 'bedrock-2023-05-31');
    assert.ok(!('model' in (seen?.body ?? {})) && !('stream' in (seen?.body ?? {})), 'no model and no stream in the body');
    assert.equal(seen?.headers['x-amz-security-token'], credentials.sessionToken);
    assert.match(String(seen?.headers['authorization']), /SignedHeaders=[^,]*x-amz-security-token/, 'the session token is signed');
    assert.match(String(seen?.headers['authorization']), /Credential=ASIAQEXAMPLE7BEDROCK\/\d{8}\/eu-west-3\/bedrock\/aws4_request/);
    assert.equal(seen?.headers['anthropic-version'], undefined, 'the version travels in the body');
  });

  it('gets a streamed answer with thinking, from the event-stream frames', async () => {
    const answer = await client.messages({ model: 'claude-bedrock', max_tokens: 4096, stream: true, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.status, 200, answer.text);
    assert.match(String(answer.headers.get('content-type')), /text\/event-stream/);
    const message = assembleMessagesStream(answer.text);
    assert.equal(message?.['model'], 'claude-bedrock');
    assert.deepEqual(message?.['content'], [
      { type: 'thinking', thinking: THINKING.text, signature: THINKING.signature },
      { type: 'text', text: 'Hello from the platform.' },
    ]);
    assert.deepEqual(message?.['usage'], { input_tokens: 12, output_tokens: 7 });
    assert.equal(fake.requests.at(-1)?.operation, 'invoke-with-response-stream');
    assert.deepEqual(fake.refusals, []);
  });

  it('completes a tool round trip, whole and streamed', async () => {
    await client.messagesToolRoundTrip('claude-bedrock', false);
    await client.messagesToolRoundTrip('claude-bedrock', true);
  });

  it('moves the betas Bedrock accepts into the body and drops the others (Claude Code\'s among them)', async () => {
    const beta = 'claude-code-20250219,interleaved-thinking-2025-05-14,prompt-caching-scope-2026-01-05, context-1m-2025-08-07';
    const answer = await client.messages({ model: 'claude-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }, { 'anthropic-beta': beta });
    assert.equal(answer.status, 200, answer.text);
    const seen = fake.requests.at(-1);
    assert.deepEqual(seen?.body['anthropic_beta'], ['interleaved-thinking-2025-05-14', 'context-1m-2025-08-07']);
    assert.equal(seen?.headers['anthropic-beta'], undefined);
    const none = await client.messages({ model: 'claude-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }, { 'anthropic-beta': 'oauth-2025-04-20' });
    assert.equal(none.status, 200);
    assert.ok(!('anthropic_beta' in (fake.requests.at(-1)?.body ?? {})), 'no anthropic_beta when none is left');
  });
});

describe('other clients through Bedrock', () => {
  it('a chat client gets whole and streamed answers, and completes a tool round trip', async () => {
    await client.chatToolRoundTrip('claude-bedrock', false);
    await client.chatToolRoundTrip('claude-bedrock', true);
    assert.equal(fake.requests.at(-1)?.body['anthropic_version'], 'bedrock-2023-05-31', 'the translated body is in the envelope too');
    assert.ok(!('model' in (fake.requests.at(-1)?.body ?? {})));
  });

  it('a Responses client gets whole and streamed answers', async () => {
    assert.equal(await client.responsesText('claude-bedrock', false), 'Hello from the platform.');
    assert.equal(await client.responsesText('claude-bedrock', true), 'Hello from the platform.');
  });
});

describe('Bedrock errors', () => {
  const ask = { model: 'claude-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };

  it('a mid-stream exception reaches a messages client as its in-stream error, with its type', async () => {
    fake.faults.push({ kind: 'stream-exception', afterEvents: 3, exception: 'modelStreamErrorException', message: 'The model stream broke.' });
    const error = await client.streamError('messages', 'claude-bedrock');
    assert.equal(error.type, 'api_error');
    assert.match(error.message, /ModelStreamErrorException: The model stream broke\./);
  });

  it('a mid-stream exception reaches a chat client as its in-stream error, and no [DONE]', async () => {
    fake.faults.push({ kind: 'stream-exception', afterEvents: 4, exception: 'throttlingException', message: 'Too many tokens, please wait.' });
    const error = await client.streamError('chat', 'claude-bedrock');
    assert.equal(error.type, 'rate_limit_error');
    assert.match(error.message, /ThrottlingException: Too many tokens/);
  });

  it('a mid-stream exception reaches a Responses client as response.failed', async () => {
    fake.faults.push({ kind: 'stream-exception', afterEvents: 3, exception: 'internalServerException', message: 'Something broke.' });
    assert.match((await client.streamError('responses', 'claude-bedrock')).message, /InternalServerException: Something broke\./);
  });

  it('a throttle is retried, and a throttle that lasts is our 429', async () => {
    const before = fake.requests.length;
    fake.throttle(1);
    const retried = await client.messages(ask);
    assert.equal(retried.status, 200, retried.text);
    assert.equal(fake.requests.length - before, 2, 'one throttled attempt, then the answer');
    fake.throttle(3);
    const refused = await client.messages(ask);
    assert.equal(refused.status, 429);
    const body = JSON.parse(refused.text) as { error: { type: string; code: string; message: string } };
    assert.equal(body.error.type, 'rate_limit_error');
    assert.ok(body.error.message.includes(THROTTLE_MESSAGE), body.error.message);
    fake.faults.length = 0;
  });

  it('a validation error is a 400 with Bedrock\'s message', async () => {
    fake.faults.push({ kind: 'error', status: 400, type: 'ValidationException', message: 'messages.0.content: Field required' });
    const answer = await client.messages(ask);
    assert.equal(answer.status, 400);
    const body = JSON.parse(answer.text) as { error: { type: string; code: string; message: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.code, 'ValidationException');
    assert.match(body.error.message, /messages\.0\.content: Field required/);
  });

  it('a refused signature is 502 upstream_auth_failed naming the setting to check, not the client\'s fault', async () => {
    const answer = await client.messages({ ...ask, model: 'claude-bedrock-wrong' });
    assert.equal(answer.status, 502);
    const body = JSON.parse(answer.text) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'upstream_auth_failed');
    assert.match(body.error.message, /providers\.bedrock-wrong\.credentials/);
    assert.ok(fake.refusals.some((refusal) => refusal.startsWith('InvalidSignatureException')));
  });

  it('an upstream that echoes the credentials it was sent hands none of them on', async () => {
    const echo = `signed with ${credentials.secretAccessKey} and ${credentials.sessionToken} (${encodeURIComponent(credentials.sessionToken)})`;
    fake.faults.push({ kind: 'error', status: 400, type: 'ValidationException', message: echo });
    const whole = await client.messages(ask);
    assert.equal(whole.status, 400);
    assert.match(whole.text, /\[redacted\]/);
    fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'modelStreamErrorException', message: echo });
    const streamed = await client.chat({ model: 'claude-bedrock', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    assert.match(streamed.text, /\[redacted\]/);
  });

  it('names the provider in /metrics and in the log lines', async () => {
    const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
    const text = await res.text();
    client.seen.push(text);
    assert.match(text, /llmux_request_duration_seconds_count\{route="[^"]*messages[^"]*",provider="bedrock"\} \d+/);
    assert.match(text, /llmux_upstream_errors_total\{provider="bedrock",code="429"\} \d+/);
    assert.ok(gw.logs.some((line) => (line as { provider?: string }).provider === 'bedrock'));
  });

  it('leaves no credential in any answer or log line', () => {
    assertNoSecrets([...client.seen, ...logText(gw)], [credentials.secretAccessKey, credentials.sessionToken, 'not-the-secret-but-long-enough']);
  });
});

describe('Bedrock credentials that do not resolve', () => {
  it('keep its models out of GET /v1/models and make a request for one a 404', async () => {
    const lone = await startTestGateway({
      env: { AWS_EC2_METADATA_DISABLED: 'true', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/llmux/credentials' },
      config: {
        providers: { bedrock: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', base_url: fake.url } },
        models: [{ id: 'claude-bedrock', provider: 'bedrock', upstream_id: MODEL_ID }],
      },
    });
    try {
      const list = await fetch(`${lone.url}/v1/models`, { headers: { authorization: `Bearer ${lone.key}` } });
      const ids = ((await list.json()) as { data: Array<{ id: string }> }).data.map((model) => model.id);
      assert.deepEqual(ids, ['llmux-echo']);
      const answer = await createPlatformClient(lone).messages({ model: 'claude-bedrock', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(answer.status, 404);
    } finally {
      await lone.close();
    }
  });

  it('while the models of credentials that do are listed', async () => {
    const list = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${gw.key}` } });
    const ids = ((await list.json()) as { data: Array<{ id: string }> }).data.map((model) => model.id);
    assert.ok(ids.includes('claude-bedrock'), ids.join(', '));
  });
});
