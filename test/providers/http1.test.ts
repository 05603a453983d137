/**
 * The upstream HTTP/1.1 client (src/providers/http1.ts) against raw servers on loopback: every
 * framing of an answer, cut at every byte; connections kept, reused and dropped; failures before
 * and during an answer. TLS is in http1-tls.test.ts (it makes a certificate with openssl).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { createHttp1Client, unwritableHeader } from '../../src/providers/http1.ts';
import { waitUntil } from '../helpers/wait.ts';
import type { Http1Answer, Http1Client, Http1Target } from '../../src/providers/http1.ts';

/** A server that answers each request with the bytes `answer` gives, written in the pieces given. */
interface RawServer {
  target: Http1Target;
  /** Heads of the requests received, in order. */
  requests: string[];
  /** Connections accepted. */
  connections: number;
  sockets: Set<net.Socket>;
  close(): Promise<void>;
}

/** Ends the connection (the server's side) where it stands among an answer's pieces. */
const CLOSE = Symbol('close');

/** A piece of an answer: bytes, a promise the writer waits for before the next piece, or CLOSE. */
type Piece = string | Buffer | Promise<unknown> | typeof CLOSE;

async function rawServer(answer: (request: string, index: number) => readonly Piece[] | 'hang' | 'close'): Promise<RawServer> {
  const state: RawServer = { target: { hostname: '127.0.0.1', port: 0, secure: false }, requests: [], connections: 0, sockets: new Set(), close: async () => {} };
  const server = net.createServer((socket) => {
    state.connections++;
    state.sockets.add(socket);
    socket.on('close', () => state.sockets.delete(socket));
    socket.on('error', () => {});
    let pending = '';
    socket.on('data', (data) => {
      pending += data.toString('latin1');
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = pending.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        const request = pending.slice(0, end + 4 + length);
        pending = pending.slice(end + 4 + length);
        const index = state.requests.push(request) - 1;
        const pieces = answer(request, index);
        if (pieces === 'hang') continue;
        if (pieces === 'close') {
          socket.destroy();
          return;
        }
        void writeSlowly(socket, pieces);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  state.target = { hostname: '127.0.0.1', port: (server.address() as AddressInfo).port, secure: false };
  state.close = async () => {
    for (const socket of state.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

/** Writes pieces in separate packets (a turn of the event loop apart), so the client reads them apart. */
async function writeSlowly(socket: net.Socket, pieces: readonly Piece[]): Promise<void> {
  for (const piece of pieces) {
    if (piece instanceof Promise) {
      await piece;
      continue;
    }
    if (socket.destroyed) return;
    if (piece === CLOSE) {
      socket.end();
      return;
    }
    socket.write(piece);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

function ask(client: Http1Client, target: Http1Target, body = '{}', method = 'POST'): Promise<Http1Answer> {
  return new Promise((resolve, reject) => {
    client.request(target, { method, path: '/v1/x', headers: ['host', 'up', 'content-length', String(Buffer.byteLength(body))], body }, resolve, reject);
  });
}

async function text(answer: Http1Answer): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of answer) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** Every way of cutting `text` in two, and in single bytes. */
function cuts(whole: string): (string | Buffer)[][] {
  const bytes = Buffer.from(whole);
  const out: (string | Buffer)[][] = [];
  for (let at = 1; at < bytes.length; at++) out.push([bytes.subarray(0, at), bytes.subarray(at)]);
  out.push([...bytes].map((byte) => Buffer.from([byte])));
  return out;
}

/** An answer of two bytes, kept-alive. */
const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok';

/** Runs `test` against a server answering as `answer` and a client of its own, then closes both. */
async function withServer(answer: Parameters<typeof rawServer>[0], test: (server: RawServer, client: Http1Client) => Promise<void>): Promise<void> {
  const server = await rawServer(answer);
  const client = createHttp1Client();
  try {
    await test(server, client);
  } finally {
    client.close();
    await server.close();
  }
}

describe('the upstream HTTP/1.1 client', () => {
  it('writes the request head and body as given, and reads a content-length answer', async () => {
    await withServer(() => ['HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a":"bcd"}'], async (server, client) => {
      const answer = await ask(client, server.target, '{"model":"m"}');
      assert.equal(answer.statusCode, 200);
      assert.equal(answer.headers['content-type'], 'application/json');
      assert.equal(await text(answer), '{"a":"bcd"}');
      assert.equal(answer.complete, true);
      assert.equal(server.requests[0], 'POST /v1/x HTTP/1.1\r\nhost: up\r\ncontent-length: 13\r\n\r\n{"model":"m"}');
    });
  });

  it('reads the same answer however its bytes are cut: length, chunked with extensions and trailers, and to the close', async () => {
    const framings = [
      { wire: 'HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nhello, world', body: 'hello, world' },
      { wire: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: t\r\n\r\n', body: 'hello, world' },
      { wire: 'HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nhello, world', body: 'hello, world', close: true },
    ];
    for (const framing of framings) {
      for (const pieces of cuts(framing.wire)) {
        // A body framed by the close ends when the server closes, after its last piece.
        await withServer(() => (framing.close === true ? [...pieces, CLOSE] : pieces), async (server, client) => {
          const answer = await ask(client, server.target);
          assert.equal(await text(answer), framing.body, `cut: ${pieces.map((piece) => JSON.stringify(piece.toString())).join(' | ')}`);
          assert.equal(answer.complete, true);
        });
      }
    }
  });

  it('hands over a body that came with its head at once, within a bound, or as a stream to whoever reads it so', async () => {
    await withServer((_, index) => (index < 3 ? ['HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"a":"bcd"}'] : ['HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"a"', ':"bcd"}']), async (server, client) => {
      const first = await ask(client, server.target);
      assert.equal(first.complete, true);
      assert.equal(first.takeWhole(10), undefined, 'larger than the bound');
      assert.equal(first.takeWhole(11)?.toString(), '{"a":"bcd"}');
      assert.equal(first.takeWhole(11), undefined, 'given once');
      assert.equal(await text(await ask(client, server.target)), '{"a":"bcd"}', 'read as a stream');
      const flowing = await ask(client, server.target);
      const read = text(flowing);
      assert.equal(flowing.takeWhole(100), undefined, 'already being read');
      assert.equal(await read, '{"a":"bcd"}');
      const parts = await ask(client, server.target);
      assert.equal(parts.takeWhole(100), undefined, 'the body came after its head');
      assert.equal(await text(parts), '{"a":"bcd"}');
      assert.equal(server.connections, 1);
    });
  });

  it('skips 1xx answers, reads 204 and 304 as having no body, and keeps the first of a single-valued header and every set-cookie', async () => {
    await withServer((_, index) => [
      index === 0
        ? 'HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: a=1\r\nset-cookie: b=2\r\nx-many: 1\r\nx-many: 2\r\ncontent-type: a/b\r\ncontent-type: c/d\r\n\r\nok'
        : index === 1 ? 'HTTP/1.1 204 No Content\r\n\r\n' : 'HTTP/1.1 304 Not Modified\r\ncontent-length: 10\r\n\r\n',
    ], async (server, client) => {
      const first = await ask(client, server.target);
      assert.equal(first.statusCode, 200);
      assert.deepEqual(first.headers['set-cookie'], ['a=1', 'b=2']);
      assert.equal(first.headers['x-many'], '1, 2');
      assert.equal(first.headers['content-type'], 'a/b');
      assert.equal(await text(first), 'ok');
      for (const status of [204, 304]) {
        const answer = await ask(client, server.target);
        assert.equal(answer.statusCode, status);
        assert.equal(await text(answer), '');
      }
      assert.equal(server.connections, 1, 'one connection for all three');
    });
  });

  it('reuses a kept connection, the most recent first, and opens another for a call made while one is busy', async () => {
    await withServer(() => [OK], async (server, client) => {
      for (let i = 0; i < 3; i++) assert.equal(await text(await ask(client, server.target)), 'ok');
      assert.equal(server.connections, 1);
      const [a, b] = await Promise.all([ask(client, server.target), ask(client, server.target)]);
      assert.equal(await text(a), 'ok');
      assert.equal(await text(b), 'ok');
      assert.equal(server.connections, 2);
    });
  });

  it('does not reuse a connection the server closes: connection: close, HTTP/1.0, bytes after the body, keep-alive timeout=1', async () => {
    const answers = [
      'HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok',
      'HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok',
      'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA',
      'HTTP/1.1 200 OK\r\nkeep-alive: timeout=1\r\ncontent-length: 2\r\n\r\nok',
    ];
    for (const wire of answers) {
      await withServer(() => [wire], async (server, client) => {
        assert.equal(await text(await ask(client, server.target)), 'ok', wire);
        assert.equal(await text(await ask(client, server.target)), 'ok', wire);
        assert.equal(server.connections, 2, wire);
      });
    }
  });

  it('closes every connection, idle or busy, on close, and a call after it opens a new one', async () => {
    await withServer((_, index) => (index === 1 ? 'hang' : [OK]), async (server, client) => {
      assert.equal(await text(await ask(client, server.target)), 'ok');
      const hanging = ask(client, server.target);
      await waitUntil(() => server.requests.length === 2, 'the second call reached the server');
      client.close();
      await assert.rejects(hanging, (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET');
      await waitUntil(() => server.sockets.size === 0, 'both connections closed');
      assert.equal(await text(await ask(client, server.target)), 'ok');
      assert.equal(server.connections, 2);
    });
  });

  it('drops an idle connection the server closed, and the next call opens a new one', async () => {
    await withServer(() => [OK], async (server, client) => {
      assert.equal(await text(await ask(client, server.target)), 'ok');
      for (const socket of server.sockets) socket.end();
      await waitUntil(() => server.sockets.size === 0, 'the client closed its side');
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(await text(await ask(client, server.target)), 'ok');
      assert.equal(server.connections, 2);
    });
  });

  it('fails a call whose connection is refused, closed before an answer, or answered with a head that is not HTTP/1.1', async () => {
    const refused = await rawServer(() => []);
    await refused.close();
    await assert.rejects(ask(createHttp1Client(), refused.target), (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED');
    await withServer(() => 'close', async (closing, client) => {
      await assert.rejects(ask(client, closing.target), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET');
    });
    for (const wire of ['HTTP/2 200\r\n\r\n', 'HTTP/1.1 200 OK\r\nbad header\r\n\r\n', 'HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n', 'HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n', `HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70_000)}`]) {
      await withServer(() => [wire], async (server, client) => {
        await assert.rejects(ask(client, server.target), (err: NodeJS.ErrnoException) => typeof err.code === 'string' && err.code.startsWith('HPE_'), wire.slice(0, 40));
      });
    }
  });

  it('ends an answer cut off mid-body with aborted and an error to whoever listens, as Node\'s client does', async () => {
    for (const rest of ['', 'zz\r\n']) {
      // The rest of the answer (a bad chunk size, or nothing before the close) goes once the
      // client listens: the test opens the gate.
      let open = (): void => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const head = rest === '' ? 'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial' : 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n';
      await withServer(() => [head, gate, rest], async (server, client) => {
        const answer = await ask(client, server.target);
        const aborted = once(answer, 'aborted');
        const failed = once(answer, 'error');
        answer.resume();
        open();
        if (rest === '') {
          setTimeout(() => {
            for (const socket of server.sockets) socket.destroy();
          }, 20);
        }
        await aborted;
        const [err] = await failed as [NodeJS.ErrnoException];
        assert.ok(err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_CHUNK_SIZE', err.code);
        assert.equal(answer.complete, false);
      });
    }
  });

  it('fails the call when the body is already unreadable in the packet of its head', async () => {
    await withServer(() => ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n'], async (server, client) => {
      await assert.rejects(ask(client, server.target), (err: NodeJS.ErrnoException) => err.code === 'HPE_INVALID_CHUNK_SIZE');
    });
  });

  it('stops reading the connection while the answer is not read, and goes on when it is', async () => {
    const big = 'x'.repeat(4 * 1024 * 1024);
    await withServer(() => [`HTTP/1.1 200 OK\r\ncontent-length: ${big.length}\r\n\r\n`, big], async (server, client) => {
      const answer = await ask(client, server.target);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(answer.readableLength < big.length, `buffered ${answer.readableLength} of ${big.length}`);
      assert.equal((await text(answer)).length, big.length);
    });
  });

  it('cuts the connection of an answer destroyed before its end, emitting aborted once', async () => {
    await withServer(() => ['HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial'], async (server, client) => {
      const answer = await ask(client, server.target);
      let aborted = 0;
      answer.on('aborted', () => aborted++);
      answer.destroy();
      await waitUntil(() => server.sockets.size === 0, 'the connection is closed');
      assert.equal(aborted, 1);
    });
  });

  it('names a header that cannot be written: a line break or control character in a value, a name that is not a token', () => {
    assert.equal(unwritableHeader(['a', 'b', 'x-ok', 'tab\there é']), undefined);
    assert.equal(unwritableHeader(['a', 'b', 'x-bad', 'v\r\nx-injected: 1']), 'x-bad');
    assert.equal(unwritableHeader(['bad name', 'v']), 'bad name');
    assert.equal(unwritableHeader(['x', 'nul\u0000']), 'x');
  });
});
