import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { holdToTurnEnd } from '../../src/common/turn-writes.ts';
import type { CorkableSocket } from '../../src/common/turn-writes.ts';

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
