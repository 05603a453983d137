/**
 * A stand-in for V8's heap in the tests of src/common/young-generation.ts and old-generation.ts:
 * the test sets the size the module reads and calls the collections the module observes; what the
 * module sets of V8 is recorded in order.
 */

export interface FakeHeap {
  /** The size the module reads (young generation, or used heap), as the test last set it. */
  size: number;
  /** What the module set of V8 (a growth factor, a growing percent), in order. */
  settings: number[];
  /** Whether the module is observing collections. */
  observing: boolean;
  /** Sets the size, then tells the module a collection happened. */
  collect(size: number): void;
  /** What the module's heap option calls to observe collections. */
  observe(onCollection: () => void): () => void;
}

export function createFakeHeap(size: number): FakeHeap {
  let listener: (() => void) | undefined;
  const heap: FakeHeap = {
    size,
    settings: [],
    observing: false,
    collect(next) {
      heap.size = next;
      listener?.();
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
