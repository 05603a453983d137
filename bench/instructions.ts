/**
 * CPU per request as instructions (issue 26), for a machine too busy for `npm run bench`'s
 * wall-clock and CPU-time figures: the proxy under test (the bare pipe, or llmux from `dist/`, as
 * bench/run.ts starts them) runs under valgrind's callgrind, the fake upstream and the client as
 * plain processes beside it. After a warm-up the proxy's counters are zeroed
 * (`callgrind_control --zero`), a fixed number of requests is sent, and the counters are dumped:
 * the instructions its every thread (V8's helpers too) ran for those requests, divided by their
 * number. Instructions are not time (a cache miss or a system call costs more than its count
 * says), but they do not move with the machine's load, so two builds compare.
 *
 *   npx tsx bench/instructions.ts                          every scenario, llmux and the bare pipe
 *   npx tsx bench/instructions.ts --only chat-json,agent-messages [--proxy llmux] [--n N]
 *
 * Needs `npm run build` (dist/) and valgrind. A scenario's bare figure is its baseline's (see
 * bench/measure.ts: a translated scenario's bare proxy passes the same upstream answer through).
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { CHILDREN_JS as JS, ROOT, compileChildren, readyLine } from './children.ts';
import { loadScenarios, withKey } from './measure.ts';
import type { LoadScenario, ProxyKind } from './measure.ts';

/** Requests in flight at once: enough to keep the proxy busy, few enough to stay in step under valgrind. */
const CONCURRENCY = 4;

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
});

function start(command: string, args: string[]): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  child.stderr?.resume();
  return child;
}

/** Sends `count` copies of the scenario's request, `CONCURRENCY` at a time, over kept-alive connections. */
async function send(port: number, scenario: LoadScenario, key: string, count: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const headers = { ...withKey(scenario.headers, key), 'content-length': String(Buffer.byteLength(scenario.body)) };
  let next = 0;
  const one = (): Promise<void> => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: scenario.path, headers, agent }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${scenario.id}: status ${res.statusCode}`));
      res.resume();
      res.once('end', resolve);
    });
    req.once('error', reject);
    req.end(scenario.body);
  });
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  agent.destroy();
}

function callgrindControl(pid: number, action: '--zero' | '--dump'): void {
  const out = spawnSync('callgrind_control', [action, String(pid)], { encoding: 'utf8', timeout: 120_000 });
  if (out.status !== 0) throw new Error(`callgrind_control ${action}: ${out.stderr}${out.stdout}`);
}

/** Instructions in the dump files callgrind wrote after `--dump` (the last one is this dump's). */
function dumpedInstructions(dir: string): number {
  const files = readdirSync(dir).filter((name) => name.startsWith('callgrind.out')).map((name) => join(dir, name));
  let total = 0;
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    // Only the explicit dump's files: the trigger names it.
    if (!/^desc: Trigger: Client Request/m.test(text) && !/^desc: Trigger: .*dump/im.test(text)) continue;
    const summary = /^summary:\s+(\d+)/m.exec(text);
    if (summary !== null) total += Number(summary[1]);
  }
  return total;
}

async function measure(kind: ProxyKind, scenario: LoadScenario, upstreamPort: number, n: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'llmux-instructions-'));
  try {
    const script = kind === 'bare' ? [join(JS, 'bare-proxy.js'), '--upstream-port', String(upstreamPort)] : [join(JS, 'llmux-server.js'), '--dist', join(ROOT, 'dist'), '--upstream-port', String(upstreamPort)];
    const proxy = start('valgrind', ['--tool=callgrind', '--separate-threads=no', `--callgrind-out-file=${join(dir, 'callgrind.out')}`, process.execPath, ...script]);
    const ready = await readyLine<{ port: number; key?: string }>(proxy, `${kind} proxy under callgrind`, 300_000);
    const key = ready.key ?? 'sk-bare';
    const warm = Math.max(20, n);
    await send(ready.port, scenario, key, warm);
    callgrindControl(proxy.pid as number, '--zero');
    await send(ready.port, scenario, key, n);
    callgrindControl(proxy.pid as number, '--dump');
    await delay(200);
    proxy.kill('SIGKILL');
    return dumpedInstructions(dir) / n;
  } finally {
    if (process.env['KEEP_CALLGRIND'] === undefined) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`callgrind output kept in ${dir}\n`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { only: { type: 'string' }, proxy: { type: 'string' }, n: { type: 'string' } } });
  const all = loadScenarios();
  const ids = values.only?.split(',').map((id) => id.trim()) ?? ['chat-json', 'messages-json', 'agent-messages', 'agent-translated'];
  const kinds: ProxyKind[] = values.proxy === undefined ? ['bare', 'llmux'] : [values.proxy as ProxyKind];
  compileChildren();
  const upstream = start(process.execPath, [join(JS, 'fake-upstream.js')]);
  const { port: upstreamPort } = await readyLine<{ port: number }>(upstream, 'fake upstream', 15_000);
  const bare = new Map<string, number>();
  process.stdout.write('scenario            proxy   instructions/request   × bare\n');
  for (const id of ids) {
    const scenario = all.find((s) => s.id === id);
    if (scenario === undefined) throw new Error(`no scenario ${id}`);
    const baseline = all.find((s) => s.id === scenario.baseline) ?? scenario;
    const n = values.n === undefined ? (scenario.body.length > 64 * 1024 ? 200 : 2_000) : Number(values.n);
    for (const kind of kinds) {
      if (kind === 'bare' && bare.has(baseline.id)) continue;
      const perRequest = await measure(kind, kind === 'bare' ? baseline : scenario, upstreamPort, n);
      if (kind === 'bare') bare.set(baseline.id, perRequest);
      const floor = bare.get(baseline.id);
      const ratio = kind === 'llmux' && floor !== undefined ? `${(perRequest / floor).toFixed(2)}×` : '';
      process.stdout.write(`${id.padEnd(20)}${kind.padEnd(8)}${Math.round(perRequest).toLocaleString('en-US').padStart(20)}   ${ratio}\n`);
    }
  }
  upstream.kill('SIGKILL');
}

main().then(() => process.exit(0), (err: unknown) => {
  process.stderr.write(`instructions: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
