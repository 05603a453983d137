import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSpanExporter, parseTraceparent, unixNanos } from '../../src/usage/otlp.ts';
import type { ModelRequestSpan } from '../../src/usage/otlp.ts';
import { createManualClock } from '../helpers/clock.ts';
import { waitUntil } from '../helpers/wait.ts';

interface Received {
  path: string | undefined;
  method: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

interface Collector {
  url: string;
  received: Received[];
  /** Most requests open at the same time. */
  maxConcurrent: number;
  close(): Promise<void>;
}

/** A fake collector on 127.0.0.1:0; `answer` decides what to do with each request. */
async function startCollector(answer: (req: IncomingMessage, res: ServerResponse, body: string) => void = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{}');
}): Promise<Collector> {
  const received: Received[] = [];
  let open = 0;
  const state = { maxConcurrent: 0 };
  const server: Server = createServer((req, res) => {
    open++;
    state.maxConcurrent = Math.max(state.maxConcurrent, open);
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      received.push({ path: req.url, method: req.method, contentType: req.headers['content-type'], body: JSON.parse(text) });
      answer(req, res, text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    get maxConcurrent() {
      return state.maxConcurrent;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const START = Date.UTC(2026, 2, 14, 10, 0, 0);

function span(extra: Partial<ModelRequestSpan> = {}): ModelRequestSpan {
  return {
    startMs: START,
    endMs: START + 1234.5,
    requestModel: 'claude-haiku-4-5',
    responseModel: 'claude-haiku-4-5-20251001',
    provider: 'anthropic',
    inputTokens: 100,
    outputTokens: 42,
    cacheReadTokens: 1000,
    cacheCreationTokens: 20,
    timeToFirstByteMs: 321,
    finishReasons: ['end_turn'],
    httpRoute: '/v1/messages',
    httpStatus: 200,
    requestId: 'req_abc',
    costUsd: 0.0123,
    ...extra,
  };
}

type Json = Record<string, unknown>;

function spansOf(body: unknown): Json[] {
  const resourceSpans = (body as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Json[] }> }> }).resourceSpans;
  return resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}

function attributeMap(s: Json): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of s['attributes'] as Array<{ key: string; value: Record<string, unknown> }>) {
    const [kind, v] = Object.entries(value)[0] as [string, unknown];
    out[key] = kind === 'arrayValue' ? (v as { values: Array<{ stringValue: string }> }).values.map((x) => x.stringValue) : v;
  }
  return out;
}

describe('OTLP span exporter: payload', () => {
  it('POSTs OTLP JSON to {endpoint}/v1/traces with the GenAI attributes', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: `${collector.url}/`, serviceName: 'llmux-test', serviceVersion: '9.9.9', flushIntervalMs: 60_000 });
    exporter.record(span());
    await exporter.flush();
    await exporter.close();
    await collector.close();

    assert.equal(collector.received.length, 1);
    const [request] = collector.received as [Received];
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/v1/traces');
    assert.equal(request.contentType, 'application/json');
    const body = request.body as { resourceSpans: Array<{ resource: { attributes: unknown[] }; scopeSpans: Array<{ scope: unknown }> }> };
    assert.deepEqual(body.resourceSpans[0]?.resource.attributes, [
      { key: 'service.name', value: { stringValue: 'llmux-test' } },
      { key: 'service.version', value: { stringValue: '9.9.9' } },
    ]);
    assert.deepEqual(body.resourceSpans[0]?.scopeSpans[0]?.scope, { name: 'llmux', version: '9.9.9' });
    const [s] = spansOf(request.body) as [Json];
    assert.match(s['traceId'] as string, /^[0-9a-f]{32}$/);
    assert.match(s['spanId'] as string, /^[0-9a-f]{16}$/);
    assert.equal(s['parentSpanId'], undefined);
    assert.equal(s['name'], 'chat claude-haiku-4-5');
    assert.equal(s['kind'], 2);
    assert.equal(s['startTimeUnixNano'], '1773482400000000000');
    assert.equal(s['endTimeUnixNano'], '1773482401234500000');
    assert.deepEqual(s['status'], { code: 0 });
    assert.deepEqual(attributeMap(s), {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-haiku-4-5',
      'gen_ai.response.model': 'claude-haiku-4-5-20251001',
      'gen_ai.response.finish_reasons': ['end_turn'],
      'gen_ai.usage.input_tokens': '1120',
      'gen_ai.usage.output_tokens': '42',
      'gen_ai.usage.cache_read.input_tokens': '1000',
      'gen_ai.usage.cache_creation.input_tokens': '20',
      'gen_ai.response.time_to_first_chunk': 0.321,
      'http.request.method': 'POST',
      'http.route': '/v1/messages',
      'http.response.status_code': '200',
      'llmux.request_id': 'req_abc',
      'llmux.cost_usd': 0.0123,
    });
  });

  it('marks a failed request with error.type and status ERROR, and a 5xx without a code by its status', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000 });
    exporter.record(span({ httpStatus: 504, errorType: 'upstream_timeout', outputTokens: undefined, finishReasons: undefined }));
    exporter.record(span({ httpStatus: 502 }));
    exporter.record(span({ httpStatus: 403, errorType: 'budget_exceeded' }));
    exporter.record(span({ httpStatus: 404 }));
    await exporter.close();
    await collector.close();
    const spans = spansOf(collector.received[0]?.body);
    assert.deepEqual(spans.map((s) => [s['status'], attributeMap(s)['error.type']]), [
      [{ code: 2, message: 'upstream_timeout' }, 'upstream_timeout'],
      [{ code: 2, message: 'HTTP 502' }, '502'],
      [{ code: 2, message: 'budget_exceeded' }, 'budget_exceeded'],
      [{ code: 0 }, undefined],
    ]);
    assert.equal(attributeMap(spans[0] as Json)['gen_ai.usage.output_tokens'], undefined, 'unknown counts are left out, not sent as 0');
  });

  it('names a span "chat" alone, without model or provider, when the request failed before either was known', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000 });
    exporter.record(span({ requestModel: undefined, responseModel: undefined, provider: undefined, httpStatus: 404, errorType: 'model_not_found' }));
    await exporter.close();
    await collector.close();
    const [s] = spansOf(collector.received[0]?.body) as [Json];
    assert.equal(s['name'], 'chat');
    const attributes = attributeMap(s);
    for (const name of ['gen_ai.request.model', 'gen_ai.response.model', 'gen_ai.provider.name']) assert.equal(attributes[name], undefined, name);
    assert.equal(attributes['gen_ai.operation.name'], 'chat');
    assert.equal(attributes['error.type'], 'model_not_found');
  });

  it('joins the client trace from a valid traceparent and ignores an invalid one', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000 });
    exporter.record(span({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }));
    exporter.record(span({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }));
    await exporter.close();
    await collector.close();
    const [joined, fresh] = spansOf(collector.received[0]?.body) as [Json, Json];
    assert.equal(joined['traceId'], '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(joined['parentSpanId'], '00f067aa0ba902b7');
    assert.notEqual(joined['spanId'], '00f067aa0ba902b7');
    assert.notEqual(fresh['traceId'], '00000000000000000000000000000000');
    assert.equal(fresh['parentSpanId'], undefined);
  });

  it('sends nothing but the known fields: a key or a body on the span object never reaches the collector', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000 });
    const leaky = { ...span(), apiKey: 'sk-llmux-SECRETSECRETSECRET', keyId: 'key_0123456789abcdef', body: { messages: [{ role: 'user', content: 'private words' }] } };
    exporter.record(leaky);
    await exporter.close();
    await collector.close();
    const raw = JSON.stringify(collector.received[0]?.body);
    for (const secret of ['sk-llmux-', 'SECRET', 'key_0123456789abcdef', 'private words', '"role"', 'keyId', 'apiKey']) assert.ok(!raw.includes(secret), `${secret} leaked`);
  });

  it('gives each span fresh random ids', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000 });
    for (let i = 0; i < 200; i++) exporter.record(span());
    await exporter.close();
    await collector.close();
    const spans = collector.received.flatMap((r) => spansOf(r.body));
    assert.equal(spans.length, 200);
    assert.equal(new Set(spans.map((s) => s['spanId'])).size, 200);
    assert.equal(new Set(spans.map((s) => s['traceId'])).size, 200);
  });

  it('sends in batches of maxBatch, one request at a time, on its own once a batch is full', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, maxBatch: 10, flushIntervalMs: 60_000 });
    for (let i = 0; i < 25; i++) exporter.record(span());
    await waitUntil(() => exporter.stats().exported >= 20, 'two full batches exported');
    assert.equal(exporter.stats().exported, 20, 'two full batches left without a flush');
    await exporter.close();
    await collector.close();
    assert.deepEqual(collector.received.map((r) => spansOf(r.body).length), [10, 10, 5]);
    assert.equal(collector.maxConcurrent, 1);
  });

  it('uses the injected clock when a span has no end time', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000, now: () => START + 5000 });
    exporter.record(span({ endMs: undefined }));
    await exporter.close();
    await collector.close();
    assert.equal(spansOf(collector.received[0]?.body)[0]?.['endTimeUnixNano'], '1773482405000000000');
  });
});

describe('OTLP span exporter: a collector that is slow, hung or down', () => {
  it('with a hung collector, record stays fast, the queue stays bounded and only one request is ever open', { timeout: 20_000 }, async () => {
    const collector = await startCollector(() => { /* never answers */ });
    const drops: Array<[number, string]> = [];
    try {
      const clock = createManualClock();
      const exporter = createSpanExporter({ endpoint: collector.url, maxQueue: 100, maxBatch: 10, flushIntervalMs: 20, timeoutMs: 150, timers: clock.timers, onDrop: (n, reason) => drops.push([n, reason]) });
      for (let i = 0; i < 20_000; i++) assert.equal(exporter.record(span()), undefined);
      // Fast: no record waited on the collector; the first export goes out only after the last record.
      assert.equal(exporter.stats().inFlight, 0, 'nothing was sent from inside record');
      assert.ok(exporter.stats().queued <= 100);
      await waitUntil(() => collector.received.length === 1, 'the first export reaching the collector');
      // One request at a time, each abandoned after 150 ms: no more requests than timeouts elapsed.
      // (The collector may see two open for an instant: an aborted socket's close reaches it late.)
      for (let timeouts = 1; timeouts <= 3; timeouts++) {
        clock.advance(149);
        await new Promise((r) => setImmediate(r));
        assert.equal(exporter.stats().failedRequests, timeouts - 1, 'a request is not abandoned before its timeout');
        clock.advance(1);
        await waitUntil(() => exporter.stats().failedRequests === timeouts, `request ${timeouts} abandoned at its timeout`);
        await waitUntil(() => collector.received.length === timeouts + 1, `request ${timeouts + 1} sent once the last was abandoned`);
      }
      const stats = exporter.stats();
      assert.equal(collector.received.length, 4, 'no more requests than timeouts elapsed');
      assert.ok(stats.failedRequests >= 1, 'the hung request was abandoned at its timeout');
      assert.ok(stats.queued + stats.inFlight <= 110);
      assert.equal(stats.exported, 0);
      assert.ok(drops.some(([, reason]) => reason === 'queue_full'));
      assert.ok(drops.some(([n, reason]) => reason === 'export_failed' && n === 10));
      let closed = false;
      void exporter.close().then(() => { closed = true; });
      // Each batch left is abandoned at its timeout in turn.
      await waitUntil(() => {
        clock.advance(150);
        return closed;
      }, 'close giving up the batches the collector would not take');
      const final = exporter.stats();
      assert.equal(final.queued + final.inFlight, 0, 'close gives up what the collector would not take');
      assert.equal(final.dropped, 20_000, 'every span is accounted for');
    } finally {
      await collector.close(); // a failed assertion must not leave the hung request holding the process
    }
  });

  it('with a collector that is down, flush resolves and the spans are counted as dropped', { timeout: 10_000 }, async () => {
    const gone = await startCollector();
    const url = gone.url;
    await gone.close();
    const drops: number[] = [];
    const exporter = createSpanExporter({ endpoint: url, flushIntervalMs: 60_000, timeoutMs: 2_000, onDrop: (n) => drops.push(n) });
    exporter.record(span());
    exporter.record(span());
    await exporter.flush();
    assert.deepEqual(exporter.stats(), { queued: 0, inFlight: 0, exported: 0, dropped: 2, failedRequests: 1 });
    assert.deepEqual(drops, [2]);
    await exporter.close();
  });

  it('drops a batch the collector refuses, without retrying it', async () => {
    const collector = await startCollector((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"code":14}');
    });
    const exporter = createSpanExporter({ endpoint: collector.url, flushIntervalMs: 60_000 });
    exporter.record(span());
    await exporter.flush();
    await exporter.flush();
    assert.equal(collector.received.length, 1);
    assert.equal(exporter.stats().dropped, 1);
    await exporter.close();
    await collector.close();
  });

  it('survives an onDrop callback that throws, and ignores spans after close', async () => {
    const collector = await startCollector();
    const exporter = createSpanExporter({ endpoint: collector.url, maxQueue: 1, flushIntervalMs: 60_000, onDrop: () => { throw new Error('bad callback'); } });
    exporter.record(span());
    exporter.record(span());
    await exporter.close();
    exporter.record(span());
    assert.deepEqual(exporter.stats(), { queued: 0, inFlight: 0, exported: 1, dropped: 1, failedRequests: 0 });
    await collector.close();
  });

  it('refuses an endpoint that is not http(s) and sizes that are not positive', () => {
    assert.throws(() => createSpanExporter({ endpoint: 'ftp://collector:4318' }), RangeError);
    assert.throws(() => createSpanExporter({ endpoint: 'not a url' }), TypeError);
    assert.throws(() => createSpanExporter({ endpoint: 'http://127.0.0.1:4318', maxQueue: 0 }), RangeError);
  });
});

describe('trace context and time helpers', () => {
  it('parses W3C traceparent strictly', () => {
    assert.deepEqual(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentSpanId: '00f067aa0ba902b7' });
    assert.deepEqual(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra'), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentSpanId: '00f067aa0ba902b7' }, 'a later version may add fields');
    for (const bad of [
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      '',
    ]) assert.equal(parseTraceparent(bad), undefined, bad);
    assert.equal(parseTraceparent(undefined), undefined);
  });

  it('turns ms into unix nanoseconds exactly, to the microsecond', () => {
    assert.equal(unixNanos(1), '1000000');
    assert.equal(unixNanos(1773482400000.001), '1773482400000001000');
    assert.equal(unixNanos(0), '0');
  });
});
