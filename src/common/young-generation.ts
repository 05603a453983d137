/**
 * V8's young generation held near a size unless requests are coming fast, for a long-running
 * server (`llmux serve`).
 *
 * V8 starts each semi-space of the young generation at 1 MB and doubles it, up to 16 MB, whenever
 * enough survives a young collection; it then stays grown. A gateway's burst of requests (a
 * thousand streams opened at once) grows it to the top, and those 32 MB stay resident for the
 * life of the process: in the bench, about 20 KB of RSS per idle stream. Held at 4 MB per
 * semi-space, that figure was 33-40 KB, against 51.5 KB left to V8 (issue 26's twenty-first round).
 *
 * But held at 4 MB under a steady load of small requests, V8 collects the young generation every
 * ~85 requests of 1 KB, and a collection costs about as much whatever the young generation's size
 * (most of it is fixed work; little survives): 7 µs a request of the ~100 a request costs, against
 * 4 µs at 16 MB a semi-space, and `bench/pair.ts` measured the held process 5-7% dearer. The two
 * loads differ in what outlives a collection. A burst of streams opening keeps what it makes: each
 * young collection promotes megabytes (2.4 MB of every 5.5 allocated in the bench), and a larger
 * young generation would only hold those longer before promoting them. Requests coming fast keep
 * next to nothing (16 KB promoted of every 13 MB). So the young generation is let grow as V8 would
 * while its collections are frequent and promote little of what they collect (two looks in a row),
 * and held otherwise.
 *
 * The semi-spaces' largest size is a start-up flag (`--max-semi-space-size`), which a process
 * cannot set for itself once V8 is running. Their growth factor is read at each growth, so it can:
 * after each collection this looks at the young generation's size, the old generation's, and when
 * the young collections came, and sets the factor to 1 (no growth) or back to V8's 2. V8 shrinks
 * the young generation by itself when allocation slows down. A growth between two looks can pass
 * the size by one step. Checked on Node 20, 22 and 24 (V8 11.3, 12.4, 13.6): the factor set at run
 * time stops the growth on each.
 *
 * Left alone when the process was started with a semi-space flag of its own: that choice wins.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** The young generation's size held (both semi-spaces) unless requests are coming fast: 4 MB each. */
export const YOUNG_GENERATION_BYTES = 8 * 1024 * 1024;

/**
 * Young collections are frequent when one semi-space (half the young generation) is allocated at
 * 32 KB a millisecond or faster between two of them: 32 MB a second, about 800 requests of 1 KB
 * (the bench's 1 KB requests allocate 120-400 KB a millisecond, as busy as the machine lets them;
 * its burst of streams about 40). Slower than that, young collections cost under 1% of a CPU at
 * any size, and a larger young generation would be memory kept for nothing.
 */
export const FREQUENT_BYTES_PER_MS = 32 * 1024;

/**
 * Young collections promote little when each moves at most a thirty-second of a semi-space to the
 * old generation (the bench's 1 KB requests: about a five-hundredth; its burst of streams: nearly
 * half; objects kept for two or three collections: a tenth to a third).
 */
export const LITTLE_PROMOTED_SHARE = 1 / 32;

/** Looks in a row whose collections were busy before V8 is let grow the young generation past the size held. */
export const BUSY_LOOKS = 2;

/** V8's own growth factor for the semi-spaces (its `--semi-space-growth-factor` default). */
const V8_GROWTH_FACTOR = 2;

/** The heap's sizes as read after collections. */
export interface HeapSizes {
  /** The young generation's committed size (`new_space`'s `space_size` in `getHeapSpaceStatistics()`). */
  young: number;
  /** The old generation's used size (`old_space`'s `space_used_size`): it grows by what young collections promote. */
  old: number;
}

/** What is read and set of V8, as an option so a test can stand in for it. */
export interface YoungGenerationHeap {
  sizes(): HeapSizes;
  setGrowthFactor(factor: number): void;
  /**
   * Calls `onCollection` after garbage collections (batched) with the start times (ms,
   * `performance.now()`'s clock) of the young ones among them, and whether a full one (which
   * shrinks the old generation) was among them; returns the way to stop.
   */
  afterCollections(onCollection: (scavengeStartsMs: readonly number[], full: boolean) => void): () => void;
}

export interface HoldOptions {
  bytes?: number;
  /** The process's start-up flags: `process.execArgv` and `NODE_OPTIONS`. */
  flags?: readonly string[];
  heap?: YoungGenerationHeap;
}

/**
 * The growth factor for a young generation of `size` bytes held at `bytes`: V8's own below that
 * size, and above it while requests are coming fast (`busy`).
 */
export function growthFactorFor(size: number, bytes: number, busy = false): number {
  return size < bytes || busy ? V8_GROWTH_FACTOR : 1;
}

/**
 * Whether young collections say requests are coming fast: the last came within one semi-space's
 * allocation at `FREQUENT_BYTES_PER_MS` of the one before (`gapMs`), and they promoted at most
 * `LITTLE_PROMOTED_SHARE` of a semi-space each (`promotedEach` bytes).
 */
export function busyCollections(youngSize: number, gapMs: number, promotedEach: number): boolean {
  const semiSpace = youngSize / 2;
  return gapMs > 0 && gapMs * FREQUENT_BYTES_PER_MS <= semiSpace && promotedEach <= semiSpace * LITTLE_PROMOTED_SHARE;
}

/** Whether the process was started with a flag that sizes the young generation. */
export function sizedByFlags(flags: readonly string[]): boolean {
  return flags.some((flag) => /^--(?:(?:max|min)[-_])?semi[-_]space[-_]|^--max[-_]young[-_]generation/.test(flag));
}

/** The flags this process was started with, `NODE_OPTIONS`'s among them. */
export function startFlags(env: Record<string, string | undefined> = process.env): string[] {
  return [...process.execArgv, ...(env['NODE_OPTIONS'] ?? '').split(/\s+/).filter((part) => part !== '')];
}

/**
 * Holds the young generation at about `bytes` unless requests are coming fast, until the returned
 * function is called (which gives V8 its own growth back). Stops by itself, leaving V8's factor, if
 * the young generation grows past the size it was held at: the runtime's V8 does not read the
 * factor as it grows.
 */
export function holdYoungGeneration(options: HoldOptions = {}): () => void {
  const bytes = options.bytes ?? YOUNG_GENERATION_BYTES;
  if (sizedByFlags(options.flags ?? startFlags())) return () => {};
  const heap = options.heap ?? v8Heap();
  let factor = V8_GROWTH_FACTOR;
  let heldAt = 0;
  let stopped = false;
  /** Looks in a row whose young collections were busy. */
  let busyLooks = 0;
  /** When the last young collection began, and the old generation's size after the last look. */
  let lastScavengeMs: number | undefined;
  let lastOld: number | undefined;
  const release = (): void => {
    if (stopped) return;
    stopped = true;
    stopObserving();
    if (factor !== V8_GROWTH_FACTOR) heap.setGrowthFactor(V8_GROWTH_FACTOR);
  };
  const stopObserving = heap.afterCollections((scavengeStartsMs, full) => {
    if (stopped) return;
    const { young, old } = heap.sizes();
    if (factor === 1 && young > heldAt) {
      release();
      return;
    }
    const previousOld = lastOld;
    lastOld = old;
    const count = scavengeStartsMs.length;
    if (count > 0) {
      const previousStart = lastScavengeMs;
      const lastStart = scavengeStartsMs[count - 1] as number;
      lastScavengeMs = lastStart;
      // A full collection shrinks the old generation: what the young ones promoted is unknown, and
      // the verdict stands until the next look.
      if (!full && previousStart !== undefined && previousOld !== undefined) {
        const gapMs = (lastStart - previousStart) / count;
        busyLooks = busyCollections(young, gapMs, Math.max(0, old - previousOld) / count) ? busyLooks + 1 : 0;
      }
    }
    const wanted = growthFactorFor(young, bytes, busyLooks >= BUSY_LOOKS);
    if (wanted === factor) return;
    factor = wanted;
    heldAt = young;
    heap.setGrowthFactor(wanted);
  });
  return release;
}

function v8Heap(): YoungGenerationHeap {
  return {
    sizes() {
      let young = 0;
      let old = 0;
      for (const space of getHeapSpaceStatistics()) {
        if (space.space_name === 'new_space') young = space.space_size;
        else if (space.space_name === 'old_space') old = space.space_used_size;
      }
      return { young, old };
    },
    setGrowthFactor: (factor) => setFlagsFromString(`--semi-space-growth-factor=${factor}`),
    afterCollections(onCollection) {
      const observer = new PerformanceObserver((list) => {
        const starts: number[] = [];
        let full = false;
        for (const entry of list.getEntries()) {
          const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
          if (kind === constants.NODE_PERFORMANCE_GC_MINOR) starts.push(entry.startTime);
          else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) full = true;
        }
        onCollection(starts, full);
      });
      observer.observe({ entryTypes: ['gc'] });
      return () => observer.disconnect();
    },
  };
}
