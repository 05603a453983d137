import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.ts';
import { main } from '../../src/cli.ts';
import type { CliIo } from '../../src/commands/io.ts';

function io(env: Record<string, string | undefined>) {
  const out: string[] = [];
  const err: string[] = [];
  const value: CliIo = { stdout: (t) => { out.push(t); }, stderr: (t) => { err.push(t); }, env };
  return { io: value, out: () => out.join(''), err: () => err.join('') };
}

async function startGrant(url: string, clientName: string) {
  const res = await fetch(`${url}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: clientName }) });
  return await res.json() as { device_code: string; user_code: string };
}

test('llmux device approve approves on the running server with LLMUX_ADMIN_KEY and the tier given', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g.url, 'editor');
    const run = io({ LLMUX_ADMIN_KEY: g.adminKey, LLMUX_URL: g.url });
    assert.equal(await main(['device', 'approve', grant.user_code.toLowerCase(), '--tier', 'pro', '--name', 'my editor'], run.io), 0, run.err());
    assert.match(run.out(), /approved [A-Z]{4}-[A-Z]{4} "editor" \(tier pro, key name "my editor"\)/);
    assert.ok(!run.out().includes(g.adminKey) && !run.err().includes(g.adminKey));
    const token = await fetch(`${g.url}/auth/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code: grant.device_code }) });
    assert.equal(token.status, 200);
    const body = await token.json() as { key_id: string; tier: string };
    assert.equal(body.tier, 'pro');
    assert.equal(g.gateway.keys.get(body.key_id)?.name, 'my editor');
  } finally {
    await g.close();
  }
});

test('llmux device deny denies, with --url taking precedence over LLMUX_URL', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g.url, 'tool');
    const run = io({ LLMUX_ADMIN_KEY: g.adminKey, LLMUX_URL: 'http://127.0.0.1:1' });
    assert.equal(await main(['device', 'deny', grant.user_code, '--url', `${g.url}/`], run.io), 0, run.err());
    assert.match(run.out(), /^denied [A-Z]{4}-[A-Z]{4} "tool"/);
  } finally {
    await g.close();
  }
});

test('llmux device reports refusals from the server with exit code 1', async () => {
  const g = await startTestGateway();
  try {
    const grant = await startGrant(g.url, 'tool');
    const client = io({ LLMUX_ADMIN_KEY: g.key, LLMUX_URL: g.url });
    assert.equal(await main(['device', 'approve', grant.user_code], client.io), 1);
    assert.match(client.err(), /403 insufficient_permissions/);
    const unknown = io({ LLMUX_ADMIN_KEY: g.adminKey, LLMUX_URL: g.url });
    assert.equal(await main(['device', 'approve', 'BCDF-GHJK'], unknown.io), 1);
    assert.match(unknown.err(), /404 user_code_not_found/);
  } finally {
    await g.close();
  }
});

test('llmux device without an admin key, a code or a reachable server says what to do', async () => {
  const noKey = io({});
  assert.equal(await main(['device', 'approve', 'BCDF-GHJK'], noKey.io), 2);
  assert.match(noKey.err(), /LLMUX_ADMIN_KEY/);
  const noCode = io({ LLMUX_ADMIN_KEY: 'x' });
  assert.equal(await main(['device', 'approve'], noCode.io), 2);
  const badAction = io({ LLMUX_ADMIN_KEY: 'x' });
  assert.equal(await main(['device', 'allow', 'BCDF-GHJK'], badAction.io), 2);
  const denyTier = io({ LLMUX_ADMIN_KEY: 'x' });
  assert.equal(await main(['device', 'deny', 'BCDF-GHJK', '--tier', 'pro'], denyTier.io), 2);
  const down = io({ LLMUX_ADMIN_KEY: 'sk-llmux-x', LLMUX_URL: 'http://127.0.0.1:1' });
  assert.equal(await main(['device', 'approve', 'BCDF-GHJK'], down.io), 1);
  assert.match(down.err(), /cannot reach llmux at http:\/\/127\.0\.0\.1:1/);
});
