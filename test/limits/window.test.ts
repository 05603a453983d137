import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSlidingWindows } from '../../src/limits/window.ts';
import { GatewayError } from '../../src/common/errors.ts';

const MINUTE = 60_000;

test('an amount counts until the end of the granule that holds t + windowMs, and not a millisecond longer', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE });
  assert.equal(windows.granuleMs, 1000);
  for (const addedAt of [0, 1, 500, 999]) {
    const state = windows.create();
    windows.add(state, 0, 1, addedAt);
    assert.equal(windows.total(state, 0, addedAt), 1);
    assert.equal(windows.total(state, 0, addedAt + MINUTE), 1, `added at ${addedAt}: still counted one window later`);
    assert.equal(windows.total(state, 0, 60_999), 1, `added at ${addedAt}: counted at 60 999`);
    assert.equal(windows.total(state, 0, 61_000), 0, `added at ${addedAt}: gone at 61 000`);
  }
});

test('every amount counts for more than windowMs and at most windowMs plus one granule, whatever the alignment', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE });
  for (let addedAt = 1_700_000_000_000; addedAt < 1_700_000_003_000; addedAt += 137) {
    const state = windows.create();
    windows.add(state, 0, 1, addedAt);
    const heldMs = windows.msUntilEmpty(state, 0, addedAt);
    assert.ok(heldMs > MINUTE && heldMs <= MINUTE + windows.granuleMs, `held ${heldMs} ms`);
    assert.equal(windows.total(state, 0, addedAt + MINUTE), 1);
    assert.equal(windows.total(state, 0, addedAt + MINUTE + windows.granuleMs), 0);
  }
});

test('totals follow an exact reference model through random traffic, ring growth and wrap-around', () => {
  const windowMs = 10_000;
  const granules = 10;
  const windows = createSlidingWindows({ windowMs, granules, lanes: 2 });
  const state = windows.create();
  const added: { at: number; lane: number; amount: number }[] = [];
  // A deterministic generator, so a failure can be replayed.
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  let nowMs = 5_000_000;
  for (let step = 0; step < 5_000; step++) {
    // Mostly short gaps, sometimes a pause longer than the window.
    nowMs += random() < 0.02 ? Math.floor(random() * 30_000) : Math.floor(random() * 900);
    const lane = random() < 0.5 ? 0 : 1;
    const amount = 1 + Math.floor(random() * 50);
    windows.add(state, lane, amount, nowMs);
    added.push({ at: nowMs, lane, amount });
    const currentGranule = Math.floor(nowMs / 1000);
    for (const checkLane of [0, 1]) {
      let expected = 0;
      for (const entry of added) {
        if (entry.lane === checkLane && currentGranule - Math.floor(entry.at / 1000) <= granules) expected += entry.amount;
      }
      assert.equal(windows.total(state, checkLane, nowMs), expected, `step ${step}, lane ${checkLane}`);
    }
    assert.ok(state.ring.length <= (granules + 1) * 3, 'the ring never holds more than granules + 1 entries');
  }
});

test('lanes are counted independently', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE, lanes: 2 });
  const state = windows.create();
  windows.add(state, 0, 1, 0);
  windows.add(state, 1, 500, 0);
  windows.add(state, 1, 250, 30_000);
  assert.equal(windows.total(state, 0, 30_000), 1);
  assert.equal(windows.total(state, 1, 30_000), 750);
  assert.equal(windows.total(state, 0, 61_000), 0);
  assert.equal(windows.total(state, 1, 61_000), 250);
});

test('msUntilBelow is the time until enough of the oldest amounts have left', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE });
  const state = windows.create();
  for (let i = 0; i < 30; i++) windows.add(state, 0, 1, i * 10);
  for (let i = 0; i < 30; i++) windows.add(state, 0, 1, 20_000 + i * 10);
  assert.equal(windows.msUntilBelow(state, 0, 60, 30_000), 31_000);
  assert.equal(windows.msUntilBelow(state, 0, 31, 30_000), 31_000);
  assert.equal(windows.msUntilBelow(state, 0, 30, 30_000), 51_000);
  assert.equal(windows.msUntilBelow(state, 0, 61, 30_000), 0);
  assert.equal(windows.msUntilBelow(state, 0, 0, 30_000), Infinity);
  assert.equal(windows.msUntilBelow(state, 0, 60, 30_000 + 31_000), 0, 'the moment it names, there is room');
});

test('msUntilEmpty names the expiry of the newest amount, and 0 when nothing counts', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE, lanes: 2 });
  const state = windows.create();
  assert.equal(windows.msUntilEmpty(state, 0, 0), 0);
  windows.add(state, 0, 1, 2_500);
  windows.add(state, 1, 7, 9_000);
  assert.equal(windows.msUntilEmpty(state, 0, 10_000), 63_000 - 10_000);
  assert.equal(windows.msUntilEmpty(state, 1, 10_000), 70_000 - 10_000);
  assert.equal(windows.msUntilEmpty(state, 0, 63_000), 0);
  assert.equal(windows.msUntilExpiryOfNew(10_400), 71_000 - 10_400);
});

test('adjust changes a granule still in the window, never below zero, and refuses one that has left', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE });
  const state = windows.create();
  const early = windows.add(state, 0, 100, 1_000);
  const late = windows.add(state, 0, 40, 20_000);
  assert.equal(windows.adjust(state, 0, early, -30, 30_000), true);
  assert.equal(windows.total(state, 0, 30_000), 110);
  assert.equal(windows.adjust(state, 0, late, -1_000, 30_000), true);
  assert.equal(windows.total(state, 0, 30_000), 70, 'the late granule is clamped at zero, the early one kept');
  assert.equal(windows.adjust(state, 0, early, 5, 62_000), false, 'the early granule has left the window');
  assert.equal(windows.total(state, 0, 62_000), 0);
  assert.equal(windows.adjust(state, 0, early + 5, 5, 30_000), false, 'a granule that never held anything');
});

test('isEmpty turns true only once every granule has left', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE, lanes: 2 });
  const state = windows.create();
  assert.equal(windows.isEmpty(state, 0), true);
  windows.add(state, 1, 0, 5_000);
  assert.equal(windows.isEmpty(state, 65_999), false);
  assert.equal(windows.isEmpty(state, 66_000), true);
});

test('a clock that steps back adds to the newest granule instead of corrupting the ring', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE });
  const state = windows.create();
  windows.add(state, 0, 1, 10_000);
  assert.equal(windows.add(state, 0, 1, 4_000), 10);
  assert.equal(windows.total(state, 0, 10_000), 2);
  assert.equal(windows.total(state, 0, 71_000), 0);
});

test('methods called without a time use the injected clock', () => {
  let nowMs = 0;
  const windows = createSlidingWindows({ windowMs: MINUTE, now: () => nowMs });
  const state = windows.create();
  windows.add(state, 0, 3);
  nowMs = 60_500;
  assert.equal(windows.total(state, 0), 3);
  assert.equal(windows.msUntilEmpty(state, 0), 500);
  nowMs = 61_000;
  assert.equal(windows.total(state, 0), 0);
  assert.equal(windows.isEmpty(state), true);
});

test('a light key keeps a two-entry ring; a busy one grows to granules + 1 entries and no further', () => {
  const windows = createSlidingWindows({ windowMs: MINUTE, lanes: 2 });
  const light = windows.create();
  windows.add(light, 0, 1, 0);
  windows.add(light, 1, 10, 5_000);
  assert.equal(light.ring.length, 2 * 3);
  const busy = windows.create();
  for (let nowMs = 0; nowMs < 10 * MINUTE; nowMs += 250) windows.add(busy, 0, 1, nowMs);
  assert.equal(busy.ring.length, 61 * 3);
  assert.equal(windows.total(busy, 0, 10 * MINUTE - 250), 61 * 4);
});

test('impossible options are refused with a GatewayError naming the option', () => {
  assert.throws(() => createSlidingWindows({ windowMs: 0 }), (error: unknown) => error instanceof GatewayError && /windowMs/.test(error.message));
  assert.throws(() => createSlidingWindows({ windowMs: MINUTE, granules: 1.5 }), (error: unknown) => error instanceof GatewayError && /granules/.test(error.message));
  assert.throws(() => createSlidingWindows({ windowMs: MINUTE, lanes: 0 }), (error: unknown) => error instanceof GatewayError && /lanes/.test(error.message));
});
