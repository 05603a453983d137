import { test } from 'node:test';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { openStreams } from '../../bench/slow-client.ts';
import { startFakeUpstream } from '../../bench/fake-upstream.ts';
import { waitUntil } from '../helpers/wait.ts';

test('all streams count as ready once each has its first bytes, and close() ends them', async () => {
  const upstream = await startFakeUpstream({ dripMs: 60_000 });
  try {
    const result = await openStreams(upstream.port, { path: '/slow/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: '{"stream":true}' }, 20, 10_000);
    assert.equal(result.ready, 20);
    assert.equal(result.failed, 0);
    assert.deepEqual(result.statuses, { 200: 20 });
    assert.equal(upstream.openSockets(), 20);
    result.close();
    await waitUntil(() => upstream.openSockets() === 0, 'the upstream seeing every stream closed');
  } finally {
    await upstream.close();
  }
});

test('answers that are not 200 streams count as failed, by status', async () => {
  const upstream = await startFakeUpstream();
  try {
    const result = await openStreams(upstream.port, { path: '/v1/unknown', headers: {}, body: '{}' }, 3, 10_000);
    assert.equal(result.ready, 0);
    assert.equal(result.failed, 3);
    assert.deepEqual(result.statuses, { 404: 3 });
    result.close();
  } finally {
    await upstream.close();
  }
});

test('with a wave, no more than that many streams are being opened at once, and all open in the end', async () => {
  // Answers each request's head 20 ms after it arrives (real time, so requests of a wave overlap;
  // 12 of them take about 80 ms), and counts the requests not answered yet.
  let pending = 0;
  let most = 0;
  const server = http.createServer((req, res) => {
    pending++;
    most = Math.max(most, pending);
    req.resume();
    setTimeout(() => {
      pending--;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {}\n\n');
    }, 20);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const result = await openStreams(port, { path: '/', headers: {}, body: '{}' }, 12, 10_000, 3);
    assert.equal(result.ready, 12);
    assert.equal(most, 3);
    result.close();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
