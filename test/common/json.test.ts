import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { frozenJson, parseJsonObject } from '../../src/common/json.ts';

describe('parseJsonObject', () => {
  it('gives the object a line holds', () => {
    assert.deepEqual(parseJsonObject('{"v":1,"r":[]}'), { v: 1, r: [] });
  });

  it('gives undefined for text that does not parse, or parses to anything but an object', () => {
    for (const text of ['{"v":1', '', 'null', '[1]', '"x"', '3']) assert.equal(parseJsonObject(text), undefined, text);
  });
});

describe('frozenJson', () => {
  it('is JSON.stringify of the value, kept for a frozen object and made again for one that may change', () => {
    const open: Record<string, unknown> = { command: 'ls' };
    assert.equal(frozenJson(open), '{"command":"ls"}');
    open['command'] = 'pwd';
    assert.equal(frozenJson(open), '{"command":"pwd"}');
    const frozen = Object.freeze({ command: 'ls', nested: Object.freeze({ n: 1 }) });
    assert.equal(frozenJson(frozen), JSON.stringify(frozen));
    assert.equal(frozenJson(frozen), '{"command":"ls","nested":{"n":1}}');
  });
});
