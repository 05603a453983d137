import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { PRICED_MODELS, chat, chatJson, ledgerCounted } from '../helpers/usage.ts';
import { browserSkip, launchChromium } from '../helpers/cdp.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 14, 15, 20);

/** Thirty days of varied usage: four models, five keys, quiet days, one busy day, and today so far. */
async function seed(t: TestGateway): Promise<void> {
  const keys = await Promise.all(['ci-pipeline-production', 'alice laptop', 'batch-eval-nightly', 'bob', 'Tom & "Jerry" <ops>']
    .map(async (name, i) => (await t.gateway.keys.create({ name, tier: i === 0 ? 'enterprise' : 'basic' })).record.id));
  const models = [['claude-sonnet-4-5', 3, 15], ['gpt-4.1-mini', 0.4, 1.6], ['qwen-local', 0, 0], ['claude-haiku-4-5', 1, 5]] as const;
  let seedValue = 11;
  const random = () => {
    seedValue = (seedValue * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seedValue / 2_147_483_648;
  };
  for (let d = 29; d >= 0; d--) {
    if (d % 9 === 5) continue; // a quiet day
    const busy = d === 12 ? 4 : 1;
    for (const [model, inputPrice, outputPrice] of models) {
      for (const [k, keyId] of keys.entries()) {
        if (random() < 0.45) continue;
        const input = Math.round(random() * 400_000 * busy / (k + 1));
        const output = Math.round(input * 0.08);
        const cacheRead = Math.round(input * random());
        t.gateway.usage.record({
          keyId, model, at: NOW - d * DAY - Math.round(random() * 10) * 3_600_000,
          inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheCreationTokens: 0,
          costUsd: ((input + cacheRead) * inputPrice + output * outputPrice) / 1e6,
        });
      }
    }
  }
}

for (const viewport of [
  { label: 'desktop', width: 1280, height: 900, mobile: false, deviceScaleFactor: 1 },
  { label: 'phone', width: 390, height: 844, mobile: true, deviceScaleFactor: 2 },
]) {
  test(`on ${viewport.label}: the usage view charts 30 days of cost and tokens by model and the top keys, and key cards show budgets`, { skip: browserSkip(), timeout: 120_000 }, async () => {
    const g = await startTestGateway({ now: () => NOW, config: { models: PRICED_MODELS, tiers: { pro: { budget_usd: 50 } } } });
    const browser = await launchChromium();
    try {
      await seed(g);
      const capped = await g.gateway.keys.create({ name: 'capped', budget: { usd: 0.01, period: 'day' } });
      g.upstream.fallback = chatJson({ prompt: 1000, completion: 200, cached: 0 });
      for (let i = 0; i < 3; i++) await (await chat(g, capped.key, 'gpt-test')).arrayBuffer();
      await ledgerCounted(g, (await g.gateway.usage.query({ since: 0, until: NOW + DAY, keyId: 'all', groupBy: 'key' })).reduce((n, r) => n + r.requests, 0));

      const page = await browser.newPage(viewport);
      await page.goto(`${g.url}/dashboard/usage`);
      assert.match(await page.text(), /Sign in/, 'signed out: sent to sign in');
      await page.type('#admin_key', g.adminKey);
      await page.clickAndWait('form[action="/dashboard/sign-in"] button[type=submit]');
      assert.match(await page.text(), /Budget\s*\$0\.0108 of \$0\.0100 today/);
      assert.match(await page.text(), /Spent: model requests are refused until 2026-03-15 00:00 UTC/);
      assert.match(await page.text(), /\$0\.0000 of \$50\.00 this month\s*\(tier's\)/, 'the admin key (pro) shows its tier\'s budget');
      await page.screenshot(join(ARTIFACTS, `usage-key-cards-${viewport.label}.png`));
      await page.screenshot(join(ARTIFACTS, `usage-key-card-capped-${viewport.label}.png`), `.card:has(input[value="${capped.record.id}"])`);
      await page.screenshot(join(ARTIFACTS, `usage-header-${viewport.label}.png`), 'header.top');

      await page.clickAndWait('header nav a[href="/dashboard/usage"]');
      const text = await page.text();
      assert.match(text, /All keys, 2026-02-13 to 2026-03-14 \(UTC\)/);
      await page.screenshot(join(ARTIFACTS, `usage-view-${viewport.label}.png`));
      assert.ok(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'the page scrolls sideways');
      const labels = await page.evaluate<string[]>(`[...document.querySelectorAll('svg[role="img"]')].map((s) => s.getAttribute('aria-label'))`);
      assert.equal(labels.length, 3);
      assert.match(labels[0] ?? '', /^Cost per day by model, 2026-02-13 to 2026-03-14: \$[\d,.]+ in total/);
      assert.match(labels[1] ?? '', /^Tokens per day by model/);
      assert.match(labels[2] ?? '', /^Top keys by cost.*largest ci-pipeline-production/);
      assert.equal(await page.evaluate<number>(`document.querySelectorAll('svg[role="img"]')[0].querySelectorAll('rect[fill^="#"] > title').length > 50`), true, 'bars for the days');
      // One colour per model on the page: the legend of each chart, model -> swatch colour.
      const legends = await page.evaluate<Array<Record<string, string>>>(`[...document.querySelectorAll('svg[role="img"]')].slice(0, 2).map((svg) => Object.fromEntries(
        [...svg.querySelectorAll('g > rect')].map((r) => [r.parentElement.querySelector('title').textContent.replace(/: .*$/, ''), r.getAttribute('fill')]).filter(([, fill]) => fill.startsWith('#'))))`);
      const [cost = {}, tokens = {}] = legends;
      assert.ok(Object.keys(cost).length >= 3 && Object.keys(tokens).length > Object.keys(cost).length, 'a free model is in the tokens chart only');
      for (const [model, fill] of Object.entries(cost)) assert.equal(tokens[model], fill, `${model}: one colour in both charts`);
      assert.equal(new Set(Object.values(tokens)).size, Object.keys(tokens).length, 'a colour per model');
      const smallest = await page.evaluate<number>(`Math.min(...[...document.querySelectorAll('svg[role=img]')].flatMap((svg) => {
        const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        return [...svg.querySelectorAll('text')].map((t) => parseFloat(t.getAttribute('font-size') ?? svg.getAttribute('font-size')) * scale);
      }))`);
      assert.ok(smallest >= 11, `smallest chart text is ${smallest} px`);
      assert.deepEqual(page.problems, [], 'no CSP violations or script errors');
    } finally {
      await browser.close();
      await g.close();
    }
  });
}
