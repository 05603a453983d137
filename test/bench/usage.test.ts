import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { formatUsageBench, jsonPassThroughCpuUs, measureUsageCost } from '../../bench/usage.ts';

test('the usage micro-benchmark measures every part on real work, and compares with the JSON pass-through CPU', { timeout: 60_000 }, async () => {
  const result = await measureUsageCost({ requests: 2_000, rounds: 1 });
  for (const [name, ns] of Object.entries(result)) {
    if (name !== 'ledgerRequests') assert.ok(Number.isFinite(ns) && ns > 0, `${name}: ${ns}`);
  }
  // Two rounds (warm-up and one measured) of 2,000 records, two flush rounds of 3,500, and the budget key's 60.
  assert.equal(result.ledgerRequests, 2 * 2_000 + 2 * 3_500 + 60, 'every record was kept by the ledger');
  const text = formatUsageBench(result, 288);
  assert.match(text, /^ledger \+ metrics per request +\d+ ns \(\d+\.\d\d%\)$/m);
  assert.match(text, /of 288 µs, llmux's CPU per chat JSON pass-through request/);
});

test('reads llmux\'s CPU per chat JSON pass-through request from RESULTS.md', () => {
  const results = readFileSync(new URL('../../bench/RESULTS.md', import.meta.url), 'utf8');
  assert.ok((jsonPassThroughCpuUs(results) ?? 0) > 0);
  assert.equal(jsonPassThroughCpuUs('| chat JSON pass-through | llmux | 3470 | 8.07 | 33.81 | 288 | 100% |'), 288);
  assert.equal(jsonPassThroughCpuUs('# nothing here'), undefined);
});
