/**
 * The usage tap on Responses streams (pass-through to a provider that serves `/responses`): usage
 * and completion from the terminal event, the model id written over the upstream's in the events
 * that carry the response object and nowhere else, errors, at every split point of the bytes.
 * No Responses stream is among the recorded fixtures, so these are written the way OpenAI writes
 * them (the emitter llmux uses, naming the upstream's model), plus data-only and padded variants.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUsageTap } from '../../src/passthrough/usage-tap.ts';
import type { UsageTap } from '../../src/passthrough/usage-tap.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';
import { RESPONSES_UPSTREAM_MODEL, responsesUpstream } from '../helpers/scripted-answers.ts';
import { parseResponsesEvents } from '../helpers/responses-stream.ts';

const CLIENT_MODEL = 'llmux-model';

function run(pieces: Buffer[], clientModel: string | null = CLIENT_MODEL): { out: Buffer; tap: UsageTap } {
  const tap = createUsageTap('responses', clientModel === null ? {} : { model: clientModel });
  const forwarded: Buffer[] = [];
  for (const piece of pieces) {
    const out = tap.feed(piece);
    if (out !== undefined) forwarded.push(out);
  }
  const rest = tap.end();
  if (rest !== undefined) forwarded.push(rest);
  return { out: Buffer.concat(forwarded), tap };
}

/** A text answer whose deltas mention the model id and a `"response":{` of their own. */
const TEXT = `The model "${RESPONSES_UPSTREAM_MODEL}" wrote {"response":{"model":"${RESPONSES_UPSTREAM_MODEL}"}} as text.`;
const upstream = responsesUpstream({ text: TEXT, usage: { input: 100, output: 20 } });
const STREAM = Buffer.from(upstream.stream);
/** The same stream as the client should get it: only the response objects' model changed. */
const EXPECTED = upstream.stream.replaceAll(`"model":"${RESPONSES_UPSTREAM_MODEL}","output"`, `"model":"${CLIENT_MODEL}","output"`);

describe('the usage tap on a Responses stream', () => {
  it('writes the llmux model id into created, in_progress and completed, and leaves every other byte as it came, at every split', () => {
    assert.notEqual(EXPECTED, upstream.stream);
    assert.ok(EXPECTED.includes(RESPONSES_UPSTREAM_MODEL), 'text that names the upstream model is not touched');
    for (const { offset, pieces } of everySplit(STREAM)) {
      const { out, tap } = run(pieces);
      assert.equal(out.toString(), EXPECTED, `split at ${offset}`);
      assert.equal(tap.completed, true, `split at ${offset}`);
      assert.deepEqual(tap.usage(), { inputTokens: 100, outputTokens: 20, cacheReadTokens: 0, cacheCreationTokens: 0 }, `split at ${offset}`);
    }
    const events = parseResponsesEvents(EXPECTED).filter((event) => event.data['response'] !== undefined);
    assert.deepEqual(events.map((event) => event.data['type']), ['response.created', 'response.in_progress', 'response.completed']);
  });

  it('gives the terminal response object, model substituted, as the answer to store', () => {
    const { tap } = run(randomPieces(STREAM, 7, 50));
    const answer = tap.answer() as { model: string; status: string; output: unknown[] };
    assert.equal(answer.model, CLIENT_MODEL);
    assert.equal(answer.status, 'completed');
    assert.equal(answer.output.length, 1);
  });

  it('forwards the bytes unchanged when no model id is to be written', () => {
    assert.ok(run(randomPieces(STREAM, 3, 40), null).out.equals(STREAM));
  });

  it('reads cached tokens out of input_tokens once', () => {
    const cached = upstream.stream.replace('"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0}', '"input_tokens_details":{"cached_tokens":60,"cache_write_tokens":25}');
    assert.deepEqual(run([Buffer.from(cached)]).tap.usage(), { inputTokens: 15, outputTokens: 20, cacheReadTokens: 60, cacheCreationTokens: 25 });
  });

  it('reads a data-only stream (no event lines) and padded JSON the same way', () => {
    const dataOnly = upstream.stream.replace(/^event: .*\n/gm, '').replaceAll('"response":{', '"response" : {');
    const { out, tap } = run(randomPieces(Buffer.from(dataOnly), 11, 30));
    assert.equal(tap.completed, true);
    assert.equal(tap.usage()?.outputTokens, 20);
    const rewritten = parseResponsesEvents(out.toString()).filter((event) => event.data['response'] !== undefined);
    for (const event of rewritten) assert.equal((event.data['response'] as { model: string }).model, CLIENT_MODEL);
  });

  it('stops at an error event, forwarding it and nothing after, and reports its message', () => {
    const cut = upstream.stream.indexOf('event: response.output_text.done');
    const error = 'event: error\ndata: {"type":"error","code":"server_error","message":"The model crashed","sequence_number":9}\n\n';
    const bytes = Buffer.from(upstream.stream.slice(0, cut) + error + upstream.stream.slice(cut));
    for (const seed of [1, 2, 3]) {
      const { out, tap } = run(randomPieces(bytes, seed, 64));
      assert.ok(out.toString().endsWith(error), `seed ${seed}`);
      assert.equal(tap.stopped, true);
      assert.equal(tap.completed, false);
      assert.equal(tap.upstreamError, 'The model crashed');
    }
  });

  it('reports response.failed as the upstream error, forwarded with the llmux model id', () => {
    const terminal = upstream.stream.indexOf('event: response.completed');
    const completed = parseResponsesEvents(upstream.stream.slice(terminal))[0]?.data ?? {};
    const response = { ...(completed['response'] as Record<string, unknown>), status: 'failed', error: { code: 'server_error', message: 'Upstream gave up' } };
    const failed = `${upstream.stream.slice(0, terminal)}event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', response, sequence_number: completed['sequence_number'] })}\n\n`;
    const { out, tap } = run([Buffer.from(failed)]);
    assert.equal(tap.upstreamError, 'Upstream gave up');
    assert.equal(tap.completed, true);
    const last = parseResponsesEvents(out.toString()).at(-1);
    assert.equal(last?.data['type'], 'response.failed');
    assert.equal((last?.data['response'] as { model: string }).model, CLIENT_MODEL);
  });

  it('keeps the response object of response.created as the answer when the stream is cut before the end', () => {
    const cut = upstream.stream.indexOf('event: response.output_item.added');
    const { tap } = run([STREAM.subarray(0, cut)]);
    assert.equal(tap.completed, false);
    assert.equal((tap.answer() as { status: string; id: string }).status, 'in_progress');
    assert.equal((tap.answer() as { id: string }).id, 'resp_upstream0001');
  });

  it('knows the sequence number an event it adds takes: one past the last one forwarded, at every split', () => {
    const events = parseResponsesEvents(upstream.stream);
    const cut = upstream.stream.indexOf('event: response.output_text.done');
    const forwarded = parseResponsesEvents(upstream.stream.slice(0, cut));
    const last = forwarded.at(-1)?.data['sequence_number'] as number;
    assert.ok(last > 3 && last < (events.at(-1)?.data['sequence_number'] as number));
    for (const { pieces } of everySplit(STREAM.subarray(0, cut))) assert.equal(run(pieces).tap.nextSequenceNumber(), last + 1);
    assert.equal(run([]).tap.nextSequenceNumber(), 0);
    // Padded JSON, and the key's name in text (quotes escaped there), read the same.
    const padded = Buffer.from('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number" : 41,"delta":"\\"sequence_number\\":99"}\n\n');
    assert.equal(run([padded]).tap.nextSequenceNumber(), 42);
  });
});
