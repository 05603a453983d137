import assert from 'node:assert/strict';
import { test } from 'node:test';
import { YOUNG_GENERATION_BYTES, growthFactorFor, holdYoungGeneration, sizedByFlags, startFlags } from '../../src/common/young-generation.ts';
import type { YoungGenerationHeap } from '../../src/common/young-generation.ts';
import { createFakeHeap } from '../helpers/fake-heap.ts';

const MB = 1024 * 1024;

/** V8's young generation as the test sets it; the growth factors the hold sets, in `factors`. */
function fakeHeap(): YoungGenerationHeap & { factors: number[]; collect(size: number): void; readonly observing: boolean } {
  const fake = createFakeHeap(2 * MB);
  return {
    factors: fake.settings,
    collect: fake.collect,
    get observing() {
      return fake.observing;
    },
    size: () => fake.size,
    setGrowthFactor: (factor) => void fake.settings.push(factor),
    afterCollections: fake.observe,
  };
}

test('the factor stops growth at the size held, and gives V8 its own below it', () => {
  assert.equal(growthFactorFor(2 * MB, 8 * MB), 2);
  assert.equal(growthFactorFor(8 * MB, 8 * MB), 1);
  assert.equal(growthFactorFor(32 * MB, 8 * MB), 1);
  assert.equal(YOUNG_GENERATION_BYTES, 8 * MB);
});

test('the young generation is held once it reaches the size, let grow again when V8 shrinks it, and given back on release', () => {
  const heap = fakeHeap();
  const release = holdYoungGeneration({ heap, flags: [] });
  heap.collect(2 * MB);
  heap.collect(4 * MB);
  assert.deepEqual(heap.factors, [], 'below the size V8 grows it as it would');
  heap.collect(8 * MB);
  assert.deepEqual(heap.factors, [1]);
  heap.collect(8 * MB);
  assert.deepEqual(heap.factors, [1], 'set once, not on every collection');
  heap.collect(2 * MB);
  assert.deepEqual(heap.factors, [1, 2], 'shrunk by V8: it may grow back to the size');
  heap.collect(16 * MB);
  assert.deepEqual(heap.factors, [1, 2, 1], 'a growth between two looks passes the size by a step, and is held there');
  release();
  assert.deepEqual(heap.factors, [1, 2, 1, 2]);
  assert.equal(heap.observing, false);
  release();
  assert.deepEqual(heap.factors, [1, 2, 1, 2], 'released once');
});

test('a V8 that does not read the factor as it grows: the hold stops and leaves V8 its factor', () => {
  const heap = fakeHeap();
  holdYoungGeneration({ heap, flags: [] });
  heap.collect(8 * MB);
  heap.collect(16 * MB);
  assert.deepEqual(heap.factors, [1, 2]);
  assert.equal(heap.observing, false);
  heap.collect(4 * MB);
  heap.collect(32 * MB);
  assert.deepEqual(heap.factors, [1, 2]);
});

test('a process started with a semi-space flag of its own is left alone', () => {
  for (const flag of ['--max-semi-space-size=2', '--max_semi_space_size=2', '--min-semi-space-size=1', '--semi-space-growth-factor=4', '--max-young-generation-size=8']) {
    assert.equal(sizedByFlags(['--enable-source-maps', flag]), true, flag);
    const heap = fakeHeap();
    holdYoungGeneration({ heap, flags: [flag] });
    assert.equal(heap.observing, false, flag);
  }
  assert.equal(sizedByFlags(['--max-old-space-size=512', '--expose-gc', '--semi']), false);
  assert.ok(startFlags({ NODE_OPTIONS: ' --max-semi-space-size=1  --trace-gc ' }).includes('--max-semi-space-size=1'));
  assert.equal(startFlags({}).length, process.execArgv.length);
});
