import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { camelCaseGeminiCountTokens, camelCaseGeminiRequest } from '../../src/formats/gemini-case.ts';

describe('camelCaseGeminiRequest', () => {
  it('returns the very same objects when the body is camelCase already', () => {
    const contents = [{ role: 'user', parts: [{ text: 'Hi' }] }];
    const body = { contents, generationConfig: { maxOutputTokens: 5 } };
    const out = camelCaseGeminiRequest(body);
    assert.equal(out, body);
    assert.equal(out['contents'], contents);
  });

  it('copies only the branch that changes', () => {
    const contents = [{ role: 'user', parts: [{ text: 'Hi' }] }];
    const out = camelCaseGeminiRequest({ contents, generation_config: { top_k: 3 } });
    assert.deepEqual(out, { contents, generationConfig: { topK: 3 } });
    assert.equal(out['contents'], contents);
  });

  it("renames a schema's fields but keeps its property names and enum values", () => {
    const out = camelCaseGeminiRequest({
      contents: [],
      generation_config: {
        response_schema: {
          type: 'OBJECT',
          property_ordering: ['first_name'],
          properties: { first_name: { type: 'STRING', max_length: '10' }, pets: { type: 'ARRAY', items: { any_of: [{ type: 'STRING', enum: ['a_b'] }] } } },
        },
      },
    });
    assert.deepEqual(out['generationConfig'], {
      responseSchema: {
        type: 'OBJECT',
        propertyOrdering: ['first_name'],
        properties: { first_name: { type: 'STRING', maxLength: '10' }, pets: { type: 'ARRAY', items: { anyOf: [{ type: 'STRING', enum: ['a_b'] }] } } },
      },
    });
  });

  it('renames the fields of newer message kinds but leaves their values alone', () => {
    const value = { inner_key: 1 };
    const out = camelCaseGeminiRequest({ contents: [], some_new_field: value });
    assert.equal(out['someNewField'], value);
  });

  it('keeps a __proto__ key as data, never as a prototype', () => {
    const body = JSON.parse('{"contents": [], "generation_config": {"top_k": 1}, "__proto__": {"polluted": true}}') as Record<string, unknown>;
    const out = camelCaseGeminiRequest(body);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(Object.hasOwn(out, '__proto__'), true);
    assert.equal((out as { polluted?: unknown }).polluted, undefined);
  });

  it('reads generate_content_request of a countTokens body as a whole request', () => {
    assert.deepEqual(camelCaseGeminiCountTokens({ generate_content_request: { contents: [{ parts: [{ inline_data: { mime_type: 'image/png', data: '' } }] }] } }), {
      generateContentRequest: { contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: '' } }] }] },
    });
  });
});
