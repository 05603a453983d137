import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { platforms } from '../../src/platforms/index.ts';
import type { OutgoingRequest, PlatformServices, UpstreamAnswer, UpstreamCall } from '../../src/platforms/index.ts';
import { bedrockErrorEvent, readBedrockError } from '../../src/platforms/bedrock.ts';
import { signRequest } from '../../src/platforms/aws/sigv4.ts';
import type { ProviderConfig } from '../../src/config/types.ts';
import { chunkFrame, converseFrame, exceptionFrame } from '../helpers/fake-bedrock.ts';
import { sseEvents } from '../helpers/assemble.ts';
import { everySplit } from '../helpers/split.ts';

const env = { BR_KEY: 'AKIDEXAMPLE', BR_SECRET: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', BR_TOKEN: 'session//token+=' };
const TIME = Date.UTC(2025, 5, 1, 12, 0, 0);
const services: PlatformServices = { secret: (written) => written, env, now: () => TIME };

function provider(overrides: Partial<NonNullable<ProviderConfig['bedrock']>> = {}): ProviderConfig {
  return {
    id: 'bedrock',
    format: 'messages',
    platform: 'bedrock',
    baseUrl: 'https://bedrock-runtime.eu-west-3.amazonaws.com',
    apiKey: undefined,
    keyless: false,
    headers: {},
    bedrock: { region: 'eu-west-3', credentials: { access_key_id: 'env:BR_KEY', secret_access_key: 'env:BR_SECRET', session_token: 'env:BR_TOKEN' }, ...overrides },
  };
}

const call = (stream: boolean, beta?: string): UpstreamCall => ({
  upstreamId: 'arn:aws:bedrock:eu-west-3:123456789012:application-inference-profile/abc',
  format: 'messages',
  stream,
  formatHeaders: { 'anthropic-version': '2023-06-01', ...(beta === undefined ? {} : { 'anthropic-beta': beta }) },
});

function answerOf(contentType: string): UpstreamAnswer & PassThrough {
  return Object.assign(new PassThrough(), { statusCode: 200, headers: { 'content-type': contentType }, complete: false });
}

async function drain(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const piece of stream) text += String(piece);
  return text;
}

describe('the bedrock platform', () => {
  it('reaches InvokeModel and its stream with the model id encoded as the AWS SDKs encode it', () => {
    const carrier = platforms.bedrock.bind(provider(), services);
    assert.equal(carrier.endpoint, 'https://bedrock-runtime.eu-west-3.amazonaws.com');
    assert.equal(carrier.target(call(false)), '/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A123456789012%3Aapplication-inference-profile%2Fabc/invoke');
    assert.equal(carrier.target({ ...call(true), upstreamId: 'anthropic.claude-haiku-4-5-20251001-v1:0' }), '/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke-with-response-stream');
  });

  it('takes model and stream out of the body, sets anthropic_version, and moves the accepted betas into it', () => {
    const carrier = platforms.bedrock.bind(provider(), services);
    const envelope = carrier.envelope(call(true, 'claude-code-20250219, interleaved-thinking-2025-05-14,interleaved-thinking-2025-05-14,fast-mode-2026-02-01'));
    assert.deepEqual([...(envelope ?? [])], [['model', undefined], ['stream', undefined], ['anthropic_version', 'bedrock-2023-05-31'], ['anthropic_beta', ['interleaved-thinking-2025-05-14']]]);
    assert.equal(carrier.envelope(call(false))?.get('anthropic_beta'), undefined);
    assert.deepEqual(carrier.headers(call(true, 'x')), { accept: 'application/json' }, 'no anthropic-* header');
  });

  it('keeps only the configured betas when the provider lists its own', () => {
    const carrier = platforms.bedrock.bind(provider({ betas: ['claude-code-20250219'] }), services);
    assert.deepEqual(carrier.envelope(call(false, 'claude-code-20250219,interleaved-thinking-2025-05-14'))?.get('anthropic_beta'), ['claude-code-20250219']);
  });

  it('signs the exact path, headers and body parts it will send, with the session token', async () => {
    const carrier = platforms.bedrock.bind(provider(), services);
    const c = call(false);
    const body = [Buffer.from('{"max_tokens":5,'), Buffer.from('"anthropic_version":"bedrock-2023-05-31"}')];
    const request: OutgoingRequest = { call: c, target: carrier.target(c), body, headers: carrier.headers(c) };
    await carrier.authorise(request);
    const expected = signRequest(
      { method: 'POST', path: request.target, headers: { host: 'bedrock-runtime.eu-west-3.amazonaws.com', 'content-type': 'application/json', accept: 'application/json' }, body: Buffer.concat(body) },
      { credentials: { accessKeyId: env.BR_KEY, secretAccessKey: env.BR_SECRET, sessionToken: env.BR_TOKEN }, region: 'eu-west-3', service: 'bedrock', timeMs: TIME },
    );
    assert.equal(request.headers['authorization'], expected.headers['authorization']);
    assert.equal(request.headers['x-amz-security-token'], env.BR_TOKEN);
    assert.equal(request.headers['x-amz-date'], '20250601T120000Z');
    assert.match(request.headers['authorization'] ?? '', /SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token,/);
  });

  it('signs under the base path of a base_url with one', async () => {
    const carrier = platforms.bedrock.bind({ ...provider(), baseUrl: 'http://127.0.0.1:9999/bedrock/' }, services);
    const c = call(false);
    const request: OutgoingRequest = { call: c, target: carrier.target(c), body: '{}', headers: carrier.headers(c) };
    await carrier.authorise(request);
    const expected = signRequest(
      { method: 'POST', path: `/bedrock${request.target}`, headers: { host: '127.0.0.1:9999', 'content-type': 'application/json', accept: 'application/json' }, body: '{}' },
      { credentials: { accessKeyId: env.BR_KEY, secretAccessKey: env.BR_SECRET, sessionToken: env.BR_TOKEN }, region: 'eu-west-3', service: 'bedrock', timeMs: TIME },
    );
    assert.equal(request.headers['authorization'], expected.headers['authorization']);
  });

  it('turns the event stream into the messages format\'s events, split at any byte', async () => {
    const frames = Buffer.concat([
      chunkFrame('{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":3,"output_tokens":1}}}'),
      chunkFrame('{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3}}'),
    ]);
    const carrier = platforms.bedrock.bind(provider(), services);
    for (const { pieces } of everySplit(frames)) {
      const answer = answerOf('application/vnd.amazon.eventstream');
      const events = carrier.events(answer);
      assert.ok(events !== undefined);
      assert.equal(events.headers['content-type'], 'text/event-stream');
      for (const piece of pieces) answer.write(piece);
      answer.end();
      const text = await drain(events);
      assert.deepEqual(sseEvents(text).map((event) => event.event), ['message_start', 'message_stop']);
    }
  });

  it('reaches Converse and ConverseStream for a converse provider, its body going as it is and its stream as Converse\'s own events', async () => {
    const carrier = platforms.bedrock.bind({ ...provider(), format: 'converse' }, services);
    const converse: UpstreamCall = { upstreamId: 'us.meta.llama3-3-70b-instruct-v1:0', format: 'converse', stream: false, formatHeaders: {} };
    assert.equal(carrier.target(converse), '/model/us.meta.llama3-3-70b-instruct-v1%3A0/converse');
    assert.equal(carrier.target({ ...converse, stream: true }), '/model/us.meta.llama3-3-70b-instruct-v1%3A0/converse-stream');
    assert.equal(carrier.envelope(converse), undefined, 'nothing in a Converse body is the path\'s');
    assert.deepEqual(carrier.headers(converse), { accept: 'application/json' });
    const answer = answerOf('application/vnd.amazon.eventstream');
    const events = carrier.events(answer);
    assert.ok(events !== undefined);
    answer.end(Buffer.concat([
      converseFrame('messageStart', { role: 'assistant' }),
      converseFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hi' } }),
      exceptionFrame('modelStreamErrorException', 'broke'),
    ]));
    const read = sseEvents(await drain(events));
    assert.deepEqual(read.map((event) => event.event), ['messageStart', 'contentBlockDelta', 'error']);
    assert.deepEqual(JSON.parse(read[1]?.data ?? '{}'), { contentBlockIndex: 0, delta: { text: 'Hi' }, p: 'abcdefghijklmnopqr' });
    assert.deepEqual(JSON.parse(read[2]?.data ?? '{}'), { type: 'error', error: { type: 'api_error', message: 'Amazon Bedrock ModelStreamErrorException: broke' } });
  });

  it('turns an exception frame into an in-stream error event typed as Anthropic types it, and reads nothing after', async () => {
    const carrier = platforms.bedrock.bind(provider(), services);
    const answer = answerOf('application/vnd.amazon.eventstream');
    const events = carrier.events(answer);
    answer.end(Buffer.concat([
      chunkFrame('{"type":"message_start","message":{"id":"m"}}'),
      exceptionFrame('throttlingException', 'Too many tokens'),
      chunkFrame('{"type":"message_stop"}'),
    ]));
    const parsed = sseEvents(await drain(events as UpstreamAnswer));
    assert.deepEqual(parsed.map((event) => event.event), ['message_start', 'error']);
    assert.deepEqual(JSON.parse(parsed[1]?.data ?? ''), { type: 'error', error: { type: 'rate_limit_error', message: 'Amazon Bedrock ThrottlingException: Too many tokens' } });
  });

  it('names the error type of each exception status', () => {
    const typeOf = (status: number): string => (JSON.parse(bedrockErrorEvent({ type: 'X', status, message: 'm', retryable: false }).split('data: ')[1] ?? '') as { error: { type: string } }).error.type;
    assert.deepEqual([400, 403, 404, 408, 424, 429, 500, 503].map(typeOf), [
      'invalid_request_error', 'permission_error', 'not_found_error', 'api_error', 'api_error', 'rate_limit_error', 'api_error', 'overloaded_error',
    ]);
  });

  it('passes an SSE answer on as it is, and has no stream for a JSON one', () => {
    const carrier = platforms.bedrock.bind(provider(), services);
    const sse = answerOf('text/event-stream');
    assert.equal(carrier.events(sse), sse);
    assert.equal(carrier.events(answerOf('application/json')), undefined);
  });

  it("reads Bedrock's error shape: the exception from x-amzn-errortype, the message from the body", () => {
    assert.deepEqual(readBedrockError(429, { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' }, '{"message":"Too many requests"}'), {
      status: 429, message: 'Too many requests', type: 'ThrottlingException', code: 'ThrottlingException',
    });
    assert.deepEqual(readBedrockError(400, {}, '{"Message":"bad"}'), { status: 400, message: 'bad', type: undefined, code: undefined });
    assert.deepEqual(readBedrockError(502, {}, '<html>Bad Gateway</html>'), { status: 502, message: '<html>Bad Gateway</html>', type: undefined, code: undefined });
  });

  it('says where credentials come from without a value, and reports the secrets in play once used', async () => {
    const carrier = platforms.bedrock.bind(provider(), services);
    assert.equal(carrier.credentialSetting, 'providers.bedrock.credentials in the llmux config');
    assert.deepEqual(await carrier.credentials?.(), { ok: true, detail: 'providers.bedrock.credentials in the llmux config' });
    assert.deepEqual(carrier.secrets?.(), [env.BR_SECRET, env.BR_TOKEN]);
    const profiled = platforms.bedrock.bind({ ...provider(), bedrock: { region: 'eu-west-3', profile: 'dev' } }, services);
    assert.equal(profiled.credentialSetting, 'providers.bedrock.profile ("dev") in the shared credentials file');
  });

  it('reports credentials that cannot be had, and refuses to sign without them', async () => {
    const bare = platforms.bedrock.bind({ ...provider(), bedrock: { region: 'eu-west-3' } }, { ...services, env: { AWS_EC2_METADATA_DISABLED: 'true', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials' } });
    const state = await bare.credentials?.();
    assert.equal(state?.ok, false);
    assert.match(state?.ok === false ? state.reason : '', /no AWS credentials found/);
    const c = call(false);
    await assert.rejects(async () => bare.authorise({ call: c, target: bare.target(c), body: '{}', headers: {} }), /upstream_auth_failed|could not be authorised/);
  });
});
