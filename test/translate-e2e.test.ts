import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, anthropicHeaders, openaiHeaders } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { fixture, respond } from './helpers/fake-upstream.ts';

/** A Claude-Code-shaped request: system blocks with cache_control, tools, tool history, thinking. */
const claudeCodeRequest = (stream: boolean) => ({
  model: 'gpt-test',
  max_tokens: 32000,
  stream,
  system: [
    { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
    { type: 'text', text: 'Use tools when useful.' },
  ],
  thinking: { type: 'enabled', budget_tokens: 10000 },
  tools: [{ name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }, cache_control: { type: 'ephemeral' } }],
  metadata: { user_id: 'user_abc' },
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Read README.md', cache_control: { type: 'ephemeral' } }] },
    { role: 'assistant', content: [
      { type: 'thinking', thinking: 'I should read it.', signature: 'sig' },
      { type: 'text', text: 'Reading.' },
      { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { path: 'README.md' } },
    ] },
    { role: 'user', content: [
      { type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: '# llmux' }] },
      { type: 'text', text: 'Summarise it.' },
    ] },
  ],
});

/** An OpenAI-SDK-shaped request: system, tools, tool messages, image parts, include_usage. */
const openaiSdkRequest = (stream: boolean) => ({
  model: 'claude-test',
  stream,
  ...(stream ? { stream_options: { include_usage: true } } : {}),
  max_completion_tokens: 1024,
  temperature: 1.5,
  stop: 'END',
  user: 'user_42',
  tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  tool_choice: 'required',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Weather here?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21C' },
  ],
});

function parseMessagesStream(text: string): Array<{ event: string; data: Record<string, unknown> }> {
  return text.trim().split('\n\n').map((block) => {
    const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
    const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>;
    return { event, data };
  });
}

/** Assembles a messages stream the way the Anthropic SDK's MessageStream does. */
function assembleMessages(events: Array<{ event: string; data: Record<string, unknown> }>): Record<string, unknown> {
  let message: Record<string, unknown> = {};
  const content: Array<Record<string, unknown>> = [];
  const json: string[] = [];
  for (const { event, data } of events) {
    if (event === 'message_start') message = { ...(data['message'] as Record<string, unknown>) };
    if (event === 'content_block_start') {
      content[data['index'] as number] = { ...(data['content_block'] as Record<string, unknown>) };
      json[data['index'] as number] = '';
    }
    if (event === 'content_block_delta') {
      const block = content[data['index'] as number]!;
      const delta = data['delta'] as Record<string, string>;
      if (delta['type'] === 'text_delta') block['text'] = `${block['text'] as string}${delta['text']}`;
      if (delta['type'] === 'thinking_delta') block['thinking'] = `${block['thinking'] as string}${delta['thinking']}`;
      if (delta['type'] === 'input_json_delta') json[data['index'] as number] += delta['partial_json'] ?? '';
    }
    if (event === 'content_block_stop') {
      const block = content[data['index'] as number]!;
      if (block['type'] === 'tool_use') block['input'] = JSON.parse(json[data['index'] as number] || '{}');
    }
    if (event === 'message_delta') {
      Object.assign(message, data['delta'] as Record<string, unknown>);
      message['usage'] = { ...(message['usage'] as Record<string, unknown>), ...(data['usage'] as Record<string, unknown>) };
    }
  }
  message['content'] = content;
  return message;
}

/** Assembles a chat stream the way the OpenAI SDK's stream helpers do. */
function assembleChat(text: string): { content: string | null; reasoning: string; toolCalls: Array<{ id: string; name: string; arguments: string }>; finish: string; usage: unknown; done: boolean } {
  const blocks = text.trim().split('\n\n').map((b) => b.replace(/^data: /, ''));
  const done = blocks.at(-1) === '[DONE]';
  let content: string | null = null;
  let reasoning = '';
  const toolCalls: Array<{ id: string; name: string; arguments: string }> = [];
  let finish = '';
  let usage: unknown;
  for (const block of blocks) {
    if (block === '[DONE]') continue;
    const chunk = JSON.parse(block) as { choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>; usage?: unknown };
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (typeof choice.delta['content'] === 'string') content = (content ?? '') + choice.delta['content'];
    if (typeof choice.delta['reasoning_content'] === 'string') reasoning += choice.delta['reasoning_content'];
    for (const call of (choice.delta['tool_calls'] as Array<{ index: number; id?: string; function: { name?: string; arguments?: string } }> | undefined) ?? []) {
      toolCalls[call.index] ??= { id: '', name: '', arguments: '' };
      const t = toolCalls[call.index]!;
      if (call.id) t.id = call.id;
      if (call.function.name) t.name += call.function.name;
      if (call.function.arguments) t.arguments += call.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { content, reasoning, toolCalls, finish, usage, done };
}

describe('translation end to end over sockets', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  it('sends a Claude-Code-shaped conversation to an OpenAI-format provider as chat', async () => {
    t.upstream.queue.push(respond.fixtureJson('openai-nonstream-parallel-tool-calls.json'));
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify(claudeCodeRequest(false)) });
    assert.equal(res.status, 200);
    const sent = t.upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, 'Bearer upstream-openai-secret');
    const body = sent.body as { model: string; messages: Array<Record<string, unknown>>; tools: unknown[]; user: string; reasoning_effort: string };
    assert.equal(body.model, 'gpt-upstream');
    assert.deepEqual(body.messages[0], { role: 'system', content: 'You are Claude Code.\n\nUse tools when useful.' });
    assert.equal(body.messages[2]?.['role'], 'assistant');
    assert.deepEqual((body.messages[2]?.['tool_calls'] as unknown[])[0], { id: 'toolu_01', type: 'function', function: { name: 'Read', arguments: '{"path":"README.md"}' } });
    assert.deepEqual(body.messages[3], { role: 'tool', tool_call_id: 'toolu_01', content: '# llmux' });
    assert.equal(body.messages[4]?.['role'], 'user');
    assert.equal(body.user, 'user_abc');
    assert.equal(body.reasoning_effort, 'high');
    const answer = await res.json() as { id: string; type: string; stop_reason: string; content: Array<{ type: string; id?: string; input?: unknown }>; usage: Record<string, number> };
    assert.match(answer.id, /^msg_/);
    assert.equal(answer.type, 'message');
    assert.equal(answer.stop_reason, 'tool_use');
    assert.equal(answer.content.filter((b) => b.type === 'tool_use').length, 2);
    assert.equal(typeof answer.usage['input_tokens'], 'number');
  });

  it('streams a chat upstream to a messages client, and the assembled stream equals the JSON answer', async () => {
    t.upstream.queue.push(respond.sse(fixture('openai-stream-parallel-tool-calls.sse'), { chunkSize: 19 }));
    const streamed = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify(claudeCodeRequest(true)) });
    assert.equal(streamed.status, 200);
    const sent = t.upstream.requests.at(-1)!;
    assert.deepEqual(sent.body['stream_options'], { include_usage: true });
    const events = parseMessagesStream(await streamed.text());
    assert.equal(events[0]?.event, 'message_start');
    assert.equal(events.at(-1)?.event, 'message_stop');
    const assembled = assembleMessages(events);
    t.upstream.queue.push(respond.fixtureJson('openai-nonstream-parallel-tool-calls.json'));
    const json = await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify(claudeCodeRequest(false)) })).json() as Record<string, unknown>;
    // The two recordings are separate calls: only the tool call ids differ.
    const strip = (m: Record<string, unknown>) => ({
      content: (m['content'] as Array<Record<string, unknown>>).map(({ id: _id, ...rest }) => rest),
      stop_reason: m['stop_reason'],
      usage_out: (m['usage'] as Record<string, number>)['output_tokens'],
    });
    assert.deepEqual(strip(assembled), strip(json));
  });

  it('streams DeepSeek reasoning to a messages client as a thinking block', async () => {
    t.upstream.queue.push(respond.sse(fixture('deepseek-reasoning-content-stream.sse'), { chunkSize: 333 }));
    const text = await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify(claudeCodeRequest(true)) })).text();
    const message = assembleMessages(parseMessagesStream(text));
    const content = message['content'] as Array<Record<string, string>>;
    assert.equal(content[0]?.['type'], 'thinking');
    assert.ok((content[0]?.['thinking'] ?? '').length > 100);
    assert.equal(content[1]?.['type'], 'text');
    const usage = message['usage'] as Record<string, number>;
    assert.equal(usage['output_tokens'], 219);
  });

  it('sends an OpenAI-SDK-shaped conversation to an Anthropic-format provider as messages', async () => {
    t.upstream.queue.push(respond.fixtureJson('anthropic-nonstream-tool-use.json'));
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify(openaiSdkRequest(false)) });
    assert.equal(res.status, 200);
    const sent = t.upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'upstream-anthropic-secret');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    const body = sent.body as Record<string, unknown> & { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
    // Prompt-cache breakpoints (llmux.md section 11): on the system prompt and the last user turn.
    assert.deepEqual(body['system'], [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
    assert.equal(body['max_tokens'], 1024);
    assert.equal(body['temperature'], 1);
    assert.deepEqual(body['stop_sequences'], ['END']);
    assert.deepEqual(body['tool_choice'], { type: 'any' });
    assert.deepEqual(body['metadata'], { user_id: 'user_42' });
    assert.deepEqual(body.messages.map((m) => m.role), ['user', 'assistant', 'user']);
    assert.deepEqual(body.messages[0]?.content[1], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } });
    assert.deepEqual(body.messages[1]?.content[0], { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } });
    assert.deepEqual(body.messages[2]?.content[0], { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny, 21C', cache_control: { type: 'ephemeral' } });
    const answer = await res.json() as { id: string; object: string; choices: Array<{ finish_reason: string; message: { tool_calls: unknown[] } }>; usage: Record<string, number> };
    assert.match(answer.id, /^chatcmpl-/);
    assert.equal(answer.object, 'chat.completion');
    assert.equal(answer.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(answer.choices[0]?.message.tool_calls.length);
    assert.equal(answer.usage['total_tokens'], answer.usage['prompt_tokens']! + answer.usage['completion_tokens']!);
  });

  it('streams a messages upstream to a chat client with usage, and the assembly equals the JSON answer', async () => {
    t.upstream.queue.push(respond.sse(fixture('anthropic-stream-text-then-tool-use-haiku.sse'), { chunkSize: 23 }));
    const text = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify(openaiSdkRequest(true)) })).text();
    const streamed = assembleChat(text);
    assert.equal(streamed.done, true);
    assert.equal(streamed.finish, 'tool_calls');
    assert.ok(streamed.usage);
    assert.equal(streamed.toolCalls.length, 1);
    assert.doesNotThrow(() => JSON.parse(streamed.toolCalls[0]!.arguments));
  });

  it('reports cache usage across formats without subtracting twice', async () => {
    t.upstream.queue.push(respond.json(200, {
      id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-upstream', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 },
    }));
    const chat = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }) })).json() as { usage: Record<string, unknown> };
    assert.deepEqual(chat.usage, { prompt_tokens: 130, completion_tokens: 5, total_tokens: 135, prompt_tokens_details: { cached_tokens: 100 } });
    t.upstream.queue.push(respond.json(200, {
      id: 'c', object: 'chat.completion', created: 1, model: 'gpt-upstream', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 130, completion_tokens: 5, total_tokens: 135, prompt_tokens_details: { cached_tokens: 100 } },
    }));
    const messages = await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) })).json() as { usage: Record<string, number> };
    assert.equal(messages.usage['input_tokens'], 30);
    assert.equal(messages.usage['cache_read_input_tokens'], 100);
    assert.equal(messages.usage['output_tokens'], 5);
  });

  it('refuses n > 1 for an Anthropic-format provider', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'claude-test', n: 2, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(res.status, 400);
    assert.match((await res.json() as { error: { message: string } }).error.message, /^n: /);
  });

  it('turns an upstream error mid-stream into the client format\'s error, in both directions', async () => {
    t.upstream.queue.push(respond.sse(fixture('anthropic-stream-error-midstream-overloaded.sse')));
    const chat = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'hi' }] }) })).text();
    assert.match(chat, /data: \{"error":\{"message":"Overloaded"/);
    assert.ok(!chat.includes('[DONE]'));
    t.upstream.queue.push(respond.sse(fixture('openai-stream-error-midstream.sse')));
    const messages = await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }) })).text();
    assert.match(messages, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    assert.ok(!messages.includes('message_stop'));
  });
});
