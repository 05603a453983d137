/**
 * The config file's routing settings (llmux.md section 10), read beside src/config/entries.ts:
 * a provider's `api_keys` and `discover`, a model's `deployments`, `routing` and `sticky`, and the
 * top-level `aliases` and `routes`. Each problem is one clear error naming the field, as the rest
 * of the file's are.
 *
 * Decisions where the contract is silent:
 * - `api_key` and `api_keys` together, or `provider`/`upstream_id` and `deployments` together, are
 *   refused: which one is meant cannot be guessed.
 * - The same deployment (`provider` + `upstream_id`) under two models is one deployment, so its
 *   `rpm` / `tpm` (the upstream's limits) may be given under either, but not differently.
 * - An alias or route target must be a model id the file or the built-in catalog knows, unless a
 *   provider discovers its models (the target may be one of those); never an alias only (no chains).
 * - `client_format` names the client's API: `chat`, `messages`, `responses` or `gemini`; it and
 *   `key_tier` take one name or an array of them.
 */
import type { AliasRule, DeploymentEntry, ModelEntry, ProviderConfig, RouteClientFormat, RouteConditions, RouteRule, RoutingConfig, RoutingStrategy, TierName } from './types.ts';
import { isTierName, ROUTING_STRATEGIES, TIER_NAMES } from './types.ts';
import { parseModel, parseProvider, positiveInt } from './entries.ts';
import type { Fail } from './entries.ts';
import { isRecord } from '../common/json.ts';

const ENV_PREFIX = 'env:';
/** More keys than this in one pool is a mistake, not a pool. */
const MAX_KEYS = 64;
const MAX_DEPLOYMENTS = 64;
const MAX_ID_LENGTH = 256;
const CLIENT_FORMATS: readonly RouteClientFormat[] = ['chat', 'messages', 'responses', 'gemini'];
/** A deployment's fields (the loader's CONFIG_FIELDS lists them for the schema test). */
export const DEPLOYMENT_FIELDS: readonly string[] = ['provider', 'upstream_id', 'weight', 'rpm', 'tpm'];
/** A route's fields. */
export const ROUTE_FIELDS: readonly string[] = ['when', 'model'];
export const CONDITION_FIELDS: readonly string[] = ['model', 'thinking', 'has_images', 'has_tools', 'input_tokens_over', 'client_format', 'key_tier'];

/** Copies `raw` without `names`, returning what was taken out. */
function takeOut(raw: unknown, names: readonly string[]): { rest: unknown; taken: Record<string, unknown> } {
  if (!isRecord(raw)) return { rest: raw, taken: {} };
  const rest: Record<string, unknown> = {};
  const taken: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (names.includes(key)) taken[key] = value;
    else rest[key] = value;
  }
  return { rest, taken };
}

/** The provider fields read here rather than by src/config/entries.ts (the loader's CONFIG_FIELDS lists them). */
export const PROVIDER_ROUTING_FIELDS: readonly string[] = ['api_keys', 'discover'];
/** The model fields read here rather than by src/config/entries.ts. */
export const MODEL_ROUTING_FIELDS: readonly string[] = ['deployments', 'routing', 'sticky'];

/** A provider (src/config/entries.ts `parseProvider`) with its `api_keys` and `discover`. */
export function parseRoutedProvider(id: string, raw: unknown, fail: Fail): ProviderConfig {
  const at = `providers.${id}`;
  const { rest, taken } = takeOut(raw, PROVIDER_ROUTING_FIELDS);
  const provider = parseProvider(id, rest, fail);
  const discover = taken['discover'];
  if (discover !== undefined && typeof discover !== 'boolean') fail(`${at}.discover`, 'must be true or false: whether its models are read from GET {base_url}/models');
  if (discover === true) provider.discover = true;
  const keys = taken['api_keys'];
  if (keys === undefined) return provider;
  if (isRecord(raw) && raw['api_key'] !== undefined) fail(`${at}.api_keys`, 'give api_key or api_keys, not both');
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS) fail(`${at}.api_keys`, `must be an array of 1 to ${MAX_KEYS} keys, each the key itself or "env:NAME"`);
  const seen = new Set<string>();
  (keys as unknown[]).forEach((key, index) => {
    if (typeof key !== 'string' || key === '' || key === ENV_PREFIX) fail(`${at}.api_keys.${index}`, 'must be a non-empty string: the key itself or "env:NAME"');
    if (seen.has(key as string)) fail(`${at}.api_keys.${index}`, 'appears twice');
    seen.add(key as string);
  });
  const apiKeys = Object.freeze([...(keys as string[])]);
  return { ...provider, apiKey: apiKeys[0], keyless: false, apiKeys };
}

/**
 * A model (src/config/entries.ts `parseModel`) with its `deployments`, `routing` and `sticky`;
 * `provider` and `upstream_id` become the first deployment's, so code that knows one deployment
 * keeps working. Every deployment's provider must be in `providers`.
 */
export function parseRoutedModel(raw: unknown, at: string, fail: Fail, providers: Readonly<Record<string, ProviderConfig>>): ModelEntry {
  const { rest, taken } = takeOut(raw, MODEL_ROUTING_FIELDS);
  let deployments: DeploymentEntry[] | undefined;
  if (taken['deployments'] !== undefined) {
    const given = rest as Record<string, unknown>;
    if (given['provider'] !== undefined || given['upstream_id'] !== undefined) fail(`${at}.deployments`, 'give provider and upstream_id, or deployments, not both');
    deployments = parseDeployments(taken['deployments'], `${at}.deployments`, fail, providers);
    given['provider'] = deployments[0]!.provider;
    given['upstream_id'] = deployments[0]!.upstream_id;
  }
  const model = parseModel(rest, at, fail);
  if (deployments !== undefined) model.deployments = deployments;
  const routing = taken['routing'];
  if (routing !== undefined) {
    if (!(ROUTING_STRATEGIES as readonly unknown[]).includes(routing)) fail(`${at}.routing`, `must be one of ${ROUTING_STRATEGIES.map((s) => `"${s}"`).join(', ')}`);
    model.routing = routing as RoutingStrategy;
  }
  const sticky = taken['sticky'];
  if (sticky !== undefined) {
    if (typeof sticky !== 'boolean') fail(`${at}.sticky`, 'must be true or false: whether a conversation stays on its deployment');
    model.sticky = sticky as boolean;
  }
  return model;
}

function parseDeployments(raw: unknown, at: string, fail: Fail, providers: Readonly<Record<string, ProviderConfig>>): DeploymentEntry[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_DEPLOYMENTS) fail(at, `must be an array of 1 to ${MAX_DEPLOYMENTS} deployments, each {provider, upstream_id}`);
  const seen = new Set<string>();
  return (raw as unknown[]).map((entry, index) => {
    const here = `${at}.${index}`;
    if (!isRecord(entry)) fail(here, 'must be an object with provider and upstream_id');
    const d = entry as Record<string, unknown>;
    for (const key of Object.keys(d)) if (!DEPLOYMENT_FIELDS.includes(key)) fail(`${here}.${key}`, `unknown field (${DEPLOYMENT_FIELDS.join(', ')})`);
    const provider = d['provider'];
    if (typeof provider !== 'string' || !Object.hasOwn(providers, provider)) {
      fail(`${here}.provider`, `${typeof provider === 'string' ? `"${provider}" is not a configured provider` : 'must name a provider'} (known: ${Object.keys(providers).join(', ')})`);
    }
    const upstreamId = d['upstream_id'];
    if (typeof upstreamId !== 'string' || upstreamId === '' || upstreamId.length > MAX_ID_LENGTH) fail(`${here}.upstream_id`, 'must be a non-empty string: the model id the provider knows');
    const id = `${provider as string}/${upstreamId as string}`;
    if (seen.has(id)) fail(here, `"${id}" appears twice in this model`);
    seen.add(id);
    const weight = d['weight'] ?? 1;
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0 || weight > 1_000_000) fail(`${here}.weight`, 'must be a number > 0 (a share relative to the other deployments)');
    const deployment: DeploymentEntry = { provider: provider as string, upstream_id: upstreamId as string, weight: weight as number };
    if (d['rpm'] !== undefined) deployment.rpm = positiveInt(d['rpm'], `${here}.rpm`, fail);
    if (d['tpm'] !== undefined) deployment.tpm = positiveInt(d['tpm'], `${here}.tpm`, fail);
    return deployment;
  });
}

/** What `parseRouting` checks targets against. */
export interface RoutingTargets {
  /** Model ids the file and the built-in catalog know. */
  knownIds: ReadonlySet<string>;
  /** Some provider discovers its models, so a target may be one of those. */
  discovering: boolean;
}

/**
 * The top-level `aliases` and `routes`, and the rule that one deployment's limits are given once
 * (checked over the config's `models`).
 */
export function parseRouting(file: Record<string, unknown>, models: readonly ModelEntry[], targets: RoutingTargets, fail: Fail): RoutingConfig {
  checkSharedLimits(models, fail);
  const aliases: AliasRule[] = [];
  const raw = file['aliases'];
  if (raw !== undefined) {
    if (!isRecord(raw)) fail('aliases', 'must be an object of requested id -> model id, e.g. {"gpt-4o": "gpt-5.4-mini"}');
    for (const [pattern, target] of Object.entries(raw as Record<string, unknown>)) {
      if (pattern === '' || pattern.length > MAX_ID_LENGTH) fail(`aliases.${pattern}`, `an alias is 1 to ${MAX_ID_LENGTH} characters`);
      if (typeof target !== 'string') fail(`aliases.${pattern}`, 'must be a model id');
      aliases.push({ pattern, target: target as string });
    }
  }
  const aliasIds = new Set(aliases.map((alias) => alias.pattern));
  const checkTarget = (target: string, field: string): void => {
    if (targets.knownIds.has(target) || (targets.discovering && !aliasIds.has(target))) return;
    if (aliasIds.has(target)) fail(field, `"${target}" is an alias: a target must be a model id (aliases do not chain)`);
    fail(field, `"${target}" is not a known model id`);
  };
  for (const alias of aliases) checkTarget(alias.target, `aliases.${alias.pattern}`);

  const routes: RouteRule[] = [];
  const rawRoutes = file['routes'];
  if (rawRoutes !== undefined) {
    if (!Array.isArray(rawRoutes)) fail('routes', 'must be an array of {"when": {...}, "model": "id"}');
    (rawRoutes as unknown[]).forEach((entry, index) => {
      const at = `routes.${index}`;
      if (!isRecord(entry)) fail(at, 'must be an object {"when": {...}, "model": "id"}');
      const rule = entry as Record<string, unknown>;
      for (const key of Object.keys(rule)) if (!ROUTE_FIELDS.includes(key)) fail(`${at}.${key}`, `unknown field (${ROUTE_FIELDS.join(', ')})`);
      if (typeof rule['model'] !== 'string' || rule['model'] === '') fail(`${at}.model`, 'must be the model id that answers when the rule holds');
      checkTarget(rule['model'] as string, `${at}.model`);
      routes.push({ when: parseConditions(rule['when'], `${at}.when`, fail), model: rule['model'] as string });
    });
  }
  return { aliases, routes };
}

function parseConditions(raw: unknown, at: string, fail: Fail): RouteConditions {
  if (!isRecord(raw)) fail(at, `must be an object of conditions (${CONDITION_FIELDS.join(', ')})`);
  const when: RouteConditions = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const field = `${at}.${key}`;
    switch (key) {
      case 'model':
        if (typeof value !== 'string' || value === '') fail(field, 'must be a model id, "*" matching any run of characters');
        when.model = value as string;
        break;
      case 'thinking':
      case 'has_images':
      case 'has_tools':
        if (typeof value !== 'boolean') fail(field, 'must be true or false');
        when[key] = value as boolean;
        break;
      case 'input_tokens_over':
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) fail(field, 'must be a whole number of tokens >= 0');
        when.input_tokens_over = value as number;
        break;
      case 'client_format':
        when.client_format = names(value, CLIENT_FORMATS, field, fail);
        break;
      case 'key_tier':
        when.key_tier = names(value, TIER_NAMES, field, fail).filter(isTierName) as TierName[];
        break;
      default:
        fail(field, `unknown condition (${CONDITION_FIELDS.join(', ')})`);
    }
  }
  return when;
}

/** One name of `allowed` or a non-empty array of them. */
function names<T extends string>(value: unknown, allowed: readonly T[], field: string, fail: Fail): T[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every((v) => (allowed as readonly unknown[]).includes(v))) {
    fail(field, `must be one of ${allowed.map((a) => `"${a}"`).join(', ')}, or an array of them`);
  }
  return list as T[];
}

/** One deployment under several models: its rpm and tpm may be given under any, but alike. */
function checkSharedLimits(models: readonly ModelEntry[], fail: Fail): void {
  const limits = new Map<string, { rpm?: number; tpm?: number }>();
  models.forEach((model, m) => {
    model.deployments?.forEach((deployment, d) => {
      const id = `${deployment.provider}/${deployment.upstream_id}`;
      const known = limits.get(id) ?? {};
      for (const name of ['rpm', 'tpm'] as const) {
        const value = deployment[name];
        if (value === undefined) continue;
        if (known[name] !== undefined && known[name] !== value) {
          fail(`models.${m}.deployments.${d}.${name}`, `"${id}" is one deployment under several models: its ${name} is ${known[name]} elsewhere`);
        }
        known[name] = value;
      }
      limits.set(id, known);
    });
  });
}
