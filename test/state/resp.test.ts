import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import {
  createRespClient,
  parseStateUrl,
  reconnectDelayMs,
  RespError,
  StateUnavailableError,
} from '../../src/state/resp.ts';
import type { RespClient, RespClientOptions, RespStatus, StateUnavailableReason } from '../../src/state/resp.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { TestRedis, TestRedisOptions } from '../helpers/redis.ts';
import { waitUntil } from '../helpers/wait.ts';

const skip = redisSkip();
// Generous for a shared, busy machine; what matters is that waiting is bounded.
const WAIT_MS = 10_000;
const TIMEOUT_MS = 250;
// How late a rejection may come after its deadline on a loaded machine. The timeouts tested with
// it are a real socket's, against a real server that stops answering: kept on real time.
const SLACK_MS = 750;

// The client must never leave a rejection unhandled, whatever the server does.
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};
process.on('unhandledRejection', onUnhandled);
after(() => {
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, []);
});

async function waitFor(what: string, check: () => boolean): Promise<void> {
  await waitUntil(check, what, { timeoutMs: WAIT_MS });
}

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  await waitUntil(check, what, { timeoutMs: WAIT_MS, pollMs: 10 });
}

function waitForStatus(client: RespClient, status: RespStatus): Promise<void> {
  return waitFor(`status ${status}`, () => client.status === status);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

async function unavailable(promise: Promise<unknown>, reason: StateUnavailableReason): Promise<StateUnavailableError> {
  const error = await rejection(promise);
  assert.ok(error instanceof StateUnavailableError, `expected StateUnavailableError, got ${String(error)}`);
  assert.equal(error.reason, reason, error.message);
  return error;
}

/** A server and clients for one test; `done` stops them all. */
async function setUp(serverOptions: TestRedisOptions = {}): Promise<{
  redis: TestRedis;
  client(options?: Partial<RespClientOptions>): RespClient;
  done(): Promise<void>;
}> {
  const redis = await startRedis(serverOptions);
  const clients: RespClient[] = [];
  return {
    redis,
    client(options = {}) {
      const created = createRespClient({ url: redis.url, timeoutMs: TIMEOUT_MS, ...options });
      clients.push(created);
      return created;
    },
    async done() {
      await Promise.all(clients.map((c) => c.close()));
      await redis.stop();
    },
  };
}

/** A TCP server on 127.0.0.1:0 that answers with whatever `onData` writes. */
async function fakeServer(onData: (socket: net.Socket, data: string) => void): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.on('data', (data) => onData(socket, data.toString('latin1')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${address.port}`,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

describe('parseStateUrl', () => {
  it('reads host, port and database, with 6379 and 0 by default', () => {
    assert.deepEqual(parseStateUrl('redis://cache.internal'), { tls: false, host: 'cache.internal', port: 6379, db: 0, displayUrl: 'redis://cache.internal:6379/0' });
    assert.deepEqual(parseStateUrl('rediss://10.0.0.5:6380/7'), { tls: true, host: '10.0.0.5', port: 6380, db: 7, displayUrl: 'rediss://10.0.0.5:6380/7' });
    assert.equal(parseStateUrl('redis://[::1]:7000/').host, '::1');
    assert.equal(parseStateUrl('redis://[::1]:7000/').displayUrl, 'redis://[::1]:7000/0');
  });

  it('reads a password alone or a user with a password, percent-decoded', () => {
    const passwordOnly = parseStateUrl('redis://:s3cret@h:1');
    assert.equal(passwordOnly.password, 's3cret');
    assert.equal(passwordOnly.username, undefined);
    const withUser = parseStateUrl('redis://gateway:p%40ss%3Aword@h:1/2');
    assert.equal(withUser.username, 'gateway');
    assert.equal(withUser.password, 'p@ss:word');
    assert.equal(withUser.displayUrl, 'redis://h:1/2');
  });

  for (const [problem, url, mention] of [
    ['another scheme', 'http://:hunter2@h:1', 'redis://'],
    ['no host', 'redis://:hunter2@', 'valid URL'],
    ['an empty host', 'redis:///3', 'no host'],
    ['a port out of range', 'redis://:hunter2@h:99999', 'valid URL'],
    ['port 0', 'redis://:hunter2@h:0', 'port'],
    ['a database that is not a number', 'redis://:hunter2@h:1/cache', 'database'],
    ['a path below the database', 'redis://:hunter2@h:1/0/x', 'database'],
    ['a query string', 'redis://:hunter2@h:1?db=2', 'query'],
    ['a user without a password', 'redis://hunter2@h:1', 'no password'],
    ['bad percent-encoding', 'redis://u:hunter2%zz@h:1', 'percent'],
    ['no URL at all', 'hunter2', 'valid URL'],
  ] as const) {
    it(`names the problem with ${problem}, without the password`, () => {
      const error = rejectionSync(() => parseStateUrl(url));
      assert.ok(error.message.includes(mention), error.message);
      assert.ok(!error.message.includes('hunter2'), error.message);
      assert.equal(error.cause, undefined);
    });
  }
});

function rejectionSync(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail('expected a throw');
}

describe('reconnectDelayMs', () => {
  it('doubles from the base per attempt, up to the cap, with half the delay random', () => {
    const low = (attempt: number): number => reconnectDelayMs(attempt, 50, 2000, () => 0);
    const high = (attempt: number): number => reconnectDelayMs(attempt, 50, 2000, () => 0.999_999);
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 40].map(low), [25, 50, 100, 200, 400, 800, 1000, 1000]);
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 40].map(high), [50, 100, 200, 400, 800, 1600, 2000, 2000]);
  });
});

describe('RESP client against a real server', { skip, timeout: 120_000 }, () => {
  it('sends commands and reads each reply type, with error replies as RespError', async () => {
    const t = await setUp();
    try {
      const client = t.client();
      // Issued while still connecting: waits for the connection.
      assert.equal(client.status, 'connecting');
      assert.equal(await client.command(['SET', 'greeting', 'grüß dich €']), 'OK');
      assert.equal(client.status, 'ready');
      assert.equal(await client.command(['GET', 'greeting']), 'grüß dich €');
      assert.equal(await client.command(['GET', 'missing']), null);
      assert.equal(await client.command(['INCRBY', 'counter', 41]), 41);
      assert.equal(await client.command(['INCR', 'counter']), 42);
      await client.command(['RPUSH', 'list', 'a', Buffer.from('b'), 3]);
      assert.deepEqual(await client.command(['LRANGE', 'list', 0, -1]), ['a', 'b', '3']);
      assert.deepEqual(await client.command(['HGETALL', 'none']), []);

      const wrongType = await rejection(client.command(['INCR', 'list']));
      assert.ok(wrongType instanceof RespError);
      assert.equal(wrongType.prefix, 'WRONGTYPE');
      // An error reply leaves the connection in step.
      assert.equal(await client.command(['PING']), 'PONG');

      const outsideMulti = await rejection(client.command(['EXEC']));
      assert.ok(outsideMulti instanceof RespError);
      assert.equal(outsideMulti.prefix, 'ERR');
      const exec = await client.batch([['MULTI'], ['SET', 'x', '1'], ['INCR', 'list'], ['EXEC']]);
      const results = exec[3];
      assert.ok(Array.isArray(results));
      assert.equal(results[0], 'OK');
      assert.ok(results[1] instanceof RespError);
    } finally {
      await t.done();
    }
  });

  it('answers commands issued together in the order they were issued, in a batch or not', async () => {
    const t = await setUp();
    try {
      const client = t.client({ timeoutMs: 5000 });
      const counts = await Promise.all(Array.from({ length: 500 }, () => client.command(['INCR', 'n'])));
      assert.deepEqual(counts, Array.from({ length: 500 }, (_, i) => i + 1));
      const replies = await client.batch(Array.from({ length: 1000 }, (_, i) => ['ECHO', `m${i}`]));
      assert.deepEqual(replies, Array.from({ length: 1000 }, (_, i) => `m${i}`));
      assert.deepEqual(await client.batch([]), []);
    } finally {
      await t.done();
    }
  });

  it('rejects a batch with its first error reply after every command ran', async () => {
    const t = await setUp();
    try {
      const client = t.client();
      await client.command(['SET', 's', 'text']);
      const error = await rejection(client.batch([['SET', 'a', '1'], ['INCR', 's'], ['SET', 'b', '2'], ['LPUSH', 's', 'x']]));
      assert.ok(error instanceof RespError);
      assert.equal(error.prefix, 'ERR');
      assert.match(error.message, /not an integer/);
      assert.deepEqual(await client.batch([['GET', 'a'], ['GET', 'b']]), ['1', '2']);
    } finally {
      await t.done();
    }
  });

  it('runs a script by its SHA, loading it when the server does not know it, also after SCRIPT FLUSH', async () => {
    const t = await setUp();
    try {
      const client = t.client();
      const script = client.script("return redis.call('INCRBY', KEYS[1], ARGV[1])");
      assert.deepEqual(await client.command(['SCRIPT', 'EXISTS', script.sha]), [0]);
      assert.equal(await script.run(['hits'], [5]), 5);
      assert.deepEqual(await client.command(['SCRIPT', 'EXISTS', script.sha]), [1]);
      assert.equal(await script.run(['hits'], [2]), 7);
      assert.equal(await client.command(['SCRIPT', 'FLUSH']), 'OK');
      assert.equal(await script.run(['hits'], [1]), 8);

      const broken = client.script("return redis.call('NOPE')");
      const error = await rejection(broken.run([], []));
      assert.ok(error instanceof RespError);
      assert.equal(await client.command(['PING']), 'PONG');
    } finally {
      await t.done();
    }
  });

  it('delivers published messages on a connection of its own, and stops after unsubscribe', async () => {
    const t = await setUp();
    try {
      const client = t.client();
      const received: string[] = [];
      const other: string[] = [];
      await new Promise<void>((resolve) => {
        client.subscribe('keys', (message, channel) => received.push(`${channel}:${message}`), { onSubscribed: resolve });
      });
      // A second handler on the same channel is confirmed too.
      const second = await new Promise<{ unsubscribe(): void }>((resolve) => {
        const subscription = client.subscribe('keys', (message) => other.push(message), { onSubscribed: () => resolve(subscription) });
      });
      // The command connection is not in subscribe mode: ordinary commands still work.
      assert.equal(await client.command(['SET', 'k', 'v']), 'OK');
      assert.equal(await client.command(['PUBLISH', 'keys', 'revoked:1']), 1);
      await waitFor('the message', () => received.length === 1 && other.length === 1);
      assert.deepEqual(received, ['keys:revoked:1']);

      second.unsubscribe();
      assert.equal(await client.command(['PUBLISH', 'keys', 'revoked:2']), 1);
      await waitFor('the second message', () => received.length === 2);
      assert.deepEqual(other, ['revoked:1']);
    } finally {
      await t.done();
    }
  });

  it('leaves a channel when its last handler unsubscribes', async () => {
    const t = await setUp();
    try {
      const client = t.client();
      const subscription = await new Promise<{ unsubscribe(): void }>((resolve) => {
        const s = client.subscribe('gone', () => assert.fail('no message expected'), { onSubscribed: () => resolve(s) });
      });
      subscription.unsubscribe();
      // UNSUBSCRIBE travels on the other connection: ask until the server has seen it.
      await eventually('the channel to be left', async () => {
        const reply = await client.command(['PUBSUB', 'NUMSUB', 'gone']);
        return Array.isArray(reply) && reply[1] === 0;
      });
      assert.equal(await client.command(['PUBLISH', 'gone', 'late']), 0);
    } finally {
      await t.done();
    }
  });

  it('keeps the other subscriptions working when the server refuses one channel, and says so', async () => {
    const t = await setUp({ user: { name: 'narrow', password: 'pw', rules: ['~*', 'resetchannels', '&allowed:*', '+@all'] } });
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      const client = t.client();
      let forbiddenConfirmed = false;
      client.subscribe('forbidden', () => assert.fail('no message expected'), { onSubscribed: () => (forbiddenConfirmed = true) });
      const received: string[] = [];
      await new Promise<void>((resolve) => {
        client.subscribe('allowed:keys', (message) => received.push(message), { onSubscribed: resolve });
      });
      assert.equal(await client.command(['PUBLISH', 'allowed:keys', 'changed']), 1);
      await waitFor('the message', () => received.length === 1);
      await waitFor('the warning', () => warnings.some((message) => message.includes('NOPERM')));
      assert.equal(forbiddenConfirmed, false);
    } finally {
      process.off('warning', onWarning);
      await t.done();
    }
  });

  it('authenticates with a password and with a user and password on every connection', async () => {
    const t = await setUp({ password: 'pw-default', user: { name: 'gateway', password: 'pw-gateway' } });
    try {
      const asUser = t.client();
      assert.equal(await asUser.command(['ACL', 'WHOAMI']), 'gateway');
      const withPassword = t.client({ url: `redis://:pw-default@127.0.0.1:${t.redis.port}` });
      assert.equal(await withPassword.command(['ACL', 'WHOAMI']), 'default');

      // After a reconnect too: a restarted server sees AUTH again before any command.
      await t.redis.restart();
      await waitForStatus(asUser, 'ready');
      assert.equal(await asUser.command(['ACL', 'WHOAMI']), 'gateway');
    } finally {
      await t.done();
    }
  });

  it('reports a wrong password as down with the server error, and never sends commands unauthenticated', async () => {
    const t = await setUp({ password: 'right' });
    try {
      const causes: unknown[] = [];
      const client = t.client({ url: `redis://:wrong@127.0.0.1:${t.redis.port}` });
      client.onStatus((status, cause) => causes.push(cause));
      const error = await unavailable(client.command(['SET', 'k', 'v']), 'connection_lost');
      assert.ok(error.cause instanceof RespError);
      assert.equal(error.cause.prefix, 'WRONGPASS');
      assert.ok(!error.message.includes('wrong'), error.message);
      assert.equal(client.status, 'down');
      assert.ok(causes[0] instanceof RespError);
      await unavailable(client.command(['GET', 'k']), 'down');
      const admin = t.client({ url: `redis://:right@127.0.0.1:${t.redis.port}` });
      assert.equal(await admin.command(['EXISTS', 'k']), 0);
    } finally {
      await t.done();
    }
  });

  it('selects the database from the URL on every connection', async () => {
    const t = await setUp();
    try {
      const db3 = t.client({ url: `${t.redis.url}/3` });
      const db0 = t.client();
      await db3.command(['SET', 'where', 'three']);
      assert.equal(await db0.command(['GET', 'where']), null);
      assert.match(String(await db3.command(['CLIENT', 'INFO'])), / db=3 /);

      await t.redis.restart();
      await waitForStatus(db3, 'ready');
      await waitForStatus(db0, 'ready');
      await db3.command(['SET', 'again', '1']);
      assert.equal(await db0.command(['GET', 'again']), null);
      assert.equal(await db3.command(['GET', 'again']), '1');
    } finally {
      await t.done();
    }
  });

  it('speaks TLS for rediss:// with the CA it is given, and stays down (not crashed) without it', async () => {
    const t = await setUp({ tls: true });
    try {
      assert.ok(t.redis.url.startsWith('rediss://'));
      const trusted = t.client({ ca: t.redis.ca ?? '' });
      assert.equal(await trusted.command(['PING']), 'PONG');
      assert.equal(await trusted.command(['ECHO', 'over tls']), 'over tls');

      const untrusted = t.client();
      const error = await unavailable(untrusted.command(['PING']), 'connection_lost');
      assert.match(String((error.cause as Error).message), /certificate/i);
      assert.equal(untrusted.status, 'down');
    } finally {
      await t.done();
    }
  });

  it('rejects commands within timeoutMs while the server is paused, then fails fast, and recovers on resume', async () => {
    const t = await setUp();
    try {
      const client = t.client({ reconnectMaxMs: 200 });
      assert.equal(await client.command(['PING']), 'PONG');
      t.redis.pause();
      const started = performance.now();
      const results = await Promise.allSettled([client.command(['GET', 'a']), client.batch([['GET', 'b'], ['GET', 'c']])]);
      const elapsed = performance.now() - started;
      assert.ok(elapsed < TIMEOUT_MS + SLACK_MS, `waited ${elapsed} ms`);
      for (const result of results) {
        assert.equal(result.status, 'rejected');
        assert.ok(result.reason instanceof StateUnavailableError);
        assert.equal(result.reason.reason, 'timeout');
      }
      assert.equal(client.status, 'down');
      await unavailable(client.command(['GET', 'a']), 'down');

      t.redis.resume();
      await waitForStatus(client, 'ready');
      assert.equal(await client.command(['PING']), 'PONG');
    } finally {
      t.redis.resume();
      await t.done();
    }
  });

  it('fails fast while the server is stopped and comes back by itself when it restarts', async () => {
    const t = await setUp();
    try {
      const statuses: RespStatus[] = [];
      const client = t.client({ reconnectMaxMs: 200 });
      client.onStatus((status) => statuses.push(status));
      const script = client.script('return ARGV[1]');
      assert.equal(await script.run([], ['before']), 'before');
      await client.command(['SET', 'k', 'v']);

      await t.redis.stop();
      await waitForStatus(client, 'down');
      await unavailable(client.command(['GET', 'k']), 'down');
      await unavailable(script.run([], ['while down']), 'down');

      await t.redis.restart();
      await waitForStatus(client, 'ready');
      // A fresh server: the data and the script cache are gone, and the script is reloaded.
      assert.equal(await client.command(['GET', 'k']), null);
      assert.equal(await script.run([], ['after']), 'after');
      assert.deepEqual(statuses, ['ready', 'down', 'ready']);
    } finally {
      await t.done();
    }
  });

  it('re-subscribes after the server restarts and tells the subscriber to resync', async () => {
    const t = await setUp();
    try {
      const client = t.client({ reconnectMaxMs: 200 });
      const received: string[] = [];
      let confirmations = 0;
      client.subscribe('grants', (message) => received.push(message), { onSubscribed: () => (confirmations += 1) });
      await waitFor('the subscription', () => confirmations === 1);

      await t.redis.restart();
      await waitFor('the subscription again', () => confirmations === 2);
      await waitForStatus(client, 'ready');
      assert.equal(await client.command(['PUBLISH', 'grants', 'approved']), 1);
      await waitFor('the message', () => received.length === 1);
      assert.deepEqual(received, ['approved']);
    } finally {
      await t.done();
    }
  });

  it('notices a silent pub/sub connection by its PING and reconnects it', async () => {
    const t = await setUp();
    try {
      const client = t.client({ healthCheckMs: 50, reconnectMaxMs: 100 });
      let confirmations = 0;
      client.subscribe('c', () => {}, { onSubscribed: () => (confirmations += 1) });
      await waitFor('the subscription', () => confirmations === 1);
      t.redis.pause();
      // Real time: what is tested is the PING's own timeout on a real, silent connection.
      await new Promise((resolve) => setTimeout(resolve, 50 + TIMEOUT_MS + 200));
      t.redis.resume();
      await waitFor('the subscription again', () => confirmations === 2);
    } finally {
      t.redis.resume();
      await t.done();
    }
  });

  it('resets the connection on a reply above maxReplyBytes and carries on', async () => {
    const t = await setUp();
    try {
      const client = t.client({ maxReplyBytes: 1024 * 1024, reconnectMaxMs: 100, timeoutMs: 5000 });
      await client.command(['SET', 'big', Buffer.alloc(2 * 1024 * 1024, 'x')]);
      const error = await unavailable(client.command(['GET', 'big']), 'protocol');
      assert.match(error.message, /larger than 1048576 bytes/);
      await waitForStatus(client, 'ready');
      assert.equal(await client.command(['STRLEN', 'big']), 2 * 1024 * 1024);
    } finally {
      await t.done();
    }
  });

  it('rejects an argument with no RESP form without touching the connection', async () => {
    const t = await setUp();
    try {
      const client = t.client();
      await assert.rejects(client.command(['INCRBY', 'k', Number.NaN]), TypeError);
      assert.equal(await client.command(['PING']), 'PONG');
    } finally {
      await t.done();
    }
  });
});

describe('RESP client against a server that hangs, lies or is not there', { timeout: 60_000 }, () => {
  it('never lets a command wait past timeoutMs while the first connection hangs', async () => {
    const silent = await fakeServer(() => {});
    const client = createRespClient({ url: silent.url, timeoutMs: TIMEOUT_MS, connectTimeoutMs: 5000 });
    try {
      const started = performance.now();
      await unavailable(client.command(['PING']), 'timeout');
      assert.ok(performance.now() - started < TIMEOUT_MS + SLACK_MS);
      assert.equal(client.status, 'connecting');
    } finally {
      await client.close();
      await silent.close();
    }
  });

  it('holds each command to its own deadline, a short one behind a long one included', async () => {
    // Answers the handshake, then nothing: every command waits for its deadline.
    const server = await fakeServer((socket, data) => {
      for (const _ of data.matchAll(/\*1\r\n\$4\r\nPING\r\n/g)) socket.write('+PONG\r\n');
    });
    const client = createRespClient({ url: server.url, timeoutMs: 5000, reconnectMaxMs: 100 });
    try {
      await waitForStatus(client, 'ready');
      const started = performance.now();
      const long = client.command(['GET', 'long']);
      const longFailed = long.then(() => undefined, (error: unknown) => error);
      await unavailable(client.command(['GET', 'short'], { timeoutMs: TIMEOUT_MS }), 'timeout');
      const waited = performance.now() - started;
      assert.ok(waited >= TIMEOUT_MS - 1 && waited < TIMEOUT_MS + SLACK_MS, `short deadline kept: ${waited} ms`);
      // RESP cannot cancel the short one: the connection is dropped, and the long one fails with it, early.
      const error = await longFailed;
      assert.ok(error instanceof StateUnavailableError && error.reason === 'timeout');
      assert.ok(performance.now() - started < 5000);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('resets the connection on a malformed reply, failing only what was on it', async () => {
    let commands = 0;
    const server = await fakeServer((socket, data) => {
      // The handshake PING is answered; the first command after it gets garbage.
      for (const _ of data.matchAll(/\*1\r\n\$4\r\nPING\r\n/g)) socket.write('+PONG\r\n');
      if (data.includes('GET')) {
        commands += 1;
        socket.write(commands === 1 ? '!not resp\r\n' : '$2\r\nok\r\n');
      }
    });
    const client = createRespClient({ url: server.url, timeoutMs: 2000, reconnectMaxMs: 100 });
    try {
      const error = await unavailable(client.command(['GET', 'x']), 'protocol');
      assert.match(error.message, /unknown reply type/);
      await waitForStatus(client, 'ready');
      assert.equal(await client.command(['GET', 'x']), 'ok');
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('sends the commands of one turn of the event loop in one write, not one a callback', async () => {
    const server = await fakeServer((socket, data) => {
      for (const _ of data.matchAll(/\*1\r\n\$4\r\nPING\r\n/g)) socket.write('+PONG\r\n');
      for (const _ of data.matchAll(/\$3\r\nGET\r\n/g)) socket.write('$2\r\nok\r\n');
    });
    const client = createRespClient({ url: server.url, timeoutMs: 2000 });
    const port = Number(new URL(server.url).port);
    // Each write the client's socket hands the kernel: one per _write or _writev call.
    const writes: number[] = [];
    const proto = net.Socket.prototype as unknown as Record<'_write' | '_writev', (this: net.Socket, ...args: unknown[]) => void>;
    const { _write: write, _writev: writev } = proto;
    proto._write = function (...args) {
      if (this.remotePort === port) writes.push(1);
      write.apply(this, args);
    };
    proto._writev = function (...args) {
      if (this.remotePort === port) writes.push((args[0] as unknown[]).length);
      writev.apply(this, args);
    };
    try {
      await waitForStatus(client, 'ready');
      writes.length = 0; // the handshake's
      // Two callbacks of one timers phase, as two requests' events of one poll are: each runs its
      // ticks before the next starts, so a write held only for a tick would leave twice.
      const replies = await new Promise<Array<Promise<unknown>>>((resolve) => {
        const sent: Array<Promise<unknown>> = [];
        setTimeout(() => sent.push(client.command(['GET', 'a'])), 0);
        setTimeout(() => resolve([...sent, client.command(['GET', 'b'])]), 0);
      });
      assert.deepEqual(await Promise.all(replies), ['ok', 'ok']);
      assert.deepEqual(writes, [2]);
    } finally {
      proto._write = write;
      proto._writev = writev;
      await client.close();
      await server.close();
    }
  });

  it('resets the connection when a reply arrives that no command asked for', async () => {
    const server = await fakeServer((socket, data) => {
      if (data.includes('PING')) socket.write('+PONG\r\n+EXTRA\r\n');
    });
    const client = createRespClient({ url: server.url, timeoutMs: 2000 });
    const causes: unknown[] = [];
    client.onStatus((status, cause) => causes.push(cause));
    try {
      await waitFor('a reset', () => causes.some((cause) => cause instanceof StateUnavailableError && cause.reason === 'protocol'));
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('bounds the commands waiting and fails the rest at once', async () => {
    const silent = await fakeServer(() => {});
    const client = createRespClient({ url: silent.url, timeoutMs: 2000, maxPendingCommands: 2 });
    try {
      const first = unavailable(client.command(['GET', 'a']), 'closed');
      const second = unavailable(client.batch([['GET', 'b'], ['GET', 'c']]), 'closed');
      await unavailable(client.command(['GET', 'd']), 'overloaded');
      await client.close();
      await first;
      await second;
      await unavailable(client.command(['GET', 'e']), 'closed');
      assert.equal(client.status, 'down');
    } finally {
      await client.close();
      await silent.close();
    }
  });

  it('goes down without a crash when nothing listens, and keeps trying', async () => {
    const server = await fakeServer(() => {});
    const url = server.url;
    await server.close();
    const causes: unknown[] = [];
    const client = createRespClient({ url, timeoutMs: TIMEOUT_MS, reconnectBaseMs: 10, reconnectMaxMs: 20 });
    client.onStatus((status, cause) => causes.push(cause));
    try {
      await unavailable(client.command(['PING']), 'connection_lost');
      assert.equal(client.status, 'down');
      assert.match(String((causes[0] as Error).message), /ECONNREFUSED/);
      await unavailable(client.command(['PING']), 'down');
    } finally {
      await client.close();
    }
  });
});
