import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, anthropicHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';

const chatBody = JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }] });

describe('authentication on every operation', () => {
  let t: TestGateway;
  let clock = Date.now();
  before(async () => { t = await startTestGateway({ now: () => clock }); });
  after(async () => { await t.close(); });

  const call = (headers: Record<string, string>, path = '/v1/chat/completions') =>
    fetch(`${t.url}${path}`, { method: path.includes('models') ? 'GET' : 'POST', headers: { 'content-type': 'application/json', ...headers }, ...(path.includes('models') ? {} : { body: chatBody }) });

  async function expect401(res: Response): Promise<Record<string, unknown>> {
    assert.equal(res.status, 401);
    const body = await res.json() as { type?: string; error: Record<string, unknown> };
    // The description's type; Anthropic's for the messages format (its SDKs key on it).
    assert.equal(body.error['type'], body.type === 'error' ? 'authentication_error' : 'invalid_request_error');
    assert.equal(body.error['code'], 'invalid_api_key');
    return body.error;
  }

  it('accepts a key as Bearer and as x-api-key, on chat, messages and models', async () => {
    assert.equal((await call({ authorization: `Bearer ${t.key}` })).status, 200);
    assert.equal((await call({ 'x-api-key': t.key })).status, 200);
    assert.equal((await call({ authorization: `bearer ${t.key}` }, '/v1/models')).status, 200);
    const messages = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'llmux-echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(messages.status, 200);
  });

  it('refuses a missing, malformed, unknown, or non-bearer key with 401 invalid_api_key', async () => {
    await expect401(await call({}));
    await expect401(await call({ authorization: `Basic ${t.key}` }));
    await expect401(await call({ authorization: 'Bearer sk-llmux-short' }));
    await expect401(await call({ 'x-api-key': `sk-llmux-${'A'.repeat(43)}` }));
    await expect401(await call({ 'x-api-key': t.key.replace('sk-llmux-', 'sk-other-') }));
    await expect401(await call({}, '/v1/models'));
    await expect401(await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: { 'anthropic-version': '2023-06-01' }, body: '{}' }));
  });

  it('adds debug details without secrets when X-Debug-Auth is true', async () => {
    const plain = await expect401(await call({ 'x-api-key': 'nope' }));
    assert.equal(plain['debug'], undefined);
    const missing = await expect401(await call({ 'x-debug-auth': 'true' }));
    assert.deepEqual(missing['debug'], { credential_header: null, prefix_ok: false, key_found: false, revoked: false, expired: false });
    const wrongPrefix = await expect401(await call({ 'x-debug-auth': 'true', authorization: 'Bearer sk-abc' }));
    assert.deepEqual(wrongPrefix['debug'], { credential_header: 'authorization', prefix_ok: false, key_found: false, revoked: false, expired: false });
    const unknown = await expect401(await call({ 'x-debug-auth': 'true', 'x-api-key': `sk-llmux-${'B'.repeat(43)}` }));
    assert.deepEqual(unknown['debug'], { credential_header: 'x-api-key', prefix_ok: true, key_found: false, revoked: false, expired: false });
    const { key, record } = await t.gateway.keys.create({ name: 'to-revoke' });
    t.gateway.keys.revoke(record.id);
    const revoked = await expect401(await call({ 'x-debug-auth': 'true', 'x-api-key': key }));
    assert.deepEqual(revoked['debug'], { credential_header: 'x-api-key', prefix_ok: true, key_found: true, revoked: true, expired: false, key_id: record.id });
    const text = JSON.stringify(revoked);
    assert.ok(!text.includes(key) && !text.includes(record.hash));
  });

  it('refuses a revoked key', async () => {
    const { key, record } = await t.gateway.keys.create({ name: 'revoked-later' });
    assert.equal((await call({ 'x-api-key': key })).status, 200);
    t.gateway.keys.revoke(record.id);
    await expect401(await call({ 'x-api-key': key }));
  });

  it('refuses an expired key', async () => {
    const { key } = await t.gateway.keys.create({ name: 'short-lived', expiresInMs: 60_000 });
    assert.equal((await call({ 'x-api-key': key })).status, 200);
    clock += 61_000;
    const error = await expect401(await call({ 'x-api-key': key, 'x-debug-auth': 'true' }));
    assert.equal((error['debug'] as Record<string, unknown>)['expired'], true);
  });

  it('refuses a model outside a key\'s allow-list with 403 model_not_allowed', async () => {
    const { key } = await t.gateway.keys.create({ name: 'only-gpt', models: ['gpt-test'] });
    const res = await call({ authorization: `Bearer ${key}` });
    assert.equal(res.status, 403);
    const body = await res.json() as { error: Record<string, string> };
    assert.equal(body.error['type'], 'permission_error');
    assert.equal(body.error['code'], 'model_not_allowed');
  });

  it('requires the version header on /v1/messages, accepting alt-version and anthropic-version', async () => {
    const body = JSON.stringify({ model: 'llmux-echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    const missing = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': t.key, 'content-type': 'application/json' }, body });
    assert.equal(missing.status, 400);
    assert.match((await missing.json() as { error: { message: string } }).error.message, /alt-version/);
    const bad = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: { ...anthropicHeaders(t.key), 'anthropic-version': 'latest' }, body });
    assert.equal(bad.status, 400);
    const alt = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': t.key, 'alt-version': '2023-06-01', 'content-type': 'application/json' }, body });
    assert.equal(alt.status, 200);
  });
});
