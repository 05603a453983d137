/**
 * Routing's wiring: what the log says of a rest (keys by label, never by value), and which
 * deployments' credentials count as resolving.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createGatewayRouting, restMessage } from '../../src/gateway/routing.ts';
import { loadConfig } from '../../src/config/load.ts';
import type { LogMessage, LogRecord } from '../../src/gateway/request-log.ts';

describe('restMessage', () => {
  it('names a deployment, a key on a deployment, and a refused key by its label', () => {
    assert.equal(restMessage({ kind: 'deployment', provider: 'openai', deployment: 'openai/gpt-5', key: undefined, cause: '503', restMs: 5_000 }), 'routing: deployment "openai/gpt-5" rests for 5 s after HTTP 503');
    assert.equal(restMessage({ kind: 'deployment', provider: 'openai', deployment: 'openai/gpt-5', key: undefined, cause: 'unreachable', restMs: 10_000 }), 'routing: deployment "openai/gpt-5" rests for 10 s after unreachable');
    assert.equal(restMessage({ kind: 'deployment_key', provider: 'openai', deployment: 'openai/gpt-5', key: 'OPENAI_KEY_B', cause: '429', restMs: 2_500 }), 'routing: key OPENAI_KEY_B on deployment "openai/gpt-5" rests for 2.5 s after HTTP 429');
    assert.match(restMessage({ kind: 'key', provider: 'openai', deployment: undefined, key: 'api_keys[1]', cause: '401', restMs: 300_000 }), /^routing: provider "openai" refused its key api_keys\[1\] \(HTTP 401\); the key rests for 300 s/);
  });
});

describe('createGatewayRouting', () => {
  it('counts a pool key as usable when its value resolves, and a keyless provider by the catalog\'s rule', () => {
    const config = loadConfig({
      env: { K_A: 'sk-a' },
      file: {
        builtin_catalog: false,
        providers: {
          pool: { format: 'openai', base_url: 'http://pool.invalid/v1', api_keys: ['env:K_A', 'env:K_B'] },
          local: { format: 'openai', base_url: 'http://127.0.0.1:1/v1' },
        },
        models: [
          { id: 'pooled', provider: 'pool', upstream_id: 'm' },
          { id: 'local-model', provider: 'local', upstream_id: 'm' },
        ],
      },
    });
    const lines: Array<LogRecord | LogMessage> = [];
    const routing = createGatewayRouting({
      config,
      provider: (id) => config.providers[id],
      isModel: () => true,
      isConfigured: () => true,
      state: undefined,
      log: (line) => lines.push(line),
      now: Date.now,
      random: Math.random,
    });
    try {
      const pooled = config.models[0]!;
      const plan = routing.router.plan(pooled, { keyId: 'key_1' });
      assert.ok(!(plan instanceof Promise) && plan.ok);
      assert.deepEqual(plan.candidates[0]?.keys.map((k) => k.label), ['K_A'], 'K_B does not resolve');
      const local = routing.router.plan(config.models[1]!, { keyId: 'key_1' });
      assert.ok(!(local instanceof Promise) && local.ok);
    } finally {
      routing.close();
    }
  });
});
