/**
 * A client that opens a stream and then reads (almost) nothing of it, a slowloris on open streams
 * (issue 25): the server holds only what the socket buffers take, and lets the stream go after
 * `limits.stream_idle_timeout_ms` without a read, stopping its upstream.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestGateway } from '../helpers/gateway.ts';
import type { Responder } from '../helpers/fake-upstream.ts';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An upstream that streams chat chunks of 64 KiB as fast as it is read, up to `maxBytes`; counts what it wrote. */
function firehose(maxBytes: number, written: { bytes: number; closed: boolean }): Responder {
  const chunk = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'x'.repeat(64 * 1024) }, finish_reason: null }] })}\n\n`;
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.on('close', () => { written.closed = true; });
    const pump = (): void => {
      while (written.bytes < maxBytes && !res.destroyed) {
        written.bytes += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) res.end('data: [DONE]\n\n');
    };
    pump();
  };
}

describe('a client that stops reading an open stream', () => {
  it('holds a bounded part of the answer and lets the stream go after stream_idle_timeout_ms without a read, stopping the upstream', async () => {
    const t = await startTestGateway({ config: { limits: { stream_idle_timeout_ms: 1_500, ping_interval_ms: 300, shutdown_timeout_ms: 500 } } });
    try {
      const written = { bytes: 0, closed: false };
      t.upstream.queue.push(firehose(500 * 1024 * 1024, written));
      const u = new URL(t.url);
      const socket = net.connect(Number(u.port), u.hostname);
      await new Promise((r) => socket.once('connect', r));
      const body = JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      // Reads its first bytes, then a byte now and then: never enough for the server's buffer to drain.
      let read = 0;
      socket.once('data', (c: Buffer) => { read += c.length; socket.pause(); });
      const trickle = setInterval(() => { const c = socket.read(1) as Buffer | null; if (c !== null) read += c.length; }, 200);
      socket.on('error', () => {});
      await wait(400);
      const stalledAt = performance.now();
      const heldAtStall = written.bytes;
      // The client, paused, would not notice the server closing; the server's side is watched instead.
      const connections = (): Promise<number> => new Promise((resolve) => t.gateway.server?.getConnections((_e, n) => resolve(n)) ?? resolve(0));
      let letGoAt = -1;
      while (performance.now() - stalledAt < 6_000) {
        if (await connections() === 0) {
          letGoAt = performance.now();
          break;
        }
        await wait(50);
      }
      clearInterval(trickle);
      socket.destroy();
      assert.ok(letGoAt > 0, 'the server kept the stream of a client that reads nothing');
      const heldMs = letGoAt - stalledAt;
      assert.ok(heldMs < 1_500 + 1_500, `let go ${Math.round(heldMs)} ms after the client stopped`);
      assert.ok(written.bytes < 64 * 1024 * 1024, `the upstream was read for ${(written.bytes / 1e6).toFixed(1)} MB`);
      assert.ok(written.bytes - heldAtStall < 8 * 1024 * 1024, 'nothing more was read once the client stalled');
      await wait(100);
      assert.ok(written.closed, 'the upstream request was stopped');
      const line = [...t.logs].reverse().find((l) => (l as Record<string, unknown>)['path'] === '/v1/chat/completions') as Record<string, unknown>;
      assert.match(String(line['stream_error']), /the client read nothing for 1500 ms/);
    } finally {
      await t.close();
    }
  });
});
