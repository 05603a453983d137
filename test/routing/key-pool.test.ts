import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keysOf, writtenKey } from '../../src/routing/key-pool.ts';
import { pool, provider } from '../helpers/routing.ts';

describe('provider key pools', () => {
  it('names keys by their environment variable or their place in the config, never by value', () => {
    const p = pool('p', ['env:OPENAI_KEY_A', 'sk-literal-secret', 'env:OPENAI_KEY_B']);
    assert.deepEqual(keysOf(p).map((k) => [k.index, k.label]), [[0, 'OPENAI_KEY_A'], [1, 'api_keys[1]'], [2, 'OPENAI_KEY_B']]);
    assert.ok(!JSON.stringify(keysOf(p)).includes('sk-literal'));
    assert.equal(writtenKey(p, 1), 'sk-literal-secret');
    assert.equal(keysOf(p), keysOf(p));
  });

  it('makes a lone api_key a pool of one, and a keyless provider a pool of none', () => {
    const single = provider('s', { apiKey: 'sk-x', keyless: false });
    assert.deepEqual(keysOf(single).map((k) => k.label), ['api_key']);
    assert.equal(writtenKey(single, 0), 'sk-x');
    assert.equal(writtenKey(single, 1), undefined);
    assert.deepEqual(keysOf(provider('local')), []);
  });
});
