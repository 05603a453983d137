/**
 * Micro-benchmark of what usage accounting adds to each request (issue 17): the `/metrics` update,
 * the usage ledger's record (and its once-a-second flush, spread over the requests it wrote), the
 * budget check of a key with a budget, and with telemetry on, queueing and exporting a span. Per
 * request, against the CPU llmux spends on one chat JSON pass-through request (the load bench's
 * figure in bench/RESULTS.md; target: at most 5% of it for the ledger and the metrics).
 *
 *   npx tsx bench/usage.ts [--requests 200000] [--rounds 5]
 *
 * Each figure is the median over rounds of CPU time (user + system of this process) per operation,
 * after a warm-up round. Records rotate over 100 keys × 4 models, as a busy gateway's would; the
 * budget check reads a key with 60 days of spend (its worst case).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createMetrics } from '../src/gateway/metrics.ts';
import type { RequestRecord } from '../src/gateway/request-record.ts';
import { createFileLedger } from '../src/usage/ledger.ts';
import { createSpanExporter } from '../src/usage/otlp.ts';
import { createUsageRecorder } from '../src/usage/recorder.ts';
import { budgetRemainingHeader, currentBudgetStatus } from '../src/usage/budget.ts';
import { isEntryPoint } from './entry.ts';

export interface UsageBenchResult {
  /** Nanoseconds per request, median over rounds. */
  metricsNs: number;
  ledgerRecordNs: number;
  /** One flush's CPU divided by the requests it wrote. */
  ledgerFlushNs: number;
  budgetNs: number;
  spanRecordNs: number;
  /** Serialising and sending spans to a local collector, per span. */
  spanExportNs: number;
  /** Rows the ledger held after the last round: proof the records were kept. */
  ledgerRequests: number;
}

const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));

function cpuNs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** The median over `rounds`, after a warm-up, of what `round` returns (CPU ns per operation). */
async function medianOf(rounds: number, round: () => number | Promise<number>): Promise<number> {
  await round();
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) samples.push(await round());
  return median(samples);
}

/** CPU ns per operation of `run(n)`, which does n operations. */
function perOp(rounds: number, n: number, run: (n: number) => void): Promise<number> {
  return medianOf(rounds, () => {
    const start = cpuNs();
    run(n);
    return (cpuNs() - start) / n;
  });
}

/** An OTLP collector that reads and accepts everything, in a process of its own so its CPU is not counted. */
function startCollector(): Promise<{ child: ChildProcess; port: number }> {
  const script = "require('http').createServer((q, s) => { q.resume(); q.on('end', () => s.end('{}')); })"
    + ".listen(0, '127.0.0.1', function () { console.log(this.address().port); });";
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout?.once('data', (chunk: Buffer) => resolve({ child, port: Number(chunk.toString().trim()) }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the collector exited (${code})`)));
  });
}

function records(count: number): RequestRecord[] {
  const models = ['bench-chat', 'bench-messages', 'claude-sonnet-4-5', 'gpt-4.1-mini'];
  return Array.from({ length: count }, (_, i) => ({
    route: '/v1/chat/completions',
    format: 'chat' as const,
    keyId: `key_${(i % 100).toString(16).padStart(16, '0')}`,
    model: models[i % models.length] as string,
    requestedModel: models[i % models.length] as string,
    provider: 'bench-openai',
    stream: false,
    translated: false,
    ttfbMs: 3,
    usage: { inputTokens: 12 + (i % 7), outputTokens: 9, cacheReadTokens: 0, cacheCreationTokens: 0 },
    costUsd: 0.0001234,
    attempts: [{ model: 'bench-chat', provider: 'bench-openai', status: 200, ms: 3 }],
  }));
}

export async function measureUsageCost(options: { requests: number; rounds: number }): Promise<UsageBenchResult> {
  const { requests, rounds } = options;
  const home = mkdtempSync(join(tmpdir(), 'llmux-bench-usage-'));
  const { child: collector, port } = await startCollector();
  try {
    const sample = records(1_000);
    const finished = { requestId: 'req_1', method: 'POST', status: 200, startedMs: Date.now(), endedMs: Date.now() + 5, traceparent: undefined };

    const metrics = createMetrics();
    const metricsNs = await perOp(rounds, requests, (n) => {
      for (let i = 0; i < n; i++) metrics.observe(200, sample[i % sample.length] as RequestRecord, 5);
    });

    const ledger = await createFileLedger({ dir: join(home, 'usage'), flushIntervalMs: 3_600_000 });
    const recorder = createUsageRecorder({ ledger });
    const ledgerRecordNs = await perOp(rounds, requests, (n) => {
      for (let i = 0; i < n; i++) recorder.observe(finished, sample[i % sample.length] as RequestRecord);
    });
    // A flush writes what one second of traffic recorded: at ~3,500 requests/s, this many.
    const perSecond = 3_500;
    const ledgerFlushNs = await medianOf(rounds, async () => {
      for (let i = 0; i < perSecond; i++) recorder.observe(finished, sample[i % sample.length] as RequestRecord);
      // Only the flush: the records were measured above.
      const start = cpuNs();
      await ledger.flush();
      return (cpuNs() - start) / perSecond;
    });

    const budgetKey = 'key_budgeted00000001';
    for (let d = 0; d < 60; d++) {
      ledger.record({ keyId: budgetKey, model: 'm', at: Date.now() - d * 86_400_000, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.01 });
    }
    const budget = { usd: 25, period: 'month' as const };
    let header = '';
    const budgetNs = await perOp(rounds, requests, (n) => {
      for (let i = 0; i < n; i++) header = budgetRemainingHeader(currentBudgetStatus(budget, budgetKey, ledger, Date.now()));
    });
    if (!/^\d+\.\d{4}$/.test(header)) throw new Error(`unexpected budget header ${header}`);
    const counted = await ledger.query({ since: 0, until: Date.now() + 3_600_000, keyId: 'all', groupBy: 'key' });
    await ledger.close();

    const endpoint = `http://127.0.0.1:${port}`;
    // The default queue (2,048 spans, the oldest dropped when full) and no export while measuring.
    const queueOnly = createSpanExporter({ endpoint, flushIntervalMs: 3_600_000, maxBatch: 1_000_000 });
    const spanRecorder = createUsageRecorder({ ledger: { ...ledger, record: () => {} }, exporter: queueOnly });
    const spanRecordNs = await perOp(rounds, Math.min(requests, 100_000), (n) => {
      for (let i = 0; i < n; i++) spanRecorder.observe(finished, sample[i % sample.length] as RequestRecord);
    });
    await queueOnly.close();
    const exporting = createSpanExporter({ endpoint, flushIntervalMs: 3_600_000 });
    const batch = 2_048;
    const spanExportNs = await medianOf(rounds, async () => {
      for (let i = 0; i < batch; i++) exporting.record({ startMs: 1, endMs: 2, requestModel: 'bench-chat', provider: 'openai', inputTokens: 12, outputTokens: 9, httpRoute: '/v1/chat/completions', httpStatus: 200 });
      const start = cpuNs();
      await exporting.flush();
      return (cpuNs() - start) / batch;
    });
    if (exporting.stats().exported === 0) throw new Error('no span reached the local collector');
    await exporting.close();

    return {
      metricsNs,
      ledgerRecordNs,
      ledgerFlushNs,
      budgetNs,
      spanRecordNs,
      spanExportNs,
      ledgerRequests: counted.reduce((sum, row) => sum + row.requests, 0),
    };
  } finally {
    collector.kill();
    rmSync(home, { recursive: true, force: true });
  }
}

/** llmux's CPU µs per chat JSON pass-through request, from the last full bench run. */
export function jsonPassThroughCpuUs(resultsMarkdown: string): number | undefined {
  const line = resultsMarkdown.split('\n').find((l) => l.startsWith('| chat JSON pass-through | llmux |'));
  // | scenario | proxy | req/s | p50 ms | p99 ms | CPU µs/req | …
  const cell = line?.split('|')[6]?.trim();
  const us = Number(cell);
  return cell !== undefined && cell !== '' && Number.isFinite(us) && us > 0 ? us : undefined;
}

/** The table printed (and kept in RESULTS.md by the full bench). */
export function formatUsageBench(r: UsageBenchResult, baselineUs: number | undefined): string {
  const share = (ns: number) => (baselineUs === undefined ? '' : ` (${((ns / 1000 / baselineUs) * 100).toFixed(2)}%)`);
  const accounting = r.metricsNs + r.ledgerRecordNs + r.ledgerFlushNs;
  const rows: Array<[string, string]> = [
    ['metrics.observe (counters, 2 histograms)', `${r.metricsNs.toFixed(0)} ns`],
    ['ledger record (via the recorder)', `${r.ledgerRecordNs.toFixed(0)} ns`],
    ['ledger flush, per request written', `${r.ledgerFlushNs.toFixed(0)} ns`],
    ['ledger + metrics per request', `${accounting.toFixed(0)} ns${share(accounting)}`],
    ['budget check + header (key with a budget)', `${r.budgetNs.toFixed(0)} ns${share(r.budgetNs)}`],
    ['telemetry on: span queued', `${r.spanRecordNs.toFixed(0)} ns${share(r.spanRecordNs)}`],
    ['telemetry on: span encoded and sent, per span', `${r.spanExportNs.toFixed(0)} ns${share(r.spanExportNs)}`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const base = baselineUs === undefined
    ? 'no chat JSON pass-through figure in bench/RESULTS.md to compare with'
    : `percentages: of ${baselineUs} µs, llmux's CPU per chat JSON pass-through request in bench/RESULTS.md (target for ledger + metrics: <= 5%)`;
  return [`${'measure'.padEnd(width)}  result`, `${'-'.repeat(width)}  ${'-'.repeat(30)}`, ...rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`), '', base, ''].join('\n');
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({ options: { requests: { type: 'string' }, rounds: { type: 'string' } } });
  const result = await measureUsageCost({ requests: Number(values.requests ?? 200_000), rounds: Number(values.rounds ?? 5) });
  let baseline: number | undefined;
  try {
    baseline = jsonPassThroughCpuUs(readFileSync(RESULTS, 'utf8'));
  } catch {
    baseline = undefined;
  }
  process.stdout.write(formatUsageBench(result, baseline));
}
