/**
 * Per-deployment counters for `/metrics`, the dashboard and `llmux models` (llmux.md section 10):
 * attempts, errors by code, time to first byte, and the latency strategy's moving average. Kept in
 * this process, as every other metric is. Labels are bounded: deployments come from the config and
 * the catalog, codes are HTTP statuses (100–599) or the two failures without one.
 */

/** Weight of a new sample in the moving average of the time to first byte. */
export const LATENCY_ALPHA = 0.3;

export interface DeploymentStats {
  /** Attempts started. */
  requests: number;
  /** Failed attempts by code: the upstream's status, `unreachable` or `timeout`. */
  errors: Map<string, number>;
  ttfbCount: number;
  ttfbSumMs: number;
  /** Moving average of the time to first byte; undefined before the first sample. */
  ttfbAverageMs: number | undefined;
}

export function createStats(): DeploymentStats {
  return { requests: 0, errors: new Map(), ttfbCount: 0, ttfbSumMs: 0, ttfbAverageMs: undefined };
}

/** Counts a failed attempt under a bounded code. */
export function countError(stats: DeploymentStats, status: number | undefined, failure: 'unreachable' | 'timeout' | undefined): void {
  const code = failure ?? (status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other');
  stats.errors.set(code, (stats.errors.get(code) ?? 0) + 1);
}

/** Adds a time-to-first-byte sample. */
export function countTtfb(stats: DeploymentStats, ms: number): void {
  if (!Number.isFinite(ms) || ms < 0) return;
  stats.ttfbCount++;
  stats.ttfbSumMs += ms;
  stats.ttfbAverageMs = stats.ttfbAverageMs === undefined ? ms : stats.ttfbAverageMs + LATENCY_ALPHA * (ms - stats.ttfbAverageMs);
}

/** One deployment as the metrics read it. */
export interface DeploymentSnapshot {
  /** `{provider}/{upstream_id}`: the metrics label. */
  deployment: string;
  provider: string;
  upstreamId: string;
  requests: number;
  errors: Record<string, number>;
  ttfbCount: number;
  ttfbSumMs: number;
  ttfbAverageMs: number | undefined;
  inFlight: number;
  /** Resting now, and for how much longer (0 when not). */
  resting: boolean;
  restingForMs: number;
}
