import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SHARED_STATE_CPU_TARGET, compareSharedState, renderSharedState, sharedStateVerdictLine } from '../../bench/shared-state.ts';
import type { SharedStateResult } from '../../bench/shared-state.ts';
import type { LoadResult } from '../../bench/measure.ts';

function result(overrides: Partial<LoadResult>): LoadResult {
  return {
    scenario: 'chat-json', proxy: 'llmux', requests: 1000, rps: 3000, p50Ms: 8, p99Ms: 30, cpuUsPerRequest: 300,
    cpuShare: 1, peakRssMb: 110, bytesPerResponse: 1182, errors: 0, upstreamConnectionsPer1k: 0, ...overrides,
  };
}

function measured(sharedCpuUs: number, sharedP99Ms: number): SharedStateResult {
  return {
    memory: result({}),
    shared: result({ cpuUsPerRequest: sharedCpuUs, p99Ms: sharedP99Ms, rps: 2800 }),
    stateServerCpuUsPerRequest: 21.4,
    stateServer: 'redis-server 7.0.15',
  };
}

test('shared state is judged by the CPU each request costs the llmux process more, against at most 15%', () => {
  assert.equal(SHARED_STATE_CPU_TARGET, 1.15);
  const within = compareSharedState(measured(330, 33));
  assert.equal(within.met, true);
  assert.equal(within.addedCpuUs, 30);
  assert.ok(Math.abs(within.cpuRatio - 1.1) < 1e-9);
  assert.ok(Math.abs(within.addedP99Ms - 3) < 1e-9);
  const over = compareSharedState(measured(360, 40));
  assert.equal(over.met, false);
  assert.match(sharedStateVerdictLine(measured(360, 40)), /^MISSED {2}chat JSON with shared state: CPU per request: 1\.20× in-memory \(limit ≤ 1\.15×\); \+60 µs\/req, p99 30\.00 → 40\.00 ms$/);
});

test('the results section gives both runs, the added CPU and p99, and the state server\'s own CPU', () => {
  const text = renderSharedState(measured(360, 40));
  assert.match(text, /^## Shared state \(issue 16\)$/m);
  assert.match(text, /^\| in-memory \| 3000 \| 8\.00 \| 30\.00 \| 300 \| 0 \|$/m);
  assert.match(text, /^\| shared state \| 2800 \| 8\.00 \| 40\.00 \| 360 \| 0 \|$/m);
  assert.match(text, /Added CPU per request in the llmux process: 60 µs \(1\.20×; target ≤ 1\.15×: MISSED by 4%\)/);
  assert.match(text, /p99: 30\.00 → 40\.00 ms \(\+10\.00 ms, 1\.33×\)/);
  assert.match(text, /state server's own CPU: 21 µs per request/);
  assert.match(text, /local redis-server 7\.0\.15/);
});
