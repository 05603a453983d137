/**
 * `llmux doctor`'s checks, also run by the dashboard's Health section: for the config llmux serves
 * with — the config itself, each provider a model needs (its credential and its endpoint, by the
 * provider's platform: `providers.ts`), the state server (PING and its version) and the key store
 * (read as the server reads it). A row per check with a verdict and a hint (`report.ts`).
 *
 * Which providers are checked: those the config file adds or changes, those its models use, and
 * built-in ones whose credential is set (their built-in models are then served). A built-in
 * provider without its variable is not set up, not broken: it is listed as `off`. A provider no
 * model uses only warns. Every check is bounded by `timeoutMs`; providers are checked at once.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config, ProviderConfig } from '../config/types.ts';
import { builtinProviders, isProviderUsable } from '../catalog/providers.ts';
import { BUILTIN_MODELS } from '../catalog/builtin-models.ts';
import { KeyStoreError, parseKeyFile } from '../auth/key-store.ts';
import type { KeyRecord } from '../auth/key-record.ts';
import { keyStatus } from '../auth/key-record.ts';
import { createRespClient, parseStateUrl } from '../state/resp.ts';
import type { RespClient } from '../state/resp.ts';
import { createSharedKeyStore } from '../state/key-store.ts';
import { checkProvider, credentialSource } from './providers.ts';
import type { CheckResult, DoctorReport } from './report.ts';
import { reportOf } from './report.ts';

export const DEFAULT_DOCTOR_TIMEOUT_MS = 5_000;

export interface DiagnoseOptions {
  /** The config to check (throws, with one line naming the problem, when it does not load). */
  load(): Config;
  /** How long each endpoint and the state server may take to answer. */
  timeoutMs?: number | undefined;
  /** The config is a running gateway's, loaded at its start-up (the dashboard's checks). */
  running?: boolean;
  now?: (() => number) | undefined;
}

/** Runs every check; never throws. */
export async function diagnose(options: DiagnoseOptions): Promise<DoctorReport> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DOCTOR_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  let config: Config;
  try {
    config = options.load();
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^llmux: /, '') : String(error);
    return reportOf([
      { name: 'config', verdict: 'fail', detail: message, hint: '`llmux serve` will not start with this config: fix what the message names' },
      { name: 'the other checks', verdict: 'off', detail: 'not run: they check the config llmux would serve with' },
    ]);
  }
  const source = config.configPath === undefined ? 'no config file: the built-in defaults' : config.configPath;
  const checks: CheckResult[] = [{ name: 'config', verdict: 'ok', detail: options.running === true ? `${source}, as loaded at start-up` : source }];
  const [providerRows, stateRows] = await Promise.all([providerChecks(config, timeoutMs), stateChecks(config, timeoutMs, now)]);
  checks.push(...providerRows, ...stateRows);
  return reportOf(checks);
}

/** Provider id -> how many models (the file's, and the built-in ones when served) use it. */
function modelsPerProvider(config: Config): Map<string, number> {
  const counts = new Map<string, number>();
  const ids = new Set(config.models.map((m) => m.id));
  const builtin = config.builtinCatalog ? BUILTIN_MODELS.filter((m) => !ids.has(m.id)) : [];
  for (const model of [...config.models, ...builtin]) counts.set(model.provider, (counts.get(model.provider) ?? 0) + 1);
  return counts;
}

async function providerChecks(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const used = modelsPerProvider(config);
  const fileModels = new Set(config.models.map((m) => m.provider));
  const builtin = builtinProviders(config.env);
  const changed = (p: ProviderConfig): boolean => JSON.stringify(builtin[p.id]) !== JSON.stringify(p);
  const idle: ProviderConfig[] = [];
  const runs: Array<Promise<CheckResult[]>> = [];
  for (const provider of Object.values(config.providers)) {
    const models = used.get(provider.id) ?? 0;
    if (!fileModels.has(provider.id) && !changed(provider) && !(models > 0 && isProviderUsable(provider, config.env))) {
      idle.push(provider);
      continue;
    }
    const upstreamIds = config.models.filter((m) => m.provider === provider.id).map((m) => m.upstream_id);
    runs.push(checkProvider(provider, { env: config.env, timeoutMs, needed: models > 0, upstreamIds }).then((rows) => models > 0 ? rows : [
      { name: `provider ${provider.id}: models`, verdict: 'warn', detail: 'no model uses it', hint: `add a model with "provider": "${provider.id}", or remove the provider` },
      ...rows,
    ]));
  }
  const rows = (await Promise.all(runs)).flat();
  if (idle.length > 0) {
    const example = idle.find((p) => !p.keyless && credentialSource(p).startsWith('env:'));
    const how = example === undefined ? '' : `: set a provider's variable (${credentialSource(example).slice(4)} for ${example.id}) to serve its built-in models`;
    rows.push({ name: 'providers not set up', verdict: 'off', detail: `${idle.map((p) => p.id).join(', ')}${how}` });
  }
  return rows;
}

/** The state server (PING, `INFO server`) and the key store (the state server's, or the file). */
async function stateChecks(config: Config, timeoutMs: number, now: () => number): Promise<CheckResult[]> {
  if (config.state === undefined) {
    return [
      { name: 'state server', verdict: 'off', detail: `none: keys, limits and usage stay in this process and ${config.home}` },
      fileKeyStoreCheck(join(config.home, 'keys.json'), now()),
    ];
  }
  const state = config.state;
  const { displayUrl } = parseStateUrl(state.url);
  const client = createRespClient({ url: state.url, timeoutMs, connectTimeoutMs: timeoutMs });
  try {
    const server = await stateServerCheck(client, displayUrl);
    if (server.verdict !== 'ok') return [server, { name: 'key store', verdict: 'fail', detail: `on ${displayUrl}: not read, the state server did not answer` }];
    return [server, await sharedKeyStoreCheck(client, displayUrl, now())];
  } finally {
    await client.close();
  }
}

async function stateServerCheck(client: RespClient, displayUrl: string): Promise<CheckResult> {
  const name = 'state server';
  try {
    const pong = await client.command(['PING']);
    const info = await client.command(['INFO', 'server']);
    const fields = new Map(String(info).split(/\r?\n/).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)] as const));
    const valkey = fields.get('valkey_version');
    const version = valkey !== undefined ? `Valkey ${valkey}` : `Redis ${fields.get('redis_version') ?? '(version unknown)'}`;
    return { name, verdict: pong === 'PONG' ? 'ok' : 'warn', detail: `${displayUrl}: ${version}${pong === 'PONG' ? '' : `, PING answered ${String(pong)}`}` };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    const auth = /WRONGPASS|NOAUTH|NOPERM|invalid password/i.test(why);
    return {
      name,
      verdict: 'fail',
      detail: `${displayUrl}: ${why}`,
      hint: auth ? 'check the user and password in state.url (or LLMUX_STATE_URL)' : `is the state server at ${displayUrl} running? (state.url or LLMUX_STATE_URL)`,
    };
  }
}

/** Counts and the admin-key warning, the same for both stores. */
function keyRows(where: string, records: readonly KeyRecord[], nowMs: number): CheckResult {
  const active = records.filter((k) => keyStatus(k, nowMs) === 'active');
  const admins = active.filter((k) => k.admin).length;
  const detail = `${where}: ${records.length} key(s), ${active.length} active, ${admins} admin`;
  if (records.length > 0 && admins === 0) {
    return { name: 'key store', verdict: 'warn', detail, hint: 'no active admin key for the dashboard and `llmux device`: `llmux keys create --admin` makes one' };
  }
  return { name: 'key store', verdict: 'ok', detail };
}

async function sharedKeyStoreCheck(client: RespClient, displayUrl: string, nowMs: number): Promise<CheckResult> {
  const store = createSharedKeyStore({ client, displayUrl });
  try {
    await store.refresh();
    const records = store.list();
    if (records.length === 0) return { name: 'key store', verdict: 'ok', detail: `on ${displayUrl}: empty; the first \`llmux serve\` makes an admin key` };
    return keyRows(`on ${displayUrl}`, records, nowMs);
  } catch (error) {
    return { name: 'key store', verdict: 'fail', detail: `on ${displayUrl}: ${error instanceof Error ? error.message : String(error)}`, hint: 'the server answers, but its keys cannot be read: `llmux keys list` shows the same problem' };
  } finally {
    store.close();
  }
}

function fileKeyStoreCheck(path: string, nowMs: number): CheckResult {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { name: 'key store', verdict: 'ok', detail: `${path}: none yet; the first \`llmux serve\` makes it with an admin key` };
    return { name: 'key store', verdict: 'fail', detail: `${path}: cannot be read (${code ?? 'error'})`, hint: `llmux needs to read and write ${path}` };
  }
  try {
    return keyRows(path, parseKeyFile(text, path), nowMs);
  } catch (error) {
    if (!(error instanceof KeyStoreError)) throw error;
    return { name: 'key store', verdict: 'fail', detail: error.message, hint: 'restore it from a backup, or move it away to start with an empty store' };
  }
}
