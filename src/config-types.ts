/**
 * The shapes of llmux's configuration, after loading (llmux.md section 2). Wire-facing records
 * (model records, pricing, capabilities) keep the description's snake_case spelling.
 */
import type { WireFormat } from './formats/wire.ts';

export interface ProviderConfig {
  /** The provider's name, the key in `providers`. */
  id: string;
  /** The wire format its `base_url` speaks. */
  format: WireFormat;
  /** Formats it also answers as they are, so a client of one of them needs no translation. */
  serves?: readonly WireFormat[];
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The credential as written in config: a literal or `env:NAME`; undefined when none is needed. */
  apiKey: string | undefined;
  /** Whether the provider works without a credential (local servers). */
  keyless: boolean;
  /** Extra headers sent upstream on every request (from config `headers`). */
  headers: Record<string, string>;
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
  currency: string;
}

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
}

export interface RetryConfig {
  /** Attempts per model, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Longest upstream `retry-after` honoured; longer ones end the retries. */
  maxRetryAfterMs: number;
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
  limits: LimitsConfig;
  retry: RetryConfig;
  validation: ValidationMode;
  /** Environment used to resolve `env:NAME` credentials. */
  env: Record<string, string | undefined>;
}
