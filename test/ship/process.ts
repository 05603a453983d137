/**
 * Child processes for the ship tests: run a command to completion, or start `llmux serve` and
 * wait for its one "listening" line.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment for children, without what the test runner adds: c8's coverage directory
 * (every node child, npm included, would dump coverage there), NODE_OPTIONS (tsx's loader) and
 * the `npm_*` variables of `npm test` (a nested npm would read them as its own config).
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('npm_') || name === 'NODE_V8_COVERAGE' || name === 'NODE_OPTIONS') continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

/** Runs a command to its end; never rejects on a non-zero exit (the caller asserts on `code`). */
export function run(file: string, args: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(file, args, {
      cwd: options.cwd,
      env: options.env ?? cleanEnv(),
      timeout: options.timeoutMs ?? 120_000,
      maxBuffer: 16 * 1024 * 1024,
      encoding: 'utf8',
    }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== 'number') {
        reject(new Error(`${file} ${args.join(' ')}: ${err.message}\n${stderr}`));
        return;
      }
      resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
    });
  });
}

export interface RunningServer {
  url: string;
  /** The first-run admin key printed on stderr. */
  adminKey: string;
  child: ChildProcess;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Sends a signal and resolves with how the process ended. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const LISTENING = /^llmux listening on (http:\/\/\S+)\n/;
const ADMIN_KEY = /^(sk-llmux-[A-Za-z0-9_-]{43})$/m;

/**
 * Starts `file serve --port 0 ...` (`file ...leading serve …` with `leading`, say a script for
 * node) and resolves once it prints its address and admin key.
 */
export function startServer(file: string, args: string[], options: { cwd?: string; env: Record<string, string>; leading?: string[] }): Promise<RunningServer> {
  const child = spawn(file, [...(options.leading ?? []), 'serve', '--port', '0', ...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const url = LISTENING.exec(stdout)?.[1];
      const adminKey = ADMIN_KEY.exec(stderr)?.[1];
      if (url === undefined || adminKey === undefined) return;
      child.stdout?.off('data', onStdout);
      resolve({
        url,
        adminKey,
        child,
        stderr: () => stderr,
        stop: (signal = 'SIGTERM') => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    const onStdout = (chunk: Buffer): void => {
      stdout += chunk.toString('utf8');
      check();
    };
    child.stdout?.on('data', onStdout);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      check();
    });
    child.once('error', reject);
    void exited.then(({ code, signal }) => {
      reject(new Error(`${file} serve ended before listening (code ${code}, signal ${signal}):\n${stdout}${stderr}`));
    });
  });
}
