import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { browserSkip, launchChromium } from '../helpers/cdp.ts';
import type { Page } from '../helpers/cdp.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

function chat(g: TestGateway, key: string) {
  return fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

async function signIn(page: Page, g: TestGateway): Promise<void> {
  await page.goto(`${g.url}/dashboard`);
  assert.match(await page.text(), /Sign in/);
  await page.type('#admin_key', g.adminKey);
  await page.clickAndWait('form[action="/dashboard/sign-in"] button[type=submit]');
  assert.match(await page.text(), /API keys/);
}

for (const viewport of [
  { label: 'desktop', width: 1280, height: 900, mobile: false, deviceScaleFactor: 1 },
  { label: 'phone', width: 390, height: 844, mobile: true, deviceScaleFactor: 2 },
]) {
  test(`on ${viewport.label}: sign in, create a key that works, revoke it so it gets 401, sign out`, { skip: browserSkip(), timeout: 120_000 }, async () => {
    const g = await startTestGateway();
    const browser = await launchChromium();
    try {
      // A pending device request and some usage, so every section has something to show.
      await fetch(`${g.url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Zed editor on laptop' }) });
      assert.equal((await chat(g, g.key)).status, 200);

      const page = await browser.newPage(viewport);
      await page.goto(`${g.url}/dashboard`);
      await page.screenshot(join(ARTIFACTS, `dashboard-sign-in-${viewport.label}.png`));
      await signIn(page, g);
      assert.match(await page.text(), /Zed editor on laptop/);

      await page.click('#create summary');
      await page.type('#name', 'browser-made key');
      await page.select('#create select[name=tier]', 'pro');
      await page.type('#rpm', '30');
      await page.screenshot(join(ARTIFACTS, `dashboard-create-${viewport.label}.png`));
      await page.clickAndWait('#create button[type=submit]');
      const key = await page.evaluate<string>("document.getElementById('new-key').value");
      assert.match(key, /^sk-llmux-[A-Za-z0-9_-]{43}$/);
      assert.equal(await page.evaluate<boolean>("document.querySelector('button[data-copy]').hidden"), false, 'the served script shows the copy button');
      await page.screenshot(join(ARTIFACTS, `dashboard-new-key-${viewport.label}.png`));
      if (viewport.label === 'phone') {
        assert.ok(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'the dashboard scrolls sideways on a phone');
      }
      const used = await chat(g, key);
      assert.equal(used.status, 200, await used.text());

      const record = g.gateway.keys.findBySecret(key);
      assert.ok(record);
      assert.equal(record.tier, 'pro');
      assert.equal(record.limits.rpm, 30);
      await page.clickAndWait(`form[action="/dashboard/keys/revoke"]:has(input[value="${record.id}"]) button`);
      assert.match(await page.text(), /Revoked “browser-made key”/);
      assert.equal(await page.evaluate<boolean>("document.getElementById('new-key') === null"), true, 'the key is shown only once');
      await page.screenshot(join(ARTIFACTS, `dashboard-revoked-${viewport.label}.png`));
      assert.equal((await chat(g, key)).status, 401);

      await page.clickAndWait('form.sign-out button');
      assert.match(await page.text(), /Sign in/);
      await page.goto(`${g.url}/dashboard`);
      assert.doesNotMatch(await page.text(), /API keys/, 'signed out for good');
      assert.deepEqual(page.problems, [], 'no CSP violations or script errors');
    } finally {
      await browser.close();
      await g.close();
    }
  });

  test(`on ${viewport.label}: the Health section runs the checks on a click and shows a row per check, with hints`, { skip: browserSkip(), timeout: 120_000 }, async () => {
    const g = await startTestGateway();
    const browser = await launchChromium();
    try {
      // The openai-format provider refuses its key; the anthropic-format one lists its models.
      g.upstream.fallback = (req, res) => {
        res.writeHead(req.headers.authorization === undefined ? 200 : 401, { 'content-type': 'application/json' });
        res.end('{"data":[]}');
      };
      const page = await browser.newPage(viewport);
      await page.goto(`${g.url}/dashboard`);
      await signIn(page, g);
      assert.match(await page.text(), /Health\s+The checks of llmux doctor[\s\S]*Not run yet\./);
      await page.clickAndWait('form[action="/dashboard/health"] button');
      const text = await page.text();
      assert.match(text, /1 check failed\./);
      assert.match(text, /the provider refused the key in providers\.fake-openai\.api_key in the config: check it/);
      await page.screenshot(join(ARTIFACTS, `dashboard-health-${viewport.label}.png`), '.card:has(table.health)');
      if (viewport.label === 'phone') {
        assert.ok(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'the dashboard scrolls sideways on a phone');
      }
      assert.deepEqual(page.problems, [], 'no CSP violations or script errors');
    } finally {
      await browser.close();
      await g.close();
    }
  });
}
