/**
 * The bench's child processes, shared by the tools that start them outside bench/run.ts
 * (bench/pair.ts, bench/instructions.ts): the child scripts compiled to plain JS (they must not run
 * under tsx), a spawn pinned to one CPU where the machine allows it, and the JSON line a child
 * prints when it is ready.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Where the child scripts are compiled to. */
export const CHILDREN_JS = join(ROOT, 'bench', '.tmp', 'js');
const CHILD_SCRIPTS = ['fake-upstream', 'bare-proxy', 'llmux-server', 'slow-client'];

/** Compiles the child scripts into {@link CHILDREN_JS}; throws when one is missing afterwards. */
export function compileChildren(): void {
  mkdirSync(join(ROOT, 'bench', '.tmp'), { recursive: true });
  const tsconfig = join(ROOT, 'bench', '.tmp', 'tsconfig.children.json');
  writeFileSync(tsconfig, JSON.stringify({
    extends: '../../tsconfig.json',
    compilerOptions: { noEmit: false, outDir: './js', rootDir: '..', declaration: false, sourceMap: false },
    files: CHILD_SCRIPTS.map((name) => `../${name}.ts`),
    include: [],
  }, null, 2));
  const out = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', tsconfig], { cwd: ROOT, encoding: 'utf8' });
  const missing = CHILD_SCRIPTS.filter((name) => !existsSync(join(CHILDREN_JS, `${name}.js`)));
  if (missing.length > 0) throw new Error(`could not compile bench/${missing.join('.ts, bench/')}.ts:\n${out.stdout ?? ''}${out.stderr ?? ''}`);
}

let pinning: boolean | undefined;
/** Whether children can be pinned: `taskset` is there and the machine has two CPUs or more (asked once). */
export function canPin(): boolean {
  pinning ??= cpus().length >= 2 && spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0;
  return pinning;
}

/**
 * Spawns a child in its own process group (so it and anything it starts can be killed together),
 * pinned to `cpu` when {@link canPin}. `taskset` execs the command: the child's pid is the command's.
 */
export function startChild(command: string, args: readonly string[], cpu: number | undefined, stderr: 'inherit' | 'ignore' | 'pipe' = 'inherit'): ChildProcess {
  const [cmd, argv] = cpu !== undefined && canPin() ? ['taskset', ['-c', String(cpu), command, ...args]] : [command, [...args]];
  return spawn(cmd, argv, { detached: true, stdio: ['ignore', 'pipe', stderr] });
}

/** Kills a child's process group; nothing when it has already gone. */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Gone already.
  }
}

/** The first line of a child's stdout that is a JSON object, parsed; rejects when it exits first or `timeoutMs` passes. */
export function readyLine<T>(child: ChildProcess, what: string, timeoutMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    if (child.stdout === null) {
      reject(new Error(`${what}: no stdout`));
      return;
    }
    const lines = createInterface({ input: child.stdout });
    const done = (err: Error | undefined, value?: T): void => {
      clearTimeout(timer);
      child.off('exit', onExit);
      lines.close();
      // Nobody reads it from here on: drained, so the child never blocks on a full pipe.
      child.stdout?.resume();
      if (err === undefined) resolve(value as T);
      else reject(err);
    };
    const onExit = (code: number | null): void => done(new Error(`${what} exited (code ${code}) before it was ready`));
    const timer = setTimeout(() => done(new Error(`${what} was not ready within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', onExit);
    lines.on('line', (line) => {
      if (!line.startsWith('{')) return;
      try {
        done(undefined, JSON.parse(line) as T);
      } catch (err) {
        done(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

/** What wrk printed (stdout and stderr), and how long it ran. */
export interface WrkRun {
  stdout: string;
  wallMs: number;
}

/**
 * wrk (one thread) against `127.0.0.1:port` + `path` with the Lua script `script`, pinned to CPU 0
 * beside the fake upstream; in `track` while it runs, so a stopped run can kill it. Rejects when wrk
 * fails, and kills it if it outlives its time by 20 s.
 */
export async function runWrk(target: { port: number; path: string; script: string }, options: { seconds: number; connections: number; track?: Set<ChildProcess> }): Promise<WrkRun> {
  const { seconds, connections, track } = options;
  const child = startChild('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s', '-s', target.script, `http://127.0.0.1:${target.port}${target.path}`], 0, 'pipe');
  track?.add(child);
  let stdout = '';
  const collect = (chunk: string): void => {
    stdout += chunk;
  };
  child.stdout?.setEncoding('utf8').on('data', collect);
  child.stderr?.setEncoding('utf8').on('data', collect);
  const started = performance.now();
  const killer = setTimeout(() => killGroup(child), (seconds + 20) * 1000);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(killer);
  track?.delete(child);
  const wallMs = performance.now() - started;
  if (code !== 0) throw new Error(`wrk failed (code ${code}):\n${stdout.slice(-2000)}`);
  return { stdout, wallMs };
}

/** Clock ticks per second of `/proc/PID/stat`'s utime and stime. */
export function ticksPerSecond(): number {
  const n = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
}
