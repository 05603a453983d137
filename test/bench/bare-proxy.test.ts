import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startBareProxy } from '../../bench/bare-proxy.ts';
import { chatStreamEvents, messagesJsonBody, startFakeUpstream } from '../../bench/fake-upstream.ts';

function post(port: number, path: string, body: string, agent: http.Agent): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent, headers: { 'content-type': 'application/json', 'x-test': 'kept' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the bare proxy passes status, content type and every byte through, JSON and streams alike', async () => {
  const upstream = await startFakeUpstream();
  const proxy = await startBareProxy({ upstreamPort: upstream.port });
  const agent = new http.Agent({ keepAlive: true });
  try {
    const json = await post(proxy.port, '/v1/messages', '{"model":"m"}', agent);
    assert.equal(json.status, 200);
    assert.equal(json.headers['content-type'], 'application/json');
    assert.equal(json.body, messagesJsonBody().toString());

    const stream = await post(proxy.port, '/v1/chat/completions', '{"stream":true,"stream_options":{"include_usage":true}}', agent);
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    assert.equal(stream.body, chatStreamEvents(true).join(''));

    const missing = await post(proxy.port, '/v1/nothing', '{}', agent);
    assert.equal(missing.status, 404);
  } finally {
    agent.destroy();
    await proxy.close();
    await upstream.close();
  }
});

test('the bare proxy reuses upstream connections across requests', async () => {
  const upstream = await startFakeUpstream();
  const proxy = await startBareProxy({ upstreamPort: upstream.port });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 5; i++) assert.equal((await post(proxy.port, '/v1/chat/completions', '{}', agent)).status, 200);
    assert.equal(upstream.openSockets(), 1);
  } finally {
    agent.destroy();
    await proxy.close();
    await upstream.close();
  }
});

test('the bare proxy answers 502 when the upstream cannot be reached', async () => {
  const upstream = await startFakeUpstream();
  const deadPort = upstream.port;
  await upstream.close();
  const proxy = await startBareProxy({ upstreamPort: deadPort });
  const agent = new http.Agent();
  try {
    assert.equal((await post(proxy.port, '/v1/chat/completions', '{}', agent)).status, 502);
  } finally {
    agent.destroy();
    await proxy.close();
  }
});
