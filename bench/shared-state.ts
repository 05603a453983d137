/**
 * The shared-state scenario (issue 16): the same chat JSON load through llmux with its limiter,
 * keys and usage in the process, and through llmux with them on a state server (a local
 * redis-server, on the load generator's CPU as another machine would be). What the comparison
 * says: the CPU each request costs the llmux process more, and its p99, against the target of at
 * most 15% more CPU per request. The state server's own CPU per request is shown beside it.
 *
 * Pure: the runner (bench/run.ts) measures; this file compares and writes the section.
 */
import type { LoadResult } from './measure.ts';

/** Issue 16's target: CPU per JSON request with shared state, over in-memory. */
export const SHARED_STATE_CPU_TARGET = 1.15;

export interface SharedStateResult {
  /** llmux with everything in the process. */
  memory: LoadResult;
  /** llmux with `state.url` set. */
  shared: LoadResult;
  /** The state server's own CPU per request of the shared rounds (µs). */
  stateServerCpuUsPerRequest: number;
  /** `redis-server --version`'s first words. */
  stateServer: string;
}

export interface SharedStateComparison {
  /** shared / memory, CPU per request. */
  cpuRatio: number;
  /** shared − memory, µs per request. */
  addedCpuUs: number;
  /** shared / memory, p99. */
  p99Ratio: number;
  /** shared − memory, p99 in ms. */
  addedP99Ms: number;
  met: boolean;
}

export function compareSharedState(result: SharedStateResult): SharedStateComparison {
  const { memory, shared } = result;
  const cpuRatio = shared.cpuUsPerRequest / memory.cpuUsPerRequest;
  return {
    cpuRatio,
    addedCpuUs: shared.cpuUsPerRequest - memory.cpuUsPerRequest,
    p99Ratio: shared.p99Ms / memory.p99Ms,
    addedP99Ms: shared.p99Ms - memory.p99Ms,
    met: cpuRatio <= SHARED_STATE_CPU_TARGET,
  };
}

/** The one line the runner prints, like the other targets'. */
export function sharedStateVerdictLine(result: SharedStateResult): string {
  const c = compareSharedState(result);
  return `${c.met ? 'met   ' : 'MISSED'}  chat JSON with shared state: CPU per request: ${c.cpuRatio.toFixed(2)}× in-memory (limit ≤ ${SHARED_STATE_CPU_TARGET}×); `
    + `+${c.addedCpuUs.toFixed(0)} µs/req, p99 ${result.memory.p99Ms.toFixed(2)} → ${result.shared.p99Ms.toFixed(2)} ms`;
}

const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** The RESULTS.md section. */
export function renderSharedState(result: SharedStateResult): string {
  const c = compareSharedState(result);
  const row = (name: string, r: LoadResult): string => `| ${name} | ${fixed(r.rps, 0)} | ${fixed(r.p50Ms, 2)} | ${fixed(r.p99Ms, 2)} | ${fixed(r.cpuUsPerRequest, 0)} | ${r.errors} |`;
  return [
    '## Shared state (issue 16)',
    '',
    `Chat JSON pass-through, the same load through llmux with limits, keys and usage in the process, and with \`state.url\` on a local ${result.stateServer} `
      + '(pinned with the upstream and wrk, as another machine would be). Alternating rounds, medians.',
    '',
    '| llmux | req/s | p50 ms | p99 ms | CPU µs/req | errors |',
    '|---|---:|---:|---:|---:|---:|',
    row('in-memory', result.memory),
    row('shared state', result.shared),
    '',
    `- Added CPU per request in the llmux process: ${fixed(c.addedCpuUs, 0)} µs (${fixed(c.cpuRatio, 2)}×; target ≤ ${SHARED_STATE_CPU_TARGET}×: ${c.met ? 'met' : `MISSED by ${fixed((c.cpuRatio / SHARED_STATE_CPU_TARGET - 1) * 100, 0)}%`}).`,
    `- p99: ${fixed(result.memory.p99Ms, 2)} → ${fixed(result.shared.p99Ms, 2)} ms (${c.addedP99Ms >= 0 ? '+' : ''}${fixed(c.addedP99Ms, 2)} ms, ${fixed(c.p99Ratio, 2)}×).`,
    `- The state server's own CPU: ${fixed(result.stateServerCpuUsPerRequest, 0)} µs per request.`,
    '',
  ].join('\n');
}
