/**
 * `npm run bench`: llmux side by side with a bare `node:http` pipe proxy (issue 7).
 *
 *   npm run bench                    full run (about 6 minutes; hard limit 450 s), table on stdout
 *   npm run bench -- --write         … and rewrite bench/RESULTS.md
 *   npm run bench -- --quick         short rounds (about 1 minute), for a quick look
 *   npm run bench -- --profile       … then run each proxy under --cpu-prof through each load
 *                                    scenario and print where the time goes (bench/.tmp/prof/;
 *                                    with --write, also into RESULTS.md); adds about 110 s
 *   npm run bench -- --only chat-json,agent-messages,idle-streams,large-idle-streams,startup,limiter,usage,gc,shared-state
 *                                    some parts only (load scenarios by id: bench/measure.ts)
 *   npm run bench -- --peers         … and other gateways on the same load scenarios (bench/peers.ts:
 *                                    installed into bench/.tmp/peers with npm; one that cannot be
 *                                    installed or started is skipped, and the run says why)
 *
 * Separate processes: the fake upstream, the proxy under test, and the load generator (wrk), with
 * the upstream and wrk on CPU 0 and the proxy alone on CPU 1 when `taskset` and two CPUs exist.
 * Each child runs in its own process group, and every group is killed on the way out, whatever
 * the way out is. The whole run has a hard deadline.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { cpus, loadavg, release } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import type { createGateway } from '../src/gateway/server.ts';
import type { GatewayModule } from './llmux-server.ts';
import { PEERS, installPeer, renderPeers } from './peers.ts';
import type { Peer, PeerResult } from './peers.ts';
import {
  WARM_UP, combineRounds, evaluateTargets, loadResult, loadScenarios, median, parseProcStat, parseProcStatus, parseWrkOutput, renderResults,
  chatBody, chatHeaders, messagesHeaders, withKey, wrkScript,
} from './measure.ts';
import type {
  CpuTicks, IdleStreamsResult, LargeIdleStreamsResult, LargeIdleVariant, LoadResult, LoadScenario, Machine, MemoryKb, ProxyKind, RunSettings, StartupResult,
} from './measure.ts';
import { agentMessagesBody } from './agent-body.ts';
import type { StreamRequest } from './slow-client.ts';
import { formatSummary, summariseProfile } from './profile-summary.ts';
import type { CpuProfile } from './profile-summary.ts';
import { renderSharedState, sharedStateVerdictLine } from './shared-state.ts';
import type { SharedStateResult } from './shared-state.ts';
import { canPin, compileChildren, killGroup, readyLine as firstLine, runWrk as runWrkOn, ticksPerSecond as clockTicksPerSecond } from './children.ts';
import type { WrkRun } from './children.ts';

/** Compile-time check that llmux-server.ts's structural view of dist/gateway/server.js matches src/gateway/server.ts. */
type Accepts<T extends GatewayModule['createGateway']> = T;
export type GatewayShapeCheck = Accepts<typeof createGateway>;

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BENCH = join(ROOT, 'bench');
const TMP = join(BENCH, '.tmp');
const JS = join(TMP, 'js');
const PROFILES = join(TMP, 'prof');
const DIST = join(ROOT, 'dist');
const CONNECTIONS = 32;
/** Streams held open at once in the slow-streams scenario. */
const IDLE_STREAMS = 1_000;
/** Streams held open at once with a 200 KB request each (issue 15). */
const LARGE_IDLE_STREAMS = 200;
/**
 * How many of those are being opened at any moment: agents' turns arrive over time, and a key's
 * bodies in flight are bounded (32 MiB, about 150 such turns, before llmux answers 429).
 */
const LARGE_IDLE_WAVE = 20;

const { values: flags } = parseArgs({
  options: {
    write: { type: 'boolean' },
    quick: { type: 'boolean' },
    profile: { type: 'boolean' },
    only: { type: 'string' },
    peers: { type: 'boolean' },
  },
});
const quick = flags.quick === true;
const rounds = quick ? 2 : 3;
const roundS = quick ? 1 : 3;
/**
 * Warm-up: passes of `warmupS` seconds, each ended as wrk closes its connections mid-request, as
 * every measured round is. The first few such ends still find code V8 optimized before it saw them
 * (a connection closed with its request in flight, the first requests of new connections): that
 * code is thrown away and compiled again, on the proxy's own CPU. One 2 s pass left that to the
 * first measured round (`perf`: TurboFan's threads took 4.5% of llmux's CPU in the measured rounds,
 * 1.5% of the bare proxy's; bench/what-is-left.md, the nineteenth round).
 */
const warmupPasses = quick ? 1 : WARM_UP.passes;
const warmupS = WARM_UP.seconds;
const startupRuns = quick ? 5 : 9;
/** The scenarios bench/gc.ts runs: a 1 KB request and a stream. */
const GC_SCENARIOS = ['chat-json', 'chat-stream'];
/** Load under the profiler, per profiled process. */
const profileS = quick ? 3 : 6;
/** Nothing the bench does may outlive this: under 7 minutes, plus the profiles when asked for. */
const HARD_DEADLINE_MS = 450_000 + (flags.profile === true ? 200_000 : 0) + (flags.peers === true ? 600_000 : 0);

// ---------------------------------------------------------------- child processes

const children = new Set<ChildProcess>();
/** This run's scratch directory under bench/.tmp (Lua scripts, request logs). */
let runDir = '';

function killAll(): void {
  for (const child of children) killGroup(child, 'SIGKILL');
  children.clear();
}

process.on('exit', () => {
  killAll();
  // Lua scripts and request logs of this run; profiles and compiled children stay for reading.
  if (runDir !== '') rmSync(runDir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping\n`);
    killAll();
    process.exit(130);
  });
}
const deadline = setTimeout(() => {
  process.stderr.write(`bench: still running after ${HARD_DEADLINE_MS / 1000} s; stopping everything\n`);
  killAll();
  process.exit(1);
}, HARD_DEADLINE_MS);
deadline.unref();

const ticksPerSecond = clockTicksPerSecond();

const loadAtStart = loadavg()[0] ?? 0;
const pinned = canPin();

/** Spawns a child in its own process group, pinned to `cpu` when pinning is possible. */
function start(command: string, args: string[], options: { cpu: 0 | 1; stdio: StdioOptions; env?: NodeJS.ProcessEnv }): ChildProcess {
  const [cmd, argv] = pinned ? ['taskset', ['-c', String(options.cpu), command, ...args]] : [command, args];
  // taskset execs the command, so the pid is the command's own.
  const child = spawn(cmd, argv, { cwd: ROOT, detached: true, stdio: options.stdio, env: options.env ?? process.env });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Asks a child to stop, then kills its group if it hasn't within `graceMs`. */
async function stop(child: ChildProcess, graceMs = 3_000): Promise<void> {
  killGroup(child, 'SIGTERM');
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
  killGroup(child, 'SIGKILL'); // anything the child left in its group
}

function readCpu(pid: number): CpuTicks {
  return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

function readMemory(pid: number): MemoryKb {
  return parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
}

// ---------------------------------------------------------------- set-up

function requireWrk(): string {
  const out = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (out.error !== undefined) {
    process.stderr.write('bench: wrk is not installed. The benchmark drives load with wrk from Debian:\n  apt-get install -y wrk\n');
    process.exit(1);
  }
  const line = `${out.stdout ?? ''}${out.stderr ?? ''}`.split('\n')[0] ?? 'wrk';
  return line.replace(/\s+Copyright.*$/, '').trim();
}

function run(command: string, args: string[], what: string): { ok: boolean; output: string } {
  const out = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { ok: out.status === 0, output: `${out.stdout ?? ''}${out.stderr ?? ''}${out.error === undefined ? '' : `${what}: ${out.error.message}`}` };
}

/** `npm run build`, then the bench's own child scripts to plain JS (they must not run under tsx). */
function build(notes: string[]): void {
  const dist = run('npm', ['run', 'build'], 'npm run build');
  if (!existsSync(join(DIST, 'gateway', 'server.js')) || !existsSync(join(DIST, 'cli.cjs'))) {
    process.stderr.write(`bench: npm run build produced no dist/:\n${dist.output}\n`);
    process.exit(1);
  }
  if (!dist.ok) {
    const note = 'npm run build reported type errors (tsc still emitted dist/; the run used it)';
    process.stderr.write(`bench: ${note}:\n${dist.output.split('\n').filter((l) => l.includes('error')).slice(0, 10).join('\n')}\n`);
    notes.push(`- ${note}.`);
  }
  try {
    compileChildren();
  } catch (err) {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

function machine(wrkVersion: string): Machine {
  const cpuModel = (() => {
    try {
      const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
      return match?.[1]?.trim() ?? 'unknown CPU';
    } catch {
      return 'unknown CPU';
    }
  })();
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    cpus: cpus().length,
    cpuModel,
    node: process.version,
    wrk: wrkVersion,
    kernel: release(),
    loadAverage: { start: loadAtStart, end: loadavg()[0] ?? 0 },
  };
}

// ---------------------------------------------------------------- processes under test

interface RunningProxy {
  kind: ProxyKind;
  child: ChildProcess;
  pid: number;
  port: number;
  key: string;
  logFile: string | undefined;
}

async function startUpstream(): Promise<{ child: ChildProcess; port: number }> {
  const child = start(process.execPath, [join(JS, 'fake-upstream.js'), '--drip-ms', '1000'], { cpu: 0, stdio: ['ignore', 'pipe', 'inherit'] });
  const { port } = await firstLine<{ port: number }>(child, 'fake upstream');
  return { child, port };
}

let logCounter = 0;

async function startProxy(kind: ProxyKind, upstreamPort: number, nodeFlags: string[] = [], llmuxArgs: string[] = []): Promise<RunningProxy> {
  let child: ChildProcess;
  let logFile: string | undefined;
  if (kind === 'bare') {
    child = start(process.execPath, [...nodeFlags, join(JS, 'bare-proxy.js'), '--upstream-port', String(upstreamPort)], { cpu: 1, stdio: ['ignore', 'pipe', 'inherit'] });
  } else {
    logFile = join(runDir, `llmux-${++logCounter}.log`);
    const fd = openSync(logFile, 'w');
    child = start(process.execPath, [...nodeFlags, join(JS, 'llmux-server.js'), '--dist', DIST, '--upstream-port', String(upstreamPort), ...llmuxArgs], { cpu: 1, stdio: ['ignore', 'pipe', fd] });
    closeSync(fd);
  }
  const ready = await firstLine<{ port: number; key?: string }>(child, `${kind} proxy`);
  if (child.pid === undefined) throw new Error(`${kind} proxy has no pid`);
  return { kind, child, pid: child.pid, port: ready.port, key: ready.key ?? 'sk-bare-proxy-needs-no-key', logFile };
}

/** What the request log says went wrong, if anything; then the log is removed. */
function checkLog(proxy: RunningProxy): string | undefined {
  if (proxy.logFile === undefined) return undefined;
  let problem: string | undefined;
  try {
    const text = readFileSync(proxy.logFile, 'utf8');
    // 499s are expected: wrk cuts its connections when its time is up.
    const bad = text.split('\n').find((line) => line.includes('"level":"error"') || (line.includes('"status":') && !line.includes('"status":200') && !line.includes('"status":499')));
    if (bad !== undefined) problem = bad.slice(0, 300);
  } catch {
    // No log: nothing to report.
  }
  rmSync(proxy.logFile, { force: true });
  return problem;
}

/** The warm-up passes, each proxy in turn (see {@link warmupPasses}). */
async function warmUp(targets: readonly { port: number; path: string; script: string }[]): Promise<void> {
  for (let pass = 0; pass < warmupPasses; pass++) {
    for (const t of targets) await runWrk(t.port, t.path, t.script, warmupS);
  }
}

function runWrk(port: number, path: string, script: string, seconds: number): Promise<WrkRun> {
  return runWrkOn({ port, path, script }, { seconds, connections: CONNECTIONS, track: children });
}

function scriptFor(scenario: LoadScenario, key: string): string {
  const file = join(runDir, `${scenario.id}-${Math.random().toString(36).slice(2)}.lua`);
  writeFileSync(file, wrkScript({ headers: withKey(scenario.headers, key), body: scenario.body, turns: scenario.turns }));
  return file;
}

/** Connections the fake upstream has accepted so far. */
function upstreamConnections(upstreamPort: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: upstreamPort, path: '/__bench/stats', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => {
        try {
          resolve((JSON.parse(text) as { connections: number }).connections);
        } catch (err) {
          reject(err);
        }
      });
    }).on('error', reject);
  });
}

/** A measured round of wrk against a running proxy. */
async function measureRound(proxy: RunningProxy, scenario: LoadScenario, script: string, upstreamPort: number): Promise<LoadResult> {
  const connectionsBefore = await upstreamConnections(upstreamPort);
  const before = readCpu(proxy.pid);
  const { stdout, wallMs } = await runWrk(proxy.port, scenario.path, script, roundS);
  const after = readCpu(proxy.pid);
  // Minus one: the stats request's own connection.
  const opened = (await upstreamConnections(upstreamPort)) - connectionsBefore - 1;
  return loadResult(scenario.id, proxy.kind, parseWrkOutput(stdout), { before, after, ticksPerSecond, wallMs }, readMemory(proxy.pid), opened);
}

/**
 * One scenario: a fresh bare proxy (given the baseline's request: for a translated stream, the
 * same upstream stream passed through) and a fresh llmux, both warmed up, then measured in
 * alternating rounds so that other work on the machine falls on both alike.
 */
async function measureScenario(scenario: LoadScenario, baseline: LoadScenario, upstreamPort: number, notes: string[]): Promise<LoadResult[]> {
  const bare = await startProxy('bare', upstreamPort);
  let llmux: RunningProxy | undefined;
  try {
    llmux = await startProxy('llmux', upstreamPort);
    const runs = [
      { proxy: bare, request: baseline, script: scriptFor(baseline, bare.key), rounds: [] as LoadResult[] },
      { proxy: llmux, request: scenario, script: scriptFor(scenario, llmux.key), rounds: [] as LoadResult[] },
    ];
    await warmUp(runs.map((r) => ({ port: r.proxy.port, path: r.request.path, script: r.script })));
    for (let i = 0; i < rounds; i++) {
      for (const r of runs) r.rounds.push({ ...(await measureRound(r.proxy, r.request, r.script, upstreamPort)), scenario: scenario.id });
    }
    const results = runs.map((r) => combineRounds(r.rounds));
    for (const result of results) {
      if (result.errors > 0) notes.push(`- ${scenario.label}, ${result.proxy}: ${result.errors} failed requests.`);
    }
    return results;
  } finally {
    await Promise.all([stop(bare.child), llmux === undefined ? undefined : stop(llmux.child)]);
    const problem = llmux === undefined ? undefined : checkLog(llmux);
    if (problem !== undefined) notes.push(`- ${scenario.label}, llmux: the request log has a line that is not a 200: \`${problem.replaceAll('`', "'")}\``);
  }
}

// ---------------------------------------------------------------- peers

/** Lines of a child's stdout and stderr until one matches `ready`; rejects when it exits or `timeoutMs` passes. */
function readyLine(child: ChildProcess, ready: RegExp, what: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const streams = [child.stdout, child.stderr].filter((stream) => stream !== null);
    let seen = '';
    const done = (err?: Error): void => {
      clearTimeout(timer);
      child.off('exit', onExit);
      for (const stream of streams) stream.off('data', onData);
      // Nobody reads them from here on: drained, so a chatty peer never blocks on a full pipe.
      for (const stream of streams) stream.resume();
      if (err === undefined) resolve();
      else reject(err);
    };
    const onData = (chunk: Buffer): void => {
      seen = (seen + chunk.toString('utf8')).slice(-4000);
      if (ready.test(seen)) done();
    };
    const onExit = (code: number | null): void => done(new Error(`${what} exited (code ${code}) before it was ready: ${seen.slice(-300)}`));
    const timer = setTimeout(() => done(new Error(`${what} said nothing matching ${ready} within ${timeoutMs} ms: ${seen.slice(-300)}`)), timeoutMs);
    child.once('exit', onExit);
    for (const stream of streams) stream.on('data', onData);
  });
}

/** Resolves once `port` accepts a connection (a peer may say it is ready a moment before it listens). */
async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (performance.now() > until) throw new Error(`nothing listens on port ${port} after ${timeoutMs} ms`);
    await delay(50);
  }
}

/** One POST, its status and the start of its body. */
function postOnce(port: number, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false, timeout: 15_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (text.length < 2000) text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 15 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Each peer on the scenarios of this run it can take: started once, checked with one request per
 * scenario, then measured beside a fresh bare proxy in alternating rounds, as llmux is.
 */
async function measurePeers(scenarios: readonly LoadScenario[], all: readonly LoadScenario[], upstreamPort: number, notes: string[]): Promise<{ results: PeerResult[]; skipped: string[] }> {
  const root = join(TMP, 'peers');
  mkdirSync(root, { recursive: true });
  const results: PeerResult[] = [];
  const skipped: string[] = [];
  for (const peer of PEERS) {
    const wanted = scenarios.filter((s) => peer.requests[s.id] !== undefined);
    if (wanted.length === 0) continue;
    process.stderr.write(`bench: peer ${peer.label}: installing…\n`);
    const installed = installPeer(peer, root);
    if ('skipped' in installed) {
      skipped.push(`${peer.label}: ${installed.skipped}`);
      continue;
    }
    const port = await freePort();
    const launch = peer.launch(installed.dir, port, upstreamPort);
    const child = start(launch.command, launch.args, { cpu: 1, stdio: ['ignore', 'pipe', 'pipe'], env: launch.env });
    try {
      await readyLine(child, launch.ready, peer.label, 60_000);
      await waitForPort(port, 30_000);
      for (const scenario of wanted) {
        const request = (peer.requests[scenario.id] as NonNullable<Peer['requests'][string]>)(scenario, upstreamPort);
        const check = await postOnce(port, request.path, request.headers, request.body).catch((err: unknown) => ({ status: 0, text: String(err) }));
        if (check.status !== 200) {
          skipped.push(`${peer.label}, ${scenario.label}: its first request was answered ${check.status} (${check.text.slice(0, 160).replaceAll('\n', ' ')})`);
          continue;
        }
        process.stderr.write(`bench: peer ${peer.label}: ${scenario.id}…\n`);
        const baseline = all.find((x) => x.id === scenario.baseline) ?? scenario;
        results.push(await measurePeerScenario(peer, { kind: 'peer', child, pid: child.pid as number, port, key: '', logFile: undefined }, scenario, baseline, { ...scenario, ...request }, upstreamPort, notes));
      }
    } catch (err) {
      skipped.push(`${peer.label}: ${err instanceof Error ? err.message : String(err)}`.slice(0, 400));
    } finally {
      await stop(child);
    }
  }
  return { results, skipped };
}

async function measurePeerScenario(peer: Peer, running: RunningProxy, scenario: LoadScenario, baseline: LoadScenario, asked: LoadScenario, upstreamPort: number, notes: string[]): Promise<PeerResult> {
  const bare = await startProxy('bare', upstreamPort);
  try {
    const peerScript = join(runDir, `${peer.id}-${scenario.id}.lua`);
    writeFileSync(peerScript, wrkScript({ headers: asked.headers, body: asked.body }));
    const runs = [
      { proxy: bare, request: baseline, script: scriptFor(baseline, bare.key), rounds: [] as LoadResult[] },
      { proxy: running, request: asked, script: peerScript, rounds: [] as LoadResult[] },
    ];
    await warmUp(runs.map((r) => ({ port: r.proxy.port, path: r.request.path, script: r.script })));
    for (let i = 0; i < rounds; i++) {
      for (const r of runs) r.rounds.push({ ...(await measureRound(r.proxy, r.request, r.script, upstreamPort)), scenario: scenario.id });
    }
    const [bareResult, peerResult] = runs.map((r) => combineRounds(r.rounds)) as [LoadResult, LoadResult];
    if (peerResult.errors > 0) notes.push(`- ${scenario.label}, ${peer.label}: ${peerResult.errors} failed requests.`);
    return { peer: peer.label, scenario: scenario.id, bare: bareResult, result: peerResult };
  } finally {
    await stop(bare.child);
  }
}

// ---------------------------------------------------------------- shared state

/** A free loopback port (the state server must be told one). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = http.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server with persistence off, on CPU 0 beside the upstream and wrk: another machine's work. */
async function startStateServer(): Promise<{ child: ChildProcess; url: string; version: string } | undefined> {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) return undefined;
  const version = /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  const port = await freePort();
  const dir = mkdtempSync(join(runDir, 'redis-'));
  const child = start('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', ''], { cpu: 0, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('redis-server was not ready within 10 s')), 10_000);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.stdout?.resume();
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (code ${code})`)));
  });
  return { child, url: `redis://127.0.0.1:${port}`, version: `redis-server ${version}` };
}

/**
 * The chat JSON load through llmux in-memory and through llmux with `state.url`, measured in
 * alternating rounds; the state server's CPU is read over the shared rounds.
 */
async function measureSharedState(upstreamPort: number, notes: string[]): Promise<SharedStateResult | undefined> {
  const stateServer = await startStateServer();
  if (stateServer === undefined) {
    notes.push('- Shared state: redis-server is not installed (apt-get install -y redis-server); the scenario was skipped.');
    return undefined;
  }
  const scenario = loadScenarios().find((s) => s.id === 'chat-json');
  if (scenario === undefined) throw new Error('no chat-json scenario');
  let memory: RunningProxy | undefined;
  let shared: RunningProxy | undefined;
  try {
    memory = await startProxy('llmux', upstreamPort);
    shared = await startProxy('llmux', upstreamPort, [], ['--state-url', stateServer.url]);
    const runs = [
      { proxy: memory, script: scriptFor(scenario, memory.key), rounds: [] as LoadResult[] },
      { proxy: shared, script: scriptFor(scenario, shared.key), rounds: [] as LoadResult[] },
    ];
    await warmUp(runs.map((r) => ({ port: r.proxy.port, path: scenario.path, script: r.script })));
    let stateTicks = 0;
    for (let i = 0; i < rounds; i++) {
      for (const [index, r] of runs.entries()) {
        const before = index === 1 ? readCpu(stateServer.child.pid as number) : undefined;
        r.rounds.push(await measureRound(r.proxy, scenario, r.script, upstreamPort));
        if (before !== undefined) {
          const after = readCpu(stateServer.child.pid as number);
          stateTicks += after.utime + after.stime - before.utime - before.stime;
        }
      }
    }
    const [memoryResult, sharedResult] = runs.map((r) => combineRounds(r.rounds)) as [LoadResult, LoadResult];
    const sharedRequests = runs[1]!.rounds.reduce((sum, r) => sum + r.requests, 0);
    for (const [name, result] of [['in-memory', memoryResult], ['shared state', sharedResult]] as const) {
      if (result.errors > 0) notes.push(`- Shared state, llmux ${name}: ${result.errors} failed requests.`);
    }
    return {
      memory: memoryResult,
      shared: sharedResult,
      stateServerCpuUsPerRequest: sharedRequests > 0 ? ((stateTicks / ticksPerSecond) * 1e6) / sharedRequests : Number.NaN,
      stateServer: stateServer.version,
    };
  } finally {
    await Promise.all([memory === undefined ? undefined : stop(memory.child), shared === undefined ? undefined : stop(shared.child)]);
    for (const proxy of [memory, shared]) {
      const problem = proxy === undefined ? undefined : checkLog(proxy);
      if (problem !== undefined) notes.push(`- Shared state, llmux: the request log has a line that is not a 200: \`${problem.replaceAll('`', "'")}\``);
    }
    await stop(stateServer.child);
  }
}

// ---------------------------------------------------------------- idle streams

/** The slow stream each proxy is asked for in the 1,000-stream scenario: a small chat request. */
function smallSlowRequest(proxy: RunningProxy): StreamRequest {
  return { path: proxy.kind === 'bare' ? '/slow/v1/chat/completions' : '/v1/chat/completions', headers: withKey(chatHeaders(), proxy.key), body: chatBody('bench-chat-slow', true) };
}

/**
 * The slow stream of the large-request scenario (issue 15): a 200 KB agent turn, streamed; to a
 * messages upstream (the bare proxy, and llmux passing it through) or a chat one (llmux translating).
 */
function largeSlowRequest(proxy: RunningProxy, variant: LargeIdleVariant): StreamRequest {
  const headers = withKey(messagesHeaders(), proxy.key);
  if (proxy.kind === 'bare') return { path: '/slow/v1/messages', headers, body: agentMessagesBody('bench-messages-slow', true) };
  return { path: '/v1/messages', headers, body: agentMessagesBody(variant === 'translated' ? 'bench-chat-slow' : 'bench-messages-slow', true) };
}

async function openSlowStreams(proxy: RunningProxy, count: number, request: StreamRequest, wave = count): Promise<{ child: ChildProcess; ready: number; failed: number; statuses: Record<string, number> }> {
  // In a file: a 200 KB body is longer than one command-line argument may be.
  const file = join(runDir, `slow-request-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(request));
  const child = start(process.execPath, [join(JS, 'slow-client.js'), '--port', String(proxy.port), '--count', String(count), '--wave', String(wave), '--request-file', file, '--timeout-ms', '30000'], {
    cpu: 0,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const result = await firstLine<{ ready: number; failed: number; statuses: Record<string, number> }>(child, 'slow-stream client', 40_000);
  return { child, ...result };
}

async function sampleRss(pid: number, samples: number, gapMs: number): Promise<number> {
  const values: number[] = [];
  for (let i = 0; i < samples; i++) {
    if (i > 0) await delay(gapMs);
    values.push(readMemory(pid).vmRss);
  }
  return median(values);
}

/**
 * RSS per open stream: a fresh proxy, warmed with a few streams, its RSS read, then `count` slow
 * streams opened at once and its RSS read again once they are all idle.
 */
async function measureIdleStreams(
  kind: ProxyKind,
  upstreamPort: number,
  notes: string[],
  shape: { count: number; warm: number; what: string; request(proxy: RunningProxy): StreamRequest; wave?: number; collect?: boolean; cycles?: number },
): Promise<IdleStreamsResult> {
  const proxy = await startProxy(kind, upstreamPort, shape.collect === true ? ['--expose-gc'] : []);
  /** RSS now, after a full collection when the shape asks for one (see collectOnSignal in bench/entry.ts). */
  const rss = async (samples: number, gapMs: number): Promise<number> => {
    if (shape.collect === true) {
      process.kill(proxy.pid, 'SIGUSR2');
      await delay(300);
    }
    return sampleRss(proxy.pid, samples, gapMs);
  };
  try {
    // Warm the code paths so the baseline isn't missing what the first streams load (and, with
    // 200 KB requests, the young generation V8 grows to under such a load, once).
    const warm = await openSlowStreams(proxy, shape.warm, shape.request(proxy), shape.wave);
    await stop(warm.child);
    await delay(500);
    // Each cycle opens the streams and closes them again; the median cycle is reported.
    const cycles: IdleStreamsResult[] = [];
    for (let cycle = 0; cycle < (shape.cycles ?? 1); cycle++) {
      const baselineRssKb = await rss(3, 200);
      const open = await openSlowStreams(proxy, shape.count, shape.request(proxy), shape.wave);
      await delay(1_000);
      const openRssKb = await rss(3, 300);
      const peak = readMemory(proxy.pid).vmHwm;
      await stop(open.child);
      await delay(500);
      if (open.failed > 0 || open.ready < shape.count) {
        notes.push(`- ${shape.what}, ${kind}: ${open.ready} opened, ${open.failed} failed (statuses ${JSON.stringify(open.statuses)}).`);
      }
      const streams = Math.max(open.ready, 1);
      cycles.push({ proxy: kind, streams: open.ready, baselineRssKb, openRssKb, bytesPerStream: ((openRssKb - baselineRssKb) * 1024) / streams, peakRssMb: peak / 1024, failed: open.failed });
    }
    const middle = median(cycles.map((c) => c.bytesPerStream));
    return cycles.find((c) => c.bytesPerStream === middle) ?? (cycles[0] as IdleStreamsResult);
  } finally {
    await stop(proxy.child);
    checkLog(proxy);
  }
}

// ---------------------------------------------------------------- start-up

/** The hand-written reading of the profiles (bench/what-is-left.md), shown under the tables. */
function analysis(): string {
  try {
    return `\n${readFileSync(join(BENCH, 'what-is-left.md'), 'utf8')}`;
  } catch {
    return '';
  }
}

function getStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
  });
}

async function timeNodeE0(): Promise<number> {
  const started = performance.now();
  const child = start(process.execPath, ['-e', '0'], { cpu: 1, stdio: 'ignore' });
  await exited(child);
  return performance.now() - started;
}

async function timeLlmuxStart(home: string): Promise<number> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('LLMUX_') && !name.endsWith('_API_KEY')) env[name] = value;
  env['LLMUX_HOME'] = home;
  const started = performance.now();
  const child = start(process.execPath, [join(DIST, 'cli.cjs'), 'serve', '--port', '0', '--host', '127.0.0.1'], { cpu: 1, stdio: ['ignore', 'pipe', 'ignore'], env });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      const timer = setTimeout(() => reject(new Error('llmux serve printed no address within 10 s')), 10_000);
      lines.on('line', (line) => {
        const match = /listening on http:\/\/[^:]+:(\d+)/.exec(line);
        if (match === null) return;
        clearTimeout(timer);
        lines.close();
        resolve(Number(match[1]));
      });
      child.once('exit', (code) => reject(new Error(`llmux serve exited (code ${code}) before listening`)));
    });
    for (;;) {
      if (await getStatus(port, '/healthz') === 200) return performance.now() - started;
      if (performance.now() - started > 10_000) throw new Error('llmux serve did not answer /healthz within 10 s');
      await delay(2);
    }
  } finally {
    await stop(child);
  }
}

async function measureStartup(): Promise<StartupResult> {
  const home = mkdtempSync(join(runDir, 'home-'));
  // The first run creates the admin key; a server's usual start finds it there.
  await timeLlmuxStart(home);
  await timeNodeE0();
  const nodeMs: number[] = [];
  const llmuxMs: number[] = [];
  for (let i = 0; i < startupRuns; i++) {
    nodeMs.push(await timeNodeE0());
    llmuxMs.push(await timeLlmuxStart(home));
  }
  return { nodeMs: median(nodeMs), llmuxMs: median(llmuxMs), runs: startupRuns };
}

// ---------------------------------------------------------------- profiles

/** Runs one proxy under `--cpu-prof` through a scenario's load; returns the profile's summary text. */
async function profileScenario(kind: ProxyKind, scenario: LoadScenario, upstreamPort: number): Promise<{ full: string; short: string }> {
  const id = `${kind}-${scenario.id}`;
  const name = `${id}.cpuprofile`;
  rmSync(join(PROFILES, name), { force: true });
  const proxy = await startProxy(kind, upstreamPort, ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`, `--cpu-prof-name=${name}`]);
  let requests: number | undefined;
  try {
    const script = scriptFor(scenario, proxy.key);
    requests = parseWrkOutput((await runWrk(proxy.port, scenario.path, script, profileS)).stdout).requests;
  } finally {
    // A clean exit is what writes the profile.
    await stop(proxy.child, 10_000);
    checkLog(proxy);
  }
  const file = join(PROFILES, name);
  if (!existsSync(file)) {
    const missing = `${kind}, ${scenario.label}: no profile was written`;
    return { full: missing, short: missing };
  }
  const summary = summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  const text = formatSummary(`${kind}, ${scenario.label} (bench/.tmp/prof/${name})`, summary, 30, requests);
  writeFileSync(join(PROFILES, `${id}.txt`), `${text}\n`);
  return { full: text, short: formatSummary(`${kind}, ${scenario.label}`, summary, 12, requests) };
}

// ---------------------------------------------------------------- report

function printTable(scenarios: readonly LoadScenario[], results: readonly LoadResult[]): void {
  const rows = [['scenario', 'proxy', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'CPU', 'peak MB', 'up conns/1k', 'errors']];
  for (const s of scenarios) {
    for (const r of results.filter((x) => x.scenario === s.id)) {
      rows.push([s.id, r.proxy, r.rps.toFixed(0), r.p50Ms.toFixed(2), r.p99Ms.toFixed(2), r.cpuUsPerRequest.toFixed(0), `${(r.cpuShare * 100).toFixed(0)}%`, r.peakRssMb.toFixed(1), r.upstreamConnectionsPer1k.toFixed(0), String(r.errors)]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const row of rows) process.stdout.write(`${row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')}\n`);
}

async function main(): Promise<number> {
  const wrkVersion = requireWrk();
  const notes: string[] = [];
  if (!pinned) {
    const why = cpus().length < 2 ? 'fewer than 2 CPUs' : 'taskset not found';
    process.stderr.write(`bench: ${why}: processes are not pinned; numbers are less comparable\n`);
  }
  const began = performance.now();
  process.stderr.write('bench: building dist/ and the bench processes…\n');
  build(notes);
  mkdirSync(PROFILES, { recursive: true });
  runDir = mkdtempSync(join(TMP, 'run-'));

  const only = flags.only === undefined ? undefined : new Set(flags.only.split(',').map((s) => s.trim()));
  const all = loadScenarios();
  const scenarios = only === undefined ? all : all.filter((s) => only.has(s.id));
  const settings: RunSettings = { connections: CONNECTIONS, rounds, roundS, warmupS, warmupPasses, pinned, quick };

  const upstream = await startUpstream();
  const results: LoadResult[] = [];
  const idle: IdleStreamsResult[] = [];
  const largeIdle: LargeIdleStreamsResult[] = [];
  let startup: StartupResult | undefined;
  try {
    for (const scenario of scenarios) {
      process.stderr.write(`bench: ${scenario.id}…\n`);
      const baseline = all.find((x) => x.id === scenario.baseline) ?? scenario;
      results.push(...await measureScenario(scenario, baseline, upstream.port, notes));
    }
    if (only === undefined || only.has('idle-streams')) {
      for (const kind of ['bare', 'llmux'] as const) {
        process.stderr.write(`bench: ${IDLE_STREAMS} slow streams / ${kind}…\n`);
        idle.push(await measureIdleStreams(kind, upstream.port, notes, { count: IDLE_STREAMS, warm: 50, what: '1,000 slow streams', request: smallSlowRequest }));
      }
    }
    if (only === undefined || only.has('large-idle-streams')) {
      for (const variant of ['bare', 'same format', 'translated'] as const) {
        process.stderr.write(`bench: ${LARGE_IDLE_STREAMS} slow streams with a 200 KB request / ${variant}…\n`);
        const kind = variant === 'bare' ? 'bare' : 'llmux';
        const request = (proxy: RunningProxy): StreamRequest => largeSlowRequest(proxy, variant);
        const result = await measureIdleStreams(kind, upstream.port, notes, {
          count: LARGE_IDLE_STREAMS, warm: LARGE_IDLE_STREAMS, wave: LARGE_IDLE_WAVE, collect: true, cycles: 3, what: `${LARGE_IDLE_STREAMS} slow streams with a 200 KB request (${variant})`, request,
        });
        largeIdle.push({ ...result, variant });
      }
    }
    if (only === undefined || only.has('startup')) {
      process.stderr.write('bench: start-up…\n');
      startup = await measureStartup();
    }

    let sharedState: SharedStateResult | undefined;
    if (only === undefined || only.has('shared-state')) {
      process.stderr.write('bench: shared state (chat JSON, in-memory against a state server)…\n');
      sharedState = await measureSharedState(upstream.port, notes);
    }

    let limiter: string | undefined;
    if (only === undefined || only.has('limiter')) {
      // The per-key limiter's own cost and memory (issue 4), from its micro-benchmark.
      process.stderr.write('bench: limiter…\n');
      const out = spawnSync(process.execPath, ['--import', 'tsx', join(BENCH, 'limiter.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
      limiter = out.status === 0 ? out.stdout : `bench/limiter.ts failed: ${out.stderr.slice(0, 500)}`;
    }

    let usage: string | undefined;
    if (only === undefined || only.has('usage')) {
      // What usage accounting adds per request (issue 17), from its micro-benchmark.
      process.stderr.write('bench: usage accounting…\n');
      const out = spawnSync(process.execPath, ['--import', 'tsx', join(BENCH, 'usage.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
      usage = out.status === 0 ? out.stdout : `bench/usage.ts failed: ${out.stderr.slice(0, 500)}`;
    }

    let garbage: string | undefined;
    if (only === undefined || only.has('gc')) {
      // What a request leaves the garbage collector (issue 26): a request's objects should die young.
      process.stderr.write('bench: garbage per request…\n');
      const scenarioArgs = GC_SCENARIOS.flatMap((scenario) => ['--scenario', scenario]);
      const out = spawnSync(process.execPath, ['--import', 'tsx', join(BENCH, 'gc.ts'), ...scenarioArgs, '--seconds', quick ? '1' : '2'], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
      garbage = out.status === 0 ? out.stdout : `bench/gc.ts failed: ${out.stderr.slice(0, 500)}`;
    }

    const profiles: string[] = [];
    if (flags.profile === true) {
      const bareDone = new Set<string>();
      for (const scenario of scenarios) {
        // The floor's profile too, once per upstream stream, for comparing µs per request.
        const baseline = all.find((x) => x.id === scenario.baseline) ?? scenario;
        if (!bareDone.has(baseline.id)) {
          bareDone.add(baseline.id);
          process.stderr.write(`bench: profiling bare ${baseline.id}…\n`);
          const bare = await profileScenario('bare', baseline, upstream.port);
          process.stdout.write(`\n${bare.full}\n`);
          profiles.push(bare.short);
        }
        process.stderr.write(`bench: profiling llmux ${scenario.id}…\n`);
        const mine = await profileScenario('llmux', scenario, upstream.port);
        process.stdout.write(`\n${mine.full}\n`);
        profiles.push(mine.short);
      }
    }

    let peers: { results: PeerResult[]; skipped: string[] } | undefined;
    if (flags.peers === true) peers = await measurePeers(scenarios, all, upstream.port, notes);

    const shownScenarios = all.filter((s) => results.some((r) => r.scenario === s.id));
    process.stdout.write('\n');
    printTable(shownScenarios, results);
    const text = renderResults({ machine: machine(wrkVersion), settings, scenarios: shownScenarios, results, idle, largeIdle, startup, notes, profiles })
      + (sharedState === undefined ? '' : `\n${renderSharedState(sharedState)}`)
      + (limiter === undefined ? '' : `\n## Per-key limiter (bench/limiter.ts)\n\n\`\`\`\n${limiter.trimEnd()}\n\`\`\`\n`)
      + (usage === undefined ? '' : `\n## Usage accounting per request (bench/usage.ts)\n\n\`\`\`\n${usage.trimEnd()}\n\`\`\`\n`)
      + (garbage === undefined ? '' : `\n## What a request leaves the garbage collector (bench/gc.ts)\n\nPer request answered, each proxy alone under V8's \`--trace-gc-nvp\`: bytes allocated on the JavaScript heap, bytes the young generation's collections promoted to the old one, and the main thread's pauses. A request's objects should die young, as the bare proxy's do; kilobytes promoted a request mean something holds requests after they end (bench/what-is-left.md, "Issue 26's eleventh round").\n\n\`\`\`\n${garbage.trimEnd()}\n\`\`\`\n`)
      + (peers === undefined ? '' : `\n${renderPeers(all, peers.results, peers.skipped, results)}`)
      + analysis();
    const verdicts = evaluateTargets(shownScenarios, results, idle, startup, largeIdle);
    process.stdout.write('\n');
    for (const v of verdicts) process.stdout.write(`${v.met ? 'met   ' : 'MISSED'}  ${v.target}: ${v.measured} (limit ${v.limit})\n`);
    for (const r of idle) process.stdout.write(`idle streams, ${r.proxy}: ${(r.bytesPerStream / 1024).toFixed(1)} KB per open stream (${r.streams} open)\n`);
    for (const r of largeIdle) process.stdout.write(`idle streams with a 200 KB request, ${r.variant}: ${(r.bytesPerStream / 1024).toFixed(1)} KB per open stream (${r.streams} open)\n`);
    if (startup !== undefined) process.stdout.write(`start-up: node -e 0 ${startup.nodeMs.toFixed(1)} ms, llmux ${startup.llmuxMs.toFixed(1)} ms\n`);
    if (sharedState !== undefined) process.stdout.write(`${sharedStateVerdictLine(sharedState)}\n\n${renderSharedState(sharedState)}`);
    if (limiter !== undefined) process.stdout.write(`\nlimiter:\n${limiter}`);
    if (usage !== undefined) process.stdout.write(`\nusage accounting:\n${usage}`);
    if (garbage !== undefined) process.stdout.write(`\ngarbage per request (bench/gc.ts):\n${garbage}`);
    if (peers !== undefined) process.stdout.write(`\n${renderPeers(all, peers.results, peers.skipped, results)}`);
    for (const note of notes) process.stdout.write(`${note}\n`);
    if (flags.write === true) {
      writeFileSync(join(BENCH, 'RESULTS.md'), text);
      process.stdout.write('\nwrote bench/RESULTS.md\n');
    }
  } finally {
    await stop(upstream.child);
    rmSync(runDir, { recursive: true, force: true });
  }
  process.stderr.write(`bench: done in ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
  return 0;
}

main().then(
  (code) => {
    killAll();
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    killAll();
    process.exit(1);
  },
);
