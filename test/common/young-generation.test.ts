import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  FREQUENT_BYTES_PER_MS,
  LITTLE_PROMOTED_SHARE,
  YOUNG_GENERATION_BYTES,
  busyCollections,
  growthFactorFor,
  holdYoungGeneration,
  sizedByFlags,
  startFlags,
} from '../../src/common/young-generation.ts';
import type { YoungGenerationHeap } from '../../src/common/young-generation.ts';
import { createFakeHeap } from '../helpers/fake-heap.ts';

const MB = 1024 * 1024;
const KB = 1024;

/**
 * What a look after collections sees: the young generation's size, the old one's (set, or grown
 * by what was `promoted`), when the young collections began, whether a full one was among them.
 */
interface Look {
  young: number;
  old?: number;
  promoted?: number;
  starts?: number[];
  full?: boolean;
}

/** V8's heap as the test sets it; the growth factors the hold sets, in `factors`. */
function fakeHeap(): YoungGenerationHeap & { factors: number[]; collect(look: Look): void; readonly observing: boolean } {
  const fake = createFakeHeap<[readonly number[], boolean]>(2 * MB);
  let old = 20 * MB;
  return {
    factors: fake.settings,
    collect(look) {
      old = look.old ?? old + (look.promoted ?? 0);
      fake.collect(look.young, look.starts ?? [], look.full ?? false);
    },
    get observing() {
      return fake.observing;
    },
    sizes: () => ({ young: fake.size, old }),
    setGrowthFactor: (factor) => void fake.settings.push(factor),
    afterCollections: fake.observe,
  };
}

/**
 * Looks after young collections `gapMs` apart that each promote `promoted` bytes, at a young
 * generation of `young` bytes, from `atMs` on; returns when the next would begin.
 */
function collections(heap: ReturnType<typeof fakeHeap>, young: number, count: number, gapMs: number, promoted: number, atMs: number): number {
  let at = atMs;
  for (let i = 0; i < count; i++) {
    heap.collect({ young, promoted, starts: [at] });
    at += gapMs;
  }
  return at;
}

test('the factor stops growth at the size held unless requests are coming fast, and gives V8 its own below it', () => {
  assert.equal(growthFactorFor(2 * MB, 8 * MB), 2);
  assert.equal(growthFactorFor(8 * MB, 8 * MB), 1);
  assert.equal(growthFactorFor(32 * MB, 8 * MB), 1);
  assert.equal(growthFactorFor(8 * MB, 8 * MB, true), 2);
  assert.equal(growthFactorFor(16 * MB, 8 * MB, true), 2);
  assert.equal(YOUNG_GENERATION_BYTES, 8 * MB);
});

test('collections are busy when they come fast and promote little, as under small requests; not in a burst of streams', () => {
  // The bench's 1 KB requests at 4 MB a semi-space: one every 8 ms, 6 KB promoted.
  assert.equal(busyCollections(8 * MB, 8, 6 * KB), true);
  // The same on a machine four times slower, and at 16 MB a semi-space (one every 60 ms, 16 KB promoted).
  assert.equal(busyCollections(8 * MB, 32, 6 * KB), true);
  assert.equal(busyCollections(32 * MB, 60, 16 * KB), true);
  // The bench's burst of 1,000 streams: one every 100-350 ms, 2.4 MB promoted each.
  assert.equal(busyCollections(8 * MB, 150, 2.4 * MB), false);
  // Promoting much, however fast they come; coming slowly, however little they promote.
  assert.equal(busyCollections(8 * MB, 8, 2.4 * MB), false);
  assert.equal(busyCollections(8 * MB, 500, 0), false);
  // The edges: a semi-space allocated at exactly the rate, an eighth of one promoted.
  const semi = 4 * MB;
  assert.equal(busyCollections(8 * MB, semi / FREQUENT_BYTES_PER_MS, semi * LITTLE_PROMOTED_SHARE), true);
  assert.equal(busyCollections(8 * MB, semi / FREQUENT_BYTES_PER_MS + 1, 0), false);
  assert.equal(busyCollections(8 * MB, 8, semi * LITTLE_PROMOTED_SHARE + 1), false);
  assert.equal(busyCollections(8 * MB, 0, 0), false, 'no time between them: nothing to go by');
});

test('the young generation is held once it reaches the size, let grow again when V8 shrinks it, and given back on release', () => {
  const heap = fakeHeap();
  const release = holdYoungGeneration({ heap, flags: [] });
  heap.collect({ young: 2 * MB });
  heap.collect({ young: 4 * MB });
  assert.deepEqual(heap.factors, [], 'below the size V8 grows it as it would');
  heap.collect({ young: 8 * MB });
  assert.deepEqual(heap.factors, [1]);
  heap.collect({ young: 8 * MB });
  assert.deepEqual(heap.factors, [1], 'set once, not on every collection');
  heap.collect({ young: 2 * MB });
  assert.deepEqual(heap.factors, [1, 2], 'shrunk by V8: it may grow back to the size');
  heap.collect({ young: 16 * MB });
  assert.deepEqual(heap.factors, [1, 2, 1], 'a growth between two looks passes the size by a step, and is held there');
  release();
  assert.deepEqual(heap.factors, [1, 2, 1, 2]);
  assert.equal(heap.observing, false);
  release();
  assert.deepEqual(heap.factors, [1, 2, 1, 2], 'released once');
});

test('requests coming fast let it grow past the size; a burst that keeps what it makes, or a slow trickle, holds it', () => {
  const heap = fakeHeap();
  holdYoungGeneration({ heap, flags: [] });
  heap.collect({ young: 8 * MB, starts: [0] });
  assert.deepEqual(heap.factors, [1], 'held: one collection says nothing of how fast they come');
  let at = collections(heap, 8 * MB, 1, 8, 6 * KB, 8);
  assert.deepEqual(heap.factors, [1], 'one look is not enough');
  at = collections(heap, 8 * MB, 2, 8, 6 * KB, at);
  assert.deepEqual(heap.factors, [1, 2], 'two looks in a row at collections every 8 ms promoting 6 KB: V8 may grow it');
  at = collections(heap, 16 * MB, 3, 16, 10 * KB, at);
  at = collections(heap, 32 * MB, 3, 30, 16 * KB, at);
  assert.deepEqual(heap.factors, [1, 2], 'grown by V8 while busy: no release, no hold');
  // The same process, now opening streams that stay open: each collection promotes megabytes.
  at = collections(heap, 32 * MB, 2, 150, 6 * MB, at);
  assert.deepEqual(heap.factors, [1, 2, 1], 'held where it is');
  // V8 shrinks it as allocation slows; below the size it may grow again, at the size it is held.
  heap.collect({ young: 4 * MB, starts: [at + 2000] });
  heap.collect({ young: 8 * MB, starts: [at + 4000] });
  assert.deepEqual(heap.factors, [1, 2, 1, 2, 1], 'a trickle (a collection every 2 s) does not count as busy');
  assert.equal(heap.observing, true);
});

test('several collections in one look are averaged; a full collection leaves the verdict as it was', () => {
  const heap = fakeHeap();
  holdYoungGeneration({ heap, flags: [] });
  heap.collect({ young: 8 * MB, old: 20 * MB, starts: [0] });
  heap.collect({ young: 8 * MB, old: 20 * MB + 30 * KB, starts: [10, 20, 30] });
  assert.deepEqual(heap.factors, [1], 'one busy look is not enough');
  heap.collect({ young: 8 * MB, old: 20 * MB + 60 * KB, starts: [40, 50, 60] });
  assert.deepEqual(heap.factors, [1, 2], 'two looks in a row of three collections 10 ms apart, 10 KB promoted each');
  heap.collect({ young: 8 * MB, old: 20 * MB + 460 * KB, starts: [70, 80] });
  assert.deepEqual(heap.factors, [1, 2, 1], '200 KB promoted by each of two collections: held');
  heap.collect({ young: 8 * MB, old: 20 * MB + 470 * KB, starts: [90] });
  // A full collection shrank the old generation: what the young ones promoted is unknown.
  heap.collect({ young: 8 * MB, old: 12 * MB, starts: [100], full: true });
  assert.deepEqual(heap.factors, [1, 2, 1], 'the verdict stands (one busy look so far)');
  heap.collect({ young: 8 * MB, old: 12 * MB + 10 * KB, starts: [110] });
  assert.deepEqual(heap.factors, [1, 2, 1, 2], 'measured again from the size the full collection left');
  // Looks with no young collection (a full one alone) change nothing.
  heap.collect({ young: 8 * MB, old: 10 * MB, full: true });
  assert.deepEqual(heap.factors, [1, 2, 1, 2]);
});

test('a V8 that does not read the factor as it grows: the hold stops and leaves V8 its factor', () => {
  const heap = fakeHeap();
  holdYoungGeneration({ heap, flags: [] });
  heap.collect({ young: 8 * MB });
  heap.collect({ young: 16 * MB });
  assert.deepEqual(heap.factors, [1, 2]);
  assert.equal(heap.observing, false);
  heap.collect({ young: 4 * MB });
  heap.collect({ young: 32 * MB });
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
