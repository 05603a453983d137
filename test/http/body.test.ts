import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJsonBody, readBody } from '../../src/http/body.ts';
import { createBodyBudget } from '../../src/http/body-budget.ts';
import { GatewayError } from '../../src/common/errors.ts';

const nested = (depth: number, inner = '1'): string => `{"a":${'['.repeat(depth - 1)}${inner}${']'.repeat(depth - 1)}}`;

describe('parseJsonBody', () => {
  it('accepts 200 levels of nesting and refuses 201, and 5,000, with a 400 naming the limit', () => {
    // Issue 14: the README promised 200 levels; depth 5,000 was accepted.
    assert.deepEqual(Object.keys(parseJsonBody(Buffer.from(nested(MAX_JSON_DEPTH)))), ['a']);
    for (const depth of [MAX_JSON_DEPTH + 1, 5_000]) {
      assert.throws(() => parseJsonBody(Buffer.from(nested(depth))), (err: unknown) =>
        err instanceof GatewayError && err.status === 400 && err.code === 'invalid_parameters' && /more than 200 levels/.test(err.message));
    }
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = `{"a":"${'[{'.repeat(500)}\\"${'['.repeat(500)}\\\\","b":[1]}`;
    assert.equal(nestsDeeperThan(Buffer.from(text), 2), false);
    assert.deepEqual(Object.keys(parseJsonBody(Buffer.from(text))), ['a', 'b']);
    assert.equal(nestsDeeperThan(Buffer.from('{"a\\\\":[[[1]]]}'), 3), true, 'an escaped backslash does not escape the quote after it');
    assert.equal(nestsDeeperThan(Buffer.from('{"unterminated'), 1), false, 'malformed JSON is left to the parser');
  });
});

/** A server that reads each request's body with `read`, and answers with what it resolved or threw. */
async function withServer(read: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<Buffer>, run: (port: number) => Promise<void>): Promise<void> {
  const server = http.createServer((req, res) => {
    read(req, res).then(
      (body) => res.end(`ok ${body.length}`),
      (err: unknown) => {
        res.statusCode = err instanceof GatewayError ? err.status : 500;
        res.setHeader('connection', 'close');
        res.end(err instanceof GatewayError ? err.code : 'bug');
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await run((server.address() as AddressInfo).port);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

function rawExchange(port: number, head: string, bodyPieces: Array<{ afterMs: number; bytes: string }>): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (c: Buffer) => { received += c.toString(); });
    socket.on('close', () => resolve(received));
    socket.on('error', () => {});
    socket.write(head);
    for (const piece of bodyPieces) setTimeout(() => { if (!socket.destroyed) socket.write(piece.bytes); }, piece.afterMs).unref();
    setTimeout(() => socket.destroy(), 4_000).unref();
  });
}

describe('readBody', () => {
  it('answers a body that stops arriving for its idle bound with 408, however long the request may take', async () => {
    // Issue 14: a body dripped to /auth/device held its socket for the whole 300 s request timeout.
    await withServer((req) => readBody(req, 1_000, { idleTimeoutMs: 200 }), async (port) => {
      const started = Date.now();
      const answer = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n', [
        { afterMs: 0, bytes: 'a' },
        { afterMs: 100, bytes: 'b' },
        { afterMs: 200, bytes: 'c' },
      ]);
      assert.match(answer, /^HTTP\/1\.1 408 [\s\S]*request_timeout$/);
      const ms = Date.now() - started;
      assert.ok(ms >= 350 && ms < 1_500, `answered after ${ms} ms: each read re-arms the bound`);
    });
  });

  it('reads a body that keeps arriving within its idle bound', async () => {
    await withServer((req) => readBody(req, 1_000, { idleTimeoutMs: 300 }), async (port) => {
      const answer = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\n', [
        { afterMs: 150, bytes: 'a' },
        { afterMs: 300, bytes: 'b' },
        { afterMs: 450, bytes: 'c' },
      ]);
      assert.match(answer, /^HTTP\/1\.1 200 [\s\S]*ok 3$/);
    });
  });

  it('refuses a body its claim has no room for before reading it, or as soon as a chunked one outgrows the room', async () => {
    const budget = createBodyBudget({ totalBytes: 1_000, perOwnerBytes: 600 });
    const held = budget.claim('key_a');
    assert.equal(held.take(500), undefined);
    const readClaimed = (req: http.IncomingMessage, res: http.ServerResponse): Promise<Buffer> => {
      const claim = budget.claim(String(req.headers['x-key']));
      res.once('close', () => claim.release());
      return readBody(req, 10_000, { claim });
    };
    await withServer(readClaimed, async (port) => {
      const sameKey = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nx-key: key_a\r\nContent-Length: 200\r\n\r\n', []);
      assert.match(sameKey, /^HTTP\/1\.1 429 [\s\S]*rate_limit_exceeded$/);
      const other = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nx-key: key_b\r\nConnection: close\r\nContent-Length: 400\r\n\r\n', [{ afterMs: 0, bytes: 'x'.repeat(400) }]);
      assert.match(other, /^HTTP\/1\.1 200 [\s\S]*ok 400$/);
      const chunked = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nx-key: key_c\r\nTransfer-Encoding: chunked\r\n\r\n', [{ afterMs: 0, bytes: `258\r\n${'y'.repeat(600)}\r\n` }]);
      assert.match(chunked, /^HTTP\/1\.1 503 [\s\S]*server_busy$/, 'key_a holds 500 of the 1,000: 600 more do not fit');
    });
    held.release();
    assert.equal(budget.held(), 0, 'every claim gave back what it took');
  });
});
