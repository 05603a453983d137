import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, openaiHeaders, anthropicHeaders, logLineOf } from './helpers/gateway.ts';
import { fixture, respond } from './helpers/fake-upstream.ts';

const echo = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'llmux-echo', messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('per-key limits end to end', () => {
  it('admits the first 60 requests of a Basic key in a minute and refuses the 61st', async () => {
    let clock = Date.parse('2026-11-21T00:00:00Z');
    const t = await startTestGateway({ now: () => clock });
    try {
      for (let i = 1; i <= 60; i++) {
        const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo() });
        assert.equal(res.status, 200, `request ${i}`);
        assert.equal(res.headers.get('x-ratelimit-limit-requests'), '60');
        assert.equal(res.headers.get('x-ratelimit-remaining-requests'), String(60 - i));
        assert.equal(res.headers.get('x-ratelimit-limit-tokens'), '90000');
        assert.ok(res.headers.get('x-ratelimit-remaining-tokens'));
        assert.ok(res.headers.get('x-ratelimit-reset-requests'));
        assert.ok(res.headers.get('x-ratelimit-reset-tokens'));
        await res.arrayBuffer();
        clock += 500;
      }
      const refused = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo() });
      assert.equal(refused.status, 429);
      const body = await refused.json() as { error: Record<string, string> };
      assert.equal(body.error['type'], 'rate_limit_error');
      assert.equal(body.error['code'], 'rate_limit_exceeded');
      // The first request was admitted at 0 s and it is now 30 s: it leaves the window at 60-61 s.
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter >= 30 && retryAfter <= 31, `retry-after ${retryAfter}`);
      assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), '0');
      // Model listing and count_tokens don't count against requests/min but carry the headers.
      const models = await fetch(`${t.url}/v1/models`, { headers: openaiHeaders(t.key) });
      assert.equal(models.status, 200);
      assert.equal(models.headers.get('x-ratelimit-remaining-requests'), '0');
      clock += retryAfter * 1000;
      const again = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo() });
      assert.equal(again.status, 200);
      // Another key is not affected.
      const other = (await t.gateway.keys.create({ name: 'other' })).key;
      assert.equal((await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(other), body: echo() })).status, 200);
    } finally {
      await t.close();
    }
  });

  it('never asks for a retry-after longer than the 60 s window, even mid-second', async () => {
    const clock = Date.parse('2026-11-21T00:00:00.500Z');
    const t = await startTestGateway({ now: () => clock });
    try {
      const { key } = await t.gateway.keys.create({ name: 'one-a-minute', limits: { rpm: 1 } });
      const first = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: echo() });
      assert.equal(first.status, 200);
      await first.arrayBuffer();
      const refused = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: echo() });
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '60');
      assert.match(((await refused.json()) as { error: { message: string } }).error.message, /retry after 60 s/);
    } finally {
      await t.close();
    }
  });

  it('refuses over the concurrency cap, and a finished or abandoned stream frees its slot', async () => {
    const t = await startTestGateway();
    try {
      const key = (await t.gateway.keys.create({ name: 'two-at-once', limits: { concurrency: 2 } })).key;
      const hold = (): ReturnType<typeof respond.hang> => async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(fixture('openai-stream-text-include-usage.sse').subarray(0, 200));
      };
      t.upstream.queue.push(hold(), hold());
      const a = new AbortController();
      const b = new AbortController();
      const first = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'x' }] }), signal: a.signal });
      const second = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'x' }] }), signal: b.signal });
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      const third = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: echo() });
      assert.equal(third.status, 429);
      assert.equal(third.headers.get('retry-after'), '1');
      assert.match((await third.json() as { error: { message: string } }).error.message, /concurren/i);
      a.abort();
      await logLineOf(t, first); // written once the abandoned stream is closed and its slot freed
      const fourth = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: echo() });
      assert.equal(fourth.status, 200);
      await fourth.arrayBuffer();
      b.abort();
    } finally {
      await t.close();
    }
  });

  it('never admits more than the cap under many parallel requests', async () => {
    const t = await startTestGateway();
    try {
      const key = (await t.gateway.keys.create({ name: 'burst', limits: { rpm: 25, concurrency: 1000 } })).key;
      // A small max_tokens, so the reservations of 25 requests in flight at once fit in tokens/min
      // (without one each reserves the echo model's 4,096-token output limit): this is about rpm.
      const results = await Promise.all(Array.from({ length: 80 }, () =>
        fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: echo({ max_tokens: 16 }) }).then(async (r) => { await r.arrayBuffer(); return r.status; })));
      assert.equal(results.filter((s) => s === 200).length, 25);
      assert.equal(results.filter((s) => s === 429).length, 55);
      const capped = (await t.gateway.keys.create({ name: 'capped', limits: { concurrency: 3 } })).key;
      t.upstream.fallback = respond.sse(fixture('anthropic-stream-text.sse'), { delayMs: 5 });
      const statuses = await Promise.all(Array.from({ length: 20 }, () =>
        fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(capped), body: JSON.stringify({ model: 'claude-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }) })
          .then(async (r) => { await r.arrayBuffer(); return r.status; })));
      assert.equal(statuses.filter((s) => s === 200).length, 3);
    } finally {
      await t.close();
    }
  });

  it('refuses by tokens/min once real usage passes the limit', async () => {
    const t = await startTestGateway();
    try {
      const key = (await t.gateway.keys.create({ name: 'small-tpm', limits: { tpm: 1000 } })).key;
      // The upstream reports 900 + 200 tokens: real usage, not the tiny estimate, is what counts.
      t.upstream.queue.push(respond.json(200, {
        id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-upstream',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok', refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage: { prompt_tokens: 900, completion_tokens: 200, total_tokens: 1100 },
      }));
      const first = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }) });
      assert.equal(first.status, 200);
      await first.arrayBuffer();
      await logLineOf(t, first); // written once its real usage is settled
      const second = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: echo() });
      assert.equal(second.status, 429);
      assert.equal(second.headers.get('x-ratelimit-remaining-tokens'), '0');
      assert.match((await second.json() as { error: { message: string } }).error.message, /token/i);
    } finally {
      await t.close();
    }
  });

  it('refuses up front, with a 400 naming the numbers, a request whose estimated input passes the model\'s context length', async () => {
    const t = await startTestGateway();
    try {
      // Issue 14: a 31 MB request was admitted. The echo model's context is 32,768 tokens.
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo({ messages: [{ role: 'user', content: 'word '.repeat(40_000) }] }) });
      assert.equal(res.status, 400);
      const body = await res.json() as { error: Record<string, string> };
      assert.equal(body.error['code'], 'context_length_exceeded');
      assert.match(body.error['message'] ?? '', /about 500\d\d tokens .*32768-token context length of model "llmux-echo"/);
      const after = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo() });
      assert.equal(after.headers.get('x-ratelimit-remaining-requests'), '59', 'the refused request counted nothing against requests/min');
    } finally {
      await t.close();
    }
  });

  it('holds parallel streams to tokens/min: each reserves its input and max_tokens at admission', async () => {
    const t = await startTestGateway();
    try {
      // Issue 14: 10 parallel streams on a 90,000-tpm key used 500,100 tokens in 3 s.
      const body = JSON.stringify({ model: 'llmux-echo', max_tokens: 20_000, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'w '.repeat(20_000) }] });
      const results = await Promise.all(Array.from({ length: 10 }, async () => {
        const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body });
        const text = await res.text();
        const usage = /"usage":\{"prompt_tokens":(\d+),"completion_tokens":(\d+)/.exec(text);
        return { status: res.status, tokens: usage === null ? 0 : Number(usage[1]) + Number(usage[2]) };
      }));
      const admitted = results.filter((r) => r.status === 200);
      // Each reserves its ~10,000 input tokens and 4,096 output (the echo model's limit, below the
      // max_tokens asked for), and uses as much: six fit in 90,000, the other four are refused.
      assert.equal(admitted.length, 6);
      assert.equal(results.filter((r) => r.status === 429).length, 4);
      const used = admitted.reduce((sum, r) => sum + r.tokens, 0);
      assert.ok(used > 0 && used <= 90_000, `used ${used} tokens`);
    } finally {
      await t.close();
    }
  });

  it('uses tier limits from the config file and per-key overrides', async () => {
    const t = await startTestGateway({ config: { tiers: { basic: { rpm: 2 } } } });
    try {
      for (let i = 0; i < 2; i++) assert.equal((await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo() })).status, 200);
      const third = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: echo() });
      assert.equal(third.status, 429);
      assert.equal(third.headers.get('x-ratelimit-limit-requests'), '2');
      const pro = (await t.gateway.keys.create({ name: 'pro', tier: 'pro' })).key;
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(pro), body: echo() });
      assert.equal(res.headers.get('x-ratelimit-limit-requests'), '300');
      assert.equal(res.headers.get('x-ratelimit-limit-tokens'), '450000');
      const custom = (await t.gateway.keys.create({ name: 'ent', tier: 'enterprise', limits: { rpm: 7, tpm: 7000, concurrency: 7 } })).key;
      const e = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(custom), body: echo() });
      assert.equal(e.headers.get('x-ratelimit-limit-requests'), '7');
      assert.equal(e.headers.get('x-ratelimit-limit-tokens'), '7000');
    } finally {
      await t.close();
    }
  });
});
