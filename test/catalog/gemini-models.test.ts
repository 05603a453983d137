import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { geminiModelPage, toGeminiModel } from '../../src/catalog/gemini-models.ts';
import { BUILTIN_MODELS } from '../../src/catalog/builtin-models.ts';
import type { ModelEntry } from '../../src/config/types.ts';
import { GatewayError } from '../../src/common/errors.ts';

const MODELS: readonly ModelEntry[] = BUILTIN_MODELS.slice(0, 7);

function page(query: string) {
  return geminiModelPage(MODELS, new URLSearchParams(query));
}

describe('the catalog as Gemini Model records', () => {
  it('names each model models/{llmux id}, with the catalog\'s limits and the methods llmux serves', () => {
    const model = MODELS[0] as ModelEntry;
    assert.deepEqual(toGeminiModel(model), {
      name: `models/${model.id}`,
      baseModelId: model.id,
      version: model.created_at.slice(0, 10),
      displayName: model.display_name,
      description: `${model.display_name}, served by llmux (${model.owned_by})`,
      inputTokenLimit: model.context_length,
      outputTokenLimit: model.max_output_tokens,
      supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
      thinking: model.reasoning,
    });
  });

  it('pages as Google pages: pageSize, and a nextPageToken while more are left', () => {
    const first = page('pageSize=3');
    assert.equal(first.models.length, 3);
    assert.ok(first.nextPageToken !== undefined);
    const second = page(`pageSize=3&pageToken=${first.nextPageToken}`);
    const third = page(`pageSize=3&pageToken=${second.nextPageToken ?? ''}`);
    assert.deepEqual([...first.models, ...second.models, ...third.models].map((model) => model.name), MODELS.map((model) => `models/${model.id}`));
    assert.equal(third.nextPageToken, undefined);
    assert.equal(page('').models.length, MODELS.length, 'fifty by default');
    assert.equal(page('page_size=2').models.length, 2, 'snake_case taken too');
  });

  it('refuses a page size that is not a whole number from 0, and a token llmux did not give', () => {
    for (const query of ['pageSize=-1', 'pageSize=2.5', 'pageSize=many', 'pageToken=bm90LW91cnM', 'pageToken=%25%25']) {
      assert.throws(() => page(query), (err: unknown) => err instanceof GatewayError && err.status === 400, query);
    }
  });
});
