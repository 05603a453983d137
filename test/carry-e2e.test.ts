/**
 * What a conversation carries survives every translation (llmux.md section 11), over real sockets
 * with the official SDKs: a three-turn tool loop (parallel calls, a call, the answer) completes
 * through every client format and way of keeping history to every upstream that enforces its
 * state rule as the real one does (test/helpers/fake-stateful.ts), streamed and whole, with nothing
 * refused on the way and the upstream's own state given back (no placeholder where the
 * conversation had the real thing).
 */
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { type Personality, SKIP_SIGNATURE, type StatefulFake, list, startStatefulFake } from './helpers/fake-stateful.ts';
import { LOOP_CLIENTS, type LoopClient, runLoop, toolLoop } from './helpers/tool-loops.ts';

const fakes = new Map<Personality, StatefulFake>();
let gw: TestGateway;

const MODEL_OF: Readonly<Record<Personality, string>> = {
  anthropic: 'claude-x',
  gemini: 'gemini-x',
  deepseek: 'deepseek-x',
  openrouter: 'openrouter-x',
  responses: 'responses-x',
  'gemini-native': 'gemini-native-x',
};

before(async () => {
  for (const personality of Object.keys(MODEL_OF) as Personality[]) fakes.set(personality, await startStatefulFake(personality));
  const url = (personality: Personality): string => `${(fakes.get(personality) as StatefulFake).url}/v1`;
  gw = await startTestGateway({
    config: {
      providers: {
        'anthropic-up': { format: 'anthropic', base_url: url('anthropic'), api_key: 'a-secret' },
        'gemini-up': { format: 'openai', base_url: url('gemini'), api_key: 'g-secret', family: 'gemini' },
        'deepseek-up': { format: 'openai', base_url: url('deepseek'), api_key: 'd-secret' },
        'openrouter-up': { format: 'openai', base_url: url('openrouter'), api_key: 'o-secret', family: 'openrouter' },
        'responses-up': { format: 'openai', base_url: url('responses'), api_key: 'r-secret', responses: true },
        'gemini-native-up': { format: 'gemini', base_url: `${(fakes.get('gemini-native') as StatefulFake).url}/v1beta`, api_key: 'gn-secret' },
      },
      models: [
        { id: 'claude-x', provider: 'anthropic-up', upstream_id: 'claude-up', reasoning: true, max_output_tokens: 8192, context_length: 200_000 },
        { id: 'gemini-x', provider: 'gemini-up', upstream_id: 'gemini-3-up', reasoning: true, context_length: 200_000 },
        { id: 'deepseek-x', provider: 'deepseek-up', upstream_id: 'deepseek-up', reasoning: true, replay_reasoning: true, context_length: 200_000 },
        { id: 'openrouter-x', provider: 'openrouter-up', upstream_id: 'google/gemini-3-up', reasoning: true, context_length: 200_000 },
        { id: 'responses-x', provider: 'responses-up', upstream_id: 'gpt-up', reasoning: true, context_length: 200_000 },
        { id: 'gemini-fb', provider: 'gemini-up', upstream_id: 'gemini-3-up', reasoning: true, context_length: 200_000, fallbacks: ['claude-x'] },
        { id: 'gemini-native-x', provider: 'gemini-native-up', upstream_id: 'gemini-3-pro-preview', reasoning: true, context_length: 200_000 },
        { id: 'gemini-native-fb', provider: 'gemini-native-up', upstream_id: 'gemini-3-pro-preview', reasoning: true, context_length: 200_000, fallbacks: ['claude-x'] },
      ],
      tiers: { basic: { rpm: 10_000, tpm: 100_000_000, concurrency: 50 } },
    },
  });
});

after(async () => {
  await gw?.close();
  for (const fake of fakes.values()) await fake.close();
});

/** The upstream requests of this loop: the fake's, from `from` on. */
function sent(fake: StatefulFake, from: number): Array<Record<string, unknown>> {
  return fake.requests.slice(from).map((request) => request.body);
}

/** Placeholders in what went up: Google's signature, an empty reasoning_content. */
function placeholders(bodies: Array<Record<string, unknown>>): string[] {
  const found: string[] = [];
  for (const body of bodies) {
    for (const content of list(body['contents'])) {
      for (const part of list(content['parts'])) if (part['thoughtSignature'] === SKIP_SIGNATURE) found.push('skip signature');
    }
    for (const message of list(body['messages'])) {
      if (message['role'] !== 'assistant') continue;
      if (message['reasoning_content'] === '') found.push('empty reasoning_content');
      for (const call of list(message['tool_calls'])) if (JSON.stringify(call).includes(SKIP_SIGNATURE)) found.push('skip signature');
    }
  }
  return found;
}

/** Chat upstreams: a chat client's answers from them pass through. */
const CHAT_PERSONALITIES: ReadonlySet<Personality> = new Set(['gemini', 'deepseek', 'openrouter']);

/** Whether the client's answers pass through from the fake as it wrote them (same format): the fake's, not llmux's, to match the schemas. */
function passesThrough(client: LoopClient, personality: Personality): boolean {
  return (client.startsWith('chat') && CHAT_PERSONALITIES.has(personality)) || (client.startsWith('responses') && personality === 'responses');
}

/** Which client formats reach which upstream: a Responses-only fake serves Responses clients (passed through). */
function pairs(): Array<[LoopClient, Personality]> {
  const out: Array<[LoopClient, Personality]> = [];
  for (const client of LOOP_CLIENTS) {
    for (const personality of Object.keys(MODEL_OF) as Personality[]) {
      if (personality === 'responses' && !client.startsWith('responses')) continue;
      out.push([client, personality]);
    }
  }
  return out;
}

describe('a three-turn tool loop keeps the upstream\'s state', () => {
  for (const [client, personality] of pairs()) {
    for (const stream of [true, false]) {
      test(`${client} client to the ${personality} upstream, ${stream ? 'streamed' : 'whole'}`, async () => {
        const fake = fakes.get(personality) as StatefulFake;
        const from = fake.requests.length;
        const refusals = fake.refusals.length;
        const loop = toolLoop(client, { baseUrl: gw.url, key: gw.key, model: MODEL_OF[personality], stream });
        // A chat client's answers from a chat upstream pass through as the provider sent them, its own fields included.
        const turns = passesThrough(client, personality) ? await gw.replaying(() => runLoop(loop)) : await runLoop(loop);
        assert.deepEqual(fake.refusals.slice(refusals), [], 'the upstream refused nothing');
        assert.deepEqual(turns.map((turn) => turn.calls.length), [2, 1, 0]);
        assert.equal(turns[2]?.text, 'done');
        assert.deepEqual(placeholders(sent(fake, from)), [], 'the upstream got its own state back, no placeholder');
        if (personality === 'anthropic') {
          const last = sent(fake, from).at(-1) ?? {};
          assert.equal((last['thinking'] as { type?: string } | undefined)?.type, 'enabled', 'thinking stayed on: the signed thinking came back');
        }
      });
    }
  }
});

/** The log lines of model requests answered with a 4xx. */
function clientErrors(): Array<Record<string, unknown>> {
  return (gw.logs as Array<Record<string, unknown>>).filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500);
}

/** The Gemini models that fall back to Claude: behind Google's OpenAI-compatible surface, and native. */
const FALLBACKS = [
  { model: 'gemini-fb', personality: 'gemini', provider: 'gemini-up', signatures: 'gemini-sig-' },
  { model: 'gemini-native-fb', personality: 'gemini-native', provider: 'gemini-native-up', signatures: 'gemini-native-sig-' },
] as const;

describe('another family gets none of it', () => {
  for (const fallback of FALLBACKS) {
    for (const client of ['messages', 'chat-standard', 'responses-stateless', 'gemini'] as const) {
      test(`a ${client} client's tool loop falls back from Gemini (${fallback.personality}) to Claude in its middle and back, and completes`, async () => {
        const gemini = fakes.get(fallback.personality) as StatefulFake;
        const claude = fakes.get('anthropic') as StatefulFake;
        const refused = gemini.refusals.length + claude.refusals.length;
        const claudeFrom = claude.requests.length;
        const logsFrom = gw.logs.length;
        const loop = toolLoop(client, { baseUrl: gw.url, key: gw.key, model: fallback.model, stream: true });
        const geminiTurn = passesThrough(client, fallback.personality) ? () => gw.replaying(() => loop.turn()) : () => loop.turn();
        const first = await geminiTurn();
        gemini.unavailable = 100;
        const second = await loop.turn();
        gemini.unavailable = 0;
        const third = await geminiTurn();
        assert.deepEqual([first.calls.length, second.calls.length, third.text], [2, 1, 'done']);
        assert.equal(gemini.refusals.length + claude.refusals.length, refused, 'nothing was refused: Gemini\'s state never reached Claude, nor Claude\'s Gemini');
        const toClaude = claude.requests.slice(claudeFrom).map((request) => request.body);
        assert.equal(toClaude.length, 1, 'the middle turn went to Claude');
        assert.ok(!JSON.stringify(toClaude).includes(fallback.signatures), 'no Gemini signature went to Claude');
        const lastToGemini = gemini.requests.at(-1)?.body ?? {};
        assert.ok(JSON.stringify(lastToGemini).includes(SKIP_SIGNATURE), 'the call Claude made carries Google\'s placeholder');
        assert.ok(!JSON.stringify(lastToGemini).includes('"signature"'), 'no Anthropic signature went to Gemini');
        await gw.allLogged();
        const lines = gw.logs.slice(logsFrom) as Array<Record<string, unknown>>;
        assert.deepEqual(lines.filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500), []);
        const warnings = JSON.stringify(lines.map((line) => line['warnings'] ?? []));
        // A Gemini client passed through to native Gemini holds Google's own signatures, not llmux's.
        const issuer = client === 'gemini' && fallback.personality === 'gemini-native' ? 'google \\(a signature the Gemini client kept\\)' : fallback.provider;
        assert.match(warnings, new RegExp(`issued by provider \\\\"${issuer}\\\\" \\(family gemini\\) stripped: the request goes to provider \\\\"anthropic-up\\\\"`));
        assert.match(warnings, /placeholder thought signature skip_thought_signature_validator/);
        if (client === 'messages') assert.match(warnings, /thinking turned off for this request/);
      });
    }
  }

  test('key B replaying key A\'s sealed history gets nothing of it: the seals are ignored and logged, and Gemini gets its placeholder instead', async () => {
    const gemini = fakes.get('gemini') as StatefulFake;
    const refused = gemini.refusals.length;
    const keyB = (await gw.gateway.keys.create({ name: 'key-b', tier: 'basic' })).key;
    const a = new Anthropic({ apiKey: gw.key, baseURL: gw.url, maxRetries: 0 });
    const b = new Anthropic({ apiKey: keyB, baseURL: gw.url, maxRetries: 0 });
    const tools: Anthropic.Tool[] = [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }];
    const first = await a.messages.create({ model: 'gemini-x', max_tokens: 2048, messages: [{ role: 'user', content: 'Look up.' }], tools });
    const sealedBlock = first.content.find((block) => block.type === 'thinking');
    assert.ok(sealedBlock?.type === 'thinking' && sealedBlock.signature.startsWith('llmux.v2.'), 'A got the thought signature sealed in a thinking block');
    const calls = first.content.flatMap((block) => (block.type === 'tool_use' ? [block] : []));
    const history: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Look up.' },
      { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] },
      { role: 'user', content: calls.map((call) => ({ type: 'tool_result' as const, tool_use_id: call.id, content: 'r' })) },
    ];
    const res = await b.messages.create({ model: 'gemini-x', max_tokens: 2048, messages: history, tools }).asResponse();
    assert.equal(res.status, 200);
    assert.equal(gemini.refusals.length, refused);
    const sentByB = JSON.stringify(gemini.requests.at(-1)?.body ?? {});
    assert.ok(!sentByB.includes('gemini-sig-'), 'A\'s Gemini signature did not go up for B');
    assert.ok(sentByB.includes(SKIP_SIGNATURE), 'Gemini got its placeholder instead');
    await gw.allLogged();
    const line = gw.logs.find((entry) => (entry as Record<string, unknown>)['request_id'] === res.headers.get('x-request-id')) as Record<string, unknown>;
    assert.match(JSON.stringify(line['warnings']), /1 llmux seal issued to another key ignored/);
    assert.deepEqual(clientErrors(), []);
  });
});
