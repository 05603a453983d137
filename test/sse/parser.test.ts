import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { SseEvent } from '../../src/sse/parser.ts';
import { createSseParser, type SseParserError } from '../../src/sse/parser.ts';
import { everySplit, randomPieces, splitAt } from '../helpers/split.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const fixtureNames = readdirSync(FIXTURES).filter((name) => name.endsWith('.sse')).sort();

/** Fixtures up to this size are checked at every split offset of the whole file. */
const WHOLE_FILE_SPLIT_BYTES = 10 * 1024;

let collected: SseEvent[] = [];
let reported: SseParserError[] = [];
// One parser reused across the hundreds of thousands of splits below; end() leaves it fresh.
const sharedParser = createSseParser({ onEvent: (event) => collected.push(event), onError: (error) => reported.push(error) });

function parse(pieces: Uint8Array[], options: { maxEventBytes?: number } = {}): { events: SseEvent[]; errors: SseParserError[] } {
  collected = [];
  reported = [];
  const parser =
    options.maxEventBytes === undefined
      ? sharedParser
      : createSseParser({ onEvent: (event) => collected.push(event), onError: (error) => reported.push(error), ...options });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  return { events: collected, errors: reported };
}

function events(text: string | Uint8Array): SseEvent[] {
  return parse([typeof text === 'string' ? Buffer.from(text) : text]).events;
}

/**
 * An independent, string-based reading of a whole LF-only stream, to check the byte parser
 * against: events are the text between blank lines.
 */
function referenceEvents(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of text.split('\n\n')) {
    let event: string | undefined;
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (name === 'data') data.push(value);
      else if (name === 'event') event = value;
      else if (name === 'id') id = value;
    }
    if (data.length > 0) out.push(id === undefined ? { event, data: data.join('\n') } : { event, data: data.join('\n'), id });
  }
  return out;
}

/** deepEqual is slow across hundreds of thousands of splits: compare serialized, explain on mismatch. */
function assertEvents(actual: SseEvent[], expected: SseEvent[], expectedJson: string, message: string): void {
  if (JSON.stringify(actual) !== expectedJson) assert.deepEqual(actual, expected, message);
}

/** Byte offsets where each event of an LF-only stream begins (after the previous blank line). */
function eventStarts(bytes: Buffer): number[] {
  const starts = [0];
  let from = 0;
  for (;;) {
    const at = bytes.indexOf('\n\n', from);
    if (at === -1) return starts;
    starts.push(at + 2);
    from = at + 2;
  }
}

describe('createSseParser on the recorded upstream streams', () => {
  for (const name of fixtureNames) {
    const bytes = readFileSync(new URL(name, FIXTURES));
    const expected = referenceEvents(bytes.toString('utf8'));

    it(`reads ${name} as the events between its blank lines`, () => {
      assert.ok(expected.length > 0);
      const { events: actual, errors } = parse([bytes]);
      assert.deepEqual(actual, expected);
      assert.deepEqual(errors, []);
    });

    if (bytes.length <= WHOLE_FILE_SPLIT_BYTES) {
      it(`gives the same events for ${name} split at every byte offset`, () => {
        const expectedJson = JSON.stringify(expected);
        for (const { offset, pieces } of everySplit(bytes)) {
          assertEvents(parse(pieces).events, expected, expectedJson, `split at byte ${offset}`);
        }
      });
    } else {
      // At a blank line the parser is back in its initial state (these recordings are LF-only),
      // so cutting the file at offset i is checked exactly on the event holding i and the one
      // after it. That covers every offset in linear time.
      it(`gives the same events for ${name} split at every byte offset (checked on the events around each offset)`, () => {
        const starts = [...eventStarts(bytes), bytes.length];
        for (let e = 0; e + 1 < starts.length; e += 1) {
          const windowStart = starts[e] as number;
          const windowEnd = starts[Math.min(starts.length - 1, e + 2)] as number;
          const window = bytes.subarray(windowStart, windowEnd);
          const windowExpected = referenceEvents(window.toString('utf8'));
          const windowJson = JSON.stringify(windowExpected);
          for (let offset = starts[e] as number; offset < (starts[e + 1] as number); offset += 1) {
            assertEvents(parse(splitAt(window, offset - windowStart)).events, windowExpected, windowJson, `split at byte ${offset}`);
          }
        }
      });
    }

    it(`gives the same events for ${name} fed in seeded random small pieces`, () => {
      for (const seed of [1, 2, 3]) assert.deepEqual(parse(randomPieces(bytes, seed)).events, expected, `seed ${seed}`);
      assert.deepEqual(parse(randomPieces(bytes, 4, 1)).events, expected, 'one byte at a time');
    });
  }
});

describe('createSseParser line handling', () => {
  const lf = 'event: a\ndata: one\n\ndata: two\ndata: three\n\n';
  const expected: SseEvent[] = [
    { event: 'a', data: 'one' },
    { event: undefined, data: 'two\nthree' },
  ];

  it('reads LF, CRLF and CR line ends alike, at every split offset', () => {
    for (const text of [lf, lf.replaceAll('\n', '\r\n'), lf.replaceAll('\n', '\r')]) {
      const bytes = Buffer.from(text);
      for (const { offset, pieces } of everySplit(bytes)) {
        assert.deepEqual(parse(pieces).events, expected, `${JSON.stringify(text)} split at ${offset}`);
      }
    }
  });

  it('treats a CR at the end of one chunk and a LF at the start of the next as one line end', () => {
    // Were the LF read as a second line end, the blank line would dispatch "one" before "two" arrives.
    assert.deepEqual(parse([Buffer.from('data: one\r'), Buffer.from('\ndata: two\r\n\r\n')]).events, [{ event: undefined, data: 'one\ntwo' }]);
  });

  it('ignores comment lines, including a stream of only keep-alive comments', () => {
    assert.deepEqual(events(': OPENROUTER PROCESSING\n\ndata: x\n: inside an event\n\n:\n\n'), [{ event: undefined, data: 'x' }]);
    assert.deepEqual(events(': ping\n\n: ping\n\n'), []);
  });

  it('joins multiple data lines with a newline and removes only one leading space', () => {
    assert.deepEqual(events('data:  two spaces\ndata:none\ndata\n\n'), [{ event: undefined, data: ' two spaces\nnone\n' }]);
  });

  it('dispatches an event whose only data line is empty, and none for an event without data', () => {
    assert.deepEqual(events('data:\n\nevent: lonely\n\n'), [{ event: undefined, data: '' }]);
  });

  it('reports the id of an event and forgets it for the next event', () => {
    assert.deepEqual(events('id: 7\ndata: a\n\ndata: b\n\n'), [
      { event: undefined, data: 'a', id: '7' },
      { event: undefined, data: 'b' },
    ]);
  });

  it('ignores retry and unknown fields', () => {
    assert.deepEqual(events('retry: 1000\nfoo: bar\ndata: a\n\n'), [{ event: undefined, data: 'a' }]);
  });

  it('takes a field only when its whole name matches, case included', () => {
    const text = 'Data: 1\ndat: 2\ndataa: 3\nevents: x\nEvent: y\nid2: 9\ni: 8\ndata: kept\n\n';
    assert.deepEqual(events(text), [{ event: undefined, data: 'kept' }]);
  });

  it('reads field names with no colon, or a colon right after them, as fields with an empty value', () => {
    assert.deepEqual(events('event\ndata\nid\n\nevent:\ndata:\nid:\n\n'), [
      { event: '', data: '', id: '' },
      { event: '', data: '', id: '' },
    ]);
  });

  it('looks for the name\'s colon only within its own line', () => {
    // The first line has no colon; the next line's colon must not end its name.
    assert.deepEqual(events('data\nevent: e: f\n\n'), [{ event: 'e: f', data: '' }]);
  });

  it('skips a UTF-8 byte order mark at the start of the stream only', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const bytes = Buffer.concat([bom, Buffer.from('data: a\n\n')]);
    for (const { pieces } of everySplit(bytes)) assert.deepEqual(parse(pieces).events, [{ event: undefined, data: 'a' }]);
  });

  it('dispatches the last event at end() when the stream lacks the closing blank line', () => {
    assert.deepEqual(events('event: message_stop\ndata: {"type":"message_stop"}'), [{ event: 'message_stop', data: '{"type":"message_stop"}' }]);
    assert.deepEqual(events('data: a\n'), [{ event: undefined, data: 'a' }]);
  });

  it('dispatches nothing at end() when the last event was already complete', () => {
    const seen: SseEvent[] = [];
    const parser = createSseParser({ onEvent: (event) => seen.push(event) });
    parser.feed(Buffer.from('data: a\n\n'));
    assert.equal(seen.length, 1);
    parser.end();
    assert.equal(seen.length, 1);
  });

  it('forgets a partial event on reset()', () => {
    const seen: SseEvent[] = [];
    const parser = createSseParser({ onEvent: (event) => seen.push(event) });
    parser.feed(Buffer.from('event: old\ndata: half'));
    parser.reset();
    parser.feed(Buffer.from('data: new\n\n'));
    assert.deepEqual(seen, [{ event: undefined, data: 'new' }]);
  });

  it('accepts a plain Uint8Array as well as a Buffer', () => {
    assert.deepEqual(parse([new TextEncoder().encode('data: a\n\n')]).events, [{ event: undefined, data: 'a' }]);
  });
});

describe('createSseParser UTF-8 handling', () => {
  it('decodes multibyte characters split at every byte offset', () => {
    const text = 'data: h\u00e9llo \u20ac \u{1d11e} \u4e2d\u6587\n\n';
    const bytes = Buffer.from(text);
    for (const { offset, pieces } of everySplit(bytes)) {
      const { events: actual, errors } = parse(pieces);
      assert.deepEqual(actual, [{ event: undefined, data: 'h\u00e9llo \u20ac \u{1d11e} \u4e2d\u6587' }], `split at ${offset}`);
      assert.deepEqual(errors, []);
    }
  });

  it('decodes characters cut into one-byte pieces', () => {
    const bytes = Buffer.from('data: \u{1f600}\u{1f600}\n\n');
    assert.deepEqual(parse(randomPieces(bytes, 9, 1)).events, [{ event: undefined, data: '\u{1f600}\u{1f600}' }]);
  });

  it('reports invalid UTF-8 and decodes it with U+FFFD', () => {
    const bytes = Buffer.concat([Buffer.from('data: a'), Buffer.from([0xff, 0xfe]), Buffer.from('b\n\n')]);
    const { events: actual, errors } = parse([bytes]);
    assert.deepEqual(actual, [{ event: undefined, data: 'a\uFFFD\uFFFDb' }]);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.code, 'invalid_utf8');
  });

  it('reports no error for a real U+FFFD character in the text', () => {
    const { errors } = parse([Buffer.from('data: \uFFFD\n\n')]);
    assert.deepEqual(errors, []);
  });
});

describe('createSseParser size guard', () => {
  const big = `data: ${'x'.repeat(100)}\n\n`;

  it('reports an event larger than maxEventBytes and still reads the events after it', () => {
    const bytes = Buffer.from(`data: small\n\n${big}data: after\n\n`);
    for (const { offset, pieces } of everySplit(bytes)) {
      const { events: actual, errors } = parse(pieces, { maxEventBytes: 50 });
      assert.deepEqual(actual, [{ event: undefined, data: 'small' }, { event: undefined, data: 'after' }], `split at ${offset}`);
      assert.equal(errors.length, 1, `split at ${offset}`);
      assert.equal(errors[0]?.code, 'buffer_overflow');
    }
  });

  it('counts every line of an event, not only the longest', () => {
    const manyLines = `${'data: 0123456789\n'.repeat(10)}\ndata: after\n\n`;
    const { events: actual, errors } = parse([Buffer.from(manyLines)], { maxEventBytes: 60 });
    assert.deepEqual(actual, [{ event: undefined, data: 'after' }]);
    assert.equal(errors.length, 1);
  });

  it('drops an overlong last event at end() instead of dispatching part of it', () => {
    const { events: actual, errors } = parse([Buffer.from(`data: ${'x'.repeat(100)}`)], { maxEventBytes: 50 });
    assert.deepEqual(actual, []);
    assert.equal(errors.length, 1);
  });

  it('does not hold a partial line past the limit while waiting for its end', () => {
    const { errors } = parse(randomPieces(Buffer.from(`data: ${'y'.repeat(1000)}`), 5), { maxEventBytes: 100 });
    assert.equal(errors.length, 1);
  });
});
