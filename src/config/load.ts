/**
 * Configuration: flags, then environment, then the config file, then built-in defaults, turned
 * into one validated `Config` once at start-up (llmux.md sections 1 and 2). A bad config file
 * stops start-up with one line naming the file, the field and the problem.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Budget, Config, LimitsConfig, ModelEntry, ProviderConfig, ResponsesConfig, RetryConfig, StateConfig, TelemetryConfig, TierLimits, TierName, ValidationMode } from './types.ts';
import { TIER_NAMES, isTierName } from './types.ts';
import { builtinProviders } from '../catalog/providers.ts';
import { BUILTIN_MODELS, ECHO_MODEL } from '../catalog/builtin-models.ts';
import { isRecord } from '../common/json.ts';
import { AWS_CREDENTIAL_FIELDS, CAPABILITIES, MODEL_FIELDS, PRICING_FIELDS, PROVIDER_FIELDS, nonNegativeInt, positiveInt } from './entries.ts';
import { CONDITION_FIELDS, DEPLOYMENT_FIELDS, MODEL_ROUTING_FIELDS, PROVIDER_ROUTING_FIELDS, ROUTE_FIELDS, parseRoutedModel, parseRoutedProvider, parseRouting } from './routing.ts';
import type { Fail } from './entries.ts';

export { CONFIG_NAME_OF_FORMAT } from './entries.ts';
import { parseStateUrl } from '../state/state-url.ts';

export const DEFAULT_TIERS: Readonly<Record<TierName, TierLimits>> = Object.freeze({
  basic: { rpm: 60, tpm: 90_000, concurrency: 10 },
  pro: { rpm: 300, tpm: 450_000, concurrency: 40 },
  // Enterprise limits are custom per key; these apply only when a key gives none.
  enterprise: { rpm: 1_000, tpm: 2_000_000, concurrency: 100 },
});

export const DEFAULT_LIMITS: Readonly<LimitsConfig> = Object.freeze({
  maxBodyBytes: 32 * 1024 * 1024,
  upstreamTimeoutMs: 600_000,
  streamIdleTimeoutMs: 300_000,
  connectTimeoutMs: 10_000,
  pingIntervalMs: 15_000,
  shutdownTimeoutMs: 30_000,
  headersTimeoutMs: 30_000,
  requestTimeoutMs: 300_000,
  bodyTimeoutMs: 60_000,
  // Longer than the idle timeouts of what is put in front (nginx and AWS load balancers: 60 s;
  // nginx's own keepalive_timeout: 75 s), so the proxy, not llmux, closes an idle connection.
  keepAliveTimeoutMs: 75_000,
});

export const DEFAULT_RESPONSES: Readonly<ResponsesConfig> = Object.freeze({
  storeTtlMs: 86_400_000,
  storeMaxBytes: 64 * 1024 * 1024,
});

export const DEFAULT_RETRY: Readonly<RetryConfig> = Object.freeze({
  attempts: 3,
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  maxRetryAfterMs: 10_000,
});

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface ConfigInput {
  host?: string | undefined;
  port?: number | undefined;
  configPath?: string | undefined;
  home?: string | undefined;
  env?: Record<string, string | undefined>;
  /** A config object given directly (embedding); takes the place of the file. */
  file?: unknown;
}

/** Resolves `$LLMUX_HOME` (`--home`, `LLMUX_HOME`, `~/.llmux`). */
export function resolveHome(flag: string | undefined, env: Record<string, string | undefined>): string {
  return flag ?? (env['LLMUX_HOME'] || undefined) ?? join(homedir(), '.llmux');
}

/** Builds the whole configuration. Throws ConfigError with one clear line on any problem. */
export function loadConfig(input: ConfigInput = {}): Config {
  const env = input.env ?? process.env;
  const home = resolveHome(input.home, env);
  const host = input.host ?? (env['LLMUX_HOST'] || undefined) ?? '127.0.0.1';
  const port = input.port ?? parsePort(env['LLMUX_PORT'], 'LLMUX_PORT') ?? 8686;

  let file: unknown = input.file;
  let configPath: string | undefined;
  if (file === undefined) {
    const explicit = input.configPath ?? (env['LLMUX_CONFIG'] || undefined);
    configPath = explicit ?? join(home, 'config.json');
    file = readConfigFile(configPath, explicit !== undefined);
    if (file === undefined) configPath = undefined;
  }
  const where = configPath ?? 'config';
  return parseConfigObject(file ?? {}, { where, env, home, host, port, configPath });
}

function readConfigFile(path: string, required: boolean): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (!required && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`llmux: config file ${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`llmux: config file ${path}: not valid JSON (${(err as Error).message})`);
  }
}

function parsePort(value: string | number | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`llmux: ${name}: "${value}" is not a port number (0-65535)`);
  }
  return port;
}

export { parsePort };

interface ParseContext {
  where: string;
  env: Record<string, string | undefined>;
  home: string;
  host: string;
  port: number;
  configPath: string | undefined;
}

const KNOWN_TOP = new Set(['providers', 'models', 'tiers', 'limits', 'retry', 'builtin_catalog', 'telemetry', 'responses', 'state', 'validation', 'aliases', 'routes', '$schema']);
const TIER_FIELDS: readonly string[] = ['rpm', 'tpm', 'concurrency', 'budget_usd', 'budget_period'];
const LIMIT_FIELDS: Readonly<Record<string, keyof LimitsConfig>> = {
  max_body_bytes: 'maxBodyBytes',
  upstream_timeout_ms: 'upstreamTimeoutMs',
  stream_idle_timeout_ms: 'streamIdleTimeoutMs',
  connect_timeout_ms: 'connectTimeoutMs',
  ping_interval_ms: 'pingIntervalMs',
  shutdown_timeout_ms: 'shutdownTimeoutMs',
  headers_timeout_ms: 'headersTimeoutMs',
  request_timeout_ms: 'requestTimeoutMs',
  body_timeout_ms: 'bodyTimeoutMs',
  keep_alive_timeout_ms: 'keepAliveTimeoutMs',
};
const RETRY_FIELDS: Readonly<Record<string, keyof RetryConfig>> = {
  attempts: 'attempts',
  base_delay_ms: 'baseDelayMs',
  max_delay_ms: 'maxDelayMs',
  max_retry_after_ms: 'maxRetryAfterMs',
};
const RESPONSES_FIELDS = { store_ttl_s: 'storeTtlS', store_max_bytes: 'storeMaxBytes' } as const;
const TELEMETRY_FIELDS: readonly string[] = ['otlp_endpoint', 'headers'];
const STATE_FIELDS: readonly string[] = ['url', 'timeout_ms', 'on_failure', 'lease_ms'];

/**
 * Every field of the config file the loader reads, by the section it sits in (`provider` is each
 * of `providers`, `model` each of `models`, `tier` each of `tiers`; `config` the top level). Each
 * list is the one that section's unknown-field check uses, so a field the loader learns appears
 * here, and test/config/schema.test.ts holds schema/config.schema.json's sections to these lists.
 */
export const CONFIG_FIELDS: Readonly<Record<string, readonly string[]>> = {
  config: [...KNOWN_TOP],
  provider: [...PROVIDER_FIELDS, ...PROVIDER_ROUTING_FIELDS],
  credentials: AWS_CREDENTIAL_FIELDS,
  model: [...MODEL_FIELDS, ...MODEL_ROUTING_FIELDS],
  capabilities: CAPABILITIES,
  pricing: PRICING_FIELDS,
  tiers: TIER_NAMES,
  tier: TIER_FIELDS,
  limits: Object.keys(LIMIT_FIELDS),
  retry: Object.keys(RETRY_FIELDS),
  responses: Object.keys(RESPONSES_FIELDS),
  telemetry: TELEMETRY_FIELDS,
  state: STATE_FIELDS,
  deployment: DEPLOYMENT_FIELDS,
  route: ROUTE_FIELDS,
  when: CONDITION_FIELDS,
};

function parseConfigObject(raw: unknown, ctx: ParseContext): Config {
  const fail = (field: string, problem: string): never => {
    throw new ConfigError(`llmux: config file ${ctx.where}: ${field}: ${problem}`);
  };
  if (!isRecord(raw)) fail('(top level)', 'must be a JSON object');
  const obj = raw as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!KNOWN_TOP.has(key)) fail(key, `unknown field (known: ${[...KNOWN_TOP].filter((k) => k !== '$schema').join(', ')})`);
  }
  if (obj['$schema'] !== undefined && typeof obj['$schema'] !== 'string') fail('$schema', 'must be a string: where the config\'s JSON Schema is, for editors');

  const providers: Record<string, ProviderConfig> = builtinProviders(ctx.env);
  if (obj['providers'] !== undefined) {
    if (!isRecord(obj['providers'])) fail('providers', 'must be an object of provider name -> settings');
    for (const [id, p] of Object.entries(obj['providers'] as Record<string, unknown>)) {
      providers[id] = parseRoutedProvider(id, p, fail);
    }
  }

  const models: ModelEntry[] = [];
  if (obj['models'] !== undefined) {
    if (!Array.isArray(obj['models'])) fail('models', 'must be an array of model objects');
    const seen = new Set<string>();
    (obj['models'] as unknown[]).forEach((m, i) => {
      const model = parseRoutedModel(m, `models.${i}`, fail, providers);
      if (seen.has(model.id)) fail(`models.${i}.id`, `"${model.id}" appears twice`);
      seen.add(model.id);
      if (providers[model.provider] === undefined && model.provider !== 'llmux') {
        fail(`models.${i}.provider`, `"${model.provider}" is not a configured provider (known: ${Object.keys(providers).join(', ')})`);
      }
      models.push(model);
    });
    const ids = new Set([...models.map((m) => m.id), ...BUILTIN_MODELS.map((m) => m.id)]);
    models.forEach((m, i) => {
      m.fallbacks.forEach((f, j) => {
        if (!ids.has(f)) fail(`models.${i}.fallbacks.${j}`, `"${f}" is not a known model id`);
      });
    });
  }

  const tiers: Record<TierName, TierLimits> = {
    basic: { ...DEFAULT_TIERS.basic },
    pro: { ...DEFAULT_TIERS.pro },
    enterprise: { ...DEFAULT_TIERS.enterprise },
  };
  const tierBudgets: Partial<Record<TierName, Budget>> = {};
  if (obj['tiers'] !== undefined) {
    if (!isRecord(obj['tiers'])) fail('tiers', 'must be an object of tier name -> limits');
    for (const [name, t] of Object.entries(obj['tiers'] as Record<string, unknown>)) {
      if (!isTierName(name)) fail(`tiers.${name}`, 'unknown tier (basic, pro, enterprise)');
      if (!isRecord(t)) fail(`tiers.${name}`, 'must be an object with rpm, tpm, concurrency');
      const tier = tiers[name as TierName];
      for (const [k, v] of Object.entries(t as Record<string, unknown>)) {
        if (!TIER_FIELDS.includes(k)) fail(`tiers.${name}.${k}`, `unknown field (${TIER_FIELDS.join(', ')})`);
        if (k === 'budget_usd' || k === 'budget_period') continue;
        tier[k as keyof TierLimits] = positiveInt(v, `tiers.${name}.${k}`, fail);
      }
      const budget = parseBudget(t as Record<string, unknown>, `tiers.${name}`, fail);
      if (budget !== undefined) tierBudgets[name as TierName] = budget;
    }
  }

  const limits = readNumbers(obj['limits'], 'limits', DEFAULT_LIMITS, LIMIT_FIELDS, fail, () => positiveInt);
  const retry = readNumbers(obj['retry'], 'retry', DEFAULT_RETRY, RETRY_FIELDS, fail, (k) => (k === 'attempts' ? positiveInt : nonNegativeInt));

  let builtinCatalog = true;
  if (obj['builtin_catalog'] !== undefined) {
    if (typeof obj['builtin_catalog'] !== 'boolean') fail('builtin_catalog', 'must be true or false');
    builtinCatalog = obj['builtin_catalog'] as boolean;
  }

  let validation: ValidationMode = 'compatible';
  if (obj['validation'] !== undefined) {
    if (obj['validation'] !== 'compatible' && obj['validation'] !== 'strict') fail('validation', 'must be "compatible" (the default) or "strict"');
    validation = obj['validation'] as ValidationMode;
  }

  return {
    host: ctx.host,
    port: ctx.port,
    home: ctx.home,
    configPath: ctx.configPath,
    providers,
    models,
    builtinCatalog,
    tiers,
    limits,
    retry,
    tierBudgets,
    telemetry: parseTelemetry(obj['telemetry'], fail),
    responses: parseResponses(obj['responses'], fail),
    state: parseState(obj['state'], ctx.env['LLMUX_STATE_URL'] || undefined, fail),
    validation,
    env: ctx.env,
    routing: parseRouting(obj, models, {
      knownIds: new Set([ECHO_MODEL.id, ...models.map((m) => m.id), ...BUILTIN_MODELS.map((m) => m.id)]),
      discovering: Object.values(providers).some((p) => p.discover === true),
    }, fail),
  };
}

/** A tier's `budget_usd` and `budget_period` (default `month`), or undefined when it has none. */
function parseBudget(tier: Record<string, unknown>, at: string, fail: Fail): Budget | undefined {
  const usd = tier['budget_usd'];
  const period = tier['budget_period'] ?? 'month';
  if (usd === undefined) {
    if (tier['budget_period'] !== undefined) fail(`${at}.budget_period`, 'needs budget_usd beside it');
    return undefined;
  }
  if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) fail(`${at}.budget_usd`, 'must be a number of US dollars >= 0');
  if (period !== 'day' && period !== 'month') fail(`${at}.budget_period`, 'must be "day" or "month"');
  return { usd: usd as number, period: period as Budget['period'] };
}

/** `telemetry`: `otlp_endpoint` (an http(s) URL) and `headers` for the collector. */
function parseTelemetry(raw: unknown, fail: Fail): TelemetryConfig {
  const telemetry: TelemetryConfig = { otlpEndpoint: undefined, headers: {} };
  if (raw === undefined) return telemetry;
  if (!isRecord(raw)) fail('telemetry', 'must be an object with otlp_endpoint');
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (!TELEMETRY_FIELDS.includes(k)) fail(`telemetry.${k}`, `unknown field (${TELEMETRY_FIELDS.join(', ')})`);
    if (k === 'otlp_endpoint') {
      let url: URL | undefined;
      try {
        url = typeof v === 'string' ? new URL(v) : undefined;
      } catch {
        url = undefined;
      }
      if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) fail('telemetry.otlp_endpoint', 'must be an http:// or https:// URL, e.g. "http://127.0.0.1:4318"');
      telemetry.otlpEndpoint = (v as string).replace(/\/+$/, '');
    } else {
      if (!isRecord(v)) fail('telemetry.headers', 'must be an object of header name -> string');
      for (const [name, value] of Object.entries(v as Record<string, unknown>)) {
        if (typeof value !== 'string') fail(`telemetry.headers.${name}`, 'must be a string');
        telemetry.headers[name.toLowerCase()] = value as string;
      }
    }
  }
  return telemetry;
}

export const DEFAULT_STATE: Readonly<Omit<StateConfig, 'url'>> = Object.freeze({ timeoutMs: 250, onFailure: 'local', leaseMs: 30_000 });
/** A lease shorter than this would spend its life being refreshed (every third of it). */
const MIN_LEASE_MS = 1_000;

/**
 * `state`: `url` (or env `LLMUX_STATE_URL`, which wins over the file), `timeout_ms`, `on_failure`,
 * `lease_ms`. No state section and no env: undefined, everything stays in the process. A problem
 * with the URL is named without the URL itself, which may hold a password.
 */
function parseState(raw: unknown, envUrl: string | undefined, fail: Fail): StateConfig | undefined {
  if (raw === undefined && envUrl === undefined) return undefined;
  if (raw !== undefined && !isRecord(raw)) fail('state', 'must be an object with url, and optionally timeout_ms, on_failure, lease_ms');
  const fields = (raw ?? {}) as Record<string, unknown>;
  const state: StateConfig = { url: '', ...DEFAULT_STATE };
  for (const [k, v] of Object.entries(fields)) {
    if (!STATE_FIELDS.includes(k)) fail(`state.${k}`, `unknown field (${STATE_FIELDS.join(', ')})`);
    if (k === 'url') {
      if (typeof v !== 'string' || v === '') fail('state.url', 'must be a string like "redis://127.0.0.1:6379"');
      state.url = v as string;
    } else if (k === 'timeout_ms') {
      state.timeoutMs = positiveInt(v, 'state.timeout_ms', fail);
    } else if (k === 'lease_ms') {
      state.leaseMs = positiveInt(v, 'state.lease_ms', fail);
      if (state.leaseMs < MIN_LEASE_MS) fail('state.lease_ms', `must be at least ${MIN_LEASE_MS} (leases are refreshed every third of it)`);
    } else {
      if (v !== 'local' && v !== 'closed') fail('state.on_failure', 'must be "local" (fall back to this process\'s limits and keys) or "closed" (answer 503)');
      state.onFailure = v as StateConfig['onFailure'];
    }
  }
  if (envUrl !== undefined) state.url = envUrl;
  const where = envUrl !== undefined ? 'LLMUX_STATE_URL' : 'state.url';
  if (state.url === '') fail('state.url', 'is required (or set LLMUX_STATE_URL), like "redis://127.0.0.1:6379"');
  try {
    parseStateUrl(state.url);
  } catch (err) {
    fail(where, (err as Error).message);
  }
  return state;
}


/** `responses`: `store_ttl_s` and `store_max_bytes`, whole numbers >= 1. */
function parseResponses(raw: unknown, fail: Fail): ResponsesConfig {
  const read = readNumbers(raw, 'responses', { storeTtlS: DEFAULT_RESPONSES.storeTtlMs / 1000, storeMaxBytes: DEFAULT_RESPONSES.storeMaxBytes }, RESPONSES_FIELDS, fail, () => positiveInt);
  return { storeTtlMs: read.storeTtlS * 1000, storeMaxBytes: read.storeMaxBytes };
}

/**
 * A config section of whole numbers (`limits`, `retry`): the defaults, with each field given in
 * the file (snake_case) replacing its camelCase counterpart; unknown fields are refused.
 */
function readNumbers<T extends object>(
  raw: unknown,
  section: string,
  defaults: Readonly<T>,
  names: Record<string, keyof T>,
  fail: Fail,
  parserFor: (field: string) => (v: unknown, field: string, fail: Fail) => number,
): T {
  const out = { ...defaults } as T;
  if (raw === undefined) return out;
  if (!isRecord(raw)) fail(section, 'must be an object');
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const name = names[k];
    if (name === undefined) fail(`${section}.${k}`, `unknown field (known: ${Object.keys(names).join(', ')})`);
    (out as Record<keyof T, unknown>)[name as keyof T] = parserFor(k)(v, `${section}.${k}`, fail);
  }
  return out;
}
