/**
 * A stand-in for V8's heap in the tests of src/common/young-generation.ts and old-generation.ts:
 * the test sets the size the module reads and calls the collections the module observes, with
 * what the module's observer is told of them (`Details`: nothing for old-generation.ts, the young
 * collections' start times and whether a full one was among them for young-generation.ts); what
 * the module sets of V8 is recorded in order.
 */

export interface FakeHeap<Details extends unknown[] = []> {
  /** The size the module reads (young generation, or used heap), as the test last set it. */
  size: number;
  /** What the module set of V8 (a growth factor, a growing percent), in order. */
  settings: number[];
  /** Whether the module is observing collections. */
  observing: boolean;
  /** Sets the size, then tells the module a collection happened. */
  collect(size: number, ...details: Details): void;
  /** What the module's heap option calls to observe collections. */
  observe(onCollection: (...details: Details) => void): () => void;
}

export function createFakeHeap<Details extends unknown[] = []>(size: number): FakeHeap<Details> {
  let listener: ((...details: Details) => void) | undefined;
  const heap: FakeHeap<Details> = {
    size,
    settings: [],
    observing: false,
    collect(next, ...details) {
      heap.size = next;
      listener?.(...details);
    },
    observe(onCollection) {
      listener = onCollection;
      heap.observing = true;
      return () => {
        heap.observing = false;
        listener = undefined;
      };
    },
  };
  return heap;
}
