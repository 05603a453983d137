/**
 * The providers and models of the config file (llmux.md section 2), each read into what the catalog
 * serves, with one clear error naming the field and the problem; and the whole-number checks every
 * section of the file uses.
 */
import type { ModelEntry, PlatformName, ProviderConfig } from './types.ts';
import { DEFAULT_CAPABILITIES, DEFAULT_CONTEXT_LENGTH, DEFAULT_MAX_OUTPUT_TOKENS, PLATFORM_NAMES } from './types.ts';
import { BUILTIN_MODELS } from '../catalog/builtin-models.ts';
import type { ProviderFormat } from '../formats/wire.ts';
import { isRecord } from '../common/json.ts';

/** Reports a problem with a field of the config file; never returns. */
export type Fail = (field: string, problem: string) => never;

/**
 * The config file names a provider's wire format by vendor; the code by operation (see
 * src/formats/wire.ts). Both directions, so `llmux setup` writes what the file documents.
 */
const FORMAT_OF_CONFIG_NAME: Readonly<Record<string, ProviderFormat>> = { openai: 'chat', anthropic: 'messages' };
export const CONFIG_NAME_OF_FORMAT: Readonly<Record<ProviderFormat, string>> = { chat: 'openai', messages: 'anthropic' };

/** The fields of a provider (`CONFIG_FIELDS` in load.ts lists every section's). */
export const PROVIDER_FIELDS: readonly string[] = ['format', 'platform', 'base_url', 'api_key', 'headers', 'responses'];

export function parseProvider(id: string, raw: unknown, fail: Fail): ProviderConfig {
  const at = `providers.${id}`;
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(id)) fail(at, 'a provider name uses letters, digits, "_", "-", "." (at most 64)');
  if (!isRecord(raw)) fail(at, 'must be an object with format and base_url');
  const p = raw as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    if (!PROVIDER_FIELDS.includes(key)) fail(`${at}.${key}`, `unknown field (${PROVIDER_FIELDS.join(', ')})`);
  }
  const format = typeof p['format'] === 'string' && Object.hasOwn(FORMAT_OF_CONFIG_NAME, p['format']) ? FORMAT_OF_CONFIG_NAME[p['format']] : undefined;
  if (format === undefined) fail(`${at}.format`, 'must be "openai" or "anthropic"');
  const platform = p['platform'] ?? 'http';
  if (!(PLATFORM_NAMES as readonly unknown[]).includes(platform)) {
    fail(`${at}.platform`, `must be ${PLATFORM_NAMES.map((name) => `"${name}"`).join(' or ')}: how the provider's requests are carried (other platforms are not served yet)`);
  }
  if (typeof p['base_url'] !== 'string') fail(`${at}.base_url`, 'must be an http(s) URL string');
  let url: URL;
  try {
    url = new URL(p['base_url'] as string);
  } catch {
    return fail(`${at}.base_url`, `"${String(p['base_url'])}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${at}.base_url`, 'must start with http:// or https://');
  if (p['api_key'] !== undefined && typeof p['api_key'] !== 'string') fail(`${at}.api_key`, 'must be a string: the key itself or "env:NAME"');
  const headers: Record<string, string> = {};
  if (p['headers'] !== undefined) {
    if (!isRecord(p['headers'])) fail(`${at}.headers`, 'must be an object of header name -> string');
    for (const [k, v] of Object.entries(p['headers'] as Record<string, unknown>)) {
      if (typeof v !== 'string') fail(`${at}.headers.${k}`, 'must be a string');
      headers[k.toLowerCase()] = v as string;
    }
  }
  const serves = p['responses'];
  if (serves !== undefined && typeof serves !== 'boolean') fail(`${at}.responses`, 'must be true or false: whether base_url also serves POST /responses');
  if (serves === true && format !== 'chat') fail(`${at}.responses`, 'only an "openai" provider can serve /responses');
  const apiKey = p['api_key'] as string | undefined;
  return {
    id,
    format: format as ProviderFormat,
    platform: platform as PlatformName,
    ...(serves === true ? { serves: ['responses'] as const } : {}),
    baseUrl: (p['base_url'] as string).replace(/\/+$/, ''),
    apiKey: apiKey === '' ? undefined : apiKey,
    keyless: apiKey === undefined || apiKey === '',
    headers,
  };
}

/** The fields of a model, of its capabilities and of its pricing. */
export const MODEL_FIELDS: ReadonlySet<string> = new Set([
  'id', 'provider', 'upstream_id', 'display_name', 'owned_by', 'type', 'created_at', 'context_length',
  'max_output_tokens', 'capabilities', 'pricing', 'reasoning', 'fallbacks', 'max_tokens_param', 'replay_reasoning',
]);
export const CAPABILITIES = ['supports_function_calling', 'supports_vision', 'supports_streaming', 'supports_structured_output'] as const;
export const PRICING_FIELDS: readonly string[] = ['input_tokens_cost_per_million', 'output_tokens_cost_per_million', 'currency'];

export function parseModel(raw: unknown, at: string, fail: Fail): ModelEntry {
  if (!isRecord(raw)) fail(at, 'must be an object with at least id and provider');
  const m = raw as Record<string, unknown>;
  for (const key of Object.keys(m)) if (!MODEL_FIELDS.has(key)) fail(`${at}.${key}`, 'unknown field');
  if (typeof m['id'] !== 'string' || m['id'] === '' || (m['id'] as string).length > 256) fail(`${at}.id`, 'must be a non-empty string');
  const id = m['id'] as string;
  // A config model with the id of a built-in one starts from the built-in entry: fields given replace.
  const base = BUILTIN_MODELS.find((b) => b.id === id);
  if (base === undefined && typeof m['provider'] !== 'string') fail(`${at}.provider`, 'must name a provider');
  if (m['provider'] !== undefined && typeof m['provider'] !== 'string') fail(`${at}.provider`, 'must name a provider');
  const provider = (m['provider'] as string | undefined) ?? base!.provider;
  const str = (k: string, dflt: string): string => {
    if (m[k] === undefined) return dflt;
    if (typeof m[k] !== 'string' || m[k] === '') fail(`${at}.${k}`, 'must be a non-empty string');
    return m[k] as string;
  };
  const caps = { ...(base?.capabilities ?? DEFAULT_CAPABILITIES) };
  if (m['capabilities'] !== undefined) {
    if (!isRecord(m['capabilities'])) fail(`${at}.capabilities`, 'must be an object of booleans');
    for (const [k, v] of Object.entries(m['capabilities'] as Record<string, unknown>)) {
      if (!(CAPABILITIES as readonly string[]).includes(k)) fail(`${at}.capabilities.${k}`, `unknown capability (${CAPABILITIES.join(', ')})`);
      if (typeof v !== 'boolean') fail(`${at}.capabilities.${k}`, 'must be true or false');
      caps[k as (typeof CAPABILITIES)[number]] = v as boolean;
    }
  }
  const pricing = { ...(base?.pricing ?? { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' }) };
  if (m['pricing'] !== undefined) {
    if (!isRecord(m['pricing'])) fail(`${at}.pricing`, 'must be an object');
    for (const [k, v] of Object.entries(m['pricing'] as Record<string, unknown>)) {
      if (!PRICING_FIELDS.includes(k)) fail(`${at}.pricing.${k}`, 'unknown field');
      if (k === 'currency') {
        if (typeof v !== 'string' || v === '') fail(`${at}.pricing.currency`, 'must be a currency code such as "USD"');
        pricing.currency = v as string;
      } else {
        if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) fail(`${at}.pricing.${k}`, 'must be a number >= 0');
        pricing[k as 'input_tokens_cost_per_million' | 'output_tokens_cost_per_million'] = v as number;
      }
    }
  }
  const bool = (k: string, dflt: boolean): boolean => {
    if (m[k] === undefined) return dflt;
    if (typeof m[k] !== 'boolean') fail(`${at}.${k}`, 'must be true or false');
    return m[k] as boolean;
  };
  let fallbacks = base?.fallbacks ?? [];
  if (m['fallbacks'] !== undefined) {
    if (!Array.isArray(m['fallbacks']) || !(m['fallbacks'] as unknown[]).every((f) => typeof f === 'string' && f !== '')) {
      fail(`${at}.fallbacks`, 'must be an array of model ids');
    }
    fallbacks = m['fallbacks'] as string[];
    if (fallbacks.includes(id)) fail(`${at}.fallbacks`, 'a model cannot fall back to itself');
  }
  const maxTokensParam = m['max_tokens_param'] ?? base?.max_tokens_param ?? 'max_tokens';
  if (maxTokensParam !== 'max_tokens' && maxTokensParam !== 'max_completion_tokens') {
    fail(`${at}.max_tokens_param`, 'must be "max_tokens" or "max_completion_tokens"');
  }
  if (m['type'] !== undefined && m['type'] !== 'chat') fail(`${at}.type`, 'must be "chat"');
  const createdAt = str('created_at', base?.created_at ?? '2024-01-01T00:00:00Z');
  if (Number.isNaN(Date.parse(createdAt))) fail(`${at}.created_at`, 'must be an ISO 8601 timestamp');
  return {
    id,
    provider,
    upstream_id: str('upstream_id', base !== undefined && provider === base.provider ? base.upstream_id : id),
    display_name: str('display_name', base?.display_name ?? id),
    owned_by: str('owned_by', base?.owned_by ?? provider),
    type: 'chat',
    created_at: new Date(createdAt).toISOString(),
    context_length: m['context_length'] === undefined ? (base?.context_length ?? DEFAULT_CONTEXT_LENGTH) : positiveInt(m['context_length'], `${at}.context_length`, fail),
    max_output_tokens: m['max_output_tokens'] === undefined ? (base?.max_output_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS) : positiveInt(m['max_output_tokens'], `${at}.max_output_tokens`, fail),
    capabilities: caps,
    pricing,
    reasoning: bool('reasoning', base?.reasoning ?? false),
    fallbacks: [...fallbacks],
    max_tokens_param: maxTokensParam as 'max_tokens' | 'max_completion_tokens',
    replay_reasoning: bool('replay_reasoning', base?.replay_reasoning ?? false),
  };
}

export function positiveInt(v: unknown, field: string, fail: Fail): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) fail(field, 'must be a whole number >= 1');
  return v as number;
}

export function nonNegativeInt(v: unknown, field: string, fail: Fail): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(field, 'must be a whole number >= 0');
  return v as number;
}
