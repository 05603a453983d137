import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProviderConfig } from '../../src/config/types.ts';
import { createCancellation, createUpstreamClient } from '../../src/providers/upstream.ts';
import { createEchoTransport } from '../../src/providers/echo.ts';

describe('the upstream client', () => {
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
      // Headers given to http.request as an object are set one by one and kept by the request for
      // as long as its answer streams; given as a list, none is kept.
      const response = answer as IncomingMessage & { req: ClientRequest };
      assert.deepEqual(response.req.getHeaderNames(), []);
      response.destroy();
    } finally {
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
