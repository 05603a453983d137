import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { respond } from './helpers/fake-upstream.ts';
import type { Responder } from './helpers/fake-upstream.ts';
import { PRICED_MODELS, chat, chatJson, messages, messagesStream } from './helpers/usage.ts';
import { waitUntil } from './helpers/wait.ts';

/** The identity of every series in a scrape: metric name and labels, without the values. */
function seriesOf(text: string): Set<string> {
  const series = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    series.add(line.slice(0, line.lastIndexOf(' ')));
  }
  return series;
}

async function scrape(t: TestGateway): Promise<string> {
  const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.adminKey}` } });
  assert.equal(res.status, 200);
  return res.text();
}

/** Reads a whole answer, whatever its status. */
async function drain(response: Promise<Response>): Promise<number> {
  const res = await response;
  await res.arrayBuffer();
  return res.status;
}

const word = (): string => randomBytes(6).toString('hex');

/** One request of each kind a client can vary, with `text` wherever client input goes. */
function clientRequests(t: TestGateway, text: string): Array<Promise<Response>> {
  const json = { 'content-type': 'application/json' };
  return [
    chat(t, t.key, `model-${text}`, {}, { 'x-request-id': `id-${text}` }),
    messages(t, t.key, `model-${text}`, { metadata: { user_id: text } }),
    fetch(`${t.url}/v1/${text}/x?${text}=1`, { headers: { authorization: `Bearer ${t.key}` } }),
    fetch(`${t.url}/v1/models/${text}`, { headers: { authorization: `Bearer ${t.key}` } }),
    fetch(`${t.url}/v1/chat/completions`, { method: 'PUT', headers: json, body: text }),
    fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { ...json, authorization: `Bearer sk-llmux-${text}` }, body: '{}' }),
    fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { ...json, authorization: `Bearer ${t.key}` }, body: `{"model":"gpt-test","${text}":` }),
  ];
}

describe('/metrics', () => {
  it('keeps its label set whatever clients send: route patterns, configured providers and catalog models only', { timeout: 60_000 }, async () => {
    // Limits roomy enough that 280 refused requests never reach requests/min (refused bodies count
    // against it): a 429 is a bounded series, but not the one this test is about.
    const t = await startTestGateway({ config: { models: PRICED_MODELS, tiers: { basic: { rpm: 100_000, tpm: 100_000_000, concurrency: 1_000 } } } });
    try {
      // Every kind of answer once: successes of both providers, an upstream failing after retries,
      // and each refusal a client can cause.
      t.upstream.queue.push(chatJson({ prompt: 100, completion: 10, cached: 20 }), messagesStream({ input: 5, output: 7, cacheRead: 0, cacheCreation: 3 }));
      assert.equal(await drain(chat(t, t.key, 'gpt-test')), 200);
      assert.equal(await drain(messages(t, t.key, 'claude-test', { stream: true })), 200);
      t.upstream.queue.push(respond.json(500, { error: { message: 'boom' } }), respond.json(500, { error: { message: 'boom' } }), respond.json(500, { error: { message: 'boom' } }));
      assert.equal(await drain(chat(t, t.key, 'gpt-test')), 502);
      assert.deepEqual(await Promise.all(clientRequests(t, 'warmup').map(drain)), [404, 404, 404, 404, 405, 401, 400]);
      await scrape(t); // so that the scrape's own series exist before the one compared
      const before = await scrape(t);
      assert.match(before, /^llmux_tokens_total\{model="gpt-test",direction="in"\} 100$/m);
      assert.match(before, /^llmux_tokens_total\{model="claude-test",direction="out"\} 7$/m);
      const cost = Number(/^llmux_cost_usd_total\{model="gpt-test"\} (\S+)$/m.exec(before)?.[1]);
      assert.ok(Math.abs(cost - 0.00028) < 1e-12, `gpt-test cost ${cost}`);
      assert.match(before, /^llmux_upstream_errors_total\{provider="fake-openai",code="500"\} 3$/m);
      assert.match(before, /^llmux_request_duration_seconds_count\{route="\/v1\/chat\/completions",provider="fake-openai"\} 2$/m, 'the failed request counts under the provider it tried');
      assert.match(before, /^llmux_time_to_first_byte_seconds_bucket\{route="\/v1\/messages",provider="fake-anthropic",le="\+Inf"\} 1$/m);
      assert.match(before, /^llmux_requests_total\{route="other",status="405"\} 1$/m);

      const sent: string[] = [];
      for (let round = 0; round < 40; round++) {
        const text = word();
        sent.push(text);
        await Promise.all(clientRequests(t, text).map(drain));
      }
      const after = await scrape(t);
      assert.deepEqual([...seriesOf(after)].sort(), [...seriesOf(before)].sort(), 'no new series');
      for (const text of sent) assert.ok(!after.includes(text), `client input "${text}" in /metrics`);
      assert.match(after, /^llmux_requests_total\{route="other",status="405"\} 41$/m, 'the same series counted on');
    } finally {
      await t.close();
    }
  });
});

describe('llmux_open_requests', () => {
  it('counts the requests not yet answered, the scrape itself among them, and lets each go once answered', async () => {
    const t = await startTestGateway({ config: { models: PRICED_MODELS } });
    try {
      // Two chat requests held by the upstream until the test lets them go.
      const held: Array<() => void> = [];
      const hold: Responder = (req, res, seen) => new Promise<void>((resolve) => {
        held.push(() => resolve(chatJson({ prompt: 1, completion: 1, cached: 0 })(req, res, seen)));
      });
      t.upstream.queue.push(hold, hold);
      const answers = [chat(t, t.key, 'gpt-test'), chat(t, t.key, 'gpt-test')].map(drain);
      await waitUntil(() => held.length === 2, 'both requests upstream');
      assert.match(await scrape(t), /^llmux_open_requests 3$/m);
      for (const release of held) release();
      assert.deepEqual(await Promise.all(answers), [200, 200]);
      // The count drops when the request's line is logged, just after its answer's end.
      await waitUntil(async () => /^llmux_open_requests 1$/m.test(await scrape(t)), 'the count back at the scrape alone');
    } finally {
      await t.close();
    }
  });
});

interface Collector {
  url: string;
  /** Parsed bodies of the export requests answered. */
  bodies: unknown[];
  /** Raw text of every export request received, answered or not. */
  texts: string[];
  close(): Promise<void>;
}

/** A fake OTLP collector on 127.0.0.1:0; `hang` never answers. */
async function startCollector(hang = false): Promise<Collector> {
  const bodies: unknown[] = [];
  const texts: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      texts.push(text);
      if (hang) return;
      bodies.push(JSON.parse(text));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    texts,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

type Attributes = Record<string, string | number | string[]>;
interface Span { traceId: string; parentSpanId?: string; name: string; attributes: Attributes; status: { code: number } }

function spansOf(bodies: unknown[]): Span[] {
  const spans: Span[] = [];
  for (const body of bodies) {
    for (const rs of (body as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }> }).resourceSpans) {
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) {
          const attributes: Attributes = {};
          for (const { key, value } of s['attributes'] as Array<{ key: string; value: Record<string, unknown> }>) {
            attributes[key] = 'stringValue' in value ? value['stringValue'] as string : 'intValue' in value ? Number(value['intValue']) : value['doubleValue'] as number;
          }
          spans.push({ ...(s as unknown as Span), attributes });
        }
      }
    }
  }
  return spans;
}

describe('OpenTelemetry spans', () => {
  it('exports one span per model request with the GenAI attributes, and nothing of a key or a message', { timeout: 30_000 }, async () => {
    const collector = await startCollector();
    const t = await startTestGateway({ config: { models: PRICED_MODELS, telemetry: { otlp_endpoint: collector.url } } });
    const secret = `SECRET-PROMPT-${word()}`;
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    let closed = false;
    try {
      const keyId = t.gateway.keys.findBySecret(t.key)?.id ?? '';
      t.upstream.queue.push(chatJson({ prompt: 1000, completion: 200, cached: 400 }), messagesStream({ input: 10, output: 5, cacheRead: 0, cacheCreation: 1000 }));
      assert.equal(await drain(chat(t, t.key, 'gpt-test', { messages: [{ role: 'user', content: secret }] }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` })), 200);
      assert.equal(await drain(messages(t, t.key, 'claude-test', { stream: true, messages: [{ role: 'user', content: secret }] })), 200);
      assert.equal(await drain(chat(t, t.key, 'no-such-model')), 404);
      assert.equal(await drain(fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.key}` } })), 200, 'not a model request: no span');
      // Closing flushes the last spans.
      await t.close();
      closed = true;

      const spans = spansOf(collector.bodies);
      assert.equal(spans.length, 3);
      const [json, streamed, unknown] = spans as [Span, Span, Span];
      assert.equal(json.name, 'chat gpt-test');
      assert.equal(json.traceId, traceId, 'joins the client\'s trace');
      assert.equal(json.parentSpanId, '00f067aa0ba902b7');
      assert.deepEqual({ ...json.attributes, 'gen_ai.response.time_to_first_chunk': typeof json.attributes['gen_ai.response.time_to_first_chunk'], 'llmux.request_id': typeof json.attributes['llmux.request_id'] }, {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'fake-openai',
        'gen_ai.request.model': 'gpt-test',
        'gen_ai.response.model': 'gpt-test',
        'gen_ai.usage.input_tokens': 1000,
        'gen_ai.usage.output_tokens': 200,
        'gen_ai.usage.cache_read.input_tokens': 400,
        'gen_ai.usage.cache_creation.input_tokens': 0,
        'gen_ai.response.time_to_first_chunk': 'number',
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
        'llmux.request_id': 'string',
        'llmux.cost_usd': 0.0036,
      });
      assert.equal(json.status.code, 0);
      assert.equal(streamed.attributes['http.route'], '/v1/messages');
      assert.equal(streamed.attributes['gen_ai.usage.input_tokens'], 1010);
      assert.equal(streamed.attributes['gen_ai.provider.name'], 'fake-anthropic');
      assert.equal(unknown.name, 'chat', 'a model the catalog does not know is not named');
      assert.equal(unknown.attributes['gen_ai.request.model'], undefined);
      assert.equal(unknown.attributes['error.type'], 'model_not_found');
      assert.equal(unknown.status.code, 2);

      const everything = collector.texts.join('\n');
      for (const leak of [t.key, keyId, secret, 'upstream-openai-secret', 'upstream-anthropic-secret', 'no-such-model']) {
        assert.ok(!everything.includes(leak), `"${leak.slice(0, 24)}" reached the collector`);
      }
    } finally {
      if (!closed) await t.close();
      await collector.close();
    }
  });

  it('leaves request latency unchanged while the collector hangs on an export', { timeout: 60_000 }, async () => {
    const collector = await startCollector(true);
    const traced = await startTestGateway({ config: { telemetry: { otlp_endpoint: collector.url } } });
    const plain = await startTestGateway();
    try {
      const unlimited = new Map(await Promise.all([traced, plain].map(async (t) => [t, (await t.gateway.keys.create({ name: 'fast', tier: 'enterprise', limits: { rpm: 1_000_000 } })).key] as const)));
      const echo = (t: TestGateway) => chat(t, unlimited.get(t) as string, 'llmux-echo');
      // 512 spans make a full batch, sent at once: the collector takes it and never answers.
      for (let i = 0; i < 520; i++) assert.equal(await drain(echo(traced)), 200);
      await waitUntil(() => collector.texts.length > 0, 'the full batch reaching the collector');
      assert.equal(collector.texts.length, 1, 'an export is hanging');

      const timed = async (t: TestGateway): Promise<number> => {
        const started = performance.now();
        assert.equal(await drain(echo(t)), 200);
        return performance.now() - started;
      };
      const tracedMs: number[] = [];
      const plainMs: number[] = [];
      // Interleaved, so a busy moment of the shared machine hits both alike.
      for (let i = 0; i < 100; i++) {
        tracedMs.push(await timed(traced));
        plainMs.push(await timed(plain));
      }
      // Kept on real time: what this test is about is latency, measured side by side with a
      // gateway without telemetry, so a busy machine slows both alike.
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
      assert.equal(collector.texts.length, 1, 'still the one export, still hanging');
      assert.ok(median(tracedMs) <= median(plainMs) * 2 + 2, `median ${median(tracedMs).toFixed(2)} ms with the collector hung, ${median(plainMs).toFixed(2)} ms without telemetry`);
      assert.ok(Math.max(...tracedMs) < 1_000, 'no request waited on the collector');
    } finally {
      await Promise.all([traced.close(), plain.close()]);
      await collector.close();
    }
  });
});
