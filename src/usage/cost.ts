/**
 * What a request cost, at the catalog's prices (llmux.md sections 7 and 11): input, cache reads and
 * cache writes each at their own price (a model's pricing without cache prices counts them as
 * input), output at its price. The one place cost is computed.
 */
import type { ModelPricing } from '../config/types.ts';
import type { TokenUsage } from '../formats/wire.ts';

/** Cost in the pricing's currency (USD for every catalog entry). */
export function costOf(usage: TokenUsage, pricing: ModelPricing): number {
  const input = pricing.input_tokens_cost_per_million;
  return (
    usage.inputTokens * input
    + usage.cacheReadTokens * (pricing.cache_read_tokens_cost_per_million ?? input)
    + usage.cacheCreationTokens * (pricing.cache_write_tokens_cost_per_million ?? input)
    + usage.outputTokens * pricing.output_tokens_cost_per_million
  ) / 1e6;
}

/**
 * The most `inputTokens` in and `outputTokens` out can cost: every input token at the dearer of
 * the input and cache-write prices (a prompt written to a cache costs more than plain input).
 */
export function worstCostOf(inputTokens: number, outputTokens: number, pricing: ModelPricing): number {
  const writesCostMore = (pricing.cache_write_tokens_cost_per_million ?? 0) > pricing.input_tokens_cost_per_million;
  return costOf({ inputTokens: writesCostMore ? 0 : inputTokens, outputTokens, cacheReadTokens: 0, cacheCreationTokens: writesCostMore ? inputTokens : 0 }, pricing);
}
