// Checks test/helpers/fake-bedrock.ts against AWS's own client: @aws-sdk/client-bedrock-runtime signs
// InvokeModel and InvokeModelWithResponseStream requests (static and temporary credentials), the fake
// must accept them, and the SDK must read the fake's answers, throttle and stream exception as its own.
// Not run by the tests (the SDK is not a dependency of llmux). From a scratch folder:
//
//   npm init -y && npm i @aws-sdk/client-bedrock-runtime @smithy/node-http-handler tsx
//   node --import tsx /path/to/llmux/test/helpers/sdk-checks/fake-bedrock-vs-aws-sdk.mjs
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(join(process.cwd(), 'package.json'));
const { BedrockRuntimeClient, InvokeModelCommand, InvokeModelWithResponseStreamCommand } = require('@aws-sdk/client-bedrock-runtime');
// The client picks HTTP/2 for Bedrock by default; the fake, like most proxies in front of it, is HTTP/1.1.
const { NodeHttpHandler } = require('@smithy/node-http-handler');
const { startFakeBedrock } = await import(new URL('../fake-bedrock.ts', import.meta.url).href);

const staticKeys = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const temporary = { accessKeyId: 'ASIATEMPEXAMPLE', secretAccessKey: 'tempSecret/xyz', sessionToken: 'FwoGZXIvYXdzEXAMPLE//session+token=' };
const fake = await startFakeBedrock({ credentials: [staticKeys, temporary], region: 'us-west-2' });
const client = (credentials, extra = {}) => new BedrockRuntimeClient({ requestHandler: new NodeHttpHandler(), region: 'us-west-2', endpoint: fake.url, credentials, ...extra });
const body = JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
const modelId = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const failures = [];
const check = (what, ok) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`); if (!ok) failures.push(what); };

for (const credentials of [staticKeys, temporary]) {
  const whole = await client(credentials).send(new InvokeModelCommand({ modelId, contentType: 'application/json', accept: 'application/json', body }));
  check(`InvokeModel signed by the SDK with ${credentials.accessKeyId} is accepted`, JSON.parse(new TextDecoder().decode(whole.body)).type === 'message');
  const stream = await client(credentials).send(new InvokeModelWithResponseStreamCommand({ modelId, contentType: 'application/json', body }));
  const types = [];
  for await (const event of stream.body) if (event.chunk) types.push(JSON.parse(new TextDecoder().decode(event.chunk.bytes)).type);
  check(`the SDK reads the fake's stream (${types.length} events)`, types[0] === 'message_start' && types.at(-1) === 'message_stop');
}
check('the SDK sent the model id with its colon encoded once', fake.requests.every((r) => r.path.includes('v1%3A0')));
check('the SDK signed x-amz-security-token', String(fake.requests.at(-1).headers.authorization).includes('x-amz-security-token'));

fake.throttle();
try {
  await client(staticKeys, { maxAttempts: 1 }).send(new InvokeModelCommand({ modelId, body }));
  check('a throttle is an SDK error', false);
} catch (err) {
  check(`a throttle reaches the SDK as ${err.name} ${err.$metadata?.httpStatusCode}`, err.name === 'ThrottlingException' && err.$metadata?.httpStatusCode === 429);
}
fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'modelStreamErrorException', message: 'boom' });
try {
  const stream = await client(staticKeys).send(new InvokeModelWithResponseStreamCommand({ modelId, body }));
  for await (const event of stream.body) void event;
  check('a stream exception is an SDK error', false);
} catch (err) {
  check(`a stream exception frame reaches the SDK as ${err.name}`, err.name === 'ModelStreamErrorException' && err.message === 'boom');
}
try {
  await client({ ...staticKeys, secretAccessKey: 'wrong' }, { maxAttempts: 1 }).send(new InvokeModelCommand({ modelId, body }));
  check('a wrong secret is refused', false);
} catch (err) {
  check(`a wrong secret is refused as ${err.name}`, err.name === 'InvalidSignatureException');
}
await fake.close();
console.log(`@aws-sdk/client-bedrock-runtime ${require('@aws-sdk/client-bedrock-runtime/package.json').version}: ${failures.length === 0 ? 'all checks passed' : `${failures.length} failed`}`);
process.exitCode = failures.length === 0 ? 0 : 1;
