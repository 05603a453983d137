import { randomFillSync } from 'node:crypto';

/** Random bytes drawn 64 ids at a time: `randomBytes(12)` alone costs ~4.6 µs, a slice of these ~0.3. */
const POOL = Buffer.alloc(12 * 64);
let used = POOL.length;

/**
 * A fresh id in the providers' style: `prefix` then 24 alphanumeric characters (12 random bytes
 * as hex), e.g. `msg_…`, `chatcmpl-…`, `toolu_…`. The bytes come from the same random source as
 * `randomBytes`, filled in for several ids at once (as Node's `randomUUID` does), each used once.
 */
export function newId(prefix: string): string {
  if (used === POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const id = prefix + POOL.toString('hex', used, used + 12);
  used += 12;
  return id;
}
