import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { MAX_DISCARDED_BODY_BYTES, MAX_JSON_DEPTH, limitUnreadBody, nestsDeeperThan, parseJsonBody, readBody } from '../../src/http/body.ts';
import { createBodyBudget } from '../../src/http/body-budget.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { createManualClock } from '../helpers/clock.ts';
import { waitUntil } from '../helpers/wait.ts';

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

/** A raw connection to `port` that has sent `head`: write more to it, and read what came back once the server closes it. */
function connect(port: number, head: string): { write(bytes: string): void; answer: Promise<string> } {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (c: Buffer) => { received += c.toString(); });
  socket.on('error', () => {});
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.write(head);
  // A bound on a server that never answers, so a failing test ends.
  setTimeout(() => socket.destroy(), 10_000).unref();
  return { write: (bytes) => { if (!socket.destroyed) socket.write(bytes); }, answer };
}

function rawExchange(port: number, head: string, body = ''): Promise<string> {
  const exchange = connect(port, head);
  if (body !== '') exchange.write(body);
  return exchange.answer;
}

/**
 * Reads bodies with `readBody` on a manual clock, counting the bytes it has been given, so a test
 * sends a byte, waits until the reader has it, and moves the clock on: the idle bound is measured
 * on the clock, not on how fast this machine moves bytes.
 */
function clockedReader(idleTimeoutMs: number) {
  const clock = createManualClock();
  const state = { received: 0, settled: false };
  const read = (req: http.IncomingMessage): Promise<Buffer> => {
    req.on('data', (chunk: Buffer) => { state.received += chunk.length; });
    const reading = readBody(req, 1_000, { idleTimeoutMs, now: clock.now, timers: clock.timers });
    reading.then(() => { state.settled = true; }, () => { state.settled = true; });
    return reading;
  };
  /** Sends one byte, then waits until the reader has it. */
  const drip = async (exchange: { write(bytes: string): void }, byte: string): Promise<void> => {
    const had = state.received;
    exchange.write(byte);
    await waitUntil(() => state.received > had, `the reader getting ${JSON.stringify(byte)}`);
  };
  return { clock, state, read, drip };
}

describe('readBody', () => {
  it('answers a body that stops arriving for its idle bound with 408, however long the request may take', async () => {
    // Issue 14: a body dripped to /auth/device held its socket for the whole 300 s request timeout.
    const { clock, state, read, drip } = clockedReader(200);
    await withServer(read, async (port) => {
      const exchange = connect(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n');
      await drip(exchange, 'a');
      clock.advance(150);
      await drip(exchange, 'b');
      clock.advance(150);
      await drip(exchange, 'c');
      // Each read re-armed the bound: 199 ms after the last byte the body is still being read...
      clock.advance(199);
      await new Promise((r) => setImmediate(r));
      assert.equal(state.settled, false, 'each read re-arms the bound');
      // ...and at 200 ms it is answered, long before the request's 1,000 bytes could come.
      clock.advance(1);
      assert.match(await exchange.answer, /^HTTP\/1\.1 408 [\s\S]*request_timeout$/);
    });
  });

  it('reads a body that keeps arriving within its idle bound', async () => {
    const { clock, read, drip } = clockedReader(300);
    await withServer(read, async (port) => {
      const exchange = connect(port, 'POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\n');
      for (const byte of ['a', 'b', 'c']) {
        clock.advance(150);
        await drip(exchange, byte);
      }
      assert.match(await exchange.answer, /^HTTP\/1\.1 200 [\s\S]*ok 3$/);
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
      const sameKey = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nx-key: key_a\r\nContent-Length: 200\r\n\r\n');
      assert.match(sameKey, /^HTTP\/1\.1 429 [\s\S]*rate_limit_exceeded$/);
      const other = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nx-key: key_b\r\nConnection: close\r\nContent-Length: 400\r\n\r\n', 'x'.repeat(400));
      assert.match(other, /^HTTP\/1\.1 200 [\s\S]*ok 400$/);
      const chunked = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nx-key: key_c\r\nTransfer-Encoding: chunked\r\n\r\n', `258\r\n${'y'.repeat(600)}\r\n`);
      assert.match(chunked, /^HTTP\/1\.1 503 [\s\S]*server_busy$/, 'key_a holds 500 of the 1,000: 600 more do not fit');
    });
    held.release();
    assert.equal(budget.held(), 0, 'every claim gave back what it took');
  });
});

describe('limitUnreadBody', () => {
  /** A server that refuses every request before reading its body, as a 401 or a 429 does, and watches what is left unread. */
  async function withRefusingServer(clock: ReturnType<typeof createManualClock>, closeConnection: boolean, body: (port: number, served: { socket: Promise<net.Socket>; watched: () => number }) => Promise<void>): Promise<void> {
    let servedSocket: (socket: net.Socket) => void = () => {};
    const socket = new Promise<net.Socket>((resolve) => { servedSocket = resolve; });
    let watched = 0;
    const server = http.createServer((req, res) => {
      servedSocket(req.socket);
      res.on('finish', () => {
        limitUnreadBody(req, clock.timers);
        watched++;
      });
      res.writeHead(429, closeConnection ? { connection: 'close', 'content-length': '7' } : { 'content-length': '7' });
      res.end('refused');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await body((server.address() as AddressInfo).port, { socket, watched: () => watched });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it('holds nothing for a refusal that closes its connection', async () => {
    // Node ends a `connection: close` answer's socket before the answer's own finish listeners run:
    // a discard timer armed then held the closed socket and its request for the whole wait (a
    // flood of refused 100 KB requests: 5,800 of them, 26 MB, a second after it).
    const clock = createManualClock();
    await withRefusingServer(clock, true, async (port, served) => {
      const exchange = connect(port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${'a'.repeat(1_000)}`);
      assert.match(await exchange.answer, /^HTTP\/1\.1 429 /);
      await waitUntil(() => served.watched() === 1, 'the answer finished');
      assert.equal((await served.socket).destroyed, true);
      assert.equal(clock.pending(), 0, 'no discard timer for a connection already closed');
    });
  });

  it('stops watching when a kept connection closes, not after the discard wait', async () => {
    const clock = createManualClock();
    await withRefusingServer(clock, false, async (port, served) => {
      const client = net.connect(port, '127.0.0.1');
      client.on('error', () => {});
      client.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${'a'.repeat(1_000)}`);
      const socket = await served.socket;
      await waitUntil(() => served.watched() === 1 && clock.pending() === 1, 'the unread body watched');
      client.destroy();
      await waitUntil(() => clock.pending() === 0, 'the watch ended with its connection');
      assert.equal(socket.destroyed, true);
      assert.equal(socket.listeners('close').some((f) => f.name === 'stopWatching'), false);
    });
  });

  it('still closes a connection whose client goes on sending past the bound, and keeps one whose small rest arrives', async () => {
    const clock = createManualClock();
    await withRefusingServer(clock, false, async (port, served) => {
      const exchange = connect(port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * MAX_DISCARDED_BODY_BYTES}\r\n\r\n`);
      const socket = await served.socket;
      await waitUntil(() => clock.pending() === 1, 'the unread body watched');
      exchange.write('b'.repeat(MAX_DISCARDED_BODY_BYTES + 1));
      await waitUntil(() => socket.destroyed, 'the connection closed past the bound');
      assert.equal(clock.pending(), 0);
      assert.match(await exchange.answer, /^HTTP\/1\.1 429 /);
    });
    const small = createManualClock();
    await withRefusingServer(small, false, async (port, served) => {
      const exchange = connect(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345');
      const socket = await served.socket;
      await waitUntil(() => small.pending() === 1, 'the unread body watched');
      exchange.write('67890');
      await waitUntil(() => small.pending() === 0, 'the watch ended with the body');
      assert.equal(socket.destroyed, false, 'a small rest leaves the connection for the next request');
    });
  });

  it('closes a connection whose rest never comes when the wait is over', async () => {
    const clock = createManualClock();
    await withRefusingServer(clock, false, async (port, served) => {
      connect(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345');
      const socket = await served.socket;
      await waitUntil(() => clock.pending() === 1, 'the unread body watched');
      clock.advance(5_000);
      await waitUntil(() => socket.destroyed, 'the connection closed at the end of the wait');
    });
  });
});
