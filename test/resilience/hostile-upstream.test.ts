/**
 * Issue 14's attacks by a misbehaving upstream, on loopback: one that echoes the credential llmux
 * sends it, one that compresses what it was not asked to, one that reports absurd usage. Its
 * answers are not checked against the official schemas (`schemas: false`): a hostile upstream's are
 * off them on purpose, and llmux passes a same-format answer on as it came.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, anthropicHeaders, logLineOf, openaiHeaders } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { gzipSync, brotliCompressSync } from 'node:zlib';
import { jsonWithLlmuxModel, withLlmuxModel } from '../helpers/model-names.ts';
import { fixture, respond } from '../helpers/fake-upstream.ts';
import type { Responder } from '../helpers/fake-upstream.ts';

const SECRETS = ['upstream-openai-secret', 'upstream-anthropic-secret', 'header-credential-789'];

/** An upstream that quotes back the credential it received, as some do in their error messages. */
function echoCredential(status: number): Responder {
  return (req, res) => {
    const sent = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${sent} (also ${String(req.headers['api-key'])})`, type: 'invalid_request_error', code: `bad_key_${sent}` } }));
  };
}

function sseEchoingCredential(format: 'chat' | 'messages'): Responder {
  return (req, res) => {
    const sent = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '').replace(/^Bearer /, '');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (format === 'chat') {
      res.write('data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n');
      res.end(`data: {"error":{"message":"session for ${sent} revoked","type":"server_error","code":null}}\n\n`);
    } else {
      res.write('event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n');
      res.end(`event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"key ${sent} is overloaded"}}\n\n`);
    }
  };
}

function assertClean(text: string, where: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} carries ${secret}: ${text.slice(0, 300)}`);
}

describe('an upstream that echoes its credential', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({
      schemas: false,
      config: { retry: { attempts: 1, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } },
      configFor: (url) => ({
        providers: {
          'fake-openai': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-openai-secret', headers: { 'api-key': 'header-credential-789' } },
          'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
        },
      }),
    });
  });
  after(async () => { await t.close(); });

  const chat = (extra: Record<string, unknown> = {}) => ({ method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }) });
  const messages = (extra: Record<string, unknown> = {}) => ({ method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }) });

  for (const status of [400, 401, 429, 500]) {
    it(`keeps it out of the error answer to an upstream ${status}, message and code, and out of the log`, async () => {
      t.upstream.queue.push(echoCredential(status));
      const res = await fetch(`${t.url}/v1/chat/completions`, chat());
      assert.ok(res.status >= 400);
      const text = await res.text();
      assertClean(text, 'the answer');
      assert.match(text, /\[redacted\]/);
      await logLineOf(t, res);
      assertClean(JSON.stringify(t.logs), 'the log');
    });
  }

  for (const [client, upstream, url, init] of [
    ['chat', 'chat', '/v1/chat/completions', () => chat({ stream: true })],
    ['messages', 'messages', '/v1/messages', () => messages({ stream: true })],
    ['messages', 'chat', '/v1/messages', () => messages({ model: 'gpt-test', stream: true })],
    ['chat', 'messages', '/v1/chat/completions', () => chat({ model: 'claude-test', stream: true })],
  ] as const) {
    it(`keeps it out of an in-stream error event, ${upstream} upstream to a ${client} client, and out of the log`, async () => {
      t.upstream.queue.push(sseEchoingCredential(upstream));
      const res = await fetch(`${t.url}${url}`, init());
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, /error/);
      assertClean(text, 'the stream');
      assert.match(text, /\[redacted\]/);
      await logLineOf(t, res);
      assertClean(JSON.stringify(t.logs), 'the log');
    });
  }
});

/**
 * The credential an upstream got, as it writes it back inside a JSON string (raw JSON text, put in
 * place of {@link KEY_HERE}): JSON-escaped, URL-encoded, base64, or cut short.
 */
const ENCODINGS: Record<string, (secret: string) => string> = {
  'JSON-escaped': (secret) => [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
  'URL-encoded': (secret) => encodeURIComponent(secret).replaceAll('-', '%2D'),
  base64: (secret) => Buffer.from(`Bearer ${secret}`).toString('base64'),
  'cut by a character': (secret) => secret.slice(0, -1),
};

/** Whether `text`, read as a client would (JSON strings, URL escapes, base64 runs decoded), shows 16 characters of `secret` in a row. */
function showsSecret(text: string, secret: string): boolean {
  const strings: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string') strings.push(value);
    else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) visit(v);
  };
  for (const line of text.split('\n')) {
    const json = line.startsWith('data: ') ? line.slice(6) : line;
    try { visit(JSON.parse(json)); } catch { strings.push(line); }
  }
  const readable = strings.flatMap((s) => {
    let decoded = s;
    try { decoded = decodeURIComponent(s); } catch { /* not URL-encoded */ }
    const base64 = (decoded.match(/[A-Za-z0-9+/=_-]{16,}/g) ?? []).map((run) => Buffer.from(run, 'base64').toString('latin1'));
    return [decoded, ...base64];
  });
  for (let at = 0; at + 16 <= secret.length; at++) if (readable.some((s) => s.includes(secret.slice(at, at + 16)))) return true;
  return false;
}

const KEY_HERE = '@@KEY@@';

function chatAnswerWith(text: string): Record<string, unknown> {
  return { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
}

/** Answers `status` with `body` (JSON or SSE text) whose {@link KEY_HERE} is the credential it got, encoded. */
function echoing(status: number, contentType: string, body: string, encode: (secret: string) => string): Responder {
  return (req, res) => {
    const sent = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '').replace(/^Bearer /, '');
    res.writeHead(status, { 'content-type': contentType });
    res.end(body.replace(KEY_HERE, encode(sent)));
  };
}

describe('an upstream that echoes its credential encoded', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway({ schemas: false, config: { retry: { attempts: 1, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } } }); });
  after(async () => { await t.close(); });

  for (const [encoding, encode] of Object.entries(ENCODINGS)) {
    it(`keeps it ${encoding} out of an error answer, a whole answer and a stream, passed through and translated, and out of the log`, async () => {
      // Issue 25: each of these reached the client in plain text after decoding.
      const json = 'application/json';
      const sse = 'text/event-stream';
      const chatChunkText = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: `key ${KEY_HERE}` }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;
      const messagesStreamText = 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        + 'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
        + `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `key ${KEY_HERE}` } })}\n\n`
        + 'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n';
      const exchanges: Array<[string, Responder, string, Record<string, unknown>, Record<string, string>]> = [
        ['an error answer', echoing(400, json, JSON.stringify({ error: { message: `bad key ${KEY_HERE}`, type: 'invalid_request_error' } }), encode), '/v1/chat/completions', { model: 'gpt-test' }, openaiHeaders(t.key)],
        ['a whole answer passed through', echoing(200, json, JSON.stringify(chatAnswerWith(`your key is ${KEY_HERE}`)), encode), '/v1/chat/completions', { model: 'gpt-test' }, openaiHeaders(t.key)],
        ['a whole answer translated', echoing(200, json, JSON.stringify(chatAnswerWith(`your key is ${KEY_HERE}`)), encode), '/v1/messages', { model: 'gpt-test' }, anthropicHeaders(t.key)],
        ['a stream passed through', echoing(200, sse, chatChunkText, encode), '/v1/chat/completions', { model: 'gpt-test', stream: true }, openaiHeaders(t.key)],
        ['a stream translated', echoing(200, sse, messagesStreamText, encode), '/v1/chat/completions', { model: 'claude-test', stream: true }, openaiHeaders(t.key)],
      ];
      for (const [what, responder, path, extra, headers] of exchanges) {
        t.upstream.queue.push(responder);
        const res = await fetch(`${t.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }) });
        const text = await res.text();
        for (const secret of ['upstream-openai-secret', 'upstream-anthropic-secret']) assert.ok(!showsSecret(text, secret), `${what} shows ${secret}: ${text.slice(0, 400)}`);
        assert.match(text, /\[redacted\]/, what);
      }
      await t.allLogged();
      for (const secret of ['upstream-openai-secret', 'upstream-anthropic-secret']) assert.ok(!showsSecret(JSON.stringify(t.logs), secret), 'the log');
    });
  }
});

/** An upstream that compresses whatever it was asked for, in `encoding`, and notes what it was asked. */
function compressing(asked: string[], encoding: string, body: Buffer, contentType: string): Responder {
  return (req, res) => {
    asked.push(String(req.headers['accept-encoding']));
    const packed = encoding === 'gzip' ? gzipSync(body) : encoding === 'br' ? brotliCompressSync(body) : body;
    res.writeHead(200, { 'content-type': contentType, 'content-encoding': encoding, 'content-length': String(packed.length) });
    // In pieces, as a stream would come.
    let at = 0;
    const next = (): void => {
      if (at >= packed.length) {
        res.end();
        return;
      }
      res.write(packed.subarray(at, at + 100));
      at += 100;
      setImmediate(next);
    };
    next();
  };
}

describe('an upstream that compresses its answers', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway({ schemas: false }); });
  after(async () => { await t.close(); });

  it('is asked for identity, and a gzip answer is decoded: whole, streamed, and translated', async () => {
    // Issue 14: llmux sent no accept-encoding, so a compressing upstream's bytes reached clients raw.
    const asked: string[] = [];
    const whole = fixture('openai-nonstream-text.json');
    t.upstream.queue.push(compressing(asked, 'gzip', whole, 'application/json'));
    const json = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(json.status, 200);
    // The answer names the llmux model (llmux.md section 3); otherwise it is the upstream's, decoded.
    assert.deepEqual(await json.json(), JSON.parse(jsonWithLlmuxModel(whole, 'gpt-test').toString()));

    const stream = fixture('openai-stream-text-include-usage.sse');
    t.upstream.queue.push(compressing(asked, 'gzip', stream, 'text/event-stream'));
    const passed = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(await passed.text(), withLlmuxModel('chat', stream, 'gpt-test').toString());

    t.upstream.queue.push(compressing(asked, 'gzip', fixture('anthropic-stream-text.sse'), 'text/event-stream'));
    const translated = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'claude-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    const text = await translated.text();
    assert.match(text, /"content":/);
    assert.match(text, /data: \[DONE\]\n\n$/);
    assert.deepEqual(asked, ['identity', 'identity', 'identity']);
  });

  it('decodes brotli too, and answers 502 for an encoding it cannot read', async () => {
    const asked: string[] = [];
    const whole = fixture('anthropic-nonstream-text.json');
    t.upstream.queue.push(compressing(asked, 'br', whole, 'application/json'));
    const br = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.deepEqual(await br.json(), JSON.parse(jsonWithLlmuxModel(whole, 'claude-test').toString()));
    t.upstream.queue.push(compressing(asked, 'zstd', whole, 'application/json'));
    const unknown = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(unknown.status, 502);
    assert.match((await unknown.json() as { error: { message: string } }).error.message, /content-encoding "zstd", which llmux cannot read/);
  });
});

describe('an upstream that reports absurd usage', () => {
  it('is counted at a sane bound: /metrics stays finite and the key is not locked out', async () => {
    // Issue 14: 1e308 tokens locked the key out and poisoned /metrics. Issue 25: clamped at 1e8 it still locked a key out for a minute.
    const t = await startTestGateway({ schemas: false });
    try {
      const absurd = { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1e308, completion_tokens: 1e308, total_tokens: 1e308 } };
      t.upstream.queue.push(respond.json(200, absurd), respond.json(200, absurd));
      const ask = () => fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
      const answers = await Promise.all([ask(), ask()]);
      assert.deepEqual(answers.map((r) => r.status), [200, 200]);
      await Promise.all(answers.map((r) => r.arrayBuffer()));
      await t.allLogged();
      const metrics = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.adminKey}` } })).text();
      const tokensIn = Number(/llmux_tokens_total\{model="gpt-test",direction="in"\} (\S+)/.exec(metrics)?.[1]);
      const tokensOut = Number(/llmux_tokens_total\{model="gpt-test",direction="out"\} (\S+)/.exec(metrics)?.[1]);
      assert.ok(Number.isSafeInteger(tokensIn) && tokensIn <= 2 * 32_768, `tokens in: ${tokensIn}`);
      assert.equal(tokensOut, 2 * 10, 'output counts no more than max_tokens');
      t.upstream.queue.push(respond.fixtureJson('openai-nonstream-text.json'));
      assert.equal((await ask()).status, 200, 'the key keeps its tokens/min');
    } finally {
      await t.close();
    }
  });
});

const BIG = 1e308;
const chatChunk = (extra: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', ...extra })}\n\n`;
const messagesEvent = (data: Record<string, unknown>) => `event: ${String(data['type'])}\ndata: ${JSON.stringify(data)}\n\n`;
const responsesEvent = (data: Record<string, unknown>) => `event: ${String(data['type'])}\ndata: ${JSON.stringify(data)}\n\n`;
const absurdResponse = { id: 'resp_lie', object: 'response', created_at: 1, status: 'completed', model: 'm', output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }], usage: { input_tokens: BIG, output_tokens: BIG, total_tokens: BIG } };
const LYING: Record<string, Responder> = {
  'chat whole': respond.json(200, { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: BIG, completion_tokens: BIG, total_tokens: BIG } }),
  'chat stream': respond.sse(chatChunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'ok' }, finish_reason: null }] })
    + chatChunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
    + chatChunk({ choices: [], usage: { prompt_tokens: BIG, completion_tokens: BIG, total_tokens: BIG } }) + 'data: [DONE]\n\n'),
  'messages whole': respond.json(200, { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: BIG, output_tokens: BIG, cache_read_input_tokens: BIG } }),
  'messages stream': respond.sse(messagesEvent({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: BIG, output_tokens: 1 } } })
    + messagesEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
    + messagesEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } })
    + messagesEvent({ type: 'content_block_stop', index: 0 })
    + messagesEvent({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: BIG } })
    + messagesEvent({ type: 'message_stop' })),
  'responses stream': respond.sse(responsesEvent({ type: 'response.created', sequence_number: 0, response: { ...absurdResponse, status: 'in_progress', output: [], usage: null } })
    + responsesEvent({ type: 'response.completed', sequence_number: 1, response: absurdResponse })),
  'responses whole': respond.json(200, absurdResponse),
};

describe('an upstream that reports more usage than the request could have used', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({
      schemas: false,
      configFor: (url) => ({
        providers: {
          'fake-openai': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-openai-secret', responses: true },
          'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
        },
      }),
    });
  });
  after(async () => { await t.close(); });

  const cases: Array<[string, string, string, Record<string, unknown>]> = [
    ['chat whole', 'chat whole', '/v1/chat/completions', { model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }],
    ['chat stream', 'chat stream', '/v1/chat/completions', { model: 'gpt-test', max_tokens: 10, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }],
    ['messages whole', 'messages whole', '/v1/messages', { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }],
    ['messages stream', 'messages stream', '/v1/messages', { model: 'claude-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
    ['chat client, messages stream translated', 'messages stream', '/v1/chat/completions', { model: 'claude-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
    ['messages client, chat whole translated', 'chat whole', '/v1/messages', { model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }],
    ['responses stream passed through', 'responses stream', '/v1/responses', { model: 'gpt-test', max_output_tokens: 10, stream: true, input: 'hi' }],
    ['responses whole passed through', 'responses whole', '/v1/responses', { model: 'gpt-test', max_output_tokens: 10, input: 'hi' }],
    ['responses client, messages whole translated', 'messages whole', '/v1/responses', { model: 'claude-test', max_output_tokens: 10, input: 'hi' }],
  ];
  for (const [name, upstream, path, body] of cases) {
    it(`clamps it to the model's context and the request's max_tokens, and warns (${name})`, async () => {
      // Issue 25: an answer claiming 1e308 tokens exhausted a 100,000 tokens/min key for a minute.
      const key = (await t.gateway.keys.create({ name, limits: { rpm: 1000, tpm: 100_000, concurrency: 10 } })).key;
      t.upstream.queue.push(LYING[upstream]!);
      const res = await fetch(`${t.url}${path}`, { method: 'POST', headers: anthropicHeaders(key, { authorization: `Bearer ${key}` }), body: JSON.stringify(body) });
      assert.equal(res.status, 200);
      await res.text();
      const line = await logLineOf(t, res);
      assert.ok(Number(line['tokens_in']) <= 32_768, `tokens in ${String(line['tokens_in'])}`);
      assert.ok(Number(line['tokens_out']) <= 10, `tokens out ${String(line['tokens_out'])}`);
      assert.match(JSON.stringify(line['warnings']), /usage.*beyond what the request could have used/);
      const next = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(key), body: JSON.stringify({ model: 'llmux-echo', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
      assert.equal(next.status, 200, 'the key keeps its tokens/min');
    });
  }
});
