import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { createWebClient, csrfOf } from './web-client.ts';
import type { WebClient } from './web-client.ts';
import { parseCreateForm } from '../../src/web/dashboard.ts';

function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => { t += ms; } };
}

async function signIn(g: TestGateway, key = g.adminKey): Promise<{ web: WebClient; csrf: string }> {
  const web = createWebClient(g.url);
  const page = await web.get('/dashboard');
  const res = await web.post('/dashboard/sign-in', { csrf: csrfOf(page.text), admin_key: key });
  assert.equal(res.status, 303);
  const dash = await web.get('/dashboard');
  assert.equal(dash.status, 200);
  return { web, csrf: csrfOf(dash.text) };
}

function chat(g: TestGateway, key: string) {
  return fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

test('signing in sets an HttpOnly, SameSite=Strict, Path=/ session cookie that expires in 12 h', async () => {
  const g = await startTestGateway();
  try {
    const web = createWebClient(g.url);
    const page = await web.get('/dashboard');
    assert.equal(page.status, 200);
    assert.match(page.text, /Sign in/);
    const res = await web.post('/dashboard/sign-in', { csrf: csrfOf(page.text), admin_key: g.adminKey });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/dashboard');
    const session = res.setCookies.find((c) => c.startsWith('llmux_session='));
    assert.ok(session);
    for (const flag of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']) assert.ok(session.includes(flag), flag);
    assert.ok(!session.includes('Secure'), 'plain http cannot carry Secure cookies');
    const dash = await web.get('/dashboard');
    assert.match(dash.text, /API keys/);
    assert.match(dash.text, /Pending device requests/);
    assert.ok(!dash.text.includes(g.adminKey));
  } finally {
    await g.close();
  }
});

test('sign-in refuses a wrong key, a non-admin key and a missing CSRF token', async () => {
  const g = await startTestGateway();
  try {
    const web = createWebClient(g.url);
    const csrf = csrfOf((await web.get('/dashboard')).text);
    const wrong = await web.post('/dashboard/sign-in', { csrf, admin_key: 'sk-llmux-nope' });
    assert.equal(wrong.status, 401);
    assert.ok(!wrong.text.includes('sk-llmux-nope'));
    const client = await web.post('/dashboard/sign-in', { csrf, admin_key: g.key });
    assert.equal(client.status, 403);
    const noToken = await web.post('/dashboard/sign-in', { admin_key: g.adminKey });
    assert.equal(noToken.status, 403);
    for (const r of [wrong, client, noToken]) assert.ok(!r.setCookies.some((c) => c.startsWith('llmux_session=')));
    assert.equal((await web.get('/dashboard')).text.includes('API keys'), false);
  } finally {
    await g.close();
  }
});

test('a key created in the dashboard is shown once, works against the API, and once revoked gets 401', async () => {
  const g = await startTestGateway();
  try {
    const { web, csrf } = await signIn(g);
    const created = await web.post('/dashboard/keys', { csrf, name: 'ci <bot>', tier: 'pro', rpm: '7', tpm: '', concurrency: '', models: '', expires_in: '30d' });
    assert.equal(created.status, 303);
    // Issue 14: a HEAD /dashboard (a link preview, a prefetch) used up the one showing.
    const head = await fetch(`${g.url}/dashboard`, { method: 'HEAD', headers: { cookie: [...web.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    assert.equal(head.status, 200);
    const shown = await web.get('/dashboard');
    const m = /id="new-key" readonly[^>]*>(sk-llmux-[A-Za-z0-9_-]{43})<\/textarea>/.exec(shown.text);
    assert.ok(m, 'the new key is on the page');
    const key = m[1] as string;
    assert.ok(shown.text.includes('ci &lt;bot&gt;'));
    assert.match(shown.text, /data-copy="new-key"/);
    assert.ok(!(await web.get('/dashboard')).text.includes(key), 'shown only once');
    assert.ok(!JSON.stringify(g.logs).includes(key));

    const record = g.gateway.keys.list().find((k) => k.name === 'ci <bot>');
    assert.ok(record);
    assert.equal(record.tier, 'pro');
    assert.deepEqual(record.limits, { rpm: 7 });
    assert.notEqual(record.expires_at, null);
    assert.equal(record.admin, false);
    assert.equal((await chat(g, key)).status, 200);

    const page = await web.get('/dashboard');
    assert.match(page.text, new RegExp(`${record.id}[\\s\\S]*Requests[\\s\\S]*1 / 7`), 'usage against its limit');
    const revoked = await web.post('/dashboard/keys/revoke', { csrf, key_id: record.id });
    assert.equal(revoked.status, 303);
    assert.match((await web.get('/dashboard')).text, /Revoked “ci &lt;bot&gt;”/);
    assert.equal((await chat(g, key)).status, 401);
  } finally {
    await g.close();
  }
});

test('dashboard forms are refused without the session CSRF token or from another origin', async () => {
  const g = await startTestGateway();
  try {
    const { web, csrf } = await signIn(g);
    const before = g.gateway.keys.list().length;
    assert.equal((await web.post('/dashboard/keys', { name: 'x' })).status, 403);
    assert.equal((await web.post('/dashboard/keys', { name: 'x', csrf: csrf.slice(1) + 'A' })).status, 403);
    assert.equal((await web.post('/dashboard/keys', { name: 'x', csrf }, { origin: 'http://evil.example' })).status, 403);
    assert.equal((await web.post('/dashboard/keys/revoke', { key_id: g.gateway.keys.list()[0]!.id })).status, 403);
    assert.equal(g.gateway.keys.list().length, before);
    assert.ok(g.gateway.keys.list().every((k) => k.revoked_at === null));
    const anonymous = createWebClient(g.url);
    assert.equal((await anonymous.post('/dashboard/keys', { name: 'x', csrf })).status, 401);
  } finally {
    await g.close();
  }
});

test('signing out ends the session and the old cookie no longer works', async () => {
  const g = await startTestGateway();
  try {
    const { web, csrf } = await signIn(g);
    const cookie = `llmux_session=${web.cookies.get('llmux_session')}`;
    const out = await web.post('/dashboard/sign-out', { csrf });
    assert.equal(out.status, 303);
    assert.ok(out.setCookies.some((c) => /^llmux_session=; Max-Age=0/.test(c)));
    const replay = createWebClient(g.url);
    const page = await replay.get('/dashboard', { cookie });
    assert.match(page.text, /Sign in/);
    assert.equal((await replay.post('/dashboard/keys', { name: 'x', csrf }, { cookie })).status, 401);
  } finally {
    await g.close();
  }
});

test('a session ends after 12 h and when its admin key is revoked', async () => {
  const c = clock();
  const g = await startTestGateway({ now: c.now });
  try {
    const first = await signIn(g);
    c.advance(12 * 3_600_000);
    assert.match((await first.web.get('/dashboard')).text, /Sign in/);
    const second = await signIn(g);
    g.gateway.keys.revoke(g.gateway.keys.findBySecret(g.adminKey)!.id);
    assert.match((await second.web.get('/dashboard')).text, /Sign in/);
  } finally {
    await g.close();
  }
});

test('pending device requests can be approved and denied from the dashboard', async () => {
  const g = await startTestGateway();
  try {
    const start = async (name: string) => (await (await fetch(`${g.url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: name }) })).json()) as { device_code: string; user_code: string };
    const a = await start('first tool');
    const b = await start('second tool');
    const { web, csrf } = await signIn(g);
    const page = await web.get('/dashboard');
    assert.ok(page.text.includes('first tool') && page.text.includes(a.user_code));
    assert.equal((await web.post('/dashboard/device', { csrf, user_code: a.user_code, tier: 'pro', action: 'approve' })).status, 303);
    assert.equal((await web.post('/dashboard/device', { csrf, user_code: b.user_code, tier: 'basic', action: 'deny' })).status, 303);
    const after = await web.get('/dashboard');
    assert.match(after.text, /Denied “second tool”/);
    assert.ok(!after.text.includes(a.user_code));
    const token = async (code: string) => (await fetch(`${g.url}/auth/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code: code }) })).json() as Promise<Record<string, any>>;
    assert.equal((await token(a.device_code))['tier'], 'pro');
    assert.equal((await token(b.device_code))['error'].code, 'access_denied');
  } finally {
    await g.close();
  }
});

test('the create form refuses bad limits, tiers and expiries with a message', () => {
  assert.equal(parseCreateForm({ name: '' }).ok, false);
  assert.equal(parseCreateForm({ name: 'a', tier: 'gold' }).ok, false);
  assert.equal(parseCreateForm({ name: 'a', rpm: '1.5' }).ok, false);
  assert.equal(parseCreateForm({ name: 'a', expires_in: 'soon' }).ok, false);
  const ok = parseCreateForm({ name: 'a', models: 'x, y ,', tpm: '100', expires_in: '12h' });
  assert.deepEqual(ok, { ok: true, options: { name: 'a', tier: 'basic', limits: { tpm: 100 }, models: ['x', 'y'], expiresInMs: 43_200_000 } });
});
