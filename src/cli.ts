#!/usr/bin/env node
/**
 * The `llmux` command: argv -> the command table (src/commands/table.ts: serve, keys, models,
 * usage, setup, device, state, doctor). This file holds what only the entry point may do: start
 * the gateway (`llmux serve`). Exit codes: 0 ok, 1 failure, 2 usage error.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GatewayError } from './common/errors.ts';
import type { CliIo } from './commands/io.ts';
import type { ParsedArgs } from './commands/args.ts';
import { commandTable, runCommandLine } from './commands/table.ts';

export type { CliIo } from './commands/io.ts';

const processIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  // A getter: Node makes process.stdin on first read (a stream over the terminal, pipe or file,
  // about 3 ms at start-up), and only `llmux setup` reads it; `llmux serve` never does.
  get stdin() {
    return process.stdin;
  },
};

const COMMANDS = commandTable(serve);

/** Runs the CLI; resolves with the exit code (serve resolves only when the server stops). */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  if (io === processIo) quietOnClosedPipe();
  return runCommandLine(COMMANDS, argv, io);
}

async function serve(args: ParsedArgs, io: CliIo): Promise<number> {
  // Loaded here, not at the top: `llmux --version` and `llmux keys` start faster without them.
  const [{ createGateway }, { standardFeatures }, { holdYoungGeneration }, { roomyOldGeneration }] = await Promise.all([
    import('./gateway/server.ts'), import('./gateway/features.ts'), import('./common/young-generation.ts'), import('./common/old-generation.ts'),
  ]);
  // A process of its own holds V8's young generation small unless requests are coming fast
  // (src/common/young-generation.ts) and gives its old generation room while small
  // (src/common/old-generation.ts); a serve run inside another program (a test) leaves that
  // program's heap as it is.
  const heapHolds = io === processIo ? [holdYoungGeneration(), roomyOldGeneration()] : [];
  const releaseHeap = (): void => {
    for (const release of heapHolds) release();
  };
  const gateway = createGateway({ host: args.text('host'), port: args.number('port'), configPath: args.text('config'), home: args.text('home'), env: io.env, features: standardFeatures });
  try {
    const first = await gateway.keys.createFirst({ name: 'admin', admin: true, tier: 'pro' });
    if (first !== undefined) io.stderr(`llmux: first run: created admin key ${first.record.id} (shown once, keep it safe):\n${first.key}\n`);
  } catch (err) {
    // Shared keys with the state server away: whether the store is empty cannot be known. The
    // gateway starts all the same (degraded); `llmux keys create --admin` makes a key later.
    if (!(err instanceof GatewayError && err.code === 'state_unavailable')) throw err;
    io.stderr(`llmux: the state server did not answer, so no first admin key was made (${err.message})\n`);
  }
  const { url } = await gateway.listen();
  io.stdout(`llmux listening on ${url}\n`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    let stopWatchingParent = (): void => {};
    // The first signal drains (bounded by limits.shutdown_timeout_ms); a second one, of either
    // kind, cuts the streams still open with an in-stream error and stops at once.
    const stop = (why: string): void => {
      if (stopping) {
        io.stderr(`llmux: ${why} again: cutting the streams still open and stopping now\n`);
        void gateway.close({ now: true });
        return;
      }
      stopping = true;
      stopWatchingParent();
      io.stderr(`llmux: ${why}: finishing in-flight requests (at most ${Math.round(gateway.config.limits.shutdownTimeoutMs / 1000)} s)\n`);
      gateway.close().then(() => done(0), () => done(1));
    };
    const onTerm = (): void => stop('SIGTERM');
    const onInt = (): void => stop('SIGINT');
    const done = (code: number): void => {
      releaseHeap();
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      resolve(code);
    };
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    // npm does not pass a SIGTERM on to the script it runs (its shell dies and leaves llmux
    // running, orphaned): under npm, the launcher going away is taken as the signal.
    if (io.env['npm_lifecycle_event'] !== undefined) stopWatchingParent = watchParent(() => stop('SIGTERM (the npm process that started llmux has gone)'));
  });
}

/** How often a server started by npm checks that its launcher is still there. */
const PARENT_CHECK_MS = 500;

/** Calls `onGone` once when this process's parent changes (it died; we were re-parented). Returns the stop function. */
function watchParent(onGone: () => void): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, PARENT_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

let pipesGuarded = false;

/** `llmux models | head` closes our stdout early: that is not an error worth a stack trace. */
function quietOnClosedPipe(): void {
  if (pipesGuarded) return;
  pipesGuarded = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
