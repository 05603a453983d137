import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBedrockStreamReader } from '../../../src/platforms/aws/bedrock-stream.ts';
import { encodeEventStreamMessage } from '../../../src/platforms/aws/event-stream.ts';
import type { BedrockError } from '../../../src/platforms/aws/bedrock-errors.ts';
import { everySplit } from '../../helpers/split.ts';

const FIXTURES = fileURLToPath(new URL('../../fixtures/bedrock/', import.meta.url));
const fixture = (name: string): Buffer => readFileSync(join(FIXTURES, name));

function read(pieces: Uint8Array[], operation: 'invoke' | 'converse' = 'invoke'): { sse: string; errors: BedrockError[] } {
  let sse = '';
  const errors: BedrockError[] = [];
  const reader = createBedrockStreamReader({ operation, onSse: (text) => { sse += text; }, onError: (e) => errors.push(e) });
  for (const piece of pieces) reader.feed(piece);
  reader.end();
  return { sse, errors };
}

for (const name of ['invoke-stream-thinking', 'invoke-stream-tool-use']) {
  test(`a recorded InvokeModelWithResponseStream (${name}) becomes the messages events it carries, cut at every byte`, () => {
    const bytes = fixture(`${name}.bin`);
    const expected = fixture(`${name}.sse`).toString('utf8');
    for (const { offset, pieces } of everySplit(bytes)) {
      const { sse, errors } = read(pieces);
      assert.deepEqual(errors, [], `split at ${offset}`);
      assert.equal(sse, expected, `split at ${offset}`);
    }
  });
}

for (const name of ['invoke-stream-model-stream-error', 'invoke-stream-throttled']) {
  test(`an exception frame (${name}) ends the stream as an error with its type and Bedrock's status, after the events before it`, () => {
    const bytes = fixture(`${name}.bin`);
    const expectedSse = fixture(`${name}.sse`).toString('utf8');
    const expectedError = JSON.parse(fixture(`${name}.error.json`).toString('utf8')) as BedrockError;
    for (const { offset, pieces } of everySplit(bytes)) {
      const { sse, errors } = read(pieces);
      assert.equal(sse, expectedSse, `split at ${offset}`);
      assert.deepEqual(errors, [expectedError], `split at ${offset}`);
    }
  });
}

const headers = (messageType: string, extra: Record<string, string>): Record<string, { type: 'string'; value: string }> =>
  Object.fromEntries(Object.entries({ ':message-type': messageType, ...extra }).map(([k, v]) => [k, { type: 'string' as const, value: v }]));
const chunk = (payload: string): Buffer => encodeEventStreamMessage({ headers: headers('event', { ':event-type': 'chunk' }), payload });
const event = (json: unknown): Buffer => chunk(JSON.stringify({ bytes: Buffer.from(JSON.stringify(json)).toString('base64') }));

test('each Bedrock stream exception gets the status its API reference lists', () => {
  const cases: [string, number][] = [
    ['throttlingException', 429], ['serviceUnavailableException', 503], ['modelStreamErrorException', 424],
    ['internalServerException', 500], ['validationException', 400], ['modelTimeoutException', 408], ['somethingNewException', 500],
  ];
  for (const [type, status] of cases) {
    const frame = encodeEventStreamMessage({ headers: headers('exception', { ':exception-type': type }), payload: '{"message":"m"}' });
    const [error] = read([frame]).errors;
    assert.equal(error?.status, status, type);
    assert.equal(error?.type, `${type[0]?.toUpperCase()}${type.slice(1)}`);
    assert.equal(error?.message, 'm');
  }
});

test('an error frame (:error-code) is an error too', () => {
  const frame = encodeEventStreamMessage({ headers: headers('error', { ':error-code': 'InternalFailure', ':error-message': 'went wrong' }), payload: '' });
  assert.deepEqual(read([event({ type: 'ping' }), frame, event({ type: 'ping' })]), {
    sse: 'event: ping\ndata: {"type":"ping"}\n\n',
    errors: [{ type: 'InternalFailure', status: 500, message: 'went wrong', retryable: true }],
  });
});

test('an unreadable chunk is a 502 MalformedStream error, and nothing after it is passed on', () => {
  for (const bad of [chunk('not json'), chunk('{"p":"x"}'), chunk(JSON.stringify({ bytes: Buffer.from('{oops').toString('base64') })), event({ no: 'type' }), event({ type: 'bad\nname' })]) {
    const { sse, errors } = read([bad, event({ type: 'ping' })]);
    assert.equal(sse, '');
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.type, 'MalformedStream');
    assert.equal(errors[0]?.status, 502);
  }
});

test('broken framing is a 502 MalformedStream error naming the cause', () => {
  const bytes = event({ type: 'ping' });
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1;
  const { errors } = read([bytes]);
  assert.equal(errors[0]?.type, 'MalformedStream');
  assert.match(errors[0]?.message ?? '', /checksum/);
  assert.equal(read([event({ type: 'ping' }).subarray(0, 20)]).errors[0]?.type, 'MalformedStream');
});

test('a messages event written over several lines is passed on as one data line', () => {
  const pretty = JSON.stringify({ type: 'ping', nested: { a: 'x\ny' } }, null, 2);
  const { sse } = read([chunk(JSON.stringify({ bytes: Buffer.from(pretty).toString('base64') }))]);
  assert.equal(sse, 'event: ping\ndata: {"type":"ping","nested":{"a":"x\\ny"}}\n\n');
});

test('events other than chunk and frames without a type are skipped in an invoke stream', () => {
  const other = encodeEventStreamMessage({ headers: headers('event', { ':event-type': 'initial-response' }), payload: '{}' });
  const untyped = encodeEventStreamMessage({ headers: headers('event', {}), payload: '{}' });
  const unknownKind = encodeEventStreamMessage({ headers: headers('something', {}), payload: '{}' });
  assert.deepEqual(read([other, untyped, unknownKind, event({ type: 'ping' })]), { sse: 'event: ping\ndata: {"type":"ping"}\n\n', errors: [] });
});

test('a ConverseStream event becomes an SSE event named by its :event-type with its payload as data', () => {
  const delta = encodeEventStreamMessage({
    headers: headers('event', { ':event-type': 'contentBlockDelta', ':content-type': 'application/json' }),
    payload: '{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abc"}',
  });
  const bad = encodeEventStreamMessage({ headers: headers('event', { ':event-type': 'messageStop' }), payload: 'nope' });
  assert.deepEqual(read([delta], 'converse'), { sse: 'event: contentBlockDelta\ndata: {"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abc"}\n\n', errors: [] });
  assert.equal(read([bad], 'converse').errors[0]?.type, 'MalformedStream');
});
