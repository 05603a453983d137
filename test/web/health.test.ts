/**
 * The dashboard's Health section over HTTP: the page shows the last run and never runs the checks
 * itself; an admin's POST (same origin, the session's CSRF token) runs them against the config the
 * gateway runs with, and the page then shows the same rows as `llmux doctor`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { respond } from '../helpers/fake-upstream.ts';
import { createWebClient, csrfOf } from './web-client.ts';
import type { WebClient } from './web-client.ts';
import { createHealthRunner } from '../../src/web/health.ts';
import type { DoctorReport } from '../../src/doctor/report.ts';

async function signIn(g: TestGateway): Promise<{ web: WebClient; csrf: string }> {
  const web = createWebClient(g.url);
  const page = await web.get('/dashboard');
  assert.equal((await web.post('/dashboard/sign-in', { csrf: csrfOf(page.text), admin_key: g.adminKey })).status, 303);
  return { web, csrf: csrfOf((await web.get('/dashboard')).text) };
}

const modelListCalls = (g: TestGateway): number => g.upstream.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/models')).length;

/** The rows of the Health table as [check, verdict, found] text. */
function rows(page: string): string[][] {
  const table = /<table class="health">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
  return [...table.matchAll(/<tr><td>(.*?)<\/td><td><span class="badge (\w+)">\w+<\/span><\/td><td>(.*?)<\/td><\/tr>/g)].map((m) => [m[1] as string, m[2] as string, m[3] as string]);
}

test('the dashboard shows a Health section without running the checks on page load', async () => {
  const g = await startTestGateway();
  try {
    const { web } = await signIn(g);
    const page = await web.get('/dashboard');
    assert.match(page.text, /<h2 id="health">Health<\/h2>/);
    assert.match(page.text, /Not run yet\./);
    assert.match(page.text, /<form method="post" action="\/dashboard\/health"[^>]*>\s*<input type="hidden" name="csrf"/);
    assert.equal(modelListCalls(g), 0);
  } finally {
    await g.close();
  }
});

test('an admin runs the checks from the dashboard and sees each provider, the state server and the key store', async () => {
  const g = await startTestGateway();
  try {
    const { web, csrf } = await signIn(g);
    g.upstream.fallback = respond.json(200, { data: [] });
    const ran = await web.post('/dashboard/health', { csrf });
    assert.equal(ran.status, 303);
    assert.equal(ran.headers.get('location'), '/dashboard#health');
    assert.equal(modelListCalls(g), 2, 'one model list per provider');
    const page = (await web.get('/dashboard')).text;
    assert.match(page, /Everything needed passes\./);
    assert.match(page, /Run just now \(.*\) by key_[0-9a-f]{16}\./);
    const table = rows(page);
    assert.deepEqual(table[0], ['config', 'ok', 'no config file: the built-in defaults, as loaded at start-up']);
    assert.deepEqual(table.find((r) => r[0] === 'provider fake-openai: credential'), ['provider fake-openai: credential', 'ok', 'from providers.fake-openai.api_key in the config']);
    assert.equal(table.find((r) => r[0] === 'provider fake-anthropic: endpoint')?.[1], 'ok');
    assert.equal(table.find((r) => r[0] === 'key store')?.[1], 'ok');
    assert.ok(!page.includes('upstream-openai-secret') && !page.includes('upstream-anthropic-secret'), 'no credential on the page');

    // The provider now refuses its key: the next run says so, with the hint.
    g.upstream.fallback = respond.json(401, {});
    await web.post('/dashboard/health', { csrf });
    const failed = (await web.get('/dashboard')).text;
    assert.match(failed, /2 checks failed\./);
    assert.match(failed, /provider fake-openai: endpoint<\/td><td><span class="badge fail">fail<\/span><\/td><td>GET http:\/\/127\.0\.0\.1:\d+\/v1\/models: 401 in \d+ ms: the credential was refused<div class="hint">→ the provider refused the key in providers\.fake-openai\.api_key in the config: check it<\/div>/);
    assert.ok(g.logs.some((l) => JSON.stringify(l).includes('ran the health checks; failed: provider fake-openai: endpoint, provider fake-anthropic: endpoint')));
  } finally {
    await g.close();
  }
});

test('the checks run only for a signed-in admin, with the session\'s CSRF token, from the same origin', async () => {
  const g = await startTestGateway();
  try {
    const { web, csrf } = await signIn(g);
    assert.equal((await web.post('/dashboard/health', {})).status, 403);
    assert.equal((await web.post('/dashboard/health', { csrf }, { origin: 'http://evil.example' })).status, 403);
    assert.equal((await createWebClient(g.url).post('/dashboard/health', { csrf })).status, 401);
    assert.equal(modelListCalls(g), 0);
  } finally {
    await g.close();
  }
});

test('two runs at once share one run of the checks', async () => {
  let calls = 0;
  let finish: (report: DoctorReport) => void = () => {};
  const runner = createHealthRunner(() => {
    calls++;
    return new Promise((resolve) => {
      finish = resolve;
    });
  }, () => 42);
  const first = runner.run('key_a');
  const second = runner.run('key_b');
  finish({ ok: true, checks: [] });
  assert.equal(await first, await second);
  assert.equal(calls, 1);
  assert.deepEqual(runner.last(), { report: { ok: true, checks: [] }, atMs: 42, byKeyId: 'key_a' });
  assert.equal(await createHealthRunner(undefined, () => 0).run('key_a'), undefined);
});
