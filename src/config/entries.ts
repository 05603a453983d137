/**
 * The providers and models of the config file (llmux.md section 2), each read into what the catalog
 * serves, with one clear error naming the field and the problem; and the whole-number checks every
 * section of the file uses.
 */
import type { ModelEntry, PlatformName, PromptCache, ProviderConfig } from './types.ts';
import { DEFAULT_CAPABILITIES, DEFAULT_CONTEXT_LENGTH, DEFAULT_MAX_OUTPUT_TOKENS, PLATFORM_NAMES } from './types.ts';
import { BUILTIN_MODELS } from '../catalog/builtin-models.ts';
import type { ProviderFormat } from '../formats/wire.ts';
import { isRecord } from '../common/json.ts';
import { headerNameValid, headerValueValid } from '../common/http-chars.ts';

/** Reports a problem with a field of the config file; never returns. */
export type Fail = (field: string, problem: string) => never;

/**
 * The config file names a provider's wire format by vendor; the code by operation (see
 * src/formats/wire.ts). Both directions, so `llmux setup` writes what the file documents.
 */
const FORMAT_OF_CONFIG_NAME: Readonly<Record<string, ProviderFormat>> = { openai: 'chat', anthropic: 'messages', gemini: 'gemini', converse: 'converse' };
export const CONFIG_NAME_OF_FORMAT: Readonly<Record<ProviderFormat, string>> = { chat: 'openai', messages: 'anthropic', gemini: 'gemini', converse: 'converse' };

/** Which platforms each platform-only field belongs to. */
const PLATFORM_OF_FIELD: Readonly<Record<string, readonly PlatformName[]>> = {
  region: ['bedrock'],
  credentials: ['bedrock'],
  profile: ['bedrock'],
  betas: ['bedrock', 'vertex'],
  project: ['vertex'],
  location: ['vertex'],
  credentials_file: ['vertex'],
  api_version: ['azure'],
  azure_ad_token: ['azure'],
};

/** What each platform carries and how it is authorised, for the checks above. */
const PLATFORM_RULES: Readonly<Record<PlatformName, { formats: readonly ProviderFormat[]; formatProblem: string; baseUrlRequired: boolean; apiKey: boolean; credentialHint: string }>> = {
  http: { formats: ['chat', 'messages', 'gemini'], formatProblem: 'must be "openai", "anthropic" or "gemini" ("converse" is Amazon Bedrock\'s Converse API: it needs "platform": "bedrock")', baseUrlRequired: true, apiKey: true, credentialHint: '' },
  bedrock: {
    formats: ['messages', 'converse'],
    formatProblem: 'Bedrock carries "anthropic" (Claude through InvokeModel) and "converse" (its other models, through Converse)',
    baseUrlRequired: false,
    apiKey: false,
    credentialHint: 'Bedrock requests are signed with AWS credentials: give credentials or profile, or let llmux find them (AWS_* variables, ~/.aws/credentials, the container or instance role)',
  },
  vertex: {
    formats: ['messages', 'chat', 'gemini'],
    formatProblem: 'Vertex AI carries "anthropic" (Claude through rawPredict), "gemini" (Gemini through generateContent) and "openai" (its OpenAI-compatible endpoint)',
    baseUrlRequired: false,
    apiKey: false,
    credentialHint: 'Vertex AI takes OAuth access tokens: give credentials_file, or let llmux find them (GOOGLE_APPLICATION_CREDENTIALS, gcloud\'s file, the metadata server)',
  },
  azure: { formats: ['chat'], formatProblem: 'Azure OpenAI speaks "openai"', baseUrlRequired: true, apiKey: true, credentialHint: '' },
};

/** The fields of a provider (`CONFIG_FIELDS` in load.ts lists every section's). */
export const PROVIDER_FIELDS: readonly string[] = ['format', 'platform', 'base_url', 'api_key', 'headers', 'responses', 'family', 'prompt_cache', ...Object.keys(PLATFORM_OF_FIELD)];

const FAMILY_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** A `prompt_cache` value: absent, `auto` or `off`. */
function promptCacheOf(value: unknown, at: string, fail: Fail): PromptCache | undefined {
  if (value === undefined) return undefined;
  if (value !== 'auto' && value !== 'off') fail(`${at}.prompt_cache`, 'must be "auto" (llmux adds prompt-cache breakpoints for a messages upstream) or "off"');
  return value as PromptCache;
}

export function parseProvider(id: string, raw: unknown, fail: Fail): ProviderConfig {
  const at = `providers.${id}`;
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(id)) fail(at, 'a provider name uses letters, digits, "_", "-", "." (at most 64)');
  if (!isRecord(raw)) fail(at, 'must be an object with format and base_url');
  const p = raw as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    if (!PROVIDER_FIELDS.includes(key)) fail(`${at}.${key}`, `unknown field (${PROVIDER_FIELDS.join(', ')})`);
  }
  const platform = p['platform'] ?? 'http';
  if (!(PLATFORM_NAMES as readonly unknown[]).includes(platform)) {
    fail(`${at}.platform`, `must be ${PLATFORM_NAMES.map((name) => `"${name}"`).join(', ')}: how the provider's requests are carried`);
  }
  const rules = PLATFORM_RULES[platform as PlatformName];
  const format = typeof p['format'] === 'string' && Object.hasOwn(FORMAT_OF_CONFIG_NAME, p['format']) ? FORMAT_OF_CONFIG_NAME[p['format']] : undefined;
  if (format === undefined) fail(`${at}.format`, 'must be "openai", "anthropic", "gemini" or "converse"');
  if (!rules.formats.includes(format as ProviderFormat)) fail(`${at}.format`, rules.formatProblem);
  for (const key of Object.keys(p)) {
    const owner = PLATFORM_OF_FIELD[key];
    if (owner !== undefined && !owner.includes(platform as PlatformName)) fail(`${at}.${key}`, `only a provider with "platform": ${owner.map((name) => `"${name}"`).join(' or ')} has ${key}`);
  }
  if (p['api_key'] !== undefined && !rules.apiKey) fail(`${at}.api_key`, rules.credentialHint);
  let baseUrl: string | undefined;
  if (p['base_url'] !== undefined || rules.baseUrlRequired) {
    if (typeof p['base_url'] !== 'string') fail(`${at}.base_url`, 'must be an http(s) URL string');
    let url: URL;
    try {
      url = new URL(p['base_url'] as string);
    } catch {
      return fail(`${at}.base_url`, `"${String(p['base_url'])}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${at}.base_url`, 'must start with http:// or https://');
    baseUrl = (p['base_url'] as string).replace(/\/+$/, '');
  }
  if (p['api_key'] !== undefined && typeof p['api_key'] !== 'string') fail(`${at}.api_key`, 'must be a string: the key itself or "env:NAME"');
  const headers: Record<string, string> = {};
  if (p['headers'] !== undefined) {
    if (!isRecord(p['headers'])) fail(`${at}.headers`, 'must be an object of header name -> string');
    for (const [k, v] of Object.entries(p['headers'] as Record<string, unknown>)) {
      if (typeof v !== 'string') fail(`${at}.headers.${k}`, 'must be a string');
      if (!headerNameValid(k)) fail(`${at}.headers`, `"${k.slice(0, 60)}" is not a header name (letters, digits and !#$%&'*+.^_\`|~- only)`);
      if (!headerValueValid(v as string)) fail(`${at}.headers.${k}`, 'has a line break or another control character, which a header cannot carry');
      headers[k.toLowerCase()] = v as string;
    }
  }
  const serves = p['responses'];
  if (serves !== undefined && typeof serves !== 'boolean') fail(`${at}.responses`, 'must be true or false: whether base_url also serves POST /responses');
  if (serves === true && format !== 'chat') fail(`${at}.responses`, 'only an "openai" provider can serve /responses');
  if (serves === true && platform === 'vertex') fail(`${at}.responses`, 'Vertex AI\'s OpenAI-compatible endpoint serves chat completions only');
  const apiKey = p['api_key'] as string | undefined;
  const settings = parsePlatformSettings(platform as PlatformName, p, at, fail);
  if (p['family'] !== undefined && (typeof p['family'] !== 'string' || !FAMILY_NAME.test(p['family']))) {
    fail(`${at}.family`, 'must be a family name such as "gemini", "anthropic" or "openrouter" (lowercase letters, digits, "_" and "-")');
  }
  const promptCache = promptCacheOf(p['prompt_cache'], at, fail);
  return {
    id,
    format: format as ProviderFormat,
    platform: platform as PlatformName,
    ...(serves === true ? { serves: ['responses'] as const } : {}),
    baseUrl: settings.baseUrl(baseUrl),
    apiKey: apiKey === '' ? undefined : apiKey,
    keyless: platform === 'http' && (apiKey === undefined || apiKey === ''),
    headers,
    ...(typeof p['family'] === 'string' ? { family: p['family'] } : {}),
    ...(promptCache === undefined ? {} : { promptCache }),
    ...settings.fields,
  };
}

const NAME_PART = /^[a-z0-9][a-z0-9-]*$/;
const VERTEX_MULTI_REGIONS: ReadonlySet<string> = new Set(['us', 'eu']);

/** A platform-only string field: absent, or a non-empty string (`pattern`: what it must look like). */
function optionalText(p: Record<string, unknown>, key: string, at: string, fail: Fail, pattern?: { test: RegExp; says: string }): string | undefined {
  const value = p[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') fail(`${at}.${key}`, `must be a non-empty string${pattern === undefined ? '' : `: ${pattern.says}`}`);
  if (pattern !== undefined && !pattern.test.test(value as string)) fail(`${at}.${key}`, pattern.says);
  return value as string;
}

function parseBetas(p: Record<string, unknown>, at: string, fail: Fail): readonly string[] | undefined {
  const value = p['betas'];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > 64 || !value.every((beta) => typeof beta === 'string' && /^[A-Za-z0-9._-]+$/.test(beta))) {
    fail(`${at}.betas`, 'must be an array of at most 64 anthropic-beta values, e.g. ["interleaved-thinking-2025-05-14"]');
  }
  return [...(value as string[])];
}

const CREDENTIAL_FIELDS = ['access_key_id', 'secret_access_key', 'session_token'] as const;
/** The fields of a Bedrock provider's `credentials` (`CONFIG_FIELDS` in load.ts). */
export const AWS_CREDENTIAL_FIELDS: readonly string[] = CREDENTIAL_FIELDS;

/**
 * A platform's own fields, and the endpoint it derives when `base_url` is not given (llmux.md
 * section 8): Bedrock's from its region, Vertex's from its location (a `base_url` ending in `/v1`,
 * as Claude Code's ANTHROPIC_VERTEX_BASE_URL is written, is taken without it), Azure's classic
 * form under `/openai` when `base_url` is only the resource's address.
 */
function parsePlatformSettings(platform: PlatformName, p: Record<string, unknown>, at: string, fail: Fail): { fields: Partial<ProviderConfig>; baseUrl(given: string | undefined): string } {
  const nameLike = { test: NAME_PART, says: 'lower-case letters, digits and "-", e.g. "us-east-1"' };
  switch (platform) {
    case 'http':
      return { fields: {}, baseUrl: (given) => given as string };
    case 'bedrock': {
      const region = optionalText(p, 'region', at, fail, nameLike);
      if (region === undefined) fail(`${at}.region`, 'a Bedrock provider needs its AWS region, e.g. "us-east-1"');
      let credentials: NonNullable<ProviderConfig['bedrock']>['credentials'];
      if (p['credentials'] !== undefined) {
        if (!isRecord(p['credentials'])) fail(`${at}.credentials`, 'must be an object: {"access_key_id", "secret_access_key", "session_token"?}, each the value or "env:NAME"');
        const written = p['credentials'] as Record<string, unknown>;
        for (const key of Object.keys(written)) {
          if (!(CREDENTIAL_FIELDS as readonly string[]).includes(key)) fail(`${at}.credentials.${key}`, `unknown field (${CREDENTIAL_FIELDS.join(', ')})`);
        }
        credentials = {};
        for (const key of CREDENTIAL_FIELDS) {
          const value = optionalText(written, key, `${at}.credentials`, fail);
          if (value !== undefined) credentials[key] = value;
        }
        if (credentials.access_key_id === undefined || credentials.secret_access_key === undefined) {
          fail(`${at}.credentials`, 'needs access_key_id and secret_access_key (each the value or "env:NAME"), and session_token for temporary credentials');
        }
      }
      const profile = optionalText(p, 'profile', at, fail);
      const betas = parseBetas(p, at, fail);
      const bedrock = { region: region as string, ...(credentials === undefined ? {} : { credentials }), ...(profile === undefined ? {} : { profile }), ...(betas === undefined ? {} : { betas }) };
      return { fields: { bedrock }, baseUrl: (given) => given ?? `https://bedrock-runtime.${bedrock.region}.amazonaws.com` };
    }
    case 'vertex': {
      const project = optionalText(p, 'project', at, fail, { test: /^[A-Za-z0-9][A-Za-z0-9:._-]*$/, says: 'a Google Cloud project id, e.g. "my-project"' });
      if (project === undefined) fail(`${at}.project`, 'a Vertex AI provider needs its Google Cloud project id');
      const location = optionalText(p, 'location', at, fail, { test: NAME_PART, says: 'a Vertex AI location, e.g. "global" or "us-east5"' }) ?? 'global';
      const credentialsFile = optionalText(p, 'credentials_file', at, fail);
      const betas = parseBetas(p, at, fail);
      const vertex = { project: project as string, location, ...(credentialsFile === undefined ? {} : { credentialsFile }), ...(betas === undefined ? {} : { betas }) };
      return {
        fields: { vertex },
        baseUrl: (given) => {
          if (given !== undefined) return given.replace(/\/v1$/, '');
          if (location === 'global') return 'https://aiplatform.googleapis.com';
          if (VERTEX_MULTI_REGIONS.has(location)) return `https://aiplatform.${location}.rep.googleapis.com`;
          return `https://${location}-aiplatform.googleapis.com`;
        },
      };
    }
    case 'azure': {
      const apiVersion = optionalText(p, 'api_version', at, fail, { test: /^[A-Za-z0-9._-]+$/, says: 'an Azure OpenAI API version, e.g. "2024-10-21"' });
      const azureAdToken = optionalText(p, 'azure_ad_token', at, fail);
      if (azureAdToken !== undefined && p['api_key'] !== undefined) fail(`${at}.azure_ad_token`, 'give api_key or azure_ad_token, not both');
      if (azureAdToken === undefined && (typeof p['api_key'] !== 'string' || p['api_key'] === '')) {
        fail(`${at}.api_key`, 'an Azure provider needs api_key (sent as api-key) or azure_ad_token (a Microsoft Entra token, sent as a bearer), each the value or "env:NAME"');
      }
      const v1 = /\/openai\/v1\/*$/.test(String(p['base_url']));
      if (v1 && apiVersion !== undefined) fail(`${at}.api_version`, 'the v1 surface (a base_url ending in /openai/v1) takes no api-version: leave api_version out, or use the classic base_url https://NAME.openai.azure.com/openai');
      if (!v1 && apiVersion === undefined) {
        fail(`${at}.base_url`, 'an Azure base_url ends in /openai/v1 (the v1 surface, https://NAME.openai.azure.com/openai/v1); for classic deployments give api_version as well');
      }
      const azure = { ...(apiVersion === undefined ? {} : { apiVersion }), ...(azureAdToken === undefined ? {} : { azureAdToken }) };
      return {
        fields: { azure },
        // The classic form lives under /openai: a base_url that is the resource's address alone gets it.
        baseUrl: (given) => (apiVersion !== undefined && given !== undefined && new URL(given).pathname.replace(/\/+$/, '') === '' ? `${given}/openai` : given as string),
      };
    }
  }
}

/** The fields of a model, of its capabilities and of its pricing. */
export const MODEL_FIELDS: ReadonlySet<string> = new Set([
  'id', 'provider', 'upstream_id', 'display_name', 'owned_by', 'type', 'created_at', 'context_length',
  'max_output_tokens', 'capabilities', 'pricing', 'reasoning', 'fallbacks', 'max_tokens_param', 'replay_reasoning', 'prompt_cache',
]);
export const CAPABILITIES = ['supports_function_calling', 'supports_vision', 'supports_streaming', 'supports_structured_output'] as const;
export const PRICING_FIELDS: readonly string[] = [
  'input_tokens_cost_per_million', 'output_tokens_cost_per_million', 'cache_read_tokens_cost_per_million', 'cache_write_tokens_cost_per_million', 'currency',
];
type PriceField = 'input_tokens_cost_per_million' | 'output_tokens_cost_per_million' | 'cache_read_tokens_cost_per_million' | 'cache_write_tokens_cost_per_million';

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
        pricing[k as PriceField] = v as number;
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
  const promptCache = promptCacheOf(m['prompt_cache'], at, fail) ?? base?.prompt_cache;
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
    ...(promptCache === undefined ? {} : { prompt_cache: promptCache }),
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
