/**
 * A real `redis-server` (or `valkey-server`) for a test: a free loopback port, persistence off, a
 * temporary directory, optionally a password, an ACL user and TLS with a self-signed certificate.
 * The test stops it; pause/resume (SIGSTOP/SIGCONT) and restart (same port) act out outages.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { skipUnlessInstalled } from './ci.ts';

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
const READY_LINE = 'Ready to accept connections';

/** The server binary: `$REDIS_SERVER`, else `redis-server` or `valkey-server` on the PATH. */
export function findRedisServer(): string | undefined {
  const candidates = [process.env['REDIS_SERVER'], 'redis-server', 'valkey-server'].filter((c): c is string => c !== undefined && c !== '');
  for (const candidate of candidates) {
    const result = spawnSync(candidate, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (result.status === 0) return candidate;
  }
  return undefined;
}

/**
 * Whether state-server tests should be skipped: a message when no server binary is installed
 * outside CI, false otherwise. In CI (env `CI` set) they always run, so a missing server fails them.
 */
export function redisSkip(): string | false {
  return skipUnlessInstalled(findRedisServer() !== undefined, 'redis-server is not installed (apt-get install -y redis-server); state-server tests');
}

export interface TestRedisOptions {
  /** `requirepass`: the default user's password. */
  password?: string;
  /** An ACL user; `rules` default to every key, channel and command (`~* &* +@all`). */
  user?: { name: string; password: string; rules?: string[] };
  /** Serve TLS only (`rediss://`), with a self-signed certificate for 127.0.0.1. */
  tls?: boolean;
}

export interface TestRedis {
  /** `redis://` or `rediss://` to 127.0.0.1, with the user's (else the password's) credentials. */
  url: string;
  port: number;
  /** The certificate to trust for TLS (PEM), when `tls` was asked for. */
  ca: string | undefined;
  /** Stops the server and removes its directory; safe to call twice, and `restart()` may follow. */
  stop(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void;
  resume(): void;
  /** Stops the server (when running) and starts a fresh one (empty, no scripts) on the same port. */
  restart(): Promise<void>;
}

/** A loopback port nothing listens on (it was free a moment ago). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A self-signed certificate for 127.0.0.1 and localhost, as PEM text. */
function makeCertificate(dir: string): { cert: string; key: string } {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const result = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile,
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { encoding: 'utf8', timeout: 20_000 });
  if (result.status !== 0) throw new Error(`openssl could not make a test certificate: ${result.stderr}`);
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

function waitReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => finish(new Error(`redis-server not ready within ${READY_TIMEOUT_MS} ms:\n${output}`)), READY_TIMEOUT_MS);
    function finish(error?: Error): void {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      // Keep draining the log so a full pipe never blocks the server.
      child.stdout?.resume();
      if (error === undefined) resolve();
      else reject(error);
    }
    function onData(chunk: Buffer): void {
      output = (output + chunk.toString('utf8')).slice(-4000);
      if (output.includes(READY_LINE)) finish();
    }
    child.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4000);
    });
    function onExit(code: number | null): void {
      finish(new Error(`redis-server exited (${code}) before it was ready:\n${output}`));
    }
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    // A paused process would hold SIGTERM until continued.
    child.kill('SIGCONT');
    child.kill('SIGTERM');
  });
}

/** Starts a server; fails with a clear message when none is installed. */
export async function startRedis(options: TestRedisOptions = {}): Promise<TestRedis> {
  const binary = findRedisServer();
  if (binary === undefined) throw new Error('redis-server is not installed: apt-get install -y redis-server (or set REDIS_SERVER to a redis-server or valkey-server binary)');
  const dir = mkdtempSync(join(tmpdir(), 'llmux-redis-'));
  const certificate = options.tls === true ? makeCertificate(dir) : undefined;
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');

  const baseArgs = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no', '--logfile', ''];
  if (options.password !== undefined) baseArgs.push('--requirepass', options.password);
  if (options.user !== undefined) baseArgs.push('--user', options.user.name, 'on', `>${options.user.password}`, ...(options.user.rules ?? ['~*', '&*', '+@all']));

  let port = 0;
  let child: ChildProcess | undefined;
  function args(): string[] {
    if (certificate === undefined) return [...baseArgs, '--port', String(port)];
    return [
      ...baseArgs, '--port', '0', '--tls-port', String(port), '--tls-cert-file', certFile, '--tls-key-file', keyFile,
      '--tls-ca-cert-file', certFile, '--tls-auth-clients', 'no',
    ];
  }
  async function launch(): Promise<void> {
    // stop() removes the directory; a restart after it brings it (and the same certificate) back.
    mkdirSync(dir, { recursive: true });
    if (certificate !== undefined) {
      writeFileSync(certFile, certificate.cert);
      writeFileSync(keyFile, certificate.key, { mode: 0o600 });
    }
    const started = spawn(binary as string, args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    try {
      await waitReady(started);
    } catch (error) {
      await stopProcess(started);
      throw error;
    }
  }

  // The free port may be taken between the probe and the server's bind: try a few.
  for (let tries = 0; ; tries += 1) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (error) {
      if (tries === 4) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }

  const credentials = options.user !== undefined
    ? `${encodeURIComponent(options.user.name)}:${encodeURIComponent(options.user.password)}@`
    : options.password !== undefined ? `:${encodeURIComponent(options.password)}@` : '';
  return {
    url: `${certificate === undefined ? 'redis' : 'rediss'}://${credentials}127.0.0.1:${port}`,
    port,
    ca: certificate?.cert,
    async stop() {
      if (child !== undefined) await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async restart() {
      if (child !== undefined) await stopProcess(child);
      await launch();
    },
  };
}
