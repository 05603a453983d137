/**
 * `llmux usage [--since 7d] [--until TIME] [--by day|hour|model|key] [--key ID|NAME|all] [--json]
 * [--home DIR]`: the usage ledger of `$LLMUX_HOME/usage/` as a table, or as the JSON of
 * `GET /v1/usage` (llmux.md section 7). It reads the files directly, so it works with no server
 * running and beside a running one (the ledger is made to be shared by processes); what a server
 * recorded in the last second may not be on disk yet.
 *
 * With a state server configured (config `state.url` or `LLMUX_STATE_URL`), the usage and the key
 * names are read from it instead (llmux.md section 6).
 *
 * Decisions: `--since` and `--until` take a duration back from now (`7d`, `12h`, `30m`) or an ISO
 * 8601 date or time; `--by` takes several groupings too (`day,model`); `--key` defaults to every
 * key (whoever can read the files is the gateway's owner), and a name is looked up in the key
 * store. Exit codes: 0 done, 1 the ledger could not be read, 2 usage error.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CliIo } from './io.ts';
import type { ParsedArgs } from './args.ts';
import { UsageError } from './args.ts';
import { cliConfig } from './cli-config.ts';
import { resolveHome } from '../config/load.ts';
import { createKeyStore, parseDuration } from '../auth/key-store.ts';
import type { KeyRecord } from '../auth/key-record.ts';
import { createFileLedger } from '../usage/ledger.ts';
import type { UsageGrouping, UsageRow } from '../usage/ledger.ts';
import { parseGroupings, parseIsoTime } from '../usage/usage-params.ts';
import { GatewayError } from '../common/errors.ts';

const KEY_ID = /^key_[0-9a-f]{16}$/;

/** A `--since`/`--until` value in ms: a duration back from `nowMs`, or an ISO 8601 time. */
function parseWhen(text: string, flag: string, nowMs: number): number {
  const back = parseDuration(text);
  if (back !== undefined) return nowMs - back;
  const ms = parseIsoTime(text);
  if (ms === undefined) throw new UsageError(`${flag}: "${text}" must be a duration like 7d or 12h, or an ISO 8601 date or time like 2026-03-01`);
  return ms;
}

/** `2026-03-14 10:00` (UTC). */
const minutes = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
const whole = (n: number): string => n.toLocaleString('en-US');
const usd = (n: number): string => `$${n.toFixed(4)}`;

/** The rows as a text table with a total line; columns follow the grouping. */
export function usageTable(rows: readonly UsageRow[], by: readonly UsageGrouping[], names: ReadonlyMap<string, string>, showKey: boolean): string {
  const head: string[] = [];
  const cells = (row: UsageRow): string[] => {
    const out: string[] = [];
    if (by.includes('day')) out.push(row.start.slice(0, 10));
    if (by.includes('hour')) out.push(minutes(row.start));
    if (showKey) out.push(row.key_id ?? 'all keys', row.key_id === null ? '' : names.get(row.key_id) ?? '');
    if (by.includes('model')) out.push(row.model ?? '');
    return out;
  };
  if (by.includes('day')) head.push('day');
  if (by.includes('hour')) head.push('hour (UTC)');
  if (showKey) head.push('key', 'name');
  if (by.includes('model')) head.push('model');
  const labels = head.length;
  head.push('requests', 'input', 'output', 'cache read', 'cache write', 'cost');
  const total = { requests: 0, input: 0, output: 0, read: 0, write: 0, cost: 0 };
  const body = rows.map((row) => {
    total.requests += row.requests;
    total.input += row.input_tokens;
    total.output += row.output_tokens;
    total.read += row.cache_read_input_tokens;
    total.write += row.cache_creation_input_tokens;
    total.cost += row.cost_usd;
    return [...cells(row), whole(row.requests), whole(row.input_tokens), whole(row.output_tokens), whole(row.cache_read_input_tokens), whole(row.cache_creation_input_tokens), usd(row.cost_usd)];
  });
  const totalRow = [...Array.from({ length: labels }, (_, i) => (i === 0 ? 'total' : '')), whole(total.requests), whole(total.input), whole(total.output), whole(total.read), whole(total.write), usd(total.cost)];
  const table = [head, ...body, ...(rows.length > 1 ? [totalRow] : [])];
  const widths = head.map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length)));
  // Labels left-aligned, numbers right-aligned; no trailing spaces.
  return `${table.map((r) => r.map((cell, i) => (i < labels ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ').trimEnd()).join('\n')}\n`;
}

/** Runs `llmux usage …`; resolves with the exit code. */
export async function runUsage(args: ParsedArgs, io: CliIo): Promise<number> {
  const nowMs = (io.now ?? Date.now)();
  const home = resolveHome(args.text('home'), io.env);
  const untilText = args.text('until');
  const until = untilText === undefined ? nowMs : parseWhen(untilText, '--until', nowMs);
  const since = parseWhen(args.text('since') as string, '--since', nowMs);
  if (since >= until) throw new UsageError('--since must be before --until');
  let by: UsageGrouping[];
  try {
    by = parseGroupings(args.text('by') as string, '--by');
  } catch (err) {
    if (err instanceof GatewayError) throw new UsageError(err.message);
    throw err;
  }

  // With a state server (config or LLMUX_STATE_URL), the usage and keys are there, not in the home.
  const state = cliConfig(io, { home }).state;
  const shared = state === undefined ? undefined : await (await import('./state.ts')).openSharedUsage(state);
  let keys: KeyRecord[] = shared?.keys ?? [];
  if (shared === undefined) {
    try {
      keys = createKeyStore(home).list();
    } catch (err) {
      io.stderr(`llmux usage: key names not shown: ${(err as Error).message}\n`);
    }
  }
  const names = new Map(keys.map((k) => [k.id, k.name]));
  let keyId: string | undefined;
  const wanted = args.text('key') as string;
  if (wanted !== 'all') {
    keyId = KEY_ID.test(wanted) ? wanted : keys.find((k) => k.name === wanted && k.revoked_at === null)?.id ?? keys.find((k) => k.name === wanted)?.id;
    if (keyId === undefined) {
      await shared?.close();
      throw new UsageError(`--key: no key with id or name "${wanted}"`);
    }
  }

  const dir = join(home, 'usage');
  let rows: UsageRow[] = [];
  if (shared !== undefined) {
    try {
      rows = await shared.query({ since, until, keyId, groupBy: by });
    } finally {
      await shared.close();
    }
  } else if (existsSync(dir)) {
    // A home without a usage folder has none yet; opening the ledger would create the folder.
    let failed = false;
    const ledger = await createFileLedger({ dir, onError: (error) => {
      failed = true;
      io.stderr(`llmux usage: ${error.message}\n`);
    } });
    try {
      rows = await ledger.query({ since, until, keyId, groupBy: by });
    } finally {
      await ledger.close();
    }
    if (failed && rows.length === 0) return 1;
  }

  if (args.flag('json')) {
    io.stdout(`${JSON.stringify({ object: 'list', data: rows }, null, 2)}\n`);
    return 0;
  }
  const range = `from ${minutes(new Date(since).toISOString())} to ${minutes(new Date(until).toISOString())} UTC${keyId === undefined ? '' : ` for ${names.get(keyId) ?? keyId} (${keyId})`}`;
  if (rows.length === 0) {
    io.stdout(`no usage ${range}\n`);
    return 0;
  }
  io.stdout(`usage ${range}\n\n${usageTable(rows, by, names, by.includes('key') || keyId !== undefined)}`);
  return 0;
}
