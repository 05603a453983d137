import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PIECE_BYTES, parseJsonText, serializeJson, walkJson, withMembers } from '../../src/common/json-bytes.ts';
import type { JsonObjectBytes } from '../../src/common/json-bytes.ts';
import { agentMessagesBody } from '../../bench/agent-body.ts';

/** What JSON.parse of the whole gives: the value, or the error's message. */
function wholeParse(text: string): { value?: unknown; error?: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** The longest text JSON.parse was given during the last piecewiseParse. */
let longestParsed = 0;

function piecewiseParse(text: string): { value?: unknown; error?: string } {
  const bytes = Buffer.from(text);
  const parse = JSON.parse;
  longestParsed = 0;
  JSON.parse = (source: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    longestParsed = Math.max(longestParsed, source.length);
    return parse(source, reviver);
  };
  try {
    return { value: parseJsonText(bytes, walkJson(bytes, 200)) };
  } catch (err) {
    return { error: (err as Error).message };
  } finally {
    JSON.parse = parse;
  }
}

/** The same value, key order and all (JSON.stringify writes keys in property order), or the same error. */
function assertSameAsJsonParse(text: string, what: string): void {
  const whole = wholeParse(text);
  const pieces = piecewiseParse(text);
  if (whole.error !== undefined) {
    assert.equal(pieces.error, whole.error, what);
    return;
  }
  assert.equal(pieces.error, undefined, `${what}: ${pieces.error}`);
  assert.deepStrictEqual(pieces.value, whole.value, what);
  assert.equal(JSON.stringify(pieces.value), JSON.stringify(whole.value), `${what}: key order`);
}

function raw(text: string): JsonObjectBytes {
  const bytes = Buffer.from(text);
  const walk = walkJson(bytes, 200);
  const value = parseJsonText(bytes, walk) as Record<string, unknown>;
  const members = walk.layout?.members ?? [];
  return { bytes, value, members, duplicateKeys: new Set(members.map((m) => m.key)).size !== members.length };
}

const filler = (n: number): string => 'x'.repeat(n);
const bigArray = (items: number, size: number): string => JSON.stringify(Array.from({ length: items }, (_, i) => ({ i, text: filler(size) })));

describe('walkJson', () => {
  it('finds the top-level members of an object, by key and where their values are', () => {
    const text = ' { "model" : "m" ,"messages":[1, {"a":[2]}],\n"n":-1.5e3 } ';
    const { tooDeep, layout } = walkJson(Buffer.from(text), 200);
    assert.equal(tooDeep, false);
    assert.deepEqual(layout?.members.map((m) => [m.key, text.slice(m.start, m.start + m.key.length + 2), text.slice(m.valueStart, m.valueEnd)]), [
      ['model', '"model"', '"m"'],
      ['messages', '"messages"', '[1, {"a":[2]}]'],
      ['n', '"n"', '-1.5e3'],
    ]);
  });

  it('decodes keys written with escapes as JSON.parse reads them', () => {
    const { layout } = walkJson(Buffer.from('{"mod\\u0065l":"m","caf\u00e9":1}'), 200);
    assert.deepEqual(layout?.members.map((m) => m.key), ['model', 'caf\u00e9']);
  });

  it('counts nesting outside strings only, and stops at the limit', () => {
    assert.equal(walkJson(Buffer.from('{"a":"[[[[[[","b":[[1]]}'), 3).tooDeep, false);
    assert.equal(walkJson(Buffer.from('{"a":[[[1]]]}'), 3).tooDeep, true);
    assert.equal(walkJson(Buffer.from('{"a\\\\":[[[1]]]}'), 3).tooDeep, true, 'an escaped backslash does not escape the quote after it');
  });

  it('gives no layout for what is not one well-formed object', () => {
    for (const text of ['[1,2]', '{"a":1} {"b":2}', '{"a":1} x', 'x {"a":1}', '{"a" 1}', '{"a":1,}', '{1:2}', '{"a":1]', '{"unterminated', '"text"']) {
      assert.equal(walkJson(Buffer.from(text), 200).layout, undefined, text);
    }
  });
});

describe('parseJsonText', () => {
  it('parses a 200 KB agent turn in pieces to exactly what JSON.parse gives', () => {
    const text = agentMessagesBody('m', true);
    assert.ok(Buffer.byteLength(text) > 4 * PIECE_BYTES);
    assertSameAsJsonParse(text, 'agent turn');
    assert.ok(longestParsed <= PIECE_BYTES + 2, `the longest text parsed at once was ${longestParsed} characters`);
  });

  it('keeps JSON.parse\'s rules for keys: a later duplicate replaces the value in place, __proto__ stays data', () => {
    const text = `{"a":1,"__proto__":{"polluted":true},"big":${bigArray(400, 300)},"a":2,"z":[${'1,'.repeat(30_000)}1],"a":3}`;
    assertSameAsJsonParse(text, 'duplicates');
    const value = piecewiseParse(text).value as Record<string, unknown>;
    assert.deepEqual(Object.keys(value), ['a', '__proto__', 'big', 'z']);
    assert.equal(Object.getPrototypeOf(value), Object.prototype);
    assert.deepEqual(value['__proto__'], { polluted: true });
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  it('parses long arrays by runs of items, long strings and objects whole, small members together', () => {
    const cases = [
      `{"items":${bigArray(2_000, 40)}}`,
      `{"one":${bigArray(1, PIECE_BYTES * 2)},"two":${bigArray(3, PIECE_BYTES)}}`,
      `{"text":"${filler(PIECE_BYTES * 3)}","n":1}`,
      `{"object":${JSON.stringify(Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`k${i}`, filler(30)])))}}`,
      `{${Array.from({ length: 3000 }, (_, i) => `"k${i}":"${filler(30)}"`).join(',')}}`,
      ` \n{ "a" : [ ${Array.from({ length: 5000 }, (_, i) => ` { "i" : ${i} , "s" : "\\u00e9\\n\u2192" } `).join(' ,\n')} ] , "b" : null }\n `,
      `{"empty":[],"nested":[[${'[1],'.repeat(20_000)}[2]]],"unicode":"${'\u{1F600}\u2192'.repeat(20_000)}"}`,
    ];
    for (const [i, text] of cases.entries()) {
      assert.ok(Buffer.byteLength(text) > PIECE_BYTES, `case ${i} is long enough to be split`);
      assertSameAsJsonParse(text, `case ${i}`);
      assert.ok(longestParsed < text.length, `case ${i} was parsed in pieces`);
    }
  });

  it('refuses what JSON.parse refuses, in JSON.parse\'s words', () => {
    const items = bigArray(1_000, 60);
    const cases = [
      `{"items":${items.slice(0, -1)},]}`,
      `{"items":${items},}`,
      `{"items":${items} "b":1}`,
      `{"items":${items}}x`,
      `{"items":${items.replace('"text"', '"te\u0001xt"')}}`,
      `{"items":${items.replace('"text"', '"te\\qxt"')}}`,
      `{"items":${items.replace('},{', '],{')}}`,
      `{"items":${items.replace('"i":1,', '"i":01,')}}`,
      `{"items":${items}, "a":}`,
      `\uFEFF{"items":${items}}`,
    ];
    for (const [i, text] of cases.entries()) {
      const whole = wholeParse(text);
      assert.ok(whole.error !== undefined, `case ${i} is invalid`);
      assert.equal(piecewiseParse(text).error, whole.error, `case ${i}`);
    }
  });
});

describe('withMembers', () => {
  const text = '{ "model" : "claude",\n  "messages": [{"role":"user","content":"caf\u00e9 \\u2192"}], "stream":true }';

  it('splices a new value into the client\'s bytes and leaves every other byte as it was', () => {
    const parts = withMembers(raw(text), new Map([['model', '"upstream-id"']]));
    assert.equal(Buffer.concat(parts).toString(), text.replace('"claude"', '"upstream-id"'));
    assert.equal(parts.length, 3, 'before the value, the value, after it');
  });

  it('leaves members out with their commas, first, middle or last, and adds missing ones at the end', () => {
    const cases: Array<[Array<[string, string | undefined]>, Record<string, unknown>]> = [
      [[['model', undefined]], { messages: [{ role: 'user', content: 'caf\u00e9 \u2192' }], stream: true }],
      [[['messages', undefined]], { model: 'claude', stream: true }],
      [[['stream', undefined]], { model: 'claude', messages: [{ role: 'user', content: 'caf\u00e9 \u2192' }] }],
      [[['messages', undefined], ['stream', undefined]], { model: 'claude' }],
      [[['model', undefined], ['messages', undefined], ['stream', undefined]], {}],
      [[['stream', undefined], ['stream_options', '{"include_usage":true}']], { model: 'claude', messages: [{ role: 'user', content: 'caf\u00e9 \u2192' }], stream_options: { include_usage: true } }],
      [[['model', '"x"'], ['absent', undefined]], { model: 'x', messages: [{ role: 'user', content: 'caf\u00e9 \u2192' }], stream: true }],
    ];
    for (const [edits, expected] of cases) {
      const out = Buffer.concat(withMembers(raw(text), new Map(edits))).toString();
      assert.deepStrictEqual(JSON.parse(out), expected, out);
    }
    assert.equal(Buffer.concat(withMembers(raw('{ }'), new Map([['model', '"m"']]))).toString(), '{ "model":"m"}');
  });
});

describe('serializeJson', () => {
  it('gives the bytes of JSON.stringify, in parts, whatever the values', () => {
    const values: Array<Record<string, unknown>> = [
      {},
      { a: [] },
      JSON.parse(agentMessagesBody('m', false)) as Record<string, unknown>,
      {
        model: 'gpt', skipped: undefined, fn: () => 1, n: -0, big: 1e21, nested: { u: undefined, deep: [[1, [2]]] },
        messages: [1, undefined, () => 2, Symbol('s'), null, 'caf\u00e9 \u{1F600} \ud800 "quoted" \\ \n', { role: 'user' }],
        long: 'x\u2192'.repeat(100_000),
        many: Array.from({ length: 5_000 }, (_, i) => ({ i, s: '\u00e9'.repeat(i % 50) })),
        __proto__: null,
      },
    ];
    for (const value of values) {
      const parts = serializeJson(value);
      assert.ok(parts.every((part) => Buffer.isBuffer(part)));
      assert.equal(Buffer.concat(parts).toString(), JSON.stringify(value));
    }
  });
});
