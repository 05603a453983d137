/**
 * What a request leaves the garbage collector (issue 26): a proxy under V8's `--trace-gc-nvp`
 * through one scenario of bench/measure.ts, and per request answered: the bytes allocated on the
 * JavaScript heap, the bytes the young generation's collections copied to the old one (promoted),
 * and the main thread's pause in scavenges and in full collections.
 *
 * Promotion is the figure to watch. A request's objects should die young, as the bare proxy's do
 * (a few bytes a request promoted); when they are promoted, something still points at them after
 * the request: in the eleventh round it was the tables a Set of responses left behind as it grew and
 * shrank (src/common/roster.ts says why), 3.7 KB a 1 KB request.
 *
 *   npx tsx bench/gc.ts                                  llmux (this checkout's dist/) and the bare proxy, chat-json
 *   npx tsx bench/gc.ts --scenario chat-json --scenario chat-stream --proxy llmux:/tmp/other-dist --connections 1
 *   --seconds 5 (measured, after as long a warm-up)
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CHILDREN_JS, compileChildren, killGroup, readyLine, runWrk, startChild } from './children.ts';
import { isEntryPoint } from './entry.ts';
import { loadScenarios, parseWrkOutput } from './measure.ts';
import { proxySpec, startProxy } from './pair.ts';

/** The collector's work over a run, summed from its `--trace-gc-nvp` lines. */
export interface GcTotals {
  scavenges: number;
  fullCollections: number;
  allocatedBytes: number;
  promotedBytes: number;
  scavengePauseMs: number;
  fullPauseMs: number;
}

/**
 * Sums V8's `--trace-gc-nvp` lines (`[pid:addr]  N ms: pause=1.2 mutator=… gc=s … allocated=…
 * promoted=…`); other lines are skipped. `gc=s` is a scavenge; anything else (`ms`, `mc`) a full
 * collection.
 */
export function gcTotals(text: string): GcTotals {
  const totals: GcTotals = { scavenges: 0, fullCollections: 0, allocatedBytes: 0, promotedBytes: 0, scavengePauseMs: 0, fullPauseMs: 0 };
  for (const line of text.split('\n')) {
    const kind = / gc=(\S+)/.exec(line)?.[1];
    if (kind === undefined) continue;
    const field = (name: string): number => Number(new RegExp(` ${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);
    totals.allocatedBytes += field('allocated');
    totals.promotedBytes += field('promoted');
    if (kind === 's') {
      totals.scavenges++;
      totals.scavengePauseMs += field('pause');
    } else {
      totals.fullCollections++;
      totals.fullPauseMs += field('pause');
    }
  }
  return totals;
}

/** The totals per request answered, as printed. */
export function perRequest(totals: GcTotals, requests: number): string {
  const per = (value: number): number => (requests > 0 ? value / requests : Number.NaN);
  return `${requests} requests (${totals.scavenges} scavenges, ${totals.fullCollections} full collections); a request: `
    + `${(per(totals.allocatedBytes) / 1024).toFixed(1)} KB allocated, ${per(totals.promotedBytes).toFixed(0)} B promoted, `
    + `scavenges ${(per(totals.scavengePauseMs) * 1000).toFixed(1)} µs, full collections ${(per(totals.fullPauseMs) * 1000).toFixed(1)} µs`;
}

async function measure(proxy: string, scenarioId: string, seconds: number, connections: number): Promise<string> {
  const scenario = loadScenarios().find((s) => s.id === scenarioId);
  if (scenario === undefined) throw new Error(`no scenario ${scenarioId}`);
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'llmux-gc-'));
  try {
    const upstream = startChild(process.execPath, [join(CHILDREN_JS, 'fake-upstream.js')], 0);
    children.push(upstream);
    const { port: upstreamPort } = await readyLine<{ port: number }>(upstream, 'fake upstream');
    const running = await startProxy(proxySpec(proxy), ['--trace-gc-nvp'], upstreamPort, scenario, dir, 'proxy');
    children.push(running.child);
    const target = { port: running.port, path: scenario.path, script: running.script };
    await runWrk(target, { seconds, connections });
    // The trace from here on: the lines of the warm-up were drained unread.
    let trace = '';
    running.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      trace += chunk;
    });
    const { stdout } = await runWrk(target, { seconds, connections });
    const requests = parseWrkOutput(stdout).requests;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return `${proxy}: ${perRequest(gcTotals(trace), requests)}`;
  } finally {
    for (const child of children) killGroup(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      proxy: { type: 'string', multiple: true },
      scenario: { type: 'string', multiple: true },
      seconds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '16' },
    },
  });
  compileChildren();
  for (const [i, scenario] of (values.scenario ?? ['chat-json']).entries()) {
    process.stdout.write(`${i > 0 ? '\n' : ''}${scenario}, ${values.connections} connections\n`);
    for (const proxy of values.proxy ?? ['llmux', 'bare']) {
      process.stdout.write(`${await measure(proxy, scenario, Number(values.seconds), Number(values.connections))}\n`);
    }
  }
}

if (isEntryPoint(import.meta.url)) {
  main().then(() => process.exit(0), (err: unknown) => {
    process.stderr.write(`gc: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
