/**
 * Micro-benchmark of the per-key limiter: time per admit+settle+release (and per refusal, per
 * peek), and heap bytes per key. Run with `npx tsx bench/limiter.ts`; not a test.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter } from '../src/limits/limiter.ts';
import type { LimitSet } from '../src/limits/limiter.ts';

// `gc` is only exposed by a flag; setting it at run time and reading it from a fresh context
// works without asking the user for `--expose-gc`.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const ROOMY: LimitSet = { rpm: 1_000_000_000, tpm: 1_000_000_000_000, concurrency: 1_000_000 };
const BASIC: LimitSet = { rpm: 60, tpm: 90_000, concurrency: 10 };

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function nsPerOp(operations: number, run: () => void): number {
  run(); // warm-up, so the optimising compiler has seen the code
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / operations;
}

const rows: [string, string][] = [];

// Memory first, before the timing loops leave garbage that a later collection would subtract.
{
  let nowMs = 1_700_000_000_000;
  const limiter = createLimiter({ now: () => nowMs });
  const count = 100_000;
  // Key ids exist anyway (they come from the key store), so they are made before measuring.
  const ids = Array.from({ length: count }, (_, i) => `key_${i.toString(16).padStart(16, '0')}`);
  const before = heapUsed();
  for (const id of ids) {
    const admission = limiter.admit(id, BASIC, 1_000);
    if (!admission.ok) throw new Error(`refused: ${admission.reason}`);
    admission.settle(1_200);
    admission.release();
  }
  const after = heapUsed();
  rows.push(['heap, 100 000 keys with one request each', `${((after - before) / 1e6).toFixed(1)} MB (${((after - before) / count).toFixed(0)} B/key)`]);

  // Busy keys: traffic in every granule of the window grows each ring to its 61-entry bound.
  const busyIds = ids.slice(0, 10_000);
  const beforeBusy = heapUsed();
  for (let second = 0; second < 61; second++) {
    nowMs += 1_000;
    for (const id of busyIds) {
      const admission = limiter.admit(id, ROOMY, 10);
      if (admission.ok) {
        admission.settle(10);
        admission.release();
      }
    }
  }
  const afterBusy = heapUsed();
  rows.push(['extra heap per key busy in every second', `${((afterBusy - beforeBusy) / busyIds.length).toFixed(0)} B/key`]);

  nowMs += 120_000;
  const sweepStart = process.hrtime.bigint();
  limiter.sweep();
  const sweepMs = Number(process.hrtime.bigint() - sweepStart) / 1e6;
  const afterSweep = heapUsed();
  rows.push([`sweep of ${count} idle keys (first, unoptimised)`, `${sweepMs.toFixed(1)} ms, size ${limiter.size()}, ${((afterBusy - afterSweep) / 1e6).toFixed(1)} MB freed`]);
}


{
  // Each admit, settle and release reads the clock once; how much that costs depends on the machine.
  const operations = 1_000_000;
  let sink = 0;
  const ns = nsPerOp(operations, () => {
    for (let i = 0; i < operations; i++) sink += Date.now();
  });
  rows.push(['Date.now() (three per admit+settle+release)', `${ns.toFixed(0)} ns${sink === 0 ? ' ' : ''}`]);
}

{
  const limiter = createLimiter();
  const ids = Array.from({ length: 1_000 }, (_, i) => `key_${i.toString(16).padStart(16, '0')}`);
  const operations = 1_000_000;
  const ns = nsPerOp(operations, () => {
    for (let i = 0; i < operations; i++) {
      const result = limiter.admit(ids[i % ids.length]!, ROOMY, 500);
      if (!result.ok) throw new Error(`refused: ${result.reason}`);
      result.settle(700);
      result.release();
    }
  });
  rows.push(['admit + settle + release (1 000 hot keys)', `${ns.toFixed(0)} ns`]);
  const peekNs = nsPerOp(operations, () => {
    for (let i = 0; i < operations; i++) limiter.peek(ids[i % ids.length]!, ROOMY);
  });
  rows.push(['peek', `${peekNs.toFixed(0)} ns`]);
}

{
  const limiter = createLimiter();
  for (let i = 0; i < 60; i++) limiter.admit('key_flooded', BASIC, 0);
  const operations = 1_000_000;
  const ns = nsPerOp(operations, () => {
    for (let i = 0; i < operations; i++) {
      if (limiter.admit('key_flooded', BASIC, 0).ok) throw new Error('expected a refusal');
    }
  });
  rows.push(['refusal (key over its rpm)', `${ns.toFixed(0)} ns`]);
}

const width = Math.max(...rows.map(([name]) => name.length));
console.log(`${'measure'.padEnd(width)}  result`);
console.log(`${'-'.repeat(width)}  ${'-'.repeat(30)}`);
for (const [name, value] of rows) console.log(`${name.padEnd(width)}  ${value}`);
