/**
 * What a request cost, at the catalog's prices. The catalog has one input price: cache reads and
 * writes are counted as input at that price (llmux.md section 7 counts them apart in the ledger,
 * but prices them as the catalog gives them).
 */
import type { ModelPricing } from '../config/types.ts';
import type { TokenUsage } from '../formats/wire.ts';
import { promptTokens } from '../formats/usage.ts';

/** Cost in the pricing's currency (USD for every catalog entry). */
export function costOf(usage: TokenUsage, pricing: ModelPricing): number {
  return promptTokens(usage) * pricing.input_tokens_cost_per_million / 1e6 + usage.outputTokens * pricing.output_tokens_cost_per_million / 1e6;
}
