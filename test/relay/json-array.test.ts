import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonArrayFraming } from '../../src/relay/json-array.ts';
import { everySplit } from '../helpers/split.ts';

/** What a relay writing `pieces` (SSE text) sends through the framing, head and tail included. */
function framed(pieces: Array<Buffer | string>): string {
  const framing = jsonArrayFraming();
  let out = framing.head;
  const write = framing.wrap((bytes) => (out += bytes.toString()));
  for (const piece of pieces) write(piece);
  return out + framing.tail;
}

const EVENTS = 'data: {"candidates":[{"content":{"parts":[{"text":"H\u00e9"}]}}]}\n\n: ping\n\ndata: {"candidates":[],"usageMetadata":{"totalTokenCount":3}}\r\n\r\n';

describe('the JSON-array framing of a stream', () => {
  it('writes each event as one element of one array, comments left out, so the whole parses', () => {
    const text = framed([EVENTS]);
    assert.equal(text, '[{"candidates":[{"content":{"parts":[{"text":"H\u00e9"}]}}]},\r\n{"candidates":[],"usageMetadata":{"totalTokenCount":3}}]');
    assert.equal((JSON.parse(text) as unknown[]).length, 2);
  });

  it('writes the same however the events are cut, a character split across pieces included', () => {
    const whole = framed([EVENTS]);
    for (const { pieces } of everySplit(Buffer.from(EVENTS))) assert.equal(framed(pieces.map((piece) => Buffer.from(piece))), whole);
  });

  it('is an empty array when nothing was written, and an in-stream error is one more element', () => {
    assert.deepEqual(JSON.parse(framed([])), []);
    const failed = JSON.parse(framed([EVENTS, 'data: {"error":{"code":500,"message":"cut","status":"INTERNAL"}}\n\n'])) as unknown[];
    assert.deepEqual(failed.at(-1), { error: { code: 500, message: 'cut', status: 'INTERNAL' } });
  });

  it('keeps a stream alive with whitespace, which JSON readers skip, and says it is JSON', () => {
    const framing = jsonArrayFraming();
    assert.equal(framing.pingFrame.trim(), '');
    assert.deepEqual(JSON.parse(`${framing.head}${framing.pingFrame}${framing.tail}`), []);
    assert.match(framing.contentType, /^application\/json/);
  });
});
