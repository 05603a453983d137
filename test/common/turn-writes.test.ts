import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { endAtTurnEnd, endPending, holdToTurnEnd } from '../../src/common/turn-writes.ts';
import type { CorkableSocket, EndableResponse } from '../../src/common/turn-writes.ts';

/** A socket that notes its corks and uncorks in one shared list. */
function fakeSocket(name: string, calls: string[]): CorkableSocket & { destroyed: boolean } {
  return {
    destroyed: false,
    cork: () => calls.push(`cork ${name}`),
    uncork: () => calls.push(`uncork ${name}`),
  };
}

const nextTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));
const immediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('holdToTurnEnd', () => {
  it('corks at once and uncorks at the turn\'s end, after its ticks and promises, every socket held in the turn together', async () => {
    const calls: string[] = [];
    const a = fakeSocket('a', calls);
    const b = fakeSocket('b', calls);
    holdToTurnEnd(a);
    await nextTick();
    await Promise.resolve();
    holdToTurnEnd(b);
    holdToTurnEnd(a);
    assert.deepEqual(calls, ['cork a', 'cork b', 'cork a']);
    await immediate();
    // Once per hold, in the order held: Node counts corks, so `a` is written after its second uncork.
    assert.deepEqual(calls, ['cork a', 'cork b', 'cork a', 'uncork a', 'uncork b', 'uncork a']);
  });

  it('leaves a socket destroyed meanwhile alone, and holds from a later turn for that turn\'s end', async () => {
    const calls: string[] = [];
    const gone = fakeSocket('gone', calls);
    const kept = fakeSocket('kept', calls);
    holdToTurnEnd(gone);
    holdToTurnEnd(kept);
    gone.destroyed = true;
    await immediate();
    assert.deepEqual(calls, ['cork gone', 'cork kept', 'uncork kept']);
    holdToTurnEnd(kept);
    assert.deepEqual(calls.slice(3), ['cork kept']);
    await immediate();
    assert.deepEqual(calls.slice(3), ['cork kept', 'uncork kept']);
  });

  it('on a real socket: nothing is sent before the turn ends, and everything after, in order', async () => {
    const received: Buffer[] = [];
    let gotAll!: () => void;
    const all = new Promise<void>((resolve) => { gotAll = resolve; });
    const server = net.createServer((conn) => {
      conn.on('data', (chunk: Buffer) => {
        received.push(chunk);
        if (Buffer.concat(received).toString() === 'head|body') gotAll();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    try {
      holdToTurnEnd(socket);
      socket.write('head|');
      socket.write('body');
      await nextTick();
      assert.equal(socket.writableCorked, 1);
      assert.equal(socket.writableLength, 9, 'nothing left the process before the turn ended');
      await immediate();
      assert.equal(socket.writableCorked, 0);
      assert.equal(socket.writableLength, 0);
      await all;
      assert.equal(Buffer.concat(received).toString(), 'head|body');
    } finally {
      socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

/** A response that notes its end in the shared list. */
function fakeResponse(name: string, calls: string[], fails = false): EndableResponse & { writableEnded: boolean } {
  const res = {
    writableEnded: false,
    end: (body: string | Buffer) => {
      if (fails) throw new Error('cannot end');
      res.writableEnded = true;
      calls.push(`end ${name} ${body.toString()}`);
    },
    destroy: (err?: Error) => calls.push(`destroy ${name} ${err?.message ?? ''}`),
  };
  return res;
}

describe('endAtTurnEnd', () => {
  it('ends each answer at the turn\'s end, after its ticks and promises, in order, before the held sockets are uncorked', async () => {
    const calls: string[] = [];
    const a = fakeResponse('a', calls);
    const b = fakeResponse('b', calls);
    holdToTurnEnd(fakeSocket('s', calls));
    endAtTurnEnd(a, 'one');
    await nextTick();
    await Promise.resolve();
    endAtTurnEnd(b, Buffer.from('two'));
    assert.ok(endPending(a) && endPending(b));
    assert.deepEqual(calls, ['cork s']);
    await immediate();
    assert.deepEqual(calls, ['cork s', 'end a one', 'end b two', 'uncork s']);
    assert.ok(!endPending(a) && !endPending(b));
  });

  it('leaves an answer ended meanwhile alone, and says of no other answer that its end is pending', async () => {
    const calls: string[] = [];
    const ended = fakeResponse('ended', calls);
    endAtTurnEnd(ended, 'late');
    assert.equal(endPending(fakeResponse('other', calls)), false);
    ended.end('first');
    await immediate();
    assert.deepEqual(calls, ['end ended first']);
  });

  it('cuts an answer whose end throws, and still ends the others and uncorks the held sockets', async () => {
    const calls: string[] = [];
    endAtTurnEnd(fakeResponse('bad', calls, true), 'x');
    endAtTurnEnd(fakeResponse('good', calls), 'y');
    holdToTurnEnd(fakeSocket('s', calls));
    await immediate();
    assert.deepEqual(calls, ['cork s', 'destroy bad cannot end', 'end good y', 'uncork s']);
  });

  it('on a real server: the head is written at once and the answer leaves whole at the turn\'s end', async () => {
    let atEnd: { headersSent: boolean; writableEnded: boolean; pending: boolean } | undefined;
    let afterTurn: boolean | undefined;
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '5' });
      endAtTurnEnd(res, 'whole');
      atEnd = { headersSent: res.headersSent, writableEnded: res.writableEnded, pending: endPending(res) };
      setImmediate(() => { afterTurn = res.writableEnded; });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const text = await new Promise<string>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/', agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk; });
          res.once('end', () => resolve(body));
        }).once('error', reject);
      });
      assert.equal(text, 'whole');
      assert.deepEqual(atEnd, { headersSent: true, writableEnded: false, pending: true });
      assert.equal(afterTurn, true);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
