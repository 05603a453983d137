import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROOMY_GROWING_PERCENT, SMALL_OLD_GENERATION_BYTES, growingPercentFor, growingSetByFlags, roomyOldGeneration } from '../../src/common/old-generation.ts';
import type { OldGenerationHeap } from '../../src/common/old-generation.ts';
import { createFakeHeap } from '../helpers/fake-heap.ts';

const MB = 1024 * 1024;

/** V8's used heap as the test sets it; the growing percents the module sets, in `percents`. */
function fakeHeap(): OldGenerationHeap & { percents: number[]; collect(used: number): void; readonly observing: boolean } {
  const fake = createFakeHeap(8 * MB);
  return {
    percents: fake.settings,
    collect: fake.collect,
    get observing() {
      return fake.observing;
    },
    usedSize: () => fake.size,
    setGrowingPercent: (percent) => void fake.settings.push(percent),
    afterFullCollections: fake.observe,
  };
}

test('the percent is the roomy one while what a full collection left is small, V8 own above', () => {
  assert.equal(ROOMY_GROWING_PERCENT, 300);
  assert.equal(growingPercentFor(10 * MB), 300);
  assert.equal(growingPercentFor(SMALL_OLD_GENERATION_BYTES - 1), 300);
  assert.equal(growingPercentFor(SMALL_OLD_GENERATION_BYTES), 0);
  assert.equal(growingPercentFor(200 * MB), 0);
});

test('set at once, given back to V8 when the old generation grows large, taken again when it is small, released once', () => {
  const heap = fakeHeap();
  const release = roomyOldGeneration({ heap, flags: [] });
  assert.deepEqual(heap.percents, [300], 'from the start: a gateway starts small');
  heap.collect(12 * MB);
  heap.collect(15 * MB);
  assert.deepEqual(heap.percents, [300], 'set once, not at every collection');
  heap.collect(40 * MB);
  assert.deepEqual(heap.percents, [300, 0], 'large: V8 picks its own factor, so the limit is never four times a large heap');
  heap.collect(50 * MB);
  assert.deepEqual(heap.percents, [300, 0]);
  heap.collect(10 * MB);
  assert.deepEqual(heap.percents, [300, 0, 300]);
  release();
  assert.deepEqual(heap.percents, [300, 0, 300, 0]);
  assert.equal(heap.observing, false);
  release();
  assert.deepEqual(heap.percents, [300, 0, 300, 0], 'released once');
});

test('released while V8 has its own factor: nothing to give back', () => {
  const heap = fakeHeap();
  const release = roomyOldGeneration({ heap, flags: [] });
  heap.collect(64 * MB);
  release();
  assert.deepEqual(heap.percents, [300, 0]);
});

test('a process started with a growing percent of its own is left alone', () => {
  for (const flag of ['--heap-growing-percent=50', '--heap_growing_percent=50']) {
    assert.equal(growingSetByFlags(['--enable-source-maps', flag]), true, flag);
    const heap = fakeHeap();
    roomyOldGeneration({ heap, flags: [flag] });
    assert.equal(heap.observing, false, flag);
    assert.deepEqual(heap.percents, [], flag);
  }
  assert.equal(growingSetByFlags(['--max-old-space-size=512', '--max-semi-space-size=2']), false);
});
