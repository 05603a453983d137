/**
 * The gateway on a state server that hangs: every read it makes there is bounded by
 * `state.timeout_ms`, whatever the route (llmux.md section 6).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestGateway, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import { createRespClient } from '../../src/state/resp.ts';
import type { TestRedis } from '../helpers/redis.ts';

const skip = redisSkip();
const TIMEOUT_MS = 250;

describe('a gateway whose state server hangs', { skip }, () => {
  let redis: TestRedis;
  let t: TestGateway;
  before(async () => {
    redis = await startRedis();
    t = await startTestGateway({ config: { state: { url: redis.url, timeout_ms: TIMEOUT_MS }, limits: { shutdown_timeout_ms: 500 } } });
  });
  after(async () => {
    redis.resume();
    await t?.close();
    await redis?.stop();
  });

  it('answers GET /v1/usage with a clear 503 state_unavailable within state.timeout_ms, and 200 once the server answers again', async () => {
    // Issue 25: GET /v1/usage waited 10 s on a hung server while model requests kept their 250 ms bound.
    const ask = () => fetch(`${t.url}/v1/usage?since=2020-01-01T00:00:00Z`, { headers: openaiHeaders(t.key) });
    assert.equal((await ask()).status, 200);
    redis.pause();
    try {
      const started = performance.now();
      const hung = await ask();
      const tookMs = performance.now() - started;
      assert.equal(hung.status, 503);
      const body = await hung.json() as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'state_unavailable');
      assert.match(body.error.message, /Usage needs the shared state server/);
      assert.ok(tookMs < TIMEOUT_MS * 4, `GET /v1/usage took ${Math.round(tookMs)} ms`);
    } finally {
      redis.resume();
    }
    let back = 0;
    for (let i = 0; i < 100 && back !== 200; i++) {
      back = (await ask()).status;
      if (back !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(back, 200);
  });

  it('answers a stored response\'s reads within the same bound while the server hangs', async () => {
    redis.pause();
    try {
      for (const path of ['/v1/responses/resp_missing', '/v1/responses/resp_missing/input_items']) {
        const started = performance.now();
        const res = await fetch(`${t.url}${path}`, { headers: openaiHeaders(t.key) });
        const tookMs = performance.now() - started;
        assert.equal(res.status, 503, path);
        assert.ok(tookMs < TIMEOUT_MS * 4, `${path} took ${Math.round(tookMs)} ms`);
      }
    } finally {
      redis.resume();
    }
  });
});

describe('values that look like RESP, on a real state server', { skip }, () => {
  // Issue 25: what a client or an upstream chooses (a key's name, a model id, a response or item id,
  // a device's client name, a user code) goes to the server as one length-prefixed bulk string: CR/LF
  // and RESP syntax inside it stay data and run no command.
  const INJECTION = 'x\r\n*3\r\n$3\r\nSET\r\n$6\r\ncanary\r\n$6\r\nhacked\r\n*1\r\n$8\r\nFLUSHALL\r\n';
  let redis: TestRedis;
  let t: TestGateway;
  let probe: ReturnType<typeof createRespClient>;
  before(async () => {
    redis = await startRedis();
    probe = createRespClient({ url: redis.url, timeoutMs: 2000 });
    await probe.command(['SET', 'canary', 'alive']);
    t = await startTestGateway({ config: { state: { url: redis.url, timeout_ms: 1000 }, limits: { shutdown_timeout_ms: 500 } } });
  });
  after(async () => {
    await t?.close();
    await probe?.close();
    await redis?.stop();
  });

  it('keeps CR/LF and RESP syntax in key names, model ids, response and item ids, client names and codes as data', async () => {
    const named = await t.gateway.keys.create({ name: `evil${INJECTION}`.slice(0, 100) });
    assert.equal(t.gateway.keys.get(named.record.id)?.name, `evil${INJECTION}`.slice(0, 100));

    t.gateway.usage.record({ keyId: named.record.id, model: `m${INJECTION}`, at: Date.now(), inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0 });
    await t.gateway.usage.flush();
    const rows = await t.gateway.usage.query({ since: 0, until: Date.now() + 3_600_000, keyId: named.record.id, groupBy: 'model' });
    assert.deepEqual(rows.map((row) => row.model), [`m${INJECTION}`]);

    const { store } = t.gateway.state!.responses;
    const id = `resp_${INJECTION}${'y'.repeat(100_000)}`;
    const response = { id, object: 'response', created_at: 1, status: 'completed', model: 'm', output: [{ type: 'message', id: `msg_${INJECTION}`, role: 'assistant', status: 'completed', content: [] }] };
    assert.equal(await store.put({ id, keyId: named.record.id, created: 1, input: [], response: response as never }), true);
    assert.equal((await store.get(named.record.id, id))?.id, id);
    assert.ok(await store.findItem(named.record.id, `msg_${INJECTION}`));
    const web = await fetch(`${t.url}/v1/responses/${encodeURIComponent(`resp_${INJECTION}`)}`, { headers: { authorization: `Bearer ${named.key}` } });
    assert.equal(web.status, 404);

    const device = await fetch(`${t.url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: INJECTION }) });
    assert.equal(device.status, 200);
    const lookup = await fetch(`${t.url}/auth/device/approve`, { method: 'POST', headers: { authorization: `Bearer ${t.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_code: INJECTION }) });
    assert.equal(lookup.status, 404);

    assert.equal(await probe.command(['GET', 'canary']), 'alive', 'no command ran');
    assert.ok(Number(await probe.command(['DBSIZE'])) > 5, 'nothing was flushed');
  });
});
