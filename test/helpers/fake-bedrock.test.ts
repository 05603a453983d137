import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { signRequest } from '../../src/platforms/aws/sigv4.ts';
import type { AwsCredentials } from '../../src/platforms/aws/sigv4.ts';
import { createBedrockStreamReader } from '../../src/platforms/aws/bedrock-stream.ts';
import type { BedrockError } from '../../src/platforms/aws/bedrock-errors.ts';
import { startFakeBedrock, THROTTLE_MESSAGE } from './fake-bedrock.ts';
import { lastToolResult } from './scripted-answers.ts';

const STATIC: AwsCredentials = { accessKeyId: 'AKIAFAKESTATIC', secretAccessKey: 'static/Secret+Key' };
const TEMPORARY: AwsCredentials = { accessKeyId: 'ASIAFAKETEMP', secretAccessKey: 'temp/Secret', sessionToken: 'IQoJb3JpZ2luX2VjFAKE//token=' };
let clock = Date.UTC(2025, 5, 1, 12, 0, 0);
const fake = await startFakeBedrock({
  credentials: [STATIC, TEMPORARY],
  region: 'eu-west-1',
  now: () => clock,
  script: (body) => (lastToolResult(body) === undefined
    ? { text: 'Checking.', calls: [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] }
    : { text: `It is ${lastToolResult(body) ?? ''}.` }),
});
after(() => fake.close());

const MODEL_PATH = '/model/anthropic.claude-sonnet-4-5-v1%3A0';
const BODY = { anthropic_version: 'bedrock-2023-05-31', max_tokens: 100, messages: [{ role: 'user', content: 'Weather in Paris?' }] };

interface Sent { path?: string; signedPath?: string; body?: unknown; credentials?: AwsCredentials; region?: string; timeMs?: number; afterSigning?: (headers: Record<string, string>) => void; rawBody?: string }

/** Signs with our signer and sends over a socket; the answer's status, headers and bytes. */
function send(options: Sent = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer }> {
  const path = options.path ?? `${MODEL_PATH}/invoke`;
  const body = options.rawBody ?? JSON.stringify(options.body ?? BODY);
  const headers: Record<string, string> = { host: fake.host, 'content-type': 'application/json', accept: 'application/json' };
  const signed = signRequest({ method: 'POST', path: options.signedPath ?? path, headers, body }, {
    credentials: options.credentials ?? STATIC, region: options.region ?? 'eu-west-1', service: 'bedrock', timeMs: options.timeMs ?? clock,
  });
  const all = { ...headers, ...signed.headers };
  options.afterSigning?.(all);
  return new Promise((resolve, reject) => {
    const req = http.request(`${fake.url}${path}`, { method: 'POST', headers: all }, (res) => {
      const pieces: Buffer[] = [];
      res.on('data', (piece: Buffer) => pieces.push(piece));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(pieces) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = (bytes: Buffer): Record<string, unknown> => JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;

function readStream(bytes: Buffer): { sse: string; errors: BedrockError[] } {
  let sse = '';
  const errors: BedrockError[] = [];
  const reader = createBedrockStreamReader({ operation: 'invoke', onSse: (text) => { sse += text; }, onError: (e) => errors.push(e) });
  reader.feed(bytes);
  reader.end();
  return { sse, errors };
}

test('a request our signer signed gets a messages answer from InvokeModel, the model id read from the encoded path', async () => {
  const answer = await send();
  assert.equal(answer.status, 200, answer.bytes.toString());
  const body = json(answer.bytes);
  assert.equal(body['model'], 'anthropic.claude-sonnet-4-5-v1:0');
  assert.equal(body['stop_reason'], 'tool_use');
  assert.equal(fake.requests.at(-1)?.modelId, 'anthropic.claude-sonnet-4-5-v1:0');
  assert.equal(fake.requests.at(-1)?.accessKeyId, STATIC.accessKeyId);
});

test('InvokeModelWithResponseStream answers event-stream frames carrying the messages events, metrics on message_stop', async () => {
  const answer = await send({ path: `${MODEL_PATH}/invoke-with-response-stream`, body: { ...BODY, messages: [...BODY.messages, { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' }] }] } });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers['content-type'], 'application/vnd.amazon.eventstream');
  const { sse, errors } = readStream(answer.bytes);
  assert.deepEqual(errors, []);
  assert.match(sse, /^event: message_start\ndata: \{"type":"message_start","message":\{"id":"msg_bdrk_\d+".*"model":"anthropic\.claude-sonnet-4-5-v1:0"/);
  assert.match(sse, /"text":" 18°C\."/);
  assert.match(sse, /event: message_stop\ndata: \{"type":"message_stop","amazon-bedrock-invocationMetrics":\{"inputTokenCount":12/);
});

test('temporary credentials must send their session token and sign it', async () => {
  assert.equal((await send({ credentials: TEMPORARY })).status, 200);
  const unsigned = await send({ credentials: { ...TEMPORARY, sessionToken: undefined }, afterSigning: (h) => { h['x-amz-security-token'] = TEMPORARY.sessionToken ?? ''; } });
  assert.equal(unsigned.status, 403);
  assert.match(String(unsigned.headers['x-amzn-errortype']), /^InvalidSignatureException:/);
  const missing = await send({ credentials: { ...TEMPORARY, sessionToken: undefined } });
  assert.equal(missing.status, 403);
  assert.match(String(missing.headers['x-amzn-errortype']), /^UnrecognizedClientException:/);
});

test("bad signatures are refused with 403 and Bedrock's error shape", async () => {
  const cases: [string, Sent, string][] = [
    ['wrong secret', { credentials: { ...STATIC, secretAccessKey: 'wrong' } }, 'InvalidSignatureException'],
    ['unknown key', { credentials: { ...STATIC, accessKeyId: 'AKIAUNKNOWN' } }, 'UnrecognizedClientException'],
    ['other region', { region: 'us-east-1' }, 'InvalidSignatureException'],
    ['six minutes off', { timeMs: clock - 6 * 60_000 }, 'InvalidSignatureException'],
    ['colon encoded once (a peer bug)', { signedPath: '/model/anthropic.claude-sonnet-4-5-v1:0/invoke' }, 'InvalidSignatureException'],
    ['no authorization', { afterSigning: (h) => { delete h['authorization']; } }, 'MissingAuthenticationTokenException'],
  ];
  for (const [what, options, type] of cases) {
    const answer = await send(options);
    assert.equal(answer.status, 403, what);
    assert.match(String(answer.headers['x-amzn-errortype']), new RegExp(`^${type}:`), what);
    assert.equal(typeof json(answer.bytes)['message'], 'string', what);
  }
  // The same signature over different bytes.
  const body = JSON.stringify(BODY);
  const headers: Record<string, string> = { host: fake.host, 'content-type': 'application/json' };
  const signed = signRequest({ method: 'POST', path: `${MODEL_PATH}/invoke`, headers, body }, { credentials: STATIC, region: 'eu-west-1', service: 'bedrock', timeMs: clock });
  const status = await new Promise<number>((resolve) => {
    const req = http.request(`${fake.url}${MODEL_PATH}/invoke`, { method: 'POST', headers: { ...headers, ...signed.headers } }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.end(body.replace('100', '101'));
  });
  assert.equal(status, 403);
});

test('a throttle is a 429 ThrottlingException; a stream fault is an exception frame after some events', async () => {
  fake.throttle();
  const throttled = await send();
  assert.equal(throttled.status, 429);
  assert.match(String(throttled.headers['x-amzn-errortype']), /^ThrottlingException:/);
  assert.deepEqual(json(throttled.bytes), { message: THROTTLE_MESSAGE });

  fake.faults.push({ kind: 'stream-exception', afterEvents: 3, exception: 'modelStreamErrorException', message: 'Model stream failed' });
  const { sse, errors } = readStream((await send({ path: `${MODEL_PATH}/invoke-with-response-stream` })).bytes);
  assert.equal(sse.match(/^event: /gm)?.length, 3);
  assert.deepEqual(errors, [{ type: 'ModelStreamErrorException', status: 424, message: 'Model stream failed', retryable: true }]);
});

test('a body Bedrock would refuse is a 400 ValidationException', async () => {
  for (const body of [{ ...BODY, model: 'x' }, { ...BODY, stream: true }, { max_tokens: 1, messages: [] }]) {
    const answer = await send({ body });
    assert.equal(answer.status, 400);
    assert.match(String(answer.headers['x-amzn-errortype']), /^ValidationException:/);
  }
  assert.equal((await send({ rawBody: 'not json' })).status, 400);
});

const CONVERSE_PATH = '/model/us.meta.llama3-3-70b-instruct-v1%3A0';
const CONVERSE_BODY = { messages: [{ role: 'user', content: [{ text: 'Weather in Paris?' }] }], toolConfig: { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object', properties: {} } } } }] } };

test('Converse answers the scripted answer whole, and a tool round trip through toolResult blocks', async () => {
  const first = await send({ path: `${CONVERSE_PATH}/converse`, body: CONVERSE_BODY });
  assert.equal(first.status, 200);
  assert.deepEqual(json(first.bytes), {
    output: { message: { role: 'assistant', content: [{ text: 'Checking.' }, { toolUse: { toolUseId: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } } }] } },
    stopReason: 'tool_use',
    usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 },
    metrics: { latencyMs: 120 },
  });
  const second = await send({ path: `${CONVERSE_PATH}/converse`, body: { ...CONVERSE_BODY, messages: [
    ...CONVERSE_BODY.messages,
    { role: 'assistant', content: [{ toolUse: { toolUseId: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } } }] },
    { role: 'user', content: [{ toolResult: { toolUseId: 'toolu_1', content: [{ text: '18°C' }] } }] },
  ] } });
  assert.deepEqual((json(second.bytes)['output'] as { message: unknown }).message, { role: 'assistant', content: [{ text: 'It is 18°C.' }] });
  assert.equal(fake.requests.at(-1)?.modelId, 'us.meta.llama3-3-70b-instruct-v1:0');
});

test('ConverseStream answers event-stream frames of the Converse events, and an exception frame where a fault says', async () => {
  let sse = '';
  const reader = createBedrockStreamReader({ operation: 'converse', onSse: (text) => { sse += text; }, onError: (error) => assert.fail(error.message) });
  reader.feed((await send({ path: `${CONVERSE_PATH}/converse-stream`, body: CONVERSE_BODY })).bytes);
  reader.end();
  const names = [...sse.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]);
  assert.deepEqual(names, ['messageStart', 'contentBlockDelta', 'contentBlockStop', 'contentBlockStart', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockStop', 'messageStop', 'metadata']);
  assert.match(sse, /"start":\{"toolUse":\{"toolUseId":"toolu_1","name":"get_weather"\}\}/);

  fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'throttlingException', message: 'Slow down' });
  const errors: BedrockError[] = [];
  const cut = createBedrockStreamReader({ operation: 'converse', onSse: () => {}, onError: (e) => errors.push(e) });
  cut.feed((await send({ path: `${CONVERSE_PATH}/converse-stream`, body: CONVERSE_BODY })).bytes);
  cut.end();
  assert.deepEqual(errors, [{ type: 'ThrottlingException', status: 429, message: 'Slow down', retryable: true }]);
});

test('a Converse body Bedrock would refuse is a 400 ValidationException saying why', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ messages: [{ role: 'assistant', content: [{ text: 'x' }] }] }, /must start with a user message/],
    [{ messages: [{ role: 'user', content: [{ text: 'a' }] }, { role: 'user', content: [{ text: 'b' }] }] }, /must alternate between user and assistant roles/],
    [{ messages: [{ role: 'user', content: [{ text: ' ' }] }] }, /is blank/],
    [{ messages: [{ role: 'user', content: [{ text: 'a', image: {} }] }] }, /exactly one member/],
    [{ messages: [{ role: 'user', content: [{ text: 'a' }] }, { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'f', input: {} } }] }] }, /toolConfig field must be defined/],
    [{ ...CONVERSE_BODY, toolConfig: { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }], toolChoice: { any: {} } } }, /doesn't support the toolConfig\.toolChoice\.any field/],
    [{ ...CONVERSE_BODY, model: 'x' }, /extraneous key \[model\]/],
    [{ ...CONVERSE_BODY, inferenceConfig: { temperature: 1.5 } }, /temperature must be between 0 and 1/],
  ];
  for (const [body, message] of cases) {
    const answer = await send({ path: `${CONVERSE_PATH}/converse`, body });
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.match(String(answer.headers['x-amzn-errortype']), /^ValidationException:/);
    assert.match(String(json(answer.bytes)['message']), message);
  }
  assert.equal((await send({ path: '/model/x/unknown' })).status, 404);
});
