/**
 * `llmux keys create|list|revoke`: the key store `llmux serve` reads — `$LLMUX_HOME/keys.json`, or
 * the state server's when one is configured (`state.ts`). A running server sees a change at once.
 */
import { resolveHome } from '../config/load.ts';
import type { Budget, TierLimits, TierName } from '../config/types.ts';
import { createKeyStore, parseDuration } from '../auth/key-store.ts';
import type { KeyRecord, KeyStore } from '../auth/key-store.ts';
import { budgetFor, keyStatus, limitsFor } from '../auth/key-record.ts';
import type { ParsedArgs } from './args.ts';
import { UsageError } from './args.ts';
import { cliConfig } from './cli-config.ts';
import type { CliIo } from './io.ts';

/** A command, unlike a server, may wait for another process writing the key store. */
const CLI_LOCK_WAIT_MS = 10_000;

function describeLimits(record: KeyRecord, tiers: Record<TierName, TierLimits>, tierBudgets: Partial<Record<TierName, Budget>>): string {
  const { rpm, tpm, concurrency } = limitsFor(record, tiers);
  const budget = budgetFor(record, tierBudgets);
  return `${rpm} rpm, ${tpm} tpm, ${concurrency} concurrent${budget === undefined ? '' : `, $${budget.usd} a ${budget.period}`}`;
}

/** The key store of `home`: the state server's with a state URL (config or LLMUX_STATE_URL), else the file; closed after `use`. */
async function withStore<T>(home: string, io: CliIo, use: (store: KeyStore) => Promise<T>): Promise<T> {
  let opened: { store: KeyStore; close(): Promise<void> };
  if (cliConfig(io, { home }).state === undefined) {
    const store = createKeyStore(home, { lockWaitMs: CLI_LOCK_WAIT_MS });
    opened = { store, close: async () => store.close() };
  } else {
    opened = await (await import('./state.ts')).openCliKeyStore(io, home, CLI_LOCK_WAIT_MS);
  }
  try {
    return await use(opened.store);
  } finally {
    await opened.close();
  }
}

/** `llmux keys create`: the key alone on stdout, its details on stderr. */
export async function createKey(args: ParsedArgs, io: CliIo): Promise<number> {
  const tier = args.text('tier') as TierName;
  let expiresInMs: number | undefined;
  const expiresIn = args.text('expires-in');
  if (expiresIn !== undefined) {
    expiresInMs = parseDuration(expiresIn);
    if (expiresInMs === undefined) throw new UsageError(`--expires-in: "${expiresIn}" must look like 30d, 12h, 15m or 45s`);
  }
  const limits: Partial<TierLimits> = {};
  for (const name of ['rpm', 'tpm', 'concurrency'] as const) {
    const value = args.number(name);
    if (value !== undefined) limits[name] = value;
  }
  const usd = args.number('budget-usd');
  if (usd === undefined && args.given('budget-period')) throw new UsageError('--budget-period needs --budget-usd');
  const budget: Budget | undefined = usd === undefined ? undefined : { usd, period: (args.text('budget-period') ?? 'month') as Budget['period'] };
  const models = args.list('models') ?? null;
  const home = resolveHome(args.text('home'), io.env);
  const { key, record } = await withStore(home, io, async (store) => store.create({ name: args.text('name'), tier, limits, budget, models, admin: args.flag('admin'), expiresInMs }));
  io.stdout(`${key}\n`);
  const config = cliConfig(io, { home });
  io.stderr(`created ${record.id} "${record.name}" (${record.tier}${record.admin ? ', admin' : ''}; ${describeLimits(record, config.tiers, config.tierBudgets)}${record.models === null ? '' : `; models ${record.models.join(', ')}`}${record.expires_at === null ? '' : `; expires ${record.expires_at}`})\n`);
  return 0;
}

/** `llmux keys list`: a line per key, or JSON without the hashes. */
export async function listKeys(args: ParsedArgs, io: CliIo): Promise<number> {
  const home = resolveHome(args.text('home'), io.env);
  const records = await withStore(home, io, async (store) => store.list());
  const list = records.map(({ hash: _hash, ...visible }) => visible);
  if (args.flag('json')) {
    io.stdout(`${JSON.stringify(list, null, 2)}\n`);
    return 0;
  }
  const config = cliConfig(io, { home });
  if (list.length === 0) io.stdout('no keys yet: llmux keys create --name NAME\n');
  for (const k of records) {
    const state = keyStatus(k, Date.now());
    io.stdout(`${k.id}  ${k.name.padEnd(16)}  ${k.tier.padEnd(10)}  ${state.padEnd(7)}  ${k.admin ? 'admin  ' : '       '}  ${describeLimits(k, config.tiers, config.tierBudgets)}  created ${k.created_at}${k.expires_at === null ? '' : `  expires ${k.expires_at}`}${k.models === null ? '' : `  models ${k.models.join(',')}`}\n`);
  }
  return 0;
}

/** `llmux keys revoke ID|NAME`. */
export async function revokeKey(args: ParsedArgs, io: CliIo): Promise<number> {
  const target = args.positionals[0] as string;
  const revoked = await withStore(resolveHome(args.text('home'), io.env), io, async (store) => store.revoke(target));
  if (revoked === undefined) {
    io.stderr(`llmux: no key with id or name "${target}"\n`);
    return 1;
  }
  io.stderr(`revoked ${revoked.id} "${revoked.name}"\n`);
  return 0;
}
