import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { startFakeUpstream } from './helpers/fake-upstream.ts';
import type { Responder } from './helpers/fake-upstream.ts';
import { PRICED_MODELS, chat, chatJson, chatStream, ledgerCounted, messages, messagesJson, messagesStream } from './helpers/usage.ts';
import { waitUntil } from './helpers/wait.ts';

const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const T0 = Date.UTC(2026, 2, 14, 10, 30); // 2026-03-14T10:30Z

interface UsageRow {
  start: string; end: string; key_id: string | null; model: string | null; requests: number;
  input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number; cost_usd: number;
}

function clock(start = T0) {
  const state = { ms: start };
  return { now: () => state.ms, set: (ms: number) => { state.ms = ms; } };
}

function start(now: () => number, config: Record<string, unknown> = {}): Promise<TestGateway> {
  return startTestGateway({ now, config: { models: PRICED_MODELS, ...config } });
}

async function usage(t: TestGateway, key: string, query = ''): Promise<{ status: number; body: { object?: string; data: UsageRow[]; error?: { type: string; code: string; message: string } } }> {
  const res = await fetch(`${t.url}/v1/usage${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() as { data: UsageRow[] } };
}

/** Sends a request and reads its whole answer; fails the test on any status but `status`. */
async function expectStatus(response: Promise<Response>, status: number): Promise<{ res: Response; text: string }> {
  const res = await response;
  const text = await res.text();
  assert.equal(res.status, status, text);
  return { res, text };
}

const counts = (r: UsageRow) => [r.key_id, r.model, r.requests, r.input_tokens, r.output_tokens, r.cache_read_input_tokens, r.cache_creation_input_tokens, r.cost_usd];

describe('usage over sockets', () => {
  it('records exact tokens and cost per key and model for JSON, streamed, translated and cached answers', async () => {
    const c = clock();
    const t = await start(c.now);
    try {
      const keys = await Promise.all(Array.from({ length: 5 }, (_, i) => t.gateway.keys.create({ name: `k${i}` })));
      const [a, b, cc, d, e] = keys.map((k) => k.key) as [string, string, string, string, string];
      // A: chat JSON, passed through, 400 of 1000 prompt tokens read from the cache.
      t.upstream.queue.push(chatJson({ prompt: 1000, completion: 200, cached: 400 }));
      await expectStatus(chat(t, a, 'gpt-test'), 200);
      // B: chat streamed, passed through; the client did not ask for usage, llmux still counts it.
      t.upstream.queue.push(chatStream({ prompt: 500, completion: 100, cached: 0 }));
      const streamed = await expectStatus(chat(t, b, 'gpt-test', { stream: true }), 200);
      assert.match(streamed.text, /\[DONE\]/);
      // C: a messages client answered by a chat upstream (translated), with cached tokens.
      t.upstream.queue.push(chatJson({ prompt: 2000, completion: 50, cached: 1500 }));
      await expectStatus(messages(t, cc, 'gpt-test'), 200);
      // D: messages JSON with cache reads and writes, passed through.
      t.upstream.queue.push(messagesJson({ input: 100, output: 30, cacheRead: 2000, cacheCreation: 50 }));
      await expectStatus(messages(t, d, 'claude-test'), 200);
      // E: a chat client streaming from a messages upstream (translated stream), with a cache write.
      t.upstream.queue.push(messagesStream({ input: 10, output: 5, cacheRead: 0, cacheCreation: 1000 }));
      await expectStatus(chat(t, e, 'claude-test', { stream: true }), 200);
      await ledgerCounted(t, 5);

      const { status, body } = await usage(t, t.adminKey, '?key=all&group_by=key,model');
      assert.equal(status, 200);
      assert.equal(body.object, 'list');
      const expected = [
        [keys[0]?.record.id, 'gpt-test', 1, 600, 200, 400, 0, 0.0036],
        [keys[1]?.record.id, 'gpt-test', 1, 500, 100, 0, 0, 0.0018],
        [keys[2]?.record.id, 'gpt-test', 1, 500, 50, 1500, 0, 0.0044],
        [keys[3]?.record.id, 'claude-test', 1, 100, 30, 2000, 50, 0.0069],
        [keys[4]?.record.id, 'claude-test', 1, 10, 5, 0, 1000, 0.003105],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0])));
      assert.deepEqual(body.data.map(counts), expected);
      // The log line prices each request the same way.
      const logged = t.logs.filter((l) => l['path'] !== '/v1/usage' && typeof l['cost_usd'] === 'number').map((l) => l['cost_usd']);
      assert.deepEqual(logged, [0.0036, 0.0018, 0.0044, 0.0069, 0.003105]);

      const byModel = await usage(t, t.adminKey, '?key=all&group_by=model');
      assert.deepEqual(byModel.body.data.map(counts), [
        [null, 'claude-test', 2, 110, 35, 2000, 1050, 0.010005],
        [null, 'gpt-test', 3, 1600, 350, 1900, 0, 0.0098],
      ]);
    } finally {
      await t.close();
    }
  });

  it('shows a key its own usage only; an admin key any key or all, and bad parameters get our 400', async () => {
    const c = clock();
    const t = await start(c.now);
    try {
      const alice = await t.gateway.keys.create({ name: 'alice' });
      const bob = await t.gateway.keys.create({ name: 'bob' });
      t.upstream.queue.push(chatJson({ prompt: 10, completion: 1, cached: 0 }), chatJson({ prompt: 20, completion: 2, cached: 0 }), chatJson({ prompt: 30, completion: 3, cached: 0 }));
      await expectStatus(chat(t, alice.key, 'gpt-test'), 200);
      await expectStatus(chat(t, bob.key, 'gpt-test'), 200);
      await expectStatus(chat(t, bob.key, 'gpt-test'), 200);
      await ledgerCounted(t, 3);

      const own = await usage(t, alice.key);
      assert.equal(own.status, 200);
      assert.deepEqual(own.body.data.map((r) => [r.start, r.end, r.key_id, r.model, r.requests, r.input_tokens]), [
        ['2026-03-14T00:00:00.000Z', '2026-03-14T11:00:00.000Z', alice.record.id, null, 1, 10],
      ], 'by day by default, the last 7 days, widened to whole hours');
      assert.deepEqual((await usage(t, alice.key, `?key=${alice.record.id}&group_by=hour`)).body.data.map((r) => [r.start, r.requests]), [['2026-03-14T10:00:00.000Z', 1]]);
      for (const other of [bob.record.id, 'all']) {
        const refused = await usage(t, alice.key, `?key=${other}`);
        assert.equal(refused.status, 403);
        assert.equal(refused.body.error?.type, 'permission_error');
        assert.equal(refused.body.error?.code, 'insufficient_permissions');
      }
      const bobs = await usage(t, t.adminKey, `?key=${bob.record.id}&group_by=model`);
      assert.deepEqual(bobs.body.data.map((r) => [r.key_id, r.model, r.requests, r.input_tokens]), [[bob.record.id, 'gpt-test', 2, 50]]);
      assert.deepEqual((await usage(t, t.adminKey)).body.data, [], 'the admin key\'s own usage: none');
      const all = await usage(t, t.adminKey, '?key=all&group_by=key');
      assert.deepEqual(all.body.data.map((r) => [r.key_id, r.requests]).sort(), [[alice.record.id, 1], [bob.record.id, 2]].sort());
      const window = await usage(t, t.adminKey, '?key=all&since=2026-03-14T11:00:00Z&until=2026-03-15');
      assert.deepEqual(window.body.data, [], 'since is inclusive of whole hours only from 11:00');

      for (const [query, param] of [
        ['?group_by=week', /^group_by: "week" must be one of/],
        ['?group_by=day,hour', /^group_by: group by day or by hour, not both/],
        ['?since=yesterday', /^since: "yesterday" must be an ISO 8601 date or time/],
        ['?since=2026-03-14&until=2026-03-13', /^since: must be before until/],
        ['?key=alice', /^key: "alice" must be a key id/],
        ['?groupby=day', /^groupby: unknown parameter/],
        ['?since=2026-03-01&since=2026-03-02', /^since: given more than once/],
      ] as const) {
        const bad = await usage(t, alice.key, query);
        assert.equal(bad.status, 400, query);
        assert.equal(bad.body.error?.type, 'invalid_request_error');
        assert.equal(bad.body.error?.code, 'invalid_parameters');
        assert.match(bad.body.error?.message ?? '', param);
      }
      const anonymous = await fetch(`${t.url}/v1/usage`);
      assert.equal(anonymous.status, 401);
    } finally {
      await t.close();
    }
  });
});

describe('budgets over sockets', () => {
  it('refuses a key at the request after its daily spend reaches the budget, while another key goes on, until the next UTC day', async () => {
    const c = clock(Date.UTC(2026, 2, 14, 23, 0));
    const t = await start(c.now);
    try {
      const capped = await t.gateway.keys.create({ name: 'capped', budget: { usd: 0.01, period: 'day' } });
      const free = await t.gateway.keys.create({ name: 'free' });
      t.upstream.fallback = chatJson({ prompt: 1000, completion: 200, cached: 0 }); // $0.0036 each
      const remaining: Array<string | null> = [];
      for (let i = 1; i <= 3; i++) {
        const { res } = await expectStatus(chat(t, capped.key, 'gpt-test'), 200);
        remaining.push(res.headers.get('x-llmux-budget-remaining-usd'));
        await ledgerCounted(t, i);
      }
      assert.deepEqual(remaining, ['0.0100', '0.0064', '0.0028'], 'what was left when each request arrived');

      const refused = await expectStatus(chat(t, capped.key, 'gpt-test'), 403);
      const error = (JSON.parse(refused.text) as { error: { type: string; code: string; message: string } }).error;
      assert.equal(error.type, 'permission_error');
      assert.equal(error.code, 'budget_exceeded');
      assert.match(error.message, /spent \$0\.0108 of its \$0\.0100 daily budget/);
      assert.match(error.message, /resets at 2026-03-15 00:00 UTC \(in 1 h\)/);
      assert.equal(refused.res.headers.get('x-llmux-budget-remaining-usd'), '0.0000');
      assert.ok(refused.res.headers.get('x-ratelimit-limit-requests'), 'a refusal carries the rate-limit headers');
      const refusedToo = await expectStatus(messages(t, capped.key, 'claude-test'), 403);
      assert.match(refusedToo.text, /budget_exceeded/, 'in every format');
      assert.equal(t.upstream.requests.length, 3, 'refused requests never reach the provider');

      const other = await expectStatus(chat(t, free.key, 'gpt-test'), 200);
      assert.equal(other.res.headers.get('x-llmux-budget-remaining-usd'), null, 'no header for a key without a budget');
      const models = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${capped.key}` } });
      assert.equal(models.status, 200, 'only model requests are refused');
      assert.equal(models.headers.get('x-llmux-budget-remaining-usd'), '0.0000');

      c.set(Date.UTC(2026, 2, 15, 0, 0, 1));
      const nextDay = await expectStatus(chat(t, capped.key, 'gpt-test'), 200);
      assert.equal(nextDay.res.headers.get('x-llmux-budget-remaining-usd'), '0.0100');
    } finally {
      await t.close();
    }
  });

  it('applies a tier\'s budget to its keys, a key\'s own before it, holds what requests in flight may cost, and lets one in flight finish when the budget runs out', async () => {
    const c = clock();
    const t = await start(c.now, { tiers: { pro: { budget_usd: 0.005, budget_period: 'month' } } });
    try {
      const pro = await t.gateway.keys.create({ name: 'pro', tier: 'pro' });
      const own = await t.gateway.keys.create({ name: 'own', tier: 'pro', budget: { usd: 100, period: 'day' } });
      let open: () => void = () => {};
      const gate = new Promise<void>((resolve) => { open = resolve; });
      const slowStream: Responder = async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'u', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] })}\n\n`);
        await gate;
        res.end(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'u', choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] })}\n\n`
          + `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'u', choices: [], usage: { prompt_tokens: 500, completion_tokens: 100, total_tokens: 600 } })}\n\ndata: [DONE]\n\n`);
      };
      t.upstream.queue.push(slowStream, chatJson({ prompt: 1000, completion: 200, cached: 0 }));
      // Each reserves its worst case, about $0.0016 (200 tokens out at $8 per million, and its input).
      const inFlight = await chat(t, pro.key, 'gpt-test', { stream: true, max_tokens: 200 });
      assert.equal(inFlight.status, 200);
      assert.equal(inFlight.headers.get('x-llmux-budget-remaining-usd'), '0.0050', 'the tier\'s budget');
      await expectStatus(chat(t, pro.key, 'gpt-test', { max_tokens: 200 }), 200);
      await ledgerCounted(t, 1);
      // $0.0036 spent and $0.0016 held by the stream: no room for another worst case.
      const held = await expectStatus(chat(t, pro.key, 'gpt-test', { max_tokens: 200 }), 429);
      assert.match(held.text, /"code":"budget_reserved"/);
      assert.equal(held.res.headers.get('retry-after'), '1');
      const ownBudget = await expectStatus(chat(t, own.key, 'llmux-echo'), 200);
      assert.equal(ownBudget.res.headers.get('x-llmux-budget-remaining-usd'), '100.0000', 'a key\'s own budget comes before its tier\'s');

      open();
      const text = await inFlight.text();
      assert.match(text, /"content":"lo"/);
      assert.match(text, /data: \[DONE\]/, 'the stream in flight finished');
      await ledgerCounted(t, 3);
      await expectStatus(chat(t, pro.key, 'gpt-test', { max_tokens: 200 }), 403);
      const [row] = (await usage(t, pro.key)).body.data;
      assert.equal(row?.requests, 2);
      assert.equal(row?.cost_usd, 0.0054, 'the request in flight is counted too, past the budget');
    } finally {
      await t.close();
    }
  });
});

describe('budgets under concurrency', () => {
  it('never lets requests in flight at once spend past the budget by more than one of them may cost', async () => {
    // Issue 25: a key with $0.05/day at $0.049 fired 40 parallel requests and spent $40.05.
    const c = clock();
    const t = await start(c.now);
    try {
      const capped = await t.gateway.keys.create({ name: 'capped', budget: { usd: 0.05, period: 'day' } });
      t.gateway.usage.record({ keyId: capped.record.id, model: 'gpt-test', at: c.now(), inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, costUsd: 0.049 });
      // Each answer reports what its request reserved: 1,000 tokens in, 100 out ($0.0028); they overlap.
      const slow: Responder = async (req, res, seen) => {
        await new Promise((r) => setTimeout(r, 150));
        await chatJson({ prompt: 1000, completion: 100, cached: 0 })(req, res, seen);
      };
      t.upstream.fallback = slow;
      const content = 'word '.repeat(790);
      const answers = await Promise.all(Array.from({ length: 40 }, async () => {
        const res = await chat(t, capped.key, 'gpt-test', { max_tokens: 100, messages: [{ role: 'user', content }] });
        return { status: res.status, body: await res.text() };
      }));
      const admitted = answers.filter((a) => a.status === 200).length;
      await ledgerCounted(t, 1 + admitted);
      const spent = await t.gateway.usage.spend(capped.record.id, Date.UTC(2026, 2, 14));
      const oneRequest = 1000 * 2 / 1e6 + 100 * 8 / 1e6;
      assert.ok(spent <= 0.05 + oneRequest + 1e-9, `spent $${spent.toFixed(4)} of $0.05 with ${admitted} of 40 admitted`);
      const refused = answers.filter((a) => a.status !== 200);
      assert.ok(refused.length > 0);
      for (const answer of refused) {
        assert.ok(answer.status === 429 || answer.status === 403, String(answer.status));
        if (answer.status === 429) assert.match(answer.body, /"code":"budget_reserved"/);
      }
      const after = await expectStatus(chat(t, capped.key, 'gpt-test', { max_tokens: 100 }), 403);
      assert.match(after.text, /budget_exceeded/, 'once the holds are spend, the budget is reached');
    } finally {
      await t.close();
    }
  });
});

// ---------- a real `llmux serve` process, killed -9 ----------

interface Serving { child: ChildProcess; url: string; stderr(): string; exited: Promise<unknown> }

function serve(home: string): Promise<Serving> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LLMUX_CONFIG: '' },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /^llmux listening on (\S+)\n/.exec(out)?.[1];
      if (url !== undefined) resolve({ child, url, stderr: () => stderr, exited });
    });
    void exited.then(() => reject(new Error(`llmux serve ended before listening:\n${stderr}`)));
  });
}

/** Requests in the day files of `dir`, counting whole lines only (what a restart reads back). */
function requestsOnDisk(dir: string): number {
  if (!existsSync(dir)) return 0;
  let requests = 0;
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        for (const row of (JSON.parse(line) as { r: number[][] }).r) requests += row[3] ?? 0;
      } catch {
        // A torn line does not count.
      }
    }
  }
  return requests;
}

describe('the usage ledger of a real llmux serve process', () => {
  it('keeps every request answered more than a second before a SIGKILL, and serves it after a restart', { timeout: 60_000 }, async () => {
    const upstream = await startFakeUpstream();
    const home = mkdtempSync(join(tmpdir(), 'llmux-usage-kill-'));
    let server: Serving | undefined;
    try {
      writeFileSync(join(home, 'config.json'), JSON.stringify({
        builtin_catalog: false,
        providers: { 'fake-openai': { format: 'openai', base_url: `${upstream.url}/v1`, api_key: 'k' } },
        models: [PRICED_MODELS[0]],
      }));
      upstream.fallback = chatJson({ prompt: 1000, completion: 200, cached: 400 }); // $0.0036 each
      server = await serve(home);
      const adminKey = /\n(sk-llmux-\S+)\n/.exec(server.stderr())?.[1];
      assert.ok(adminKey, 'the first-run admin key');
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${adminKey}` };
      const body = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body });
        assert.equal(res.status, 200, await res.text());
      }
      // Written within about a second (the flush interval), without any shutdown: a real process on
      // real time, so the bound is kept, with room for a busy machine.
      await waitUntil(() => requestsOnDisk(join(home, 'usage')) >= 5, 'the five requests on disk', { timeoutMs: 3_000, pollMs: 20 });
      assert.equal(requestsOnDisk(join(home, 'usage')), 5);
      server.child.kill('SIGKILL');
      await server.exited;

      server = await serve(home);
      const res = await fetch(`${server.url}/v1/usage?group_by=model`, { headers });
      assert.equal(res.status, 200);
      const rows = (await res.json() as { data: UsageRow[] }).data;
      assert.deepEqual(rows.map((r) => [r.model, r.requests, r.input_tokens, r.output_tokens, r.cache_read_input_tokens, r.cost_usd]), [['gpt-test', 5, 3000, 1000, 2000, 0.018]]);
      server.child.kill('SIGTERM');
      await server.exited;
    } finally {
      if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await upstream.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
