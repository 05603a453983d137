import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { alternateOrder, pairRound, pairSummary, proxySpec, ratioOfMedians } from '../../bench/pair.ts';
import { ROOT } from '../../bench/children.ts';

test('a round is each side\'s CPU per request in µs, and B over A', () => {
  // 100 ticks a second: 30 ticks are 300 ms; over 1,500 requests, 200 µs each.
  const round = pairRound({ ticks: 30, requests: 1500 }, { ticks: 45, requests: 1500 }, 100);
  assert.equal(round.aUs, 200);
  assert.equal(round.bUs, 300);
  assert.equal(round.ratio, 1.5);
  // Different request counts: per request, not per round.
  assert.equal(pairRound({ ticks: 10, requests: 1000 }, { ticks: 10, requests: 500 }, 100).ratio, 2);
});

test('a side that answered nothing gives no ratio, and the summary leaves that round out', () => {
  const empty = pairRound({ ticks: 10, requests: 0 }, { ticks: 10, requests: 100 }, 100);
  assert.ok(Number.isNaN(empty.ratio));
  const summary = pairSummary([empty, { aUs: 100, bUs: 90, ratio: 0.9 }, { aUs: 100, bUs: 110, ratio: 1.1 }, { aUs: 100, bUs: 100, ratio: 1 }]);
  assert.deepEqual(summary, { median: 1, low: 0.9, high: 1.1, rounds: 3 });
  assert.throws(() => pairSummary([empty]), /no round has a ratio/);
});

test('a proxy is the bare pipe, this checkout\'s dist/ or another dist directory', () => {
  assert.deepEqual(proxySpec('bare'), { kind: 'bare' });
  assert.deepEqual(proxySpec('llmux'), { kind: 'llmux', dist: join(ROOT, 'dist') });
  assert.deepEqual(proxySpec('llmux:/tmp/other/dist'), { kind: 'llmux', dist: '/tmp/other/dist' });
  assert.throws(() => proxySpec('llmux:'), /bare, llmux or llmux:DIR/);
  assert.throws(() => proxySpec('portkey'), /bare, llmux or llmux:DIR/);
});

test('--alternate loads A first, then B first in every other round (the bench always loads the bare proxy first)', () => {
  assert.deepEqual([0, 1, 2, 3].map(alternateOrder), [['a', 'b'], ['b', 'a'], ['a', 'b'], ['b', 'a']]);
});

test('the bench\'s ratio is B\'s median round over A\'s, not the median of the rounds\' ratios', () => {
  const rounds = [{ aUs: 100, bUs: 130, ratio: 1.3 }, { aUs: 150, bUs: 120, ratio: 0.8 }, { aUs: 110, bUs: 140, ratio: 140 / 110 }];
  assert.equal(ratioOfMedians(rounds), 130 / 110);
  assert.equal(pairSummary(rounds).median, 140 / 110);
  // A round a side answered nothing in is left out of that side's median.
  assert.equal(ratioOfMedians([...rounds, { aUs: Number.NaN, bUs: 90, ratio: Number.NaN }]), 125 / 110);
  assert.throws(() => ratioOfMedians([{ aUs: Number.NaN, bUs: 90, ratio: Number.NaN }]), /no round has a ratio/);
});
