/**
 * Issue 14's attacks by a misbehaving upstream, on loopback: one that echoes the credential llmux
 * sends it, one that compresses what it was not asked to, one that reports absurd usage.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, anthropicHeaders, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { respond } from '../helpers/fake-upstream.ts';
import type { Responder } from '../helpers/fake-upstream.ts';

const SECRETS = ['upstream-openai-secret', 'upstream-anthropic-secret', 'header-credential-789'];
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An upstream that quotes back the credential it received, as some do in their error messages. */
function echoCredential(status: number): Responder {
  return (req, res) => {
    const sent = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${sent} (also ${String(req.headers['api-key'])})`, type: 'invalid_request_error', code: `bad_key_${sent}` } }));
  };
}

function sseEchoingCredential(format: 'chat' | 'messages'): Responder {
  return (req, res) => {
    const sent = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '').replace(/^Bearer /, '');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (format === 'chat') {
      res.write('data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n');
      res.end(`data: {"error":{"message":"session for ${sent} revoked","type":"server_error","code":null}}\n\n`);
    } else {
      res.write('event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n');
      res.end(`event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"key ${sent} is overloaded"}}\n\n`);
    }
  };
}

function assertClean(text: string, where: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} carries ${secret}: ${text.slice(0, 300)}`);
}

describe('an upstream that echoes its credential', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({
      config: { retry: { attempts: 1, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } },
      configFor: (url) => ({
        providers: {
          'fake-openai': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-openai-secret', headers: { 'api-key': 'header-credential-789' } },
          'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
        },
      }),
    });
  });
  after(async () => { await t.close(); });

  const chat = (extra: Record<string, unknown> = {}) => ({ method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }) });
  const messages = (extra: Record<string, unknown> = {}) => ({ method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }) });

  for (const status of [400, 401, 429, 500]) {
    it(`keeps it out of the error answer to an upstream ${status}, message and code, and out of the log`, async () => {
      t.upstream.queue.push(echoCredential(status));
      const res = await fetch(`${t.url}/v1/chat/completions`, chat());
      assert.ok(res.status >= 400);
      const text = await res.text();
      assertClean(text, 'the answer');
      assert.match(text, /\[redacted\]/);
      await wait(20);
      assertClean(JSON.stringify(t.logs), 'the log');
    });
  }

  for (const [client, upstream, url, init] of [
    ['chat', 'chat', '/v1/chat/completions', () => chat({ stream: true })],
    ['messages', 'messages', '/v1/messages', () => messages({ stream: true })],
    ['messages', 'chat', '/v1/messages', () => messages({ model: 'gpt-test', stream: true })],
    ['chat', 'messages', '/v1/chat/completions', () => chat({ model: 'claude-test', stream: true })],
  ] as const) {
    it(`keeps it out of an in-stream error event, ${upstream} upstream to a ${client} client, and out of the log`, async () => {
      t.upstream.queue.push(sseEchoingCredential(upstream));
      const res = await fetch(`${t.url}${url}`, init());
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, /error/);
      assertClean(text, 'the stream');
      assert.match(text, /\[redacted\]/);
      await wait(20);
      assertClean(JSON.stringify(t.logs), 'the log');
    });
  }
});
