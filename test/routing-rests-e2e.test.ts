/**
 * Rests (cooldowns) and provider keys on the request path (llmux.md section 10), over sockets
 * against a fake upstream, on a clock the test moves (the gateway's `now`): a 429's `retry-after`,
 * a 503's 5 s then 10 s, 500s moved past without a backoff, a 401 key rested for minutes, our 429
 * when everything rests.
 *
 * Two deployments of equal weight: a request goes first to either with chance 1/2, independently,
 * so "never in n requests" of a usable deployment has chance 2^-n (n ≥ 20 here: under 1e-6).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { respond } from './helpers/fake-upstream.ts';
import { chat, deploymentMetric, hitsOf, manualClock, startRoutedGateway } from './helpers/routed-gateway.ts';
import type { ManualClock, RoutedGateway } from './helpers/routed-gateway.ts';

const PAIR = [{ provider: 'fake', upstream_id: 'up-a' }, { provider: 'fake', upstream_id: 'up-b' }];

function pairConfig(base: string, retry: Record<string, number> = {}): Record<string, unknown> {
  return {
    providers: { fake: { format: 'openai', base_url: base, api_key: 'upstream-secret' } },
    models: [{ id: 'pair', deployments: PAIR }],
    retry: { attempts: 3, base_delay_ms: 1, max_delay_ms: 5, max_retry_after_ms: 60_000, ...retry },
  };
}

let conversation = 0;
/** `n` requests, each a new conversation; every one must be answered 200. Returns the upstream requests they made. */
async function send(t: RoutedGateway, n: number, model = 'pair') {
  const from = t.upstream.requests.length;
  for (let i = 0; i < n; i++) {
    const { status, body } = await chat(t, model, `conversation ${conversation++}`);
    assert.equal(status, 200, JSON.stringify(body));
  }
  return t.seen(from);
}

/** Requests until one reaches `upstreamId` (at most `limit`), answered 200 each. */
async function untilHit(t: RoutedGateway, upstreamId: string, limit = 60): Promise<void> {
  for (let i = 0; i < limit; i++) if (hitsOf(await send(t, 1), upstreamId) > 0) return;
  assert.fail(`no request reached ${upstreamId} in ${limit}`);
}

describe('a 429 with retry-after: 3', () => {
  let t: RoutedGateway;
  let clock: ManualClock;
  before(async () => {
    clock = manualClock();
    t = await startRoutedGateway({ config: (base) => pairConfig(base), now: clock.now });
  });
  after(() => t.close());

  it('rests its deployment for 3 s, the request answered by the other one', async () => {
    let limited = false;
    t.behave((seen) => {
      if (seen.body['model'] !== 'up-a' || limited) return undefined;
      limited = true;
      return respond.json(429, { error: { message: 'slow down' } }, { 'retry-after': '3' });
    });
    await untilHit(t, 'up-a');
    assert.equal(await deploymentMetric(t, 'llmux_deployment_resting', 'fake/up-a'), 1);
    assert.equal(hitsOf(await send(t, 20), 'up-a'), 0);
    clock.advance(2_900);
    assert.equal(hitsOf(await send(t, 20), 'up-a'), 0);
    clock.advance(200);
    assert.equal(await deploymentMetric(t, 'llmux_deployment_resting', 'fake/up-a'), 0);
    assert.ok(hitsOf(await send(t, 20), 'up-a') > 0);
    const rest = t.logs.find((line) => String((line as { message?: unknown }).message).includes('deployment "fake/up-a" rests for 3 s after HTTP 429'));
    assert.ok(rest !== undefined, 'the rest is logged');
  });
});

describe('a 503', () => {
  let t: RoutedGateway;
  let clock: ManualClock;
  before(async () => {
    clock = manualClock();
    t = await startRoutedGateway({ config: (base) => pairConfig(base), now: clock.now });
    t.behave((seen) => (seen.body['model'] === 'up-a' ? respond.json(503, { error: { message: 'unavailable' } }) : undefined));
  });
  after(() => t.close());

  it('rests its deployment 5 s, then 10 s when the first request after the rest fails again', async () => {
    await untilHit(t, 'up-a');
    clock.advance(4_900);
    assert.equal(hitsOf(await send(t, 20), 'up-a'), 0);
    clock.advance(200);
    // The first request to reach it after the rest is its probe: a 503 again doubles the rest.
    await untilHit(t, 'up-a');
    clock.advance(9_900);
    assert.equal(hitsOf(await send(t, 20), 'up-a'), 0);
    clock.advance(200);
    assert.ok(hitsOf(await send(t, 20), 'up-a') > 0);
    const errors = await deploymentMetric(t, 'llmux_deployment_errors_total', 'fake/up-a');
    assert.ok(errors !== undefined && errors >= 3);
  });
});

describe('500s', () => {
  let t: RoutedGateway;
  let clock: ManualClock;
  before(async () => {
    clock = manualClock();
    // A backoff would take at least 3 s (half its 6 s ceiling, by its jitter): none may be waited between deployments.
    t = await startRoutedGateway({ config: (base) => pairConfig(base, { base_delay_ms: 6_000, max_delay_ms: 6_000 }), now: clock.now });
    t.behave((seen) => (seen.body['model'] === 'up-a' ? respond.json(500, { error: { message: 'boom' } }) : undefined));
  });
  after(() => t.close());

  it('are retried on the other deployment at once, the client seeing one 200; three in a row rest it', async () => {
    let movedOn = 0;
    for (let i = 0; i < 60 && movedOn < 3; i++) {
      const from = t.upstream.requests.length;
      const started = performance.now();
      const { status, body } = await chat(t, 'pair', `conversation 500-${i}`);
      assert.equal(status, 200);
      assert.equal(body['object'], 'chat.completion');
      const seen = t.seen(from);
      if (seen[0]?.body['model'] !== 'up-a') continue;
      movedOn++;
      assert.deepEqual(seen.map((r) => r.body['model']), ['up-a', 'up-b']);
      assert.ok(performance.now() - started < 3_000, 'no backoff between deployments');
      await delay(10);
      const line = t.logs.filter((l) => (l as { request_id?: unknown }).request_id !== undefined).at(-1) as { attempts: Array<{ status: number; deployment: string }>; deployment: string };
      assert.deepEqual(line.attempts.map((a) => `${a.deployment}:${a.status}`), ['fake/up-a:500', 'fake/up-b:200']);
      assert.equal(line.deployment, 'fake/up-b');
    }
    // Three 500s in a row (chance of fewer in 60 requests: under 1e-6) rest it.
    assert.equal(movedOn, 3);
    assert.equal(await deploymentMetric(t, 'llmux_deployment_resting', 'fake/up-a'), 1);
    assert.equal(hitsOf(await send(t, 20), 'up-a'), 0);
  });
});

describe('a provider key answering 401', () => {
  let t: RoutedGateway;
  let clock: ManualClock;
  before(async () => {
    clock = manualClock();
    t = await startRoutedGateway({
      config: (base) => ({
        providers: { pooled: { format: 'openai', base_url: base, api_keys: ['env:KEY_BAD', 'env:KEY_GOOD'] } },
        models: [{ id: 'keyed', provider: 'pooled', upstream_id: 'up-k' }],
      }),
      env: { KEY_BAD: 'sk-bad-0123456789', KEY_GOOD: 'sk-good-0123456789' },
      now: clock.now,
    });
    t.behave((seen) => {
      if (seen.headers.authorization === 'Bearer sk-bad-0123456789') return respond.json(401, { error: { message: 'Incorrect API key provided: sk-bad-0123456789', code: 'invalid_api_key' } });
      if (seen.body['temperature'] === 1.5) return respond.json(400, { error: { message: 'temperature too high for key sk-good-0123456789' } });
      return undefined;
    });
  });
  after(() => t.close());

  const keysSeen = (from: number): string[] => t.seen(from).map((r) => String(r.headers.authorization).replace('Bearer ', ''));

  it('is not used again for minutes, and its request still succeeds with another key', async () => {
    const from = t.upstream.requests.length;
    for (let i = 0; i < 10; i++) assert.equal((await chat(t, 'keyed', `turn ${i}`)).status, 200);
    const keys = keysSeen(from);
    // Round robin starts with the first key: it is refused once, then rests.
    assert.deepEqual(keys.slice(0, 2), ['sk-bad-0123456789', 'sk-good-0123456789']);
    assert.ok(keys.slice(2).every((key) => key === 'sk-good-0123456789'), keys.join(' '));
    const logged = t.logs.filter((line) => String((line as { message?: unknown }).message).includes('refused its key KEY_BAD'));
    assert.equal(logged.length, 1);
    assert.match(String((logged[0] as { message: string }).message), /rests for 300 s/);
    assert.ok(!JSON.stringify(t.logs).includes('sk-bad-0123456789'), 'the key itself is never logged');

    clock.advance(290_000);
    const later = t.upstream.requests.length;
    for (let i = 0; i < 10; i++) assert.equal((await chat(t, 'keyed', `later ${i}`)).status, 200);
    assert.ok(keysSeen(later).every((key) => key === 'sk-good-0123456789'));

    // Rested 5 minutes: tried again, refused again, and rested twice as long, logged each time.
    clock.advance(20_000);
    const after5 = t.upstream.requests.length;
    for (let i = 0; i < 4; i++) assert.equal((await chat(t, 'keyed', `after ${i}`)).status, 200);
    assert.ok(keysSeen(after5).includes('sk-bad-0123456789'));
    const again = t.logs.filter((line) => String((line as { message?: unknown }).message).includes('refused its key KEY_BAD'));
    assert.equal(again.length, 2);
    assert.match(String((again[1] as { message: string }).message), /rests for 600 s/);
  });

  it('keeps every key of the pool out of what the client is told', async () => {
    const { status, body } = await chat(t, 'keyed', 'too hot', { temperature: 1.5 });
    assert.equal(status, 400);
    assert.doesNotMatch(JSON.stringify(body), /sk-good-0123456789/);
    assert.match(JSON.stringify(body), /\[redacted\]/);
  });
});

describe('every key of a provider refused', () => {
  let t: RoutedGateway;
  before(async () => {
    t = await startRoutedGateway({
      config: (base) => ({
        providers: { pooled: { format: 'openai', base_url: base, api_keys: ['env:KEY_ONE', 'literal-two-secret'] } },
        models: [{ id: 'keyed', provider: 'pooled', upstream_id: 'up-k' }],
      }),
      env: { KEY_ONE: 'sk-one-secret' },
    });
    t.behave(() => respond.json(401, { error: { message: 'no' } }));
  });
  after(() => t.close());

  it('is 502 upstream_auth_failed naming the setting of the last key tried, never a key', async () => {
    const { status, body } = await chat(t, 'keyed', 'hello');
    assert.equal(status, 502);
    const error = body['error'] as { code: string; message: string };
    assert.equal(error.code, 'upstream_auth_failed');
    assert.match(error.message, /providers\.pooled\.api_keys\[[01]\]/);
    assert.doesNotMatch(error.message, /secret/);
  });
});

describe('every deployment resting', () => {
  let t: RoutedGateway;
  let clock: ManualClock;
  before(async () => {
    clock = manualClock();
    t = await startRoutedGateway({ config: (base) => pairConfig(base, { attempts: 2 }), now: clock.now });
  });
  after(() => t.close());

  it('is our 429 rate_limit_exceeded with the earliest retry-after', async () => {
    t.behave((seen) => respond.json(429, { error: { message: 'busy' } }, { 'retry-after': seen.body['model'] === 'up-a' ? '7' : '4' }));
    const first = await chat(t, 'pair', 'first');
    // Both deployments were tried and answered 429: that 429 is passed on.
    assert.equal(first.status, 429);
    const from = t.upstream.requests.length;
    const { status, body, headers } = await chat(t, 'pair', 'second');
    assert.equal(status, 429);
    assert.equal((body['error'] as { code: string }).code, 'rate_limit_exceeded');
    assert.match((body['error'] as { message: string }).message, /Every deployment of model "pair"/);
    assert.equal(headers.get('retry-after'), '4');
    assert.equal(t.seen(from).length, 0, 'nothing is sent while everything rests');
    clock.advance(4_100);
    t.behave(() => undefined);
    assert.equal((await chat(t, 'pair', 'third')).status, 200);
  });
});
