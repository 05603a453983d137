/**
 * Google's Gemini format through llmux over sockets (llmux.md section 9), driven by the official
 * `@google/genai` SDK as its users call it (`generateContent`, `generateContentStream`, function
 * calling, `countTokens`, `models.list` / `get`), against a chat, a messages and a Gemini upstream
 * (fakes): every operation, whole and streamed; the errors the SDK raises (a bad key, an unknown
 * model, a rate-limited key, a bad body) with Google's shape and status; a `?key=` kept out of
 * the log; the JSON-array stream; Gemini upstreams passed the client's bytes, and spoken to by
 * chat, messages and Responses clients.
 */
import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, GoogleGenAI, Type } from '@google/genai';
import type { Content, FunctionCall, GenerateContentResponse } from '@google/genai';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startTestGateway, threeFormatConfig } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { geminiFixture, respond } from './helpers/fake-upstream.ts';
import { SCRIPTED_THOUGHT_SIGNATURE, answer, toolRoundTrip } from './helpers/scripted-answers.ts';
import { geminiHeaders } from './helpers/platform-clients.ts';

type Json = Record<string, unknown>;

const UPSTREAMS = [
  { model: 'gpt-test', kind: 'chat' },
  { model: 'claude-test', kind: 'messages' },
  { model: 'gemini-test', kind: 'gemini' },
] as const;

const WEATHER = {
  name: 'get_weather',
  description: 'Gets the current weather in a city.',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING, description: 'The city' } }, required: ['city'] },
};

let t: TestGateway;

before(async () => {
  t = await startTestGateway({ configFor: (url) => threeFormatConfig(url) });
});
after(async () => {
  await t.close();
});
beforeEach(() => {
  t.upstream.requests.length = 0;
  t.upstream.queue.length = 0;
});

function genai(apiKey = t.key): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: t.url } });
}

/** The tool round trip every upstream plays: the weather asked for, then the answer quoting it. */
function weatherTrip(): void {
  const respond = toolRoundTrip({ calls: [{ id: 'toolu_weather1', name: 'get_weather', input: { city: 'Paris' } }] }, (result) => ({ text: `It is ${result} in Paris.` }));
  t.upstream.queue.push(respond, respond);
}

/** The assembled parts of a stream, as Gemini CLI keeps a streamed turn in its history. */
async function collect(stream: AsyncGenerator<GenerateContentResponse>): Promise<{ text: string; calls: FunctionCall[]; parts: Content['parts']; last: GenerateContentResponse | undefined }> {
  let text = '';
  const calls: FunctionCall[] = [];
  const parts: NonNullable<Content['parts']> = [];
  let last: GenerateContentResponse | undefined;
  for await (const chunk of stream) {
    text += chunk.text ?? '';
    calls.push(...(chunk.functionCalls ?? []));
    parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []).filter((part) => part.text !== ''));
    last = chunk;
  }
  return { text, calls, parts, last };
}

describe('@google/genai against llmux, every upstream format', () => {
  for (const { model, kind } of UPSTREAMS) {
    it(`generateContent answers from a ${kind} upstream, naming the llmux model, with usage`, async () => {
      t.upstream.queue.push(answer({ text: 'Hello from upstream.', usage: { input: 11, output: 5 } }));
      const response = await genai().models.generateContent({ model, contents: 'Say hello', config: { systemInstruction: 'Be brief.', maxOutputTokens: 100 } });
      assert.equal(response.text, 'Hello from upstream.');
      assert.equal(response.modelVersion, model);
      assert.equal(response.candidates?.[0]?.finishReason, 'STOP');
      assert.deepEqual([response.usageMetadata?.promptTokenCount, response.usageMetadata?.candidatesTokenCount, response.usageMetadata?.totalTokenCount], [11, 5, 16]);
    });

    it(`generateContentStream streams from a ${kind} upstream, the finish reason and usage last`, async () => {
      t.upstream.queue.push(answer({ text: 'One two three four.', usage: { input: 9, output: 4 } }));
      const { text, last } = await collect(await genai().models.generateContentStream({ model, contents: 'Count' }));
      assert.equal(text, 'One two three four.');
      assert.equal(last?.candidates?.[0]?.finishReason, 'STOP');
      assert.equal(last?.usageMetadata?.totalTokenCount, 13);
      assert.equal(last?.modelVersion, model);
    });

    for (const streamed of [false, true]) {
      it(`completes a function-calling round trip with a ${kind} upstream${streamed ? ', streamed' : ''}`, async () => {
        weatherTrip();
        const ai = genai();
        const config = { tools: [{ functionDeclarations: [WEATHER] }] };
        const ask: Content = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
        let calls: FunctionCall[];
        let modelParts: Content['parts'];
        if (streamed) {
          ({ calls, parts: modelParts } = await collect(await ai.models.generateContentStream({ model, contents: [ask], config })));
        } else {
          const first = await ai.models.generateContent({ model, contents: [ask], config });
          assert.equal(first.candidates?.[0]?.finishReason, 'STOP', "a turn that ends in calls is STOP, as Google's");
          calls = first.functionCalls ?? [];
          modelParts = first.candidates?.[0]?.content?.parts;
        }
        assert.deepEqual(calls.map((call) => [call.name, call.args]), [['get_weather', { city: 'Paris' }]]);
        const call = calls[0] as FunctionCall;
        const contents: Content[] = [ask, { role: 'model', parts: modelParts ?? [] }, { role: 'user', parts: [{ functionResponse: { ...(call.id === undefined ? {} : { id: call.id }), name: 'get_weather', response: { output: '21°C and clear' } } }] }];
        const second = streamed
          ? (await collect(await ai.models.generateContentStream({ model, contents, config }))).text
          : (await ai.models.generateContent({ model, contents, config })).text;
        assert.equal(second, 'It is 21°C and clear in Paris.');
        if (kind === 'gemini') {
          // Passed through: the upstream got the call's own signature back with the history.
          assert.ok(JSON.stringify(t.upstream.requests.at(-1)?.body['contents']).includes(SCRIPTED_THOUGHT_SIGNATURE));
        }
      });
    }
  }

  it('countTokens counts contents, and a whole request with its system instruction and tools', async () => {
    const ai = genai();
    const plain = await ai.models.countTokens({ model: 'gpt-test', contents: 'How many tokens is this?' });
    assert.ok((plain.totalTokens ?? 0) > 0);
    const res = await fetch(`${t.url}/v1beta/models/gemini-test:countTokens`, {
      method: 'POST',
      headers: geminiHeaders(t.key),
      body: JSON.stringify({ generateContentRequest: { model: 'models/gemini-test', contents: [{ role: 'user', parts: [{ text: 'How many tokens is this?' }] }], systemInstruction: { parts: [{ text: 'x'.repeat(400) }] } } }),
    });
    const wrapped = (await res.json()) as Json;
    assert.equal(res.status, 200);
    assert.ok(Number(wrapped['totalTokens']) >= (plain.totalTokens ?? 0) + 100, 'the system instruction counts');
    assert.equal(t.upstream.requests.length, 0, 'counting asks no upstream');
  });

  it('models.list pages the catalog as Gemini Model records, and models.get reads one', async () => {
    const ai = genai();
    const names: string[] = [];
    for await (const model of await ai.models.list({ config: { pageSize: 2 } })) names.push(model.name ?? '');
    assert.deepEqual(names.sort(), ['models/claude-test', 'models/gemini-test', 'models/gpt-test', 'models/llmux-echo']);
    const model = await ai.models.get({ model: 'gemini-test' });
    assert.equal(model.name, 'models/gemini-test');
    assert.equal(model.outputTokenLimit, 8192);
    assert.deepEqual(model.supportedActions, ['generateContent', 'streamGenerateContent', 'countTokens']);
  });

  it('the echo model answers a Gemini client in its own format', async () => {
    const response = await genai().models.generateContent({ model: 'llmux-echo', contents: 'echo me' });
    assert.equal(response.text, 'echo me');
    const { text } = await collect(await genai().models.generateContentStream({ model: 'llmux-echo', contents: 'echo me too' }));
    assert.equal(text, 'echo me too');
  });
});

describe('errors a Gemini client gets, in Google\'s shape, as the SDK reads them', () => {
  /** The error the SDK raises, and the body it read. */
  async function refusal(call: () => Promise<unknown>): Promise<{ status: number; error: Json }> {
    try {
      await call();
    } catch (err) {
      assert.ok(err instanceof ApiError, `an ApiError, not ${String(err)}`);
      return { status: err.status, error: (JSON.parse(err.message) as { error: Json }).error };
    }
    assert.fail('the call should have failed');
  }

  it('a bad key is 401 UNAUTHENTICATED', async () => {
    const { status, error } = await refusal(() => genai('llmux-not-a-key').models.generateContent({ model: 'gpt-test', contents: 'hi' }));
    assert.equal(status, 401);
    assert.deepEqual([error['code'], error['status']], [401, 'UNAUTHENTICATED']);
  });

  it('an unknown model is 404 NOT_FOUND, on every operation', async () => {
    for (const call of [
      () => genai().models.generateContent({ model: 'no-such-model', contents: 'hi' }),
      () => genai().models.generateContentStream({ model: 'no-such-model', contents: 'hi' }),
      () => genai().models.countTokens({ model: 'no-such-model', contents: 'hi' }),
      () => genai().models.get({ model: 'no-such-model' }),
    ]) {
      const { status, error } = await refusal(call);
      assert.deepEqual([status, error['status']], [404, 'NOT_FOUND']);
    }
  });

  it('a bad body is 400 INVALID_ARGUMENT naming the field', async () => {
    const { status, error } = await refusal(() => genai().models.generateContent({ model: 'gpt-test', contents: 'hi', config: { temperature: 7 } }));
    assert.deepEqual([status, error['status']], [400, 'INVALID_ARGUMENT']);
    assert.match(String(error['message']), /generationConfig\.temperature/);
  });

  it('a rate-limited key is 429 RESOURCE_EXHAUSTED with how long to wait', async () => {
    const { key } = await t.gateway.keys.create({ name: 'one-a-minute', limits: { rpm: 1 } });
    t.upstream.queue.push(answer({ text: 'first' }));
    await genai(key).models.generateContent({ model: 'gpt-test', contents: 'hi' });
    const { status, error } = await refusal(() => genai(key).models.generateContent({ model: 'gpt-test', contents: 'hi' }));
    assert.deepEqual([status, error['status']], [429, 'RESOURCE_EXHAUSTED']);
    const retry = (error['details'] as Json[]).find((detail) => detail['@type'] === 'type.googleapis.com/google.rpc.RetryInfo');
    assert.match(String(retry?.['retryDelay']), /^\d+s$/);
  });

  it('an upstream failure mid-stream is one more event holding the error, and nothing after', async () => {
    t.upstream.queue.push(respond.sse('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n', { dropAfterBytes: 1_000_000 }));
    const res = await fetch(`${t.url}/v1beta/models/gpt-test:streamGenerateContent?alt=sse`, { method: 'POST', headers: geminiHeaders(t.key), body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
    const events = (await res.text()).trim().split(/\n\n/).map((event) => JSON.parse(event.slice('data: '.length)) as Json);
    assert.equal(res.status, 200);
    assert.deepEqual(events.at(-1), { error: { code: 500, message: 'upstream stream ended before the answer was complete', status: 'INTERNAL' } });
  });

  it('embeddings and methods llmux does not serve are 404 in Google\'s shape', async () => {
    for (const method of ['embedContent', 'batchEmbedContents', 'predict']) {
      const res = await fetch(`${t.url}/v1beta/models/gpt-test:${method}`, { method: 'POST', headers: geminiHeaders(t.key), body: '{}' });
      const body = (await res.json()) as { error: Json };
      assert.deepEqual([res.status, body.error['status']], [404, 'NOT_FOUND'], method);
      if (method.includes('mbed')) assert.match(String(body.error['message']), /embeddings are not served/);
    }
  });
});

describe('a Gemini client, by curl and by other paths', () => {
  it('takes the key as ?key=, and the query never reaches the log', async () => {
    t.upstream.queue.push(answer({ text: 'Hi.' }));
    const res = await fetch(`${t.url}/v1beta/models/gpt-test:generateContent?key=${t.key}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
    assert.equal(res.status, 200);
    const bad = await fetch(`${t.url}/v1beta/models?key=${t.key.slice(0, -4)}abcd`);
    assert.equal(bad.status, 401);
    await t.allLogged();
    const log = t.logs.map((line) => JSON.stringify(line)).join('\n');
    assert.ok(!log.includes(t.key) && !log.includes(t.key.slice(0, -4)) && !log.includes('key='), 'no key and no query in the log');
    assert.ok(!JSON.stringify(t.upstream.requests).includes(t.key), 'the client\'s key never goes upstream');
  });

  it('streams one JSON array without alt=sse, element by element', async () => {
    for (const model of ['gpt-test', 'gemini-test']) {
      t.upstream.queue.push(answer({ text: 'One two three.' }));
      const res = await fetch(`${t.url}/v1/models/${model}:streamGenerateContent`, { method: 'POST', headers: geminiHeaders(t.key), body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
      assert.match(String(res.headers.get('content-type')), /^application\/json/);
      const responses = (await res.json()) as GenerateContentResponse[];
      assert.equal(responses.map((response) => response.candidates?.[0]?.content?.parts?.map((part) => part.text).join('')).join(''), 'One two three.');
      assert.equal(responses.at(-1)?.candidates?.[0]?.finishReason, 'STOP');
    }
  });

  it('answers the shared GET /v1/models in Gemini records for a Gemini key, the OpenAI list otherwise', async () => {
    const gemini = (await (await fetch(`${t.url}/v1/models`, { headers: { 'x-goog-api-key': t.key } })).json()) as Json;
    assert.ok(Array.isArray(gemini['models']));
    const openai = (await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.key}` } })).json()) as Json;
    assert.equal(openai['object'], 'list');
    const one = (await (await fetch(`${t.url}/v1/models/gpt-test?key=${t.key}`)).json()) as Json;
    assert.equal(one['name'], 'models/gpt-test');
    const refused = await fetch(`${t.url}/v1/models`, { headers: { 'x-goog-api-key': 'nope' } });
    assert.equal(((await refused.json()) as { error: Json }).error['status'], 'UNAUTHENTICATED');
  });

  it('accepts a models/ prefix twice over and the tunedModels form, under /v1beta, /v1 and the root', async () => {
    for (const path of ['/v1beta/models/models/gpt-test', '/v1/tunedModels/gpt-test', '/models/gpt-test']) {
      t.upstream.queue.push(answer({ text: 'Hi.' }));
      const res = await fetch(`${t.url}${path}:generateContent`, { method: 'POST', headers: geminiHeaders(t.key), body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
      assert.equal(res.status, 200, path);
    }
  });

  it('logs a Gemini request with its model, usage, stream flag and no 4xx', async () => {
    t.upstream.queue.push(answer({ text: 'Hi.', usage: { input: 3, output: 2 } }));
    const res = await fetch(`${t.url}/v1beta/models/claude-test:streamGenerateContent?alt=sse`, { method: 'POST', headers: geminiHeaders(t.key), body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
    await res.text();
    await t.allLogged();
    const line = t.logs.find((entry) => (entry as Json)['request_id'] === res.headers.get('x-request-id')) as Json;
    assert.deepEqual([line['model'], line['provider'], line['status'], line['stream'], line['translated'], line['tokens_in'], line['tokens_out']], ['claude-test', 'fake-anthropic', 200, true, true, 3, 2]);
  });
});

describe('a Gemini upstream (format "gemini")', () => {
  it("gets a Gemini client's own bytes, only the model in its path changed, the provider's key in x-goog-api-key", async () => {
    const body = '{"contents": [{"role": "user", "parts": [{"text": "caf\\u00e9"}]}], "generationConfig": {"temperature": 0.5}}';
    for (const [operation, upstreamPath] of [['generateContent', '/v1beta/models/gemini-upstream:generateContent'], ['streamGenerateContent', '/v1beta/models/gemini-upstream:streamGenerateContent?alt=sse']]) {
      t.upstream.queue.push(answer({ text: 'Hi.' }));
      const res = await fetch(`${t.url}/v1beta/models/gemini-test:${operation}?alt=sse`, { method: 'POST', headers: geminiHeaders(t.key), body });
      await res.text();
      const seen = t.upstream.requests.at(-1);
      assert.equal(seen?.raw, body, 'the bytes as the client wrote them');
      assert.equal(seen?.path, upstreamPath);
      assert.equal(seen?.headers['x-goog-api-key'], 'upstream-gemini-secret');
    }
  });

  it("passes Google's own answer through, thought signatures and all, naming the llmux model", async () => {
    t.upstream.queue.push((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(geminiFixture('function-call.sse'));
    });
    const res = await fetch(`${t.url}/v1beta/models/gemini-test:streamGenerateContent?alt=sse`, { method: 'POST', headers: geminiHeaders(t.key), body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
    const text = await res.text();
    assert.equal(text, geminiFixture('function-call.sse').toString().replaceAll('"modelVersion":"gemini-3-flash-preview"', '"modelVersion":"gemini-test"'));
  });

  it('answers chat, messages and Responses clients (the official SDKs), whole and streamed, a tool round trip included', async () => {
    const openai = new OpenAI({ apiKey: t.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
    t.upstream.queue.push(answer({ text: 'Hello, chat.' }));
    const chat = await openai.chat.completions.create({ model: 'gemini-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual([chat.model, chat.choices[0]?.message.content], ['gemini-test', 'Hello, chat.']);
    assert.match(String(t.upstream.requests.at(-1)?.path), /:generateContent$/);

    weatherTrip();
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const first = await openai.chat.completions.stream({ model: 'gemini-test', messages: [{ role: 'user', content: 'Weather?' }], tools }).finalChatCompletion();
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.ok(call !== undefined && call.type === 'function');
    const second = await openai.chat.completions.stream({
      model: 'gemini-test',
      tools,
      messages: [{ role: 'user', content: 'Weather?' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '18°C' }],
    }).finalChatCompletion();
    assert.equal(second.choices[0]?.message.content, 'It is 18°C in Paris.');
    const history = JSON.stringify(t.upstream.requests.at(-1)?.body['contents']);
    assert.ok(history.includes(SCRIPTED_THOUGHT_SIGNATURE) || history.includes('skip_thought_signature_validator'), 'the call goes back with a signature Gemini 3 takes');

    t.upstream.queue.push(answer({ text: 'Hello, messages.' }));
    const message = await anthropic.messages.stream({ model: 'gemini-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.deepEqual([message.model, message.content[0]?.type === 'text' ? message.content[0].text : ''], ['gemini-test', 'Hello, messages.']);
    assert.match(String(t.upstream.requests.at(-1)?.path), /:streamGenerateContent\?alt=sse$/);

    t.upstream.queue.push(answer({ text: 'Hello, Responses.' }));
    const response = await openai.responses.create({ model: 'gemini-test', input: 'hi', store: false });
    assert.equal(response.output_text, 'Hello, Responses.');
  });

  it("reads a Gemini upstream's 429 with its RetryInfo as a rate limit the client can wait out", async () => {
    const limited = JSON.parse(geminiFixture('error-429.json').toString()) as Json;
    for (let i = 0; i < 3; i++) t.upstream.queue.push(respond.json(429, limited));
    const res = await fetch(`${t.url}/v1beta/models/gemini-test:generateContent`, { method: 'POST', headers: geminiHeaders(t.key), body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
    const body = (await res.json()) as { error: Json };
    assert.deepEqual([res.status, body.error['status']], [429, 'RESOURCE_EXHAUSTED']);
    assert.match(String(body.error['message']), /exceeded your current quota/);
    assert.equal(res.headers.get('retry-after'), '34', "the wait Google's RetryInfo named");
    assert.deepEqual(body.error['details'], [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '34s' }]);
  });
});
