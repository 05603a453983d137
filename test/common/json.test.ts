import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJsonObject } from '../../src/common/json.ts';

describe('parseJsonObject', () => {
  it('gives the object a line holds', () => {
    assert.deepEqual(parseJsonObject('{"v":1,"r":[]}'), { v: 1, r: [] });
  });

  it('gives undefined for text that does not parse, or parses to anything but an object', () => {
    for (const text of ['{"v":1', '', 'null', '[1]', '"x"', '3']) assert.equal(parseJsonObject(text), undefined, text);
  });
});
