import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { startTestGateway, anthropicHeaders, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { createKeyStore } from '../../src/auth/key-store.ts';
import { timeoutsOnly } from '../helpers/clock.ts';
import { waitUntil } from '../helpers/wait.ts';

/** A raw request, for what fetch won't send (wrong methods with bodies, huge headers). */
function raw(url: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ hostname: u.hostname, port: u.port, path: options.path, method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('server: routes, request ids and errors', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  it('answers Claude Code\'s connection check, HEAD /api/hello, without a key', async () => {
    const head = await fetch(`${t.url}/api/hello`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    const get = await fetch(`${t.url}/api/hello`);
    assert.equal(get.status, 200);
    assert.deepEqual(await get.json(), { status: 'ok' });
  });

  it('answers /healthz without a key', async () => {
    const res = await fetch(`${t.url}/healthz`);
    assert.equal(res.status, 200);
    const body = await res.json() as Record<string, unknown>;
    assert.equal(body['status'], 'ok');
    assert.equal(typeof body['version'], 'string');
    assert.equal(typeof body['uptime_s'], 'number');
  });

  it('gives every response an x-request-id and echoes a valid incoming one', async () => {
    const a = await fetch(`${t.url}/healthz`);
    assert.match(a.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{16}[0-9a-z]{8,}$/);
    const b = await fetch(`${t.url}/healthz`, { headers: { 'x-request-id': 'client-id-123' } });
    assert.equal(b.headers.get('x-request-id'), 'client-id-123');
    const c = await fetch(`${t.url}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
    assert.notEqual(c.headers.get('x-request-id'), 'bad id with spaces');
    const d = await fetch(`${t.url}/nope`);
    assert.ok(d.headers.get('x-request-id'));
  });

  it('answers an unknown path with 404 not_found in the error body', async () => {
    const res = await fetch(`${t.url}/v2/whatever?x=1`);
    assert.equal(res.status, 404);
    const body = await res.json() as { error: Record<string, string> };
    assert.equal(body.error['type'], 'not_found_error');
    assert.equal(body.error['code'], 'not_found');
    assert.ok(body.error['message']);
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'GET' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    const models = await fetch(`${t.url}/v1/models`, { method: 'DELETE' });
    assert.equal(models.status, 405);
    assert.equal(models.headers.get('allow'), 'GET, HEAD');
    const body = await models.json() as { error: Record<string, string> };
    assert.equal(body.error['code'], 'method_not_allowed');
  });

  it("answers errors on a format's routes in its clients' shape: the messages operation's carry type error, 405 too", async () => {
    const messages = await fetch(`${t.url}/v1/messages`, { method: 'GET' });
    assert.equal(messages.status, 405);
    const refused = await messages.json() as { error: Record<string, unknown>; request_id: string };
    assert.deepEqual(Object.keys(refused), ['type', 'error', 'request_id']);
    assert.deepEqual([refused.error['type'], refused.error['code'], refused.request_id], ['invalid_request_error', 'method_not_allowed', messages.headers.get('request-id')]);
    const countTokens = await fetch(`${t.url}/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders('sk-llmux-nobody') , body: '{}' });
    assert.equal(countTokens.status, 401);
    const unauthorised = await countTokens.json() as { type: string; error: Record<string, unknown> };
    assert.deepEqual([unauthorised.type, unauthorised.error['type'], unauthorised.error['code']], ['error', 'authentication_error', 'invalid_api_key']);
    const chat = await fetch(`${t.url}/chat/completions`, { method: 'POST', headers: openaiHeaders('sk-llmux-nobody'), body: '{}' });
    assert.equal(chat.status, 401);
    assert.deepEqual(Object.keys(await chat.json() as object), ['error']);
  });

  it('never writes a key sent in the query to the log line', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions?key=sk-llmux-in-the-query&alt=sse`, { method: 'POST', headers: { ...openaiHeaders(t.key), 'x-request-id': 'query-key-test' }, body: '{}' });
    assert.equal(res.status, 400);
    await res.text();
    // The line is written when the response closes, which may come just after the client has it.
    let line: string | undefined;
    for (let turn = 0; turn < 1_000 && line === undefined; turn++) {
      line = t.logs.map((entry) => JSON.stringify(entry)).find((text) => text.includes('query-key-test'));
      if (line === undefined) await new Promise((resolve) => setImmediate(resolve));
    }
    assert.match(line ?? 'no log line', /"path":"\/v1\/chat\/completions"/);
    assert.doesNotMatch(line ?? '', /in-the-query|alt=sse/);
  });

  it('refuses a body over the limit with 413 without reading it all', async () => {
    const small = await startTestGateway({ config: { limits: { max_body_bytes: 1024, shutdown_timeout_ms: 2000 } } });
    try {
      const declared = await raw(small.url, { method: 'POST', path: '/v1/chat/completions', headers: { ...openaiHeaders(small.key), 'content-length': '5000' }, body: 'x'.repeat(5000) });
      assert.equal(declared.status, 413);
      assert.equal(JSON.parse(declared.body).error.code, 'request_too_large');
      // Chunked: no content-length, counted while reading.
      const chunked = await fetch(`${small.url}/v1/chat/completions`, {
        method: 'POST',
        headers: openaiHeaders(small.key),
        body: new ReadableStream({ start(c) { for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(500))); c.close(); } }),
        duplex: 'half',
      } as RequestInit);
      assert.equal(chunked.status, 413);
      const body = await chunked.json() as { error: Record<string, string> };
      assert.equal(body.error['type'], 'invalid_request_error');
    } finally {
      await small.close();
    }
  });

  it('refuses malformed JSON, non-object bodies, invalid UTF-8 and deep nesting with 400', async () => {
    const send = (body: string | Buffer) => raw(t.url, { method: 'POST', path: '/v1/chat/completions', headers: openaiHeaders(t.key), body });
    for (const body of ['{"model":', '[1,2]', '"text"', '', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), '['.repeat(5000) + ']'.repeat(5000), `{"a":${'['.repeat(300)}${']'.repeat(300)}}`]) {
      const res = await send(body);
      assert.equal(res.status, 400, `body ${String(body).slice(0, 20)}`);
      const parsed = JSON.parse(res.body) as { error: Record<string, string> };
      assert.equal(parsed.error['code'], 'invalid_parameters');
    }
  });

  it('answers oversized headers with 431 in our error body', async () => {
    const res = await raw(t.url, { path: '/healthz', headers: { 'x-big': 'a'.repeat(40_000) } });
    assert.equal(res.status, 431);
    assert.equal(JSON.parse(res.body).error.code, 'headers_too_large');
    const after = await fetch(`${t.url}/healthz`);
    assert.equal(after.status, 200);
  });

  it('answers HEAD on a GET route', async () => {
    const res = await raw(t.url, { method: 'HEAD', path: '/healthz' });
    assert.equal(res.status, 200);
  });

  it('serves /metrics to admin keys only', async () => {
    const denied = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.key}` } });
    assert.equal(denied.status, 403);
    const body = await denied.json() as { error: Record<string, string> };
    assert.equal(body.error['type'], 'permission_error');
    assert.equal(body.error['code'], 'insufficient_permissions');
    const ok = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.adminKey}` } });
    assert.equal(ok.status, 200);
    const text = await ok.text();
    assert.match(text, /llmux_requests_total\{route="\/healthz|llmux_requests_total/);
    assert.match(text, /llmux_upstream_attempts_total \d+/);
  });

  it('writes one log line per request with no key or body in it', async () => {
    const before = t.logs.length;
    await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'secret words' }] }) })).arrayBuffer();
    await waitUntil(() => t.logs.length > before, 'the request\'s log line');
    const lines = t.logs.slice(before);
    assert.equal(lines.length, 1);
    const line = lines[0] as Record<string, unknown>;
    assert.equal(line['path'], '/v1/chat/completions');
    assert.equal(line['model'], 'llmux-echo');
    assert.equal(line['status'], 200);
    assert.equal(typeof line['duration_ms'], 'number');
    assert.equal(line['tokens_out'], 2);
    const text = JSON.stringify(line);
    assert.ok(!text.includes(t.key));
    assert.ok(!text.includes('secret words'));
  });
});

describe('server: models and count_tokens', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({ config: { models: [
      { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream' },
      { id: 'vendor/slashed-model', provider: 'fake-openai', upstream_id: 'x' },
    ] } });
  });
  after(async () => { await t.close(); });

  it('lists usable models with the list wrapper both SDKs read', async () => {
    const res = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.key}` } });
    assert.equal(res.status, 200);
    const list = await res.json() as { object: string; data: Array<Record<string, unknown>>; has_more: boolean; first_id: string; last_id: string };
    assert.equal(list.object, 'list');
    assert.equal(list.has_more, false);
    const ids = list.data.map((m) => m['id']);
    assert.deepEqual(ids, ['llmux-echo', 'gpt-test', 'vendor/slashed-model']);
    assert.equal(list.first_id, 'llmux-echo');
    assert.equal(list.last_id, 'vendor/slashed-model');
    assert.deepEqual(Object.keys(list.data[1] ?? {}), ['id', 'object', 'created', 'type', 'created_at', 'owned_by', 'display_name', 'capabilities', 'pricing', 'context_length', 'max_output_tokens']);
    assert.equal(list.data[1]?.['created'], Date.parse(String(list.data[1]?.['created_at'])) / 1000);
    assert.ok(res.headers.get('x-ratelimit-limit-requests'));
  });

  it("gives an Anthropic client (anthropic-version) Anthropic's model objects, page and errors", async () => {
    const headers = { 'x-api-key': t.key, 'anthropic-version': '2023-06-01' };
    const res = await fetch(`${t.url}/v1/models`, { headers });
    assert.equal(res.status, 200);
    const page = await res.json() as { data: Array<Record<string, unknown>>; has_more: boolean; first_id: string; last_id: string } & Record<string, unknown>;
    assert.deepEqual(Object.keys(page), ['data', 'has_more', 'first_id', 'last_id']);
    assert.deepEqual([page.has_more, page.first_id, page.last_id], [false, 'llmux-echo', 'vendor/slashed-model']);
    const one = await (await fetch(`${t.url}/v1/models/gpt-test`, { headers })).json() as Record<string, unknown>;
    assert.deepEqual(one, page.data[1]);
    assert.deepEqual(Object.keys(one), ['type', 'id', 'display_name', 'created_at', 'capabilities', 'deprecated_at', 'lifecycle', 'line', 'max_input_tokens', 'max_tokens', 'retires_at']);
    assert.deepEqual([one['type'], one['id'], one['lifecycle'], one['capabilities']], ['model', 'gpt-test', 'active', null]);
    const missing = await fetch(`${t.url}/v1/models/nope`, { headers });
    const body = await missing.json() as { type: string; error: Record<string, string>; request_id: string };
    assert.deepEqual([missing.status, body.type, body.error['type'], body.error['code'], body.request_id], [404, 'error', 'not_found_error', 'model_not_found', missing.headers.get('request-id')]);
    const refused = await fetch(`${t.url}/v1/models`, { headers: { ...headers, 'x-api-key': 'llmux-wrong' } });
    assert.equal(((await refused.json()) as { error: Record<string, string> }).error['type'], 'authentication_error');
  });

  it('returns one model by id, slashes included, and 404 model_not_found otherwise', async () => {
    const one = await fetch(`${t.url}/v1/models/vendor/slashed-model`, { headers: { 'x-api-key': t.key } });
    assert.equal(one.status, 200);
    assert.equal((await one.json() as Record<string, unknown>)['id'], 'vendor/slashed-model');
    const encoded = await fetch(`${t.url}/v1/models/vendor%2Fslashed-model`, { headers: { 'x-api-key': t.key } });
    assert.equal(encoded.status, 200);
    const missing = await fetch(`${t.url}/v1/models/nope`, { headers: { 'x-api-key': t.key } });
    assert.equal(missing.status, 404);
    assert.equal((await missing.json() as { error: Record<string, string> }).error['code'], 'model_not_found');
  });

  it('lists only the models a limited key may use', async () => {
    const { key } = await t.gateway.keys.create({ name: 'limited', models: ['gpt-test'] });
    const res = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const list = await res.json() as { data: Array<{ id: string }> };
    assert.deepEqual(list.data.map((m) => m.id), ['gpt-test']);
    const other = await fetch(`${t.url}/v1/models/llmux-echo`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(other.status, 404);
  });

  it('estimates input tokens for count_tokens and refuses bad bodies', async () => {
    const res = await fetch(`${t.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: anthropicHeaders(t.key),
      body: JSON.stringify({ model: 'llmux-echo', system: 'You are terse.', messages: [{ role: 'user', content: 'a'.repeat(400) }] }),
    });
    assert.equal(res.status, 200);
    const body = await res.json() as { input_tokens: number };
    assert.ok(body.input_tokens >= 100 && body.input_tokens < 120, String(body.input_tokens));
    const bad = await fetch(`${t.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'llmux-echo', messages: [] }) });
    assert.equal(bad.status, 400);
    const unknown = await fetch(`${t.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(unknown.status, 404);
  });
});

describe('server: the base URL', () => {
  it('answers GET and HEAD / without a key, for tools that probe it', async () => {
    const t = await startTestGateway();
    try {
      const res = await fetch(`${t.url}/`);
      assert.equal(res.status, 200);
      const body = await res.json() as { name: string; version: string };
      assert.equal(body.name, 'llmux');
      assert.equal((await raw(t.url, { method: 'HEAD', path: '/' })).status, 200);
    } finally {
      await t.close();
    }
  });
});

describe('server: count_tokens bodies', () => {
  it('takes no max_tokens, accepts any thinking budget, and still checks a max_tokens that is sent', async () => {
    const t = await startTestGateway();
    try {
      const post = (body: unknown) => fetch(`${t.url}/v1/messages/count_tokens`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify(body) });
      const base = { model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] };
      assert.equal((await post(base)).status, 200);
      assert.equal((await post({ ...base, thinking: { type: 'enabled', budget_tokens: 20_000 } })).status, 200);
      const bad = await post({ ...base, max_tokens: 0 });
      assert.equal(bad.status, 400);
      assert.match((await bad.json() as { error: { message: string } }).error.message, /^max_tokens: /);
    } finally {
      await t.close();
    }
  });
});

describe('server: keys created or revoked while it runs', () => {
  it('honours a key another store object creates, and refuses it once revoked, as soon as its directory watch shows the change', async () => {
    // The server's store has no poll: whatever it sees, the watch on the directory showed it.
    const home = mkdtempSync(join(tmpdir(), 'llmux-keys-'));
    const t = await startTestGateway({ extra: { keyStore: createKeyStore(home, { timers: timeoutsOnly }) } });
    const other = createKeyStore(home);
    const echo = (key: string): Promise<Response> => fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] }),
    });
    /** Asks with `key` until the server answers `wanted`. */
    const answers = (key: string, wanted: number): Promise<number> => waitUntil(async () => {
      const res = await echo(key);
      await res.arrayBuffer();
      return res.status === wanted;
    }, `the server answering ${wanted} to the key`);
    try {
      for (let round = 0; round < 3; round += 1) {
        const { key } = other.create({ name: `cli-${round}` });
        await answers(key, 200);
        other.revoke(`cli-${round}`);
        await answers(key, 401);
      }
    } finally {
      await t.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('server: idle keep-alive connections', () => {
  /** Sends requests on one socket, `gapsMs` apart; resolves with the status lines answered and whether the server closed it. */
  function onOneSocket(url: string, gapsMs: number[]): Promise<{ answers: string[]; closedByServer: boolean }> {
    return new Promise((resolve) => {
      const u = new URL(url);
      const socket = net.connect(Number(u.port), u.hostname);
      let received = '';
      let closedByServer = false;
      socket.on('data', (c: Buffer) => { received += c.toString(); });
      socket.on('end', () => { closedByServer = true; });
      socket.on('error', () => { closedByServer = true; });
      const ask = (): void => { if (!socket.destroyed) socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'); };
      socket.once('connect', async () => {
        ask();
        for (const gap of gapsMs) {
          await new Promise((r) => setTimeout(r, gap));
          ask();
        }
        await new Promise((r) => setTimeout(r, 200));
        socket.destroy();
        resolve({ answers: received.match(/HTTP\/1\.1 \d+/g) ?? [], closedByServer });
      });
    });
  }

  it('keeps an idle connection longer than the load balancers in front (75 s by default) and says so in keep-alive', async () => {
    // Issue 25: a hard-coded 5 s; nginx and cloud load balancers keep idle upstream connections 60 s and reuse them as llmux closes them.
    const t = await startTestGateway();
    try {
      const answer = await raw(t.url, { path: '/healthz' });
      assert.equal(answer.headers['keep-alive'], 'timeout=75');
      assert.equal(t.gateway.server?.keepAliveTimeout, 75_000);
    } finally {
      await t.close();
    }
  });

  it('takes limits.keep_alive_timeout_ms, serves a request after an idle pause longer than headers_timeout_ms, and closes the connection once idle past it', async () => {
    const t = await startTestGateway({ config: { limits: { keep_alive_timeout_ms: 1_000, headers_timeout_ms: 300, shutdown_timeout_ms: 500 } } });
    try {
      const kept = await onOneSocket(t.url, [600]);
      assert.deepEqual(kept.answers, ['HTTP/1.1 200', 'HTTP/1.1 200'], 'an idle pause under keep_alive_timeout_ms is not a slow header');
      const idle = await onOneSocket(t.url, [2_600]);
      assert.deepEqual(idle.answers, ['HTTP/1.1 200']);
      assert.ok(idle.closedByServer);
    } finally {
      await t.close();
    }
  });
});
