/**
 * The recording upstream the client suite runs Codex and Claude Code against: what it records and
 * that its streams are the shapes the real APIs send (test/clients/ shows the clients accept them).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { createSseParser } from '../../src/sse/parser.ts';
import { isRecord, records } from '../../src/common/json.ts';
import { answerWith, startRecordingUpstream, toolRoundTrip } from './recording-upstream.ts';
import type { RecordingUpstream } from './recording-upstream.ts';

const KEY = 'test-key-123';
let upstream: RecordingUpstream;

beforeEach(async () => {
  upstream = await startRecordingUpstream({ apiKey: KEY, models: ['model-a', 'model-b'] });
});

afterEach(async () => {
  await upstream.close();
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(`${upstream.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** The stream's events as `{event, data}` with `data` parsed. */
async function events(response: Response): Promise<Array<{ event: string | undefined; data: Record<string, unknown> }>> {
  const out: Array<{ event: string | undefined; data: Record<string, unknown> }> = [];
  const parser = createSseParser({
    onEvent: (e) => {
      const data: unknown = JSON.parse(e.data);
      assert.ok(isRecord(data));
      out.push({ event: e.event, data });
    },
  });
  parser.feed(Buffer.from(await response.arrayBuffer()));
  parser.end();
  return out;
}

describe('what the recording upstream records', () => {
  test('keeps method, path with query and parsed body, with credential values redacted', async () => {
    await post('/v1/messages?beta=true', { model: 'm', messages: [], stream: false }, { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
    await post('/v1/responses', { model: 'm', input: 'hi' }, { authorization: `Bearer wrong-key` });

    const [messages, responses] = upstream.requests;
    assert.equal(messages?.path, '/v1/messages?beta=true');
    assert.deepEqual(messages?.body, { model: 'm', messages: [], stream: false });
    assert.equal(messages?.headers['x-api-key'], '[redacted]');
    assert.deepEqual(messages?.credential, { header: 'x-api-key', matches: true });
    assert.equal(responses?.headers['authorization'], 'Bearer [redacted]');
    assert.deepEqual(responses?.credential, { header: 'authorization', matches: false });
    assert.ok(!JSON.stringify(upstream.requests).includes(KEY));
  });

  test('records an attempt to tunnel elsewhere and refuses it', async () => {
    const port = Number(new URL(upstream.url).port);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write('CONNECT api.example.com:443 HTTP/1.1\r\nhost: api.example.com:443\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 403/);
    assert.deepEqual(upstream.tunnels.map((t) => t.target), ['api.example.com:443']);
    assert.deepEqual(upstream.requests, []);
  });

  test('refuses a WebSocket upgrade with 426 and records it apart from the requests', async () => {
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = http.request(`${upstream.url}/v1/responses`, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('upgrade', () => reject(new Error('upgraded')));
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 426);
    assert.equal(upstream.upgrades[0]?.path, '/v1/responses');
    assert.deepEqual(upstream.requests, []);
  });
});

describe('the Responses answers', () => {
  test('stream a text answer in responses.md order with sequence numbers from 0', async () => {
    upstream.script = answerWith('Hello there.');
    const stream = await events(await post('/v1/responses', { model: 'gpt-x', input: 'hi', stream: true }));

    assert.deepEqual(stream.map((e) => e.event), [
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
      'response.output_item.done', 'response.completed',
    ]);
    stream.forEach((e, index) => {
      assert.equal(e.data['type'], e.event);
      assert.equal(e.data['sequence_number'], index);
    });
    const deltas = stream.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data['delta']).join('');
    assert.equal(deltas, 'Hello there.');
    const completed = stream.at(-1)?.data['response'];
    assert.ok(isRecord(completed));
    assert.equal(completed['status'], 'completed');
    assert.equal(completed['model'], 'gpt-x');
    const usage = completed['usage'];
    assert.ok(isRecord(usage));
    assert.equal(usage['total_tokens'], Number(usage['input_tokens']) + Number(usage['output_tokens']));
    assert.deepEqual(records(completed['output']).map((item) => item['type']), ['message']);
  });

  test('call the tool until the request carries its output, then answer with it', async () => {
    upstream.script = toolRoundTrip({
      name: 'exec_command', input: { cmd: 'echo hi' }, answer: (output) => `saw ${output}`,
      reasoning: { summary: 'thinking', encryptedContent: 'sealed' },
    });
    const first = await events(await post('/v1/responses', { model: 'm', input: 'run it', stream: true }));
    const items = records(records(first.map((e) => e.data).filter((d) => d['type'] === 'response.output_item.done')).map((d) => d['item']));
    assert.deepEqual(items.map((item) => item['type']), ['reasoning', 'function_call']);
    assert.equal(items[0]?.['encrypted_content'], 'sealed');
    assert.equal(items[1]?.['name'], 'exec_command');
    assert.deepEqual(JSON.parse(String(items[1]?.['arguments'])), { cmd: 'echo hi' });
    const argumentDeltas = first.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data['delta']).join('');
    assert.equal(argumentDeltas, items[1]?.['arguments']);

    const second = await post('/v1/responses', {
      model: 'm', stream: false,
      input: [{ role: 'user', content: 'run it' }, items[1], { type: 'function_call_output', call_id: items[1]?.['call_id'], output: 'hi\n' }],
    });
    const whole: unknown = await second.json();
    assert.ok(isRecord(whole));
    const message = records(whole['output'])[0];
    assert.deepEqual(records(message?.['content'])[0]?.['text'], 'saw hi\n');
  });

  test('stop a truncated stream before any terminal event', async () => {
    upstream.script = () => ({ kind: 'truncated', text: 'never finished' });
    const stream = await events(await post('/v1/responses', { model: 'm', input: 'hi', stream: true }));
    assert.equal(stream.at(-1)?.event, 'response.output_text.delta');
    assert.ok(!stream.some((e) => e.event === 'response.completed' || e.event === 'response.failed'));
  });
});

describe('the Messages answers', () => {
  test('stream a tool call whose input JSON deltas join into the input, stop reason tool_use', async () => {
    upstream.script = toolRoundTrip({ name: 'Bash', input: { command: 'echo hi' }, answer: (output) => `saw ${output}` });
    const stream = await events(await post('/v1/messages?beta=true', { model: 'claude-x', messages: [{ role: 'user', content: 'run it' }], stream: true }, { 'anthropic-version': '2023-06-01' }));

    assert.deepEqual(stream.map((e) => e.event), [
      'message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    for (const e of stream) assert.equal(e.data['type'], e.event);
    const json = stream.filter((e) => e.event === 'content_block_delta').map((e) => (isRecord(e.data['delta']) ? e.data['delta']['partial_json'] : '')).join('');
    assert.deepEqual(JSON.parse(json), { command: 'echo hi' });
    const delta = stream.find((e) => e.event === 'message_delta')?.data['delta'];
    assert.ok(isRecord(delta));
    assert.equal(delta['stop_reason'], 'tool_use');
  });

  test('answer a tool result from the last user turn, whole when stream is false', async () => {
    upstream.script = toolRoundTrip({ name: 'Bash', input: { command: 'echo hi' }, answer: (output) => `saw ${output}` });
    const response = await post('/v1/messages', {
      model: 'claude-x', stream: false,
      messages: [
        { role: 'user', content: 'run it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'echo hi' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'hi' }] }] },
      ],
    });
    const message: unknown = await response.json();
    assert.ok(isRecord(message));
    assert.equal(message['stop_reason'], 'end_turn');
    assert.deepEqual(message['content'], [{ type: 'text', text: 'saw hi' }]);
  });

  test('count tokens, list models in the Anthropic shape and answer 404 in the Anthropic envelope', async () => {
    const counted: unknown = await (await post('/v1/messages/count_tokens?beta=true', { model: 'm', messages: [{ role: 'user', content: 'foo' }] }, { 'anthropic-version': '2023-06-01' })).json();
    assert.ok(isRecord(counted) && typeof counted['input_tokens'] === 'number' && counted['input_tokens'] > 0);
    const models: unknown = await (await fetch(`${upstream.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } })).json();
    assert.deepEqual(models, {
      data: [
        { type: 'model', id: 'model-a', display_name: 'model-a', created_at: '2025-01-01T00:00:00Z' },
        { type: 'model', id: 'model-b', display_name: 'model-b', created_at: '2025-01-01T00:00:00Z' },
      ],
      has_more: false, first_id: 'model-a', last_id: 'model-b',
    });
    const missing = await fetch(`${upstream.url}/managed/settings`, { headers: { 'anthropic-version': '2023-06-01' } });
    assert.equal(missing.status, 404);
    const body: unknown = await missing.json();
    assert.ok(isRecord(body) && body['type'] === 'error');
  });

  test('answer a scripted error with its status, the Anthropic envelope and the given headers', async () => {
    upstream.script = () => ({ kind: 'http_error', status: 401, message: 'bad key', headers: { 'x-should-retry': 'false' } });
    const response = await post('/v1/messages', { model: 'm', messages: [], stream: true });
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('x-should-retry'), 'false');
    assert.deepEqual(await response.json(), { type: 'error', error: { type: 'authentication_error', message: 'bad key' } });
  });
});
