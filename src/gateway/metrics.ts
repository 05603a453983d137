/**
 * `GET /metrics` (admin key), in the Prometheus text format (llmux.md sections 4 and 7). Updated
 * once per request, when its response has closed; never per chunk.
 *
 * Labels come only from configuration and the catalog, so their number stays bounded whatever
 * clients send: `route` is the registered route pattern (`other` when none matched), `provider` a
 * configured provider id (the one that answered, else the last one tried; empty when none was),
 * `model` the catalog id of the model that answered (only set once one did), `code` an upstream
 * HTTP status or one of the gateway's own error codes, `status` the status llmux answered.
 *
 * Series (what changed from before issue 17: `llmux_tokens_total` gained the `model` label; sum
 * it by `direction` for the old series):
 * - `llmux_requests_total{route,status}`
 * - `llmux_request_duration_seconds{route,provider}` and `llmux_time_to_first_byte_seconds{route,provider}`
 *   (histograms; time to first byte as in the log line: from the request going upstream)
 * - `llmux_tokens_total{model,direction}` (`in` counts every input token, cached ones too; `out`)
 * - `llmux_cost_usd_total{model}` at the catalog's prices
 * - `llmux_upstream_errors_total{provider,code}`: failed upstream attempts, retried or not
 * - `llmux_upstream_attempts_total`, `llmux_upstream_retries_total`, `llmux_stream_errors_total`,
 *   and the gauges `llmux_open_requests`, `llmux_limiter_keys`, and with shared state
 *   `llmux_state_degraded` (1 while the state server is not answering)
 * - per deployment (llmux.md section 10; `deployment` is `{provider}/{upstream_id}` of a configured,
 *   built-in or discovered model, never a client's words), from the router's own counters:
 *   `llmux_deployment_requests_total{deployment,provider}`, `llmux_deployment_errors_total{deployment,code}`,
 *   `llmux_deployment_time_to_first_byte_seconds{deployment}` (a summary: `_sum` and `_count`),
 *   and the gauges `llmux_deployment_in_flight{deployment}` and `llmux_deployment_resting{deployment}`
 *   (1 while it rests). Only deployments that were tried (or rest) are shown.
 */
import type { RequestRecord } from './request-record.ts';
import { promptTokens } from '../formats/usage.ts';
import { createCounter, createHistogram, escapeLabelValue, formatValue } from '../usage/histogram.ts';
import type { DeploymentSnapshot } from '../routing/index.ts';

export interface Metrics {
  /** One finished request: the status it was answered with and how long it took. */
  observe(status: number, record: RequestRecord, durationMs: number): void;
  /** `stateDegraded` is shown only for a gateway with shared state; `deployments`: the router's snapshot. */
  render(gauges: { openStreams: number; keysTracked: number; stateDegraded?: boolean | undefined; deployments?: readonly DeploymentSnapshot[] }): string;
}

const NO_ROUTE = 'other';
const NO_PROVIDER = '';

export function createMetrics(): Metrics {
  const requests = createCounter({ labelNames: ['route', 'status'] });
  const duration = createHistogram({ labelNames: ['route', 'provider'] });
  const firstByte = createHistogram({ labelNames: ['route', 'provider'] });
  const tokens = createCounter({ labelNames: ['model', 'direction'] });
  const cost = createCounter({ labelNames: ['model'] });
  const upstreamErrors = createCounter({ labelNames: ['provider', 'code'] });
  let attempts = 0;
  let retries = 0;
  let streamErrors = 0;

  return {
    observe(status, record, durationMs) {
      const route = record.route ?? NO_ROUTE;
      // The provider that answered, else the last one tried (a request that failed upstream).
      const provider = record.provider ?? record.attempts[record.attempts.length - 1]?.provider ?? NO_PROVIDER;
      requests.inc({ route, status: String(status) });
      const where = { route, provider };
      duration.observe(where, durationMs / 1000);
      if (record.ttfbMs !== undefined) firstByte.observe(where, record.ttfbMs / 1000);
      // A usage is only recorded once a catalog model answered, so `model` is the catalog's id.
      if (record.usage !== undefined && record.provider !== undefined && record.model !== undefined) {
        const model = record.model;
        tokens.inc({ model, direction: 'in' }, promptTokens(record.usage));
        tokens.inc({ model, direction: 'out' }, record.usage.outputTokens);
        cost.inc({ model }, record.costUsd ?? 0);
      }
      for (const attempt of record.attempts) {
        if (attempt.error !== undefined && attempt.error !== 'client_closed') upstreamErrors.inc({ provider: attempt.provider, code: attempt.error });
        else if (attempt.status !== undefined && attempt.status >= 400) upstreamErrors.inc({ provider: attempt.provider, code: String(attempt.status) });
      }
      attempts += record.attempts.length;
      if (record.attempts.length > 1) retries += record.attempts.length - 1;
      if (record.streamError !== undefined) streamErrors++;
    },
    render({ openStreams, keysTracked, stateDegraded, deployments = [] }) {
      return requests.render('llmux_requests_total', 'Requests answered, by route pattern and status.')
        + duration.render('llmux_request_duration_seconds', 'Time from a request arriving to its response closing, by route pattern and provider.')
        + firstByte.render('llmux_time_to_first_byte_seconds', 'Time from a model request going upstream to its first byte, by route pattern and provider.')
        + tokens.render('llmux_tokens_total', 'Tokens reported by upstreams, by the model that answered; in counts cached input tokens too.')
        + cost.render('llmux_cost_usd_total', 'Cost in USD at the catalog prices, by the model that answered.')
        + upstreamErrors.render('llmux_upstream_errors_total', 'Failed upstream attempts, by provider and HTTP status or error code.')
        + [
          '# HELP llmux_upstream_attempts_total Requests sent upstream, retries and fallbacks included.',
          '# TYPE llmux_upstream_attempts_total counter',
          `llmux_upstream_attempts_total ${attempts}`,
          '# HELP llmux_upstream_retries_total Upstream attempts after the first of a request.',
          '# TYPE llmux_upstream_retries_total counter',
          `llmux_upstream_retries_total ${retries}`,
          '# HELP llmux_stream_errors_total Streams that ended early: an in-stream error, or the client left.',
          '# TYPE llmux_stream_errors_total counter',
          `llmux_stream_errors_total ${streamErrors}`,
          '# HELP llmux_open_requests Requests being answered now.',
          '# TYPE llmux_open_requests gauge',
          `llmux_open_requests ${openStreams}`,
          '# HELP llmux_limiter_keys Keys the limiter holds state for.',
          '# TYPE llmux_limiter_keys gauge',
          `llmux_limiter_keys ${keysTracked}`,
          ...(stateDegraded === undefined ? [] : [
            '# HELP llmux_state_degraded 1 while the shared-state server is not answering (limits and keys are this process\'s own, or model requests are refused, per state.on_failure).',
            '# TYPE llmux_state_degraded gauge',
            `llmux_state_degraded ${stateDegraded ? 1 : 0}`,
          ]),
          '',
        ].join('\n')
        + renderDeployments(deployments);
    },
  };
}

/** The per-deployment series, from the router's snapshot (its counters live there, not here). */
export function renderDeployments(all: readonly DeploymentSnapshot[]): string {
  const shown = all.filter((d) => d.requests > 0 || d.inFlight > 0 || d.resting);
  if (shown.length === 0) return '';
  const label = (d: DeploymentSnapshot): string => `deployment="${escapeLabelValue(d.deployment)}"`;
  const lines = [
    '# HELP llmux_deployment_requests_total Attempts sent to each deployment, retries and fallbacks included.',
    '# TYPE llmux_deployment_requests_total counter',
    ...shown.map((d) => `llmux_deployment_requests_total{${label(d)},provider="${escapeLabelValue(d.provider)}"} ${d.requests}`),
    '# HELP llmux_deployment_errors_total Failed attempts at each deployment, by the upstream\'s HTTP status, or unreachable / timeout.',
    '# TYPE llmux_deployment_errors_total counter',
    ...shown.flatMap((d) => Object.keys(d.errors).sort().map((code) => `llmux_deployment_errors_total{${label(d)},code="${escapeLabelValue(code)}"} ${d.errors[code]}`)),
    '# HELP llmux_deployment_time_to_first_byte_seconds Time from an attempt going upstream to its answer\'s first byte, per deployment.',
    '# TYPE llmux_deployment_time_to_first_byte_seconds summary',
    ...shown.flatMap((d) => [
      `llmux_deployment_time_to_first_byte_seconds_sum{${label(d)}} ${formatValue(d.ttfbSumMs / 1000)}`,
      `llmux_deployment_time_to_first_byte_seconds_count{${label(d)}} ${d.ttfbCount}`,
    ]),
    '# HELP llmux_deployment_in_flight Attempts at each deployment now (streams count until they end), every process\'s with shared state.',
    '# TYPE llmux_deployment_in_flight gauge',
    ...shown.map((d) => `llmux_deployment_in_flight{${label(d)}} ${d.inFlight}`),
    '# HELP llmux_deployment_resting 1 while the deployment rests after failures (a cooldown): requests go to its other deployments.',
    '# TYPE llmux_deployment_resting gauge',
    ...shown.map((d) => `llmux_deployment_resting{${label(d)}} ${d.resting ? 1 : 0}`),
    '',
  ];
  return lines.join('\n');
}
