/**
 * The answer check (./answer-check.ts) on a bare HTTP server that writes what a test hands it: it
 * sees answers however they are written, picks the schema by route and client, and checks a
 * stream's framing (event names, sequence numbers) as well as each event.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { watchAnswers } from './answer-check.ts';
import type { AnswerWatch } from './answer-check.ts';

type Json = Record<string, unknown>;

const MESSAGE = {
  id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'Hi' }],
  stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 },
};

describe('the answer check', () => {
  let server: http.Server;
  let url: string;
  let watch: AnswerWatch;
  const problems: string[] = [];
  let next: (res: http.ServerResponse) => void = (res) => res.end();
  before(async () => {
    server = http.createServer((_req, res) => next(res));
    watch = watchAnswers(server, (line) => problems.push(line));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** The problems found in the answer `write` gives to `method path` (headers as a client sends them). */
  async function check(method: string, path: string, write: (res: http.ServerResponse) => void, headers: Record<string, string> = {}): Promise<string[]> {
    problems.length = 0;
    const before = watch.checked;
    next = write;
    const res = await fetch(`${url}${path}`, { method, headers, ...(method === 'POST' ? { body: '{}' } : {}) });
    await res.arrayBuffer();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(watch.checked, before + 1, `${method} ${path} was checked`);
    return problems.map((line) => line.slice(line.indexOf(': ') + 2));
  }
  const json = (status: number, body: unknown) => (res: http.ServerResponse): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const sse = (events: Array<[string | undefined, Json]>) => (res: http.ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // Written event by event, as a relay does.
    for (const [name, data] of events) res.write(`${name === undefined ? '' : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`);
    res.end();
  };

  it('checks a whole answer against its route\'s schema, at the root and under /v1', async () => {
    assert.deepEqual(await check('POST', '/v1/messages', json(200, MESSAGE)), []);
    assert.deepEqual(await check('POST', '/messages', json(200, { ...MESSAGE, stop_reason: 'finished' })), [
      'anthropic Message at /stop_reason: must be equal to one of the allowed values (["end_turn","max_tokens","stop_sequence","tool_use","pause_turn","refusal","model_context_window_exceeded"])',
      'anthropic Message at /stop_reason: must be null',
      'anthropic Message at /stop_reason: must match a schema in anyOf',
    ]);
  });

  it("answers errors in the route's shape: Anthropic's on the messages routes and to an Anthropic client of the model list", async () => {
    const anthropic = { type: 'error', error: { type: 'not_found_error', message: 'no' }, request_id: 'req_1' };
    const openai = { error: { message: 'no', type: 'not_found_error', param: null, code: 'not_found' } };
    assert.deepEqual(await check('POST', '/v1/messages', json(404, anthropic)), []);
    assert.deepEqual(await check('GET', '/v1/messages', json(405, anthropic)), []);
    assert.deepEqual(await check('GET', '/v1/models/x', json(404, anthropic), { 'anthropic-version': '2023-06-01' }), []);
    assert.deepEqual(await check('GET', '/v1/models/x', json(404, openai)), []);
    assert.deepEqual(await check('GET', '/v1/usage', json(404, openai)), []);
    assert.deepEqual(await check('POST', '/v1/chat/completions', json(404, anthropic)), [
      "openai ErrorResponse at /error: must have required property 'param'",
      "openai ErrorResponse at /error: must have required property 'code'",
      'openai ErrorResponse: must NOT have unevaluated properties ("type")',
      'openai ErrorResponse: must NOT have unevaluated properties ("request_id")',
    ]);
  });

  it('checks each event of a stream, its name against its type, and Responses sequence numbers from 0 by one', async () => {
    const start = { type: 'message_start', message: { ...MESSAGE, content: [], stop_reason: null } };
    assert.deepEqual(await check('POST', '/v1/messages', sse([['message_start', start], ['ping', { type: 'ping' }], ['message_stop', { type: 'message_stop' }]])), []);
    assert.deepEqual(await check('POST', '/v1/messages', sse([['message_stop', start]])), ['event "message_stop" carries type "message_start"']);
    const delta = (number: number): Json => ({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi', logprobs: [], sequence_number: number });
    assert.deepEqual(await check('POST', '/v1/responses', sse([['response.output_text.delta', delta(0)], ['response.output_text.delta', delta(1)]])), []);
    assert.deepEqual(await check('POST', '/v1/responses', sse([['response.output_text.delta', delta(0)], ['response.output_text.delta', delta(5)]])), [
      'response.output_text.delta has sequence_number 5, not 1',
    ]);
    const chunk = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] };
    const chatError = { error: { message: 'cut', type: 'api_error', param: null, code: 'upstream_error' } };
    assert.deepEqual(await check('POST', '/v1/chat/completions', sse([[undefined, chunk], [undefined, chatError]])), []);
  });

  it("leaves out what has no official schema here: Gemini's routes and clients, pages", async () => {
    for (const [path, headers] of [['/v1beta/models/m:generateContent', {}], ['/v1/models', { 'x-goog-api-key': 'k' }], ['/v1/models?key=k', {}]] as const) {
      problems.length = 0;
      const before = watch.checked;
      next = json(200, { anything: true });
      await (await fetch(`${url}${path}`, { method: path.includes(':') ? 'POST' : 'GET', headers, ...(path.includes(':') ? { body: '{}' } : {}) })).arrayBuffer();
      assert.equal(watch.checked, before, path);
    }
    assert.deepEqual(await check('GET', '/dashboard', (res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end('<p>'); }), []);
  });
});
