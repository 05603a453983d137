/**
 * The Responses API over real sockets, driven by the official `openai` SDK as its users drive it:
 * `responses.create`, `responses.stream` (whose helper rejects a malformed event sequence),
 * retrieve / delete / input items, tool round trips with function, custom (freeform) and
 * namespaced tools, against a chat-completions upstream and a messages upstream (fake ones).
 * State (stored responses, sealed reasoning, per-key isolation) is in responses-state-e2e.test.ts.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import type { SeenRequest } from './helpers/fake-upstream.ts';
import { respond } from './helpers/fake-upstream.ts';
import { answer, chatStream, lastToolResult, toolRoundTrip } from './helpers/scripted-answers.ts';
import { assembleResponsesStream } from './helpers/responses-stream.ts';
import { isRecord, records } from '../src/common/json.ts';

let gw: TestGateway;
let client: OpenAI;

before(async () => {
  gw = await startTestGateway();
  client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
});
after(async () => {
  await gw.close();
});
beforeEach(() => {
  gw.upstream.queue.length = 0;
  gw.upstream.requests.length = 0;
});

function upstreamBody(index = -1): Record<string, unknown> {
  const seen: SeenRequest | undefined = gw.upstream.requests.at(index);
  assert.ok(seen !== undefined, 'the upstream was asked');
  return seen.body;
}

/** The upstream request's messages (chat) or turns (messages). */
function messagesOf(body: Record<string, unknown>): Array<Record<string, unknown>> {
  return records(body['messages']);
}

/** The tool calls an upstream request replays: chat `tool_calls` (arguments parsed) or messages `tool_use` blocks. */
function replayedCalls(body: Record<string, unknown>): Array<{ id: unknown; name: unknown; input: unknown }> {
  return messagesOf(body).flatMap((message) => [
    ...records(message['tool_calls']).map((call) => {
      const fn = isRecord(call['function']) ? call['function'] : {};
      return { id: call['id'], name: fn['name'], input: JSON.parse(String(fn['arguments'])) as unknown };
    }),
    ...records(message['content']).filter((block) => block['type'] === 'tool_use').map((block) => ({ id: block['id'], name: block['name'], input: block['input'] })),
  ]);
}

function toolNamesOf(body: Record<string, unknown>): string[] {
  return records(body['tools']).map((tool) => String(isRecord(tool['function']) ? tool['function']['name'] : tool['name']));
}

const UPSTREAMS = [
  { format: 'chat', model: 'gpt-test', upstreamPath: '/v1/chat/completions', upstreamModel: 'gpt-upstream' },
  { format: 'messages', model: 'claude-test', upstreamPath: '/v1/messages', upstreamModel: 'claude-upstream' },
] as const;

for (const upstream of UPSTREAMS) {
  describe(`Responses clients against a ${upstream.format} upstream`, () => {
    test('responses.create answers with the llmux model id, the text as output_text and the upstream usage', async () => {
      gw.upstream.queue.push(answer({ text: 'Hello from upstream.', usage: { input: 30, output: 5 } }));
      const response = await client.responses.create({
        model: upstream.model,
        instructions: 'Be brief.',
        input: [
          { role: 'developer', content: 'Answer in English.' },
          { role: 'user', content: 'Say hello.' },
        ],
      });

      assert.match(response.id, /^resp_/);
      assert.equal(response.object, 'response');
      assert.equal(response.status, 'completed');
      assert.equal(response.model, upstream.model);
      assert.equal(response.output_text, 'Hello from upstream.');
      assert.equal(response.instructions, 'Be brief.');
      assert.deepEqual(response.usage, { input_tokens: 30, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 35 });
      const seen = gw.upstream.requests[0];
      assert.equal(seen?.path, upstream.upstreamPath);
      assert.equal(seen?.body['model'], upstream.upstreamModel);
      // instructions and the developer message both reach the model, neither replacing the other.
      // A messages upstream gets the system prompt as a block carrying a cache breakpoint (llmux.md section 11).
      const system = upstream.format === 'chat'
        ? messagesOf(upstreamBody()).filter((m) => m['role'] === 'system').map((m) => m['content']).join('\n')
        : records(upstreamBody()['system']).map((block) => block['text']).join('\n');
      assert.match(system, /Be brief\./);
      assert.match(system, /Answer in English\./);
    });

    test('responses.stream is accepted by the SDK helper, event by event, and its final response is the one stored', async () => {
      gw.upstream.queue.push(answer({ text: 'Streamed words arrive one by one.' }));
      const stream = client.responses.stream({ model: upstream.model, input: 'Stream something.' });
      const types: string[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      const final = await stream.finalResponse();

      assert.equal(text, 'Streamed words arrive one by one.');
      assert.deepEqual(types.filter((type) => !type.endsWith('.delta')), [
        'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
        'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
      ]);
      assert.equal(final.status, 'completed');
      assert.equal(final.model, upstream.model);
      assert.equal(final.output_text, text);
      assert.equal(upstreamBody()['stream'], true);
      const stored = await client.responses.retrieve(final.id);
      assert.equal(stored.output_text, final.output_text);
      assert.deepEqual(stored.output.map((item) => item.id), final.output.map((item) => item.id));
    });

    test('a raw stream (on /responses, for clients given the bare address) counts sequence numbers from 0, adds a message with empty content and ends with one terminal event carrying usage', async () => {
      gw.upstream.queue.push(answer({ text: 'Raw stream.', usage: { input: 9, output: 3 } }));
      const res = await fetch(`${gw.url}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
        body: JSON.stringify({ model: upstream.model, input: 'Go.', stream: true }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const assembled = assembleResponsesStream(await res.text());
      assert.equal(assembled.final.status, 'completed');
      assert.equal(assembled.final.usage?.total_tokens, 12);
    });

    test('a function tool round trip: the call comes back as function_call, its output goes up as the tool result', async () => {
      gw.upstream.queue.push(answer({ calls: [{ id: 'call_weather_1', name: 'get_weather', input: { city: 'Paris' } }] }));
      const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false }];
      const first = await client.responses.create({ model: upstream.model, input: 'Weather in Paris?', tools });
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call?.type === 'function_call');
      assert.equal(call.name, 'get_weather');
      assert.equal(call.call_id, 'call_weather_1');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.deepEqual(toolNamesOf(upstreamBody()), ['get_weather']);

      gw.upstream.queue.push(answer({ text: 'It is sunny in Paris.' }));
      const second = await client.responses.create({
        model: upstream.model,
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
        tools,
      });
      assert.equal(second.output_text, 'It is sunny in Paris.');
      assert.equal(second.previous_response_id, first.id);
      assert.equal(lastToolResult(upstreamBody()), 'sunny, 21 C');
      // The history came from the stored response: the user's question is still there.
      assert.match(JSON.stringify(messagesOf(upstreamBody())), /Weather in Paris\?/);
    });

    test('a custom (freeform) tool round-trips its raw text input, never JSON-wrapped', async () => {
      const patch = '*** Begin Patch\n*** Add File: hello.txt\n+hello "world"\n*** End Patch\n';
      gw.upstream.queue.push(answer({ calls: [{ id: 'call_patch_1', name: 'apply_patch', input: { input: patch } }] }));
      const tools: OpenAI.Responses.Tool[] = [{ type: 'custom', name: 'apply_patch', description: 'Edit files', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/s' } }];
      const stream = client.responses.stream({ model: upstream.model, input: 'Create hello.txt', tools, store: false });
      const final = await stream.finalResponse();
      const call = final.output.find((item) => item.type === 'custom_tool_call');
      assert.ok(call?.type === 'custom_tool_call');
      assert.equal(call.name, 'apply_patch');
      assert.equal(call.input, patch);
      const offered = records(upstreamBody()['tools'])[0] ?? {};
      assert.match(JSON.stringify(offered), /lark grammar/);

      // Stateless, as Codex replays it: the call and its output in the input.
      gw.upstream.queue.push(answer({ text: 'Done.' }));
      await client.responses.create({
        model: upstream.model,
        store: false,
        tools,
        input: [
          { role: 'user', content: 'Create hello.txt' },
          { type: 'custom_tool_call', call_id: call.call_id, name: 'apply_patch', input: patch },
          { type: 'custom_tool_call_output', call_id: call.call_id, output: 'Success. Updated: A hello.txt' },
        ],
      });
      assert.deepEqual(replayedCalls(upstreamBody()), [{ id: call.call_id, name: 'apply_patch', input: { input: patch } }]);
      assert.equal(lastToolResult(upstreamBody()), 'Success. Updated: A hello.txt');
    });

    test('a namespaced (MCP) tool is offered flattened and its call comes back with name and namespace', async () => {
      gw.upstream.queue.push(answer({ calls: [{ id: 'call_issue_1', name: 'github__create_issue', input: { title: 'Bug' } }] }));
      const tools = [{
        type: 'namespace',
        name: 'github',
        description: 'The GitHub MCP server.',
        tools: [{ type: 'function', name: 'create_issue', description: 'Opens an issue.', parameters: { type: 'object', properties: { title: { type: 'string' } } } }],
      }] as OpenAI.Responses.Tool[];
      const response = await client.responses.create({ model: upstream.model, input: 'File a bug.', tools });
      const call = response.output.find((item) => item.type === 'function_call');
      assert.ok(call?.type === 'function_call');
      assert.equal(call.name, 'create_issue');
      assert.equal(call.namespace, 'github');
      assert.deepEqual(toolNamesOf(upstreamBody()), ['github__create_issue']);
    });

    test('hosted tools the upstream cannot run are dropped with a warning in the log line, never a 400', async () => {
      gw.upstream.queue.push(answer({ text: 'No search needed.' }));
      const response = await client.responses.create({
        model: upstream.model,
        input: 'Hi',
        tools: [{ type: 'web_search' }, { type: 'function', name: 'noop', parameters: { type: 'object', properties: {} }, strict: false }],
      });
      assert.equal(response.output_text, 'No search needed.');
      assert.deepEqual(toolNamesOf(upstreamBody()), ['noop']);
      const line = [...gw.logs].reverse().find((entry) => (entry as Record<string, unknown>)["path"] === "/v1/responses") as Record<string, unknown> | undefined;
      assert.match(JSON.stringify(line?.['warnings']), /web_search/);
    });
  });
}

describe('Responses failures and refusals', () => {
  test('an upstream stream cut off mid-answer ends in response.failed with error {code, message}, never a clean end', async () => {
    const bytes = chatStream({ text: 'This answer never finishes because the connection drops.' });
    gw.upstream.queue.push(respond.sse(bytes, { chunkSize: 40, dropAfterBytes: 400 }));
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
      body: JSON.stringify({ model: 'gpt-test', input: 'Go.', stream: true }),
    });
    const assembled = assembleResponsesStream(await res.text());
    assert.equal(assembled.final.status, 'failed');
    assert.equal(assembled.final.error?.code, 'server_error');
    assert.ok(!assembled.events.some((event) => event.data['type'] === 'response.completed'));
  });

  test('background, conversation and file inputs are refused with a 400 naming the field', async () => {
    await assert.rejects(client.responses.create({ model: 'gpt-test', input: 'x', background: true }), (err: unknown) => err instanceof OpenAI.BadRequestError && /background/.test(err.message));
    await assert.rejects(
      client.responses.create({ model: 'gpt-test', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1', detail: 'auto' }] }] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /input\.0\.content\.0/.test(err.message),
    );
    assert.equal(gw.upstream.requests.length, 0);
  });

  test('a key\'s requests/min limit holds on /v1/responses as on the other formats, with the same 429 and headers', async () => {
    const limited = (await gw.gateway.keys.create({ name: 'limited', tier: 'basic', limits: { rpm: 1 } })).key;
    const sdk = new OpenAI({ apiKey: limited, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    gw.upstream.queue.push(answer({ text: 'First is fine.' }));
    const { data, response } = await sdk.responses.create({ model: 'gpt-test', input: 'one' }).withResponse();
    assert.equal(data.output_text, 'First is fine.');
    assert.equal(response.headers.get('x-ratelimit-limit-requests'), '1');
    await assert.rejects(sdk.responses.create({ model: 'gpt-test', input: 'two' }), (err: unknown) => err instanceof OpenAI.RateLimitError && err.code === 'rate_limit_exceeded');
  });

  test('an unknown model is a 404 in the same error body as the other formats', async () => {
    await assert.rejects(client.responses.create({ model: 'no-such-model', input: 'x' }), (err: unknown) => err instanceof OpenAI.NotFoundError && err.code === 'model_not_found');
  });

  test('a WebSocket upgrade on /v1/responses is refused at once with 426, so clients fall back to HTTP', async () => {
    // fetch() refuses upgrade headers; a WebSocket client's handshake is a plain GET with them.
    const { status, body } = await new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
      const req = http.get(`${gw.url}/v1/responses`, {
        headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', authorization: `Bearer ${gw.key}` },
      });
      req.once('upgrade', () => reject(new Error('the upgrade was accepted')));
      req.once('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.once('end', () => resolve({ status: res.statusCode, body: text }));
      });
      req.once('error', reject);
    });
    assert.equal(status, 426);
    assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'websocket_not_supported');
  });

  test('a fallback answers when the model\'s provider fails, and the response names the fallback', async () => {
    const fallbackGateway = await startTestGateway({
      config: {
        models: [
          { id: 'primary', provider: 'fake-openai', upstream_id: 'primary-upstream', fallbacks: ['backup'] },
          { id: 'backup', provider: 'fake-anthropic', upstream_id: 'backup-upstream' },
        ],
      },
    });
    try {
      // The fallback is tried right after the first failure (llmux.md section 10).
      fallbackGateway.upstream.queue.push(respond.json(503, { error: { message: 'overloaded' } }));
      fallbackGateway.upstream.queue.push(answer({ text: 'Backup here.' }));
      const sdk = new OpenAI({ apiKey: fallbackGateway.key, baseURL: `${fallbackGateway.url}/v1`, maxRetries: 0 });
      const response = await sdk.responses.create({ model: 'primary', input: 'Hi' });
      assert.equal(response.model, 'backup');
      assert.equal(response.output_text, 'Backup here.');
      assert.equal(fallbackGateway.upstream.requests.at(-1)?.path, '/v1/messages');
    } finally {
      await fallbackGateway.close();
    }
  });

  test('the log line names the format, the model that answered, the provider and the tokens', async () => {
    gw.upstream.queue.push(answer({ text: 'Logged.', usage: { input: 40, output: 2 } }));
    await client.responses.create({ model: 'claude-test', input: 'Log me.' });
    await gw.allLogged();
    const line = [...gw.logs].reverse().find((entry) => (entry as Record<string, unknown>)["path"] === "/v1/responses") as Record<string, unknown>;
    assert.equal(line['status'], 200);
    assert.equal(line['model'], 'claude-test');
    assert.equal(line['provider'], 'fake-anthropic');
    assert.equal(line['tokens_in'], 40);
    assert.equal(line['tokens_out'], 2);
  });
});

describe('responses.create against a tool loop the upstream plays', () => {
  test('a streamed exec_command round trip quotes the command output in the final answer', async () => {
    const fallback = gw.upstream.fallback;
    gw.upstream.fallback = toolRoundTrip(
      { calls: [{ id: 'call_exec_1', name: 'exec_command', input: { cmd: 'echo 42' } }] },
      (result) => ({ text: `The command printed ${result.trim()}` }),
    );
    try {
      const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } }, strict: false }];
      const first = await client.responses.stream({ model: 'gpt-test', input: 'Run echo 42', tools, store: false }).finalResponse();
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call?.type === 'function_call');
      const second = await client.responses.stream({
        model: 'gpt-test',
        store: false,
        tools,
        input: [{ role: 'user', content: 'Run echo 42' }, call, { type: 'function_call_output', call_id: call.call_id, output: '42\n' }],
      }).finalResponse();
      assert.equal(second.output_text, 'The command printed 42');
    } finally {
      gw.upstream.fallback = fallback;
    }
  });
});
