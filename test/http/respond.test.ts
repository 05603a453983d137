import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { onClose } from '../../src/http/respond.ts';

describe('onClose', () => {
  it('runs at once for a response whose client already left, and on close otherwise', async () => {
    const calls: string[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => { done = r; });
    let read!: () => void;
    const bodyRead = new Promise<void>((r) => { read = r; });
    const server = http.createServer((req, res) => {
      onClose(res, () => calls.push('registered early'));
      req.resume();
      req.on('end', read);
      // Registered once the client has gone and the response's close has been emitted: a plain
      // once('close') here would never fire.
      res.once('close', () => setImmediate(() => {
        onClose(res, () => calls.push('registered late'));
        done();
      }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.end('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi');
    await bodyRead;
    socket.destroy();
    await finished;
    server.close();
    assert.deepEqual(calls, ['registered early', 'registered late']);
  });
});
