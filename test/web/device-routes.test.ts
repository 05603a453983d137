import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { DEVICE_GRANT_TYPE, addressParty, rootUrl } from '../../src/web/device-routes.ts';

function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => { t += ms; } };
}

interface Answer { status: number; headers: Headers; body: Record<string, any> }

async function post(g: TestGateway, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method: 'POST', headers: { ...headers } };
  if (typeof body === 'string') init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(`${g.url}${path}`, init);
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}

const admin = (g: TestGateway) => ({ authorization: `Bearer ${g.adminKey}` });

async function startGrant(g: TestGateway, clientName = 'my-cli') {
  const started = await post(g, '/auth/device', { client_name: clientName });
  assert.equal(started.status, 200);
  return started.body as { device_code: string; user_code: string; verification_uri: string; verification_uri_complete: string; expires_in: number; interval: number };
}

test('POST /auth/device needs no key and answers the RFC 8628 fields', async () => {
  const g = await startTestGateway();
  try {
    const res = await post(g, '/auth/device', { client_name: 'my-cli' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.match(res.body['user_code'], /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    assert.ok(res.body['device_code'].length >= 43);
    assert.equal(res.body['verification_uri'], `${g.url}/device`);
    assert.equal(res.body['verification_uri_complete'], `${g.url}/device?user_code=${res.body['user_code']}`);
    assert.equal(res.body['expires_in'], 900);
    assert.equal(res.body['interval'], 5);
    // An empty body is fine too.
    assert.equal((await post(g, '/auth/device')).status, 200);
  } finally {
    await g.close();
  }
});

test('every outcome of the token endpoint, over sockets, with an injected clock', async () => {
  const c = clock();
  const g = await startTestGateway({ now: c.now });
  try {
    const grant = await startGrant(g);
    const poll = () => post(g, '/auth/device/token', { device_code: grant.device_code });

    let res = await poll();
    assert.equal(res.status, 400);
    assert.equal(res.body['error'].code, 'authorization_pending');
    assert.equal(res.body['error'].type, 'invalid_request_error');
    assert.equal(res.body['error'].interval, 5);

    c.advance(1_000);
    res = await poll();
    assert.equal(res.body['error'].code, 'slow_down');
    assert.equal(res.body['error'].interval, 10, 'the interval grows by 5 s');
    c.advance(6_000);
    res = await poll();
    assert.equal(res.body['error'].code, 'slow_down', '6 s is too fast for a 10 s interval');
    assert.equal(res.body['error'].interval, 15);
    c.advance(15_000);
    assert.equal((await poll()).body['error'].code, 'authorization_pending');

    const approved = await post(g, '/auth/device/approve', { user_code: grant.user_code.toLowerCase(), tier: 'pro' }, admin(g));
    assert.equal(approved.status, 200);
    assert.deepEqual(approved.body, { status: 'approved', user_code: grant.user_code, client_name: 'my-cli', tier: 'pro', name: 'my-cli' });

    res = await poll();
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['api_key', 'key_id', 'tier']);
    assert.equal(res.body['tier'], 'pro');
    assert.match(res.body['api_key'], /^sk-llmux-/);
    const record = g.gateway.keys.get(res.body['key_id']);
    assert.equal(record?.name, 'my-cli');
    assert.equal(record?.tier, 'pro');
    assert.equal(record?.admin, false);

    const again = await poll();
    assert.equal(again.status, 400);
    assert.equal(again.body['error'].code, 'invalid_grant', 'the key is handed out exactly once');

    // The issued key works.
    const chat = await fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${res.body['api_key']}` },
      body: JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(chat.status, 200);
    // Nothing secret reaches the log.
    const logText = JSON.stringify(g.logs);
    for (const secret of [grant.device_code, grant.user_code, grant.user_code.replace('-', ''), res.body['api_key'], 'my-cli']) {
      assert.ok(!logText.includes(secret), 'log holds a secret or a client name');
    }
    assert.match(logText, /device grant dev_[0-9a-f]{12} redeemed as key_/);
  } finally {
    await g.close();
  }
});

test('an expired device code answers expired_token and approval is refused', async () => {
  const c = clock();
  const g = await startTestGateway({ now: c.now });
  try {
    const grant = await startGrant(g);
    c.advance(900_000);
    const res = await post(g, '/auth/device/token', { device_code: grant.device_code });
    assert.equal(res.status, 400);
    assert.equal(res.body['error'].code, 'expired_token');
    const approve = await post(g, '/auth/device/approve', { user_code: grant.user_code }, admin(g));
    assert.equal(approve.status, 404);
    assert.equal(approve.body['error'].code, 'user_code_expired');
    assert.equal((await post(g, '/auth/device/token', { device_code: grant.device_code })).body['error'].code, 'expired_token');
  } finally {
    await g.close();
  }
});

test('a denied request answers access_denied and never yields a key', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g);
    const deny = await post(g, '/auth/device/deny', { user_code: grant.user_code }, admin(g));
    assert.equal(deny.status, 200);
    assert.equal(deny.body['status'], 'denied');
    const before = g.gateway.keys.list().length;
    for (let i = 0; i < 2; i++) {
      const res = await post(g, '/auth/device/token', { device_code: grant.device_code });
      assert.equal(res.status, 400);
      assert.equal(res.body['error'].code, 'access_denied');
    }
    const late = await post(g, '/auth/device/approve', { user_code: grant.user_code }, admin(g));
    assert.equal(late.status, 409);
    assert.equal(late.body['error'].code, 'already_decided');
    assert.equal(g.gateway.keys.list().length, before);
  } finally {
    await g.close();
  }
});

test('an unknown device code is invalid_grant and a missing one is invalid_parameters', async () => {
  const g = await startTestGateway();
  try {
    const res = await post(g, '/auth/device/token', { device_code: 'nope' });
    assert.equal(res.status, 400);
    assert.equal(res.body['error'].code, 'invalid_grant');
    const missing = await post(g, '/auth/device/token', {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body['error'].code, 'invalid_parameters');
    const bad = await post(g, '/auth/device/token', '{nope', { 'content-type': 'application/json' });
    assert.equal(bad.body['error'].code, 'invalid_parameters');
  } finally {
    await g.close();
  }
});

test('the RFC form-encoded grant works, and a wrong grant_type is unsupported_grant_type', async () => {
  const g = await startTestGateway();
  try {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const started = await post(g, '/auth/device', 'client_id=rfc-client', form);
    assert.equal(started.status, 200);
    const deviceCode = started.body['device_code'] as string;
    const body = `grant_type=${encodeURIComponent(DEVICE_GRANT_TYPE)}&device_code=${encodeURIComponent(deviceCode)}`;
    const pending = await post(g, '/auth/device/token', body, form);
    assert.equal(pending.body['error'].code, 'authorization_pending');
    await post(g, '/auth/device/approve', { user_code: started.body['user_code'] }, admin(g));
    const ok = await post(g, '/auth/device/token', body, form);
    assert.equal(ok.status, 200);
    assert.equal(ok.body['tier'], 'basic');
    assert.equal(g.gateway.keys.get(ok.body['key_id'])?.name, 'rfc-client', 'client_id names the key when there is no client_name');
    const wrong = await post(g, '/auth/device/token', `grant_type=password&device_code=${deviceCode}`, form);
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body['error'].code, 'unsupported_grant_type');
  } finally {
    await g.close();
  }
});

test('approve and deny need an admin key: 401 without one, 403 for a client key', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g);
    for (const path of ['/auth/device/approve', '/auth/device/deny']) {
      const none = await post(g, path, { user_code: grant.user_code });
      assert.equal(none.status, 401);
      assert.equal(none.body['error'].code, 'invalid_api_key');
      const client = await post(g, path, { user_code: grant.user_code }, { authorization: `Bearer ${g.key}` });
      assert.equal(client.status, 403);
      assert.equal(client.body['error'].code, 'insufficient_permissions');
    }
    const unknown = await post(g, '/auth/device/approve', { user_code: 'BCDF-GHJK' }, admin(g));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body['error'].code, 'user_code_not_found');
    const badTier = await post(g, '/auth/device/approve', { user_code: grant.user_code, tier: 'gold' }, admin(g));
    assert.equal(badTier.status, 400);
    const named = await post(g, '/auth/device/approve', { user_code: grant.user_code, name: 'laptop' }, { 'x-api-key': g.adminKey });
    assert.equal(named.status, 200);
    assert.equal(named.body['name'], 'laptop');
  } finally {
    await g.close();
  }
});

test('pending grants are capped: past the cap POST /auth/device is a 503 with our body', async () => {
  const c = clock();
  const g = await startTestGateway({ now: c.now, env: { LLMUX_DEVICE_MAX_PENDING: '3' } });
  try {
    for (let i = 0; i < 3; i++) await startGrant(g);
    const over = await post(g, '/auth/device', {});
    assert.equal(over.status, 503);
    assert.equal(over.body['error'].type, 'overloaded_error');
    assert.equal(over.body['error'].code, 'too_many_pending_devices');
    assert.equal(over.headers.get('retry-after'), '60');
    c.advance(900_000);
    assert.equal((await post(g, '/auth/device', {})).status, 200, 'expired grants make room');
  } finally {
    await g.close();
  }
});

test('one address may start only so many grants a minute', async () => {
  const c = clock();
  // The cap on grants waiting at once per address is lifted here: this is about the start rate.
  const g = await startTestGateway({ now: c.now, env: { LLMUX_DEVICE_PENDING_PER_ADDRESS: '100' } });
  try {
    for (let i = 0; i < 10; i++) assert.equal((await post(g, '/auth/device', {})).status, 200);
    const limited = await post(g, '/auth/device', {});
    assert.equal(limited.status, 429);
    assert.equal(limited.body['error'].code, 'rate_limit_exceeded');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    c.advance(61_000);
    assert.equal((await post(g, '/auth/device', {})).status, 200);
  } finally {
    await g.close();
  }
});

test('the verification address follows the Host header and a TLS-terminating proxy', () => {
  const req = (headers: Record<string, string>) => ({ headers, socket: {} }) as unknown as http.IncomingMessage;
  const config = { host: '127.0.0.1', port: 8686 };
  assert.equal(rootUrl(req({ host: 'llmux.example:8443', 'x-forwarded-proto': 'https' }), config), 'https://llmux.example:8443');
  assert.equal(rootUrl(req({ host: '[::1]:9000' }), config), 'http://[::1]:9000');
  assert.equal(rootUrl(req({ host: 'evil/<x>' }), config), 'http://127.0.0.1:8686');
  assert.equal(rootUrl(req({}), { host: '::1', port: 1 }), 'http://[::1]:1');
});

/** POST /auth/device from a given loopback address (all of 127/8 is loopback on Linux). */
function startFrom(g: TestGateway, localAddress: string): Promise<number> {
  const u = new URL(g.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: '/auth/device', method: 'POST', localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('one address holds at most 5 waiting device requests, so it cannot fill the cap for everyone else', { skip: process.platform !== 'linux' && 'needs 127.0.0.2' }, async () => {
  // Issue 14: 1,000 pending grants from a few addresses denied everyone for 15 minutes.
  const g = await startTestGateway({ env: { LLMUX_DEVICE_STARTS_PER_MINUTE: '100' } });
  try {
    for (let i = 0; i < 5; i++) assert.equal(await startFrom(g, '127.0.0.1'), 200);
    const refused = await post(g, '/auth/device');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.match(refused.body['error']['message'], /5 device requests from this address are already waiting/);
    assert.equal(await startFrom(g, '127.0.0.2'), 200, 'another address is not held up');
  } finally {
    await g.close();
  }
});

test('per-address budgets count an IPv6 /64 as one address, and IPv4-mapped addresses as IPv4', () => {
  assert.equal(addressParty('2001:db8::1'), addressParty('2001:0db8:0000:0000:ffff::2'));
  assert.notEqual(addressParty('2001:db8::1'), addressParty('2001:db8:0:1::1'));
  assert.equal(addressParty('2001:db8:0:0:1:2:3:4'), '2001:db8:0:0::/64');
  assert.equal(addressParty('::ffff:10.0.0.1'), '10.0.0.1');
  assert.equal(addressParty('10.0.0.1'), '10.0.0.1');
  assert.equal(addressParty('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(addressParty(undefined), 'unknown');
});
