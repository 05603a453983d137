/**
 * The smoke requests a shipped llmux must answer: /healthz, then `llmux-echo` in both formats,
 * whole and streamed, over a real socket.
 */
import assert from 'node:assert/strict';
import type { RunningServer } from './process.ts';

/** Asserts /healthz answers ok with the given version. */
export async function assertHealthy(url: string, version: string): Promise<void> {
  const res = await fetch(`${url}/healthz`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { status: string; version: string };
  assert.equal(body.status, 'ok');
  assert.equal(body.version, version);
}

/** Asserts both formats echo the prompt, whole and streamed, and the streams end properly. */
export async function assertEchoInBothFormats(url: string, key: string): Promise<void> {
  const chat = (stream: boolean) => fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llmux-echo', stream, messages: [{ role: 'user', content: 'ship it' }] }),
  });
  const messages = (stream: boolean) => fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llmux-echo', max_tokens: 64, stream, messages: [{ role: 'user', content: 'ship it' }] }),
  });

  const whole = await chat(false);
  assert.equal(whole.status, 200);
  const completion = (await whole.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
  assert.equal(completion.choices[0]?.message.content, 'ship it');
  assert.equal(completion.choices[0]?.finish_reason, 'stop');

  const chatStream = await chat(true);
  assert.equal(chatStream.status, 200);
  assert.match(chatStream.headers.get('content-type') ?? '', /^text\/event-stream/);
  const chatEvents = (await chatStream.text()).split('\n\n').filter((e) => e !== '');
  assert.equal(chatEvents.at(-1), 'data: [DONE]');
  const text = chatEvents.slice(0, -1)
    .map((e) => JSON.parse(e.slice('data: '.length)) as { choices: Array<{ delta: { content?: string } }> })
    .map((chunk) => chunk.choices[0]?.delta.content ?? '')
    .join('');
  assert.equal(text, 'ship it');

  const message = await messages(false);
  assert.equal(message.status, 200);
  const body = (await message.json()) as { content: Array<{ type: string; text: string }>; stop_reason: string };
  assert.deepEqual(body.content, [{ type: 'text', text: 'ship it' }]);
  assert.equal(body.stop_reason, 'end_turn');

  const messageStream = await messages(true);
  assert.equal(messageStream.status, 200);
  const events = (await messageStream.text()).split('\n\n').filter((e) => e !== '');
  const names = events.map((e) => /^event: (\S+)/.exec(e)?.[1]);
  assert.equal(names[0], 'message_start');
  assert.equal(names.at(-1), 'message_stop');
  const streamed = events
    .filter((e) => e.startsWith('event: content_block_delta'))
    .map((e) => (JSON.parse(e.slice(e.indexOf('data: ') + 'data: '.length)) as { delta: { text: string } }).delta.text)
    .join('');
  assert.equal(streamed, 'ship it');
}

/** Asserts a started llmux serves {@link assertHealthy} and {@link assertEchoInBothFormats}, then exits 0 on SIGTERM. */
export async function assertServesThenStops(server: RunningServer, version: string): Promise<void> {
  try {
    await assertHealthy(server.url, version);
    await assertEchoInBothFormats(server.url, server.adminKey);
  } finally {
    assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null }, server.stderr());
  }
}
