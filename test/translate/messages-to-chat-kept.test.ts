/**
 * A turn remembered from the key's last body (src/common/json-recall.ts) is the same frozen object in
 * the next body, and messages -> chat keeps its translation and that translation's JSON text with it.
 * Whatever is kept,
 * a frozen body translates and serialises exactly as a fresh copy of it does, for every model and
 * target it is sent to next, in any order, and tells the same warnings each time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import { type UpstreamModel, messagesRequestToChat } from '../../src/translate/messages-to-chat.ts';
import { deepFreeze } from '../../src/common/json-recall.ts';
import { serializeJson } from '../../src/common/json-bytes.ts';
import { lazyTexts, realValue } from '../../src/common/json-lazy.ts';
import type { Issuer } from '../../src/translate/carried.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI, OPENROUTER, reader, sealed } from '../helpers/carry.ts';

const PLAIN: UpstreamModel = { upstreamId: 'plain', reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 0 };
const REPLAY: UpstreamModel = { ...PLAIN, upstreamId: 'replay', replayReasoning: true };

/** Every kind of turn the translation treats apart. */
function conversation(): MessagesRequest {
  return {
    model: 'client-model',
    max_tokens: 100,
    system: [{ type: 'text', text: 'Be brief.' }],
    tools: [
      { name: 'lookup', description: 'Looks up.', input_schema: { type: 'object', properties: { q: { type: 'string' } } } },
      { type: 'bash_20250124', name: 'bash' },
    ],
    messages: [
      { role: 'user', content: 'Find it.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Plan.', signature: 'anthropic-own-signature' },
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'it' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'found' }] }, { type: 'text', text: 'Go on.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Sealed plan.', signature: sealed({ kind: 'thought-signature', signature: 'gemini-sig', callId: 'call_2' }, GEMINI) },
          { type: 'tool_use', id: 'call_2', name: 'lookup', input: { q: 'more' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_2', content: 'more found', is_error: true }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_3', name: 'lookup', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_3', content: 'x' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      { role: 'user', content: [{ type: 'text', text: 'Merged with the turn before.' }, { type: 'future_block', data: 1 }] },
      { role: 'assistant', content: 'Plain answer.' },
      { role: 'user', content: 'Thanks.' },
    ],
  } as unknown as MessagesRequest;
}

const TARGETS: Array<[string, UpstreamModel, Issuer | undefined]> = [
  ['plain model, Anthropic-family target', PLAIN, ANTHROPIC],
  ['replay_reasoning model', REPLAY, DEEPSEEK],
  ['Gemini-family target', PLAIN, GEMINI],
  ['OpenRouter target', PLAIN, OPENROUTER],
  ['no target', PLAIN, undefined],
];

function translate(body: MessagesRequest, model: UpstreamModel, target: Issuer | undefined): { json: string; warnings: string[] } {
  const warnings: string[] = [];
  const carry = reader(target, warnings);
  const chat = messagesRequestToChat(body, model, { onWarning: (message) => warnings.push(message), carry });
  carry.finish();
  return { json: JSON.stringify(chat), warnings };
}

describe('messages -> chat: a frozen (remembered) body', () => {
  it('translates as a fresh copy does, for every model and target, in any order, with the same warnings', () => {
    const frozen = conversation();
    deepFreeze(frozen);
    // Twice round, forwards then backwards: what one target kept must not reach another.
    const order = [...TARGETS, ...[...TARGETS].reverse(), ...TARGETS];
    for (const [name, model, target] of order) {
      const expected = translate(conversation(), model, target);
      const actual = translate(frozen, model, target);
      assert.equal(actual.json, expected.json, name);
      assert.deepEqual(actual.warnings, expected.warnings, name);
    }
  });

  it('brings a sealed turn\'s state back on every request, never from a kept copy', () => {
    const frozen = conversation();
    deepFreeze(frozen);
    for (let i = 0; i < 3; i++) {
      const gemini = JSON.parse(translate(frozen, PLAIN, GEMINI).json) as { messages: Array<{ tool_calls?: Array<{ id: string; extra_content?: unknown }> }> };
      const call = gemini.messages.flatMap((message) => message.tool_calls ?? []).find((candidate) => candidate.id === 'call_2');
      assert.deepEqual(call?.extra_content, { google: { thought_signature: 'gemini-sig' } });
      const other = translate(frozen, PLAIN, ANTHROPIC);
      assert.ok(!other.json.includes('gemini-sig'));
      assert.ok(other.warnings.some((warning) => /strip|another|family/i.test(warning)), other.warnings.join('\n'));
    }
  });

  it('gives the translation of a later body the same turns as kept objects, and a body holding them the same JSON', () => {
    const first = conversation();
    deepFreeze(first);
    const a = messagesRequestToChat(first, PLAIN, { carry: reader(ANTHROPIC) });
    const b = messagesRequestToChat(first, PLAIN, { carry: reader(ANTHROPIC) });
    // The first user turn is kept (the same object); the merged turns are made anew.
    assert.equal(a.messages[1], b.messages[1]);
    assert.ok(Object.isFrozen(a.messages[1]));
    assert.equal(Buffer.concat(serializeJson(b as unknown as Record<string, unknown>)).toString(), JSON.stringify(b));
  });
});

describe('serializeJson: frozen items hold references to a lazily read body', () => {
  /** A body whose long texts are referenced (src/common/json-lazy.ts), its skeleton parsed. */
  function lazyBody(texts: string[]): { value: Record<string, unknown>; texts: ReturnType<typeof lazyTexts>; whole: unknown } {
    const whole = { messages: texts.map((text, k) => ({ role: k % 2 === 0 ? 'user' : 'assistant', content: text })), model: 'm' };
    const bytes = Buffer.from(JSON.stringify(whole));
    const spans: number[] = [];
    for (const text of texts) {
      const quoted = JSON.stringify(text);
      const start = bytes.indexOf(quoted, spans.length === 0 ? 0 : (spans[spans.length - 1] as number)) + 1;
      spans.push(start, start + Buffer.byteLength(quoted) - 2);
    }
    const table = lazyTexts(bytes, spans);
    const value = { messages: texts.map((_, k) => ({ role: k % 2 === 0 ? 'user' : 'assistant', content: `\u0000${k}\u0000` })), model: 'm' };
    return { value, texts: table, whole };
  }

  it('writes each frozen item with its texts, the same bytes every time and beside items written fresh', () => {
    const texts = ['first "quoted" text ' + 'a'.repeat(300), 'second text é ✓ ' + 'b'.repeat(300), 'third ' + 'c'.repeat(70_000)];
    const { value, texts: table, whole } = lazyBody(texts);
    const expected = JSON.stringify(whole);
    assert.equal(Buffer.concat(serializeJson(value, table)).toString(), expected, 'nothing frozen');
    // Frozen items beside one written fresh; the long third runs over a buffer's end.
    for (const item of [0, 2].map((k) => (value['messages'] as object[])[k])) deepFreeze(item);
    for (let i = 0; i < 3; i++) assert.equal(Buffer.concat(serializeJson(value, table)).toString(), expected, `round ${i}`);
  });
});

describe('serializeJson: a run of frozen items written again', () => {
  /** A table of `texts` in one body, and a frozen item referring to text `k` (as json-recall.ts keeps it). */
  function table(texts: readonly string[]): ReturnType<typeof lazyTexts> {
    const bytes = Buffer.from(JSON.stringify(texts));
    const spans: number[] = [];
    let from = 0;
    for (const text of texts) {
      const start = bytes.indexOf(JSON.stringify(text), from) + 1;
      from = start + Buffer.byteLength(JSON.stringify(text)) - 2;
      spans.push(start, from);
    }
    return lazyTexts(bytes, spans);
  }
  const item = (k: number, extra: Record<string, unknown> = {}): object => {
    const value = { role: k % 2 === 0 ? 'user' : 'assistant', content: `\u0000${k}\u0000`, ...extra };
    deepFreeze(value);
    return value;
  };

  it('gives the bytes of each turn whole, as the run goes on, parts from the last, shrinks or moves', () => {
    // Texts of a session's turns: each kept text keeps its index, new ones come after (a long one spans buffers).
    const texts = Array.from({ length: 12 }, (_, k) => `text ${k} "é" ✓ ${'x'.repeat(k === 3 ? 70_000 : 300 + k)}`);
    const lazy = table(texts);
    const [a, b, c, d, e, f, g] = [0, 1, 2, 3, 4, 5, 6].map((k) => item(k));
    const turns: unknown[][] = [
      [a, b, c],
      [a, b, c, d],
      [a, b, c, d, e, { fresh: true }],
      [{ role: 'system', content: 'first, not frozen' }, a, b, c, d, e, f],
      [a, b, g, d],
      [a, b, c, d, e, f, g],
      [a],
      [b, c, a],
      [a, { between: 1 }, b, c, d],
      [a, b, c, d, e, f, g, g],
    ];
    for (const [n, messages] of turns.entries()) {
      const value = { model: 'm', messages, tools: [f, g] };
      const expected = JSON.stringify(realValue(value, lazy));
      assert.equal(Buffer.concat(serializeJson(value, lazy)).toString(), expected, `turn ${n}, with texts`);
    }
  });

  it('sends a run\'s bytes from the last body as they are, and keeps a long session\'s in few buffers of about its size', () => {
    const texts = Array.from({ length: 60 }, (_, k) => `turn ${k} ${'y'.repeat(1_000 + k)}`);
    const lazy = table(texts);
    const items = texts.map((_, k) => item(k));
    let last: Buffer[] = [];
    // Turns whose body has nothing of the last one's buffers: the first two (a short run is kept as a
    // copy, not the chunk it filled a little of), and a turn after its kept parts were joined into one.
    const copied: number[] = [];
    for (let n = 2; n <= items.length; n++) {
      const value = { model: 'm', messages: items.slice(0, n) };
      const parts = serializeJson(value, lazy);
      const bytes = Buffer.concat(parts);
      assert.equal(bytes.toString(), JSON.stringify(realValue(value, lazy)), `turn ${n}`);
      const buffers = new Set(parts.map((part) => part.buffer));
      if (!last.some((part) => buffers.has(part.buffer))) copied.push(n);
      // What a body's parts hold alive: the run kept from earlier turns, not a 64 KB chunk for each.
      let held = 0;
      for (const buffer of buffers) held += buffer.byteLength;
      assert.ok(buffers.size <= 20, `turn ${n}: ${buffers.size} buffers`);
      assert.ok(held <= 2 * bytes.length + 2 * 64 * 1024, `turn ${n}: ${held} bytes held for a body of ${bytes.length}`);
      last = parts;
    }
    assert.ok(copied.length <= 6, `bodies with nothing of the last one's: turns ${copied.join(', ')}`);
  });

  it('never copies an item written with a body\'s texts into a body written without them, nor the reverse', () => {
    const lazy = table(['t '.repeat(200), 'u '.repeat(200)]);
    const value = { messages: [item(0), item(1, { note: 'no reference' })] };
    for (const texts of [lazy, undefined, lazy]) {
      const expected = JSON.stringify(texts === undefined ? value : realValue(value, texts));
      assert.equal(Buffer.concat(serializeJson(value, texts)).toString(), expected);
    }
  });
});
