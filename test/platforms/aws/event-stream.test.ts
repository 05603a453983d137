import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, createEventStreamDecoder, encodeEventStreamMessage } from '../../../src/platforms/aws/event-stream.ts';
import type { EventStreamError, EventStreamHeaderValue, EventStreamMessage } from '../../../src/platforms/aws/event-stream.ts';
import { everySplit, randomPieces } from '../../helpers/split.ts';

const FIXTURES = fileURLToPath(new URL('../../fixtures/bedrock/', import.meta.url));
const RECORDINGS = ['invoke-stream-thinking', 'invoke-stream-tool-use', 'invoke-stream-model-stream-error', 'invoke-stream-throttled', 'all-header-types'];

type JsonHeader = { type: string; value: unknown };
interface RecordedMessage { headers: Record<string, JsonHeader>; payload: string }

/** A recorded JSON-safe header as the decoder gives it. */
function headerOf(json: JsonHeader): EventStreamHeaderValue {
  switch (json.type) {
    case 'long': return { type: 'long', value: BigInt(json.value as string) };
    case 'timestamp': return { type: 'timestamp', value: Number(json.value) };
    case 'binary': return { type: 'binary', value: new Uint8Array(Buffer.from(json.value as string, 'base64')) };
    default: return json as EventStreamHeaderValue;
  }
}

function expectedMessages(name: string): { headers: Record<string, EventStreamHeaderValue>; payload: string }[] {
  const recorded = JSON.parse(readFileSync(join(FIXTURES, `${name}.messages.json`), 'utf8')) as RecordedMessage[];
  return recorded.map((m) => ({ headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, headerOf(v)])), payload: m.payload }));
}

function decodeAll(pieces: Uint8Array[], maxMessageBytes?: number): { messages: { headers: Record<string, EventStreamHeaderValue>; payload: string }[]; errors: EventStreamError[] } {
  const messages: { headers: Record<string, EventStreamHeaderValue>; payload: string }[] = [];
  const errors: EventStreamError[] = [];
  const decoder = createEventStreamDecoder({
    onMessage: (m: EventStreamMessage) => messages.push({ headers: m.headers, payload: m.payload.toString('utf8') }),
    onError: (e) => errors.push(e),
    ...(maxMessageBytes === undefined ? {} : { maxMessageBytes }),
  });
  for (const piece of pieces) decoder.feed(piece);
  decoder.end();
  return { messages, errors };
}

for (const name of RECORDINGS) {
  const bytes = readFileSync(join(FIXTURES, `${name}.bin`));

  test(`frames AWS's codec made (${name}) decode to what went into them, cut at every byte`, () => {
    const expected = expectedMessages(name);
    for (const { offset, pieces } of everySplit(bytes)) {
      const { messages, errors } = decodeAll(pieces);
      assert.deepEqual(errors, [], `split at ${offset}`);
      assert.deepEqual(messages, expected, `split at ${offset}`);
    }
  });

  test(`frames AWS's codec made (${name}) decode the same fed in small random pieces and byte by byte`, () => {
    const expected = expectedMessages(name);
    for (const seed of [1, 2, 3]) assert.deepEqual(decodeAll(randomPieces(bytes, seed, 7)).messages, expected);
    assert.deepEqual(decodeAll([...bytes].map((b) => Uint8Array.of(b))).messages, expected);
  });

  test(`our encoder writes the same bytes as AWS's codec (${name})`, () => {
    const ours = Buffer.concat(expectedMessages(name).map((m) => encodeEventStreamMessage(m)));
    assert.ok(ours.equals(bytes));
  });
}

test('CRC32 is the IEEE one zlib computes', () => {
  assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
  assert.equal(crc32(Buffer.alloc(0)), 0);
});

const frame = (): Buffer => encodeEventStreamMessage({ headers: { ':message-type': { type: 'string', value: 'event' } }, payload: '{"a":1}' });

test('a corrupted prelude checksum is refused, and nothing after it is read', () => {
  const bad = frame();
  bad[9] = (bad[9] as number) ^ 0xff;
  const { messages, errors } = decodeAll([bad, frame()]);
  assert.deepEqual(messages, []);
  assert.deepEqual(errors.map((e) => e.code), ['prelude_crc_mismatch']);
});

test('a corrupted payload byte fails the message checksum', () => {
  const good = frame();
  const bad = frame();
  bad[bad.length - 6] = (bad[bad.length - 6] as number) ^ 0x01;
  const { messages, errors } = decodeAll([good, bad]);
  assert.equal(messages.length, 1);
  assert.deepEqual(errors.map((e) => e.code), ['message_crc_mismatch']);
});

test('a corrupted message checksum is refused at every split point', () => {
  const bad = frame();
  bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0x80;
  for (const { pieces } of everySplit(bad)) assert.deepEqual(decodeAll(pieces).errors.map((e) => e.code), ['message_crc_mismatch']);
});

test('a message over the size limit is refused from its prelude, before its bytes are held', () => {
  const big = encodeEventStreamMessage({ headers: {}, payload: 'x'.repeat(1000) });
  const decoder = createEventStreamDecoder({ onMessage: () => assert.fail('no message'), onError: (e) => errors.push(e), maxMessageBytes: 512 });
  const errors: EventStreamError[] = [];
  decoder.feed(big.subarray(0, 12));
  assert.deepEqual(errors.map((e) => e.code), ['message_too_large']);
});

test('impossible lengths in a well-checksummed prelude are refused', () => {
  const prelude = Buffer.alloc(12);
  prelude.writeUInt32BE(20, 0);
  prelude.writeUInt32BE(10, 4);
  prelude.writeUInt32BE(crc32(prelude, 0, 8), 8);
  assert.deepEqual(decodeAll([prelude]).errors.map((e) => e.code), ['invalid_length']);
});

test('a header of an unknown type or running past its section is refused', () => {
  const withHeaders = (headerBytes: Buffer): Buffer => {
    const total = 12 + headerBytes.length + 4;
    const out = Buffer.alloc(total);
    out.writeUInt32BE(total, 0);
    out.writeUInt32BE(headerBytes.length, 4);
    out.writeUInt32BE(crc32(out, 0, 8), 8);
    headerBytes.copy(out, 12);
    out.writeUInt32BE(crc32(out, 0, total - 4), total - 4);
    return out;
  };
  assert.deepEqual(decodeAll([withHeaders(Buffer.from([1, 0x61, 42]))]).errors.map((e) => e.code), ['invalid_header']);
  assert.deepEqual(decodeAll([withHeaders(Buffer.from([1, 0x61, 7, 0, 9, 0x62]))]).errors.map((e) => e.code), ['invalid_header']);
});

test('a stream that ends inside a message is reported as truncated; one that ends between messages is not', () => {
  const bytes = Buffer.concat([frame(), frame()]);
  assert.deepEqual(decodeAll([bytes.subarray(0, bytes.length - 3)]).errors.map((e) => e.code), ['truncated']);
  assert.deepEqual(decodeAll([bytes.subarray(0, 5)]).errors.map((e) => e.code), ['truncated']);
  assert.deepEqual(decodeAll([bytes]).errors, []);
});
