/**
 * Aliases, routes and discovery on the request path (llmux.md section 10), over sockets against a
 * fake upstream: an alias is answered in the requested name, a route's answer names the model that
 * answered and the log line both, a key's model allow-list holds on the model that answers, and
 * the models a `"discover": true` provider lists are served, a configured id winning, gone when
 * gone, start-up waiting for none of it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { respond } from './helpers/fake-upstream.ts';
import { chat, startRoutedGateway } from './helpers/routed-gateway.ts';
import type { RoutedGateway } from './helpers/routed-gateway.ts';

const MODELS = [
  { id: 'small', provider: 'fake', upstream_id: 'up-small', reasoning: true },
  { id: 'big', provider: 'fake', upstream_id: 'up-big', reasoning: true },
  { id: 'long', provider: 'fake', upstream_id: 'up-long', context_length: 1_000_000 },
  { id: 'eyes', provider: 'fake', upstream_id: 'up-eyes' },
];

/** The last request log line (not a message line). */
function lastLine(t: RoutedGateway): Record<string, unknown> {
  return t.logs.filter((l) => (l as { request_id?: unknown }).request_id !== undefined).at(-1) as Record<string, unknown>;
}

async function messages(t: RoutedGateway, body: Record<string, unknown>, key = t.key): Promise<{ status: number; body: Record<string, unknown>; upstream: unknown }> {
  const from = t.upstream.requests.length;
  const res = await fetch(`${t.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  const parsed = await res.json() as Record<string, unknown>;
  await delay(10);
  return { status: res.status, body: parsed, upstream: t.seen(from).at(-1)?.body['model'] };
}

describe('aliases and routes', () => {
  let t: RoutedGateway;
  let limited: string;
  let proKey: string;
  before(async () => {
    t = await startRoutedGateway({
      config: (base) => ({
        providers: { fake: { format: 'openai', base_url: base, api_key: 'upstream-secret' } },
        models: MODELS,
        aliases: { 'claude-3-5-haiku-*': 'small', 'gpt-4o': 'big', 'sm*': 'big' },
        routes: [
          { when: { model: 'small', thinking: true }, model: 'big' },
          { when: { model: 'claude-*', input_tokens_over: 2_000 }, model: 'long' },
          { when: { has_images: true, client_format: 'chat' }, model: 'eyes' },
          { when: { key_tier: 'pro', model: 'big' }, model: 'long' },
        ],
      }),
    });
    limited = (await t.gateway.keys.create({ name: 'limited', tier: 'basic', models: ['small'] })).key;
    proKey = (await t.gateway.keys.create({ name: 'pro', tier: 'pro' })).key;
  });
  after(() => t.close());

  it('answer a globbed alias in the name the client asked for, the log line naming both', async () => {
    const { status, body, upstream } = await messages(t, { model: 'claude-3-5-haiku-20241022' });
    assert.equal(status, 200);
    assert.equal(body['model'], 'claude-3-5-haiku-20241022');
    assert.equal(upstream, 'up-small');
    const line = lastLine(t);
    assert.equal(line['model'], 'small');
    assert.equal(line['requested_model'], 'claude-3-5-haiku-20241022');
  });

  it('let a real model win over an alias that matches its id', async () => {
    const { status, body } = await chat(t, 'small', 'hello');
    assert.equal(status, 200);
    assert.equal(body['model'], 'small');
    assert.equal(t.seen().at(-1)?.body['model'], 'up-small');
  });

  it('list literal aliases as models of their target, and answer one by id', async () => {
    const list = await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.key}` } })).json() as { data: Array<{ id: string; display_name: string; context_length: number }> };
    const alias = list.data.find((m) => m.id === 'gpt-4o');
    const target = list.data.find((m) => m.id === 'big');
    assert.ok(alias !== undefined && target !== undefined);
    assert.equal(alias.context_length, target.context_length);
    assert.ok(!list.data.some((m) => m.id.includes('*')), 'globbed aliases are not listed');
    const one = await fetch(`${t.url}/v1/models/gpt-4o`, { headers: { authorization: `Bearer ${t.key}` } });
    assert.equal(one.status, 200);
    assert.equal((await one.json() as { id: string }).id, 'gpt-4o');
  });

  it('route by traits, first match winning, the answer naming the model that answered and the log line both', async () => {
    const thinking = await messages(t, { model: 'small', max_tokens: 2_000, thinking: { type: 'enabled', budget_tokens: 1_024 } });
    assert.equal(thinking.status, 200);
    assert.equal(thinking.body['model'], 'big');
    assert.equal(thinking.upstream, 'up-big');
    assert.equal(lastLine(t)['model'], 'big');
    assert.equal(lastLine(t)['requested_model'], 'small');

    // Over 2,000 tokens of input, asked for by an alias: the route reads the id after aliases (`small`), so
    // `claude-*` does not hold; the plain alias answers.
    const aliasLong = await messages(t, { model: 'claude-3-5-haiku-x', messages: [{ role: 'user', content: 'word '.repeat(3_000) }] });
    assert.equal(aliasLong.upstream, 'up-small');
    // An id no model or alias has, matched by a route's glob: the route picks the model.
    const long = await messages(t, { model: 'claude-opus-9', messages: [{ role: 'user', content: 'word '.repeat(3_000) }] });
    assert.equal(long.status, 200);
    assert.equal(long.body['model'], 'long');
    assert.equal(long.upstream, 'up-long');
    const short = await messages(t, { model: 'claude-opus-9' });
    assert.equal(short.status, 404, 'no rule holds and no model has that id');

    const image = await chat(t, 'small', 'unused', { messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] });
    assert.equal(image.status, 200);
    assert.equal(image.body['model'], 'eyes');
    const imageByMessages = await messages(t, { model: 'small', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] });
    assert.equal(imageByMessages.upstream, 'up-small', 'client_format: chat only');

    assert.equal((await chat(t, 'big', 'hello', {}, proKey)).body['model'], 'long', 'key_tier: pro');
    assert.equal((await chat(t, 'big', 'hello')).body['model'], 'big');
  });

  it('check a key\'s model allow-list on the model that answers: no alias or route widens it', async () => {
    assert.equal((await chat(t, 'small', 'hello', {}, limited)).status, 200);
    const viaAlias = await chat(t, 'gpt-4o', 'hello', {}, limited);
    assert.equal(viaAlias.status, 403);
    assert.equal((viaAlias.body['error'] as { code: string }).code, 'model_not_allowed');
    const viaRoute = await messages(t, { model: 'small', max_tokens: 2_000, thinking: { type: 'enabled', budget_tokens: 1_024 } }, limited);
    assert.equal(viaRoute.status, 403);
    assert.equal((viaRoute.body['error'] as { code: string }).code, 'model_not_allowed');
    // An alias of a model it may use works, and is listed.
    assert.equal((await messages(t, { model: 'claude-3-5-haiku-1' }, limited)).status, 200);
    const list = await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${limited}` } })).json() as { data: Array<{ id: string }> };
    assert.deepEqual(list.data.map((m) => m.id), ['small']);
  });

  it('count tokens for an id only a route or an alias serves', async () => {
    const res = await fetch(`${t.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': t.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-3-5-haiku-20241022', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
  });
});

describe('discovery', () => {
  let t: RoutedGateway;
  let listed: Array<{ id: string }>;
  /** A server whose GET /models never answers. */
  let silent: http.Server;
  before(async () => {
    listed = [{ id: 'qwen3:8b' }, { id: 'small' }, { id: 'shared-id' }];
    silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
    const started = performance.now();
    t = await startRoutedGateway({
      config: (base) => ({
        providers: {
          fake: { format: 'openai', base_url: base, api_key: 'upstream-secret' },
          local: { format: 'openai', base_url: base, discover: true },
          second: { format: 'openai', base_url: `${base}/second`, discover: true },
          away: { format: 'openai', base_url: silentUrl, discover: true },
        },
        models: MODELS,
      }),
    });
    assert.ok(performance.now() - started < 5_000, 'start-up does not wait on a provider that does not answer');
    t.upstream.fallback = ((previous) => (req, res, seen) => {
      if (seen.method === 'GET' && seen.path === '/v1/models') return respond.json(200, { object: 'list', data: listed })(req, res, seen);
      if (seen.method === 'GET' && seen.path === '/v1/second/models') return respond.json(200, { object: 'list', data: [{ id: 'shared-id' }, { id: 'second-only' }] })(req, res, seen);
      return previous(req, res, seen);
    })(t.upstream.fallback);
    await t.gateway.routing.discovery.refresh('local');
    await t.gateway.routing.discovery.refresh('second');
  });
  after(async () => {
    await t.close();
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  const ids = async (): Promise<string[]> => ((await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.key}` } })).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);

  it('serves the models a provider lists, a configured id winning, the first provider in the config winning a shared id', async () => {
    const list = await ids();
    assert.ok(list.includes('qwen3:8b') && list.includes('second-only') && list.includes('shared-id'));
    assert.equal(list.filter((id) => id === 'small').length, 1);
    const local = await chat(t, 'qwen3:8b', 'hello');
    assert.equal(local.status, 200);
    assert.equal(local.body['model'], 'qwen3:8b');
    assert.equal(t.seen().at(-1)?.path, '/v1/chat/completions');
    assert.equal((await chat(t, 'shared-id', 'hello')).status, 200);
    assert.equal(t.seen().at(-1)?.path, '/v1/chat/completions', 'local, first in the config, serves the shared id');
    await chat(t, 'second-only', 'hello');
    assert.equal(t.seen().at(-1)?.path, '/v1/second/chat/completions');
    await chat(t, 'small', 'hello');
    assert.equal(t.seen().at(-1)?.body['model'], 'up-small', 'the configured model answers its id');
  });

  it('drops a model gone from the list at the next read', async () => {
    listed = [{ id: 'small' }];
    await t.gateway.routing.discovery.refresh('local');
    assert.ok(!(await ids()).includes('qwen3:8b'));
    assert.equal((await chat(t, 'qwen3:8b', 'hello')).status, 404);
  });
});
