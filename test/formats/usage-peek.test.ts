import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { peekUsage } from '../../src/formats/usage-peek.ts';
import { FIXTURES, fixture } from '../helpers/fake-upstream.ts';

describe('peekUsage', () => {
  for (const name of readdirSync(FIXTURES).filter((f) => f.endsWith('.json') && !f.includes('error'))) {
    it(`reads the same usage as a full parse of ${name}`, () => {
      const bytes = fixture(name);
      const full = (JSON.parse(bytes.toString()) as { usage?: unknown }).usage;
      assert.deepEqual(peekUsage(bytes), full);
    });
  }

  it('ignores a nested "usage" key that is not the answer\'s own', () => {
    const nested = Buffer.from('{"content":[{"type":"tool_use","input":{"usage":{"input_tokens":999}}}],"stop_reason":"tool_use"}');
    assert.equal(peekUsage(nested), undefined);
    const both = Buffer.from('{"usage":{"input_tokens":5,"output_tokens":1},"content":[{"type":"tool_use","input":{"usage":{"input_tokens":999}}}]}');
    assert.equal(peekUsage(both), undefined, 'falls back to a full parse when the last "usage" is nested');
  });

  it('is not fooled by braces and quotes inside strings', () => {
    const tricky = Buffer.from('{"text":"a } \\" { \\"usage\\":{} ]","usage" : { "input_tokens" : 3, "note": "}{" } }');
    assert.deepEqual(peekUsage(tricky), { input_tokens: 3, note: '}{' });
  });

  it('returns undefined for answers without usage, with usage null, or cut short', () => {
    assert.equal(peekUsage(Buffer.from('{"id":"x"}')), undefined);
    assert.equal(peekUsage(Buffer.from('{"usage":null}')), undefined);
    assert.equal(peekUsage(Buffer.from('{"usage":{"input_tokens":1')), undefined);
    assert.equal(peekUsage(Buffer.from('{"usage":{"input_tokens":1}} trailing')), undefined);
  });
});

describe('peekUsage on answers that are not objects', () => {
  it('returns undefined for a top-level array or string, even with an object-shaped tail', () => {
    assert.equal(peekUsage(Buffer.from('["usage", {"usage":{"input_tokens":1}}]')), undefined);
    assert.equal(peekUsage(Buffer.from('  "x" "usage":{"input_tokens":1}}')), undefined);
    assert.deepEqual(peekUsage(Buffer.from('\n {"usage":{"input_tokens":1}}')), { input_tokens: 1 });
  });
});
