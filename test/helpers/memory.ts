/**
 * Memory after a full collection, for tests that measure what something keeps: `gc` exposed at run
 * time (the test runner does not start node with --expose-gc).
 */
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Bytes of the JavaScript heap in use after a full collection. */
export function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Bytes of Buffers and other ArrayBuffers alive after a full collection (outside the heap). */
export function arrayBuffersAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().arrayBuffers;
}
