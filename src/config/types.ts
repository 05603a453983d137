/**
 * The shapes of llmux's configuration, after loading (llmux.md section 2). Wire-facing records
 * (model records, pricing, capabilities) keep the description's snake_case spelling.
 */
import type { ProviderFormat, WireFormat } from '../formats/wire.ts';

/**
 * How a provider's requests are carried (llmux.md section 8): `http` is a base URL, the format's
 * path and its credential header. A new platform is a name here, its file in src/platforms/ and
 * its entry in that folder's table.
 */
export type PlatformName = 'http' | 'bedrock' | 'vertex' | 'azure';
/** The platforms a config may name. */
export const PLATFORM_NAMES: readonly PlatformName[] = ['http', 'bedrock', 'vertex', 'azure'];

/** A Bedrock provider's settings (llmux.md section 8); its endpoint is the provider's `baseUrl`. */
export interface BedrockSettings {
  region: string;
  /** Config `credentials`, each field as written: a literal or `env:NAME`. */
  credentials?: { access_key_id?: string; secret_access_key?: string; session_token?: string };
  /** Config `profile`: a profile in the shared credentials file. */
  profile?: string;
  /** Config `betas`: the `anthropic-beta` values Bedrock is sent; absent: the platform's default list. */
  betas?: readonly string[];
}

/** A Vertex AI provider's settings (llmux.md section 8); its endpoint (before `/v1/projects/…`) is the provider's `baseUrl`. */
export interface VertexSettings {
  project: string;
  /** Config `location`; default `global`. */
  location: string;
  /** Config `credentials_file`; absent: GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, the metadata server. */
  credentialsFile?: string;
  /** Config `betas`: the `anthropic-beta` values Vertex is sent; absent: the platform's default list. */
  betas?: readonly string[];
}

/** An Azure OpenAI provider's settings (llmux.md section 8); `api_key` is the provider's `apiKey`. */
export interface AzureSettings {
  /** Config `api_version`: the classic deployments form; absent: the v1 surface (`base_url` ends in `/openai/v1`). */
  apiVersion?: string;
  /** Config `azure_ad_token`: a Microsoft Entra token as written (a literal or `env:NAME`), sent as a bearer. */
  azureAdToken?: string;
}

export interface ProviderConfig {
  /** The provider's name, the key in `providers`. */
  id: string;
  /** The wire format its `base_url` speaks. */
  format: ProviderFormat;
  /** How its requests are carried (config `platform`); absent: `http`. */
  platform?: PlatformName;
  /**
   * Formats it also answers as they are, so a client of one of them needs no translation
   * (`"responses": true` in config: `POST {base_url}/responses`).
   */
  serves?: readonly WireFormat[];
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The credential as written in config: a literal or `env:NAME`; undefined when none is needed. */
  apiKey: string | undefined;
  /** Whether the provider works without a credential (local servers). */
  keyless: boolean;
  /** Extra headers sent upstream on every request (from config `headers`). */
  headers: Record<string, string>;
  /**
   * Config `api_keys`: several credentials as written (each a literal or `env:NAME`), requests
   * spread over them (llmux.md section 10); `apiKey` is then the first. Absent: `apiKey` alone.
   */
  apiKeys?: readonly string[];
  /** Config `discover`: its models are read from `GET {base_url}/models` (src/routing/discovery.ts). */
  discover?: boolean;
  /**
   * Config `family`: which upstreams can read the opaque state this provider issues (llmux.md
   * section 11); absent: derived from its format and base URL (src/catalog/providers.ts `familyOf`).
   */
  family?: string;
  /** Config `prompt_cache`: llmux adds prompt-cache breakpoints for its models (`auto`, the default) or not (`off`). */
  promptCache?: PromptCache;
  /** The platform's own settings, present on that platform only. */
  bedrock?: BedrockSettings;
  vertex?: VertexSettings;
  azure?: AzureSettings;
}

export interface ModelCapabilities {
  supports_function_calling: boolean;
  supports_vision: boolean;
  supports_streaming: boolean;
  supports_structured_output: boolean;
}

export interface ModelPricing {
  input_tokens_cost_per_million: number;
  output_tokens_cost_per_million: number;
  /** Input read from the provider's prompt cache; absent: priced as input. */
  cache_read_tokens_cost_per_million?: number;
  /** Input written to the provider's prompt cache; absent: priced as input. */
  cache_write_tokens_cost_per_million?: number;
  currency: string;
}

/** Whether llmux adds prompt-cache breakpoints to a request for a messages upstream (llmux.md section 11). */
export type PromptCache = 'auto' | 'off';

/** A model as llmux knows it: the public record fields plus how to reach it. */
export interface ModelEntry {
  id: string;
  /** Provider id (key of `providers`); `llmux` for the built-in echo model. */
  provider: string;
  /** The id sent upstream. */
  upstream_id: string;
  display_name: string;
  /** Provider name shown as `owned_by`. */
  owned_by: string;
  type: 'chat';
  /** ISO 8601 (UTC), the model's release date. */
  created_at: string;
  context_length: number;
  max_output_tokens: number;
  capabilities: ModelCapabilities;
  pricing: ModelPricing;
  /** Accepts reasoning settings (`reasoning_effort` / `thinking`). */
  reasoning: boolean;
  /** Model ids tried in order when this one's provider fails. */
  fallbacks: string[];
  /** Which chat parameter carries the output cap upstream (OpenAI reasoning models want `max_completion_tokens`). */
  max_tokens_param: 'max_tokens' | 'max_completion_tokens';
  /** DeepSeek-style upstreams that want earlier reasoning replayed as `reasoning_content`. */
  replay_reasoning: boolean;
  /** Config `prompt_cache`; absent: the provider's, else `auto`. */
  prompt_cache?: PromptCache;
  /**
   * What answers this model (llmux.md section 10); absent: one deployment, `provider` and
   * `upstream_id` above. Present: `provider` and `upstream_id` are the first deployment's.
   */
  deployments?: readonly DeploymentEntry[];
  /** How a deployment is picked among those usable now; absent: `weighted`. */
  routing?: RoutingStrategy;
  /** Whether a conversation stays on the deployment that answered its last turn; absent: true. */
  sticky?: boolean;
}

/** One deployment of a model as configured (`models[].deployments[]`). */
export interface DeploymentEntry {
  provider: string;
  upstream_id: string;
  /** Share of the `weighted` strategy's picks, relative to the model's other deployments. */
  weight: number;
  /** The deployment's own requests and tokens per minute; absent: none. */
  rpm?: number;
  tpm?: number;
}

/** How a model's deployment is picked (llmux.md section 10). */
export type RoutingStrategy = 'weighted' | 'least_busy' | 'latency' | 'usage';
export const ROUTING_STRATEGIES: readonly RoutingStrategy[] = ['weighted', 'least_busy', 'latency', 'usage'];

/** The default capabilities of a model the config (or a discovering provider) says nothing about. */
export const DEFAULT_CAPABILITIES: Readonly<ModelCapabilities> = Object.freeze({
  supports_function_calling: true,
  supports_vision: false,
  supports_streaming: true,
  supports_structured_output: false,
});
/** Context length and output cap of a model nobody gave them for. */
export const DEFAULT_CONTEXT_LENGTH = 32_768;
export const DEFAULT_MAX_OUTPUT_TOKENS = 4_096;

/** Config `aliases`: a requested id (`*` matching any run of characters) answered by `target`. */
export interface AliasRule {
  /** As written, e.g. `claude-3-5-haiku-*`. */
  pattern: string;
  /** A model id (never another alias). */
  target: string;
}

/** The client formats a route can name (`when.client_format`); Gemini's is served later. */
export type RouteClientFormat = 'chat' | 'messages' | 'responses' | 'gemini';

/** The conditions of a route; every one given must hold. */
export interface RouteConditions {
  /** A glob over the model id after aliases. */
  model?: string;
  thinking?: boolean;
  has_images?: boolean;
  has_tools?: boolean;
  /** On llmux's input estimate (src/formats/estimate.ts). */
  input_tokens_over?: number;
  client_format?: readonly RouteClientFormat[];
  key_tier?: readonly TierName[];
}

/** Config `routes[]`: when every condition holds, `model` answers instead. */
export interface RouteRule {
  when: RouteConditions;
  model: string;
}

/** Config `aliases` and `routes`, in file order. */
export interface RoutingConfig {
  aliases: readonly AliasRule[];
  routes: readonly RouteRule[];
}

/** A key's or tier's limits: each a whole number >= 0, or Infinity for none (never from a file). */
export interface TierLimits { rpm: number; tpm: number; concurrency: number }

/** Whether `value` is a limit: a whole number >= 0, or Infinity. */
export function isLimit(value: unknown): value is number {
  return value === Infinity || (typeof value === 'number' && Number.isInteger(value) && value >= 0);
}
export type TierName = 'basic' | 'pro' | 'enterprise';
/** The tiers, in the order they are offered. */
export const TIER_NAMES: readonly TierName[] = ['basic', 'pro', 'enterprise'];

export function isTierName(value: unknown): value is TierName {
  return typeof value === 'string' && (TIER_NAMES as readonly string[]).includes(value);
}

/** How often a budget starts again: each UTC day, or each UTC month. */
export type BudgetPeriod = 'day' | 'month';

/** A spending limit in USD per UTC period (llmux.md section 7), a key's or its tier's. */
export interface Budget {
  usd: number;
  period: BudgetPeriod;
}

/** Whether `value` is a budget: a finite amount >= 0 and a period of `day` or `month`. */
export function isBudget(value: unknown): value is Budget {
  if (typeof value !== 'object' || value === null) return false;
  const { usd, period } = value as Record<string, unknown>;
  return typeof usd === 'number' && Number.isFinite(usd) && usd >= 0 && (period === 'day' || period === 'month');
}

/** Where spans go (config `telemetry`); no endpoint, no export. */
export interface TelemetryConfig {
  /** The OTLP/HTTP collector's base URL, e.g. `http://127.0.0.1:4318`. */
  otlpEndpoint: string | undefined;
  /** Extra headers on each export request (a collector's auth header). */
  headers: Record<string, string>;
}

export interface LimitsConfig {
  maxBodyBytes: number;
  upstreamTimeoutMs: number;
  streamIdleTimeoutMs: number;
  connectTimeoutMs: number;
  /** Keep-alive comment/ping after this much upstream silence on an open stream. */
  pingIntervalMs: number;
  /** Bound on graceful shutdown. */
  shutdownTimeoutMs: number;
  /** A client must finish sending its request headers within this. */
  headersTimeoutMs: number;
  /** ...and its whole request (headers and body) within this. */
  requestTimeoutMs: number;
  /** Longest silence between two reads of a request body. */
  bodyTimeoutMs: number;
  /** How long an idle client connection is kept open for its next request. */
  keepAliveTimeoutMs: number;
}

export interface RetryConfig {
  /** Attempts per request, the first included, across a model's deployments and its fallbacks (llmux.md section 10). */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Longest upstream `retry-after` honoured; longer ones end the retries. */
  maxRetryAfterMs: number;
}

/** Stored Responses API answers (config `responses`, responses.md "State"). */
export interface ResponsesConfig {
  /** How long a stored response is kept. */
  storeTtlMs: number;
  /** The most bytes of stored responses kept; least recently used go first. */
  storeMaxBytes: number;
}

/** What a shared-state server being slow or down does to model requests (llmux.md section 6). */
export type StateFailurePolicy = 'local' | 'closed';

/** Config `state`: one Valkey/Redis server holding what several llmux processes share. */
export interface StateConfig {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`; never logged as is (it may hold a password). */
  url: string;
  /** Longest a request waits on the state server. */
  timeoutMs: number;
  /** `local`: fall back to this process's limits and its last copy of the keys; `closed`: 503 `state_unavailable`. */
  onFailure: StateFailurePolicy;
  /** How long a concurrency slot outlives a process that died holding it. */
  leaseMs: number;
}

/**
 * How requests are validated (llmux.md section 5): `compatible` accepts what the official APIs
 * accept; `strict` also enforces the description's three stricter rules (text only in the first
 * message, alternating roles, `tool_result` content required) and refuses unknown block types.
 */
export type ValidationMode = 'compatible' | 'strict';

export interface Config {
  host: string;
  port: number;
  home: string;
  /** The config file read, if any. */
  configPath: string | undefined;
  providers: Record<string, ProviderConfig>;
  /** Config-file models; `createCatalog` merges them with the built-in catalog by id. */
  models: ModelEntry[];
  builtinCatalog: boolean;
  tiers: Record<TierName, TierLimits>;
  /** Tiers' budgets (`tiers.NAME.budget_usd`); a key's own budget comes first. */
  tierBudgets: Partial<Record<TierName, Budget>>;
  limits: LimitsConfig;
  retry: RetryConfig;
  telemetry: TelemetryConfig;
  responses: ResponsesConfig;
  /** The shared-state server, when several processes act as one gateway; undefined: state in this process and LLMUX_HOME. */
  state: StateConfig | undefined;
  validation: ValidationMode;
  /** Environment used to resolve `env:NAME` credentials. */
  env: Record<string, string | undefined>;
  /** Config `aliases` and `routes` (llmux.md section 10); absent: none. */
  routing?: RoutingConfig;
}
