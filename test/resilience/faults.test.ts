import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestGateway, anthropicHeaders, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { fixture, respond } from '../helpers/fake-upstream.ts';
import type { Responder } from '../helpers/fake-upstream.ts';

const chatBody = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'Hello' }], ...extra });
const messagesBody = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }], ...extra });
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retries and fallbacks before the first byte', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({
      config: {
        models: [
          { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', fallbacks: ['claude-test'] },
          { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream' },
          { id: 'solo', provider: 'fake-openai', upstream_id: 'solo-upstream' },
        ],
        retry: { attempts: 3, base_delay_ms: 1, max_delay_ms: 5, max_retry_after_ms: 1500 },
      },
    });
  });
  after(async () => { await t.close(); });

  for (const status of [429, 500, 502, 503, 504, 529]) {
    it(`retries an upstream ${status} and answers with the next attempt`, async () => {
      const before = t.upstream.requests.length;
      t.upstream.queue.push(respond.json(status, { error: { message: 'try later' } }), respond.fixtureJson('openai-nonstream-text.json'));
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() });
      assert.equal(res.status, 200);
      assert.equal(t.upstream.requests.length - before, 2);
      await wait(20);
      const line = t.logs.at(-1) as { attempts: Array<{ status?: number }> };
      assert.deepEqual(line.attempts.map((a) => a.status), [status, 200]);
    });
  }

  it('retries a reset connection', async () => {
    t.upstream.queue.push(respond.reset(), respond.fixtureJson('openai-nonstream-text.json'));
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() });
    assert.equal(res.status, 200);
    await wait(20);
    const line = t.logs.at(-1) as { attempts: Array<{ error?: string; status?: number }> };
    assert.equal(line.attempts[0]?.error, 'upstream_error');
    assert.equal(line.attempts[1]?.status, 200);
  });

  it('does not retry an upstream 400', async () => {
    const before = t.upstream.requests.length;
    t.upstream.queue.push(respond.json(400, { error: { message: 'bad' } }));
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() });
    assert.equal(res.status, 400);
    assert.equal(t.upstream.requests.length - before, 1);
  });

  it('honours retry-after before the next attempt', async () => {
    t.upstream.queue.push(respond.json(429, { error: { message: 'slow down' } }, { 'retry-after': '1' }), respond.fixtureJson('openai-nonstream-text.json'));
    const started = Date.now();
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ model: 'solo' }) });
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms`);
  });

  it('gives up on a provider whose retry-after is longer than the bound', async () => {
    const before = t.upstream.requests.length;
    t.upstream.queue.push(respond.json(429, { error: { message: 'come back tomorrow' } }, { 'retry-after': '3600' }));
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ model: 'solo' }) });
    assert.equal(res.status, 429);
    // Passed on, but never longer than the 60 s window (llmux.md section 3).
    assert.equal(res.headers.get('retry-after'), '60');
    assert.equal(t.upstream.requests.length - before, 1);
  });

  it('falls back to the next model, in its own wire format, before the one asked for is tried again (llmux.md section 10)', async () => {
    const fail: Responder = respond.json(503, { error: { message: 'overloaded' } });
    t.upstream.queue.push(fail, respond.fixtureJson('anthropic-nonstream-text.json'));
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody() });
    assert.equal(res.status, 200);
    const body = await res.json() as { object: string; choices: Array<{ message: { content: string } }> };
    assert.equal(body.object, 'chat.completion');
    assert.ok(body.choices[0]?.message.content);
    const last = t.upstream.requests.at(-1)!;
    assert.equal(last.path, '/v1/messages');
    assert.equal(last.body['model'], 'claude-upstream');
    await wait(20);
    const line = t.logs.at(-1) as { attempts: Array<{ model: string; status?: number }>; model: string };
    assert.deepEqual(line.attempts.map((a) => `${a.model}:${a.status}`), ['gpt-test:503', 'claude-test:200']);
    assert.equal(line.model, 'claude-test');
  });

  it('never retries once the client has a byte', async () => {
    const before = t.upstream.requests.length;
    t.upstream.queue.push(respond.sse(fixture('openai-stream-text-include-usage.sse'), { chunkSize: 200, dropAfterBytes: 1000 }));
    const text = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true, model: 'solo' }) })).text();
    assert.match(text, /"error"/);
    assert.equal(t.upstream.requests.length - before, 1);
  });
});

describe('timeouts, pings and disconnects', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({ config: { limits: { ping_interval_ms: 100, stream_idle_timeout_ms: 400, upstream_timeout_ms: 2000, shutdown_timeout_ms: 500 }, retry: { attempts: 1 } } });
  });
  after(async () => { await t.close(); });

  /** Sends the first `head` bytes, stays silent for `silenceMs`, then the rest. */
  const stall = (bytes: Buffer, head: number, silenceMs: number): Responder => async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(bytes.subarray(0, head));
    await wait(silenceMs);
    if (!res.destroyed) res.end(bytes.subarray(head));
  };

  it('sends keep-alive pings while the upstream is silent, in each format', async () => {
    const anth = fixture('anthropic-stream-text.sse');
    const head = anth.indexOf('event: content_block_start');
    t.upstream.queue.push(stall(anth, head, 300));
    const messages = await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: messagesBody({ stream: true }) })).text();
    assert.match(messages, /event: message_start[\s\S]*event: ping\ndata: \{"type": "ping"\}\n\n[\s\S]*event: message_stop/);
    const oa = fixture('openai-stream-text-include-usage.sse');
    t.upstream.queue.push(stall(oa, oa.indexOf('\n\n') + 2, 300));
    const chat = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true }) })).text();
    assert.match(chat, /\n\n: ping\n\n[\s\S]*data: \[DONE\]/);
  });

  it('ends a stream whose upstream goes idle too long with an in-stream error', async () => {
    const oa = fixture('openai-stream-text-include-usage.sse');
    t.upstream.queue.push(stall(oa, oa.indexOf('\n\n') + 2, 5000));
    const chat = await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true }) })).text();
    assert.match(chat, /data: \{"error":\{"message":"The provider sent nothing for 400 ms/);
    assert.ok(!chat.includes('[DONE]'));
  });

  it('aborts the upstream request at once and frees the slot when the client goes away', async () => {
    let upstreamClosed = 0;
    t.upstream.queue.push(async (_req, res) => {
      res.on('close', () => { upstreamClosed = Date.now(); });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 200 && !res.destroyed; i++) {
        res.write(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x${i}"},"finish_reason":null}]}\n\n`);
        await wait(20);
      }
      res.end();
    });
    const controller = new AbortController();
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody({ stream: true }), signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    const abortedAt = Date.now();
    controller.abort();
    for (let i = 0; i < 50 && upstreamClosed === 0; i++) await wait(10);
    assert.ok(upstreamClosed > 0, 'upstream request still running');
    assert.ok(upstreamClosed - abortedAt < 300);
    const key = t.gateway.keys.list().find((k) => k.name === 'test')!;
    await wait(20);
    assert.equal((await t.gateway.limiter.peek(key.id, { rpm: 60, tpm: 90_000, concurrency: 10 })).concurrent, 0);
  });

  it('slows the upstream read to the pace of a slow client (backpressure)', async () => {
    let written = 0;
    let upstreamDone = false;
    const line = Buffer.from(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${'y'.repeat(4000)}"},"finish_reason":null}]}\n\n`);
    t.upstream.queue.push(async (_req, res) => {
      res.setMaxListeners(0);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 12_000 && !res.destroyed; i++) {
        written += line.length;
        if (!res.write(line)) await new Promise((r) => { res.once('drain', r); res.once('close', r); });
      }
      upstreamDone = true;
      res.end('data: [DONE]\n\n');
    });
    const url = new URL(t.url);
    const req = http.request({ hostname: url.hostname, port: url.port, path: '/v1/chat/completions', method: 'POST', headers: openaiHeaders(t.key) });
    req.end(chatBody({ stream: true }));
    const res = await new Promise<http.IncomingMessage>((r) => req.on('response', r));
    res.pause();
    await wait(1_000);
    // 12,000 events are ~48 MB; with backpressure only socket buffers' worth has left the upstream.
    assert.ok(!upstreamDone, `upstream finished, wrote ${written}`);
    assert.ok(written < 16 * 1024 * 1024, `upstream wrote ${written} bytes while the client read nothing`);
    res.destroy();
  });
});

describe('client disconnect during a non-streamed answer', () => {
  it('stops the upstream request that is still generating', async () => {
    const t = await startTestGateway({ config: { retry: { attempts: 1 } } });
    try {
      let upstreamClosed = false;
      t.upstream.queue.push((_req, res) => {
        res.on('close', () => { upstreamClosed = true; });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"chatcmpl-1",');
        // ...and never finishes.
      });
      const controller = new AbortController();
      const pending = fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: chatBody(), signal: controller.signal }).catch(() => undefined);
      for (let i = 0; i < 50 && t.upstream.requests.length === 0; i++) await wait(10);
      await wait(50);
      controller.abort();
      await pending;
      for (let i = 0; i < 50 && !upstreamClosed; i++) await wait(10);
      assert.ok(upstreamClosed);
    } finally {
      await t.close();
    }
  });
});

describe('hostile nesting', () => {
  it('answers a body nested too deep to forward with a 400, not a 500', async () => {
    const t = await startTestGateway();
    try {
      const deep = `${'{"nested":'.repeat(20_000)}{"type":"string"}${'}'.repeat(20_000)}`;
      const body = `{"model":"gpt-test","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":${deep}}}}}]}`;
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body });
      assert.equal(res.status, 400);
      assert.match((await res.json() as { error: { message: string } }).error.message, /nests too deeply/);
    } finally {
      await t.close();
    }
  });
});

describe('slow and half-open clients', () => {
  it('closes a connection whose headers never finish, with a 408 in our error body', async () => {
    const t = await startTestGateway({ config: { limits: { headers_timeout_ms: 300, request_timeout_ms: 600, shutdown_timeout_ms: 500 } } });
    try {
      const { connect } = await import('node:net');
      const url = new URL(t.url);
      const socket = connect(Number(url.port), url.hostname);
      let received = '';
      socket.on('data', (c: Buffer) => { received += c.toString(); });
      await new Promise((r) => socket.once('connect', r));
      socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-slow: ');
      const closed = await Promise.race([
        new Promise<boolean>((r) => socket.once('close', () => r(true))),
        wait(3_000).then(() => false),
      ]);
      assert.ok(closed, 'the server kept a half-sent request open');
      assert.match(received, /^HTTP\/1\.1 408 /);
      assert.match(received, /"code":"bad_request"|"code":"request_timeout"|"type":"invalid_request_error"/);
      // The server still answers others.
      assert.equal((await fetch(`${t.url}/healthz`)).status, 200);
    } finally {
      await t.close();
    }
  });

  it('closes a connection whose body stops arriving', async () => {
    const t = await startTestGateway({ config: { limits: { headers_timeout_ms: 300, request_timeout_ms: 600, shutdown_timeout_ms: 500 } } });
    try {
      const { connect } = await import('node:net');
      const url = new URL(t.url);
      const socket = connect(Number(url.port), url.hostname);
      await new Promise((r) => socket.once('connect', r));
      let received = '';
      socket.on('data', (c: Buffer) => { received += c.toString(); });
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${t.key}\r\nContent-Length: 1000\r\n\r\n{"model":`);
      const closed = await Promise.race([
        new Promise<boolean>((r) => socket.once('close', () => r(true))),
        wait(3_000).then(() => false),
      ]);
      socket.destroy();
      assert.ok(closed, 'the server kept a stalled body open');
      assert.match(received, /^HTTP\/1\.1 408 [\s\S]*"code":"request_timeout"/);
    } finally {
      await t.close();
    }
  });
});
