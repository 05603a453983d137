/** The upstream client (src/providers/upstream.ts): what a provider is sent, and how a whole answer is read. */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import type { ProviderConfig } from '../../src/config/types.ts';
import { createCancellation, createUpstreamClient, readUpstreamBody } from '../../src/providers/upstream.ts';
import { createEchoTransport } from '../../src/providers/echo.ts';
import { createHttp1Client } from '../../src/providers/http1.ts';
import type { Http1Answer } from '../../src/providers/http1.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { waitUntil } from '../helpers/wait.ts';

/** An in-process upstream on loopback: `/whole` answers at once (in parts), `/later` sends its head, then its body when told. */
let server: http.Server;
let port: number;
let connections = 0;
let finishLater: (() => void) | undefined;
const client = createHttp1Client();
const PARTS = ['{"id":"a",', '"content":"', 'x'.repeat(3000), '"}'];
const WHOLE = PARTS.join('');

before(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.setHeader('content-length', Buffer.byteLength(WHOLE));
    if (req.url === '/whole') {
      for (const part of PARTS.slice(0, -1)) res.write(part);
      res.end(PARTS.at(-1));
      return;
    }
    res.write(PARTS[0]);
    finishLater = () => res.end(PARTS.slice(1).join(''));
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

after(() => {
  client.close();
  server.close();
});

function ask(path: string): Promise<Http1Answer> {
  return new Promise((resolve, reject) => {
    client.request({ hostname: '127.0.0.1', port, secure: false }, { method: 'POST', path, headers: ['host', `127.0.0.1:${port}`, 'content-length', '2'], body: '{}' }, resolve, reject);
  });
}

describe('readUpstreamBody', () => {
  it('takes an answer that has arrived whole at once, and its connection goes back to the pool', async () => {
    const res = await ask('/whole');
    await waitUntil(() => res.complete, 'the whole answer has arrived');
    const bytes = readUpstreamBody(res, 1024 * 1024, 60_000);
    assert.ok(Buffer.isBuffer(bytes), 'a Buffer, not a promise');
    assert.equal(bytes.toString('utf8'), WHOLE);
    // Its connection went back to the pool when the body's last byte arrived.
    const opened = connections;
    const next = await ask('/whole');
    assert.equal(connections, opened, 'the keep-alive connection is reused');
    await waitUntil(() => next.complete, 'the second answer has arrived');
    assert.equal((readUpstreamBody(next, 1024 * 1024, 60_000) as Buffer).toString('utf8'), WHOLE);
  });

  it('reads an answer still arriving as it comes', async () => {
    const res = await ask('/later');
    const reading = readUpstreamBody(res, 1024 * 1024, 60_000);
    assert.ok(reading instanceof Promise);
    finishLater?.();
    assert.equal((await reading).toString('utf8'), WHOLE);
  });

  it('refuses an answer larger than its bound, whole or not', async () => {
    const res = await ask('/whole');
    await waitUntil(() => res.complete, 'the whole answer has arrived');
    const reading = readUpstreamBody(res, 100, 60_000);
    assert.ok(reading instanceof Promise, 'read as it comes, within the bound');
    // Named as too large, not as cut off (destroying the response emits 'aborted' at once).
    await assert.rejects(reading, (err: unknown) => err instanceof GatewayError && err.status === 502 && /larger than 100 bytes/.test(err.message));
  });
});
describe('the upstream client', () => {
  it('refuses, with a 502 naming the header and nothing sent, a header or path HTTP does not allow', async () => {
    let received = 0;
    const server = http.createServer((req, res) => {
      received++;
      req.resume();
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    const client = createUpstreamClient(createEchoTransport());
    const ask = (headers: Record<string, string>, path: string): Promise<unknown> => {
      const provider: ProviderConfig = { id: 'local', format: 'chat', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: undefined, keyless: true, headers };
      return client.send({
        provider, endpoint: provider.baseUrl, format: 'chat', path, body: '{}', headers: {}, client: undefined,
        cancellation: createCancellation(), connectTimeoutMs: 5_000, firstByteTimeoutMs: 5_000,
      });
    };
    try {
      await assert.rejects(ask({ 'x-team': 'a\r\nx-injected: 1' }, '/chat/completions'), (err: unknown) => err instanceof GatewayError && err.status === 502 && /header "x-team"/.test(err.message) && !err.message.includes('injected'));
      await assert.rejects(ask({ 'bad name': 'v' }, '/chat/completions'), (err: unknown) => err instanceof GatewayError && err.status === 502 && /header "bad name"/.test(err.message));
      await assert.rejects(ask({}, '/models/a b HTTP/1.1\r\nx: y'), (err: unknown) => err instanceof GatewayError && err.status === 502 && /its path/.test(err.message));
      assert.equal(received, 0);
    } finally {
      client.close();
      server.close();
    }
  });

  it('sends the provider its headers, host and length included, and its open request keeps no header block', async () => {
    let received: IncomingHttpHeaders = {};
    const server = http.createServer((req, res) => {
      received = req.headers;
      req.resume();
      req.once('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {}\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    const client = createUpstreamClient(createEchoTransport());
    const provider: ProviderConfig = { id: 'local', format: 'chat', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: undefined, keyless: true, headers: { 'x-provider': 'p' } };
    try {
      const answer = await client.send({
        provider,
        endpoint: provider.baseUrl,
        format: 'chat',
        path: '/chat/completions',
        body: '{"model":"m"}',
        headers: { authorization: 'Bearer upstream-secret', 'content-type': 'application/json; charset=utf-8' },
        client: undefined,
        cancellation: createCancellation(),
        connectTimeoutMs: 5_000,
        firstByteTimeoutMs: 5_000,
      });
      assert.equal(answer.statusCode, 200);
      assert.equal(received.host, `127.0.0.1:${port}`);
      assert.equal(received['content-length'], '13');
      assert.equal(received['accept-encoding'], 'identity');
      assert.equal(received['x-provider'], 'p');
      assert.equal(received.authorization, 'Bearer upstream-secret');
      // The request's own headers win over the defaults, as they did.
      assert.equal(received['content-type'], 'application/json; charset=utf-8');
      // The answer holds no request: nothing of the request's head is kept while it streams.
      assert.equal('req' in answer, false);
      answer.destroy();
    } finally {
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
