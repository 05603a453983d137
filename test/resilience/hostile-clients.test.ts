/**
 * Issue 14's attacks by clients, each bounded and on loopback: slow bodies, bodies pushed past an
 * early refusal, floods of work that is never admitted, and more body bytes than the process holds.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { startTestGateway, anthropicHeaders, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { respond } from '../helpers/fake-upstream.ts';
import { waitUntil } from '../helpers/wait.ts';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends `head`, then writes 256 KiB pieces of body as fast as the server takes them, up to
 * `maxBytes`, until the server closes the connection. Resolves with the answer and the bytes the
 * server took (written and acknowledged by the socket).
 */
function push(url: string, head: string, maxBytes: number): Promise<{ answer: string; written: number; closed: boolean }> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const socket = net.connect(Number(u.port), u.hostname);
    const piece = Buffer.alloc(256 * 1024, 'x');
    let answer = '';
    let written = 0;
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ answer, written: written - socket.writableLength, closed });
    };
    const timer = setTimeout(() => finish(false), 8_000);
    socket.on('data', (c: Buffer) => { answer += c.toString(); });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    const pump = (): void => {
      while (!done && written < maxBytes) {
        written += piece.length;
        if (!socket.write(piece)) {
          socket.once('drain', pump);
          return;
        }
      }
      if (written >= maxBytes) finish(false);
    };
    socket.on('connect', () => {
      socket.write(head);
      pump();
    });
  });
}

describe('clients that hold or flood the server', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({ config: { limits: { body_timeout_ms: 300, shutdown_timeout_ms: 500 } } });
  });
  after(async () => { await t.close(); });

  for (const path of ['/auth/device', '/auth/device/token', '/dashboard/sign-in', '/device']) {
    it(`gives a body dripped without pauses to ${path} a total deadline, then 408 and the socket closed`, async () => {
      // Issue 25: a byte every five seconds to POST /auth/device kept its socket past 75 s: no pause was long enough.
      const u = new URL(t.url);
      const socket = net.connect(Number(u.port), u.hostname);
      await new Promise((r) => socket.once('connect', r));
      let received = '';
      socket.on('data', (c: Buffer) => { received += c.toString(); });
      socket.on('error', () => {});
      const started = Date.now();
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n`);
      // A byte every 100 ms: never a pause of body_timeout_ms (300 ms).
      const drip = setInterval(() => { if (!socket.destroyed) socket.write('a'); }, 100);
      const closed = await Promise.race([new Promise<boolean>((r) => socket.once('close', () => r(true))), wait(3_000).then(() => false)]);
      clearInterval(drip);
      socket.destroy();
      assert.ok(closed, `the server kept the dripping socket for ${Date.now() - started} ms`);
      assert.ok(Date.now() - started < 2_000);
      assert.match(received, /^HTTP\/1\.1 408 [\s\S]*"code":"request_timeout"/);
    });
  }

  it('refuses a small route\'s body over 16 KiB with 413', async () => {
    const big = await fetch(`${t.url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'x'.repeat(20_000) }) });
    assert.equal(big.status, 413);
  });

  it('answers a body dripped to /auth/device with 408 once it pauses for body_timeout_ms, and closes the socket', async () => {
    // Issue 14: such a body held its socket for the 300 s request timeout; 20,000 of them exhausted the file limit.
    const u = new URL(t.url);
    const socket = net.connect(Number(u.port), u.hostname);
    await new Promise((r) => socket.once('connect', r));
    let received = '';
    socket.on('data', (c: Buffer) => { received += c.toString(); });
    socket.write('POST /auth/device HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"cli');
    // Real time is the point: the gateway's own body timer. Closed at all within 10 s, it was the
    // body's 300 ms bound that closed it, not the 300 s request timeout.
    const closed = await Promise.race([new Promise<boolean>((r) => socket.once('close', () => r(true))), wait(10_000).then(() => false)]);
    socket.destroy();
    assert.ok(closed, 'the server kept the dripping socket');
    assert.match(received, /^HTTP\/1\.1 408 [\s\S]*"code":"request_timeout"/);
  });

  for (const [what, head] of [
    ['a 401 (no key)', 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n'],
    ['a 404 (no such path)', 'POST /v1/nothing-here HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n'],
    ['a 200 of a route that reads no body', 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n'],
  ] as const) {
    it(`after ${what} reads at most a bounded part of the rest of the body, then closes the connection`, async () => {
      // Issue 14: after a 401 the server read and discarded whatever came: 16.5 GB in 20 s on one connection.
      const { answer, written, closed } = await push(t.url, head, 64 * 1024 * 1024);
      assert.ok(closed, `the server read all ${written} bytes`);
      assert.match(answer, /^HTTP\/1\.1 (401|404|200) /);
      // Loopback socket buffers take a few MB whatever the server does; the server itself stops at 64 KiB.
      assert.ok(written < 24 * 1024 * 1024, `the server took ${(written / 1e6).toFixed(1)} MB`);
    });
  }

  it('keeps the connection of a refused request whose small body had arrived whole', async () => {
    const agentless = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"x"}' });
    assert.equal(agentless.status, 401);
    assert.notEqual(agentless.headers.get('connection'), 'close');
  });
});

describe('work that is never admitted', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  it('gives count_tokens a budget of its own per key, and refuses past it before reading the body', async () => {
    // Issue 14: 191 count_tokens bodies of 29 MB in 20 s on a 1-rpm key, every one parsed.
    const key = (await t.gateway.keys.create({ name: 'one-rpm', limits: { rpm: 1 } })).key;
    const count = () => fetch(`${t.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders(key), body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal((await count()).status, 200);
    const { answer } = await push(t.url, `POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\nanthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: 30000000\r\n\r\n`, 30_000_000);
    assert.match(answer, /^HTTP\/1\.1 429 [\s\S]*retry-after: \d+[\s\S]*refused or only counted tokens/i);
    // A model request is not held up by it... unless its body would be read for nothing: it is, too.
    const model = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'llmux-echo', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(model.status, 429);
  });

  for (const path of ['/v1/messages/count_tokens', '/messages/count_tokens', '/v1/responses/input_tokens', '/responses/input_tokens']) {
    it(`admits ${path} bodies as count_tokens: the rate check before the body, then charged as unadmitted work`, async () => {
      // Issue 25: forty parallel 30 MB bodies to input_tokens from a 1-rpm key were all read and answered 200.
      const key = (await t.gateway.keys.create({ name: `one-rpm ${path}`, limits: { rpm: 1 } })).key;
      const body = path.includes('responses') ? { model: 'llmux-echo', input: 'hi' } : { model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] };
      assert.equal((await fetch(`${t.url}${path}`, { method: 'POST', headers: anthropicHeaders(key), body: JSON.stringify(body) })).status, 200);
      const { answer, written } = await push(t.url, `POST ${path} HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\nanthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: 30000000\r\n\r\n`, 30_000_000);
      assert.match(answer, /^HTTP\/1\.1 429 [\s\S]*retry-after: \d+[\s\S]*refused or only counted tokens/i);
      assert.ok(written < 24 * 1024 * 1024, `the server took ${(written / 1e6).toFixed(1)} MB`);
    });
  }

  it('holds input_tokens bodies against the key\'s share of the body budget', async () => {
    const small = await startTestGateway({ config: { limits: { max_body_bytes: 4096, shutdown_timeout_ms: 500 } } });
    try {
      const u = new URL(small.url);
      // A body declared at 3,000 bytes and sent slowly holds its 3,000 bytes while it arrives.
      const socket = net.connect(Number(u.port), u.hostname);
      await new Promise((r) => socket.once('connect', r));
      socket.write(`POST /v1/responses/input_tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${small.key}\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n\r\n{"model"`);
      await wait(100);
      const second = await fetch(`${small.url}/v1/responses/input_tokens`, { method: 'POST', headers: openaiHeaders(small.key), body: JSON.stringify({ model: 'llmux-echo', input: 'x'.repeat(2_000) }) });
      socket.destroy();
      assert.equal(second.status, 429);
      assert.match((await second.json() as { error: { message: string } }).error.message, /at most 4096 are held per key/);
    } finally {
      await small.close();
    }
  });

  it('charges model requests refused after their body was read, and then refuses before reading another', async () => {
    const key = (await t.gateway.keys.create({ name: 'three-rpm', limits: { rpm: 3 } })).key;
    const bad = () => fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }) });
    for (let i = 0; i < 3; i++) assert.equal((await bad()).status, 404);
    const refused = await bad();
    assert.equal(refused.status, 429);
    assert.match((await refused.json() as { error: { message: string } }).error.message, /3 requests per minute for this key that were refused/);
    const other = (await t.gateway.keys.create({ name: 'other' })).key;
    assert.equal((await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(other), body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'x' }] }) })).status, 200);
  });
});

describe('request bodies held at once', () => {
  it('holds one key to max_body_bytes of bodies in progress, and all keys to four times that', async () => {
    const t = await startTestGateway({ config: { limits: { max_body_bytes: 4096, shutdown_timeout_ms: 500 } } });
    try {
      t.upstream.fallback = respond.hang();
      const body = (size: number) => JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'x'.repeat(size) }] });
      const aborts: AbortController[] = [];
      const start = (key: string, size: number) => {
        const abort = new AbortController();
        aborts.push(abort);
        return fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: body(size), signal: abort.signal }).catch(() => undefined);
      };
      void start(t.key, 3_000);
      await waitUntil(() => t.upstream.requests.length === 1, 'the first body read and sent on');
      const second = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: body(2_000) });
      assert.equal(second.status, 429);
      assert.match((await second.json() as { error: { message: string } }).error.message, /at most 4096 are held per key/);
      const keys = await Promise.all(Array.from({ length: 4 }, async (_, i) => (await t.gateway.keys.create({ name: `k${i}` })).key));
      for (const key of keys.slice(0, 3)) void start(key, 3_500);
      await waitUntil(() => t.upstream.requests.length === 4, 'three more bodies read and sent on');
      const full = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(keys[3]!), body: body(3_500) });
      assert.equal(full.status, 503);
      assert.equal((await full.json() as { error: { code: string } }).error.code, 'server_busy');
      for (const abort of aborts) abort.abort();
      await t.allLogged();
      const freed = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(keys[3]!), body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'x' }] }) });
      assert.equal(freed.status, 200, 'bodies are given back when their requests end');
    } finally {
      await t.close();
    }
  });
});

describe('request bodies held while an answer streams', () => {
  it('are given back once the provider has answered: a long stream does not hold its request', async () => {
    const t = await startTestGateway({ config: { limits: { max_body_bytes: 4096, shutdown_timeout_ms: 500 } } });
    try {
      // The answer's head comes at once; its events keep coming for a while.
      t.upstream.queue.push(respond.sse('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n'.repeat(40), { chunkSize: 200, delayMs: 50 }));
      const body = (size: number) => JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'x'.repeat(size) }] });
      const streaming = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: body(3_000) });
      const reader = streaming.body!.getReader();
      await reader.read();
      // 3,000 + 3,000 bytes would be over the key's 4,096 if the first were still held.
      const second = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: body(3_000) });
      assert.equal(second.status, 200, await second.text());
      const first = await reader.read();
      assert.equal(first.done, false, 'the first stream was still open');
      await reader.cancel();
    } finally {
      await t.close();
    }
  });
});

describe('a stale key-store lock', () => {
  it('does not freeze the server: a key is created at once while other requests keep their pace', async () => {
    // Issue 14: a stale keys.json.lock froze the server for about 10 s (a synchronous wait).
    const t = await startTestGateway();
    try {
      const dead = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, ['-e', '']);
        child.on('exit', () => resolve(child.pid ?? 0));
      });
      const started = await (await fetch(`${t.url}/auth/device`, { method: 'POST' })).json() as { device_code: string; user_code: string };
      const approve = await fetch(`${t.url}/auth/device/approve`, { method: 'POST', headers: { authorization: `Bearer ${t.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_code: started.user_code }) });
      assert.equal(approve.status, 200);
      writeFileSync(join(t.home, 'keys.json.lock'), `${dead}\n${hostname()}\n`);
      let slowest = 0;
      let probing = true;
      const probe = (async () => {
        while (probing) {
          const before = Date.now();
          await (await fetch(`${t.url}/healthz`)).arrayBuffer();
          slowest = Math.max(slowest, Date.now() - before);
          await wait(5);
        }
      })();
      await wait(30);
      const token = await fetch(`${t.url}/auth/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code: started.device_code }) });
      await wait(30);
      probing = false;
      await probe;
      // The server's store never waits for a lock (it is refused with 503 instead): a key made
      // while the dead owner's lock was there was made by breaking it at once.
      assert.equal(token.status, 200);
      assert.equal(existsSync(join(t.home, 'keys.json.lock')), false, 'the stale lock was broken');
      // Kept on real time: a frozen event loop (the bug: a synchronous 10 s wait) shows only as
      // time, in requests that were sent while it lasted.
      assert.ok(slowest < 250, `a /healthz took ${slowest} ms`);
    } finally {
      await t.close();
    }
  });
});
