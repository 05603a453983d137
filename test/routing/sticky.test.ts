import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createStickyMap, MAX_PLAIN_KEY, scopedConversationKey, STICKY_IDLE_MS } from '../../src/routing/sticky.ts';

const T0 = 1_700_000_000_000;
const A = { deployment: 'a/x', key: 'KEY_A' };
const B = { deployment: 'b/x', key: undefined };

describe('the sticky map', () => {
  it('forgets a conversation idle for an hour, and keeps one used within it', () => {
    const map = createStickyMap();
    map.set('c1', A, T0);
    map.set('c2', B, T0 + 1_000);
    assert.deepEqual(map.get('c1', T0 + STICKY_IDLE_MS - 1), A);
    assert.equal(map.get('c1', T0 + STICKY_IDLE_MS), undefined);
    map.set('c2', B, T0 + STICKY_IDLE_MS);
    assert.deepEqual(map.get('c2', T0 + 2 * STICKY_IDLE_MS - 1), B, 'each answered turn starts its hour again');
  });

  it('drops idle entries as new ones come, so an idle map does not hold them', () => {
    const map = createStickyMap({ idleMs: 100 });
    for (let i = 0; i < 50; i++) map.set(`c${i}`, A, T0 + i);
    map.set('late', B, T0 + 1_000);
    assert.equal(map.size, 1);
  });

  it('holds at most maxEntries, the least recently used going first', () => {
    const map = createStickyMap({ maxEntries: 3 });
    map.set('c1', A, T0);
    map.set('c2', A, T0 + 1);
    map.set('c3', A, T0 + 2);
    map.set('c1', B, T0 + 3);
    map.set('c4', A, T0 + 4);
    assert.equal(map.size, 3);
    assert.equal(map.get('c2', T0 + 5), undefined);
    assert.deepEqual(map.get('c1', T0 + 5), B);
  });
});

describe('conversation keys as the map holds them', () => {
  it('scopes a conversation by the llmux key id', () => {
    assert.notEqual(scopedConversationKey('key_a', 'user:u'), scopedConversationKey('key_b', 'user:u'));
    assert.equal(scopedConversationKey('key_a', 'user:u'), scopedConversationKey('key_a', 'user:u'));
  });

  it('keeps a long client-chosen key as a short hash', () => {
    const long = `cache:${'x'.repeat(10_000)}`;
    const scoped = scopedConversationKey('key_a', long);
    assert.ok(scoped.length < 50);
    assert.notEqual(scoped, scopedConversationKey('key_a', `${long}y`));
    const short = `cache:${'x'.repeat(MAX_PLAIN_KEY - 6)}`;
    assert.ok(scopedConversationKey('key_a', short).endsWith(short));
  });
});
