/**
 * The lazy read of a model request (src/dialects/read.ts) against the whole parse, on a corpus of
 * real agent bodies: every recorded client request, the bench's agent turn at every size (as
 * messages, and as chat the way the translator writes it), and bodies built to stress the read
 * (escapes, U+0000, pretty-printing, duplicate keys, long tool arguments, refusals). Both reads
 * must accept or refuse alike, in the same words; an accepted body must give the same value, facts
 * and upstream bytes, same format or translated, with and without a platform's envelope.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { dialects } from '../../src/dialects/index.ts';
import { readClientRequest } from '../../src/dialects/read.ts';
import type { Arrival, Dialect } from '../../src/dialects/index.ts';
import { LAZY_REQUEST_MEMBERS } from '../../src/formats/text-members.ts';
import type { LazyMembers } from '../../src/common/json-bytes.ts';
import { readJsonObject } from '../../src/http/body.ts';
import type { RecallScope } from '../../src/http/body.ts';
import { countingRecall } from '../helpers/recall.ts';
import { realValue } from '../../src/common/json-lazy.ts';
import { buildUpstreamBody } from '../../src/providers/upstream-body.ts';
import { messagesRequestToChat } from '../../src/translate/messages-to-chat.ts';
import { translationFor } from '../../src/translate/index.ts';
import type { TurnOf } from '../../src/translate/index.ts';
import type { ClientRequestOf, MessagesRequest, UpstreamFormat, WireFormat } from '../../src/formats/wire.ts';
import type { ModelEntry, ProviderConfig } from '../../src/config/types.ts';
import { agentMessagesBody, agentTurns, inClaudeCodeOrder } from '../../bench/agent-body.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'clients');

interface Sample {
  name: string;
  format: WireFormat;
  json: string;
}

const MODEL = {
  id: 'corpus-model', provider: 'p', upstream_id: 'upstream-model', reasoning: true, max_tokens_param: 'max_tokens',
  replay_reasoning: false, max_output_tokens: 64_000, context_length: 1_000_000,
} as ModelEntry;

const UPSTREAMS: readonly UpstreamFormat[] = ['chat', 'messages', 'gemini', 'converse'];
/** Bedrock's envelope: what a platform does to a same-format body and a translated one alike. */
const ENVELOPE = new Map<string, unknown>([['model', undefined], ['stream', undefined], ['anthropic_version', 'bedrock-2023-05-31']]);

function formatOfPath(path: string): WireFormat | undefined {
  if (path.startsWith('/v1/messages?') || path === '/v1/messages') return 'messages';
  if (path.startsWith('/v1/responses')) return 'responses';
  if (path.startsWith('/v1/chat/completions')) return 'chat';
  return undefined;
}

function recordedSamples(): Sample[] {
  const samples: Sample[] = [];
  for (const file of readdirSync(FIXTURES).filter((name) => name.endsWith('.json'))) {
    const fixture = JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as { requests: Array<{ path: string; body?: unknown }> };
    fixture.requests.forEach((request, i) => {
      const format = formatOfPath(request.path);
      if (format !== undefined && request.body !== undefined) samples.push({ name: `${file} #${i}`, format, json: JSON.stringify(request.body) });
    });
  }
  return samples;
}

function agentSamples(): Sample[] {
  const samples: Sample[] = [];
  for (const size of [512, 2 * 1024, 8 * 1024, 32 * 1024, 64 * 1024, 128 * 1024, 200 * 1024]) {
    const json = agentMessagesBody('corpus-model', size % 2 === 0, size);
    samples.push({ name: `agent turn ${size} B`, format: 'messages', json });
    const chat = messagesRequestToChat(JSON.parse(json) as MessagesRequest, { upstreamId: 'corpus-model', reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: true, maxOutputTokens: 64_000 });
    samples.push({ name: `agent turn ${size} B as chat`, format: 'chat', json: JSON.stringify(chat) });
  }
  return samples;
}

const LONG = 'a long text that goes on and on '.repeat(12);

function builtSamples(): Sample[] {
  const call = (args: string): unknown => ({ id: 'call_1', type: 'function', function: { name: 'Bash', arguments: args } });
  const chat = (messages: unknown[], extra: Record<string, unknown> = {}): string => JSON.stringify({ model: 'corpus-model', messages, ...extra });
  const messages = (list: unknown[], extra: Record<string, unknown> = {}): string => JSON.stringify({ model: 'corpus-model', max_tokens: 100, messages: list, ...extra });
  return [
    { name: 'chat: long tool arguments', format: 'chat', json: chat([{ role: 'user', content: LONG }, { role: 'assistant', content: null, tool_calls: [call(JSON.stringify({ command: LONG }))] }, { role: 'tool', tool_call_id: 'call_1', content: LONG }]) },
    { name: 'chat: long arguments that are not JSON', format: 'chat', json: chat([{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [call(LONG)] }, { role: 'tool', tool_call_id: 'call_1', content: 'ok' }]) },
    { name: 'chat: escapes, surrogates and non-Latin text', format: 'chat', json: chat([{ role: 'system', content: `${LONG}\n\t"\\ \u2028 \u{1f600} \ud800` }, { role: 'user', content: `caf\u00e9 \u2192 ${LONG}` }]) },
    { name: 'chat: a U+0000 in the text', format: 'chat', json: chat([{ role: 'user', content: `${LONG}\u0000` }]) },
    { name: 'chat: text that spells an escaped reference', format: 'chat', json: chat([{ role: 'user', content: `${LONG} \\u00000\\u0000` }]) },
    { name: 'chat: trailing whitespace in the last assistant text', format: 'chat', json: chat([{ role: 'user', content: LONG }, { role: 'assistant', content: `${LONG}   \n  ` }]) },
    { name: 'chat: pretty-printed', format: 'chat', json: JSON.stringify(JSON.parse(chat([{ role: 'user', content: LONG }])), null, 2) },
    { name: 'chat: a top-level key twice', format: 'chat', json: `{"model":"corpus-model","messages":[{"role":"user","content":${JSON.stringify(LONG)}}],"model":"corpus-model"}` },
    { name: 'chat: refused, a long text where a role goes', format: 'chat', json: chat([{ role: LONG, content: LONG }]) },
    { name: 'chat: refused, content of the wrong type beside a long text', format: 'chat', json: chat([{ role: 'system', content: LONG }, { role: 'user', content: 42 }]) },
    { name: 'chat: refused, a bad escape in a long text', format: 'chat', json: `{"model":"corpus-model","messages":[{"role":"user","content":"${LONG}\\x"}]}` },
    { name: 'messages: blank long text', format: 'messages', json: messages([{ role: 'user', content: [{ type: 'text', text: ' '.repeat(400) }] }]) },
    { name: 'messages: long tool input and result', format: 'messages', json: messages([{ role: 'user', content: LONG }, { role: 'assistant', content: [{ type: 'thinking', thinking: LONG, signature: LONG }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: LONG, text: LONG } }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: LONG }] }] }], { system: LONG, metadata: { user_id: 'u1' } }) },
    { name: 'messages: an unknown block type beside a long text', format: 'messages', json: messages([{ role: 'user', content: [{ type: 'x_new_block', text: LONG }, { type: 'text', text: LONG }] }]) },
    { name: 'messages: a thinking block signed with what looks like a llmux seal', format: 'messages', json: messages([{ role: 'user', content: LONG }, { role: 'assistant', content: [{ type: 'thinking', thinking: LONG, signature: `llmux.v2.${'A'.repeat(300)}` }, { type: 'text', text: LONG }] }, { role: 'user', content: LONG }]) },
    { name: 'messages: refused, a long text where a role goes', format: 'messages', json: messages([{ role: LONG, content: [{ type: 'text', text: LONG }] }]) },
    { name: 'messages: refused, no max_tokens', format: 'messages', json: JSON.stringify({ model: 'corpus-model', messages: [{ role: 'user', content: LONG }] }) },
    { name: 'responses: long input string and instructions', format: 'responses', json: JSON.stringify({ model: 'corpus-model', instructions: LONG, input: LONG }) },
    { name: 'responses: long custom tool input and call output', format: 'responses', json: JSON.stringify({ model: 'corpus-model', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: LONG }] }, { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: LONG }, { type: 'custom_tool_call_output', call_id: 'c1', output: LONG }, { type: 'function_call', call_id: 'c2', name: 'shell', arguments: JSON.stringify({ cmd: LONG }) }, { type: 'function_call_output', call_id: 'c2', output: LONG }] }) },
  ];
}

function arrivalFor(format: WireFormat): Arrival {
  const headers = format === 'messages' ? { 'anthropic-version': '2023-06-01' } : {};
  return { forwarded: dialects[format].readHeaders(headers), strict: false, params: {}, query: '' };
}

type Read = { request: ClientRequestOf<WireFormat> } | { error: string };

function wholeRead(sample: Sample): Read {
  try {
    const raw = readJsonObject(Buffer.from(sample.json));
    const request = dialects[sample.format].readRequest(raw.value, arrivalFor(sample.format));
    request.raw = raw;
    return { request };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** A turn whose seals never open (the corpus has none of llmux's), the same for both reads. */
function turnOf(format: WireFormat): TurnOf[WireFormat] {
  const carry = { seal: () => 'llmux.v2.sealed', open: () => ({ state: 'unreadable' as const }) };
  if (format === 'responses') return { ...carry, responseId: 'resp_corpus', now: () => 1_700_000_000_000, exposeSeals: false };
  if (format === 'chat') return { ...carry, recalled: new Map(), remember: () => {} };
  if (format === 'gemini') return { ...carry, stream: false };
  return carry;
}

/** An OpenAI-family provider: its bodies get the conversation's prompt_cache_key, and carried state is sorted for it. */
const OPENAI_PROVIDER = { id: 'corpus-openai', family: 'openai', format: 'chat', baseUrl: 'https://api.openai.com/v1' } as unknown as ProviderConfig;

/** A model whose earlier reasoning is replayed: the carried state fills the history's gaps, so a same-format body's messages are rewritten. */
const REPLAYING_MODEL = { ...MODEL, replay_reasoning: true } as ModelEntry;

function upstreamBytes(request: ClientRequestOf<WireFormat>, upstream: UpstreamFormat, envelope: Map<string, unknown> | undefined, provider?: ProviderConfig, model = MODEL): { bytes: string; warnings: string[] } {
  const warnings: string[] = [];
  const { body } = buildUpstreamBody(request, upstream, model, turnOf(request.format), (message) => warnings.push(message), envelope, provider);
  return { bytes: typeof body === 'string' ? body : Buffer.concat(body).toString(), warnings };
}

/** The dialect with its lazy members taken for a body of any size, so that every sample of the corpus is read lazily. */
function everyBodyLazily<F extends WireFormat>(dialect: Dialect<F>): Dialect<F> {
  if (dialect.lazyMembers === undefined) return dialect;
  // One set of members for every body: a key's last turn is recalled only under the members it was read with.
  const lazyMembers = (EVERY_BODY[dialect.format] ??= { ...dialect.lazyMembers, minBodyBytes: 0 });
  return { ...dialect, lazyMembers };
}

const EVERY_BODY: Partial<Record<WireFormat, LazyMembers>> = {};

/** Given `recall`, the body is read as the next turn of the one read before under the same scope (src/common/json-recall.ts). */
function checkAgreement(sample: Sample, recall?: RecallScope): void {
  const dialect = dialects[sample.format];
  const whole = wholeRead(sample);
  let lazy: ReturnType<typeof readClientRequest<WireFormat>> | undefined;
  let lazyError: string | undefined;
  try {
    lazy = readClientRequest(everyBodyLazily(dialect), (members) => readJsonObject(Buffer.from(sample.json), members, recall), arrivalFor(sample.format));
  } catch (err) {
    lazyError = (err as Error).message;
  }
  assert.equal('error' in whole, sample.name.includes('refused'), `${sample.name}: refused by the whole parse or not, as named`);
  if ('error' in whole) {
    assert.equal(lazyError, whole.error, `${sample.name}: refused in the same words`);
    return;
  }
  assert.equal(lazyError, undefined, `${sample.name}: accepted by both`);
  const { request, facts } = lazy as NonNullable<typeof lazy>;
  const texts = request.raw?.texts;
  const wholeRequest = whole.request;
  assert.deepEqual(realValue(request.body, texts), wholeRequest.body, `${sample.name}: the same body`);
  assert.equal(request.model, wholeRequest.model);
  assert.equal(request.stream, wholeRequest.stream);
  assert.equal(facts.maxTokens, dialect.maxTokens(wholeRequest.body as never), `${sample.name}: max tokens`);
  assert.equal(facts.inputTokens(), dialect.estimate(wholeRequest.body as never), `${sample.name}: the estimate`);
  assert.deepEqual(facts.traits(), dialect.traits(wholeRequest.body as never), `${sample.name}: traits`);
  assert.equal(facts.conversation(), dialect.conversationKey(wholeRequest.body as never), `${sample.name}: the conversation key`);
  for (const upstream of [sample.format as UpstreamFormat, ...UPSTREAMS.filter((format) => format !== sample.format)]) {
    if (upstream !== sample.format && translationFor(sample.format, upstream) === undefined) continue;
    for (const [envelope, provider, model] of [[undefined, undefined, MODEL], [ENVELOPE, undefined, MODEL], [undefined, OPENAI_PROVIDER, MODEL], [undefined, undefined, REPLAYING_MODEL]] as const) {
      const expected = upstreamBytes(wholeRequest, upstream, envelope, provider, model);
      const actual = upstreamBytes(request, upstream, envelope, provider, model);
      const what = `${sample.name} -> ${upstream}${envelope === undefined ? '' : ' in an envelope'}${provider === undefined ? '' : ' (an OpenAI-family provider)'}${model === MODEL ? '' : ' (reasoning replayed)'}`;
      assert.equal(actual.bytes, expected.bytes, `${what}: the same upstream bytes`);
      assert.deepEqual(actual.warnings, expected.warnings, `${what}: the same warnings`);
    }
  }
}

describe('a model request read lazily, against the whole parse', () => {
  it('agrees on every recorded client request', () => {
    const samples = recordedSamples();
    assert.ok(samples.length >= 10);
    for (const sample of samples) checkAgreement(sample);
  });

  it('agrees on the bench agent turn at every size, as messages and as chat', () => {
    for (const sample of agentSamples()) checkAgreement(sample);
  });

  it('agrees on bodies built to stress it, refusals in the same words', () => {
    for (const sample of builtSamples()) checkAgreement(sample);
  });

  it('leaves the long texts of a large agent turn as bytes, reads a body under 64 KB whole (it costs less so), and a Gemini body whole', () => {
    const read = (json: string): ClientRequestOf<'messages'> => readClientRequest(dialects.messages, (members) => readJsonObject(Buffer.from(json), members), arrivalFor('messages')).request;
    assert.ok((read(agentMessagesBody('corpus-model', false, 100 * 1024)).raw?.texts?.spans.length ?? 0) > 20);
    assert.equal(read(agentMessagesBody('corpus-model', false, 40 * 1024)).raw?.texts, undefined);
    assert.equal(LAZY_REQUEST_MEMBERS.minBodyBytes, 64 * 1024);
    assert.equal(dialects.gemini.lazyMembers, undefined);
  });
});

/** A key's turns one after another, each as Claude Code and the chat translator write them, then edited every way a client may. */
function sessionSamples(): Sample[] {
  const asChat = (json: string): string => JSON.stringify(messagesRequestToChat(JSON.parse(json) as MessagesRequest, { upstreamId: 'corpus-model', reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: true, maxOutputTokens: 64_000 }));
  const turns = [agentMessagesBody('corpus-model', true), ...agentTurns('corpus-model', 4, true)];
  const edited = (json: string, edit: (body: { messages: Array<Record<string, unknown>>; system: unknown }) => void): string => {
    const body = JSON.parse(json) as { messages: Array<Record<string, unknown>>; system: unknown };
    edit(body);
    return JSON.stringify(body);
  };
  const last = turns[turns.length - 1] as string;
  return [
    ...turns.map((json, i) => ({ name: `turn ${i}`, format: 'messages' as const, json })),
    // Older turns again: the history shrinks.
    { name: 'turn 1 again', format: 'messages', json: turns[1] as string },
    { name: 'turn 4 again', format: 'messages', json: last },
    { name: 'turn 4 again, the same bytes', format: 'messages', json: last },
    { name: 'an item in the middle of the history edited', format: 'messages', json: edited(last, (body) => { body.messages[7] = { role: 'user', content: `${LONG} edited` }; }) },
    { name: 'an item in the middle of the history left out', format: 'messages', json: edited(last, (body) => { body.messages.splice(9, 1); }) },
    { name: 'the first item edited', format: 'messages', json: edited(last, (body) => { body.messages[0] = { role: 'user', content: LONG }; }) },
    { name: 'every item left out', format: 'messages', json: edited(last, (body) => { body.messages = [{ role: 'user', content: 'hi' }]; }) },
    { name: 'the history back', format: 'messages', json: last },
    { name: 'the system prompt changed', format: 'messages', json: edited(last, (body) => { body.system = LONG; }) },
    { name: 'the history back again', format: 'messages', json: last },
    { name: 'refused, a new item whose role is a long text', format: 'messages', json: edited(last, (body) => { body.messages.push({ role: LONG, content: LONG }); }) },
    { name: 'a new item holding U+0000', format: 'messages', json: edited(last, (body) => { body.messages.push({ role: 'user', content: `${LONG}\u0000` }); }) },
    { name: 'a new item holding a llmux seal', format: 'messages', json: edited(last, (body) => { body.messages.push({ role: 'assistant', content: [{ type: 'thinking', thinking: LONG, signature: `llmux.v2.${'A'.repeat(300)}` }] }, { role: 'user', content: LONG }); }) },
    { name: 'after the seal', format: 'messages', json: last },
    ...turns.map((json, i) => ({ name: `turn ${i} in Claude Code's order`, format: 'messages' as const, json: inClaudeCodeOrder(json) })),
    ...turns.map((json, i) => ({ name: `turn ${i} as chat`, format: 'chat' as const, json: asChat(json) })),
    ...responsesTurns().map((json, i) => ({ name: `Codex turn ${i}`, format: 'responses' as const, json })),
    { name: 'refused as chat: a trailing comma after the new items', format: 'chat', json: withTrailingComma(asChat(last)) },
  ];
}

/** A Codex session: its recorded first turn, then each turn with a shell call and its long output more. */
function responsesTurns(): string[] {
  const first = recordedSamples().filter((sample) => sample.format === 'responses').sort((a, b) => b.json.length - a.json.length)[0];
  assert.ok(first !== undefined);
  const body = JSON.parse(first.json) as { input: unknown[] };
  const turns: string[] = [];
  for (let i = 0; i < 4; i++) {
    body.input.push(
      { type: 'function_call', call_id: `call_${i}`, name: 'shell', arguments: JSON.stringify({ command: ['ls', `dir-${i}`] }) },
      { type: 'function_call_output', call_id: `call_${i}`, output: `${LONG} ${i}` },
    );
    turns.push(JSON.stringify(body));
  }
  return turns;
}

/** A chat body with one more item and a comma after it before its messages' closing bracket: not JSON. */
function withTrailingComma(json: string): string {
  const messages = JSON.stringify((JSON.parse(json) as { messages: unknown }).messages);
  const end = json.indexOf(messages) + messages.length - 1;
  assert.ok(end > 0);
  return `${json.slice(0, end)},{"role":"user","content":"x"},${json.slice(end)}`;
}

describe('a model request read as the next turn of the last one (src/common/json-recall.ts)', () => {
  it('agrees with the whole parse on every turn of a session, edited every way, refusals in the same words', () => {
    const counting = countingRecall();
    const samples = sessionSamples();
    for (const sample of samples) checkAgreement(sample, { memory: counting.memory, scope: `key\u0000${sample.format}` });
    // All but the first turn of each format and order, and the bodies that change more than one array, are read from the last.
    assert.ok(counting.served() >= samples.length - 11, `${counting.served()} of ${samples.length} recalled`);
  });
});

describe('the facts of a request', () => {
  it('are computed once when asked, and let the body go when dropped: the conversation is then unknown, the rest may not be asked', () => {
    const json = JSON.stringify({ model: 'corpus-model', max_tokens: 7, messages: [{ role: 'user', content: LONG }] });
    const read = (): ReturnType<typeof readClientRequest<'messages'>> => readClientRequest(dialects.messages, (members) => readJsonObject(Buffer.from(json), members), arrivalFor('messages'));
    const asked = read().facts;
    assert.equal(asked.maxTokens, 7);
    const key = asked.conversation();
    assert.match(key ?? '', /^prompt:/);
    asked.drop();
    assert.equal(asked.conversation(), key);
    const dropped = read().facts;
    dropped.drop();
    assert.equal(dropped.conversation(), undefined);
    assert.throws(() => dropped.inputTokens(), /after its body was let go/);
  });
});
