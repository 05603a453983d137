import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startTestGateway } from '../helpers/gateway.ts';
import { browserSkip, launchChromium } from '../helpers/cdp.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

interface Started { device_code: string; user_code: string; verification_uri: string; verification_uri_complete: string; interval: number }

async function startDeviceFlow(url: string, clientName: string): Promise<Started> {
  const res = await fetch(`${url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: clientName }) });
  assert.equal(res.status, 200);
  return await res.json() as Started;
}

/**
 * An RFC 8628 client: polls every `interval` seconds, adds 5 s on slow_down, stops on anything
 * else. `wait` is injected so the test controls time instead of sleeping.
 */
async function pollForToken(url: string, started: Started, wait: (seconds: number) => Promise<void>) {
  let interval = started.interval;
  const seen: string[] = [];
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await fetch(`${url}/auth/device/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: started.device_code }).toString(),
    });
    const body = await res.json() as Record<string, any>;
    if (res.status === 200) return { token: body as { api_key: string; key_id: string; tier: string }, seen };
    const code = body['error']?.code as string;
    seen.push(code);
    if (code === 'slow_down') interval += 5;
    else if (code !== 'authorization_pending') return { error: code, seen };
    await wait(interval);
  }
  throw new Error(`no answer after 20 polls: ${seen.join(', ')}`);
}

test('a person approves a device in the browser and the polling client receives a working key', { skip: browserSkip(), timeout: 120_000 }, async () => {
  let t = 1_700_000_000_000;
  const g = await startTestGateway({ now: () => t });
  const browser = await launchChromium();
  try {
    const started = await startDeviceFlow(g.url, 'Browser Test CLI');
    // The client's clock only moves once the person has acted, so the test never sleeps.
    let approved!: () => void;
    const decided = new Promise<void>((resolve) => { approved = resolve; });
    const client = pollForToken(g.url, started, async (seconds) => {
      await decided;
      t += seconds * 1000;
    });

    const page = await browser.newPage({ width: 1280, height: 800 });
    await page.goto(started.verification_uri_complete);
    assert.match(await page.text(), /Browser Test CLI/);
    assert.match(await page.text(), new RegExp(started.user_code));
    await page.type('#admin_key', g.adminKey);
    await page.select('select[name=tier]', 'pro');
    await page.screenshot(join(ARTIFACTS, 'device-approve-desktop.png'));
    await page.clickAndWait('button[value=approve]');
    const result = await page.text();
    assert.match(result, /Device approved/);
    assert.match(result, /tier pro/);
    assert.equal(await page.evaluate<string>('location.href'), `${g.url}/device`, 'the admin key never goes into the URL');
    await page.screenshot(join(ARTIFACTS, 'device-approved-desktop.png'));
    approved();

    const outcome = await client;
    assert.ok('token' in outcome && outcome.token !== undefined, `no key: ${JSON.stringify(outcome)}`);
    assert.deepEqual(outcome.seen, ['authorization_pending'], 'an RFC client honouring interval never hears slow_down');
    assert.equal(outcome.token.tier, 'pro');
    const chat = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${outcome.token.api_key}` },
      body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hello from the device' }] }),
    });
    const answer = await chat.text();
    assert.equal(chat.status, 200, answer);
    assert.match(answer, /hello from the device/);
    assert.deepEqual(page.problems, [], 'no CSP violations or script errors');
    assert.ok(!JSON.stringify(g.logs).includes(g.adminKey));
  } finally {
    await browser.close();
    await g.close();
  }
});

test('on a phone, a person types the code, denies, and the client never gets a key', { skip: browserSkip(), timeout: 120_000 }, async () => {
  let t = 1_700_000_000_000;
  const g = await startTestGateway({ now: () => t });
  const browser = await launchChromium();
  try {
    const started = await startDeviceFlow(g.url, 'Phone Test Tool');
    const page = await browser.newPage({ width: 390, height: 844, mobile: true, deviceScaleFactor: 2 });
    await page.goto(started.verification_uri);
    await page.screenshot(join(ARTIFACTS, 'device-enter-code-phone.png'));
    await page.type('#user_code', started.user_code.toLowerCase().replace('-', ''));
    await page.clickAndWait('button[type=submit]');
    assert.match(await page.text(), /Phone Test Tool/);
    await page.type('#admin_key', g.adminKey);
    await page.screenshot(join(ARTIFACTS, 'device-approve-phone.png'));
    // Fits the screen: nothing wider than the viewport.
    assert.ok(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'the page scrolls sideways on a phone');
    await page.clickAndWait('button[value=deny]');
    assert.match(await page.text(), /Device denied/);
    await page.screenshot(join(ARTIFACTS, 'device-denied-phone.png'));
    const outcome = await pollForToken(g.url, started, async (seconds) => { t += seconds * 1000; });
    assert.equal('error' in outcome ? outcome.error : undefined, 'access_denied');
    assert.deepEqual(page.problems, []);
  } finally {
    await browser.close();
    await g.close();
  }
});
