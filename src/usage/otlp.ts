/**
 * OpenTelemetry trace export over OTLP/HTTP JSON, without an SDK (llmux.md section 7): one span
 * per model request, with the GenAI semantic conventions, POSTed in batches to
 * `{endpoint}/v1/traces` as `application/json`.
 *
 * The encoding follows the OTLP JSON mapping: trace and span ids as lowercase hex (16 and 8
 * random bytes), times as unix nanoseconds in decimal strings, 64-bit integers as strings, enums
 * as integers. Attributes (semantic conventions for GenAI spans, checked against
 * open-telemetry/semantic-conventions `docs/gen-ai/gen-ai-spans.md` and the attribute registry):
 * - `gen_ai.operation.name` = `chat`; `gen_ai.provider.name`; `gen_ai.request.model`;
 *   `gen_ai.response.model` (when known); `gen_ai.response.finish_reasons` (when known).
 * - `gen_ai.usage.input_tokens` counts ALL input tokens, cached ones included, as the conventions
 *   ask; `gen_ai.usage.cache_read.input_tokens` and `gen_ai.usage.cache_creation.input_tokens`
 *   give the cached parts; `gen_ai.usage.output_tokens`.
 * - `gen_ai.response.time_to_first_chunk`: time to first byte, in seconds (a double).
 * - `http.request.method`, `http.route`, `http.response.status_code`; `error.type` (the gateway's
 *   error code, low cardinality) and span status ERROR when the request failed (an error type, or
 *   a 5xx); otherwise the status stays UNSET, as the conventions recommend.
 * - `llmux.request_id` (the `x-request-id` the client saw, to find the log line) and
 *   `llmux.cost_usd`.
 * Span name `chat {gen_ai.request.model}` (`chat` alone when a request failed before its model
 * was known, as are the model and provider attributes then). Kind SERVER: the span covers the gateway serving the
 * client's request (that is what `http.route` and the status describe), not one upstream call.
 * A valid W3C `traceparent` from the client makes the span a child of the client's span.
 *
 * Privacy: only the fields of `ModelRequestSpan` are read, one by one, so nothing else a caller
 * passes (a key, a body) can reach the collector. No key id either: a trace backend is often
 * shared more widely than the gateway's usage data, and per-key accounting is the ledger's job.
 *
 * Never blocking or failing the caller: `record` only copies the fields into a ring buffer of at
 * most `maxQueue` spans (when full the OLDEST span is dropped: fresher data is worth more once
 * the collector is back). Export runs from a timer, at most one request in flight, each bounded
 * by `timeoutMs`; a failed batch (down, slow, refused) is dropped and counted, never retried, so
 * nothing piles up. Memory: at most `maxQueue` queued spans plus one batch of `maxBatch` in flight.
 */
import { randomFillSync } from 'node:crypto';
import { realTimers } from '../common/timers.ts';
import type { Timers } from '../common/timers.ts';

/** One model request, as the gateway saw it. */
export interface ModelRequestSpan {
  /** When the request arrived, ms since the epoch (fractions kept to the microsecond). */
  startMs: number;
  /** When its answer ended (default: now). */
  endMs?: number | undefined;
  /** The catalog model id the client asked for; absent when the request failed before it was known. */
  requestModel?: string | undefined;
  /** The model that answered, when known (a fallback's id, or the upstream's model name). */
  responseModel?: string | undefined;
  /**
   * The provider, by its well-known name when it has one (`genAiProviderName`), else its
   * configured name; absent when no provider was reached.
   */
  provider?: string | undefined;
  /** Input tokens not read from or written to a cache (as in `TokenUsage`). */
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  cacheReadTokens?: number | undefined;
  cacheCreationTokens?: number | undefined;
  timeToFirstByteMs?: number | undefined;
  finishReasons?: readonly string[] | undefined;
  /** The registered route pattern, e.g. `/v1/messages`. */
  httpRoute: string;
  httpStatus: number;
  httpMethod?: string | undefined;
  /** The gateway error code when the request failed (`upstream_timeout`, `budget_exceeded`, …). */
  errorType?: string | undefined;
  requestId?: string | undefined;
  costUsd?: number | undefined;
  /** The client's W3C `traceparent` header, to join its trace. */
  traceparent?: string | undefined;
}

export interface SpanExporterOptions {
  /** The collector's base URL, e.g. `http://127.0.0.1:4318`; spans go to `{endpoint}/v1/traces`. */
  endpoint: string;
  now?: () => number;
  /** Spans kept while waiting for export (default 2048). */
  maxQueue?: number;
  /** Spans per request (default 512). */
  maxBatch?: number;
  /** How often queued spans are sent (default 5000). */
  flushIntervalMs?: number;
  /** How long one export request may take before it is abandoned (default 10000). */
  timeoutMs?: number;
  /** The flush interval's and request timeout's timers (default: Node's). */
  timers?: Timers;
  serviceName?: string;
  serviceVersion?: string;
  /** Extra request headers, e.g. a collector's auth header (from configuration). */
  headers?: Readonly<Record<string, string>>;
  /** Spans given up: the queue was full, or their export failed. */
  onDrop?: (count: number, reason: 'queue_full' | 'export_failed') => void;
}

export interface SpanExporterStats {
  queued: number;
  inFlight: number;
  exported: number;
  dropped: number;
  failedRequests: number;
}

export interface SpanExporter {
  /** Queues one span; synchronous, never throws, never waits. */
  record(span: ModelRequestSpan): void;
  /** Sends everything queued (one request at a time); never rejects. */
  flush(): Promise<void>;
  /** Stops the timer and flushes; later spans are ignored. */
  close(): Promise<void>;
  stats(): SpanExporterStats;
}

interface QueuedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  startMs: number;
  endMs: number;
  requestModel: string | undefined;
  responseModel: string | undefined;
  provider: string | undefined;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  cacheReadTokens: number | undefined;
  cacheCreationTokens: number | undefined;
  timeToFirstByteMs: number | undefined;
  finishReasons: string[] | undefined;
  httpRoute: string;
  httpStatus: number;
  httpMethod: string;
  errorType: string | undefined;
  requestId: string | undefined;
  costUsd: number | undefined;
}

type AnyValue =
  | { stringValue: string }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } };

interface KeyValue { key: string; value: AnyValue }

const SPAN_KIND_SERVER = 2;
const STATUS_UNSET = 0;
const STATUS_ERROR = 2;

// Random ids from a pool refilled 4 KiB at a time, instead of one crypto call per id.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

function randomHex(bytes: number): string {
  for (;;) {
    if (poolOffset + bytes > POOL_BYTES) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
    poolOffset += bytes;
    // An id of all zeros is invalid in OTLP and W3C trace context.
    if (!/^0+$/.test(hex)) return hex;
  }
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The trace id and parent span id of a W3C `traceparent` header, or undefined when it is not valid. */
export function parseTraceparent(header: string | undefined): { traceId: string; parentSpanId: string } | undefined {
  if (header === undefined) return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (match === null) return undefined;
  const [, version, traceId, parentSpanId, , rest] = match as unknown as [string, string, string, string, string, string | undefined];
  // Version ff is invalid; version 00 has exactly four fields; later versions may add more.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(parentSpanId)) return undefined;
  return { traceId, parentSpanId };
}

/** Unix nanoseconds as a decimal string, from ms with up to microsecond fractions. */
export function unixNanos(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString();
}

function count(value: number | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function stringAttr(key: string, value: string): KeyValue {
  return { key, value: { stringValue: value } };
}

function intAttr(key: string, value: number): KeyValue {
  return { key, value: { intValue: String(value) } };
}

function doubleAttr(key: string, value: number): KeyValue {
  return { key, value: { doubleValue: value } };
}

/** Copies only the known fields: nothing else on the caller's object can reach the collector. */
function capture(span: ModelRequestSpan, nowMs: number): QueuedSpan {
  const parent = parseTraceparent(text(span.traceparent));
  const finish = Array.isArray(span.finishReasons) ? span.finishReasons.filter((r): r is string => typeof r === 'string') : undefined;
  const startMs = Number.isFinite(span.startMs) ? span.startMs : nowMs;
  const endMs = typeof span.endMs === 'number' && Number.isFinite(span.endMs) ? span.endMs : nowMs;
  return {
    traceId: parent?.traceId ?? randomHex(16),
    spanId: randomHex(8),
    parentSpanId: parent?.parentSpanId,
    startMs,
    endMs: Math.max(startMs, endMs),
    requestModel: text(span.requestModel),
    responseModel: text(span.responseModel),
    provider: text(span.provider),
    inputTokens: count(span.inputTokens),
    outputTokens: count(span.outputTokens),
    cacheReadTokens: count(span.cacheReadTokens),
    cacheCreationTokens: count(span.cacheCreationTokens),
    timeToFirstByteMs: typeof span.timeToFirstByteMs === 'number' && Number.isFinite(span.timeToFirstByteMs) && span.timeToFirstByteMs >= 0 ? span.timeToFirstByteMs : undefined,
    finishReasons: finish !== undefined && finish.length > 0 ? finish : undefined,
    httpRoute: String(span.httpRoute),
    httpStatus: Number.isInteger(span.httpStatus) ? span.httpStatus : 0,
    httpMethod: text(span.httpMethod) ?? 'POST',
    errorType: text(span.errorType),
    requestId: text(span.requestId),
    costUsd: typeof span.costUsd === 'number' && Number.isFinite(span.costUsd) && span.costUsd >= 0 ? span.costUsd : undefined,
  };
}

function attributes(s: QueuedSpan): KeyValue[] {
  const out: KeyValue[] = [stringAttr('gen_ai.operation.name', 'chat')];
  if (s.provider !== undefined) out.push(stringAttr('gen_ai.provider.name', s.provider));
  if (s.requestModel !== undefined) out.push(stringAttr('gen_ai.request.model', s.requestModel));
  if (s.responseModel !== undefined) out.push(stringAttr('gen_ai.response.model', s.responseModel));
  if (s.finishReasons !== undefined) {
    out.push({ key: 'gen_ai.response.finish_reasons', value: { arrayValue: { values: s.finishReasons.map((r) => ({ stringValue: r })) } } });
  }
  const cached = (s.cacheReadTokens ?? 0) + (s.cacheCreationTokens ?? 0);
  if (s.inputTokens !== undefined || cached > 0) out.push(intAttr('gen_ai.usage.input_tokens', (s.inputTokens ?? 0) + cached));
  if (s.outputTokens !== undefined) out.push(intAttr('gen_ai.usage.output_tokens', s.outputTokens));
  if (s.cacheReadTokens !== undefined) out.push(intAttr('gen_ai.usage.cache_read.input_tokens', s.cacheReadTokens));
  if (s.cacheCreationTokens !== undefined) out.push(intAttr('gen_ai.usage.cache_creation.input_tokens', s.cacheCreationTokens));
  if (s.timeToFirstByteMs !== undefined) out.push(doubleAttr('gen_ai.response.time_to_first_chunk', s.timeToFirstByteMs / 1000));
  out.push(stringAttr('http.request.method', s.httpMethod), stringAttr('http.route', s.httpRoute), intAttr('http.response.status_code', s.httpStatus));
  const failed = s.errorType !== undefined || s.httpStatus >= 500;
  if (failed) out.push(stringAttr('error.type', s.errorType ?? String(s.httpStatus)));
  if (s.requestId !== undefined) out.push(stringAttr('llmux.request_id', s.requestId));
  if (s.costUsd !== undefined) out.push(doubleAttr('llmux.cost_usd', s.costUsd));
  return out;
}

function otlpSpan(s: QueuedSpan): Record<string, unknown> {
  const failed = s.errorType !== undefined || s.httpStatus >= 500;
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId === undefined ? {} : { parentSpanId: s.parentSpanId }),
    name: s.requestModel === undefined ? 'chat' : `chat ${s.requestModel}`,
    kind: SPAN_KIND_SERVER,
    startTimeUnixNano: unixNanos(s.startMs),
    endTimeUnixNano: unixNanos(s.endMs),
    attributes: attributes(s),
    status: failed ? { code: STATUS_ERROR, message: s.errorType ?? `HTTP ${s.httpStatus}` } : { code: STATUS_UNSET },
  };
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return value;
}

/** An exporter. Throws RangeError for an endpoint that is not an http(s) URL or bad sizes. */
export function createSpanExporter(options: SpanExporterOptions): SpanExporter {
  const base = new URL(options.endpoint);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new RangeError('the OTLP endpoint must be an http:// or https:// URL');
  const url = `${options.endpoint.replace(/\/+$/, '')}/v1/traces`;
  const now = options.now ?? Date.now;
  const maxQueue = Math.floor(positive(options.maxQueue, 2048, 'maxQueue'));
  const maxBatch = Math.floor(positive(options.maxBatch, 512, 'maxBatch'));
  const flushIntervalMs = positive(options.flushIntervalMs, 5000, 'flushIntervalMs');
  const timeoutMs = positive(options.timeoutMs, 10_000, 'timeoutMs');
  const timers = options.timers ?? realTimers;
  const onDrop = options.onDrop;
  const headers = { ...options.headers, 'content-type': 'application/json' };
  const resource = {
    attributes: [
      stringAttr('service.name', options.serviceName ?? 'llmux'),
      ...(options.serviceVersion === undefined ? [] : [stringAttr('service.version', options.serviceVersion)]),
    ],
  };
  const scope = { name: 'llmux', ...(options.serviceVersion === undefined ? {} : { version: options.serviceVersion }) };

  // Ring buffer: `length` spans starting at `head`.
  const ring: Array<QueuedSpan | undefined> = new Array<QueuedSpan | undefined>(maxQueue);
  let head = 0;
  let length = 0;
  let inFlight: Promise<void> | undefined;
  let inFlightCount = 0;
  let exported = 0;
  let dropped = 0;
  let failedRequests = 0;
  let closed = false;
  let scheduled = false;

  function drop(countDropped: number, reason: 'queue_full' | 'export_failed'): void {
    dropped += countDropped;
    if (onDrop === undefined) return;
    try {
      onDrop(countDropped, reason);
    } catch {
      // A faulty callback must not break export or the caller.
    }
  }

  function take(max: number): QueuedSpan[] {
    const batch: QueuedSpan[] = [];
    while (length > 0 && batch.length < max) {
      batch.push(ring[head] as QueuedSpan);
      ring[head] = undefined;
      head = (head + 1) % maxQueue;
      length--;
    }
    return batch;
  }

  async function send(batch: QueuedSpan[]): Promise<void> {
    const controller = new AbortController();
    const timer = timers.setTimeout(() => controller.abort(), timeoutMs);
    try {
      const body = JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans: batch.map(otlpSpan) }] }] });
      const response = await fetch(url, { method: 'POST', headers, body, signal: controller.signal });
      // Read the answer to the end (under the same timeout) so the connection is freed.
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`collector answered ${response.status}`);
      exported += batch.length;
    } catch {
      failedRequests++;
      drop(batch.length, 'export_failed');
    } finally {
      timers.clearTimeout(timer);
    }
  }

  /** Starts one export if none is in flight; when it ends, starts the next if a full batch waits. */
  function exportNext(): void {
    if (inFlight !== undefined || length === 0) return;
    const batch = take(maxBatch);
    inFlightCount = batch.length;
    inFlight = send(batch).finally(() => {
      inFlight = undefined;
      inFlightCount = 0;
      if (length >= maxBatch && !closed) exportNext();
    });
  }

  const timer = timers.setInterval(exportNext, flushIntervalMs);
  timer.unref();

  async function flush(): Promise<void> {
    while (inFlight !== undefined || length > 0) {
      if (inFlight === undefined) exportNext();
      await inFlight;
    }
  }

  let closing: Promise<void> | undefined;

  return {
    record(span) {
      if (closed) return;
      let queued: QueuedSpan;
      try {
        queued = capture(span, now());
      } catch {
        drop(1, 'export_failed');
        return;
      }
      if (length === maxQueue) {
        ring[head] = undefined;
        head = (head + 1) % maxQueue;
        length--;
        drop(1, 'queue_full');
      }
      ring[(head + length) % maxQueue] = queued;
      length++;
      // A full batch goes out soon, off the caller's stack.
      if (length >= maxBatch && inFlight === undefined && !scheduled) {
        scheduled = true;
        setImmediate(() => {
          scheduled = false;
          exportNext();
        });
      }
    },
    flush,
    close() {
      if (closing !== undefined) return closing;
      closed = true;
      timers.clearInterval(timer);
      closing = flush();
      return closing;
    },
    stats() {
      return { queued: length, inFlight: inFlightCount, exported, dropped, failedRequests };
    },
  };
}
