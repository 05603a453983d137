import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelPricing } from '../../src/config/types.ts';
import { costOf, worstCostOf } from '../../src/usage/cost.ts';
import { BUILTIN_MODELS } from '../../src/catalog/builtin-models.ts';

const PLAIN: ModelPricing = { input_tokens_cost_per_million: 3, output_tokens_cost_per_million: 15, currency: 'USD' };
const CACHED: ModelPricing = { ...PLAIN, cache_read_tokens_cost_per_million: 0.3, cache_write_tokens_cost_per_million: 3.75 };
const USAGE = { inputTokens: 1_000_000, outputTokens: 100_000, cacheReadTokens: 2_000_000, cacheCreationTokens: 400_000 };

describe('cost at the catalog\'s prices', () => {
  it('prices cache reads and writes at their own prices', () => {
    assert.equal(costOf(USAGE, CACHED), 3 + 1.5 + 0.6 + 1.5);
  });

  it('prices them as input when the model has no cache prices', () => {
    assert.equal(costOf(USAGE, PLAIN), 3 + 1.5 + 6 + 1.2);
  });

  it('takes the worst case at the dearer of input and cache writes', () => {
    assert.equal(worstCostOf(1_000_000, 100_000, CACHED), 3.75 + 1.5);
    assert.equal(worstCostOf(1_000_000, 100_000, PLAIN), 3 + 1.5);
    assert.equal(worstCostOf(1_000_000, 0, { ...PLAIN, cache_write_tokens_cost_per_million: 1 }), 3);
  });

  it('has the cache prices the providers publish in the built-in catalog', () => {
    const pricing = (id: string): ModelPricing | undefined => BUILTIN_MODELS.find((model) => model.id === id)?.pricing;
    assert.deepEqual(pricing('claude-sonnet-4-6'), { input_tokens_cost_per_million: 3, output_tokens_cost_per_million: 15, currency: 'USD', cache_read_tokens_cost_per_million: 0.3, cache_write_tokens_cost_per_million: 3.75 });
    assert.equal(pricing('gpt-4o')?.cache_read_tokens_cost_per_million, 1.25);
    assert.equal(pricing('gemini-2.5-pro')?.cache_read_tokens_cost_per_million, 0.3125);
    assert.equal(pricing('mistral-large-latest')?.cache_read_tokens_cost_per_million, undefined);
  });
});
