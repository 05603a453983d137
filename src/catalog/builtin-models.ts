/**
 * The built-in model catalog: real models of the twelve built-in providers with their published
 * limits and list prices (USD per million tokens, standard tier, shortest-prompt band), plus the
 * `llmux-echo` model that needs no upstream.
 *
 * Public id rule: a model served by the lab that makes it keeps that lab's own id (`gpt-5.5`,
 * `claude-opus-5-5`, `gemini-2.5-pro`, `deepseek-v4-pro`, `grok-4.6`). A model served by a host
 * or router (groq, together, fireworks, openrouter, cerebras, ollama) is `<provider>/<upstream id>`,
 * so the same weights on two hosts never collide (`groq/openai/gpt-oss-120b`,
 * `cerebras/gpt-oss-120b`); for Fireworks the `accounts/fireworks/models/` account path is left
 * out of the public id. Public ids may therefore contain `/`.
 *
 * Other conventions:
 * - `max_output_tokens` is the provider's published output cap. Where a provider publishes none
 *   (xAI, Together, Fireworks, local Ollama) the whole context window is the bound, and that is
 *   what is recorded.
 * - Where a price depends on prompt length (Gemini Pro above 200K, xAI above ~200K, Claude Haiku
 *   5.5) or time of day (DeepSeek), the base or peak figure is recorded, as noted per provider.
 * - `reasoning` marks models that accept `reasoning_effort` / `thinking`; OpenAI's reasoning
 *   families (o-series, gpt-5*, gpt-6*) take `max_completion_tokens`.
 * - Prompt-cache prices (llmux.md section 11), where a provider publishes them, as the multiple of
 *   the input price its pricing page gives: Anthropic reads at 0.1x and five-minute writes at
 *   1.25x; OpenAI's cached input at 0.1x from GPT-5 on (GPT-6.1 Sol and GPT-6.2 0.05x, o3 and
 *   GPT-4.1 0.25x, GPT-4o 0.5x);
 *   Gemini's cached input at 0.1x from Gemini 3 on (2.5 0.25x); DeepSeek's cache hits at 0.1x;
 *   xAI's cached input at 0.25x. OpenRouter passes the labs' through. Others publish none: cache
 *   reads are priced as input there.
 * - Models the provider has already shut down are left out; models with an announced shutdown
 *   that still answer are kept with the date in a comment.
 */
import type { ModelCapabilities, ModelEntry } from '../config/types.ts';

/**
 * The last day prices and lineups below were checked against the providers' pages: every
 * provider's on 2026-11-15; OpenAI's GPT-6.1 Sol and GPT-6.2 models, added for Codex CLI's default
 * model, on 2026-11-28. No model may be released after it.
 */
export const PRICES_TAKEN_AT = '2026-11-28';

type Capability = 'tools' | 'vision' | 'json';

/** Streaming is universal here; the rest are listed per model. `json` = schema-constrained output. */
function caps(...list: Capability[]): ModelCapabilities {
  return {
    supports_function_calling: list.includes('tools'),
    supports_vision: list.includes('vision'),
    supports_streaming: true,
    supports_structured_output: list.includes('json'),
  };
}

const ALL = caps('tools', 'vision', 'json');
const TEXT = caps('tools', 'json');
const TOOLS_ONLY = caps('tools');
const VISION_TOOLS = caps('tools', 'vision');

/** Hosts and routers serve other labs' models; their public ids carry the provider prefix. */
const HOSTS = new Set(['groq', 'together', 'fireworks', 'openrouter', 'cerebras', 'ollama']);
const FIREWORKS_ACCOUNT_PATH = 'accounts/fireworks/models/';

/** Cache prices as multiples of the input price: reads, and writes where they cost other than input. */
interface CacheRates { read: number; write?: number }

interface Options {
  reasoning?: boolean;
  /** OpenAI reasoning families want `max_completion_tokens`. */
  completionTokens?: boolean;
  replayReasoning?: boolean;
  /** The model's own cache rates, where its provider's default (`CACHE_RATES`) is not its own. */
  cache?: CacheRates;
}

/** Each provider's published cache rates (see the header); a model may have its own. */
const CACHE_RATES: Readonly<Record<string, CacheRates>> = {
  anthropic: { read: 0.1, write: 1.25 },
  openai: { read: 0.1 },
  gemini: { read: 0.1 },
  deepseek: { read: 0.1 },
  xai: { read: 0.25 },
};
const ANTHROPIC_CACHE: CacheRates = { read: 0.1, write: 1.25 };
const QUARTER_CACHE: CacheRates = { read: 0.25 };
const TENTH_CACHE: CacheRates = { read: 0.1 };
const TWENTIETH_CACHE: CacheRates = { read: 0.05 };

/** A price per million tokens at `rate` times `price`, to the hundredth of a cent. */
function priceAt(price: number, rate: number): number {
  return Math.round(price * rate * 10_000) / 10_000;
}

/**
 * One catalog row: provider, upstream id, display name, release day (YYYY-MM-DD),
 * [context, max output], [input, output] USD per million tokens, capabilities.
 */
function model(
  provider: string,
  upstreamId: string,
  displayName: string,
  released: string,
  [contextLength, maxOutputTokens]: [number, number],
  [inputPrice, outputPrice]: [number, number],
  capabilities: ModelCapabilities,
  options: Options = {},
): ModelEntry {
  const shortId = upstreamId.startsWith(FIREWORKS_ACCOUNT_PATH)
    ? upstreamId.slice(FIREWORKS_ACCOUNT_PATH.length)
    : upstreamId;
  return {
    id: HOSTS.has(provider) ? `${provider}/${shortId}` : upstreamId,
    provider,
    upstream_id: upstreamId,
    display_name: displayName,
    owned_by: provider,
    type: 'chat',
    created_at: `${released}T00:00:00Z`,
    context_length: contextLength,
    max_output_tokens: maxOutputTokens,
    capabilities: { ...capabilities },
    pricing: pricingOf(inputPrice, outputPrice, options.cache ?? CACHE_RATES[provider]),
    reasoning: options.reasoning ?? false,
    fallbacks: [],
    max_tokens_param: options.completionTokens === true ? 'max_completion_tokens' : 'max_tokens',
    replay_reasoning: options.replayReasoning ?? false,
  };
}

function pricingOf(inputPrice: number, outputPrice: number, cache: CacheRates | undefined): ModelEntry['pricing'] {
  const pricing: ModelEntry['pricing'] = { input_tokens_cost_per_million: inputPrice, output_tokens_cost_per_million: outputPrice, currency: 'USD' };
  if (cache === undefined) return pricing;
  pricing.cache_read_tokens_cost_per_million = priceAt(inputPrice, cache.read);
  if (cache.write !== undefined) pricing.cache_write_tokens_cost_per_million = priceAt(inputPrice, cache.write);
  return pricing;
}

const THINKS = { reasoning: true } as const;
const OPENAI_REASONING = { reasoning: true, completionTokens: true } as const;
// DeepSeek's thinking-mode docs: after a turn with tool calls, that turn's reasoning_content must
// be sent back on every later request or the API answers 400.
const DEEPSEEK_THINKING = { reasoning: true, replayReasoning: true } as const;

const K = 1_000;
const M = 1_000_000;

/**
 * The model that echoes the request back; always listed, no upstream, no cost. Its limits are a
 * small model's, so its input and output are bounded like any model's: the context length refuses
 * a larger request up front, and the output cap (src/providers/echo.ts `ECHO_MAX_WORDS`)
 * is what a request without `max_tokens` reserves against tokens/min.
 */
export const ECHO_MODEL: ModelEntry = {
  id: 'llmux-echo',
  provider: 'llmux',
  upstream_id: 'llmux-echo',
  display_name: 'llmux echo (built-in test model)',
  owned_by: 'llmux',
  type: 'chat',
  created_at: '2026-01-01T00:00:00Z',
  context_length: 32_768,
  max_output_tokens: 4_096,
  capabilities: {
    supports_function_calling: false,
    supports_vision: false,
    supports_streaming: true,
    supports_structured_output: false,
  },
  pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
  reasoning: false,
  fallbacks: [],
  max_tokens_param: 'max_tokens',
  replay_reasoning: false,
};

export const BUILTIN_MODELS: ModelEntry[] = [
  // OpenAI: developers.openai.com/api/docs/pricing and the per-model pages; shutdown dates from
  // developers.openai.com/api/docs/deprecations (o4-mini, o3-mini and gpt-4.1-nano shut down
  // 2026-10-23 and are left out). GPT-5.5+ double input above 272K prompt tokens.
  // GPT-6.1 Sol and GPT-6.2: cached input at 0.05x (the models' pages). Codex CLI's default model
  // is gpt-6.1-sol in 0.169 and gpt-6.2-sol in 0.171.
  model('openai', 'gpt-6.2-astra', 'GPT-6.2 Astra', '2026-11-17', [1_050_000, 128 * K], [8, 40], ALL, { ...OPENAI_REASONING, cache: TWENTIETH_CACHE }),
  model('openai', 'gpt-6.2-sol', 'GPT-6.2 Sol', '2026-11-17', [1_050_000, 128 * K], [2, 10], ALL, { ...OPENAI_REASONING, cache: TWENTIETH_CACHE }),
  model('openai', 'gpt-6.1-sol', 'GPT-6.1 Sol', '2026-09-30', [1_050_000, 128 * K], [2, 10], ALL, { ...OPENAI_REASONING, cache: TWENTIETH_CACHE }),
  model('openai', 'gpt-6-astra', 'GPT-6 Astra', '2026-09-05', [1_050_000, 128 * K], [10, 50], ALL, OPENAI_REASONING),
  model('openai', 'gpt-6-sol', 'GPT-6 Sol', '2026-09-22', [1_050_000, 128 * K], [2, 10], ALL, OPENAI_REASONING),
  model('openai', 'gpt-6-luna', 'GPT-6 Luna', '2026-09-22', [1_050_000, 128 * K], [0.1, 0.5], ALL, OPENAI_REASONING),
  model('openai', 'gpt-5.5', 'GPT-5.5', '2026-04-23', [1_050_000, 128 * K], [5, 30], ALL, OPENAI_REASONING),
  model('openai', 'gpt-5.4-mini', 'GPT-5.4 mini', '2026-03-17', [400 * K, 128 * K], [0.75, 4.5], ALL, OPENAI_REASONING),
  model('openai', 'gpt-5.4-nano', 'GPT-5.4 nano', '2026-03-17', [400 * K, 128 * K], [0.2, 1.25], ALL, OPENAI_REASONING),
  // gpt-5, gpt-5-mini, gpt-5-nano and o3: deprecated, shut down 2026-12-11.
  model('openai', 'gpt-5', 'GPT-5', '2025-08-07', [400 * K, 128 * K], [1.25, 10], ALL, OPENAI_REASONING),
  model('openai', 'gpt-5-mini', 'GPT-5 mini', '2025-08-07', [400 * K, 128 * K], [0.25, 2], ALL, OPENAI_REASONING),
  model('openai', 'gpt-5-nano', 'GPT-5 nano', '2025-08-07', [400 * K, 128 * K], [0.05, 0.4], ALL, OPENAI_REASONING),
  model('openai', 'o3', 'o3', '2025-04-16', [200 * K, 100 * K], [2, 8], ALL, { ...OPENAI_REASONING, cache: QUARTER_CACHE }),
  // gpt-4.1, gpt-4.1-mini, gpt-4o and gpt-4o-mini: deprecated, shut down 2027-01-14.
  model('openai', 'gpt-4.1', 'GPT-4.1', '2025-04-14', [1_047_576, 32_768], [2, 8], ALL, { cache: QUARTER_CACHE }),
  model('openai', 'gpt-4.1-mini', 'GPT-4.1 mini', '2025-04-14', [1_047_576, 32_768], [0.4, 1.6], ALL, { cache: QUARTER_CACHE }),
  model('openai', 'gpt-4o', 'GPT-4o', '2024-05-13', [128 * K, 16_384], [2.5, 10], ALL, { cache: { read: 0.5 } }),
  model('openai', 'gpt-4o-mini', 'GPT-4o mini', '2024-07-18', [128 * K, 16_384], [0.15, 0.6], ALL, { cache: { read: 0.5 } }),

  // Anthropic: platform.claude.com/docs/en/models/<model>/overview (each page: id, context, max
  // output, price). Retired and left out: claude-3-5-haiku (2026-02-19), claude-sonnet-4 and
  // claude-opus-4 (2026-06-15), claude-opus-4-1 (2026-08-05); claude-sonnet-4-5 retires
  // 2026-11-30 and is left out. Claude Haiku 5.5 has prompt-length tiers and is not listed yet.
  model('anthropic', 'claude-fable-5-1', 'Claude Fable 5.1', '2026-09-01', [1 * M, 128 * K], [10, 50], ALL, THINKS),
  model('anthropic', 'claude-opus-5-5', 'Claude Opus 5.5', '2026-09-22', [1 * M, 128 * K], [4, 20], ALL, THINKS),
  model('anthropic', 'claude-sonnet-5-5', 'Claude Sonnet 5.5', '2026-09-28', [1 * M, 128 * K], [2, 10], ALL, THINKS),
  model('anthropic', 'claude-fable-5', 'Claude Fable 5', '2026-06-09', [1 * M, 128 * K], [10, 50], ALL, THINKS),
  model('anthropic', 'claude-opus-5', 'Claude Opus 5', '2026-07-24', [1 * M, 128 * K], [5, 25], ALL, THINKS),
  model('anthropic', 'claude-sonnet-5', 'Claude Sonnet 5', '2026-06-30', [1 * M, 128 * K], [2, 10], ALL, THINKS),
  model('anthropic', 'claude-opus-4-6', 'Claude Opus 4.6', '2026-02-05', [1 * M, 128 * K], [5, 25], ALL, THINKS),
  model('anthropic', 'claude-sonnet-4-6', 'Claude Sonnet 4.6', '2026-02-17', [1 * M, 128 * K], [3, 15], ALL, THINKS),
  {
    ...model('anthropic', 'claude-haiku-4-5-20251001', 'Claude Haiku 4.5', '2025-10-15', [200 * K, 64 * K], [1, 5], ALL, THINKS),
    id: 'claude-haiku-4-5',
  },

  // Gemini (OpenAI-compatible endpoint): ai.google.dev/gemini-api/docs/pricing (read 2026-10-07)
  // and the model pages. Pro prices are for prompts up to 200K tokens (above: 2x input).
  // gemini-3.5-flash is routed to 3.6 by Google and left out; 3.8 Flash is on a promotional price.
  model('gemini', 'gemini-3.1-pro-preview', 'Gemini 3.1 Pro (preview)', '2026-02-19', [1_048_576, 65_536], [2, 12], ALL, THINKS),
  model('gemini', 'gemini-3.5-flash-lite', 'Gemini 3.5 Flash-Lite', '2026-07-21', [1_048_576, 65_536], [0.3, 2.5], ALL, THINKS),
  model('gemini', 'gemini-3.1-flash-lite', 'Gemini 3.1 Flash-Lite', '2026-05-07', [1_048_576, 65_536], [0.25, 1.5], ALL, THINKS),
  model('gemini', 'gemini-2.5-pro', 'Gemini 2.5 Pro', '2025-06-17', [1_048_576, 65_536], [1.25, 10], ALL, { ...THINKS, cache: QUARTER_CACHE }),
  model('gemini', 'gemini-2.5-flash', 'Gemini 2.5 Flash', '2025-06-17', [1_048_576, 65_536], [0.3, 2.5], ALL, { ...THINKS, cache: QUARTER_CACHE }),
  model('gemini', 'gemini-2.5-flash-lite', 'Gemini 2.5 Flash-Lite', '2025-07-22', [1_048_576, 65_536], [0.1, 0.4], ALL, { ...THINKS, cache: QUARTER_CACHE }),

  // Mistral: mistral.ai pricing page and docs.mistral.ai model cards. `mistral-medium-latest` is
  // Mistral Medium 3.5 since Medium 3/3.1 were deprecated (2026-05-22); it absorbs Magistral
  // (reasoning) and Devstral (coding).
  model('mistral', 'mistral-medium-latest', 'Mistral Medium 3.5', '2026-04-29', [262_144, 256 * K], [1.5, 7.5], ALL, THINKS),
  model('mistral', 'mistral-large-latest', 'Mistral Large 3', '2025-12-02', [262_144, 262_144], [0.5, 1.5], ALL),
  model('mistral', 'mistral-small-latest', 'Mistral Small 3.2', '2025-06-20', [131_072, 131_072], [0.1, 0.3], ALL),
  model('mistral', 'devstral-2512', 'Devstral 2', '2025-12-09', [262_144, 262_144], [0.4, 2], TEXT),
  model('mistral', 'codestral-latest', 'Codestral 25.08', '2025-07-30', [256 * K, 256 * K], [0.3, 0.9], TEXT),

  // Groq: console.groq.com/docs/models, production models (preview models may vanish at short
  // notice and are left out).
  model('groq', 'llama-3.3-70b-versatile', 'Llama 3.3 70B Versatile (Groq)', '2024-12-06', [131_072, 32_768], [0.59, 0.79], TOOLS_ONLY),
  model('groq', 'llama-3.1-8b-instant', 'Llama 3.1 8B Instant (Groq)', '2024-07-23', [131_072, 131_072], [0.05, 0.08], TOOLS_ONLY),
  model('groq', 'openai/gpt-oss-120b', 'GPT-OSS 120B (Groq)', '2025-08-05', [131_072, 65_536], [0.15, 0.6], TEXT, THINKS),
  model('groq', 'openai/gpt-oss-20b', 'GPT-OSS 20B (Groq)', '2025-08-05', [131_072, 65_536], [0.075, 0.3], TEXT, THINKS),

  // DeepSeek: api-docs.deepseek.com/quick_start/pricing (checked 2026-11-15). Peak-hour prices;
  // off-peak is half. `deepseek-flash` is served by DeepSeek-V4.1-Flash. JSON output is
  // json_object only, so no structured-output flag.
  model('deepseek', 'deepseek-flash', 'DeepSeek V4.1 Flash', '2026-09-10', [1_048_576, 393_216], [0.3, 1.2], VISION_TOOLS, DEEPSEEK_THINKING),
  model('deepseek', 'deepseek-v4-pro', 'DeepSeek V4 Pro', '2026-04-24', [1_048_576, 393_216], [1.32, 3.96], TOOLS_ONLY, DEEPSEEK_THINKING),

  // xAI: docs.x.ai/developers/models and per-model pages, cross-checked with resellers' listings
  // (which also give grok-4.3's release day). Prices for prompts up to ~200K tokens (above: 2x
  // input). xAI publishes no output cap separate from the window. Grok 4.3 and 4.20 reason
  // without an effort setting, so they are not marked `reasoning`.
  model('xai', 'grok-4.6', 'Grok 4.6', '2026-08-07', [500 * K, 500 * K], [2, 6], ALL, THINKS),
  model('xai', 'grok-4.5', 'Grok 4.5', '2026-07-09', [500 * K, 500 * K], [2, 6], ALL, THINKS),
  model('xai', 'grok-4.3', 'Grok 4.3', '2026-05-03', [1 * M, 1 * M], [1.25, 2.5], ALL),
  model('xai', 'grok-4.20-0309-reasoning', 'Grok 4.20 (reasoning)', '2026-03-09', [1 * M, 1 * M], [1.25, 2.5], ALL),
  model('xai', 'grok-4.20-0309-non-reasoning', 'Grok 4.20 (non-reasoning)', '2026-03-09', [1 * M, 1 * M], [1.25, 2.5], ALL),

  // Together: docs.together.ai/docs/serverless/models and together.ai/pricing. No separate output
  // cap is published; the window is the bound.
  model('together', 'openai/gpt-oss-120b', 'GPT-OSS 120B (Together)', '2025-08-05', [131_072, 131_072], [0.15, 0.6], TEXT, THINKS),
  model('together', 'openai/gpt-oss-20b', 'GPT-OSS 20B (Together)', '2025-08-05', [131_072, 131_072], [0.05, 0.2], TEXT, THINKS),
  model('together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', 'Llama 3.3 70B Instruct Turbo (Together)', '2024-12-06', [131_072, 131_072], [0.88, 0.88], TEXT),
  model('together', 'moonshotai/Kimi-K2.5', 'Kimi K2.5 (Together)', '2026-01-27', [262_144, 262_144], [0.5, 2.8], ALL, THINKS),
  model('together', 'moonshotai/Kimi-K2-Instruct-0905', 'Kimi K2 Instruct 0905 (Together)', '2025-09-05', [262_144, 262_144], [1, 3], TEXT),
  model('together', 'deepseek-ai/DeepSeek-V3.1', 'DeepSeek V3.1 (Together)', '2025-08-21', [131_072, 131_072], [0.6, 1.7], TEXT, THINKS),

  // Fireworks: docs.fireworks.ai/serverless/pricing (standard tier). No separate output cap is
  // published; the window is the bound.
  model('fireworks', 'accounts/fireworks/models/gpt-oss-120b', 'GPT-OSS 120B (Fireworks)', '2025-08-05', [131_072, 131_072], [0.15, 0.6], TEXT, THINKS),
  model('fireworks', 'accounts/fireworks/models/gpt-oss-20b', 'GPT-OSS 20B (Fireworks)', '2025-08-05', [131_072, 131_072], [0.07, 0.3], TEXT, THINKS),
  model('fireworks', 'accounts/fireworks/models/kimi-k2p5', 'Kimi K2.5 (Fireworks)', '2026-01-27', [262_144, 262_144], [0.6, 3], ALL, THINKS),
  model('fireworks', 'accounts/fireworks/models/glm-5', 'GLM-5 (Fireworks)', '2026-02-11', [202_752, 202_752], [1, 3.2], TEXT, THINKS),
  model('fireworks', 'accounts/fireworks/models/deepseek-v4-pro', 'DeepSeek V4 Pro (Fireworks)', '2026-04-24', [1_048_576, 393_216], [1.74, 3.48], TEXT, THINKS),

  // OpenRouter: openrouter.ai/<model> pages. OpenRouter passes the serving lab's list price
  // through per token (its fee is charged on credit purchases), so prices and limits are the
  // labs'. It accepts `reasoning_effort` and maps it per model.
  model('openrouter', 'openai/gpt-5.5', 'GPT-5.5 (OpenRouter)', '2026-04-23', [1_050_000, 128 * K], [5, 30], ALL, { ...THINKS, cache: TENTH_CACHE }),
  model('openrouter', 'anthropic/claude-opus-4.6', 'Claude Opus 4.6 (OpenRouter)', '2026-02-05', [1 * M, 128 * K], [5, 25], ALL, { ...THINKS, cache: ANTHROPIC_CACHE }),
  model('openrouter', 'anthropic/claude-sonnet-4.6', 'Claude Sonnet 4.6 (OpenRouter)', '2026-02-17', [1 * M, 128 * K], [3, 15], ALL, { ...THINKS, cache: ANTHROPIC_CACHE }),
  model('openrouter', 'anthropic/claude-haiku-4.5', 'Claude Haiku 4.5 (OpenRouter)', '2025-10-15', [200 * K, 64 * K], [1, 5], ALL, { ...THINKS, cache: ANTHROPIC_CACHE }),
  model('openrouter', 'google/gemini-2.5-pro', 'Gemini 2.5 Pro (OpenRouter)', '2025-06-17', [1_048_576, 65_536], [1.25, 10], ALL, { ...THINKS, cache: QUARTER_CACHE }),
  model('openrouter', 'google/gemini-2.5-flash', 'Gemini 2.5 Flash (OpenRouter)', '2025-06-17', [1_048_576, 65_536], [0.3, 2.5], ALL, { ...THINKS, cache: QUARTER_CACHE }),

  // Cerebras: inference-docs.cerebras.ai/models/overview. Shared inference now serves only
  // gpt-oss-120b at a published price (Llama, Qwen 3 and GLM 4.7 ids were retired); the context
  // is 131K on paid tiers (65K on the free tier).
  model('cerebras', 'gpt-oss-120b', 'GPT-OSS 120B (Cerebras)', '2025-08-05', [131_072, 32_768], [0.35, 0.75], TEXT, THINKS),

  // Ollama: local models from ollama.com/library, price 0. Context is each model's native window
  // (Ollama's own default num_ctx is smaller); no separate output cap. Structured output via
  // Ollama's JSON-schema `format` works for every model.
  model('ollama', 'llama3.3', 'Llama 3.3 70B (local)', '2024-12-06', [131_072, 131_072], [0, 0], TEXT),
  model('ollama', 'llama3.1:8b', 'Llama 3.1 8B (local)', '2024-07-23', [131_072, 131_072], [0, 0], TEXT),
  model('ollama', 'qwen3:8b', 'Qwen3 8B (local)', '2025-04-29', [40_960, 40_960], [0, 0], TEXT, THINKS),
  model('ollama', 'qwen3-coder:30b', 'Qwen3 Coder 30B (local)', '2025-07-31', [262_144, 262_144], [0, 0], TEXT),
  model('ollama', 'gpt-oss:20b', 'GPT-OSS 20B (local)', '2025-08-05', [131_072, 131_072], [0, 0], TEXT, THINKS),
  model('ollama', 'gemma3:27b', 'Gemma 3 27B (local)', '2025-03-12', [131_072, 131_072], [0, 0], caps('vision', 'json')),
  model('ollama', 'deepseek-r1:8b', 'DeepSeek R1 0528 Qwen3 8B (local)', '2025-05-28', [131_072, 131_072], [0, 0], TEXT, THINKS),
  model('ollama', 'mistral-small3.2', 'Mistral Small 3.2 24B (local)', '2025-06-20', [131_072, 131_072], [0, 0], ALL),
];
