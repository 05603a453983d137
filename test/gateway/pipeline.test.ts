import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { startTestGateway, anthropicHeaders, logLineOf, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { FIXTURES, fixture, respond } from '../helpers/fake-upstream.ts';
import { assembleResponsesStream } from '../helpers/responses-stream.ts';
import { jsonWithLlmuxModel, withLlmuxModel } from '../helpers/model-names.ts';

const messagesBody = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }], ...extra });
const chatBody = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'Hello' }], ...extra });

describe('same-format pass-through', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  it('sends the provider\'s credential and upstream id, never the client\'s key', async () => {
    await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() });
    const seen = t.upstream.requests.at(-1)!;
    assert.equal(seen.path, '/v1/chat/completions');
    assert.equal(seen.headers.authorization, 'Bearer upstream-openai-secret');
    assert.equal(seen.body['model'], 'gpt-upstream');
    assert.ok(!seen.raw.includes(t.key) && !JSON.stringify(seen.headers).includes(t.key));

    await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key, { 'anthropic-beta': 'prompt-caching-2024-07-31' }), body: messagesBody() });
    const m = t.upstream.requests.at(-1)!;
    assert.equal(m.path, '/v1/messages');
    assert.equal(m.headers['x-api-key'], 'upstream-anthropic-secret');
    assert.equal(m.headers.authorization, undefined);
    assert.equal(m.headers['anthropic-version'], '2023-06-01');
    assert.equal(m.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
    assert.equal(m.body['model'], 'claude-upstream');
    assert.ok(!JSON.stringify(m.headers).includes(t.key));
  });

  it('forwards alt-version and alt-beta under their Anthropic names', async () => {
    await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.key, 'alt-version': '2024-01-01', 'alt-beta': 'a,b' }, body: messagesBody() });
    const m = t.upstream.requests.at(-1)!;
    assert.equal(m.headers['anthropic-version'], '2024-01-01');
    assert.equal(m.headers['anthropic-beta'], 'a,b');
  });

  for (const name of readdirSync(FIXTURES).filter((f) => f.endsWith('.json') && !f.includes('error'))) {
    const format = name.startsWith('anthropic') ? 'anthropic' : 'openai';
    it(`keeps the body of ${name} byte for byte but for the model, which names the llmux id`, async () => {
      t.upstream.queue.push(respond.fixtureJson(name));
      const model = format === 'anthropic' ? 'claude-test' : 'gpt-test';
      // The recording is the provider's, right or wrong: it is compared to itself, not to the schemas.
      const res = await t.replaying(() => (format === 'anthropic'
        ? fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody() })
        : fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() })));
      assert.equal(res.status, 200);
      const out = Buffer.from(await res.arrayBuffer());
      assert.deepEqual(out, jsonWithLlmuxModel(fixture(name), model));
      assert.deepEqual(JSON.parse(out.toString()), { ...(JSON.parse(fixture(name).toString()) as Record<string, unknown>), model });
    });
  }

  const streams = readdirSync(FIXTURES).filter((f) => f.endsWith('.sse'));
  for (const name of streams) {
    const format = name.startsWith('anthropic') ? 'anthropic' : 'openai';
    const failed = name.includes('error');
    it(`streams ${name} through ${failed ? 'up to its error' : 'byte for byte'}, naming the llmux model`, async () => {
      // The Azure recording is only the prompt-filter chunk that opens an otherwise normal stream.
      const bytes = name.startsWith('azure')
        ? Buffer.concat([fixture(name), fixture('openai-stream-text-include-usage.sse')])
        : fixture(name);
      t.upstream.queue.push(respond.sse(bytes, { chunkSize: 37 }));
      const res = await t.replaying(() => (format === 'anthropic'
        ? fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody({ stream: true }) })
        : fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true, stream_options: { include_usage: true } }) })));
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const out = Buffer.from(await res.arrayBuffer());
      const wanted = withLlmuxModel(format === 'anthropic' ? 'messages' : 'chat', bytes, format === 'anthropic' ? 'claude-test' : 'gpt-test').toString();
      if (!failed) {
        assert.deepEqual(out.toString(), wanted);
      } else if (format === 'openai') {
        // The error chunk is kept; the [DONE] after it is not, so clients see a failed stream.
        const text = out.toString();
        assert.match(text, /data: \{"error"/);
        assert.ok(!text.includes('[DONE]'));
        assert.ok(wanted.startsWith(text.trimEnd().split('\n\n').slice(0, -1).join('\n\n')));
      } else {
        assert.deepEqual(out.toString(), wanted);
        assert.match(out.toString(), /event: error/);
      }
    });
  }

  it('sends a same-format upstream the client\'s own bytes with only the model id changed', async () => {
    // Spacing, key order, escapes and fields llmux does not know all reach the provider as sent.
    const sent = '{ "max_tokens" : 100,\n "model": "claude-test", "messages": [{"role":"user","content":"caf\u00e9 \\u2192 \\n"}], "x_new_field": {"b":1,"a":2} }';
    assert.equal((await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: sent })).status, 200);
    assert.equal(t.upstream.requests.at(-1)!.raw, sent.replace('"claude-test"', '"claude-upstream"'));

    const chat = '{"messages":[{"role":"user","content":"Hello"}],"stream":true,"model":"gpt-test","user":"' + 'u'.repeat(80) + '"}';
    await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chat })).text();
    const seen = t.upstream.requests.at(-1)!;
    assert.match(String(seen.body['user']), /^[0-9a-f]{64}$/);
    assert.equal(seen.raw, chat.replace('"gpt-test"', '"gpt-upstream"').replace(`"${'u'.repeat(80)}"`, JSON.stringify(seen.body['user'])).replace(/\}$/, ',"stream_options":{"include_usage":true}}'));
  });

  it('re-serialises a body whose bytes would say something else than what was checked', async () => {
    // Two top-level model keys: JSON.parse reads the last, a provider might read the first.
    await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: '{"model":"other-model","max_tokens":100,"messages":[{"role":"user","content":"Hi"}],"model":"claude-test"}' });
    assert.equal(t.upstream.requests.at(-1)!.raw, '{"model":"claude-upstream","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}');
    // A null that chat validation reads as absent is left out, as before.
    await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ temperature: null }) });
    assert.equal(t.upstream.requests.at(-1)!.raw, '{"model":"gpt-upstream","messages":[{"role":"user","content":"Hello"}]}');
  });

  it('asks a chat upstream for usage and hides the usage chunk from a client that did not ask', async () => {
    t.upstream.queue.push(respond.sse(fixture('openai-stream-text-include-usage.sse')));
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true }) });
    const text = await res.text();
    const seen = t.upstream.requests.at(-1)!;
    assert.deepEqual(seen.body['stream_options'], { include_usage: true });
    assert.ok(!text.includes('"choices":[]'));
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    const line = await logLineOf(t, res);
    assert.ok((line['tokens_in'] as number) > 0, JSON.stringify(line));
    assert.ok((line['tokens_out'] as number) > 0);
  });

  it('reads usage from a streamed answer for the log and the limits', async () => {
    t.upstream.queue.push(respond.sse(fixture('anthropic-stream-tool-use.sse')));
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody({ stream: true }) });
    await res.text();
    const line = await logLineOf(t, res);
    assert.equal(line['provider'], 'fake-anthropic');
    assert.equal(line['stream'], true);
    assert.equal(line['translated'], false);
    assert.ok((line['tokens_out'] as number) > 0);
  });

  it('ends a stream cut off by the upstream with the client format\'s in-stream error', async () => {
    t.upstream.queue.push(respond.sse(fixture('openai-stream-text-include-usage.sse'), { chunkSize: 100, dropAfterBytes: 800 }));
    const chat = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true }) })).text();
    assert.match(chat, /data: \{"error":\{"message":"[^"]+","type":"api_error"/);
    assert.ok(!chat.includes('[DONE]'));
    t.upstream.queue.push(respond.sse(fixture('anthropic-stream-tool-use.sse'), { chunkSize: 100, dropAfterBytes: 800 }));
    const messages = await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody({ stream: true }) })).text();
    assert.match(messages, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    assert.ok(!messages.includes('message_stop'));
  });
});

describe('upstream errors', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway({ config: { retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 2 } } }); });
  after(async () => { await t.close(); });

  const chat = () => fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() });

  it('returns an upstream 4xx with its status and message in our error body', async () => {
    t.upstream.queue.push(respond.fixtureJson('openai-error-400-max-tokens-unsupported.json', 400));
    const res = await chat();
    assert.equal(res.status, 400);
    const body = await res.json() as { error: Record<string, string> };
    assert.match(body.error['message'] ?? '', /max_completion_tokens/);
    assert.equal(body.error['type'], 'invalid_request_error');
    assert.equal(body.error['code'], 'unsupported_parameter');
  });

  it('makes an upstream 429 our 429 rate_limit_exceeded, after retrying', async () => {
    t.upstream.queue.push(respond.fixtureJson('anthropic-error-429-rate-limit.json', 429), respond.fixtureJson('anthropic-error-429-rate-limit.json', 429));
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody() });
    assert.equal(res.status, 429);
    const body = await res.json() as { error: Record<string, string> };
    assert.equal(body.error['type'], 'rate_limit_error');
    assert.equal(body.error['code'], 'rate_limit_exceeded');
  });

  it('makes upstream 5xx answers a 502 upstream_error once retries are spent', async () => {
    t.upstream.queue.push(respond.json(500, { error: { message: 'boom' } }), respond.json(503, 'busy'));
    const res = await chat();
    assert.equal(res.status, 502);
    const body = await res.json() as { error: Record<string, string> };
    assert.equal(body.error['code'], 'upstream_error');
    assert.equal(body.error['type'], 'api_error');
  });

  it('makes an unreachable provider a 502 upstream_error', async () => {
    const down = await startTestGateway({ config: { providers: { 'fake-openai': { format: 'openai', base_url: 'http://127.0.0.1:1/v1' } }, models: [{ id: 'gpt-test', provider: 'fake-openai' }], retry: { attempts: 1 } } });
    try {
      const res = await fetch(`${down.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(down.key), body: chatBody() });
      assert.equal(res.status, 502);
      assert.equal((await res.json() as { error: Record<string, string> }).error['code'], 'upstream_error');
    } finally {
      await down.close();
    }
  });

  it('makes a provider that never answers a 504 upstream_timeout', async () => {
    const slow = await startTestGateway({ config: { limits: { upstream_timeout_ms: 200, shutdown_timeout_ms: 500 }, retry: { attempts: 1 } } });
    try {
      slow.upstream.queue.push(respond.hang());
      const res = await fetch(`${slow.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(slow.key), body: chatBody() });
      assert.equal(res.status, 504);
      assert.equal((await res.json() as { error: Record<string, string> }).error['code'], 'upstream_timeout');
    } finally {
      await slow.close();
    }
  });

  it('makes an upstream 401 or 403 a 502 upstream_auth_failed naming the credential setting, never the credential', async () => {
    for (const status of [401, 403]) {
      t.upstream.queue.push(respond.json(status, { error: { message: 'Incorrect API key provided: upstream-o*****cret', type: 'invalid_request_error', code: 'invalid_api_key' } }));
      const res = await chat();
      assert.equal(res.status, 502);
      const text = await res.text();
      const body = JSON.parse(text) as { error: Record<string, string> };
      assert.equal(body.error['type'], 'api_error');
      assert.equal(body.error['code'], 'upstream_auth_failed');
      assert.match(body.error['message'] ?? '', /Provider "fake-openai" refused the credential llmux sends it .*providers\.fake-openai\.api_key in the llmux config/);
      assert.ok(!text.includes('upstream-openai-secret') && !text.includes('cret'), text);
    }
  });

  it('names the environment variable that holds a provider\'s credential', async () => {
    const env = await startTestGateway({
      env: { FAKE_KEY: 'from-env-secret' },
      config: { providers: { 'fake-openai': { format: 'openai', base_url: `${t.upstream.url}/v1`, api_key: 'env:FAKE_KEY' } }, models: [{ id: 'gpt-test', provider: 'fake-openai' }] },
    });
    try {
      t.upstream.queue.push(respond.json(401, { error: { message: 'bad key' } }));
      const res = await fetch(`${env.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(env.key), body: chatBody() });
      const text = await res.text();
      assert.equal(res.status, 502);
      assert.match(text, /the environment variable FAKE_KEY \(providers\.fake-openai\.api_key\)/);
      assert.ok(!text.includes('from-env-secret'));
    } finally {
      await env.close();
    }
  });

  it('makes an upstream 529 (or an overloaded_error) our 529 overloaded_error, after retrying', async () => {
    const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    t.upstream.queue.push(respond.json(529, overloaded), respond.json(529, overloaded));
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody() });
    assert.equal(res.status, 529);
    const body = await res.json() as { error: Record<string, string> };
    assert.equal(body.error['type'], 'overloaded_error');
    assert.equal(body.error['code'], 'upstream_overloaded');
    t.upstream.queue.push(respond.json(503, overloaded), respond.json(503, overloaded));
    assert.equal((await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody() })).status, 529);
  });

  it('never passes on an upstream retry-after longer than the 60 s window', async () => {
    t.upstream.queue.push(respond.json(429, { error: { message: 'slow down' } }, { 'retry-after': '3600' }));
    const res = await chat();
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '60');
    await res.arrayBuffer();
  });
});

describe('the echo model', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  it('streams a chat answer word by word with usage when asked', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'llmux-echo', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'system', content: 'x' }, { role: 'user', content: [{ type: 'text', text: 'one two three' }] }] }) });
    const events = (await res.text()).trim().split('\n\n').map((e) => e.replace(/^data: /, ''));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: Array<{ delta: { content?: string; role?: string }; finish_reason: string | null }>; usage?: Record<string, number> });
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'one two three');
    assert.equal(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
    assert.equal(chunks.at(-1)?.usage?.['completion_tokens'], 3);
  });

  it('answers a Responses request in its own format, streamed word by word and whole, cut at max_output_tokens', async () => {
    const streamed = await fetch(`${t.url}/v1/responses`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'llmux-echo', stream: true, input: [{ role: 'user', content: [{ type: 'input_text', text: 'one two three' }] }] }) });
    const { final, events } = assembleResponsesStream(await streamed.text());
    assert.equal(final.status, 'completed');
    assert.equal(final.model, 'llmux-echo');
    assert.deepEqual(final.output[0]?.type === 'message' ? final.output[0].content : [], [{ type: 'output_text', text: 'one two three', annotations: [], logprobs: [] }]);
    assert.equal(events.filter((event) => event.data['type'] === 'response.output_text.delta').length, 3);
    assert.equal(final.usage?.output_tokens, 3);

    const whole = await fetch(`${t.url}/v1/responses`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'llmux-echo', input: 'one two three', max_output_tokens: 2 }) });
    const body = await whole.json() as { status: string; incomplete_details: { reason: string }; output: Array<{ content: Array<{ text: string }> }> };
    assert.equal(body.status, 'incomplete');
    assert.deepEqual(body.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(body.output[0]?.content[0]?.text, 'one two');
  });

  it('cuts its answer at max_tokens like a model', async () => {
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'llmux-echo', max_tokens: 2, messages: [{ role: 'user', content: 'one two three' }] }) });
    const body = await res.json() as { content: Array<{ text: string }>; stop_reason: string; usage: { output_tokens: number } };
    assert.equal(body.content[0]?.text, 'one two');
    assert.equal(body.stop_reason, 'max_tokens');
    assert.equal(body.usage.output_tokens, 2);
  });
});
