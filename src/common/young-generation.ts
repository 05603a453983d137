/**
 * V8's young generation held near a size, for a long-running server (`llmux serve`).
 *
 * V8 starts each semi-space of the young generation at 1 MB and doubles it, up to 16 MB, whenever
 * enough survives a young collection; it then stays grown. A gateway's burst of requests (a
 * thousand streams opened at once, a run of 200 KB agent turns) grows it to the top, and those
 * 32 MB stay resident for the life of the process: in the bench, about 20 KB of RSS per idle
 * stream. Holding it at 4 MB per semi-space took that figure from 58–59 to 38–40 KB per stream,
 * with CPU per request within the machine's noise (bench/what-is-left.md). Measured again in issue
 * 26's twentieth round, the bench's burst no longer grows it (34.3, 33.6 and 33.8 KB per idle
 * stream held at 4, 8 and 16 MB), and 8 MB measured no cheaper on a 1 KB request: what the hold
 * still bounds is the resident size a busy process keeps after a burst that does.
 *
 * The semi-spaces' largest size is a start-up flag (`--max-semi-space-size`), which a process
 * cannot set for itself once V8 is running. Their growth factor is read at each growth, so it can:
 * after each collection this looks at the young generation's size and sets the factor to 1 (no
 * growth) once the size is reached, and back to V8's 2 when V8 has shrunk it below (it does when
 * allocation slows down). A growth between two looks can pass the size by one step. Checked on
 * Node 20, 22 and 24 (V8 11.3, 12.4, 13.6): the factor set at run time stops the growth on each.
 *
 * Left alone when the process was started with a semi-space flag of its own: that choice wins.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** The young generation's size held (both semi-spaces): 4 MB each. */
export const YOUNG_GENERATION_BYTES = 8 * 1024 * 1024;

/** V8's own growth factor for the semi-spaces (its `--semi-space-growth-factor` default). */
const V8_GROWTH_FACTOR = 2;

/** What is read and set of V8, as an option so a test can stand in for it. */
export interface YoungGenerationHeap {
  /** The young generation's committed size (`new_space` in `getHeapSpaceStatistics()`). */
  size(): number;
  setGrowthFactor(factor: number): void;
  /** Calls `onCollection` after garbage collections (batched); returns the way to stop. */
  afterCollections(onCollection: () => void): () => void;
}

export interface HoldOptions {
  bytes?: number;
  /** The process's start-up flags: `process.execArgv` and `NODE_OPTIONS`. */
  flags?: readonly string[];
  heap?: YoungGenerationHeap;
}

/** The growth factor for a young generation of `size` bytes held at `bytes`. */
export function growthFactorFor(size: number, bytes: number): number {
  return size >= bytes ? 1 : V8_GROWTH_FACTOR;
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
 * Holds the young generation at about `bytes` until the returned function is called (which gives
 * V8 its own growth back). Stops by itself, leaving V8's factor, if the young generation grows
 * past the size it was held at: the runtime's V8 does not read the factor as it grows.
 */
export function holdYoungGeneration(options: HoldOptions = {}): () => void {
  const bytes = options.bytes ?? YOUNG_GENERATION_BYTES;
  if (sizedByFlags(options.flags ?? startFlags())) return () => {};
  const heap = options.heap ?? v8Heap();
  let factor = V8_GROWTH_FACTOR;
  let heldAt = 0;
  let stopped = false;
  const release = (): void => {
    if (stopped) return;
    stopped = true;
    stopObserving();
    if (factor !== V8_GROWTH_FACTOR) heap.setGrowthFactor(V8_GROWTH_FACTOR);
  };
  const stopObserving = heap.afterCollections(() => {
    if (stopped) return;
    const size = heap.size();
    if (factor === 1 && size > heldAt) {
      release();
      return;
    }
    const wanted = growthFactorFor(size, bytes);
    if (wanted === factor) return;
    factor = wanted;
    heldAt = size;
    heap.setGrowthFactor(wanted);
  });
  return release;
}

function v8Heap(): YoungGenerationHeap {
  return {
    size: () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0,
    setGrowthFactor: (factor) => setFlagsFromString(`--semi-space-growth-factor=${factor}`),
    afterCollections(onCollection) {
      const observer = new PerformanceObserver(onCollection);
      observer.observe({ entryTypes: ['gc'] });
      return () => observer.disconnect();
    },
  };
}
