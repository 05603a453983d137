import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SKIP_THOUGHT_SIGNATURE, createContentsBuilder, effortBudget, mediaPartFromUrl, stopSequences, thinkingConfig } from '../../src/translate/gemini-build.ts';

describe('createContentsBuilder', () => {
  it('merges same-role parts, skips empty ones, and opens with a user turn', () => {
    const builder = createContentsBuilder();
    builder.add('model', [{ text: 'a' }]);
    builder.add('model', []);
    builder.add('model', [{ text: 'b' }]);
    builder.add('user', [{ text: 'c' }]);
    assert.deepEqual(builder.finish(), [
      { role: 'user', parts: [{ text: '.' }] },
      { role: 'model', parts: [{ text: 'a' }, { text: 'b' }] },
      { role: 'user', parts: [{ text: 'c' }] },
    ]);
  });

  it("signs the first call of each model turn in the current turn, and keeps a signature that is there", () => {
    const builder = createContentsBuilder();
    builder.add('user', [{ text: 'q' }]);
    builder.add('model', [{ functionCall: { name: 'f', args: {} }, thoughtSignature: 'own' }, { functionCall: { name: 'g', args: {} } }]);
    builder.add('user', [{ functionResponse: { name: 'f', response: {} } }, { functionResponse: { name: 'g', response: {} } }]);
    builder.add('model', [{ text: 'more' }, { functionCall: { name: 'h', args: {} } }]);
    const contents = builder.finish();
    assert.deepEqual(contents.flatMap((content) => content.parts.map((part) => part.thoughtSignature)), [undefined, 'own', undefined, undefined, undefined, undefined, SKIP_THOUGHT_SIGNATURE]);
  });
});

describe('gemini-build helpers', () => {
  it('reads media URLs: data inline, http(s) as files, anything else a placeholder', () => {
    assert.deepEqual(mediaPartFromUrl('data:image/gif;base64,R0lG'), { inlineData: { mimeType: 'image/gif', data: 'R0lG' } });
    assert.deepEqual(mediaPartFromUrl('https://x.test/doc.PDF#page=2'), { fileData: { mimeType: 'application/pdf', fileUri: 'https://x.test/doc.PDF#page=2' } });
    assert.deepEqual(mediaPartFromUrl('https://x.test/v1.2/image'), { fileData: { mimeType: 'image/jpeg', fileUri: 'https://x.test/v1.2/image' } });
    assert.deepEqual(mediaPartFromUrl('file:///etc/passwd'), { text: '[image omitted: only http(s) and data URLs can be sent to this model]' });
  });

  it('knows the efforts and fits a budget under a cap', () => {
    assert.equal(effortBudget('minimal'), 512);
    assert.equal(effortBudget('bogus'), undefined);
    assert.equal(effortBudget(undefined), undefined);
    assert.deepEqual(thinkingConfig(24576, undefined, 'x', () => {}), { thinkingBudget: 24576, includeThoughts: true });
    assert.deepEqual(thinkingConfig(24576, 100_000, 'x', () => {}), { thinkingBudget: 24576, includeThoughts: true });
    assert.deepEqual(thinkingConfig(0, 10, 'x', () => {}), { thinkingBudget: 0 });
  });

  it('keeps five stop sequences and drops empty ones', () => {
    const warnings: string[] = [];
    assert.deepEqual(stopSequences(['', 'a', 1, 'b'], 'stop', (m) => warnings.push(m)), ['a', 'b']);
    assert.deepEqual(warnings, []);
  });
});
