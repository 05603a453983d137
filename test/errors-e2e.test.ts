/**
 * Error answers and headers as the official SDKs read them (llmux.md section 3, issue 13 point 10),
 * over sockets: the messages operation's top-level `"type": "error"`, `request-id`, `X-Debug-Auth`
 * on every 401/403, rate-limit headers on authenticated refusals, one in-stream error code whether
 * a stream is translated or passed through, `count_tokens` at the root, and an empty answer's
 * content.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startTestGateway, anthropicHeaders, openaiHeaders } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { fixture, respond } from './helpers/fake-upstream.ts';

const messagesBody = (extra: Record<string, unknown> = {}): string => JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra });
const chatBody = (extra: Record<string, unknown> = {}): string => JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('error answers and headers', () => {
  let t: TestGateway;
  let limited: string;
  before(async () => {
    t = await startTestGateway();
    limited = (await t.gateway.keys.create({ name: 'only-gpt', models: ['gpt-test'] })).key;
  });
  after(async () => { await t.close(); });

  it('gives the messages operation\'s errors a top-level "type": "error", at /v1 and at the root, count_tokens included', async () => {
    const cases: Array<[string, Record<string, string>, string, number]> = [
      ['/v1/messages', anthropicHeaders(t.key), messagesBody({ max_tokens: 0 }), 400],
      ['/messages', anthropicHeaders('sk-llmux-nope'), messagesBody(), 401],
      ['/v1/messages', anthropicHeaders(t.key), messagesBody({ model: 'no-such-model' }), 404],
      ['/v1/messages', anthropicHeaders(limited), messagesBody(), 403],
      ['/v1/messages/count_tokens', anthropicHeaders(t.key), JSON.stringify({ model: 'claude-test' }), 400],
      ['/messages/count_tokens', anthropicHeaders(t.key), JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }), 404],
    ];
    for (const [path, headers, body, status] of cases) {
      const res = await fetch(`${t.url}${path}`, { method: 'POST', headers, body });
      assert.equal(res.status, status, path);
      const json = (await res.json()) as Record<string, unknown>;
      assert.equal(json['type'], 'error', `${path} ${status}`);
      assert.equal(typeof (json['error'] as Record<string, unknown>)['code'], 'string');
    }
    const chat = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ temperature: 9 }) });
    const refused = (await chat.json()) as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(refused), ['error']);
    // OpenAI's error object names the field at fault.
    assert.deepEqual(Object.keys(refused.error), ['message', 'type', 'param', 'code']);
    assert.equal(refused.error['param'], 'temperature');
  });

  it("lets the Anthropic SDK tell a bad key by Anthropic's error type", async () => {
    const client = new Anthropic({ apiKey: 'sk-llmux-nobody', baseURL: t.url, maxRetries: 0 });
    await assert.rejects(client.messages.create({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof Anthropic.AuthenticationError);
      assert.equal(err.type, 'authentication_error');
      return true;
    });
  });

  it('lets the Anthropic SDK read the error type and request id', async () => {
    const client = new Anthropic({ apiKey: limited, baseURL: t.url, maxRetries: 0 });
    await assert.rejects(client.messages.create({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof Anthropic.PermissionDeniedError);
      assert.equal(err.type, 'permission_error');
      assert.match(String(err.requestID), /^req_/);
      return true;
    });
  });

  it('sends request-id beside x-request-id on every answer', async () => {
    const answers = [
      await fetch(`${t.url}/healthz`),
      await fetch(`${t.url}/v1/models`, { headers: openaiHeaders(t.key) }),
      await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders('sk-llmux-nope'), body: messagesBody() }),
      await fetch(`${t.url}/nowhere`),
    ];
    for (const res of answers) {
      assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
      assert.equal(res.headers.get('request-id'), res.headers.get('x-request-id'));
      await res.arrayBuffer();
    }
  });

  it('explains a 403 model_not_allowed under X-Debug-Auth like every other 401 and 403', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(limited, { 'x-debug-auth': 'true' }), body: chatBody({ model: 'claude-test' }) });
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: Record<string, unknown> };
    assert.equal(body.error['code'], 'model_not_allowed');
    const debug = body.error['debug'] as Record<string, unknown>;
    assert.match(String(debug['key_id']), /^key_[0-9a-f]{16}$/);
    assert.equal(debug['model_allowed'], false);
    assert.ok(!JSON.stringify(body).includes(limited));
  });

  it('puts the key\'s rate-limit headers on authenticated refusals: 400, 403, 404, and /metrics', async () => {
    const refusals = [
      await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ temperature: 9 }) }),
      await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: '{not json' }),
      await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(limited), body: chatBody({ model: 'claude-test' }) }),
      await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ model: 'no-such-model' }) }),
      await fetch(`${t.url}/metrics`, { headers: openaiHeaders(t.key) }),
    ];
    assert.deepEqual(refusals.map((res) => res.status), [400, 400, 403, 404, 403]);
    for (const res of refusals) {
      assert.equal(res.headers.get('x-ratelimit-limit-requests'), '60', String(res.status));
      assert.ok(res.headers.get('x-ratelimit-remaining-tokens') !== null);
      await res.arrayBuffer();
    }
    const unauthenticated = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders('sk-llmux-nope'), body: chatBody() });
    assert.equal(unauthenticated.headers.get('x-ratelimit-limit-requests'), null);
    await unauthenticated.arrayBuffer();
  });

  it('gives an empty Anthropic answer to a chat client as content "", whole and streamed (finalChatCompletion)', async () => {
    const empty = { id: 'msg_e', type: 'message', role: 'assistant', model: 'claude-upstream', content: [], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 0 } };
    const openai = new OpenAI({ apiKey: t.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    t.upstream.queue.push(respond.json(200, empty));
    const whole = await openai.chat.completions.create({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(whole.choices[0]?.message.content, '');
    t.upstream.queue.push(respond.sse(
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_e","type":"message","role":"assistant","model":"claude-upstream","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":0}}}\n\n' +
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}\n\n' +
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ));
    const streamed = await openai.chat.completions.stream({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }).finalChatCompletion();
    assert.equal(streamed.choices[0]?.message.content, '');
  });

  it('gives one in-stream failure the same error code, translated and passed through', async () => {
    const codes: unknown[] = [];
    for (const [model, recording] of [['gpt-test', 'openai-stream-text-include-usage.sse'], ['claude-test', 'anthropic-stream-text-then-tool-use-haiku.sse']] as const) {
      t.upstream.queue.push(respond.sse(fixture(recording), { chunkSize: 100, dropAfterBytes: 700 }));
      const text = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ model, stream: true }) })).text();
      const last = text.trimEnd().split('\n\n').at(-1) ?? '';
      const error = (JSON.parse(last.replace(/^data: /, '')) as { error: Record<string, unknown> }).error;
      codes.push([error['type'], error['code']]);
    }
    assert.deepEqual(codes, [['api_error', 'upstream_error'], ['api_error', 'upstream_error']]);
  });

  it('counts tokens at the root address too', async () => {
    const res = await fetch(`${t.url}/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'claude-test', messages: [{ role: 'user', content: 'hello there' }] }) });
    assert.equal(res.status, 200);
    assert.ok(((await res.json()) as { input_tokens: number }).input_tokens > 0);
  });
});
