#!/usr/bin/env node
/**
 * The `llmux` command: argv -> commands (serve, keys, models, usage, device, setup).
 * Exit codes: 0 ok, 1 failure, 2 usage error.
 */
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, parsePort, resolveHome } from './config/load.ts';
import { KeyStoreError, createKeyStore, parseDuration } from './auth/key-store.ts';
import type { KeyRecord, KeyStore } from './auth/key-store.ts';
import type { Budget, TierLimits, TierName } from './config/types.ts';
import { isTierName } from './config/types.ts';
import { budgetFor, keyStatus, limitsFor } from './auth/key-record.ts';
import { VERSION } from './common/version.ts';
import { GatewayError } from './common/errors.ts';
import type { CliIo } from './commands/io.ts';

export type { CliIo } from './commands/io.ts';

const processIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  stdin: process.stdin,
};

const HELP = `llmux ${VERSION} — one address for many models

Usage:
  llmux serve [--host H] [--port N] [--config FILE] [--home DIR]
  llmux keys create [--name N] [--tier basic|pro|enterprise] [--rpm N] [--tpm N]
                    [--concurrency N] [--models ID,ID] [--admin] [--expires-in 30d]
                    [--budget-usd 25 [--budget-period day|month]]
  llmux keys list [--json]
  llmux keys revoke ID|NAME
  llmux models [--json]
  llmux usage [--since 7d] [--until TIME] [--by day|hour|model|key] [--key ID|NAME|all] [--json]
  llmux device approve|deny USER_CODE [--tier basic|pro|enterprise] [--name N] [--url URL]
  llmux state migrate --from-home DIR   (copy a key store and usage into the state server)
  llmux setup [flags]        (llmux setup --help)
  llmux --version

Environment: LLMUX_HOST, LLMUX_PORT, LLMUX_CONFIG, LLMUX_HOME (default ~/.llmux), LLMUX_STATE_URL
(a Valkey/Redis server several processes share; \`llmux keys\` then works on its keys),
<PROVIDER>_API_KEY for each provider, LLMUX_ADMIN_KEY for \`llmux device\`.
`;

class UsageError extends Error {}

/** A command, unlike a server, may wait for another process writing the key store. */
const CLI_LOCK_WAIT_MS = 10_000;


function parse<const O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag}: "${value}" must be a whole number >= 1`);
  return n;
}

/** Runs the CLI; resolves with the exit code (serve resolves only when the server stops). */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  if (io === processIo) quietOnClosedPipe();
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout(HELP);
        return command === undefined ? 2 : 0;
      case '--version':
      case '-v':
      case 'version':
        io.stdout(`${VERSION}\n`);
        return 0;
      case 'serve':
        return await serve(rest, io);
      case 'keys':
        return await keys(rest, io);
      case 'models':
        return await models(rest, io);
      case 'usage':
        return await (await import('./commands/usage.ts')).usageCommand(rest, io);
      case 'setup':
        return await (await import('./commands/setup.ts')).setupCommand(rest, io);
      case 'device':
        return await (await import('./commands/device.ts')).deviceCommand(rest, io);
      case 'state':
        return await (await import('./commands/state.ts')).stateCommand(rest, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`llmux: ${err.message}\nRun "llmux --help" for usage.\n`);
      return 2;
    }
    if (err instanceof ConfigError || err instanceof KeyStoreError) {
      io.stderr(`${err.message.startsWith('llmux:') ? '' : 'llmux: '}${err.message}\n`);
      return 1;
    }
    io.stderr(`llmux: ${(err as Error).message}\n`);
    return 1;
  }
}

async function serve(args: string[], io: CliIo): Promise<number> {
  const { values } = parse(args, {
    host: { type: 'string' },
    port: { type: 'string' },
    config: { type: 'string' },
    home: { type: 'string' },
  });
  const port = parsePort(values.port, '--port');
  // Loaded here, not at the top: `llmux --version` and `llmux keys` start faster without them.
  const [{ createGateway }, { standardFeatures }] = await Promise.all([import('./gateway/server.ts'), import('./gateway/features.ts')]);
  const gateway = createGateway({ host: values.host, port, configPath: values.config, home: values.home, env: io.env, features: standardFeatures });
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

function describeLimits(record: KeyRecord, tiers: Record<TierName, TierLimits>, tierBudgets: Partial<Record<TierName, Budget>>): string {
  const { rpm, tpm, concurrency } = limitsFor(record, tiers);
  const budget = budgetFor(record, tierBudgets);
  return `${rpm} rpm, ${tpm} tpm, ${concurrency} concurrent${budget === undefined ? '' : `, $${budget.usd} a ${budget.period}`}`;
}

/** `--budget-usd` and `--budget-period` (default month), or undefined when neither is given. */
function parseBudgetFlags(usd: string | undefined, period: string | undefined): Budget | undefined {
  if (usd === undefined) {
    if (period !== undefined) throw new UsageError('--budget-period needs --budget-usd');
    return undefined;
  }
  const amount = Number(usd);
  if (usd.trim() === '' || !Number.isFinite(amount) || amount < 0) throw new UsageError(`--budget-usd: "${usd}" must be an amount of US dollars >= 0, like 25 or 2.50`);
  const every = period ?? 'month';
  if (every !== 'day' && every !== 'month') throw new UsageError(`--budget-period: "${every}" must be day or month`);
  return { usd: amount, period: every };
}

/** The key store `llmux keys` works on: the state server's with a state URL (config or LLMUX_STATE_URL), else the file. */
async function openKeys(home: string, io: CliIo): Promise<{ store: KeyStore; close(): Promise<void> }> {
  if (safeConfig(io, home).state === undefined) {
    const store = createKeyStore(home, { lockWaitMs: CLI_LOCK_WAIT_MS });
    return { store, close: async () => store.close() };
  }
  return (await import('./commands/state.ts')).openCliKeyStore(io, home, CLI_LOCK_WAIT_MS);
}

async function keys(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const home = (list: string[]): string => {
    const i = list.indexOf('--home');
    return resolveHome(i === -1 ? undefined : list[i + 1], io.env);
  };
  const withStore = async <T>(list: string[], use: (store: KeyStore) => Promise<T>): Promise<T> => {
    const opened = await openKeys(home(list), io);
    try {
      return await use(opened.store);
    } finally {
      await opened.close();
    }
  };
  switch (sub) {
    case 'create': {
      const { values } = parse(rest, {
        name: { type: 'string' },
        tier: { type: 'string' },
        rpm: { type: 'string' },
        tpm: { type: 'string' },
        concurrency: { type: 'string' },
        models: { type: 'string' },
        admin: { type: 'boolean' },
        'expires-in': { type: 'string' },
        'budget-usd': { type: 'string' },
        'budget-period': { type: 'string' },
        home: { type: 'string' },
      });
      const tier = values.tier ?? 'basic';
      if (!isTierName(tier)) throw new UsageError(`--tier: "${tier}" must be basic, pro or enterprise`);
      let expiresInMs: number | undefined;
      if (values['expires-in'] !== undefined) {
        expiresInMs = parseDuration(values['expires-in']);
        if (expiresInMs === undefined) throw new UsageError(`--expires-in: "${values['expires-in']}" must look like 30d, 12h, 15m or 45s`);
      }
      const limits: Partial<TierLimits> = {};
      const rpm = positiveInt(values.rpm, '--rpm');
      const tpm = positiveInt(values.tpm, '--tpm');
      const concurrency = positiveInt(values.concurrency, '--concurrency');
      if (rpm !== undefined) limits.rpm = rpm;
      if (tpm !== undefined) limits.tpm = tpm;
      if (concurrency !== undefined) limits.concurrency = concurrency;
      const models = values.models === undefined ? null : values.models.split(',').map((m) => m.trim()).filter((m) => m !== '');
      if (models !== null && models.length === 0) throw new UsageError('--models: give at least one model id');
      const budget = parseBudgetFlags(values['budget-usd'], values['budget-period']);
      const { key, record } = await withStore(rest, async (store) => store.create({ name: values.name, tier, limits, budget, models, admin: values.admin === true, expiresInMs }));
      io.stdout(`${key}\n`);
      const config = safeConfig(io);
      io.stderr(`created ${record.id} "${record.name}" (${record.tier}${record.admin ? ', admin' : ''}; ${describeLimits(record, config.tiers, config.tierBudgets)}${record.models === null ? '' : `; models ${record.models.join(', ')}`}${record.expires_at === null ? '' : `; expires ${record.expires_at}`})\n`);
      return 0;
    }
    case 'list': {
      const { values } = parse(rest, { json: { type: 'boolean' }, home: { type: 'string' } });
      const records = await withStore(rest, async (store) => store.list());
      const list = records.map(({ hash: _hash, ...visible }) => visible);
      if (values.json === true) {
        io.stdout(`${JSON.stringify(list, null, 2)}\n`);
        return 0;
      }
      const config = safeConfig(io);
      if (list.length === 0) io.stdout('no keys yet: llmux keys create --name NAME\n');
      for (const k of records) {
        const state = keyStatus(k, Date.now());
        io.stdout(`${k.id}  ${k.name.padEnd(16)}  ${k.tier.padEnd(10)}  ${state.padEnd(7)}  ${k.admin ? 'admin  ' : '       '}  ${describeLimits(k, config.tiers, config.tierBudgets)}  created ${k.created_at}${k.expires_at === null ? '' : `  expires ${k.expires_at}`}${k.models === null ? '' : `  models ${k.models.join(',')}`}\n`);
      }
      return 0;
    }
    case 'revoke': {
      const { positionals } = parse(rest, { home: { type: 'string' } }, true);
      const target = positionals[0];
      if (target === undefined || positionals.length !== 1) throw new UsageError('keys revoke needs one key id or name');
      const revoked = await withStore(rest, async (store) => store.revoke(target));
      if (revoked === undefined) {
        io.stderr(`llmux: no key with id or name "${target}"\n`);
        return 1;
      }
      io.stderr(`revoked ${revoked.id} "${revoked.name}"\n`);
      return 0;
    }
    default:
      throw new UsageError(`keys: expected create, list or revoke${sub === undefined ? '' : `, not "${sub}"`}`);
  }
}

/** Tier limits and the state URL; a broken config file doesn't stop key management. */
function safeConfig(io: CliIo, home?: string) {
  try {
    return loadConfig({ env: io.env, home });
  } catch {
    return loadConfig({ env: io.env, home, file: {} });
  }
}

async function models(args: string[], io: CliIo): Promise<number> {
  const { createCatalog } = await import('./catalog/catalog.ts');
  const { values } = parse(args, { json: { type: 'boolean' }, config: { type: 'string' }, home: { type: 'string' } });
  const config = loadConfig({ env: io.env, configPath: values.config, home: values.home });
  const catalog = createCatalog({ providers: config.providers, models: config.models, builtinCatalog: config.builtinCatalog, env: config.env });
  const list = catalog.list();
  if (values.json === true) {
    io.stdout(`${JSON.stringify(list.map((m) => ({ id: m.id, provider: m.provider, upstream_id: m.upstream_id })), null, 2)}\n`);
    return 0;
  }
  for (const m of list) io.stdout(`${m.id.padEnd(40)} ${m.provider.padEnd(12)} ctx ${m.context_length}\n`);
  return 0;
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
