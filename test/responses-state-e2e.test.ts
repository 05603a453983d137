/**
 * Responses API state over real sockets with the official `openai` SDK: sealed reasoning replayed
 * to a messages upstream with its original signature (stateless and through previous_response_id),
 * seals that do not open, stored responses kept per key (retrieve, delete, input items with
 * pagination, previous_response_id, item_reference, input_tokens), and the store's TTL and byte bound.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { answer } from './helpers/scripted-answers.ts';
import { isRecord, records } from '../src/common/json.ts';

const SIGNATURE = 'EqQBCgIYAhIM-original-signature-from-anthropic';
const THINKING = 'The user wants the weather; I should call the tool.';
const TOOLS: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }];

let gw: TestGateway;
let client: OpenAI;

before(async () => {
  gw = await startTestGateway();
  client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
});
after(async () => {
  await gw.close();
});
beforeEach(() => {
  gw.upstream.queue.length = 0;
  gw.upstream.requests.length = 0;
});

async function otherClient(): Promise<OpenAI> {
  const key = (await gw.gateway.keys.create({ name: `other-${Math.random()}`, tier: 'basic' })).key;
  return new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}

/** The assistant turn of the last upstream messages request that holds a tool_use: its content blocks. */
function replayedAssistantTurn(): Array<Record<string, unknown>> {
  const body = gw.upstream.requests.at(-1)?.body ?? {};
  const turn = records(body['messages']).find((message) => message['role'] === 'assistant' && records(message['content']).some((block) => block['type'] === 'tool_use'));
  return records(turn?.['content']);
}

function warningsOfLastResponse(): string {
  const line = [...gw.logs].reverse().find((entry) => (entry as Record<string, unknown>)['path'] === '/v1/responses') as Record<string, unknown> | undefined;
  return JSON.stringify(line?.['warnings'] ?? []);
}

/** A first turn from the messages upstream: signed thinking, then a call. */
function thinkingThenCall(): void {
  gw.upstream.queue.push(answer({ thinking: { text: THINKING, signature: SIGNATURE }, calls: [{ id: 'toolu_weather', name: 'get_weather', input: { city: 'Oslo' } }] }));
}

describe('sealed reasoning', () => {
  test('a stateless client (store false, include encrypted_content) gets sealed thinking, and replaying it sends the original signed block upstream', async () => {
    thinkingThenCall();
    const first = await client.responses.stream({ model: 'claude-test', input: 'Weather in Oslo?', tools: TOOLS, store: false, include: ['reasoning.encrypted_content'] }).finalResponse();
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    assert.ok(reasoning?.type === 'reasoning');
    assert.match(reasoning.encrypted_content ?? '', /^llmux\.v2\./);
    assert.ok(!(reasoning.encrypted_content ?? '').includes(SIGNATURE), 'the signature is sealed, not shown');
    assert.deepEqual(reasoning.summary, [{ type: 'summary_text', text: THINKING }]);
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call?.type === 'function_call');

    gw.upstream.queue.push(answer({ text: 'It is cold in Oslo.' }));
    const second = await client.responses.create({
      model: 'claude-test',
      store: false,
      include: ['reasoning.encrypted_content'],
      tools: TOOLS,
      input: [{ role: 'user', content: 'Weather in Oslo?' }, reasoning, call, { type: 'function_call_output', call_id: call.call_id, output: '-3 C' }],
    });
    assert.equal(second.output_text, 'It is cold in Oslo.');
    const turn = replayedAssistantTurn();
    assert.deepEqual(turn[0], { type: 'thinking', thinking: THINKING, signature: SIGNATURE });
    assert.equal(turn[1]?.['type'], 'tool_use');
    // A stateless first turn is not stored.
    await assert.rejects(client.responses.retrieve(first.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  test('a tool loop on previous_response_id replays the signed thinking although the client never asked for encrypted_content', async () => {
    thinkingThenCall();
    const first = await client.responses.create({ model: 'claude-test', input: 'Weather in Oslo?', tools: TOOLS });
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    assert.ok(reasoning?.type === 'reasoning');
    assert.equal(reasoning.encrypted_content, undefined, 'the client copy carries no seal it did not ask for');
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call?.type === 'function_call');

    gw.upstream.queue.push(answer({ text: 'Cold.' }));
    await client.responses.create({ model: 'claude-test', previous_response_id: first.id, tools: TOOLS, input: [{ type: 'function_call_output', call_id: call.call_id, output: '-3 C' }] });
    assert.deepEqual(replayedAssistantTurn()[0], { type: 'thinking', thinking: THINKING, signature: SIGNATURE });
    const body = gw.upstream.requests.at(-1)?.body ?? {};
    assert.equal(body['previous_response_id'], undefined);

    const plain = await client.responses.retrieve(first.id);
    const plainReasoning = plain.output.find((item) => item.type === 'reasoning');
    assert.equal(plainReasoning?.type === 'reasoning' ? plainReasoning.encrypted_content : 'missing', undefined);
    const sealed = await client.responses.retrieve(first.id, { include: ['reasoning.encrypted_content'] });
    const sealedReasoning = sealed.output.find((item) => item.type === 'reasoning');
    assert.match(sealedReasoning?.type === 'reasoning' ? sealedReasoning.encrypted_content ?? '' : '', /^llmux\.v2\./);
  });

  test('a seal that does not open (tampered, or sealed under another secret) is dropped with a warning in the log line, never a 500', async () => {
    thinkingThenCall();
    const first = await client.responses.create({ model: 'claude-test', input: 'Weather?', tools: TOOLS, store: false, include: ['reasoning.encrypted_content'] });
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(reasoning?.type === 'reasoning' && call?.type === 'function_call');
    const sealed = reasoning.encrypted_content ?? '';
    const tampered = `${sealed.slice(0, -6)}${sealed.slice(-6).split('').reverse().join('')}`;
    assert.notEqual(tampered, sealed);

    gw.upstream.queue.push(answer({ text: 'Answered without the thinking.' }));
    const second = await client.responses.create({
      model: 'claude-test',
      store: false,
      tools: TOOLS,
      input: [{ role: 'user', content: 'Weather?' }, { ...reasoning, encrypted_content: tampered }, call, { type: 'function_call_output', call_id: call.call_id, output: 'x' }],
    });
    assert.equal(second.output_text, 'Answered without the thinking.');
    assert.ok(!replayedAssistantTurn().some((block) => block['type'] === 'thinking'));
    await gw.allLogged();
    assert.match(warningsOfLastResponse(), /llmux seal that does not open/);
  });

  test('the seal secret is made once, in LLMUX_HOME, readable by its owner only', () => {
    const mode = statSync(join(gw.home, 'responses-secret')).mode & 0o777;
    assert.equal(mode, 0o600);
  });
});

describe('stored responses', () => {
  test('are kept per key: to another key a response does not exist, for reading, deleting or building on', async () => {
    gw.upstream.queue.push(answer({ text: 'Mine.' }));
    const mine = await client.responses.create({ model: 'gpt-test', input: 'Remember this.' });
    const other = await otherClient();

    await assert.rejects(other.responses.retrieve(mine.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.inputItems.list(mine.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.delete(mine.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.create({ model: 'gpt-test', input: 'Go on.', previous_response_id: mine.id }), (err: unknown) => err instanceof OpenAI.NotFoundError && err.message.includes(mine.id));
    const messageId = mine.output[0]?.id ?? '';
    await assert.rejects(other.responses.create({ model: 'gpt-test', input: [{ type: 'item_reference', id: messageId }] }), (err: unknown) => err instanceof OpenAI.BadRequestError && err.message.includes(messageId));
    assert.equal(gw.upstream.requests.length, 1, 'nothing of another key reached the upstream');
    assert.equal((await client.responses.retrieve(mine.id)).output_text, 'Mine.');
  });

  test('previous_response_id puts the stored input and output before the new input; its instructions are not carried over', async () => {
    gw.upstream.queue.push(answer({ text: 'First answer.' }));
    const first = await client.responses.create({ model: 'gpt-test', instructions: 'Old instructions.', input: 'First question.' });
    gw.upstream.queue.push(answer({ text: 'Second answer.' }));
    const second = await client.responses.create({ model: 'gpt-test', instructions: 'New instructions.', input: 'Second question.', previous_response_id: first.id });
    assert.equal(second.previous_response_id, first.id);
    const messages = records(gw.upstream.requests.at(-1)?.body['messages']).map((message) => [message['role'], message['content']]);
    assert.deepEqual(messages, [
      ['system', 'New instructions.'],
      ['user', 'First question.'],
      ['assistant', 'First answer.'],
      ['user', 'Second question.'],
    ]);
  });

  test('an unknown previous_response_id is a 404 not_found_error naming it', async () => {
    await assert.rejects(client.responses.create({ model: 'gpt-test', input: 'x', previous_response_id: 'resp_unknown123' }), (err: unknown) => {
      return err instanceof OpenAI.NotFoundError && err.type === 'not_found_error' && err.message.includes('resp_unknown123');
    });
  });

  test('an item_reference is replaced by the stored item (the AI SDK sends one for each earlier output item)', async () => {
    gw.upstream.queue.push(answer({ calls: [{ id: 'call_ref_1', name: 'get_weather', input: { city: 'Rome' } }] }));
    const first = await client.responses.create({ model: 'gpt-test', input: 'Weather in Rome?', tools: TOOLS });
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call?.type === 'function_call');
    gw.upstream.queue.push(answer({ text: 'Warm.' }));
    await client.responses.create({
      model: 'gpt-test',
      tools: TOOLS,
      input: [{ role: 'user', content: 'Weather in Rome?' }, { type: 'item_reference', id: call.id ?? '' }, { type: 'function_call_output', call_id: call.call_id, output: '25 C' }],
    });
    const assistant = records(gw.upstream.requests.at(-1)?.body['messages']).find((message) => message['role'] === 'assistant');
    const replayed = records(assistant?.['tool_calls'])[0];
    assert.equal(replayed?.['id'], 'call_ref_1');
    await assert.rejects(client.responses.create({ model: 'gpt-test', input: [{ type: 'item_reference', id: 'fc_nothing' }] }), (err: unknown) => err instanceof OpenAI.BadRequestError && /input\.0/.test(err.message));
  });

  test('input items list every item with an id, newest first by default, page by page', async () => {
    gw.upstream.queue.push(answer({ text: 'One.' }));
    const first = await client.responses.create({ model: 'gpt-test', input: 'Question one.' });
    gw.upstream.queue.push(answer({ text: 'Two.' }));
    const second = await client.responses.create({ model: 'gpt-test', input: [{ role: 'user', content: 'Question two.' }], previous_response_id: first.id });

    const all: OpenAI.Responses.ResponseItem[] = [];
    for await (const item of client.responses.inputItems.list(second.id, { limit: 1 })) all.push(item);
    assert.equal(all.length, 3);
    for (const item of all) assert.match(String(item.id), /^msg_/);
    const texts = all.map((item) => JSON.stringify(item));
    assert.match(texts[0] ?? '', /Question two\./);
    assert.match(texts[1] ?? '', /One\./);
    assert.match(texts[2] ?? '', /Question one\./);
    const ascending = await client.responses.inputItems.list(second.id, { order: 'asc' });
    assert.deepEqual(ascending.data.map((item) => item.id), all.map((item) => item.id).reverse());
    assert.equal(ascending.has_more, false);
    const raw = await fetch(`${gw.url}/v1/responses/${second.id}/input_items?limit=2`, { headers: { authorization: `Bearer ${gw.key}` } });
    const page = await raw.json() as Record<string, unknown>;
    assert.deepEqual(page, { object: 'list', data: page['data'], first_id: all[0]?.id, last_id: all[1]?.id, has_more: true });
  });

  test('delete answers deleted: true, and the response is gone; store: false keeps nothing', async () => {
    gw.upstream.queue.push(answer({ text: 'Short-lived.' }));
    const kept = await client.responses.create({ model: 'gpt-test', input: 'Keep me briefly.' });
    const deleted = await client.responses.delete(kept.id) as unknown;
    assert.deepEqual(deleted, { id: kept.id, object: 'response', deleted: true });
    await assert.rejects(client.responses.retrieve(kept.id), (err: unknown) => err instanceof OpenAI.NotFoundError);

    gw.upstream.queue.push(answer({ text: 'Never stored.' }));
    const unstored = await client.responses.create({ model: 'gpt-test', input: 'Do not keep me.', store: false });
    assert.equal((unstored as unknown as Record<string, unknown>)['store'], false);
    await assert.rejects(client.responses.retrieve(unstored.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  test('input_tokens estimates the input with its stored history, like count_tokens', async () => {
    gw.upstream.queue.push(answer({ text: 'A fairly long first answer that adds to the history of this conversation.' }));
    const first = await client.responses.create({ model: 'gpt-test', input: 'First.' });
    const alone = await client.responses.inputTokens.count({ model: 'gpt-test', input: 'And then?' });
    const chained = await client.responses.inputTokens.count({ model: 'gpt-test', input: 'And then?', previous_response_id: first.id });
    assert.equal(alone.object, 'response.input_tokens');
    assert.ok(alone.input_tokens > 0);
    assert.ok(chained.input_tokens > alone.input_tokens + 10, `${chained.input_tokens} counts the history, ${alone.input_tokens} does not`);
    assert.equal(gw.upstream.requests.length, 1, 'counting asks no upstream');
  });
});

describe('the store\'s bounds', () => {
  test('a response is gone after responses.store_ttl_s, and the least recently used go first past responses.store_max_bytes', async () => {
    let nowMs = Date.parse('2026-11-01T00:00:00Z');
    const bounded = await startTestGateway({ now: () => nowMs, config: { responses: { store_ttl_s: 60, store_max_bytes: 6000 } } });
    try {
      const sdk = new OpenAI({ apiKey: bounded.key, baseURL: `${bounded.url}/v1`, maxRetries: 0 });
      const create = async (text: string): Promise<string> => {
        bounded.upstream.queue.push(answer({ text }));
        return (await sdk.responses.create({ model: 'gpt-test', input: `Say ${text}` })).id;
      };
      const old = await create('first');
      nowMs += 61_000;
      await assert.rejects(sdk.responses.retrieve(old), (err: unknown) => err instanceof OpenAI.NotFoundError);

      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push(await create(`answer ${i} ${'x'.repeat(400)}`));
      const kept = await Promise.all(ids.map((id) => sdk.responses.retrieve(id).then(() => true, () => false)));
      assert.equal(kept[0], false, 'the oldest went first');
      assert.equal(kept[kept.length - 1], true, 'the newest is kept');
    } finally {
      await bounded.close();
    }
  });
});

test('the stored response is what the client got: ids, output and usage', async () => {
  gw.upstream.queue.push(answer({ text: 'Same both ways.', usage: { input: 5, output: 4 } }));
  const created = await client.responses.create({ model: 'claude-test', input: 'Compare.', metadata: { ticket: 'T-1' } });
  const stored = await client.responses.retrieve(created.id);
  assert.equal(stored.id, created.id);
  assert.deepEqual(stored.output, created.output);
  assert.deepEqual(stored.usage, created.usage);
  assert.deepEqual(stored.metadata, { ticket: 'T-1' });
  assert.ok(isRecord(stored.reasoning));
});

describe('when the state itself fails', () => {
  test('a store that fails after the answer was written costs a warning in the log line, not the answer', async () => {
    const failing = await startTestGateway({
      extra: {
        responsesState: {
          store: {
            put: () => Promise.reject(new Error('the shared store is away')),
            get: () => Promise.resolve(undefined),
            delete: () => Promise.resolve(false),
            findItem: () => Promise.resolve(undefined),
          },
          sealer: () => import('../src/responses/seal.ts').then(({ createSealer }) => createSealer(Buffer.alloc(32, 1))),
          sealerNow: () => undefined,
        },
      },
    });
    try {
      failing.upstream.queue.push(answer({ text: 'Answered anyway.' }));
      const sdk = new OpenAI({ apiKey: failing.key, baseURL: `${failing.url}/v1`, maxRetries: 0 });
      assert.equal((await sdk.responses.create({ model: 'gpt-test', input: 'Hi' })).output_text, 'Answered anyway.');
      await failing.allLogged();
      const line = [...failing.logs].reverse().find((entry) => (entry as Record<string, unknown>)['path'] === '/v1/responses') as Record<string, unknown>;
      assert.match(JSON.stringify(line['warnings']), /could not be stored: the shared store is away/);
    } finally {
      await failing.close();
    }
  });

  test('a seal secret file that holds no secret fails Responses requests as a 500 that names no path, and the log has why', async () => {
    const broken = await startTestGateway();
    try {
      writeFileSync(join(broken.home, 'responses-secret'), 'not a secret\n');
      const sdk = new OpenAI({ apiKey: broken.key, baseURL: `${broken.url}/v1`, maxRetries: 0 });
      await assert.rejects(sdk.responses.create({ model: 'gpt-test', input: 'Hi' }), (err: unknown) => err instanceof OpenAI.InternalServerError && !err.message.includes(broken.home));
      assert.equal(broken.upstream.requests.length, 0);
      assert.ok(broken.logs.some((entry) => JSON.stringify(entry).includes('does not hold a 32-byte seal secret')));
    } finally {
      await broken.close();
    }
  });
});
