import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRespParser, encodeCommand, RespError } from '../../src/state/resp-parser.ts';
import type { Reply, RespParserError } from '../../src/state/resp-parser.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';

/** Replies with errors as plain objects, so results compare (and print) as JSON. */
type Plain = string | number | null | { error: string; prefix: string } | Plain[];

function plain(reply: Reply): Plain {
  if (reply instanceof RespError) return { error: reply.message, prefix: reply.prefix };
  if (Array.isArray(reply)) return reply.map(plain);
  return reply;
}

function parse(pieces: Buffer[], maxReplyBytes?: number): { replies: Plain[]; errors: RespParserError[] } {
  const replies: Plain[] = [];
  const errors: RespParserError[] = [];
  const parser = createRespParser({
    onReply: (reply) => replies.push(plain(reply)),
    onError: (error) => errors.push(error),
    ...(maxReplyBytes === undefined ? {} : { maxReplyBytes }),
  });
  for (const piece of pieces) parser.feed(piece);
  return { replies, errors };
}

const tricky = 'line\r\nbreak €';
// Every reply type, with the edge cases of each: empty and null strings, a bulk string holding CRLF
// and a multi-byte character, null and empty arrays, nesting, an error inside an array.
const SEQUENCE = Buffer.from([
  '+OK\r\n',
  "-ERR unknown command 'FOO'\r\n",
  ':0\r\n',
  ':-42\r\n',
  ':9007199254740993\r\n',
  '$5\r\nhello\r\n',
  '$0\r\n\r\n',
  '$-1\r\n',
  `$${Buffer.byteLength(tricky)}\r\n${tricky}\r\n`,
  '*-1\r\n',
  '*0\r\n',
  '*3\r\n:1\r\n*2\r\n$3\r\nfoo\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n$-1\r\n',
  '+\r\n',
].join(''));

const EXPECTED: Plain[] = [
  'OK',
  { error: "ERR unknown command 'FOO'", prefix: 'ERR' },
  0,
  -42,
  // Beyond 2^53 the nearest double, as Number() reads it.
  9007199254740992,
  'hello',
  '',
  null,
  tricky,
  null,
  [],
  [1, ['foo', { error: 'WRONGTYPE Operation against a key holding the wrong kind of value', prefix: 'WRONGTYPE' }], null],
  '',
];
const EXPECTED_JSON = JSON.stringify(EXPECTED);

describe('RESP reply parser', () => {
  it('reads every reply type the same wherever one read ends and the next begins', () => {
    for (const { offset, pieces } of everySplit(SEQUENCE)) {
      const { replies, errors } = parse(pieces);
      assert.deepEqual(errors, [], `split at ${offset}`);
      assert.equal(JSON.stringify(replies), EXPECTED_JSON, `split at ${offset}`);
    }
  });

  it('reads every reply type the same when cut at every pair of offsets', () => {
    for (let first = 0; first <= SEQUENCE.length; first += 1) {
      for (let second = first; second <= SEQUENCE.length; second += 1) {
        const pieces = [SEQUENCE.subarray(0, first), SEQUENCE.subarray(first, second), SEQUENCE.subarray(second)];
        assert.equal(JSON.stringify(parse(pieces).replies), EXPECTED_JSON, `cuts at ${first} and ${second}`);
      }
    }
  });

  it('reads the same byte by byte and in random pieces', () => {
    const bytes = [...SEQUENCE].map((byte) => Buffer.from([byte]));
    assert.equal(JSON.stringify(parse(bytes).replies), EXPECTED_JSON);
    for (let seed = 1; seed <= 50; seed += 1) {
      assert.equal(JSON.stringify(parse(randomPieces(SEQUENCE, seed, 7)).replies), EXPECTED_JSON, `seed ${seed}`);
    }
  });

  it('assembles a bulk string of several MiB from many reads, byte for byte', () => {
    const value = Buffer.alloc(3 * 1024 * 1024 + 7, 'abc€');
    const text = value.toString('utf8');
    const bytes = Buffer.concat([Buffer.from(`*2\r\n$${value.length}\r\n`), value, Buffer.from('\r\n:7\r\n')]);
    const pieces: Buffer[] = [];
    for (let offset = 0; offset < bytes.length; offset += 65_536) pieces.push(bytes.subarray(offset, offset + 65_536));
    const { replies, errors } = parse(pieces);
    assert.deepEqual(errors, []);
    assert.equal(replies.length, 1);
    const [reply] = replies as [Plain[]];
    assert.equal(reply[0], text);
    assert.equal(reply[1], 7);
  });

  it('reads an array nested far deeper than the call stack could recurse', () => {
    const depth = 200_000;
    const bytes = Buffer.from(`${'*1\r\n'.repeat(depth)}:5\r\n`);
    const replies: Reply[] = [];
    const parser = createRespParser({ onReply: (reply) => replies.push(reply), onError: (error) => assert.fail(error.message) });
    parser.feed(bytes);
    let reply = replies[0];
    for (let level = 0; level < depth; level += 1) {
      assert.ok(Array.isArray(reply));
      reply = reply[0];
    }
    assert.equal(reply, 5);
  });

  it('refuses a bulk string announced above the size bound before its bytes arrive', () => {
    const { replies, errors } = parse([Buffer.from('$2000\r\n')], 1024);
    assert.deepEqual(replies, []);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.code, 'reply_too_large');
  });

  it('counts every element of an array against the size bound', () => {
    const element = `$100\r\n${'x'.repeat(100)}\r\n`;
    const { errors: within } = parse([Buffer.from(`*9\r\n${element.repeat(9)}`)], 1024);
    assert.deepEqual(within, []);
    const { replies, errors } = parse([Buffer.from(`*11\r\n${element.repeat(11)}`)], 1024);
    assert.deepEqual(replies, []);
    assert.equal(errors[0]?.code, 'reply_too_large');
  });

  it('applies the bound per reply, so many small replies never add up to an error', () => {
    const element = `+${'y'.repeat(100)}\r\n`;
    const { replies, errors } = parse([Buffer.from(element.repeat(100))], 1024);
    assert.deepEqual(errors, []);
    assert.equal(replies.length, 100);
  });

  it('refuses a line that never ends once it passes the bound', () => {
    const { errors } = parse([Buffer.from(`+${'z'.repeat(600)}`), Buffer.from('z'.repeat(600))], 1024);
    assert.equal(errors[0]?.code, 'reply_too_large');
  });

  for (const [what, bytes] of [
    ['an unknown type byte', '?what\r\n'],
    ['a RESP3 type the client never asked for', '%1\r\n+a\r\n+b\r\n'],
    ['a bulk length that is not a number', '$abc\r\n'],
    ['a negative bulk length other than -1', '$-2\r\n'],
    ['an array length that is not a number', '*x\r\n'],
    ['an integer that is not a number', ':12a\r\n'],
    ['an empty integer', ':\r\n'],
    ['a bulk string longer than announced', '$3\r\nabcd\r\n'],
    ['a line ended by LF alone', '+OK\n'],
    ['an empty line', '\r\n'],
  ] as const) {
    it(`reports ${what} as a protocol error and reads nothing after it`, () => {
      const { replies, errors } = parse([Buffer.from(bytes), Buffer.from('+after\r\n')]);
      assert.deepEqual(replies, []);
      assert.equal(errors.length, 1);
      assert.equal(errors[0]?.code, 'protocol_error');
    });
  }

  it('reports a bulk string without its CRLF when it arrives in pieces too', () => {
    const { errors } = parse([Buffer.from('$3\r\nab'), Buffer.from('cXY')]);
    assert.equal(errors[0]?.code, 'protocol_error');
  });

  it('reads again after reset, forgetting a reply left half-read', () => {
    const replies: Reply[] = [];
    const errors: RespParserError[] = [];
    const parser = createRespParser({ onReply: (reply) => replies.push(reply), onError: (error) => errors.push(error) });
    parser.feed(Buffer.from('*2\r\n+half'));
    parser.reset();
    parser.feed(Buffer.from('+fresh\r\n'));
    parser.feed(Buffer.from('?bad\r\n'));
    parser.reset();
    parser.feed(Buffer.from(':3\r\n'));
    assert.deepEqual(replies, ['fresh', 3]);
    assert.equal(errors.length, 1);
  });
});

describe('RESP command encoder', () => {
  it('encodes a command as an array of bulk strings that the parser reads back', () => {
    const args = ['SET', 'key:€', 'line\r\nbreak', 42, -1.5, ''];
    const encoded = encodeCommand(args);
    assert.equal(typeof encoded, 'string');
    assert.equal(encoded, '*6\r\n$3\r\nSET\r\n$7\r\nkey:€\r\n$11\r\nline\r\nbreak\r\n$2\r\n42\r\n$4\r\n-1.5\r\n$0\r\n\r\n');
    const { replies } = parse([Buffer.from(encoded)]);
    assert.deepEqual(replies, [['SET', 'key:€', 'line\r\nbreak', '42', '-1.5', '']]);
  });

  it('sends Buffer arguments byte for byte, between text ones', () => {
    const binary = Buffer.from([0x00, 0xff, 0x0d, 0x0a, 0x80]);
    const encoded = encodeCommand(['SET', binary, 'tail']);
    assert.ok(Buffer.isBuffer(encoded));
    assert.deepEqual(encoded, Buffer.concat([Buffer.from('*3\r\n$3\r\nSET\r\n$5\r\n'), binary, Buffer.from('\r\n$4\r\ntail\r\n')]));
  });

  it('refuses a number with no decimal form', () => {
    assert.throws(() => encodeCommand(['INCRBY', 'k', Number.NaN]), TypeError);
    assert.throws(() => encodeCommand(['INCRBY', 'k', Number.POSITIVE_INFINITY]), TypeError);
  });
});

describe('RespError', () => {
  it('takes its prefix from the first word of the server message', () => {
    assert.equal(new RespError('NOSCRIPT No matching script. Please use EVAL.').prefix, 'NOSCRIPT');
    assert.equal(new RespError('LOADING').prefix, 'LOADING');
    assert.equal(new RespError('NOSCRIPT x').name, 'RespError');
  });
});
