import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gcTotals, perRequest } from '../../bench/gc.ts';

// Lines as Node 20's V8 prints them under --trace-gc-nvp (shortened: the fields read, and some around them).
const SCAVENGE = '[19294:0x121dee80]     6967 ms: pause=1.2 mutator=24.9 gc=s reduce_memory=0 scavenge=1.22 total_size_before=18882960 allocated=3438216 promoted=266496 new_space_survived=464664 promotion_rate=78.7%';
const FULL = '[19294:0x121dee80]     7012 ms: pause=5.5 mutator=40.1 gc=mc reduce_memory=0 mark=3.1 allocated=1000000 promoted=0 promotion_rate=0.0%';

test('sums allocation, promotion and each kind of pause over the trace, skipping every other line', () => {
  const totals = gcTotals(['{"port":1234}', SCAVENGE, 'a line of the server', SCAVENGE, FULL, ''].join('\n'));
  assert.deepEqual(totals, {
    scavenges: 2,
    fullCollections: 1,
    allocatedBytes: 2 * 3438216 + 1000000,
    promotedBytes: 2 * 266496,
    scavengePauseMs: 2.4,
    fullPauseMs: 5.5,
  });
  // `promotion_rate=` and `new_space_survived=` are not taken for `promoted=` or `survived=`.
  assert.equal(gcTotals(SCAVENGE.replace(' promoted=266496', '')).promotedBytes, 0);
});

test('prints the totals per request answered', () => {
  const line = perRequest(gcTotals(`${SCAVENGE}\n${FULL}`), 100);
  assert.equal(line, '100 requests (1 scavenges, 1 full collections); a request: 43.3 KB allocated, 2665 B promoted, scavenges 12.0 µs, full collections 55.0 µs');
  assert.match(perRequest(gcTotals(''), 0), /NaN KB allocated/);
});
