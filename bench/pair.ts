/**
 * Two proxies measured side by side (issue 26): both run at once, pinned to the same CPU, each
 * under its own wrk, and each round compares their CPU per request over the same seconds. On a
 * shared machine whose speed moves by ±50% from one run to the next, the other work falls on both
 * alike, so their ratio holds where the figures themselves do not: two copies of the same build
 * measure 0.99–1.02 in a run of seven rounds, where `npm run bench`'s llmux figure moves by 2× between runs.
 * This is for telling two builds of llmux apart; `npm run bench` remains the record (a proxy alone
 * on its CPU, as it would be deployed). Against the bare pipe (`--a bare`) the ratio reads higher
 * than the bench's: sharing a CPU's caches costs the proxy with the larger working set more.
 *
 *   npx tsx bench/pair.ts --b llmux:/tmp/other-dist          this dist/ (A) against another build (B)
 *   npx tsx bench/pair.ts --a bare --b llmux                  the bare pipe against llmux (see above)
 *   npx tsx bench/pair.ts --b-flags=--max-semi-space-size=16  the same build, with other node flags
 *   --scenario chat-json (default; any scenario of bench/measure.ts)   --rounds 7   --seconds 3
 *   --connections 16 (per proxy)
 *   --alternate   load one proxy at a time in turn, as `npm run bench` does (which always loads the
 *                 bare proxy first; here the second proxy goes first in every other round, so that
 *                 the order falls on both alike), and also give the ratio the bench would (B's
 *                 median round over A's): with two copies of one build, what one bench run's figure
 *                 can move by when nothing differs
 *   --state-url redis://127.0.0.1:PORT   both llmux proxies keep their state there (a server you started)
 *
 * A proxy is `bare`, `llmux` (this checkout's dist/, built with `npm run build` first) or
 * `llmux:DIR` (a dist directory: a copy of dist/ with a change, or another checkout's).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CHILDREN_JS, ROOT, compileChildren, killGroup, readyLine, runWrk, startChild, ticksPerSecond } from './children.ts';
import { isEntryPoint } from './entry.ts';
import { WARM_UP, loadScenarios, median, parseProcStat, parseWrkOutput, withKey, wrkScript } from './measure.ts';
import type { LoadScenario } from './measure.ts';

/** One proxy's share of a round: the CPU ticks it used and the requests it answered. */
export interface PairSide {
  ticks: number;
  requests: number;
}

/** One round's CPU per request of each proxy (µs), and B over A. */
export interface PairRound {
  aUs: number;
  bUs: number;
  ratio: number;
}

/** A round's figures from its ticks and requests; NaN where a side answered nothing. */
export function pairRound(a: PairSide, b: PairSide, ticksPerSec: number): PairRound {
  const us = (side: PairSide): number => (side.requests > 0 ? (side.ticks * 1e6) / ticksPerSec / side.requests : Number.NaN);
  const aUs = us(a);
  const bUs = us(b);
  return { aUs, bUs, ratio: bUs / aUs };
}

/** The rounds' B/A: the median, and the lowest and highest, over the rounds that have one. */
export function pairSummary(rounds: readonly PairRound[]): { median: number; low: number; high: number; rounds: number } {
  const ratios = rounds.map((r) => r.ratio).filter((r) => Number.isFinite(r));
  if (ratios.length === 0) throw new Error('no round has a ratio: a proxy answered no request');
  return { median: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios), rounds: ratios.length };
}

/** Which proxy a round loads first with `--alternate`: A, then B first in every other round (A B, B A, A B, …). */
export function alternateOrder(round: number): readonly ['a', 'b'] | readonly ['b', 'a'] {
  return round % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
}

/** What `npm run bench` reports for two proxies' rounds: B's median CPU per request over A's. */
export function ratioOfMedians(rounds: readonly PairRound[]): number {
  const a = rounds.map((r) => r.aUs).filter((us) => Number.isFinite(us));
  const b = rounds.map((r) => r.bUs).filter((us) => Number.isFinite(us));
  if (a.length === 0 || b.length === 0) throw new Error('no round has a ratio: a proxy answered no request');
  return median(b) / median(a);
}

/** What a proxy argument names: the bare pipe, or llmux from a dist directory. */
export function proxySpec(text: string): { kind: 'bare' } | { kind: 'llmux'; dist: string } {
  if (text === 'bare') return { kind: 'bare' };
  if (text === 'llmux') return { kind: 'llmux', dist: join(ROOT, 'dist') };
  if (text.startsWith('llmux:') && text.length > 'llmux:'.length) return { kind: 'llmux', dist: resolve(text.slice('llmux:'.length)) };
  throw new Error(`a proxy is bare, llmux or llmux:DIR, not "${text}"`);
}

/** Seconds of load before the rounds when both proxies are loaded at once. */
const AT_ONCE_WARM_UP_S = 5;

/** A proxy started for a scenario: its process, and the wrk script that loads it. */
export interface Running {
  child: ChildProcess;
  pid: number;
  port: number;
  script: string;
}

/**
 * Starts a proxy (node `flags` first) in front of the upstream, pinned to CPU 1, with its request log
 * going nowhere, and writes the wrk script of `scenario` for it into `dir` (`name`.lua).
 */
export async function startProxy(spec: ReturnType<typeof proxySpec>, flags: string[], upstreamPort: number, scenario: LoadScenario, dir: string, name: string, stateUrl?: string): Promise<Running> {
  const script = spec.kind === 'bare'
    ? [join(CHILDREN_JS, 'bare-proxy.js')]
    : [join(CHILDREN_JS, 'llmux-server.js'), '--dist', spec.dist, ...(stateUrl === undefined ? [] : ['--state-url', stateUrl])];
  // The request log goes nowhere: both proxies write theirs alike or not at all.
  const child = startChild(process.execPath, [...flags, ...script, '--upstream-port', String(upstreamPort)], 1, 'ignore');
  const ready = await readyLine<{ port: number; key?: string }>(child, `proxy ${name}`);
  if (child.pid === undefined) throw new Error(`proxy ${name} has no pid`);
  const file = join(dir, `${name}.lua`);
  writeFileSync(file, wrkScript({ headers: withKey(scenario.headers, ready.key ?? 'sk-bare'), body: scenario.body, turns: scenario.turns }));
  return { child, pid: child.pid, port: ready.port, script: file };
}

function cpuTicks(pid: number): number {
  const { utime, stime } = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return utime + stime;
}

/** Every child still running: the fake upstream, the two proxies and the wrk of the round. */
const running = new Set<ChildProcess>();

/** wrk against one proxy for `seconds`; resolves with the requests it got answered. */
async function load(proxy: Running, path: string, seconds: number, connections: number): Promise<number> {
  const { stdout } = await runWrk({ port: proxy.port, path, script: proxy.script }, { seconds, connections, track: running });
  return parseWrkOutput(stdout).requests;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      a: { type: 'string', default: 'llmux' },
      b: { type: 'string', default: 'llmux' },
      'a-flags': { type: 'string', default: '' },
      'b-flags': { type: 'string', default: '' },
      scenario: { type: 'string', default: 'chat-json' },
      rounds: { type: 'string', default: '7' },
      seconds: { type: 'string', default: '3' },
      connections: { type: 'string', default: '16' },
      'state-url': { type: 'string' },
      alternate: { type: 'boolean', default: false },
    },
  });
  const scenario = loadScenarios().find((s) => s.id === values.scenario);
  if (scenario === undefined) throw new Error(`no scenario ${values.scenario}`);
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  compileChildren();
  const dir = mkdtempSync(join(tmpdir(), 'llmux-pair-'));
  // The children run in process groups of their own: an interrupted run takes them with it.
  const interrupted = (): void => {
    for (const child of running) killGroup(child);
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    const upstream = startChild(process.execPath, [join(CHILDREN_JS, 'fake-upstream.js')], 0);
    running.add(upstream);
    const { port: upstreamPort } = await readyLine<{ port: number }>(upstream, 'fake upstream');
    const flags = (text: string): string[] => text.split(' ').filter((f) => f !== '');
    const a = await startProxy(proxySpec(values.a), flags(values['a-flags']), upstreamPort, scenario, dir, 'A', values['state-url']);
    running.add(a.child);
    const b = await startProxy(proxySpec(values.b), flags(values['b-flags']), upstreamPort, scenario, dir, 'B', values['state-url']);
    running.add(b.child);
    const alternate = values.alternate === true;
    process.stdout.write(`A: ${values.a} ${values['a-flags']}\nB: ${values.b} ${values['b-flags']}\n${scenario.id}, ${connections} connections each, both proxies on one CPU, ${alternate ? 'loaded in turn' : 'loaded at once'}\n`);
    const proxies = { a, b };
    const tps = ticksPerSecond();
    const measured: PairRound[] = [];
    if (alternate) {
      // As the bench warms and measures: passes of 1 s in turn, then rounds in turn.
      for (let pass = 0; pass < WARM_UP.passes; pass++) for (const side of alternateOrder(pass)) await load(proxies[side], scenario.path, WARM_UP.seconds, connections);
      for (let i = 0; i < rounds; i++) {
        const sides = { a: { ticks: 0, requests: 0 }, b: { ticks: 0, requests: 0 } };
        for (const side of alternateOrder(i)) {
          const before = cpuTicks(proxies[side].pid);
          sides[side].requests = await load(proxies[side], scenario.path, seconds, connections);
          sides[side].ticks = cpuTicks(proxies[side].pid) - before;
        }
        measured.push(pairRound(sides.a, sides.b, tps));
      }
    } else {
      // Warm-up, both at once as measured, long enough for the JIT to have settled.
      await Promise.all([load(a, scenario.path, AT_ONCE_WARM_UP_S, connections), load(b, scenario.path, AT_ONCE_WARM_UP_S, connections)]);
      for (let i = 0; i < rounds; i++) {
        const before = [cpuTicks(a.pid), cpuTicks(b.pid)];
        const [na, nb] = await Promise.all([load(a, scenario.path, seconds, connections), load(b, scenario.path, seconds, connections)]);
        measured.push(pairRound({ ticks: cpuTicks(a.pid) - (before[0] as number), requests: na }, { ticks: cpuTicks(b.pid) - (before[1] as number), requests: nb }, tps));
      }
    }
    measured.forEach((round, i) => process.stdout.write(`round ${i + 1}: A ${round.aUs.toFixed(0)} µs/req   B ${round.bUs.toFixed(0)} µs/req   B/A ${round.ratio.toFixed(3)}\n`));
    const summary = pairSummary(measured);
    process.stdout.write(`B/A CPU per request: median ${summary.median.toFixed(3)} (rounds ${summary.low.toFixed(3)}–${summary.high.toFixed(3)}, ${summary.rounds} rounds)\n`);
    if (alternate) process.stdout.write(`B's median over A's (what npm run bench reports): ${ratioOfMedians(measured).toFixed(3)}\n`);
  } finally {
    for (const child of running) killGroup(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isEntryPoint(import.meta.url)) {
  main().then(() => process.exit(0), (err: unknown) => {
    process.stderr.write(`pair: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
