import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLimiter as createCountingLimiter } from '../../src/limits/limiter.ts';
import type { Admission as Counted, LimiterOptions, LimitSet, Refusal as CountedRefusal } from '../../src/limits/limiter.ts';
import { rateLimitError, rateLimitHeaders, refusalMessage } from '../../src/http/rate-limit.ts';

// The limiter answers in numbers; these tests read them as clients do, rendered by
// src/http/rate-limit.ts into the x-ratelimit-* headers and the 429's message.
type Admission = Counted & { headers: Record<string, string> };
type Refusal = CountedRefusal & { headers: Record<string, string>; message: string };

function createLimiter(options: LimiterOptions = {}) {
  const limiter = createCountingLimiter(options);
  return {
    ...limiter,
    admit(keyId: string, limits: LimitSet, estimatedTokens: number): Admission | Refusal {
      const result = limiter.admit(keyId, limits, estimatedTokens);
      if (result.ok) return { ...result, headers: rateLimitHeaders(result.state) };
      return { ...result, headers: rateLimitError(result).headers ?? {}, message: refusalMessage(result) };
    },
    peek(keyId: string, limits: LimitSet) {
      const peeked = limiter.peek(keyId, limits);
      return { ...peeked, headers: rateLimitHeaders(peeked.state) };
    },
  };
}

const BASIC: LimitSet = { rpm: 60, tpm: 90_000, concurrency: 10 };
const PRO: LimitSet = { rpm: 300, tpm: 450_000, concurrency: 40 };
const ROOMY: LimitSet = { rpm: 1_000_000, tpm: 1_000_000_000, concurrency: 1_000_000 };

function fakeClock(startMs = 0) {
  let nowMs = startMs;
  return {
    now: () => nowMs,
    set(ms: number) {
      nowMs = ms;
    },
  };
}

function admitted(result: Admission | Refusal): Admission {
  assert.equal(result.ok, true, result.ok ? '' : result.message);
  return result as Admission;
}

function refused(result: Admission | Refusal): Refusal {
  assert.equal(result.ok, false, 'expected a refusal');
  return result as Refusal;
}

/** Admits and finishes one request that used no tokens, so only the request count moves. */
function oneRequest(limiter: ReturnType<typeof createLimiter>, keyId: string, limits: LimitSet): Admission {
  const admission = admitted(limiter.admit(keyId, limits, 0));
  admission.settle(0);
  admission.release();
  return admission;
}

test('a Basic key gets its first 60 requests of a minute and the 61st is refused', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 60; i++) {
    clock.set(i * 16);
    oneRequest(limiter, 'key_a', BASIC);
  }
  for (const at of [999, 30_000, 59_999, 60_000, 60_999]) {
    clock.set(at);
    const refusal = refused(limiter.admit('key_a', BASIC, 0));
    assert.equal(refusal.reason, 'requests', `at ${at}`);
  }
  clock.set(61_000);
  for (let i = 0; i < 60; i++) oneRequest(limiter, 'key_a', BASIC);
  assert.equal(refused(limiter.admit('key_a', BASIC, 0)).reason, 'requests');
});

test('a Pro key gets 300 requests a minute and 40 at once', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 300; i++) oneRequest(limiter, 'key_pro', PRO);
  assert.equal(refused(limiter.admit('key_pro', PRO, 0)).reason, 'requests');
  const held: Admission[] = [];
  for (let i = 0; i < 40; i++) held.push(admitted(limiter.admit('key_pro2', PRO, 0)));
  assert.equal(refused(limiter.admit('key_pro2', PRO, 0)).reason, 'concurrency');
});

test('retry-after is the whole seconds until the request would be admitted, and retrying then succeeds', () => {
  for (const at of [1, 999, 1_000, 15_250, 30_000, 30_500, 59_001, 60_999]) {
    const clock = fakeClock();
    const limiter = createLimiter({ now: clock.now });
    for (let i = 0; i < 60; i++) oneRequest(limiter, 'key_a', BASIC);
    clock.set(at);
    const refusal = refused(limiter.admit('key_a', BASIC, 0));
    assert.equal(refusal.retryAfterSeconds, Math.ceil((61_000 - at) / 1000), `at ${at}`);
    // The header never asks for more than the window (llmux.md section 3).
    assert.equal(refusal.headers['retry-after'], String(Math.min(60, refusal.retryAfterSeconds)));
    clock.set(at + refusal.retryAfterSeconds * 1000 - 1);
    if (at + refusal.retryAfterSeconds * 1000 - 1 < 61_000) refused(limiter.admit('key_a', BASIC, 0));
    clock.set(at + refusal.retryAfterSeconds * 1000);
    admitted(limiter.admit('key_a', BASIC, 0));
  }
});

test('retry-after waits only for as many old requests as must leave', () => {
  const clock = fakeClock(1_700_000_000_000);
  const start = clock.now();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 30; i++) oneRequest(limiter, 'key_a', BASIC);
  clock.set(start + 20_000);
  for (let i = 0; i < 30; i++) oneRequest(limiter, 'key_a', BASIC);
  clock.set(start + 30_000);
  assert.equal(refused(limiter.admit('key_a', BASIC, 0)).retryAfterSeconds, 31);
  clock.set(start + 61_000);
  for (let i = 0; i < 30; i++) oneRequest(limiter, 'key_a', BASIC);
  const refusal = refused(limiter.admit('key_a', BASIC, 0));
  assert.equal(refusal.retryAfterSeconds, 20, 'the second batch leaves at 81 s');
  assert.equal(refusal.message, 'Rate limit exceeded: 60 requests per minute for this key; retry after 20 s');
});

test('a refused request counts nothing', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 60; i++) oneRequest(limiter, 'key_a', BASIC);
  clock.set(30_000);
  for (let i = 0; i < 100; i++) refused(limiter.admit('key_a', BASIC, 5_000));
  const state = limiter.peek('key_a', BASIC);
  assert.deepEqual([state.requests, state.tokens, state.concurrent], [60, 0, 0]);
  clock.set(61_000);
  for (let i = 0; i < 60; i++) oneRequest(limiter, 'key_a', BASIC);
  assert.equal(limiter.admit('brand-new', { rpm: 0, tpm: 10, concurrency: 1 }, 0).ok, false);
  assert.equal(limiter.size(), 1, 'a key refused outright gets no state');
});

test('headers after each step show the limit, what remains and the seconds until a full reset', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  assert.deepEqual(limiter.peek('key_a', BASIC).headers, {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '60',
    'x-ratelimit-reset-requests': '0',
    'x-ratelimit-limit-tokens': '90000',
    'x-ratelimit-remaining-tokens': '90000',
    'x-ratelimit-reset-tokens': '0',
  });
  const first = admitted(limiter.admit('key_a', BASIC, 1_200));
  assert.deepEqual(first.headers, {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '59',
    'x-ratelimit-reset-requests': '61',
    'x-ratelimit-limit-tokens': '90000',
    'x-ratelimit-remaining-tokens': '88800',
    'x-ratelimit-reset-tokens': '61',
  });
  clock.set(10_500);
  const second = admitted(limiter.admit('key_a', BASIC, 800));
  assert.deepEqual(second.headers, {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '58',
    'x-ratelimit-reset-requests': '61',
    'x-ratelimit-limit-tokens': '90000',
    'x-ratelimit-remaining-tokens': '88000',
    'x-ratelimit-reset-tokens': '61',
  });
  clock.set(20_000);
  first.settle(3_000);
  first.release();
  second.settle(500);
  second.release();
  assert.deepEqual(limiter.peek('key_a', BASIC).headers, {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '58',
    'x-ratelimit-reset-requests': '51',
    'x-ratelimit-limit-tokens': '90000',
    'x-ratelimit-remaining-tokens': '86500',
    'x-ratelimit-reset-tokens': '61',
  });
  clock.set(71_500);
  assert.deepEqual(limiter.peek('key_a', BASIC).headers, {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '60',
    'x-ratelimit-reset-requests': '0',
    'x-ratelimit-limit-tokens': '90000',
    'x-ratelimit-remaining-tokens': '86500',
    'x-ratelimit-reset-tokens': '10',
  });
  clock.set(81_000);
  assert.equal(limiter.peek('key_a', BASIC).headers['x-ratelimit-remaining-tokens'], '90000');
});

test('a refusal carries the current headers plus retry-after, and peek counts nothing', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 60; i++) oneRequest(limiter, 'key_a', BASIC);
  clock.set(12_000);
  for (let i = 0; i < 5; i++) limiter.peek('key_a', BASIC);
  const refusal = refused(limiter.admit('key_a', BASIC, 0));
  assert.deepEqual(refusal.headers, {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-remaining-requests': '0',
    'x-ratelimit-reset-requests': '49',
    'x-ratelimit-limit-tokens': '90000',
    'x-ratelimit-remaining-tokens': '90000',
    'x-ratelimit-reset-tokens': '0',
    'retry-after': '49',
  });
  assert.equal(limiter.peek('key_a', BASIC).requests, 60);
});

test('a reservation counts while the request runs and settle replaces it by the real usage', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const admission = admitted(limiter.admit('key_a', BASIC, 1_000));
  assert.equal(limiter.peek('key_a', BASIC).tokens, 1_000);
  clock.set(5_000);
  admission.settle(300);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 300);
  admission.settle(50_000);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 300, 'only the first settle counts');
  admission.release();
  assert.deepEqual(
    (({ requests, tokens, concurrent }) => ({ requests, tokens, concurrent }))(limiter.peek('key_a', BASIC)),
    { requests: 1, tokens: 300, concurrent: 0 },
  );
});

test('a settle in a later granule, even after the admission has left the window, replaces the reservation exactly once', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const admission = admitted(limiter.admit('key_a', BASIC, 1_000));
  clock.set(45_000);
  admission.settle(2_500);
  admission.release();
  assert.equal(limiter.peek('key_a', BASIC).tokens, 2_500);
  clock.set(61_000);
  assert.deepEqual([limiter.peek('key_a', BASIC).requests, limiter.peek('key_a', BASIC).tokens], [0, 2_500]);
  clock.set(105_999);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 2_500);
  clock.set(106_000);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0);
});

test('a request running longer than the window keeps holding its reservation until it settles', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const admission = admitted(limiter.admit('key_a', BASIC, 5_000));
  clock.set(90_000);
  assert.deepEqual([limiter.peek('key_a', BASIC).tokens, limiter.peek('key_a', BASIC).concurrent], [5_000, 1]);
  admission.settle(100);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 100);
});

test('a request released without settle counts its reservation for a window from its release', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const admission = admitted(limiter.admit('key_a', BASIC, 1_000));
  clock.set(10_000);
  admission.release();
  assert.deepEqual([limiter.peek('key_a', BASIC).tokens, limiter.peek('key_a', BASIC).concurrent], [1_000, 0]);
  clock.set(70_999);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 1_000);
  clock.set(71_000);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0);
});

test('a settle after release replaces the reservation where it was counted', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const admission = admitted(limiter.admit('key_a', BASIC, 1_000));
  clock.set(10_000);
  admission.release();
  clock.set(20_000);
  admission.settle(200);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 200);
  clock.set(71_000);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0, 'the usage leaves with the granule of the release');
  admission.settle(9_999);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0);
});

test('tokens are refused once real usage reaches the limit, until that usage leaves the window', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const big = admitted(limiter.admit('key_a', BASIC, 100));
  admitted(limiter.admit('key_a', BASIC, 100)).release();
  clock.set(2_000);
  big.settle(95_000);
  big.release();
  clock.set(30_000);
  const refusal = refused(limiter.admit('key_a', BASIC, 100));
  assert.equal(refusal.reason, 'tokens');
  assert.equal(refusal.retryAfterSeconds, 33);
  assert.equal(refusal.message, "Rate limit exceeded: 90000 tokens per minute for this key (this request reserves 100: its estimated input plus its max_tokens, or the model's output limit without one); retry after 33 s");
  assert.equal(refusal.headers['x-ratelimit-remaining-tokens'], '0');
  clock.set(63_000);
  admitted(limiter.admit('key_a', BASIC, 100));
});

test('tokens reserved by requests in flight refuse new ones, and their retry-after is the shortest', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const held = admitted(limiter.admit('key_a', BASIC, 90_000));
  const refusal = refused(limiter.admit('key_a', BASIC, 10));
  assert.equal(refusal.reason, 'tokens');
  assert.equal(refusal.retryAfterSeconds, 1);
  held.settle(10);
  held.release();
  admitted(limiter.admit('key_a', BASIC, 10));
});

test('a reservation larger than tokens/min is admitted only when nothing is in use, and then runs alone', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  // Issue 14: a request larger than the whole allowance can never fit; it waits until the key is
  // idle instead of being refused for good, and holds the key while it runs.
  const small = admitted(limiter.admit('key_a', BASIC, 10));
  const waiting = refused(limiter.admit('key_a', BASIC, 200_000));
  assert.deepEqual([waiting.reason, waiting.retryAfterSeconds], ['tokens', 1]);
  small.settle(10);
  small.release();
  clock.set(5_000);
  const stillCounted = refused(limiter.admit('key_a', BASIC, 200_000));
  assert.equal(stillCounted.retryAfterSeconds, 56, 'the 10 tokens used at 0 s leave at 61 s');
  clock.set(61_000);
  const big = admitted(limiter.admit('key_a', BASIC, 200_000));
  assert.equal(big.headers['x-ratelimit-remaining-tokens'], '0');
  assert.equal(refused(limiter.admit('key_a', BASIC, 1)).reason, 'tokens');
});

test('reservations of parallel requests never add up past tokens/min', () => {
  const limiter = createLimiter({ now: () => 0 });
  // Issue 14: 10 parallel streams on a 90,000-tpm key used 500,100 tokens, since output counted
  // only once a request ended, and a key under its limit admitted any request. Each now reserves
  // its input and its max_tokens up front, and must fit.
  const held = Array.from({ length: 3 }, () => admitted(limiter.admit('key_a', BASIC, 25_000)));
  const fourth = refused(limiter.admit('key_a', BASIC, 25_000));
  assert.deepEqual([fourth.reason, fourth.retryAfterSeconds], ['tokens', 1]);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 75_000);
  held[0]!.settle(4_000);
  held[0]!.release();
  admitted(limiter.admit('key_a', BASIC, 11_000));
  assert.equal(limiter.peek('key_a', BASIC).tokens, 65_000, 'the settled 4,000 and three reservations');
  assert.equal(refused(limiter.admit('key_a', BASIC, 30_000)).reason, 'tokens');
});

test('a reservation that does not fit in what is left is refused while the key is still under its limit', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const used = admitted(limiter.admit('key_a', BASIC, 100));
  used.settle(85_000);
  used.release();
  clock.set(10_000);
  const refusal = refused(limiter.admit('key_a', BASIC, 10_000));
  assert.equal(refusal.reason, 'tokens');
  assert.equal(refusal.retryAfterSeconds, 51, 'the 85,000 tokens counted at 0 s leave at 61 s');
  assert.equal(refusal.headers['x-ratelimit-remaining-tokens'], '5000');
  assert.match(refusal.message, /this request reserves 10000/);
  admitted(limiter.admit('key_a', BASIC, 5_000));
});

test('the concurrency cap refuses the 11th request in flight until one is released', () => {
  const limiter = createLimiter({ now: () => 0 });
  const held = Array.from({ length: 10 }, () => admitted(limiter.admit('key_a', BASIC, 0)));
  const refusal = refused(limiter.admit('key_a', BASIC, 0));
  assert.equal(refusal.reason, 'concurrency');
  assert.equal(refusal.retryAfterSeconds, 1);
  assert.equal(refusal.message, 'Rate limit exceeded: 10 concurrent requests for this key; retry after 1 s');
  held[3]!.release();
  admitted(limiter.admit('key_a', BASIC, 0));
  assert.equal(refused(limiter.admit('key_a', BASIC, 0)).reason, 'concurrency');
});

test('release frees exactly one slot however often it is called', () => {
  const limiter = createLimiter({ now: () => 0 });
  const first = admitted(limiter.admit('key_a', BASIC, 0));
  admitted(limiter.admit('key_a', BASIC, 0));
  first.release();
  first.release();
  first.release();
  assert.equal(limiter.peek('key_a', BASIC).concurrent, 1);
  const detached = first.release;
  detached();
  assert.equal(limiter.peek('key_a', BASIC).concurrent, 1, 'release works unbound, as an event handler');
});

test('many interleaved admits and releases never exceed the concurrency cap', () => {
  const limiter = createLimiter({ now: () => 0 });
  const limits: LimitSet = { rpm: 1_000_000, tpm: 1_000_000_000, concurrency: 7 };
  const held: Admission[] = [];
  let seed = 7;
  let admittedCount = 0;
  for (let i = 0; i < 5_000; i++) {
    seed = (seed * 48_271) % 2_147_483_647;
    if (seed % 3 === 0 && held.length > 0) {
      held.splice(seed % held.length, 1)[0]!.release();
    } else {
      const result = limiter.admit('key_a', limits, 10);
      if (result.ok) {
        held.push(result);
        admittedCount++;
      } else {
        assert.equal(result.reason, 'concurrency');
        assert.equal(held.length, 7);
      }
    }
    assert.ok(held.length <= 7);
    assert.equal(limiter.peek('key_a', limits).concurrent, held.length);
  }
  assert.ok(admittedCount > 1_000, 'the loop really exercised admissions');
});

test('when several limits are exceeded the refusal names the one with the longest wait', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const limits: LimitSet = { rpm: 2, tpm: 1_000, concurrency: 2 };
  const first = admitted(limiter.admit('key_a', limits, 10));
  clock.set(20_000);
  const second = admitted(limiter.admit('key_a', limits, 10));
  second.settle(5_000);
  second.release();
  clock.set(30_000);
  // Requests free up at 61 s, tokens at 81 s, the slot whenever: tokens wait longest.
  const refusal = refused(limiter.admit('key_a', limits, 10));
  assert.equal(refusal.reason, 'tokens');
  assert.equal(refusal.retryAfterSeconds, 51);
  first.release();
});

test('a limit of 0 refuses everything on that dimension; Infinity never refuses and drops its headers', () => {
  const limiter = createLimiter({ now: () => 0 });
  const noRequests = refused(limiter.admit('key_a', { rpm: 0, tpm: 10, concurrency: 1 }, 0));
  assert.deepEqual([noRequests.reason, noRequests.retryAfterSeconds], ['requests', 60]);
  assert.equal(refused(limiter.admit('key_a', { rpm: 5, tpm: 0, concurrency: 1 }, 0)).reason, 'tokens');
  assert.equal(refused(limiter.admit('key_a', { rpm: 5, tpm: 5, concurrency: 0 }, 0)).reason, 'concurrency');
  const unlimited: LimitSet = { rpm: Infinity, tpm: 1_000, concurrency: Infinity };
  let last: Admission | undefined;
  for (let i = 0; i < 10_000; i++) last = admitted(limiter.admit('key_b', unlimited, 0));
  assert.deepEqual(last?.headers, {
    'x-ratelimit-limit-tokens': '1000',
    'x-ratelimit-remaining-tokens': '1000',
    'x-ratelimit-reset-tokens': '0',
  });
  assert.deepEqual(limiter.peek('key_b', { rpm: 10, tpm: Infinity, concurrency: 1 }).headers, {
    'x-ratelimit-limit-requests': '10',
    'x-ratelimit-remaining-requests': '0',
    'x-ratelimit-reset-requests': '61',
  });
  assert.deepEqual(limiter.peek('key_b', { rpm: Infinity, tpm: Infinity, concurrency: 1 }).headers, {});
});

test('invalid limits are a programming error (keys and tiers are checked at load); token figures that are not positive numbers count as 0', () => {
  const limiter = createLimiter({ now: () => 0 });
  for (const limits of [{ rpm: -1, tpm: 1, concurrency: 1 }, { rpm: 1, tpm: 1.5, concurrency: 1 }, { rpm: 1, tpm: 1, concurrency: Number.NaN }]) {
    assert.throws(() => limiter.admit('key_a', limits, 0), RangeError);
    assert.throws(() => limiter.peek('key_a', limits), RangeError);
  }
  const admission = admitted(limiter.admit('key_a', BASIC, Number.NaN));
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0);
  admission.settle(-5);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0);
  admitted(limiter.admit('key_a', BASIC, 10.2)).settle(Number.POSITIVE_INFINITY);
  assert.equal(limiter.peek('key_a', BASIC).tokens, 0);
  admitted(limiter.admit('key_a', BASIC, 10.2));
  assert.equal(limiter.peek('key_a', BASIC).tokens, 11, 'a fractional reservation rounds up');
});

test('an absurd usage figure counts as 2^32 and leaves the window like any other', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const absurd = admitted(limiter.admit('key_a', ROOMY, 10));
  absurd.settle(1e308);
  absurd.release();
  assert.equal(limiter.peek('key_a', ROOMY).tokens, 2 ** 32);
  clock.set(61_000);
  assert.equal(limiter.peek('key_a', ROOMY).tokens, 0, 'nothing is left behind once it leaves');
  admitted(limiter.admit('key_a', BASIC, 10));
});

test('check, before a body is read, refuses a model request at any limit and counts nothing', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  const limits: LimitSet = { rpm: 2, tpm: 1_000, concurrency: 1 };
  assert.equal(limiter.check('key_a', limits, 'model'), undefined);
  const running = admitted(limiter.admit('key_a', limits, 10));
  assert.equal(limiter.check('key_a', limits, 'model')?.reason, 'concurrency');
  assert.equal(limiter.check('key_a', limits, 'unadmitted'), undefined, 'count_tokens needs no slot');
  running.settle(1_000);
  running.release();
  const full = limiter.check('key_a', limits, 'model');
  assert.deepEqual([full?.reason, full?.retryAfterSeconds, full?.reservation], ['tokens', 61, 0]);
  clock.set(61_000);
  oneRequest(limiter, 'key_a', limits);
  oneRequest(limiter, 'key_a', limits);
  assert.equal(limiter.check('key_a', limits, 'model')?.reason, 'requests');
  assert.deepEqual([limiter.peek('key_a', limits).requests, limiter.peek('key_a', limits).concurrent], [2, 0]);
});

test('requests that are never admitted have a budget of their own: the key\'s rpm in requests, and bytes', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now, unadmittedBytes: 1_000_000 });
  // Issue 14: a 1-rpm key sent 191 count_tokens bodies of 29 MB in 20 s, all parsed.
  const oneRpm: LimitSet = { rpm: 1, tpm: 90_000, concurrency: 10 };
  limiter.chargeUnadmitted('key_a', oneRpm, 100);
  const byCount = limiter.check('key_a', oneRpm, 'unadmitted');
  assert.deepEqual([byCount?.reason, byCount?.retryAfterSeconds], ['unadmitted_requests', 61]);
  assert.equal(limiter.check('key_a', oneRpm, 'model')?.reason, 'unadmitted_requests', 'a model request would read its body too');
  assert.equal(refusalMessage(byCount!), 'Rate limit exceeded: 1 requests per minute for this key that were refused or only counted tokens; retry after 60 s');
  assert.equal(limiter.admit('key_a', oneRpm, 10).ok, true, 'a body already read is not refused for the budget it spent');
  clock.set(30_000);
  for (let i = 0; i < 3; i++) limiter.chargeUnadmitted('key_b', ROOMY, 400_000);
  const byBytes = limiter.check('key_b', ROOMY, 'unadmitted');
  assert.deepEqual([byBytes?.reason, byBytes?.limit, byBytes?.retryAfterSeconds], ['unadmitted_bytes', 1_000_000, 61]);
  assert.equal(limiter.peek('key_b', ROOMY).requests, 0, 'nothing counts against requests/min');
  clock.set(91_000);
  assert.equal(limiter.check('key_b', ROOMY, 'unadmitted'), undefined);
});

test('rateLimitError turns a refusal into the 429 rate_limit_error with its headers', () => {
  const limiter = createLimiter({ now: () => 0 });
  const refusal = refused(limiter.admit('key_a', { rpm: 0, tpm: 1, concurrency: 1 }, 0));
  const error = rateLimitError(refusal);
  assert.deepEqual([error.status, error.type, error.code, error.message], [429, 'rate_limit_error', 'rate_limit_exceeded', refusal.message]);
  assert.equal(error.headers?.['retry-after'], '60');
});

test('a custom window counts over its own length and says so in the message', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now, windowMs: 10_000 });
  for (let i = 0; i < 3; i++) oneRequest(limiter, 'key_a', { rpm: 3, tpm: 100, concurrency: 5 });
  clock.set(4_000);
  const refusal = refused(limiter.admit('key_a', { rpm: 3, tpm: 100, concurrency: 5 }, 0));
  assert.equal(refusal.message, 'Rate limit exceeded: 3 requests per 10 s for this key; retry after 7 s');
  clock.set(10_166);
  refused(limiter.admit('key_a', { rpm: 3, tpm: 100, concurrency: 5 }, 0));
  clock.set(10_167);
  oneRequest(limiter, 'key_a', { rpm: 3, tpm: 100, concurrency: 5 });
});

test('sweep forgets idle keys but keeps keys with requests in flight or still in the window', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  oneRequest(limiter, 'idle', BASIC);
  const running = admitted(limiter.admit('running', BASIC, 0));
  clock.set(50_000);
  oneRequest(limiter, 'recent', BASIC);
  clock.set(61_000);
  limiter.sweep();
  assert.equal(limiter.size(), 2);
  assert.equal(limiter.peek('running', BASIC).concurrent, 1);
  assert.equal(limiter.peek('recent', BASIC).requests, 1);
  running.release();
  limiter.sweep();
  assert.equal(limiter.size(), 2, 'the released estimate still counts');
  clock.set(122_000);
  limiter.sweep();
  assert.equal(limiter.size(), 0);
  running.release();
  running.settle(10);
  assert.equal(limiter.peek('running', BASIC).concurrent, 0, 'late calls on a forgotten key change nothing');
});

test('100 000 keys are all forgotten by a sweep one window later', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 100_000; i++) {
    const admission = admitted(limiter.admit(`key_${i}`, BASIC, 100));
    admission.settle(150);
    admission.release();
  }
  assert.equal(limiter.size(), 100_000);
  clock.set(60_999);
  limiter.sweep();
  assert.equal(limiter.size(), 100_000);
  clock.set(61_000);
  limiter.sweep();
  assert.equal(limiter.size(), 0);
});

test('admit sweeps by itself once a window has passed since the last sweep', () => {
  const clock = fakeClock();
  const limiter = createLimiter({ now: clock.now });
  for (let i = 0; i < 100; i++) oneRequest(limiter, `key_${i}`, ROOMY);
  clock.set(30_000);
  oneRequest(limiter, 'key_late', ROOMY);
  assert.equal(limiter.size(), 101, 'no sweep within the first window');
  clock.set(61_000);
  oneRequest(limiter, 'key_next', ROOMY);
  assert.equal(limiter.size(), 2, 'the first admission after a window swept the idle keys');
});
