/**
 * Chunk splitters for stream tests: the same bytes cut at every offset, or into seeded random
 * small pieces, so a parser or translator can be shown to give the same result for any split.
 */

/** The two pieces of `bytes` cut at `offset` (either may be empty). */
export function splitAt<T extends Uint8Array>(bytes: T, offset: number): T[] {
  // subarray of a Buffer is a Buffer; the cast keeps that for callers that need Buffers.
  return [bytes.subarray(0, offset) as T, bytes.subarray(offset) as T];
}

/** Every way to cut `bytes` in two: offsets 0..length, both ends included. */
export function* everySplit<T extends Uint8Array>(bytes: T): Generator<{ offset: number; pieces: T[] }> {
  for (let offset = 0; offset <= bytes.length; offset += 1) yield { offset, pieces: splitAt(bytes, offset) };
}

/** A small deterministic PRNG (mulberry32): the same seed gives the same pieces on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `bytes` cut into pieces of 1..maxPieceBytes bytes, sizes drawn from `seed`. */
export function randomPieces<T extends Uint8Array>(bytes: T, seed: number, maxPieceBytes = 16): T[] {
  const random = seededRandom(seed);
  const pieces: T[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const size = 1 + Math.floor(random() * maxPieceBytes);
    pieces.push(bytes.subarray(offset, offset + size) as T);
    offset += size;
  }
  return pieces;
}
