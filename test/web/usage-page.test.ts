import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { createWebClient, csrfOf } from './web-client.ts';
import type { WebClient } from './web-client.ts';
import { keyBars, usageView } from '../../src/web/usage-page.ts';
import { modelColours } from '../../src/web/charts.ts';
import { parseCreateForm } from '../../src/web/dashboard.ts';
import type { UsageRow } from '../../src/usage/ledger.ts';

const NOW = Date.UTC(2026, 2, 14, 15, 20);
const DAY = 86_400_000;

async function signIn(g: TestGateway): Promise<WebClient> {
  const web = createWebClient(g.url);
  const page = await web.get('/dashboard');
  assert.equal((await web.post('/dashboard/sign-in', { csrf: csrfOf(page.text), admin_key: g.adminKey })).status, 303);
  return web;
}

function row(keyId: string | null, costUsd: number, extra: Partial<UsageRow> = {}): UsageRow {
  return { start: '', end: '', key_id: keyId, model: null, requests: 1, input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost_usd: costUsd, ...extra };
}

describe('the usage view', () => {
  it('sends a signed-out visitor to sign in, and shows a signed-in admin 30 days of charts', async () => {
    const g = await startTestGateway({ now: () => NOW });
    try {
      const signedOut = await fetch(`${g.url}/dashboard/usage`, { redirect: 'manual' });
      assert.equal(signedOut.status, 303);
      assert.equal(signedOut.headers.get('location'), '/dashboard');
      const key = (await g.gateway.keys.create({ name: '<b>Tom & Jerry</b>' })).record.id;
      const entry = (model: string, at: number, costUsd: number) => g.gateway.usage.record({ keyId: key, model, at, inputTokens: 1000, outputTokens: 10, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd });
      entry('m-old', NOW - 30 * DAY, 100); // one day too old for the view
      entry('m-one', NOW - 29 * DAY, 1.25);
      entry('m-two', NOW, 0.5);
      const web = await signIn(g);
      const page = await web.get('/dashboard/usage');
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      assert.match(page.text, /All keys, 2026-02-13 to 2026-03-14 \(UTC\): 2 requests, 2,020 tokens, \$1\.75 at the catalog/);
      assert.equal((page.text.match(/<svg [^>]*role="img"/g) ?? []).length, 3);
      assert.ok(page.text.includes('&lt;b&gt;Tom &amp; Jerry&lt;/b&gt;'), 'key names are escaped');
      assert.ok(!page.text.includes('<b>Tom'));
      assert.ok(!page.text.includes('m-old'), 'usage older than 30 days is not shown');
      assert.ok(!/<script(?! src="\/assets\/llmux\.js")/.test(page.text), 'no inline script');
      assert.ok(!/ style=/.test(page.text), 'no style attributes (the CSP forbids them)');
    } finally {
      await g.close();
    }
  });

  it('names top keys by name, adding the id when two share a name or the key is gone', () => {
    const names = new Map([['key_a', 'laptop'], ['key_b', 'laptop'], ['key_c', 'ci']]);
    assert.deepEqual(keyBars([row('key_a', 1), row('key_b', 2), row('key_c', 3), row('key_gone', 4), row(null, 5)], names), [
      { label: 'laptop (key_a)', value: 1 }, { label: 'laptop (key_b)', value: 2 }, { label: 'ci', value: 3 }, { label: 'key_gone', value: 4 },
    ]);
  });

  it('gives a model one colour in both charts, even when it is missing from one of them', () => {
    // Two ids wanting the same palette colour: assigned per chart, the second one's colour moved
    // when the first (a free model: tokens, no cost) was missing from the cost chart.
    const ids = Array.from({ length: 200 }, (_, i) => `model-${i}`);
    let pair: [string, string] | undefined;
    for (const a of ids) {
      for (const b of ids) if (a < b && modelColours([a, b]).get(b) !== modelColours([b]).get(b)) pair = [a, b];
      if (pair !== undefined) break;
    }
    assert.ok(pair !== undefined, 'two ids that want one colour');
    const [free, paid] = pair;
    const day = (model: string, costUsd: number): UsageRow => row(null, costUsd, { start: '2026-03-14T00:00:00.000Z', model, input_tokens: 1000 });
    const view = usageView([day(free, 0), day(paid, 1.5)], [], new Map(), NOW).__html;
    const charts = view.split('<svg ').slice(1, 3);
    const fills = (svg: string, model: string): Set<string> => new Set([...svg.matchAll(new RegExp(`fill="([^"]+)"(?:>|/>)<(?:title|text)[^>]*>(?:2026-03-14 · )?${model}[:<]`, 'g'))].map((m) => m[1] as string));
    const costFill = fills(charts[0] as string, paid);
    const tokenFill = fills(charts[1] as string, paid);
    assert.equal(costFill.size, 1, `one colour for ${paid} in the cost chart`);
    assert.deepEqual(costFill, tokenFill, `${paid} is drawn alike in both charts`);
    assert.ok(!(charts[0] as string).includes(`${free}:`), `${free} costs nothing: not in the cost chart`);
  });

  it('writes every amount of money on the page by one rule: cents from $1 up, four decimals below', () => {
    const at = (model: string, costUsd: number): UsageRow => row(null, costUsd, { start: '2026-03-14T00:00:00.000Z', model, input_tokens: 10 });
    const names = new Map([['key_a', 'a'], ['key_b', 'b']]);
    const view = usageView([at('big', 12.3456), at('small', 0.01234), at('none', 0)], [row('key_a', 12.3456), row('key_b', 0.01234)], names, NOW).__html;
    // Axis ticks are marks of the scale ($0, $5, $10, $15): every other amount is a figure.
    const ticks = new Set([...view.matchAll(/text-anchor="end" font-size="16">(\$[\d.,k]+)<\/text>/g)].map((m) => m[1]));
    const amounts = [...view.matchAll(/\$[\d,]+(?:\.\d+)?/g)].map((m) => m[0]).filter((a) => !ticks.has(a));
    assert.ok(amounts.length >= 8, `legend, tooltips, bar values, summaries: ${amounts.join(' ')}`);
    for (const amount of amounts) {
      const value = Number(amount.slice(1).replace(/,/g, ''));
      assert.match(amount, value >= 1 ? /\.\d{2}$/ : /\.\d{4}$/, amount);
    }
    assert.ok(amounts.includes('$12.35') && amounts.includes('$0.0123') && amounts.includes('$12.36'), amounts.join(' '));
  });

  it('draws "No usage yet" before any usage', () => {
    const view = usageView([], [], new Map(), NOW).__html;
    assert.equal((view.match(/No usage yet/g) ?? []).length, 3);
    assert.match(view, /0 requests, 0 tokens, \$0\.0000/);
  });
});

describe('budgets on the dashboard', () => {
  it('shows each key\'s budget, its own or its tier\'s, with what it spent this period', async () => {
    const g = await startTestGateway({ now: () => NOW, config: { tiers: { basic: { budget_usd: 10, budget_period: 'month' } } } });
    try {
      const own = (await g.gateway.keys.create({ name: 'own-budget', budget: { usd: 2, period: 'day' } })).record.id;
      g.gateway.usage.record({ keyId: own, model: 'm', at: NOW, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.5 });
      const web = await signIn(g);
      const page = await web.get('/dashboard');
      const card = page.text.slice(page.text.indexOf(own) - 400);
      assert.match(card, /<dt>Budget<\/dt><dd>\$0\.5000 of \$2\.00 today\s*<meter/);
      assert.match(card, /Resets 2026-03-15 00:00 UTC/);
      assert.match(page.text, /\$0\.0000 of \$10\.00 this month <span class="hint">\(tier's\)<\/span>/, 'the basic test key has its tier\'s');
    } finally {
      await g.close();
    }
  });

  it('creates a key with a budget from the form, a month unless a day is chosen', () => {
    assert.deepEqual(parseCreateForm({ name: 'a', budget_usd: '12.5' }), { ok: true, options: { name: 'a', tier: 'basic', limits: {}, budget: { usd: 12.5, period: 'month' } } });
    assert.deepEqual(parseCreateForm({ name: 'a', budget_usd: '0', budget_period: 'day' }), { ok: true, options: { name: 'a', tier: 'basic', limits: {}, budget: { usd: 0, period: 'day' } } });
    assert.deepEqual(parseCreateForm({ name: 'a', budget_usd: '', budget_period: 'day' }), { ok: true, options: { name: 'a', tier: 'basic', limits: {} } });
    for (const bad of ['-1', 'lots', 'Infinity']) assert.equal(parseCreateForm({ name: 'a', budget_usd: bad }).ok, false, bad);
  });
});
