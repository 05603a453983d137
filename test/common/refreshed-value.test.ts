import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRefreshedValue } from '../../src/common/refreshed-value.ts';

interface Held { n: number; freshUntil: number; usableUntil: number }

function holder(load: () => Promise<Held>, clock: { now: number }) {
  return createRefreshedValue<Held>({ load, isFresh: (v) => v.freshUntil > clock.now, isUsable: (v) => v.usableUntil > clock.now });
}

test('nothing is loaded before the first get, and a fresh value is reused', async () => {
  const clock = { now: 0 };
  let loads = 0;
  const value = holder(async () => ({ n: ++loads, freshUntil: 10, usableUntil: 20 }), clock);
  assert.equal(loads, 0);
  assert.equal((await value.get()).n, 1);
  clock.now = 9;
  assert.equal((await value.get()).n, 1);
  assert.equal(loads, 1);
});

test('a stale value is refreshed once for every caller waiting at the same time', async () => {
  const clock = { now: 0 };
  let loads = 0;
  const value = holder(async () => {
    await new Promise((r) => setImmediate(r));
    return { n: ++loads, freshUntil: clock.now + 10, usableUntil: clock.now + 20 };
  }, clock);
  await value.get();
  clock.now = 15;
  const all = await Promise.all(Array.from({ length: 50 }, () => value.get()));
  assert.ok(all.every((v) => v.n === 2));
  assert.equal(loads, 2);
});

test('a failed refresh hands out the held value while it works, then throws to every waiter, and the next get tries again', async () => {
  const clock = { now: 0 };
  let fail = false;
  let loads = 0;
  const value = holder(async () => {
    loads += 1;
    if (fail) throw new Error('endpoint down');
    return { n: loads, freshUntil: clock.now + 10, usableUntil: clock.now + 20 };
  }, clock);
  await value.get();
  fail = true;
  clock.now = 15;
  assert.equal((await value.get()).n, 1);
  clock.now = 25;
  const results = await Promise.allSettled([value.get(), value.get()]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  fail = false;
  assert.ok((await value.get()).n > 1);
});

test('a dropped value is refreshed by the next get, once however many drop it, and a replaced one is not dropped', async () => {
  const clock = { now: 0 };
  let loads = 0;
  const value = holder(async () => {
    await new Promise((r) => setImmediate(r));
    return { n: ++loads, freshUntil: 100, usableUntil: 200 };
  }, clock);
  const first = await value.get();
  value.drop(first);
  value.drop(first);
  const after = await Promise.all(Array.from({ length: 10 }, () => value.get()));
  assert.ok(after.every((v) => v.n === 2));
  value.drop(first);
  assert.equal((await value.get()).n, 2, 'the old value was already replaced: nothing is refreshed');
  assert.equal(loads, 2);
});
