import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { fixture, respond } from '../helpers/fake-upstream.ts';
import { waitUntil } from '../helpers/wait.ts';
import { heapAfterGc } from '../helpers/memory.ts';

/**
 * A bounded soak: 20,000 mixed requests (JSON and streams, both formats, same-format and
 * translated, some cut off by the client) against a local fake upstream; afterwards no sockets
 * are left open and the heap is back where it was.
 */
describe('soak', () => {
  let t: TestGateway;
  let key: string;
  before(async () => {
    // The test's own log collector would hold every line: discard them here. The answers are
    // recordings passed through as they came (the provider's, not checked against the schemas),
    // and a check of 20,000 answers would weigh on the heap this test measures.
    t = await startTestGateway({ extra: { logger: null }, schemas: false });
    key = (await t.gateway.keys.create({ name: 'soak', tier: 'enterprise', limits: { rpm: 1e9, tpm: 1e12, concurrency: 1000 } })).key;
    t.upstream.record = false;
    const answers = {
      chatStream: fixture('openai-stream-text-include-usage.sse'),
      messagesStream: fixture('anthropic-stream-tool-use.sse'),
    };
    t.upstream.fallback = (req, res, seen) => {
      const stream = seen.body['stream'] === true;
      if (seen.path.endsWith('/messages')) {
        return stream ? respond.sse(answers.messagesStream, { chunkSize: 512 })(req, res, seen) : respond.fixtureJson('anthropic-nonstream-tool-use.json')(req, res, seen);
      }
      return stream ? respond.sse(answers.chatStream, { chunkSize: 512 })(req, res, seen) : respond.fixtureJson('openai-nonstream-parallel-tool-calls.json')(req, res, seen);
    };
  });
  after(async () => { await t.close(); });

  it('runs 20,000 mixed requests with no error, no leaked socket and no heap growth', async () => {
    const url = new URL(t.url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    const kinds = [
      { path: '/v1/chat/completions', model: 'gpt-test', stream: false },
      { path: '/v1/chat/completions', model: 'gpt-test', stream: true },
      { path: '/v1/messages', model: 'claude-test', stream: false },
      { path: '/v1/messages', model: 'claude-test', stream: true },
      { path: '/v1/messages', model: 'gpt-test', stream: true },
      { path: '/v1/chat/completions', model: 'claude-test', stream: true },
      { path: '/v1/messages', model: 'llmux-echo', stream: true },
    ];
    let errors = 0;
    let aborted = 0;
    const run = (i: number): Promise<void> => {
      const kind = kinds[i % kinds.length]!;
      const body = kind.path === '/v1/messages'
        ? JSON.stringify({ model: kind.model, max_tokens: 50, stream: kind.stream, messages: [{ role: 'user', content: `request ${i}` }] })
        : JSON.stringify({ model: kind.model, stream: kind.stream, messages: [{ role: 'user', content: `request ${i}` }] });
      const cut = kind.stream && i % 50 === 7;
      return new Promise((resolve) => {
        const req = http.request({ agent, hostname: url.hostname, port: url.port, path: kind.path, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' } }, (res) => {
          if (res.statusCode !== 200) errors++;
          if (cut) {
            res.once('data', () => { aborted++; req.destroy(); resolve(); });
            return;
          }
          res.on('data', () => {});
          res.on('end', () => resolve());
          res.on('error', () => { errors++; resolve(); });
        });
        req.on('error', () => { if (!cut) errors++; resolve(); });
        req.end(body);
      });
    };
    const total = 20_000;
    // Warm up, then measure from a settled baseline (a real pause: the warm-up's sockets and
    // timers wind down before the heap is measured; there is no one event to wait for).
    for (let i = 0; i < 500; i++) await run(i);
    await new Promise((r) => setTimeout(r, 200));
    const heapBefore = heapAfterGc();
    const upstreamSocketsBefore = t.upstream.openSockets();
    let next = 0;
    const started = Date.now();
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (next < total) await run(next++);
    }));
    const seconds = (Date.now() - started) / 1000;
    agent.destroy();
    const openConnections = (): Promise<number> => new Promise<number>((resolve) => t.gateway.server!.getConnections((_e, n) => resolve(n)));
    await waitUntil(async () => (await openConnections()) === 0, 'the server seeing the client connections closed');
    const heapAfter = heapAfterGc();
    const connections = await openConnections();
    const growth = heapAfter - heapBefore;
    process.stderr.write(`soak: ${total} requests in ${seconds.toFixed(1)} s, ${errors} errors, ${aborted} cut by the client; heap ${(heapBefore / 1e6).toFixed(1)} -> ${(heapAfter / 1e6).toFixed(1)} MB; upstream sockets ${upstreamSocketsBefore} -> ${t.upstream.openSockets()}; client connections left ${connections}\n`);
    assert.equal(errors, 0);
    assert.equal(connections, 0);
    // The keep-alive pool to the upstream may hold idle sockets, but never more than were in use at once.
    assert.ok(t.upstream.openSockets() <= 64, `upstream sockets ${t.upstream.openSockets()}`);
    assert.ok(growth < 8 * 1024 * 1024, `heap grew ${growth} bytes`);
  });
});
