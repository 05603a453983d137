/**
 * The young generation held in a real V8 (src/common/young-generation.ts): a child process keeps
 * enough alive across young collections that V8 would grow the young generation to its top
 * (32 MB); held, it stays at the size held, give or take the one step a growth between two looks
 * may take. The same child without the hold is the control: it must grow past that. And a child
 * that allocates fast and keeps each object only a little while, as requests coming fast do, is
 * let grow it past the size held.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { YOUNG_GENERATION_BYTES } from '../../src/common/young-generation.ts';

const MODULE = pathToFileURL(new URL('../../src/common/young-generation.ts', import.meta.url).pathname).href;

/**
 * The largest young generation a child reached under a load that keeps `keep` objects of the last
 * made alive (`load` 'streams': 60,000 and more, as streams that stay open; 'requests': the last
 * 3,000, as requests in flight), with the hold or without.
 */
function largestYoungGeneration(hold: boolean, load: 'streams' | 'requests' = 'streams'): number {
  const script = `
    import v8 from 'node:v8';
    import { holdYoungGeneration } from ${JSON.stringify(MODULE)};
    if (${hold}) holdYoungGeneration({ flags: [] });
    const streams = ${load === 'streams'};
    const kept = [];
    let largest = 0;
    for (let round = 0; round < (streams ? 300 : 3000); round++) {
      for (let i = 0; i < 3000; i++) kept.push({ a: i, b: 'x' + i, c: [i, round] });
      if (!streams) kept.splice(0, kept.length - 3000);
      else if (kept.length > 60000) kept.splice(0, 15000);
      await new Promise((resolve) => setImmediate(resolve));
      largest = Math.max(largest, v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size);
      if (!streams && largest > 2 * ${YOUNG_GENERATION_BYTES}) break;
    }
    process.stdout.write(String(largest));`;
  const env = { ...process.env, NODE_OPTIONS: '' };
  return Number(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 60_000 }));
}

test('held, the young generation stays near the size; not held, the same load grows it past', () => {
  const held = largestYoungGeneration(true);
  const free = largestYoungGeneration(false);
  assert.ok(held <= 2 * YOUNG_GENERATION_BYTES, `held: ${held} bytes`);
  assert.ok(free > 2 * YOUNG_GENERATION_BYTES, `not held: ${free} bytes (the load no longer grows it: the test proves nothing)`);
});

test('requests coming fast, each kept a little while: the young generation grows past the size held', () => {
  const grown = largestYoungGeneration(true, 'requests');
  assert.ok(grown > 2 * YOUNG_GENERATION_BYTES, `held under requests coming fast: ${grown} bytes`);
});
