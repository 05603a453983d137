import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseJsonLazily, parseJsonText, serializeJson, walkJson } from '../../src/common/json-bytes.ts';
import type { LazyMembers } from '../../src/common/json-bytes.ts';
import {
  LAZY_TEXT_BYTES,
  NotLazyError,
  isTextReference,
  realText,
  realValue,
  spliceTexts,
  splicedText,
  stringUnits,
  textBytes,
  textReference,
  textUnits,
  wordsOf,
  writeSpliced,
} from '../../src/common/json-lazy.ts';
import type { LazyTexts } from '../../src/common/json-lazy.ts';
import { LAZY_REQUEST_MEMBERS } from '../../src/formats/text-members.ts';
import { agentMessagesBody } from '../../bench/agent-body.ts';

const MEMBERS: LazyMembers = { text: new Set(['text', 'content']), opaque: new Set(['input']), minBytes: 8, minBodyBytes: 0 };

function lazily(json: string, members: LazyMembers = MEMBERS): { value: unknown; texts: LazyTexts | undefined } {
  const bytes = Buffer.from(json);
  return parseJsonLazily(bytes, walkJson(bytes, 200, members));
}

/** Text of every kind a JSON string may hold: ASCII, two-, three- and four-byte UTF-8, and escapes. */
const SAMPLES = [
  'plain ascii text that is long enough',
  'caf\u00e9 \u2192 \u6f22\u5b57 and \u{1f600} emoji \u{1f680}',
  'line\nbreak\ttab "quoted" back\\slash /slash \u0001 control \u2028 separator',
  '\ud800 lone high and \udc00 lone low surrogates',
  '\u2192'.repeat(40),
  '\u{1f600}'.repeat(30),
];

describe('a body read lazily', () => {
  it('gives, with its references resolved, what JSON.parse gives, and leaves only long text members as bytes', () => {
    const body = {
      model: 'm',
      text: 'short',
      content: [{ type: 'text', text: SAMPLES[1] }, { type: 'text', text: 'tiny' }],
      messages: SAMPLES.map((text) => ({ role: 'user', content: text })),
      input: { text: 'an opaque object keeps its text parsed', nested: { content: 'also parsed, however long' } },
      list: ['an item of an array is no member', SAMPLES[0]],
    };
    const json = JSON.stringify(body);
    const { value, texts } = lazily(json);
    assert.ok(texts !== undefined);
    assert.deepEqual(realValue(value, texts), JSON.parse(json));
    const read = value as typeof body;
    assert.equal(read.text, 'short');
    assert.ok(isTextReference(read.content[0]?.text as string));
    assert.equal(read.content[1]?.text, 'tiny');
    assert.equal(read.input.text, body.input.text);
    assert.equal(read.input.nested.content, body.input.nested.content);
    assert.deepEqual(read.list, body.list);
    for (const [i, message] of read.messages.entries()) {
      assert.ok(isTextReference(message.content));
      assert.equal(textUnits(message.content, texts), (SAMPLES[i] as string).length, `the length of sample ${i}`);
      assert.equal(realText(message.content, texts), SAMPLES[i]);
    }
  });

  it('is read whole when it holds U+0000, or a long text JSON.parse refuses (the whole parse then names it)', () => {
    assert.equal(lazily(JSON.stringify({ content: 'a NUL \u0000 inside a long text' })).texts, undefined);
    assert.equal(lazily(JSON.stringify({ model: '\u0000', content: 'the NUL is elsewhere in the body' })).texts, undefined);
    assert.throws(() => lazily('{"content": "a long text with a bad \\x escape"}'), SyntaxError);
    assert.throws(() => lazily('{"content": "a long text with a raw \t tab"}'), SyntaxError);
    assert.throws(() => lazily('{"content": "a long text with a short \\u12 escape"}'), SyntaxError);
  });

  it('is read whole where nothing is long enough, and pretty-printed JSON is read lazily as compact', () => {
    assert.equal(lazily(JSON.stringify({ content: 'short' })).texts, undefined);
    const pretty = JSON.stringify({ messages: [{ role: 'user', content: SAMPLES[0] }], content: SAMPLES[2] }, null, 2);
    const { value, texts } = lazily(pretty);
    assert.ok(texts !== undefined);
    assert.deepEqual(realValue(value, texts), JSON.parse(pretty));
  });

  it('takes a key written with escapes for what it is not: its value is parsed', () => {
    const json = '{"te\\u0078t": "a long value under an escaped key", "content": "a long value under a plain key"}';
    const { value, texts } = lazily(json);
    const read = value as Record<string, string>;
    assert.equal(read['text'], 'a long value under an escaped key');
    assert.ok(isTextReference(read['content'] as string));
    assert.deepEqual(realValue(value, texts), JSON.parse(json));
  });

  it('reads the bench agent turn at every size as JSON.parse does', () => {
    for (const size of [1024, 8 * 1024, 32 * 1024, 100 * 1024, 200 * 1024]) {
      const json = agentMessagesBody('m', true, size);
      const { value, texts } = lazily(json, LAZY_REQUEST_MEMBERS);
      assert.ok(texts !== undefined, `${size}: some texts left as bytes`);
      assert.deepEqual(realValue(value, texts), JSON.parse(json), `${size} bytes`);
    }
  });
});

describe('stringUnits', () => {
  it('is the decoded length of every sample, at every alignment of its bytes in the buffer', () => {
    for (const sample of SAMPLES) {
      const json = JSON.stringify(sample);
      for (let pad = 0; pad < 8; pad++) {
        const bytes = Buffer.from(`${' '.repeat(pad)}${json}`);
        // A view that does not start at its buffer's start: the words are the whole buffer's.
        const view = bytes.subarray(1);
        assert.equal(stringUnits(view, wordsOf(view), pad, pad + Buffer.byteLength(json) - 2), sample.length, `${JSON.stringify(sample).slice(0, 20)} at ${pad}`);
      }
    }
  });

  it('is -1 for what JSON.parse refuses in a string: a raw control character, an unknown escape, a short \\u', () => {
    for (const inner of ['a\tb', 'a\\xb', 'a\\u12g4', 'a\\u12', 'a\\']) {
      const bytes = Buffer.from(inner);
      assert.equal(stringUnits(bytes, wordsOf(bytes), 0, bytes.length), -1, inner);
    }
  });
});

describe('the texts of a body read lazily', () => {
  const json = JSON.stringify({ content: 'plain text without escapes', text: 'text with\nan escape in it' });
  const { value, texts } = lazily(json);
  const read = value as { content: string; text: string };

  it('are hashed from their bytes when they hold no escape, and decoded otherwise', () => {
    assert.equal(textBytes(read.content, texts)?.toString(), 'plain text without escapes');
    assert.equal(textBytes(read.text, texts), undefined);
    assert.equal(textBytes('not a reference', texts), undefined);
  });

  it('are written as their bytes wherever a reference stands in serialised text, joined to other text too', () => {
    const joined = { content: `${read.content}\n\n${read.text}`, other: 'kept' };
    assert.equal(Buffer.concat(serializeJson(joined, texts)).toString(), JSON.stringify(realValue(joined, texts)));
  });

  it('refuse to be written from text serialised twice (a reference inside a JSON string inside JSON)', () => {
    const twice = { arguments: JSON.stringify({ input: read.content }) };
    assert.throws(() => serializeJson(twice, texts), NotLazyError);
  });

  it('make the writer refuse literal text that looks like a written reference, rather than guess (the caller then decodes)', () => {
    const sink = { write: () => {}, writeBytes: () => {} };
    assert.throws(() => spliceTexts(JSON.stringify({ a: '\\u00000\\u0000' }), texts, sink), NotLazyError);
    assert.throws(() => spliceTexts(JSON.stringify({ a: textReference(7) }), texts, sink), NotLazyError);
    assert.equal(realText(textReference(0), texts), 'plain text without escapes');
  });

  it('are written alike from JSON text cut once at its references (a kept item written again) as from the text itself', () => {
    const collect = (write: (sink: { write(text: string): void; writeBytes(bytes: Buffer, start: number, end: number): void }) => void): string => {
      const parts: Buffer[] = [];
      write({ write: (text) => parts.push(Buffer.from(text)), writeBytes: (bytes, start, end) => parts.push(bytes.subarray(start, end)) });
      return Buffer.concat(parts).toString();
    };
    const values = [
      { content: read.content },
      { content: `é ${read.content}\n${read.text} ✓`, name: 'tool ☃', more: [read.text, read.content] },
      { content: read.content, text: read.text },
      { plain: 'no reference at all, ünïcode' },
      { edge: `${read.content}${read.text}` },
    ];
    const table = texts as LazyTexts;
    for (const value of values) {
      const text = JSON.stringify(value);
      const spliced = splicedText(text);
      const expected = JSON.stringify(realValue(value, texts));
      assert.equal(collect((sink) => spliceTexts(text, texts, sink)), expected);
      assert.equal(collect((sink) => writeSpliced(spliced, table, sink)), expected, text);
      assert.equal(collect((sink) => writeSpliced(spliced, table, sink)), expected, 'written again');
    }
  });

  it('cut once, refuse what the text refuses: a delimiter escaped twice, a reference with no end, one past the table', () => {
    assert.throws(() => splicedText(JSON.stringify({ a: '\\u00000\\u0000' })), NotLazyError);
    assert.throws(() => splicedText(JSON.stringify({ a: JSON.stringify({ b: read.content }) })), NotLazyError);
    assert.throws(() => splicedText('{"a":"\\u00001x"}'), NotLazyError);
    const past = splicedText(JSON.stringify({ a: textReference(7) }));
    assert.throws(() => writeSpliced(past, texts as LazyTexts, { write: () => {}, writeBytes: () => {} }), NotLazyError);
  });

  it('are left as bytes only from the shortest length on, so a reference is never empty', () => {
    assert.ok(LAZY_REQUEST_MEMBERS.minBytes >= LAZY_TEXT_BYTES && LAZY_TEXT_BYTES > 0);
    const whole = Buffer.from(json);
    assert.deepEqual(parseJsonText(whole, walkJson(whole, 200)), JSON.parse(json));
  });
});

describe('a lazy walk with a mark', () => {
  it('notes whether some string of the body begins with the mark, as a search of the bytes would find it', () => {
    const members: LazyMembers = { ...MEMBERS, mark: Buffer.from('llmux.v') };
    const walk = (value: unknown): boolean | undefined => walkJson(Buffer.from(JSON.stringify(value)), 200, members).marked;
    assert.equal(walk({ messages: [{ content: [{ type: 'thinking', signature: 'llmux.v2.abc' }] }] }), true);
    assert.equal(walk({ 'llmux.v9': 1 }), true);
    assert.equal(walk({ messages: [{ content: 'a text that mentions llmux.v2 in passing' }] }), false);
    assert.equal(walk({ content: 'llmux.' }), false);
    assert.equal(walkJson(Buffer.from('{"a":"llmux.v1.x"}'), 200, MEMBERS).marked, undefined);
  });
});
