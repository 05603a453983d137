import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { STREAM_EVENTS, chatJsonBody, chatStreamEvents, flagIsTrue, messagesJsonBody, messagesStreamEvents, startFakeUpstream } from '../../bench/fake-upstream.ts';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** How many `data` reads the client saw. */
  reads: number;
}

function post(port: number, path: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      let reads = 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        reads++;
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, reads }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The `data:` payloads of an SSE text, in order. */
function dataOf(sse: string): string[] {
  return sse.split('\n\n').filter((block) => block !== '').map((block) => {
    const line = block.split('\n').find((l) => l.startsWith('data: '));
    assert.ok(line !== undefined, `event without data: ${block}`);
    return line.slice('data: '.length);
  });
}

test('every stream has exactly 100 events, each a complete SSE event with JSON data', () => {
  for (const events of [chatStreamEvents(true), chatStreamEvents(false), messagesStreamEvents()]) {
    assert.equal(events.length, STREAM_EVENTS);
    for (const event of events) {
      assert.ok(event.endsWith('\n\n'), event);
      assert.equal(dataOf(event).length, 1);
    }
  }
});

test('the chat stream starts with the role, ends with [DONE], and carries usage only when asked', () => {
  const withUsage = chatStreamEvents(true).flatMap(dataOf);
  assert.equal(withUsage.at(-1), '[DONE]');
  const chunks = withUsage.slice(0, -1).map((d) => JSON.parse(d) as { choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>; usage?: { completion_tokens: number } });
  assert.equal(chunks[0]?.choices[0]?.delta['role'], 'assistant');
  assert.equal(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
  assert.deepEqual(chunks.at(-1)?.choices, []);
  assert.equal(chunks.at(-1)?.usage?.completion_tokens, STREAM_EVENTS - 4);
  const withoutUsage = chatStreamEvents(false).flatMap(dataOf).slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>);
  assert.ok(withoutUsage.every((c) => c['usage'] === undefined));
});

test('the messages stream is a whole message: start, one text block, delta with usage, stop', () => {
  const events = messagesStreamEvents();
  const types = events.map((e) => /^event: (\w+)\n/.exec(e)?.[1]);
  assert.deepEqual(types.slice(0, 2), ['message_start', 'content_block_start']);
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.ok(types.slice(2, -3).every((t) => t === 'content_block_delta'));
  for (const event of events) {
    const data = JSON.parse(dataOf(event)[0] as string) as { type: string };
    assert.equal(data.type, /^event: (\w+)/.exec(event)?.[1]);
  }
});

test('non-streamed answers are JSON in each format with usage', () => {
  const chat = JSON.parse(chatJsonBody().toString()) as { object: string; usage: { total_tokens: number } };
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.usage.total_tokens, 51);
  const message = JSON.parse(messagesJsonBody().toString()) as { type: string; usage: { output_tokens: number } };
  assert.equal(message.type, 'message');
  assert.equal(message.usage.output_tokens, 37);
});

test('the server answers each format by path, JSON or stream by the request body', async () => {
  const upstream = await startFakeUpstream();
  try {
    const json = await post(upstream.port, '/v1/chat/completions', '{"model":"m","messages":[]}');
    assert.equal(json.status, 200);
    assert.equal(json.headers['content-type'], 'application/json');
    assert.equal(json.body, chatJsonBody().toString());

    const stream = await post(upstream.port, '/v1/messages', '{"model":"m","stream": true}');
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    assert.equal(stream.body, messagesStreamEvents().join(''));
    // One write per event-loop turn: the client sees the stream in many reads, not one.
    assert.ok(stream.reads > 10, `${stream.reads} reads`);

    const chat = await post(upstream.port, '/v1/chat/completions', '{"stream":true,"stream_options":{"include_usage":true}}');
    assert.equal(chat.body, chatStreamEvents(true).join(''));

    const missing = await post(upstream.port, '/v1/embeddings', '{}');
    assert.equal(missing.status, 404);
  } finally {
    await upstream.close();
  }
});

test('the stats count accepted connections and answered requests, and are readable over HTTP', async () => {
  const upstream = await startFakeUpstream();
  try {
    // Node's default client agent keeps connections alive: three requests, one connection.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: upstream.port, method: 'POST', path: '/v1/messages', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', reject);
        req.end('{}');
      });
    }
    agent.destroy();
    assert.deepEqual(upstream.stats(), { connections: 1, requests: 3 });
    const fresh = await new Promise<string>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: upstream.port, path: '/__bench/stats', agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    assert.deepEqual(JSON.parse(fresh), { connections: 2, requests: 3 });
  } finally {
    await upstream.close();
  }
});

test('a /slow/ stream sends its first event at once, then drips content and never ends by itself', async () => {
  const upstream = await startFakeUpstream({ dripMs: 1 });
  try {
    const received = await new Promise<string>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: upstream.port, method: 'POST', path: '/slow/v1/messages' }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          // Head (message_start, content_block_start) plus more deltas than the stream holds: it loops.
          if (text.split('content_block_delta').length > STREAM_EVENTS + 5) {
            req.destroy();
            resolve(text);
          }
        });
        res.on('end', () => reject(new Error('the slow stream ended')));
      });
      req.on('error', () => {});
      req.end('{"stream":true}');
    });
    assert.ok(received.startsWith('event: message_start\n'));
    assert.equal(received.split('event: content_block_start').length, 2, 'the block starts once');
    assert.ok(!received.includes('message_stop'));
  } finally {
    await upstream.close();
  }
});

test('a body flag is read in the bytes, whatever the JSON space around its colon', () => {
  const key = Buffer.from('"stream"');
  assert.equal(flagIsTrue(Buffer.from('{"stream":true}'), key), true);
  assert.equal(flagIsTrue(Buffer.from('{"stream" :\n true}'), key), true);
  assert.equal(flagIsTrue(Buffer.from('{"stream":false}'), key), false);
  assert.equal(flagIsTrue(Buffer.from('{"text":"\\"stream\\": true"}'), key), false, 'an escaped quote is no key');
  assert.equal(flagIsTrue(Buffer.from('{"x":"stream","stream":true}'), key), true, 'a later key is found after a value of the same name');
});
