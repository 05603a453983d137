import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readJsonObject } from '../../src/http/body.ts';
import { withMembers } from '../../src/common/json-bytes.ts';
import { changedObject, withChanges } from '../../src/common/member-changes.ts';

describe('member changes (a platform\'s envelope)', () => {
  const text = '{ "model" : "claude",\n  "messages": [{"role":"user","content":"caf\u00e9 \\u2192"}], "stream":true }';

  it('are made the same way to the bytes and to the object (Bedrock: no model, no stream, its version)', () => {
    const envelope = new Map<string, unknown>([['model', undefined], ['stream', undefined], ['anthropic_version', 'bedrock-2023-05-31']]);
    const client = readJsonObject(Buffer.from(text));
    const spliced = Buffer.concat(withMembers(client, withChanges(new Map([['model', '"upstream-id"']]), envelope))).toString();
    assert.equal(spliced, '{ "messages": [{"role":"user","content":"caf\u00e9 \\u2192"}],"anthropic_version":"bedrock-2023-05-31" }');
    assert.deepStrictEqual(JSON.parse(spliced), changedObject(client.value, envelope));
    assert.deepStrictEqual(Object.keys(changedObject(client.value, envelope)), ['messages', 'anthropic_version']);
  });

  it('set a __proto__ member as data, as JSON.parse would, never as the prototype', () => {
    const changed = changedObject({ a: 1 }, new Map<string, unknown>([['__proto__', { polluted: true }]]));
    assert.equal(Object.getPrototypeOf(changed), Object.prototype);
    assert.deepStrictEqual(Object.keys(changed), ['a', '__proto__']);
    assert.equal((changed as Record<string, unknown>)['polluted'], undefined);
  });
});
