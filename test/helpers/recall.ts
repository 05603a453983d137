/** A key's-last-turn memory (src/common/json-recall.ts) that counts the reads it served, for tests that must see it used. */
import { createJsonRecall } from '../../src/common/json-recall.ts';
import type { JsonRecall, RecallOptions } from '../../src/common/json-recall.ts';

export function countingRecall(options?: RecallOptions): { memory: JsonRecall; served(): number } {
  const memory = createJsonRecall(options);
  let served = 0;
  return {
    memory: { ...memory, recall: (...args) => { const read = memory.recall(...args); if (read !== undefined) served++; return read; } },
    served: () => served,
  };
}
