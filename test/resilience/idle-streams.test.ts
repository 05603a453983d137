import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { ServerResponse } from 'node:http';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { fixture } from '../helpers/fake-upstream.ts';
import type { Responder } from '../helpers/fake-upstream.ts';
import { arrayBuffersAfterGc } from '../helpers/memory.ts';

/** The size of each request body: big enough that keeping them would stand out from any noise. */
const BODY_BYTES = 2 * 1024 * 1024;
const STREAMS = 4;

/** The first event of a recorded stream of `name`, with its blank line. */
function firstEvent(name: string): string {
  const text = fixture(name).toString('utf8');
  return text.slice(0, text.indexOf('\n\n') + 2);
}

/**
 * An upstream that answers a stream with its first event and then holds it open, as a slow model
 * does: each stream stays open and idle until the test ends.
 */
function heldStream(event: string, held: ServerResponse[]): Responder {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(event);
    held.push(res);
  };
}

/** Opens a streamed request and resolves with it once the client has the first bytes of its answer. */
function openStream(url: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.once('data', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, close: () => req.destroy() }));
      res.on('data', () => {});
    });
    req.once('error', reject);
    req.end(body);
  });
}

/**
 * Memory an open stream keeps (issue 26): once the provider has answered, no attempt sends the
 * request again, so an idle stream must not hold its request body (an agent's turn is 100-300 KB,
 * and a stream may stay open for minutes).
 */
describe('idle streams', () => {
  let t: TestGateway;
  const held: ServerResponse[] = [];
  before(async () => {
    // A model whose context takes the large bodies below; the test's log collector is not needed.
    t = await startTestGateway({
      extra: { logger: null },
      configFor: (url) => ({
        providers: {
          'fake-openai': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-openai-secret' },
          'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
        },
        models: [
          { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', context_length: 10_000_000, max_output_tokens: 8192 },
          { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', context_length: 10_000_000, max_output_tokens: 16384 },
        ],
      }),
    });
    t.upstream.record = false;
  });
  after(async () => {
    for (const res of held) res.destroy();
    await t.close();
  });

  const cases = [
    { name: 'passed through to a provider of the same format', model: 'claude-test', fixture: 'anthropic-stream-text.sse' },
    { name: 'translated for a provider of another format', model: 'gpt-test', fixture: 'openai-stream-text-include-usage.sse' },
  ];
  for (const c of cases) {
    it(`does not keep its request body once the provider has answered (${c.name})`, async () => {
      const event = firstEvent(c.fixture);
      t.upstream.fallback = heldStream(event, held);
      const key = (await t.gateway.keys.create({ name: `idle ${c.model}`, tier: 'enterprise', limits: { rpm: 1e6, tpm: 1e12, concurrency: 100 } })).key;
      const headers = { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' };
      const text = 'lorem ipsum '.repeat(BODY_BYTES / 12);
      const body = JSON.stringify({ model: c.model, max_tokens: 100, stream: true, messages: [{ role: 'user', content: text }] });
      const before = arrayBuffersAfterGc();
      const streams = [];
      for (let i = 0; i < STREAMS; i++) streams.push(await openStream(t.url, '/v1/messages', headers, body));
      try {
        assert.deepEqual(streams.map((s) => s.status), streams.map(() => 200));
        const kept = arrayBuffersAfterGc() - before;
        // Kept bodies would be STREAMS x BODY_BYTES (8 MiB); what an open stream needs is a few KB.
        // One body is the key's: its last turn, remembered so that its next reads only what changed
        // (src/common/json-recall.ts), whatever the number of streams.
        assert.ok(kept < 2 * BODY_BYTES, `${STREAMS} idle streams keep ${kept} bytes of buffers (each request body is ${body.length} bytes)`);
      } finally {
        for (const s of streams) s.close();
      }
    });
  }

  it('keeps no header block once the head of the stream is written, and the client has every header', async () => {
    const event = firstEvent('anthropic-stream-text.sse');
    t.upstream.fallback = heldStream(event, held);
    const key = (await t.gateway.keys.create({ name: 'idle headers', tier: 'enterprise', limits: { rpm: 1e6, tpm: 1e12, concurrency: 100 } })).key;
    const headers = { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-request-id': 'idle-head-1' };
    const body = JSON.stringify({ model: 'claude-test', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const answered: ServerResponse[] = [];
    const server = t.gateway.server;
    assert.ok(server !== undefined);
    const onRequest = (_req: http.IncomingMessage, res: ServerResponse): void => {
      answered.push(res);
    };
    server.on('request', onRequest);
    const stream = await openStream(t.url, '/v1/messages', headers, body);
    server.off('request', onRequest);
    try {
      assert.equal(stream.status, 200);
      assert.equal(stream.headers['x-request-id'], 'idle-head-1');
      assert.equal(stream.headers['request-id'], 'idle-head-1');
      assert.equal(stream.headers['x-ratelimit-limit-requests'], '1000000');
      assert.equal(stream.headers['x-ratelimit-limit-tokens'], '1000000000000');
      assert.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8');
      // Headers set with res.setHeader stay on the response (a dictionary and an array per header)
      // for as long as the stream is open; given to writeHead in one object, none is kept.
      assert.equal(answered.length, 1);
      assert.deepEqual(answered[0]?.getHeaderNames(), []);
    } finally {
      stream.close();
    }
  });
});
