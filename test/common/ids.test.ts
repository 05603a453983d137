import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newId } from '../../src/common/ids.ts';

test('ids are the prefix and 24 hex characters, none repeated across many refills of the random pool', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const id = newId('msg_');
    assert.match(id, /^msg_[0-9a-f]{24}$/);
    seen.add(id.slice(4));
  }
  assert.equal(seen.size, 1000);
  assert.match(newId('chatcmpl-'), /^chatcmpl-[0-9a-f]{24}$/);
});
