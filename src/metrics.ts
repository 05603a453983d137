/**
 * Counters for `GET /metrics` (admin key), in the Prometheus text format. Updated once per
 * request, never per chunk.
 */
import type { RequestRecord } from './request-record.ts';
import { promptTokens } from './translate/usage.ts';

export interface Metrics {
  observe(status: number, record: RequestRecord): void;
  render(gauges: { openStreams: number; keysTracked: number }): string;
}

export function createMetrics(): Metrics {
  const requests = new Map<string, number>();
  let tokensIn = 0;
  let tokensOut = 0;
  let attempts = 0;
  let retries = 0;
  let streamErrors = 0;

  return {
    observe(status, record) {
      // Only registered route patterns become labels, so a scan of random URLs can't grow the map.
      const label = `${record.route ?? 'other'}|${status}`;
      requests.set(label, (requests.get(label) ?? 0) + 1);
      if (record.usage !== undefined) {
        tokensIn += promptTokens(record.usage);
        tokensOut += record.usage.outputTokens;
      }
      attempts += record.attempts.length;
      if (record.attempts.length > 1) retries += record.attempts.length - 1;
      if (record.streamError !== undefined) streamErrors++;
    },
    render({ openStreams, keysTracked }) {
      const lines = [
        '# HELP llmux_requests_total Requests answered, by route and status.',
        '# TYPE llmux_requests_total counter',
      ];
      for (const [label, n] of requests) {
        const [route, status] = label.split('|');
        lines.push(`llmux_requests_total{route="${route}",status="${status}"} ${n}`);
      }
      lines.push(
        '# HELP llmux_tokens_total Tokens reported by upstreams.',
        '# TYPE llmux_tokens_total counter',
        `llmux_tokens_total{direction="in"} ${tokensIn}`,
        `llmux_tokens_total{direction="out"} ${tokensOut}`,
        '# TYPE llmux_upstream_attempts_total counter',
        `llmux_upstream_attempts_total ${attempts}`,
        '# TYPE llmux_upstream_retries_total counter',
        `llmux_upstream_retries_total ${retries}`,
        '# TYPE llmux_stream_errors_total counter',
        `llmux_stream_errors_total ${streamErrors}`,
        '# TYPE llmux_open_requests gauge',
        `llmux_open_requests ${openStreams}`,
        '# TYPE llmux_limiter_keys gauge',
        `llmux_limiter_keys ${keysTracked}`,
        '',
      );
      return lines.join('\n');
    },
  };
}
