import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { createWebClient, csrfOf } from './web-client.ts';

async function startGrant(g: TestGateway, clientName: string) {
  const res = await fetch(`${g.url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: clientName }) });
  return await res.json() as { device_code: string; user_code: string; verification_uri_complete: string };
}

async function poll(g: TestGateway, deviceCode: string) {
  const res = await fetch(`${g.url}/auth/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code: deviceCode }) });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

test('/device serves a code form with the security headers and a double-submit CSRF cookie', async () => {
  const g = await startTestGateway();
  try {
    const web = createWebClient(g.url);
    const page = await web.get('/device');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.ok(!(page.headers.get('content-security-policy') ?? '').includes('unsafe-inline'));
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(page.headers.get('cache-control'), 'no-store');
    assert.match(page.text, /name="user_code"/);
    const set = page.setCookies.find((c) => c.startsWith('llmux_csrf='));
    assert.ok(set);
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Strict/);
    const css = await fetch(`${g.url}/assets/llmux.css`);
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /text\/css/);
    const js = await fetch(`${g.url}/assets/llmux.js`);
    assert.match(js.headers.get('content-type') ?? '', /text\/javascript/);
  } finally {
    await g.close();
  }
});

test('arriving with ?user_code shows the escaped client name and when it asked; an unknown code says so', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g, '<script>alert(1)</script> cli');
    const web = createWebClient(g.url);
    const page = await web.get(new URL(grant.verification_uri_complete).pathname + new URL(grant.verification_uri_complete).search);
    assert.equal(page.status, 200);
    assert.ok(page.text.includes('&lt;script&gt;alert(1)&lt;/script&gt; cli'));
    assert.ok(!page.text.includes('<script>alert'));
    assert.ok(page.text.includes(grant.user_code));
    assert.match(page.text, /just now/);
    assert.match(page.text, /type="password" name="admin_key"/);
    const unknown = await web.get('/device?user_code=BCDF-GHJK');
    assert.equal(unknown.status, 404);
    assert.match(unknown.text, /No pending request has this code/);
  } finally {
    await g.close();
  }
});

test('a POST without the CSRF token, or from another origin, is refused and changes nothing', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g, 'cli');
    const web = createWebClient(g.url);
    const page = await web.get(`/device?user_code=${grant.user_code}`);
    const csrf = csrfOf(page.text);
    const base = { user_code: grant.user_code, admin_key: g.adminKey, tier: 'basic', action: 'approve' };
    assert.equal((await web.post('/device', base)).status, 403);
    assert.equal((await web.post('/device', { ...base, csrf: 'x'.repeat(43) })).status, 403);
    const stranger = createWebClient(g.url);
    assert.equal((await stranger.post('/device', { ...base, csrf })).status, 403, 'the token without its cookie is refused');
    assert.equal((await web.post('/device', { ...base, csrf }, { origin: 'http://evil.example' })).status, 403);
    assert.equal((await web.post('/device', { ...base, csrf }, { 'sec-fetch-site': 'cross-site' })).status, 403);
    assert.equal((await poll(g, grant.device_code)).body['error'].code, 'authorization_pending');
  } finally {
    await g.close();
  }
});

test('a wrong or non-admin key is refused on the page and never shown back or logged', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g, 'cli');
    const web = createWebClient(g.url);
    const csrf = csrfOf((await web.get(`/device?user_code=${grant.user_code}`)).text);
    const wrongKey = 'sk-llmux-' + 'A'.repeat(43);
    const wrong = await web.post('/device', { csrf, user_code: grant.user_code, admin_key: wrongKey, tier: 'pro', action: 'approve' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /not valid/);
    assert.ok(!wrong.text.includes(wrongKey));
    const client = await web.post('/device', { csrf, user_code: grant.user_code, admin_key: g.key, tier: 'pro', action: 'approve' });
    assert.equal(client.status, 403);
    assert.match(client.text, /not an admin key/);
    assert.ok(!client.text.includes(g.key));
    assert.ok(!JSON.stringify(g.logs).includes(g.key));
    assert.equal((await poll(g, grant.device_code)).body['error'].code, 'authorization_pending');
  } finally {
    await g.close();
  }
});

test('approving on the page with an admin key gives the polling client a key of the chosen tier', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g, 'cli');
    const web = createWebClient(g.url);
    const csrf = csrfOf((await web.get(`/device?user_code=${grant.user_code}`)).text);
    const done = await web.post('/device', { csrf, user_code: grant.user_code.toLowerCase(), admin_key: g.adminKey, tier: 'enterprise', action: 'approve' });
    assert.equal(done.status, 200);
    assert.match(done.text, /Device approved/);
    assert.match(done.text, /tier enterprise/);
    assert.ok(!done.text.includes(g.adminKey));
    const token = await poll(g, grant.device_code);
    assert.equal(token.status, 200);
    assert.equal(token.body['tier'], 'enterprise');
    assert.ok(!JSON.stringify(g.logs).includes(g.adminKey));
    const again = await web.post('/device', { csrf, user_code: grant.user_code, admin_key: g.adminKey, tier: 'basic', action: 'deny' });
    assert.equal(again.status, 404, 'a decided request cannot be decided again');
  } finally {
    await g.close();
  }
});

test('denying on the page means the client hears access_denied', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g, 'cli');
    const web = createWebClient(g.url);
    const csrf = csrfOf((await web.get(`/device?user_code=${grant.user_code}`)).text);
    const done = await web.post('/device', { csrf, user_code: grant.user_code, admin_key: g.adminKey, tier: 'basic', action: 'deny' });
    assert.equal(done.status, 200);
    assert.match(done.text, /Device denied/);
    assert.equal((await poll(g, grant.device_code)).body['error'].code, 'access_denied');
  } finally {
    await g.close();
  }
});

test('looking up user codes without a key is limited to 30 a minute per address', async () => {
  // Issue 14: GET /device?user_code= allowed about 4,000 guesses a second without a key.
  const g = await startTestGateway();
  try {
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${g.url}/device?user_code=BCDF-GHJK`);
      assert.equal(res.status, 404, `lookup ${i}`);
      await res.arrayBuffer();
    }
    const limited = await fetch(`${g.url}/device?user_code=BCDF-GHJK`);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.match(await limited.text(), /Too many codes tried from this address/);
    // The plain code form is still served, and a real code still needs no guessing.
    assert.equal((await fetch(`${g.url}/device`)).status, 200);
  } finally {
    await g.close();
  }
});

test('shows the client name without the direction overrides it was sent with', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g, 'invoice\u202Efdp.exe');
    const page = await (await fetch(grant.verification_uri_complete)).text();
    assert.ok(page.includes('invoicefdp.exe'));
    assert.ok(!page.includes('\u202E'));
  } finally {
    await g.close();
  }
});
