// Checks the Converse side of llmux's Bedrock tests against AWS's own client,
// @aws-sdk/client-bedrock-runtime: the fake (test/helpers/fake-bedrock.ts) must accept Converse and
// ConverseStream requests the SDK signs and serializes, and the SDK must read the fake's answers,
// throttle and stream exception as its own; every hand-made answer in test/fixtures/converse/ must
// read in the SDK as the same answer (its stream events framed as Bedrock frames them); and what the
// SDK sends for bytes (an image, redacted reasoning) must be the base64 strings llmux's translators
// write. Not run by the tests (the SDK is not a dependency of llmux). From a scratch folder:
//
//   npm init -y && npm i @aws-sdk/client-bedrock-runtime @smithy/node-http-handler tsx
//   node --import tsx /path/to/llmux/test/helpers/sdk-checks/converse-vs-aws-sdk.mjs
import { createRequire } from 'node:module';
import http from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const require = createRequire(join(process.cwd(), 'package.json'));
const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } = require('@aws-sdk/client-bedrock-runtime');
// The client picks HTTP/2 for Bedrock by default; the fake, like most proxies in front of it, is HTTP/1.1.
const { NodeHttpHandler } = require('@smithy/node-http-handler');
const { startFakeBedrock, converseFrame, exceptionFrame } = await import(new URL('../fake-bedrock.ts', import.meta.url).href);
const { platformScript } = await import(new URL('../platform-clients.ts', import.meta.url).href);
const { sseEvents } = await import(new URL('../assemble.ts', import.meta.url).href);

const keys = { accessKeyId: 'ASIATEMPEXAMPLE', secretAccessKey: 'tempSecret/xyz', sessionToken: 'FwoGZXIvYXdzEXAMPLE//session+token=' };
const fake = await startFakeBedrock({ credentials: [keys], region: 'us-west-2', script: (body) => platformScript(body) });
const client = (endpoint, extra = {}) => new BedrockRuntimeClient({ requestHandler: new NodeHttpHandler(), region: 'us-west-2', endpoint, credentials: keys, ...extra });
const modelId = 'us.meta.llama3-3-70b-instruct-v1:0';
const failures = [];
const check = (what, ok) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`); if (!ok) failures.push(what); };
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const tools = { tools: [{ toolSpec: { name: 'Read', inputSchema: { json: { type: 'object', properties: { path: { type: 'string' } } } } } }] };

// ---------- the fake, driven by the SDK ----------

const first = await client(fake.url).send(new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Read it' }, { image: { format: 'png', source: { bytes: PNG } } }] }], toolConfig: tools }));
const call = first.output.message.content.find((block) => block.toolUse)?.toolUse;
check('Converse signed and serialized by the SDK is accepted, and its tool call read', first.stopReason === 'tool_use' && call?.name === 'Read' && call.input.path === 'README.md');
const image = fake.requests.at(-1).body.messages[0].content[1].image;
check('the SDK sends image bytes as the base64 string llmux writes', image.source.bytes === PNG.toString('base64') && image.format === 'png');
const second = await client(fake.url).send(new ConverseCommand({
  modelId,
  messages: [
    { role: 'user', content: [{ text: 'Read it' }] },
    { role: 'assistant', content: [{ toolUse: call }] },
    { role: 'user', content: [{ toolResult: { toolUseId: call.toolUseId, content: [{ text: '# llmux' }] } }] },
  ],
  toolConfig: tools,
}));
check('a tool round trip through the SDK reads the answer', second.output.message.content[0]?.text === 'The file says: # llmux' && second.usage.inputTokens === 12);
check('the SDK sent the model id with its colon encoded once', fake.requests.every((r) => r.path.includes('v1%3A0')));

const stream = await client(fake.url).send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Hi' }] }], additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 1024 } } }));
const names = [];
let reasoning = '';
for await (const event of stream.stream) {
  const name = Object.keys(event)[0];
  names.push(name);
  if (event.contentBlockDelta?.delta?.reasoningContent?.text) reasoning += event.contentBlockDelta.delta.reasoningContent.text;
}
check(`the SDK reads the fake's ConverseStream (${names.join(', ')})`, names[0] === 'messageStart' && names.at(-1) === 'metadata' && reasoning !== '');

fake.throttle();
try {
  await client(fake.url, { maxAttempts: 1 }).send(new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
  check('a throttle is an SDK error', false);
} catch (err) {
  check(`a throttle reaches the SDK as ${err.name} ${err.$metadata?.httpStatusCode}`, err.name === 'ThrottlingException' && err.$metadata?.httpStatusCode === 429);
}
fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'modelStreamErrorException', message: 'boom' });
try {
  const cut = await client(fake.url).send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
  for await (const event of cut.stream) void event;
  check('a stream exception is an SDK error', false);
} catch (err) {
  check(`a ConverseStream exception frame reaches the SDK as ${err.name}`, err.name === 'ModelStreamErrorException' && err.message === 'boom');
}
try {
  await client(fake.url).send(new ConverseCommand({ modelId, messages: [{ role: 'assistant', content: [{ text: 'x' }] }] }));
  check('a body Bedrock refuses is an SDK error', false);
} catch (err) {
  check(`a body Bedrock refuses reaches the SDK as ${err.name}`, err.name === 'ValidationException' && /start with a user message/.test(err.message));
}
await fake.close();

// ---------- the hand-made answers, read by the SDK ----------

const fixtures = new URL('../../fixtures/converse/', import.meta.url);
let serving;
const replay = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (serving.endsWith('.json')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(readFileSync(new URL(serving, fixtures)));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
    for (const event of sseEvents(readFileSync(new URL(serving, fixtures)))) {
      const data = JSON.parse(event.data);
      // The platform writes an exception frame as `error`; here it goes back to the frame it stands for.
      res.write(event.event === 'error' ? exceptionFrame('modelStreamErrorException', data.error.message.replace(/^Amazon Bedrock \w+: /, '')) : converseFrame(event.event, withoutPadding(data)));
    }
    res.end();
  });
});
await new Promise((resolve) => replay.listen(0, '127.0.0.1', resolve));
const replayUrl = `http://127.0.0.1:${replay.address().port}`;

function withoutPadding(data) {
  const { p: _padding, ...rest } = data;
  return rest;
}

/** The SDK's objects as the wire's JSON: blobs back to base64, undefined members gone. */
function wire(value) {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(wire);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, wire(v)]));
  return value;
}

for (const name of readdirSync(fixtures).filter((file) => file.endsWith('.json') || file.endsWith('.sse')).sort()) {
  serving = name;
  const fixture = readFileSync(new URL(name, fixtures), 'utf8');
  if (name.endsWith('.json')) {
    const answer = await client(replayUrl).send(new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'x' }] }] }));
    const expected = JSON.parse(fixture);
    const read = { output: wire(answer.output), stopReason: answer.stopReason, usage: wire(answer.usage), metrics: wire(answer.metrics) };
    check(`${name} reads in the SDK as written`, isDeepStrictEqual(read, expected));
    continue;
  }
  const expected = sseEvents(fixture).filter((event) => event.event !== 'error').map((event) => ({ [event.event]: withoutPadding(JSON.parse(event.data)) }));
  const read = [];
  let thrown;
  try {
    const answer = await client(replayUrl).send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'x' }] }] }));
    for await (const event of answer.stream) read.push(wire(event));
  } catch (err) {
    thrown = err.name;
  }
  const failed = fixture.includes('event: error');
  check(`${name} reads in the SDK as written${failed ? `, then fails as ${thrown}` : ''}`, isDeepStrictEqual(read, expected) && (failed ? thrown === 'ModelStreamErrorException' : thrown === undefined));
}
replay.close();
console.log(`@aws-sdk/client-bedrock-runtime ${require('@aws-sdk/client-bedrock-runtime/package.json').version}: ${failures.length === 0 ? 'all checks passed' : `${failures.length} failed`}`);
process.exitCode = failures.length === 0 ? 0 : 1;
