/**
 * The old generation's room in a real V8 (src/common/old-generation.ts): a child process that
 * allocates little between full collections, as a gateway between requests does, so V8 picks a low
 * growing factor for it; given room, every limit V8 sets after a full collection is four times
 * what lived through it. Read from V8's own trace (`--trace-gc-verbose`: "[HeapController] Limit:
 * old size: …, new limit: … (factor)"). The same child without the room is the control: V8 must
 * pick a lower factor there, or the test proves nothing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const MODULE = pathToFileURL(new URL('../../src/common/old-generation.ts', import.meta.url).pathname).href;

function limitFactors(roomy: boolean): number[] {
  const script = `
    import { setTimeout as sleep } from 'node:timers/promises';
    import { roomyOldGeneration } from ${JSON.stringify(MODULE)};
    if (${roomy}) roomyOldGeneration({ flags: [] });
    const kept = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 2000; i++) kept.push({ i });
      await sleep(60);
      globalThis.gc();
    }`;
  const env = { ...process.env, NODE_OPTIONS: '' };
  const out = execFileSync(process.execPath, ['--expose-gc', '--trace-gc-verbose', '--import', 'tsx', '--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 60_000 });
  return [...out.matchAll(/\[HeapController\] Limit: .*\(([\d.]+)\)\s*$/gm)].map((m) => Number(m[1]));
}

test('with room, V8 sets every old-generation limit at four times what lived; without, it picks less', () => {
  const roomy = limitFactors(true);
  const own = limitFactors(false);
  assert.ok(roomy.length >= 4, `V8 traced ${roomy.length} limits`);
  assert.deepEqual(roomy.filter((factor) => factor !== 4), [], `with room: ${roomy.join(', ')}`);
  assert.ok(own.some((factor) => factor < 4), `V8's own: ${own.join(', ')} (all four: the control proves nothing)`);
});
