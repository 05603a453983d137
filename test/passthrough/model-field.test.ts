import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { withModel } from '../../src/passthrough/model-field.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const MODEL = Buffer.from(JSON.stringify('llmux-id'));

describe('withModel on whole JSON answers', () => {
  for (const name of readdirSync(FIXTURES).filter((file) => file.endsWith('.json') && !file.includes('error')).sort()) {
    it(`renames the top-level model of ${name} and changes nothing else`, () => {
      const bytes = readFileSync(new URL(name, FIXTURES));
      const out = withModel(bytes, MODEL);
      const before = JSON.parse(bytes.toString()) as Record<string, unknown>;
      assert.deepEqual(JSON.parse(out.toString()), { ...before, model: 'llmux-id' });
      // Only the value's bytes changed: the text around it is the upstream's, spacing included.
      const value = JSON.stringify(before['model']);
      const at = bytes.indexOf(value, bytes.indexOf('"model"'));
      assert.equal(out.toString(), bytes.subarray(0, at).toString() + '"llmux-id"' + bytes.subarray(at + Buffer.byteLength(value)).toString());
    });
  }

  it('finds the top-level model after content that holds model keys of its own', () => {
    const answer = Buffer.from(JSON.stringify({ id: 'm', content: [{ type: 'tool_use', input: { model: 'keep', nested: { model: 'keep' } } }], model: 'up' }, null, 2));
    const out = JSON.parse(withModel(answer, MODEL).toString()) as Record<string, unknown>;
    assert.equal(out['model'], 'llmux-id');
    assert.deepEqual(out['content'], [{ type: 'tool_use', input: { model: 'keep', nested: { model: 'keep' } } }]);
  });

  it('reads strings with escaped quotes and brackets without losing its depth', () => {
    const answer = Buffer.from('{"text":"a \\"}{[ b \\\\","model" : "up"}');
    assert.equal(withModel(answer, MODEL).toString(), '{"text":"a \\"}{[ b \\\\","model" : "llmux-id"}');
  });

  it('returns the same buffer when the model is right already, absent, or not a string, and for bodies that are not objects', () => {
    for (const text of ['{"model":"llmux-id","x":1}', '{"x":{"model":"up"}}', '{"model":null}', '[{"model":"up"}]', 'not json', '']) {
      const bytes = Buffer.from(text);
      assert.equal(withModel(bytes, MODEL), bytes, text);
    }
  });
});
