/**
 * Sticky conversations on the request path (llmux.md section 10), over sockets: the turns of one
 * conversation go to the deployment and provider key that answered the last one while it is
 * usable; new conversations spread; a conversation whose deployment rests moves, and stays where
 * it moved. Two providers of two keys each, one deployment on each: which deployment and key a
 * request reached is the key the fake was sent.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { respond } from './helpers/fake-upstream.ts';
import type { SeenRequest } from './helpers/fake-upstream.ts';
import { manualClock, startRoutedGateway } from './helpers/routed-gateway.ts';
import type { ManualClock, RoutedGateway } from './helpers/routed-gateway.ts';

const KEYS = { 'sk-1a': 'p1', 'sk-1b': 'p1', 'sk-2a': 'p2', 'sk-2b': 'p2' } as const;

let t: RoutedGateway;
let clock: ManualClock;
/** Deployments answering 503 now, by provider. */
const failing = new Set<string>();

before(async () => {
  clock = manualClock();
  t = await startRoutedGateway({
    config: (base) => ({
      providers: {
        p1: { format: 'openai', base_url: base, api_keys: ['sk-1a', 'sk-1b'] },
        p2: { format: 'openai', base_url: base, api_keys: ['sk-2a', 'sk-2b'] },
      },
      models: [{ id: 'sticky', deployments: [{ provider: 'p1', upstream_id: 'up-s' }, { provider: 'p2', upstream_id: 'up-s' }] }],
    }),
    now: clock.now,
  });
  t.behave((seen) => (failing.has(whereOf(seen).split('#')[0]!) ? respond.json(503, { error: { message: 'unavailable' } }) : undefined));
});
after(() => t.close());

/** `provider#key` a request was sent with. */
function whereOf(seen: SeenRequest): string {
  const key = String(seen.headers.authorization ?? seen.headers['x-api-key']).replace('Bearer ', '') as keyof typeof KEYS;
  return `${KEYS[key]}#${key}`;
}

/** Sends a chat conversation's next turn (the history so far plus one user message); returns where the answer came from. */
async function turn(history: Array<{ role: string; content: string }>, text: string): Promise<string> {
  history.push({ role: 'user', content: text });
  const from = t.upstream.requests.length;
  const res = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
    body: JSON.stringify({ model: 'sticky', messages: [{ role: 'system', content: 'You are terse.' }, ...history] }),
  });
  const body = await res.json() as { choices: Array<{ message: { content: string } }> };
  assert.equal(res.status, 200);
  history.push({ role: 'assistant', content: body.choices[0]?.message.content ?? '' });
  return whereOf(t.seen(from).at(-1)!);
}

describe('a sticky conversation', () => {
  it('keeps its deployment and key for ten turns while new conversations spread', async () => {
    const history: Array<{ role: string; content: string }> = [];
    const first = await turn(history, 'Hello there');
    for (let i = 1; i < 10; i++) assert.equal(await turn(history, `Turn ${i}`), first);

    // New conversations: each picks a deployment with chance 1/2 (weights equal); all 25 on one
    // has chance 2·2^-25 = 6e-8.
    const spread = new Set<string>();
    for (let i = 0; i < 25; i++) spread.add((await turn([], `A new conversation ${i}`)).split('#')[0]!);
    assert.deepEqual([...spread].sort(), ['p1', 'p2']);
    // ...and the first conversation is still where it was.
    assert.equal(await turn(history, 'Still here?'), first);
  });

  it('moves when its deployment rests, and then stays on the new one', async () => {
    const history: Array<{ role: string; content: string }> = [];
    const first = await turn(history, 'Another hello');
    const [provider] = first.split('#') as [string];
    failing.add(provider);
    // The turn's attempt at its own deployment is answered 503: it rests, the turn is answered by the other.
    const moved = await turn(history, 'Are you there?');
    assert.notEqual(moved.split('#')[0], provider);
    failing.delete(provider);
    clock.advance(6_000);
    for (let i = 0; i < 5; i++) assert.equal(await turn(history, `After the move ${i}`), moved);
  });

  it('follows a Responses previous_response_id chain, and a messages metadata.user_id', async () => {
    const responses = async (input: string, previous?: string): Promise<{ id: string; where: string }> => {
      const from = t.upstream.requests.length;
      const res = await fetch(`${t.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
        body: JSON.stringify({ model: 'sticky', input, ...(previous === undefined ? {} : { previous_response_id: previous }) }),
      });
      const body = await res.json() as { id: string };
      assert.equal(res.status, 200, JSON.stringify(body));
      return { id: body.id, where: whereOf(t.seen(from).at(-1)!) };
    };
    // Each chain starts where its first turn lands; an unchained request with the same input would not follow it.
    for (let chain = 0; chain < 3; chain++) {
      let last = await responses(`chain ${chain} starts`);
      const home = last.where;
      for (let i = 0; i < 5; i++) {
        last = await responses(`chain ${chain} turn ${i} ${Math.random()}`, last.id);
        assert.equal(last.where, home);
      }
    }

    const messages = async (userId: string, text: string): Promise<string> => {
      const from = t.upstream.requests.length;
      const res = await fetch(`${t.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': t.key, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'sticky', max_tokens: 100, metadata: { user_id: userId }, messages: [{ role: 'user', content: text }] }),
      });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      return whereOf(t.seen(from).at(-1)!);
    };
    const home = await messages('session-7', 'first');
    for (let i = 0; i < 5; i++) assert.equal(await messages('session-7', `a different first message ${i}`), home);
  });

  it('is scoped by the llmux key: another key\'s identical conversation is its own', async () => {
    const other = (await t.gateway.keys.create({ name: 'other', tier: 'pro' })).key;
    const from = t.upstream.requests.length;
    const where = new Set<string>();
    // The same first message from 25 fresh keys: bound per key, so they spread (all on one deployment: 6e-8).
    for (let i = 0; i < 25; i++) {
      const key = i === 0 ? other : (await t.gateway.keys.create({ name: `k${i}`, tier: 'pro' })).key;
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'sticky', messages: [{ role: 'user', content: 'the very same words' }] }),
      });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      where.add(whereOf(t.seen(from).at(-1)!).split('#')[0]!);
    }
    assert.equal(where.size, 2);
  });
});
