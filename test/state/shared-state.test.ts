/**
 * The gateway on a state server that hangs: every read it makes there is bounded by
 * `state.timeout_ms`, whatever the route (llmux.md section 6).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestGateway, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
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
