import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMetrics } from '../../src/gateway/metrics.ts';
import type { RequestRecord } from '../../src/gateway/request-record.ts';
import type { DeploymentSnapshot } from '../../src/routing/index.ts';

const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 20, cacheCreationTokens: 1 };

describe('metrics', () => {
  it('shows llmux_state_degraded only for a gateway with shared state, 1 while its server is away', () => {
    const metrics = createMetrics();
    assert.doesNotMatch(metrics.render({ openStreams: 0, keysTracked: 0 }), /llmux_state_degraded/);
    assert.match(metrics.render({ openStreams: 0, keysTracked: 0, stateDegraded: false }), /^# TYPE llmux_state_degraded gauge\nllmux_state_degraded 0$/m);
    assert.match(metrics.render({ openStreams: 0, keysTracked: 0, stateDegraded: true }), /^llmux_state_degraded 1$/m);
  });

  it('labels tokens and cost by the model that answered, never by a model name no provider answered for', () => {
    const metrics = createMetrics();
    metrics.observe(200, { route: '/v1/messages', model: 'claude-test', provider: 'anthropic', usage, costUsd: 0.25, ttfbMs: 120, attempts: [] }, 900);
    // A client's model name, refused before any provider: usage cannot be set then, and must not become a label if it were.
    metrics.observe(404, { route: '/v1/messages', model: 'client-typed-this', usage, attempts: [] } as RequestRecord, 3);
    const text = metrics.render({ openStreams: 0, keysTracked: 0 });
    assert.match(text, /^llmux_tokens_total\{model="claude-test",direction="in"\} 31$/m, 'in counts cached input too');
    assert.match(text, /^llmux_tokens_total\{model="claude-test",direction="out"\} 5$/m);
    assert.match(text, /^llmux_cost_usd_total\{model="claude-test"\} 0\.25$/m);
    assert.ok(!text.includes('client-typed-this'));
    assert.match(text, /^llmux_request_duration_seconds_bucket\{route="\/v1\/messages",provider="anthropic",le="1"\} 1$/m);
    assert.match(text, /^llmux_request_duration_seconds_bucket\{route="\/v1\/messages",provider="anthropic",le="0\.5"\} 0$/m);
    assert.match(text, /^llmux_time_to_first_byte_seconds_sum\{route="\/v1\/messages",provider="anthropic"\} 0\.12$/m);
    assert.match(text, /^llmux_request_duration_seconds_count\{route="\/v1\/messages",provider=""\} 1$/m, 'no provider reached: empty');
    assert.match(text, /^llmux_requests_total\{route="\/v1\/messages",status="404"\} 1$/m);
  });

  it('counts failed upstream attempts by provider and status or code, and not a client that left', () => {
    const metrics = createMetrics();
    metrics.observe(200, {
      route: '/v1/chat/completions', model: 'gpt-test', provider: 'backup', usage, attempts: [
        { model: 'gpt-test', provider: 'openai', status: 503, ms: 5 },
        { model: 'gpt-test', provider: 'openai', error: 'upstream_timeout', ms: 5 },
        { model: 'gpt-test', provider: 'backup', status: 200, ms: 5 },
      ],
    }, 50);
    metrics.observe(499, { route: '/v1/chat/completions', attempts: [{ model: 'gpt-test', provider: 'openai', error: 'client_closed', ms: 1 }] }, 10);
    const text = metrics.render({ openStreams: 2, keysTracked: 3 });
    assert.match(text, /^llmux_upstream_errors_total\{provider="openai",code="503"\} 1$/m);
    assert.match(text, /^llmux_upstream_errors_total\{provider="openai",code="upstream_timeout"\} 1$/m);
    assert.ok(!text.includes('client_closed'));
    assert.match(text, /^llmux_upstream_attempts_total 4$/m);
    assert.match(text, /^llmux_upstream_retries_total 2$/m);
    assert.match(text, /^llmux_request_duration_seconds_count\{route="\/v1\/chat\/completions",provider="openai"\} 1$/m, 'a request that failed counts under the provider tried last');
    assert.match(text, /^llmux_open_requests 2$/m);
    assert.match(text, /^llmux_limiter_keys 3$/m);
    for (const line of text.split('\n').filter((l) => l.startsWith('# TYPE'))) assert.match(line, /^# TYPE llmux_\w+ (counter|histogram|gauge)$/);
  });

  it('shows each deployment tried: attempts, errors by code, time to first byte, in flight and resting, its label escaped', () => {
    const metrics = createMetrics();
    const snapshot = (deployment: string, fields: Partial<DeploymentSnapshot>): DeploymentSnapshot => ({
      deployment, provider: deployment.split('/')[0]!, upstreamId: deployment.split('/')[1]!, requests: 0, errors: {}, ttfbCount: 0, ttfbSumMs: 0,
      ttfbAverageMs: undefined, inFlight: 0, resting: false, restingForMs: 0, ...fields,
    });
    const text = metrics.render({
      openStreams: 0,
      keysTracked: 0,
      deployments: [
        snapshot('openai/gpt-5', { requests: 12, errors: { '429': 2, unreachable: 1 }, ttfbCount: 9, ttfbSumMs: 1800, inFlight: 1 }),
        snapshot('bedrock/anthropic.claude"x', { requests: 3, resting: true, restingForMs: 4000 }),
        snapshot('never/tried', {}),
      ],
    });
    assert.match(text, /^llmux_deployment_requests_total\{deployment="openai\/gpt-5",provider="openai"\} 12$/m);
    assert.match(text, /^llmux_deployment_errors_total\{deployment="openai\/gpt-5",code="429"\} 2$/m);
    assert.match(text, /^llmux_deployment_errors_total\{deployment="openai\/gpt-5",code="unreachable"\} 1$/m);
    assert.match(text, /^llmux_deployment_time_to_first_byte_seconds_sum\{deployment="openai\/gpt-5"\} 1\.8$/m);
    assert.match(text, /^llmux_deployment_time_to_first_byte_seconds_count\{deployment="openai\/gpt-5"\} 9$/m);
    assert.match(text, /^llmux_deployment_in_flight\{deployment="openai\/gpt-5"\} 1$/m);
    assert.match(text, /^llmux_deployment_resting\{deployment="bedrock\/anthropic\.claude\\"x"\} 1$/m);
    assert.ok(!text.includes('never/tried'), 'a deployment never tried is not shown');
    assert.doesNotMatch(metrics.render({ openStreams: 0, keysTracked: 0, deployments: [] }), /llmux_deployment_/);
  });
});
