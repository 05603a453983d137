import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetchText } from '../../src/common/fetch-text.ts';

async function serve(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

test('a request is sent with its method, headers and body, and the whole answer comes back as text', async () => {
  const server = await serve((req, res) => {
    let body = '';
    req.on('data', (piece: Buffer) => { body += piece.toString('utf8'); });
    req.on('end', () => {
      res.writeHead(201, { 'x-seen': `${req.method} ${req.url} ${req.headers['x-a']} ${req.headers['content-length']}` });
      res.end(`got ${body}`);
    });
  });
  try {
    const answer = await fetchText({ method: 'POST', url: `${server.url}/token?x=1`, headers: { 'x-a': 'b' }, body: 'grant=ü', timeoutMs: 2000 });
    assert.equal(answer.status, 201);
    assert.equal(answer.headers['x-seen'], 'POST /token?x=1 b 8');
    assert.equal(answer.body, 'got grant=ü');
  } finally {
    await server.close();
  }
});

test('an answer that does not come within the deadline is an error saying so', async () => {
  const server = await serve(() => { /* never answers */ });
  try {
    await assert.rejects(fetchText({ method: 'GET', url: server.url, timeoutMs: 50 }), /no answer within 50 ms/);
  } finally {
    await server.close();
  }
});

test('an answer over the size limit is refused instead of held', async () => {
  const server = await serve((_req, res) => res.end('x'.repeat(5000)));
  try {
    await assert.rejects(fetchText({ method: 'GET', url: server.url, timeoutMs: 2000, maxResponseBytes: 1000 }), /answer is over 1000 bytes/);
  } finally {
    await server.close();
  }
});

test('a refused connection and a bad URL are errors', async () => {
  const server = await serve(() => undefined);
  const { url } = server;
  await server.close();
  await assert.rejects(fetchText({ method: 'GET', url, timeoutMs: 2000 }), /ECONNREFUSED/);
  await assert.rejects(fetchText({ method: 'GET', url: 'not a url', timeoutMs: 2000 }), /not a valid URL/);
});
