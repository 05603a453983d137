/**
 * The command line's side of shared state (llmux.md section 6):
 * - `llmux state migrate --from-home DIR [--config FILE]`: copies a file key store
 *   (`DIR/keys.json`) and its usage (`DIR/usage/`) into the state server named by `state.url` in
 *   the config or `LLMUX_STATE_URL`. Keys already there (same id) are left as they are; the usage
 *   is added as one batch named by its content, so running the migration twice adds it once.
 *   Nothing in DIR is changed.
 * - `openCliKeyStore`: the key store `llmux keys` works on: the state server's when one is
 *   configured, else `$LLMUX_HOME/keys.json`; `openSharedUsage`: what `llmux usage` reads then.
 *
 * A command may wait longer for the server than a request does (`CLI_TIMEOUT_MS`): nobody is
 * waiting on the other side of it.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CliIo } from './io.ts';
import type { StateConfig } from '../config/types.ts';
import { resolveHome } from '../config/load.ts';
import type { ParsedArgs } from './args.ts';
import { cliConfig } from './cli-config.ts';
import { createKeyStore } from '../auth/key-store.ts';
import type { KeyRecord, KeyStore } from '../auth/key-store.ts';
import type { UsageQuery, UsageRow } from '../usage/ledger.ts';
import { createLedgerReader } from '../usage/ledger-reader.ts';
import { NANOS_PER_USD, createRowTable } from '../usage/ledger-format.ts';
import type { RowTable } from '../usage/ledger-format.ts';
import { createRespClient, parseStateUrl } from '../state/resp.ts';
import type { RespClient } from '../state/resp.ts';
import { createSharedKeyStore } from '../state/key-store.ts';
import { createSharedLedger } from '../state/usage-ledger.ts';

/** How long a command waits for the state server, per round trip. */
const CLI_TIMEOUT_MS = 5_000;

function openClient(state: StateConfig): RespClient {
  return createRespClient({ url: state.url, timeoutMs: Math.max(state.timeoutMs, CLI_TIMEOUT_MS) });
}

/** A key store for a command, and what closes it. */
export interface CliKeyStore {
  store: KeyStore;
  /** Where the keys are: a file path, or the state server without its password. */
  where: string;
  close(): Promise<void>;
}

/**
 * The state server's key store when a state URL is configured (read before it is returned; throws
 * when the server cannot be read), else the file store in `home`.
 */
export async function openCliKeyStore(io: CliIo, home: string, lockWaitMs: number): Promise<CliKeyStore> {
  const state = cliConfig(io, { home }).state;
  if (state === undefined) {
    const store = createKeyStore(home, { lockWaitMs });
    return { store, where: store.path, close: async () => store.close() };
  }
  const client = openClient(state);
  const displayUrl = parseStateUrl(state.url).displayUrl;
  const store = createSharedKeyStore({ client, displayUrl });
  try {
    await store.refresh();
  } catch (error) {
    await client.close();
    throw new Error(`cannot read the keys on state server ${displayUrl}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    store,
    where: displayUrl,
    close: async () => {
      store.close();
      await client.close();
    },
  };
}

/** The usage and key names `llmux usage` shows, read from the state server. */
export interface CliSharedUsage {
  keys: KeyRecord[];
  query(query: UsageQuery): Promise<UsageRow[]>;
  close(): Promise<void>;
}

/** Opens the state server's usage for `llmux usage` (reads the keys for their names first). */
export async function openSharedUsage(state: StateConfig): Promise<CliSharedUsage> {
  const client = openClient(state);
  const displayUrl = parseStateUrl(state.url).displayUrl;
  const store = createSharedKeyStore({ client, displayUrl });
  const ledger = createSharedLedger({ client, flushIntervalMs: 3_600_000 });
  const close = async (): Promise<void> => {
    await ledger.close();
    await client.close();
  };
  try {
    await store.refresh();
  } catch (error) {
    await close();
    throw new Error(`cannot read state server ${displayUrl}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { keys: store.list(), query: (query) => ledger.query(query), close };
}

/** Every row of a usage directory, read without writing to it. */
async function readUsageDir(dir: string): Promise<{ rows: RowTable; problems: string[] }> {
  const rows = createRowTable();
  const problems: string[] = [];
  if (!existsSync(dir)) return { rows, problems };
  const reader = createLedgerReader({ dir, writer: 'llmux-state-migrate', onOtherRow: () => {}, report: (error) => problems.push(error.message) });
  for (const totals of await reader.snapshot(-Infinity)) rows.merge(totals.table);
  for (const table of reader.tails()) rows.merge(table);
  return { rows, problems };
}

/** A name for the rows that is the same whenever the same rows are migrated. */
function batchIdOf(rows: RowTable): string {
  const lines: string[] = [];
  rows.forEach((hour, keyId, model, counts) => lines.push(JSON.stringify([hour, keyId, model, ...counts])));
  return `migrate:${createHash('sha256').update(lines.sort().join('\n')).digest('base64url')}`;
}

/** `llmux state migrate --from-home DIR`; resolves with the exit code (0 done, 1 failure). */
export async function runMigrate(args: ParsedArgs, io: CliIo): Promise<number> {
  const from = args.text('from-home') as string;
  if (!existsSync(from)) throw new Error(`${from} does not exist`);
  const state = cliConfig(io, { configPath: args.text('config'), home: resolveHome(undefined, io.env) }).state;
  if (state === undefined) throw new Error('no state server to migrate to: set LLMUX_STATE_URL, or "state": {"url": …} in the config');
  const displayUrl = parseStateUrl(state.url).displayUrl;

  // Read everything first: a store that cannot be read migrates nothing.
  const records = existsSync(join(from, 'keys.json')) ? createKeyStore(from).list() : [];
  const { rows, problems } = await readUsageDir(join(from, 'usage'));
  for (const problem of problems) io.stderr(`llmux: ${problem}\n`);

  const client = openClient(state);
  try {
    const store = createSharedKeyStore({ client, displayUrl, writeTimeoutMs: CLI_TIMEOUT_MS });
    const keys = await store.importRecords(records);
    const ledger = createSharedLedger({ client, flushIntervalMs: 3_600_000 });
    let requests = 0;
    let nanos = 0;
    rows.forEach((_hour, _key, _model, counts) => {
      requests += counts[0];
      nanos += counts[5];
    });
    const added = await ledger.addRows(rows, batchIdOf(rows));
    await ledger.close();
    store.close();
    io.stderr(`migrated ${keys.added} key(s) from ${from} to ${displayUrl}${keys.skipped > 0 ? ` (${keys.skipped} already there, left as they are)` : ''}\n`);
    if (rows.size === 0) io.stderr('no usage to migrate\n');
    else if (added) io.stderr(`migrated usage: ${rows.size} row(s), ${requests} request(s), $${(nanos / NANOS_PER_USD).toFixed(4)}\n`);
    else io.stderr('this usage was migrated before; it was not added again\n');
    return 0;
  } finally {
    await client.close();
  }
}
