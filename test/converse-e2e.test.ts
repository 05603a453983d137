/**
 * Bedrock's other models through Converse and ConverseStream (llmux.md section 8, `format:
 * "converse"`), over sockets against the Bedrock fake (test/helpers/fake-bedrock.ts), which checks
 * the SigV4 signature over the exact bytes it received and refuses a Converse body Bedrock would
 * refuse: messages, chat, Responses and Gemini clients, whole and streamed, with thinking and tool round
 * trips; a mid-stream exception as each client format's in-stream error; a throttle retried, then
 * our 429; usage from Converse's own report; and no credential in any answer or log line.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { startFakeBedrock, THROTTLE_MESSAGE } from './helpers/fake-bedrock.ts';
import type { FakeBedrock } from './helpers/fake-bedrock.ts';
import { assertNoSecrets, createPlatformClient, logText, platformScript, THINKING } from './helpers/platform-clients.ts';
import type { PlatformClient } from './helpers/platform-clients.ts';
import { assembleMessagesStream, sseEvents } from './helpers/assemble.ts';

type Json = Record<string, unknown>;

const LLAMA = 'us.meta.llama3-3-70b-instruct-v1:0';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'us.amazon.nova-pro-v1:0';
const credentials = {
  accessKeyId: 'ASIAQEXAMPLE7CONVERSE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYconverseKEY',
  sessionToken: 'IQoJb3JpZ2luX2VjEConverseSessionTokenValue//+/=',
};
const env = { BR_KEY_ID: credentials.accessKeyId, BR_SECRET: credentials.secretAccessKey, BR_TOKEN: credentials.sessionToken };

let fake: FakeBedrock;
let gw: TestGateway;
let client: PlatformClient;

before(async () => {
  fake = await startFakeBedrock({ credentials: [credentials], region: 'us-west-2', script: (body) => platformScript(body) });
  gw = await startTestGateway({
    env,
    config: {
      providers: {
        converse: {
          format: 'converse',
          platform: 'bedrock',
          region: 'us-west-2',
          base_url: fake.url,
          credentials: { access_key_id: 'env:BR_KEY_ID', secret_access_key: 'env:BR_SECRET', session_token: 'env:BR_TOKEN' },
        },
      },
      models: [
        { id: 'llama-bedrock', provider: 'converse', upstream_id: LLAMA, max_output_tokens: 8192 },
        { id: 'claude-converse', provider: 'converse', upstream_id: CLAUDE, reasoning: true, max_output_tokens: 64000 },
        { id: 'nova-bedrock', provider: 'converse', upstream_id: NOVA, max_output_tokens: 10000 },
      ],
    },
  });
  client = createPlatformClient(gw);
});

after(async () => {
  await gw.close();
  await fake.close();
});

/** The last request the fake took, which it checked as Bedrock checks it. */
function lastSeen(): { operation: string; path: string; body: Json; headers: Record<string, unknown> } {
  const seen = fake.requests.at(-1);
  assert.ok(seen !== undefined, 'the fake saw a request');
  return { operation: seen.operation, path: seen.path, body: seen.body, headers: seen.headers };
}

describe('a messages client through Converse', () => {
  it('gets a whole answer from /converse, the body a Converse body signed over its exact bytes', async () => {
    const answer = await client.messages({ model: 'llama-bedrock', max_tokens: 512, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.status, 200, answer.text);
    const message = JSON.parse(answer.text) as Json;
    assert.equal(message['model'], 'llama-bedrock');
    assert.deepEqual(message['content'], [{ type: 'text', text: 'Hello from the platform.' }]);
    assert.equal(message['stop_reason'], 'end_turn');
    assert.deepEqual(message['usage'], { input_tokens: 12, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    assert.deepEqual(fake.refusals, []);
    const seen = lastSeen();
    assert.equal(seen.operation, 'converse');
    assert.equal(seen.path, '/model/us.meta.llama3-3-70b-instruct-v1%3A0/converse');
    assert.deepEqual(seen.body, { messages: [{ role: 'user', content: [{ text: 'Hi' }] }], system: [{ text: 'Be brief.' }], inferenceConfig: { maxTokens: 512 } });
    assert.equal(seen.headers['x-amz-security-token'], credentials.sessionToken);
    assert.match(String(seen.headers['authorization']), /Credential=ASIAQEXAMPLE7CONVERSE\/\d{8}\/us-west-2\/bedrock\/aws4_request, SignedHeaders=[^,]*x-amz-security-token/);
    assert.equal(seen.headers['anthropic-version'], undefined, 'no messages-format header goes to Converse');
  });

  it('gets a streamed answer with thinking from /converse-stream, Claude\'s thinking asked for in its own fields', async () => {
    const answer = await client.messages({ model: 'claude-converse', max_tokens: 4096, stream: true, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.status, 200, answer.text);
    assert.match(String(answer.headers.get('content-type')), /text\/event-stream/);
    const message = assembleMessagesStream(answer.text);
    assert.equal(message?.['model'], 'claude-converse');
    const content = message?.['content'] as Json[];
    assert.deepEqual(content.map((block) => [block['type'], block['thinking'] ?? block['text']]), [['thinking', THINKING.text], ['text', 'Hello from the platform.']]);
    assert.deepEqual(message?.['usage'], { input_tokens: 12, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    const seen = lastSeen();
    assert.equal(seen.operation, 'converse-stream');
    assert.deepEqual(seen.body['additionalModelRequestFields'], { thinking: { type: 'enabled', budget_tokens: 2048 } });
    assert.deepEqual(fake.refusals, []);
  });

  it('completes a tool round trip, whole and streamed, the tools offered in toolConfig', async () => {
    await client.messagesToolRoundTrip('llama-bedrock', false);
    await client.messagesToolRoundTrip('llama-bedrock', true);
    const seen = lastSeen();
    assert.deepEqual((seen.body['toolConfig'] as Json)['tools'], [{ toolSpec: { name: 'Read', description: 'Read a file', inputSchema: { json: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } } }]);
    const messages = seen.body['messages'] as Json[];
    assert.deepEqual(messages.at(-1), { role: 'user', content: [{ toolResult: { toolUseId: 'toolu_01Read', content: [{ text: '# llmux, a gateway' }] } }] });
  });
});

describe('other clients through Converse', () => {
  it('a chat client gets whole and streamed answers, and completes a tool round trip (Nova)', async () => {
    await client.chatToolRoundTrip('nova-bedrock', false);
    await client.chatToolRoundTrip('nova-bedrock', true);
    assert.equal(lastSeen().path, '/model/us.amazon.nova-pro-v1%3A0/converse-stream');
  });

  it('a chat client\'s streamed usage comes last, from Converse\'s metadata', async () => {
    const answer = await client.chat({ model: 'llama-bedrock', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }] });
    const chunks = sseEvents(answer.text).map((event) => event.data);
    assert.equal(chunks.at(-1), '[DONE]');
    assert.deepEqual((JSON.parse(chunks.at(-2) ?? '{}') as Json)['usage'], { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('a chat client forcing a tool on Llama gets an answer: the choice Bedrock would refuse is dropped, and the log says so', async () => {
    const tools = [{ type: 'function', function: { name: 'Read', parameters: { type: 'object', properties: {} } } }];
    const answer = await client.chat({ model: 'llama-bedrock', tools, tool_choice: 'required', messages: [{ role: 'user', content: 'Read it' }] });
    assert.equal(answer.status, 200, answer.text);
    assert.equal((lastSeen().body['toolConfig'] as Json)['toolChoice'], undefined);
    const line = gw.logs.filter((logged) => (logged as { model?: string }).model === 'llama-bedrock').at(-1) as { warnings?: string[] } | undefined;
    assert.ok(line?.warnings?.some((warning) => warning.includes('tool_choice: dropped, this model on Converse cannot be made to call a tool')), JSON.stringify(line));
  });

  it('a Responses client gets whole and streamed answers', async () => {
    assert.equal(await client.responsesText('llama-bedrock', false), 'Hello from the platform.');
    assert.equal(await client.responsesText('llama-bedrock', true), 'Hello from the platform.');
  });

  it('a Gemini client completes a tool round trip, whole and streamed (its request read as a messages one on the way)', async () => {
    await client.geminiToolRoundTrip('llama-bedrock', false);
    assert.equal(lastSeen().path, '/model/us.meta.llama3-3-70b-instruct-v1%3A0/converse');
    await client.geminiToolRoundTrip('llama-bedrock', true);
    assert.equal(lastSeen().path, '/model/us.meta.llama3-3-70b-instruct-v1%3A0/converse-stream');
    assert.deepEqual(fake.refusals, []);
  });

  it('counts the usage Converse reported, whole and streamed, in the log line', async () => {
    await client.messages({ model: 'llama-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    await client.chat({ model: 'llama-bedrock', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    const lines = gw.logs.filter((logged) => (logged as { model?: string }).model === 'llama-bedrock').slice(-2) as Array<{ tokens_in: number; tokens_out: number }>;
    assert.deepEqual(lines.map((line) => [line.tokens_in, line.tokens_out]), [[12, 7], [12, 7]]);
  });
});

describe('Converse errors', () => {
  const ask = { model: 'llama-bedrock', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };

  it('a mid-stream exception reaches a messages client as its in-stream error, with its type', async () => {
    fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'modelStreamErrorException', message: 'The model stream broke.' });
    const error = await client.streamError('messages', 'llama-bedrock');
    assert.equal(error.type, 'api_error');
    assert.match(error.message, /ModelStreamErrorException: The model stream broke\./);
  });

  it('a mid-stream exception reaches a chat client as its in-stream error, and no [DONE]', async () => {
    fake.faults.push({ kind: 'stream-exception', afterEvents: 3, exception: 'throttlingException', message: 'Too many tokens, please wait.' });
    const error = await client.streamError('chat', 'llama-bedrock');
    assert.equal(error.type, 'rate_limit_error');
    assert.match(error.message, /ThrottlingException: Too many tokens/);
  });

  it('a mid-stream exception reaches a Responses client as response.failed', async () => {
    fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'internalServerException', message: 'Something broke.' });
    assert.match((await client.streamError('responses', 'llama-bedrock')).message, /InternalServerException: Something broke\./);
  });

  it('a throttle is retried, and a throttle that lasts is our 429', async () => {
    const before = fake.requests.length;
    fake.throttle(1);
    const retried = await client.chat({ model: 'llama-bedrock', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(retried.status, 200, retried.text);
    assert.equal(fake.requests.length - before, 2, 'one throttled attempt, then the answer');
    fake.throttle(3);
    const refused = await client.messages(ask);
    assert.equal(refused.status, 429);
    const body = JSON.parse(refused.text) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'rate_limit_error');
    assert.ok(body.error.message.includes(THROTTLE_MESSAGE), body.error.message);
    fake.faults.length = 0;
  });

  it('a body Bedrock refuses is a 400 with its message', async () => {
    fake.faults.push({ kind: 'error', status: 400, type: 'ValidationException', message: 'The model returned the following errors: context too long' });
    const answer = await client.messages(ask);
    assert.equal(answer.status, 400);
    const body = JSON.parse(answer.text) as { error: { type: string; code: string; message: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /context too long/);
  });

  it('an upstream that echoes the credentials it was sent hands none of them on', async () => {
    const echo = `signed with ${credentials.secretAccessKey} and ${credentials.sessionToken}`;
    fake.faults.push({ kind: 'stream-exception', afterEvents: 2, exception: 'modelStreamErrorException', message: echo });
    const streamed = await client.chat({ model: 'llama-bedrock', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    assert.match(streamed.text, /\[redacted\]/);
    fake.faults.push({ kind: 'error', status: 400, type: 'ValidationException', message: echo });
    assert.match((await client.responses({ model: 'llama-bedrock', input: 'Hi', store: false })).text, /\[redacted\]/);
  });

  it('leaves no credential in any answer or log line', () => {
    assert.deepEqual(fake.refusals, []);
    assertNoSecrets([...client.seen, ...logText(gw)], [credentials.secretAccessKey, credentials.sessionToken]);
  });
});
