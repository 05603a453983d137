import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { withAliases } from '../../src/catalog/aliases.ts';
import { toModelList, toModelRecord } from '../../src/catalog/catalog.ts';
import { model } from '../helpers/routing.ts';

describe('aliases in the model list', () => {
  const target = model('gpt-5.4-mini', { display_name: 'GPT-5.4 mini', context_length: 400_000 });
  const real = model('gpt-4.1');

  it('lists a literal alias as a model of its target, under the alias\'s id', () => {
    const list = withAliases([real, target], [{ pattern: 'gpt-4o', target: 'gpt-5.4-mini' }]);
    assert.deepEqual(list.map((m) => m.id), ['gpt-4.1', 'gpt-5.4-mini', 'gpt-4o']);
    const record = toModelRecord(list[2]!);
    assert.deepEqual([record.id, record.display_name, record.context_length], ['gpt-4o', 'GPT-5.4 mini', 400_000]);
    assert.equal(toModelList(list).last_id, 'gpt-4o');
  });

  it('leaves out globbed aliases, aliases whose target is not listed, and aliases a real model shadows', () => {
    const list = withAliases([real, target], [
      { pattern: 'claude-*', target: 'gpt-5.4-mini' },
      { pattern: 'o3', target: 'not-listed' },
      { pattern: 'gpt-4.1', target: 'gpt-5.4-mini' },
    ]);
    assert.deepEqual(list.map((m) => m.id), ['gpt-4.1', 'gpt-5.4-mini']);
  });

  it('gives the same entry each time, so the record cache holds', () => {
    const aliases = [{ pattern: 'gpt-4o', target: 'gpt-5.4-mini' }];
    assert.equal(withAliases([target], aliases)[1], withAliases([target], aliases)[1]);
  });
});
