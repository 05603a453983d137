/**
 * Deployments and routing on the request path (llmux.md section 10), over sockets against a fake
 * upstream: the strategies' choices, the attempt sequence across deployments and provider keys,
 * and in-flight leases held as long as a stream runs. Rests are in test/routing-rests-e2e.test.ts,
 * sticky conversations, aliases, routes and discovery in their own files.
 *
 * Tolerances: every share is checked with Hoeffding's bound (test/helpers/routed-gateway.ts
 * `hoeffding`), each test failing wrongly less than once in a million runs; counts that must be
 * exact are exact, and where a correct gateway could miss by chance the chance is written beside.
 * Each request starts a conversation of its own (its first user message differs), so sticky
 * routing, on by default, does not pin them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { respond } from './helpers/fake-upstream.ts';
import type { Responder } from './helpers/fake-upstream.ts';
import { chat, chatBody, deploymentMetric, hitsOf, hoeffding, inParallel, startRoutedGateway } from './helpers/routed-gateway.ts';
import type { RoutedGateway } from './helpers/routed-gateway.ts';

function fakeProvider(baseUrl: string): Record<string, unknown> {
  return { fake: { format: 'openai', base_url: baseUrl, api_key: 'upstream-secret' } };
}

describe('weighted deployments', () => {
  let t: RoutedGateway;
  before(async () => {
    t = await startRoutedGateway({
      config: (base) => ({
        providers: fakeProvider(base),
        models: [{ id: 'weighted', deployments: [{ provider: 'fake', upstream_id: 'up-heavy', weight: 3 }, { provider: 'fake', upstream_id: 'up-light', weight: 1 }] }],
      }),
    });
  });
  after(() => t.close());

  it('hold: a deployment of weight 3 of 4 answers three requests in four', async () => {
    const N = 1000;
    const from = t.upstream.requests.length;
    const statuses: number[] = [];
    await inParallel(N, 8, async (i) => {
      statuses.push((await chat(t, 'weighted', `conversation ${i}`)).status);
    });
    assert.ok(statuses.every((s) => s === 200));
    const seen = t.seen(from);
    assert.equal(seen.length, N);
    // N = 1000: t = sqrt(ln(2e6) / 2000) = 0.085, so 0.75 ± 0.085.
    const share = hitsOf(seen, 'up-heavy') / N;
    assert.ok(Math.abs(share - 0.75) < hoeffding(N), `heavy share ${share}`);
  });

  it('name the deployment and its key by label in the log line, and count it in /metrics', async () => {
    const { status, body } = await chat(t, 'weighted', 'one more');
    assert.equal(status, 200);
    assert.equal(body['model'], 'weighted');
    await delay(20);
    const line = t.logs.at(-1) as Record<string, unknown>;
    assert.equal(line['model'], 'weighted');
    assert.match(String(line['deployment']), /^fake\/up-(heavy|light)$/);
    assert.equal(line['provider_key'], 'api_key');
    assert.ok(!JSON.stringify(t.logs).includes('upstream-secret'));
    assert.ok(((await deploymentMetric(t, 'llmux_deployment_requests_total', 'fake/up-heavy')) ?? 0) > 600);
    assert.equal(await deploymentMetric(t, 'llmux_deployment_resting', 'fake/up-heavy'), 0);
    assert.equal(await deploymentMetric(t, 'llmux_deployment_in_flight', 'fake/up-light'), 0);
  });
});

describe('least_busy', () => {
  let t: RoutedGateway;
  /** Streams the `up-hold` deployment holds open until released. */
  const held = new Set<import('node:http').ServerResponse>();
  before(async () => {
    t = await startRoutedGateway({
      config: (base) => ({
        providers: fakeProvider(base),
        models: [{ id: 'busy', routing: 'least_busy', deployments: [{ provider: 'fake', upstream_id: 'up-hold' }, { provider: 'fake', upstream_id: 'up-quick' }] }],
      }),
    });
    const hold: Responder = (_req, res, seen) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: seen.body['model'], choices: [{ index: 0, delta: { content: 'held' }, finish_reason: null }] })}\n\n`);
      held.add(res);
      res.once('close', () => held.delete(res));
    };
    t.behave((seen) => (seen.body['model'] === 'up-hold' ? hold : undefined));
  });
  after(async () => {
    for (const res of held) res.end('data: [DONE]\n\n');
    await t.close();
  });

  /**
   * Reads a quick stream to its end, then waits for its lease to be freed: the gateway ends it
   * just after the last byte leaves, and the next request must not see it still in flight.
   */
  async function finished(res: Response): Promise<void> {
    await res.text();
    await idle('fake/up-quick');
  }

  /** Waits (at most 10 s: the machine may be busy) until nothing is in flight at the deployment. */
  async function idle(deployment: string): Promise<void> {
    const started = performance.now();
    while ((await deploymentMetric(t, 'llmux_deployment_in_flight', deployment)) !== 0) {
      assert.ok(performance.now() - started < 10_000, `${deployment} still has a request in flight`);
      await delay(5);
    }
  }

  it('avoids a deployment holding a long stream: once one stream runs there, every later request goes to the other', async () => {
    const from = t.upstream.requests.length;
    const open: Array<{ controller: AbortController; body: ReadableStream<Uint8Array> | null }> = [];
    for (let i = 0; i < 25; i++) {
      const controller = new AbortController();
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
        body: chatBody('busy', `conversation ${i}`, { stream: true }),
        signal: controller.signal,
      });
      assert.equal(res.status, 200);
      if (t.seen(from).at(-1)?.body['model'] === 'up-hold') open.push({ controller, body: res.body });
      else await finished(res);
    }
    // Ties (both idle) are broken at random, so the held deployment is picked once, and never
    // again while its stream runs: exactly one, unless all 25 ties went the other way (2^-25).
    assert.equal(hitsOf(t.seen(from), 'up-hold'), 1);
    assert.equal(await deploymentMetric(t, 'llmux_deployment_in_flight', 'fake/up-hold'), 1);
    assert.equal(await deploymentMetric(t, 'llmux_deployment_in_flight', 'fake/up-quick'), 0);

    // The client leaving ends the stream's lease: the deployment is idle again.
    open[0]?.controller.abort();
    await idle('fake/up-hold');
  });

  it('ends a stream\'s lease when the stream ends', async () => {
    const from = t.upstream.requests.length;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    for (let i = 0; i < 25 && reader === undefined; i++) {
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
        body: chatBody('busy', `again ${i}`, { stream: true }),
      });
      if (t.seen(from).at(-1)?.body['model'] === 'up-hold') reader = res.body?.getReader();
      else await finished(res);
    }
    assert.ok(reader !== undefined, 'a stream reached the held deployment (a miss has chance 2^-25)');
    assert.equal(await deploymentMetric(t, 'llmux_deployment_in_flight', 'fake/up-hold'), 1);
    for (const res of held) res.end('data: [DONE]\n\n');
    while (!(await reader.read()).done) { /* to the end */ }
    await idle('fake/up-hold');
  });
});

describe('latency', () => {
  let t: RoutedGateway;
  const SLOW_MS = 250;
  before(async () => {
    t = await startRoutedGateway({
      config: (base) => ({
        providers: fakeProvider(base),
        models: [{ id: 'timed', routing: 'latency', deployments: [{ provider: 'fake', upstream_id: 'up-fast' }, { provider: 'fake', upstream_id: 'up-slow' }] }],
      }),
    });
    const slow: Responder = async (req, res, seen) => {
      await delay(SLOW_MS);
      return respond.fixtureJson('openai-nonstream-text.json')(req, res, seen);
    };
    t.behave((seen) => (seen.body['model'] === 'up-slow' ? slow : undefined));
  });
  after(() => t.close());

  it('prefers the fast deployment, yet sends about one request in twenty to the slow one to measure it again', async () => {
    const N = 300;
    const from = t.upstream.requests.length;
    for (let i = 0; i < N; i++) assert.equal((await chat(t, 'timed', `conversation ${i}`)).status, 200);
    const seen = t.seen(from);
    const slow = hitsOf(seen, 'up-slow');
    // Each deployment is tried once before it has a sample; after that one request in twenty
    // explores. The fast share is then 1 − 1/20 of the rest: 0.95 − t with t = sqrt(ln(2e6) / 600) = 0.155.
    assert.ok(hitsOf(seen, 'up-fast') / N > 0.95 - hoeffding(N), `fast ${hitsOf(seen, 'up-fast')} of ${N}`);
    // Measured again after its first sample: no exploration in 298 requests has chance 0.95^298 = 2e-7.
    assert.ok(slow >= 2, `the slow deployment was tried ${slow} times`);
    const count = await deploymentMetric(t, 'llmux_deployment_time_to_first_byte_seconds_count', 'fake/up-slow');
    assert.equal(count, slow);
  });
});
