/**
 * Responses pass-through over real sockets: a provider whose base URL serves `/responses` itself
 * (`"responses": true`) gets the client's body with its own model id, and the client gets the
 * upstream's bytes with the llmux model id in every response object; usage is read from the
 * terminal event; silences get `: ping`; a stream cut off ends in `response.failed` naming the
 * same response; what llmux neither stores nor recorded for the key never reaches the provider.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startTestGateway } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { respond } from './helpers/fake-upstream.ts';
import type { Responder } from './helpers/fake-upstream.ts';
import { RESPONSES_UPSTREAM_MODEL, answer, responsesUpstream } from './helpers/scripted-answers.ts';
import { parseResponsesEvents } from './helpers/responses-stream.ts';
import { records } from '../src/common/json.ts';

let gw: TestGateway;
let client: OpenAI;

before(async () => {
  gw = await startTestGateway({
    config: (url) => ({
      providers: {
        'fake-responses': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-responses-secret', responses: true },
        'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
      },
      models: [
        { id: 'gpt-pass', provider: 'fake-responses', upstream_id: 'gpt-upstream', reasoning: true },
        { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', reasoning: true },
      ],
      // Long enough that no byte-exact stream here meets a ping on a loaded machine (40 ms did);
      // the ping test waits for its ping instead of sleeping past it.
      limits: { ping_interval_ms: 500 },
    }),
  });
  client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
});
after(async () => {
  await gw.close();
});
beforeEach(() => {
  gw.upstream.queue.length = 0;
  gw.upstream.requests.length = 0;
});

/** Answers a Responses request from the scripted upstream, streamed or whole as asked. */
function responsesAnswer(text: string, options: { responseId?: string } = {}): Responder {
  const scripted = responsesUpstream({ text, usage: { input: 21, output: 8 }, ...(options.responseId === undefined ? {} : { responseId: options.responseId }) });
  return (req, res, seen) => (seen.body['stream'] === true ? respond.sse(scripted.stream, { chunkSize: 100 }) : respond.json(200, scripted.whole))(req, res, seen);
}

async function lastLogLine(): Promise<Record<string, unknown>> {
  await gw.allLogged();
  return [...gw.logs].reverse().find((entry) => (entry as Record<string, unknown>)['path'] === '/v1/responses') as Record<string, unknown>;
}

async function rawStream(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  return res.text();
}

test('a stream passes through as the upstream wrote it, the model id substituted in every response object, usage read from the terminal event', async () => {
  gw.upstream.queue.push(responsesAnswer('Passed through untouched.'));
  const request = { model: 'gpt-pass', input: 'Hi', client_metadata: { session: 'abc' }, reasoning: { effort: 'low', context: 'all_turns' }, text: { verbosity: 'low' }, prompt_cache_key: 'k1' };
  const out = await rawStream(request);

  const upstream = gw.upstream.requests[0];
  assert.equal(upstream?.path, '/v1/responses');
  assert.equal(upstream?.headers['authorization'], 'Bearer upstream-responses-secret');
  assert.deepEqual(upstream?.body, { ...request, model: 'gpt-upstream', stream: true }, 'the body is the client\'s, with the upstream model id');

  const expected = responsesUpstream({ text: 'Passed through untouched.', usage: { input: 21, output: 8 } }).stream;
  assert.equal(out, expected.replaceAll(`"model":"${RESPONSES_UPSTREAM_MODEL}"`, '"model":"gpt-pass"'));
  const events = parseResponsesEvents(out);
  for (const event of events) {
    const response = event.data['response'] as Record<string, unknown> | undefined;
    if (response !== undefined) assert.equal(response['model'], 'gpt-pass', `${event.event} names the llmux model`);
  }
  const line = await lastLogLine();
  assert.equal(line['tokens_in'], 21);
  assert.equal(line['tokens_out'], 8);
  assert.equal(line['provider'], 'fake-responses');
});

test('the openai SDK reads a passed-through stream and a whole answer, both naming the llmux model', async () => {
  gw.upstream.queue.push(responsesAnswer('Streamed.'));
  const streamed = await client.responses.stream({ model: 'gpt-pass', input: 'Hi' }).finalResponse();
  assert.equal(streamed.model, 'gpt-pass');
  assert.equal(streamed.output_text, 'Streamed.');

  gw.upstream.queue.push(responsesAnswer('Whole.'));
  const whole = await client.responses.create({ model: 'gpt-pass', input: 'Hi' });
  assert.equal(whole.model, 'gpt-pass');
  assert.equal(whole.output_text, 'Whole.');
  const line = await lastLogLine();
  assert.equal(line['tokens_in'], 21);
});

test('a silent upstream gets `: ping` comments, and the stream still completes', async () => {
  const scripted = responsesUpstream({ text: 'Slow words arrive.' });
  const cut = scripted.stream.indexOf('event: response.output_item.added');
  // The upstream stays silent until the client has had a ping (or, if none ever comes, 10 s).
  let speak!: () => void;
  const spoken = new Promise<void>((resolve) => { speak = resolve; });
  const giveUp = setTimeout(() => speak(), 10_000);
  gw.upstream.queue.push(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(scripted.stream.slice(0, cut));
    await spoken;
    res.end(scripted.stream.slice(cut));
  });
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
    body: JSON.stringify({ model: 'gpt-pass', input: 'Hi', stream: true }),
  });
  let out = '';
  const decoder = new TextDecoder();
  for await (const piece of res.body as AsyncIterable<Uint8Array>) {
    out += decoder.decode(piece, { stream: true });
    if (/\n: ping\n\n/.test(out)) speak();
  }
  clearTimeout(giveUp);
  assert.match(out, /\n: ping\n\n/);
  assert.equal(parseResponsesEvents(out).at(-1)?.data['type'], 'response.completed');
});

test('a stream cut off mid-answer ends in response.failed naming the response the stream started', async () => {
  const scripted = responsesUpstream({ text: 'This answer is cut off before it completes.', responseId: 'resp_cutoff' });
  const cut = scripted.stream.indexOf('event: response.output_text.done');
  gw.upstream.queue.push((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(scripted.stream.slice(0, cut), () => req.socket.destroy());
  });
  const events = parseResponsesEvents(await rawStream({ model: 'gpt-pass', input: 'Hi' }));
  const last = events.at(-1)?.data;
  assert.equal(last?.['type'], 'response.failed');
  // It continues the upstream's numbering: the SDKs and the schema want every event numbered.
  assert.deepEqual(events.map((event) => event.data['sequence_number']), events.map((_, index) => index));
  assert.ok(events.length > 3);
  const response = last?.['response'] as { id: string; status: string; model: string; error: { code: string; message: string } };
  assert.equal(response.id, 'resp_cutoff');
  assert.equal(response.model, 'gpt-pass');
  assert.equal(response.status, 'failed');
  assert.equal(response.error.code, 'server_error');
  assert.ok(!events.some((event) => event.data['type'] === 'response.completed'));
  const line = await lastLogLine();
  assert.match(String(line['stream_error']), /lost mid-stream/);
});

test('a previous_response_id or item_reference llmux neither stores nor recorded for the key is 404 not_found_error, never forwarded', async () => {
  // Issue 25: an unknown previous_response_id was forwarded, and the provider resolved another key's
  // conversation under llmux's one shared credential.
  await assert.rejects(client.responses.create({ model: 'gpt-pass', input: 'Go on.', previous_response_id: 'resp_made_elsewhere' }), (err: unknown) =>
    err instanceof OpenAI.NotFoundError && (err.error as { type?: string } | undefined)?.type === 'not_found_error');
  await assert.rejects(client.responses.create({ model: 'gpt-pass', input: [{ type: 'item_reference', id: 'msg_made_elsewhere' }, { role: 'user', content: 'Go on.' }] }), (err: unknown) =>
    err instanceof OpenAI.NotFoundError && (err.error as { type?: string } | undefined)?.type === 'not_found_error');
  await assert.rejects(client.responses.create({ model: 'gpt-pass', input: [{ id: 'msg_made_elsewhere' } as unknown as OpenAI.Responses.ResponseInputItem, { role: 'user', content: 'Go on.' }] }), (err: unknown) => err instanceof OpenAI.NotFoundError);
  assert.equal(gw.upstream.requests.length, 0, 'nothing reached the provider');
});

test('a passed-through answer is stored; building on it sends the history as input, without the id the provider never saw from llmux', async () => {
  gw.upstream.queue.push(responsesAnswer('First, from the provider.', { responseId: 'resp_pass_first' }));
  const first = await client.responses.create({ model: 'gpt-pass', input: 'First question.' });
  assert.equal(first.id, 'resp_pass_first');
  assert.equal((await client.responses.retrieve(first.id)).output_text, 'First, from the provider.');

  gw.upstream.queue.push(responsesAnswer('Second.', { responseId: 'resp_pass_second' }));
  await client.responses.create({ model: 'gpt-pass', input: 'Second question.', previous_response_id: first.id });
  const body = gw.upstream.requests.at(-1)?.body ?? {};
  assert.equal(body['previous_response_id'], undefined);
  const input = JSON.stringify(body['input']);
  assert.match(input, /First question\./);
  assert.match(input, /First, from the provider\./);
  assert.match(input, /Second question\./);
});

test('reasoning sealed by llmux (from an earlier turn on a messages model) is not sent to a Responses upstream', async () => {
  gw.upstream.queue.push(answer({ thinking: { text: 'Thinking on Claude.', signature: 'sig-claude' }, text: 'Claude answered.' }));
  const first = await client.responses.create({ model: 'claude-test', input: 'Start on Claude.', store: false, include: ['reasoning.encrypted_content'] });
  const reasoning = first.output.find((item) => item.type === 'reasoning');
  const message = first.output.find((item) => item.type === 'message');
  assert.ok(reasoning !== undefined && message !== undefined);

  gw.upstream.queue.push(responsesAnswer('Now on the Responses model.'));
  await client.responses.create({ model: 'gpt-pass', store: false, input: [{ role: 'user', content: 'Start on Claude.' }, reasoning, message, { role: 'user', content: 'Switch models.' }] });
  const sent = records(gw.upstream.requests.at(-1)?.body['input']);
  assert.deepEqual(sent.map((item) => item['type'] ?? item['role']), ['user', 'message', 'user']);
});

test('a Responses upstream\'s error answer keeps its status and the llmux error body', async () => {
  gw.upstream.queue.push(respond.json(400, { error: { message: 'Invalid value for reasoning.effort', type: 'invalid_request_error', code: 'invalid_value' } }));
  await assert.rejects(client.responses.create({ model: 'gpt-pass', input: 'x' }), (err: unknown) => err instanceof OpenAI.BadRequestError);
});

test('a pass-through answer too large for llmux\'s store is recorded for its key: building on it, reading, listing and deleting it go to the provider; for another key it does not exist', async () => {
  const small = await startTestGateway({
    config: (url) => ({
      providers: { 'fake-responses': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-responses-secret', responses: true } },
      models: [{ id: 'gpt-pass', provider: 'fake-responses', upstream_id: 'gpt-upstream' }],
      responses: { store_max_bytes: 3_000 },
    }),
  });
  try {
    const mine = new OpenAI({ apiKey: small.key, baseURL: `${small.url}/v1`, maxRetries: 0, timeout: 10_000 });
    const theirs = new OpenAI({ apiKey: (await small.gateway.keys.create({ name: 'other' })).key, baseURL: `${small.url}/v1`, maxRetries: 0, timeout: 10_000 });
    const big = responsesUpstream({ text: 'word '.repeat(1_000), responseId: 'resp_held_by_provider' });
    small.upstream.queue.push(respond.json(200, big.whole));
    const first = await mine.responses.create({ model: 'gpt-pass', input: 'A long answer, please.' });
    assert.equal(first.id, 'resp_held_by_provider');
    const messageId = first.output.find((item) => item.type === 'message')?.id ?? '';

    small.upstream.queue.push(respond.json(200, responsesUpstream({ text: 'Next.', responseId: 'resp_next' }).whole));
    await mine.responses.create({ model: 'gpt-pass', input: [{ type: 'item_reference', id: messageId }, { role: 'user', content: 'Go on.' }], previous_response_id: first.id });
    const sent = small.upstream.requests.at(-1);
    assert.equal(sent?.body['previous_response_id'], 'resp_held_by_provider', 'the provider holds the chain');
    assert.match(JSON.stringify(sent?.body['input']), /"item_reference"/);

    small.upstream.queue.push(respond.json(200, { ...big.whole, model: 'gpt-upstream' }));
    const read = await mine.responses.retrieve(first.id);
    assert.equal(read.model, 'gpt-pass', 'the forwarded answer names the llmux model');
    assert.deepEqual([small.upstream.requests.at(-1)?.method, small.upstream.requests.at(-1)?.path], ['GET', '/v1/responses/resp_held_by_provider']);
    assert.equal(small.upstream.requests.at(-1)?.headers['authorization'], 'Bearer upstream-responses-secret');

    small.upstream.queue.push(respond.json(200, { object: 'list', data: [], first_id: null, last_id: null, has_more: false }));
    await mine.responses.inputItems.list(first.id, { limit: 5 });
    assert.deepEqual([small.upstream.requests.at(-1)?.method, small.upstream.requests.at(-1)?.path], ['GET', '/v1/responses/resp_held_by_provider/input_items?limit=5']);

    const before = small.upstream.requests.length;
    await assert.rejects(theirs.responses.retrieve(first.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(theirs.responses.create({ model: 'gpt-pass', input: 'Mine now?', previous_response_id: first.id }), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(theirs.responses.delete(first.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    assert.equal(small.upstream.requests.length, before, 'another key\'s reads never reach the provider');

    small.upstream.queue.push(respond.json(200, { id: first.id, object: 'response', deleted: true }));
    await mine.responses.delete(first.id);
    assert.deepEqual([small.upstream.requests.at(-1)?.method, small.upstream.requests.at(-1)?.path], ['DELETE', '/v1/responses/resp_held_by_provider']);
    await assert.rejects(mine.responses.retrieve(first.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    assert.equal(small.upstream.requests.length, before + 1, 'once deleted, it is not forwarded again');
  } finally {
    await small.close();
  }
});
