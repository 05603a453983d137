import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { ECHO_MAX_WORDS, ECHO_MAX_TEXT_CHARS, ECHO_PROVIDER, createEchoTransport, measureWords, wordsOf } from '../../src/providers/echo.ts';
import { createCancellation } from '../../src/providers/upstream.ts';
import type { ClientRequest, ClientRequestOf, WireFormat } from '../../src/formats/wire.ts';
import { heapAfterGc } from '../helpers/memory.ts';

/** A request as a test writes it: its dialect would read the model and the stream flag from its body. */
type Asked = { [F in WireFormat]: Pick<ClientRequestOf<F>, 'format' | 'body'> }[WireFormat];

function send(asked: Asked): Promise<Readable> {
  const client = { ...asked, model: asked.body.model, stream: asked.body.stream === true } as ClientRequest;
  return createEchoTransport().send({
    provider: ECHO_PROVIDER,
    endpoint: ECHO_PROVIDER.baseUrl,
    format: client.format,
    path: '/chat/completions',
    body: '',
    headers: {},
    client,
    cancellation: createCancellation(),
    connectTimeoutMs: 1_000,
    firstByteTimeoutMs: 1_000,
  });
}

async function readAll(stream: Readable): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

describe('the echo model', () => {
  it('answers with at most the first 65,536 characters of a huge last user text, cut with the length stop reason', async () => {
    const text = 'x'.repeat(3 * ECHO_MAX_TEXT_CHARS);
    const answer = JSON.parse(await readAll(await send({ format: 'chat', body: { model: 'llmux-echo', messages: [{ role: 'user', content: text }] } }))) as {
      choices: Array<{ message: { content: string }; finish_reason: string }>;
    };
    assert.equal(answer.choices[0]?.message.content.length, ECHO_MAX_TEXT_CHARS);
    assert.equal(answer.choices[0]?.finish_reason, 'length');
  });

  it('answers at most 4,096 words, and at most max_tokens words when the request gives fewer', async () => {
    const text = 'w '.repeat(10_000);
    const uncapped = JSON.parse(await readAll(await send({ format: 'chat', body: { model: 'llmux-echo', messages: [{ role: 'user', content: text }] } }))) as {
      usage: { completion_tokens: number };
    };
    assert.equal(uncapped.usage.completion_tokens, ECHO_MAX_WORDS);
    const above = JSON.parse(await readAll(await send({ format: 'chat', body: { model: 'llmux-echo', max_tokens: 9_000, messages: [{ role: 'user', content: text }] } }))) as {
      usage: { completion_tokens: number };
    };
    assert.equal(above.usage.completion_tokens, ECHO_MAX_WORDS, "no more than the model's own output limit");
    const capped = await readAll(await send({ format: 'messages', body: { model: 'llmux-echo', max_tokens: 3, stream: true, messages: [{ role: 'user', content: text }] } }));
    assert.equal(capped.split('event: content_block_delta').length - 1, 3);
    assert.match(capped, /"stop_reason":"max_tokens"/);
  });

  it('ignores empty text parts, so many of them before a text echo just that text', async () => {
    const content = [...Array.from({ length: 100_000 }, () => ({ type: 'text', text: '' })), { type: 'text', text: 'hello there' }];
    const answer = JSON.parse(await readAll(await send({ format: 'chat', body: { model: 'llmux-echo', messages: [{ role: 'user', content }] } }))) as {
      choices: Array<{ message: { content: string } }>;
    };
    assert.equal(answer.choices[0]?.message.content, 'hello there');
  });

  it('makes the words of a stream as they are read: ten open streams of a 4 MB text hold under 16 MB between them', async () => {
    // Issue 14: each stream held its whole text as an array of words; 40 of them took 5 GB.
    // Flat strings, as JSON.parse makes them: slicing a rope would flatten it and count here.
    const text = (i: number): string => Buffer.alloc(4_200_000, `${i}b `).toString('latin1');
    const bodies = Array.from({ length: 10 }, (_, i) => ({ model: 'llmux-echo', stream: true, messages: [{ role: 'user' as const, content: text(i) }], max_tokens: 4_096 }));
    const before = heapAfterGc();
    const streams = await Promise.all(bodies.map((body) => send({ format: 'messages', body })));
    // Read a little of each, then leave them open and unread.
    await Promise.all(streams.map((stream) => new Promise((resolve) => stream.once('data', resolve))));
    for (const stream of streams) stream.pause();
    const held = heapAfterGc() - before;
    for (const stream of streams) stream.destroy();
    assert.ok(held < 16 * 1024 * 1024, `ten open streams hold ${(held / 1e6).toFixed(1)} MB`);
  });

  it('cuts words lazily and exactly: joined they give the text back up to where the answer ends', () => {
    const text = '  one two\tthree\nfour  ';
    assert.deepEqual([...wordsOf(text, text.length)], ['  one', ' two', '\tthree', '\nfour', '  ']);
    assert.deepEqual(measureWords(text, 2), { end: 9, words: 2, cut: true });
    assert.deepEqual(measureWords(text, 5), { end: text.length, words: 5, cut: false });
    assert.deepEqual([...wordsOf(text, 9)], ['  one', ' two']);
  });
});
