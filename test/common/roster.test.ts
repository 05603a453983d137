import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRoster } from '../../src/common/roster.ts';

describe('createRoster', () => {
  it('lists what it holds oldest first, and takes out any one, first, middle or last, in any order', () => {
    for (const order of [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]]) {
      const roster = createRoster<string>();
      const names = ['a', 'b', 'c', 'd'];
      const removers = names.map((name) => roster.add(name));
      assert.deepEqual(roster.values(), names);
      const left = [...names];
      for (const i of order) {
        removers[i]!();
        left.splice(left.indexOf(names[i]!), 1);
        assert.deepEqual(roster.values(), left, `after taking out ${names[i]} (order ${order.join(',')})`);
        assert.equal(roster.size, left.length);
      }
      // Added again after it was empty: the ends were let go.
      roster.add('e');
      assert.deepEqual(roster.values(), ['e']);
    }
  });

  it('takes a value out once however often its remover is called, and holds the same value twice as two', () => {
    const roster = createRoster<number>();
    const first = roster.add(7);
    roster.add(7);
    first();
    first();
    assert.deepEqual(roster.values(), [7]);
    assert.equal(roster.size, 1);
  });

  it('lists a copy, so each value listed may take itself out while the list is walked', () => {
    const roster = createRoster<() => void>();
    const called: number[] = [];
    for (let i = 0; i < 3; i++) {
      const remove = roster.add(() => {
        called.push(i);
        remove();
      });
    }
    for (const cut of roster.values()) cut();
    assert.deepEqual(called, [0, 1, 2]);
    assert.equal(roster.size, 0);
    assert.deepEqual(roster.values(), []);
  });
});
