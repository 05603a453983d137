import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { headHeader, onClose, sendError, sendJson, setHeadHeader, setHeadOnResponse, writeHead } from '../../src/http/respond.ts';
import { invalidParameters } from '../../src/common/errors.ts';

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

/** Answers one GET with `answer` and resolves with the headers the client got and the names left on the response. */
async function answerOnce(answer: (res: ServerResponse) => void): Promise<{ headers: IncomingHttpHeaders; kept: string[] }> {
  let kept: string[] = [];
  const server = http.createServer((_req, res) => {
    answer(res);
    kept = res.getHeaderNames();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/', agent: false }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.headers));
      }).once('error', reject);
    });
    return { headers, kept };
  } finally {
    server.close();
  }
}

describe('the head of an answer', () => {
  it('writes the headers added before the status with it, a later value and writeHead\'s own winning, and keeps none on the response', async () => {
    const { headers, kept } = await answerOnce((res) => {
      setHeadHeader(res, 'x-request-id', 'r1');
      setHeadHeader(res, 'x-ratelimit-limit-requests', '10');
      setHeadHeader(res, 'x-ratelimit-limit-requests', '20');
      setHeadHeader(res, 'cache-control', 'no-store');
      assert.equal(headHeader(res, 'x-request-id'), 'r1');
      writeHead(res, 200, { 'content-type': 'text/plain', 'cache-control': 'no-cache' });
      assert.equal(headHeader(res, 'x-request-id'), undefined);
      res.end('ok');
    });
    assert.equal(headers['x-request-id'], 'r1');
    assert.equal(headers['x-ratelimit-limit-requests'], '20');
    assert.equal(headers['cache-control'], 'no-cache');
    assert.equal(headers['content-type'], 'text/plain');
    assert.deepEqual(kept, []);
  });

  it('sets them on the response for a handler that answers with res.end alone', async () => {
    const { headers } = await answerOnce((res) => {
      setHeadHeader(res, 'x-request-id', 'r2');
      setHeadOnResponse(res);
      assert.equal(headHeader(res, 'x-request-id'), 'r2');
      res.end('ok');
    });
    assert.equal(headers['x-request-id'], 'r2');
  });
});

describe('sendJson', () => {
  it('sends the whole answer, even when an error follows it in the same turn (its end waits for the turn\'s end)', async () => {
    let bugs = 0;
    const server = http.createServer((_req, res) => {
      sendJson(res, 200, '{"ok":true}', { 'x-extra': 'kept' });
      // Already answered: the error changes nothing, and the answer keeps its body.
      sendError(res, invalidParameters('too late'), () => { bugs++; });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const got = await new Promise<{ status: number | undefined; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/', agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk; });
          res.once('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
          // An answer that lost its body would be waited for until the connection closed.
          res.once('aborted', () => reject(new Error(`the answer was cut short after ${JSON.stringify(body)}`)));
        }).once('error', reject).setTimeout(2000, function (this: http.ClientRequest) { this.destroy(new Error('the answer did not come whole')); });
      });
      assert.equal(got.status, 200);
      assert.equal(got.body, '{"ok":true}');
      assert.equal(got.headers['content-length'], '11');
      assert.equal(got.headers['x-extra'], 'kept');
      assert.equal(bugs, 0);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
