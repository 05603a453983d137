import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway/server.ts';
import { benchConfig } from '../../bench/llmux-server.ts';
import { startFakeUpstream } from '../../bench/fake-upstream.ts';
import { loadScenarios, withKey } from '../../bench/measure.ts';

function post(port: number, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('every load scenario gets a complete 200 answer from llmux with the bench config and key', async () => {
  const upstream = await startFakeUpstream();
  const home = mkdtempSync(join(tmpdir(), 'llmux-bench-test-'));
  const gateway = createGateway({ config: benchConfig(upstream.port), home, env: {}, logger: null });
  try {
    const { key } = await gateway.keys.create({ name: 'bench', tier: 'enterprise' });
    const { port } = await gateway.listen(0, '127.0.0.1');
    for (const scenario of loadScenarios()) {
      const answer = await post(port, scenario.path, withKey(scenario.headers, key), scenario.body);
      assert.equal(answer.status, 200, `${scenario.id}: ${answer.body.slice(0, 300)}`);
      const clientFormat = scenario.path === '/v1/messages' ? 'messages' : scenario.path.startsWith('/v1beta/') ? 'gemini' : 'chat';
      // The agent turns ask for a whole answer: what they measure is the 200 KB request.
      if (scenario.kind === 'json' || scenario.kind === 'agent' || scenario.kind === 'agent-translated') {
        assert.match(answer.type, /application\/json/);
        JSON.parse(answer.body);
      } else if (clientFormat === 'gemini') {
        assert.match(answer.body, /"finishReason":"STOP"/, scenario.id);
        assert.ok(answer.body.split('"text":').length - 1 >= 90, scenario.id);
        assert.match(answer.body, /"usageMetadata":\{/, scenario.id);
      } else if (clientFormat === 'messages') {
        assert.match(answer.body, /event: message_stop\n/, scenario.id);
        // Every content event of the upstream's stream reached the client.
        assert.ok(answer.body.split('"text_delta"').length - 1 >= 90, scenario.id);
      } else {
        assert.match(answer.body, /data: \[DONE\]\n\n$/, scenario.id);
        assert.ok(answer.body.split('"content":').length - 1 >= 90, scenario.id);
        assert.match(answer.body, /"usage":\{/, `${scenario.id}: usage chunk asked for with include_usage`);
      }
    }
  } finally {
    await gateway.close();
    await upstream.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test('the bench key is never refused by the limits, even far past the default enterprise rate', async () => {
  const upstream = await startFakeUpstream();
  const home = mkdtempSync(join(tmpdir(), 'llmux-bench-test-'));
  const gateway = createGateway({ config: benchConfig(upstream.port), home, env: {}, logger: null });
  try {
    const { key } = await gateway.keys.create({ name: 'bench', tier: 'enterprise' });
    const { port } = await gateway.listen(0, '127.0.0.1');
    const scenario = loadScenarios().find((s) => s.id === 'chat-json');
    assert.ok(scenario !== undefined);
    // 1,200 requests in well under a minute: over the default enterprise 1,000 rpm.
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < 12; batch++) {
      const answers = await Promise.all(Array.from({ length: 100 }, () => post(port, scenario.path, withKey(scenario.headers, key), scenario.body)));
      for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    }
    assert.deepEqual([...statuses], [[200, 1200]]);
  } finally {
    await gateway.close();
    await upstream.close();
    rmSync(home, { recursive: true, force: true });
  }
});
