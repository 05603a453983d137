/**
 * V8's old generation given room to grow while it is small, for a long-running server (`llmux
 * serve`), so that a run of large requests does not bring a full collection every few dozen.
 *
 * Why: V8 starts marking the old generation once it, plus the external memory allocated since the
 * last full collection (the Buffers a request reads and writes), reaches a limit set after each full
 * collection at what lived through it times a growing factor that V8 picks from how fast it
 * collects against how fast the program allocates. Under 200 KB agent turns llmux's old generation
 * is 10–20 MB and each turn allocates 400–650 KB of Buffers, of which what is in flight when a young
 * collection comes is promoted and freed only by a full one. The old generation itself grows slowly
 * there, so V8 picked a low factor (1.4–2.9), and a full collection (marking and sweeping on V8's
 * threads, counted in the process's CPU) came every 100–300 requests. V8's `--heap-growing-percent`, read each time a limit is set, fixes the factor: at 300
 * (a factor of 4, the largest V8 picks itself) those turns brought 3–8 times fewer full collections
 * and cost 8–12% less CPU per request, with the 1 KB requests unchanged (bench/what-is-left.md).
 *
 * The room is bounded: the factor is fixed only while what a full collection left is under
 * {@link SMALL_OLD_GENERATION_BYTES}; above it V8 picks its own again, so a gateway holding much
 * (stored responses, many keys) is not let grow to four times that for long. Left alone when the process
 * was started with `--heap-growing-percent` of its own.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { startFlags } from './young-generation.ts';

/** The growing percent while the old generation is small: a factor of 4. */
export const ROOMY_GROWING_PERCENT = 300;

/**
 * Above this much left by a full collection, V8's own factor again, from the next full collection
 * on (the limit of the one that saw it is already set at four times): the limits set with the room
 * stay under about 64 MB, a heap that holds more is V8's to size. Under 25 s of refused 100 KB
 * requests, with 7–8 MB left by each full collection: 3 full collections and a 33 MB heap at most
 * with the room, 29 and 27 MB with V8's own factor.
 */
export const SMALL_OLD_GENERATION_BYTES = 16 * 1024 * 1024;

/** What is read and set of V8, as an option so a test can stand in for it. */
export interface OldGenerationHeap {
  /** The heap's used size, read just after a full collection: about what lived through it. */
  usedSize(): number;
  /** Sets V8's `--heap-growing-percent` (0: V8 picks its own factor). */
  setGrowingPercent(percent: number): void;
  /** Calls `onCollection` after full collections (batched); returns the way to stop. */
  afterFullCollections(onCollection: () => void): () => void;
}

export interface RoomOptions {
  /** The process's start-up flags: `process.execArgv` and `NODE_OPTIONS`. */
  flags?: readonly string[];
  heap?: OldGenerationHeap;
}

/** The growing percent for an old generation that a full collection left at `used` bytes. */
export function growingPercentFor(used: number): number {
  return used < SMALL_OLD_GENERATION_BYTES ? ROOMY_GROWING_PERCENT : 0;
}

/** Whether the process was started with a flag that sets the growing percent. */
export function growingSetByFlags(flags: readonly string[]): boolean {
  return flags.some((flag) => /^--heap[-_]growing[-_]percent/.test(flag));
}

/**
 * Gives the old generation room while it is small, until the returned function is called (which
 * gives V8 its own factor back).
 */
export function roomyOldGeneration(options: RoomOptions = {}): () => void {
  if (growingSetByFlags(options.flags ?? startFlags())) return () => {};
  const heap = options.heap ?? v8Heap();
  let percent = ROOMY_GROWING_PERCENT;
  heap.setGrowingPercent(percent);
  const stopObserving = heap.afterFullCollections(() => {
    const wanted = growingPercentFor(heap.usedSize());
    if (wanted === percent) return;
    percent = wanted;
    heap.setGrowingPercent(wanted);
  });
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    stopObserving();
    if (percent !== 0) heap.setGrowingPercent(0);
  };
}

function v8Heap(): OldGenerationHeap {
  return {
    usedSize: () => getHeapStatistics().used_heap_size,
    setGrowingPercent: (percent) => setFlagsFromString(`--heap-growing-percent=${percent}`),
    afterFullCollections(onCollection) {
      const observer = new PerformanceObserver((list) => {
        if (list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) onCollection();
      });
      observer.observe({ entryTypes: ['gc'] });
      return () => observer.disconnect();
    },
  };
}
