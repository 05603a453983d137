import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_REPORTED_TOKENS, boundUsage, foldMessagesUsage, fromChatUsage, fromMessagesUsage } from '../../src/formats/usage.ts';

describe('usage read from upstreams', () => {
  it('clamps absurd figures: 1e308 counts as the bound, and negative, NaN, Infinity and strings as 0', () => {
    // Issue 14: an upstream reporting 1e308 tokens locked its key out and poisoned /metrics.
    assert.deepEqual(fromMessagesUsage({ input_tokens: 1e308, output_tokens: -5, cache_read_input_tokens: Number.NaN, cache_creation_input_tokens: Number.POSITIVE_INFINITY }), {
      inputTokens: MAX_REPORTED_TOKENS, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0,
    });
    const chat = fromChatUsage({ prompt_tokens: 1e308, completion_tokens: 1e308, total_tokens: 1e308, prompt_tokens_details: { cached_tokens: 1e308 } });
    for (const value of Object.values(chat)) assert.ok(Number.isSafeInteger(value) && value >= 0 && value <= MAX_REPORTED_TOKENS, JSON.stringify(chat));
    assert.deepEqual(fromChatUsage({ prompt_tokens: '12' as unknown as number, completion_tokens: 3.9, total_tokens: 0 }), { inputTokens: 0, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 });
    const folded = foldMessagesUsage(undefined, { input_tokens: 1e300, output_tokens: 1e20 }, 'delta');
    assert.deepEqual([folded.inputTokens, folded.outputTokens], [MAX_REPORTED_TOKENS, MAX_REPORTED_TOKENS]);
  });

  it('keeps ordinary figures as they are', () => {
    assert.deepEqual(fromChatUsage({ prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010, prompt_tokens_details: { cached_tokens: 800 } }), {
      inputTokens: 200, outputTokens: 10, cacheReadTokens: 800, cacheCreationTokens: 0,
    });
  });
});

describe('boundUsage', () => {
  it('holds input (cache reads first, then writes, then the rest) to the context and output to the cap, and says so', () => {
    const { usage, clamped } = boundUsage({ inputTokens: 500, outputTokens: 900, cacheReadTokens: 700, cacheCreationTokens: 200 }, { inputTokens: 1000, outputTokens: 100 });
    assert.deepEqual(usage, { inputTokens: 100, outputTokens: 100, cacheReadTokens: 700, cacheCreationTokens: 200 });
    assert.match(clamped ?? '', /reported 1400 in, 900 out, beyond what the request could have used \(1000 in, 100 out\); counted as 1000 in, 100 out/);
  });

  it('leaves usage within the bound as it is', () => {
    const within = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheCreationTokens: 0 };
    assert.deepEqual(boundUsage(within, { inputTokens: 10, outputTokens: 5 }), { usage: within, clamped: undefined });
  });
});
