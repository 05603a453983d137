import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { geminiDialect } from '../../src/dialects/gemini.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { runDialectCases } from './common.case.ts';
import type { SseEvent } from '../../src/sse/parser.ts';
import { TEST_SEALER, carryTurn } from '../helpers/carry.ts';
import { readJsonObject } from '../../src/http/body.ts';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';

type Json = Record<string, unknown>;

const partsText = (response: Json): string => ((((response['candidates'] as Json[] | undefined)?.[0]?.['content'] as Json | undefined)?.['parts'] as Json[] | undefined) ?? [])
  .map((part) => (typeof part['text'] === 'string' ? part['text'] : ''))
  .join('');

runDialectCases({
  dialect: geminiDialect,
  headers: {},
  badHeaders: [],
  keyIn: (key) => ({ headers: {}, query: `alt=sse&key=${encodeURIComponent(key)}` }),
  request: ({ text, model, stream, maxTokens }) => ({
    path: `/v1beta/models/${model}:${stream ? 'streamGenerateContent' : 'generateContent'}`,
    params: { model, method: stream ? 'streamGenerateContent' : 'generateContent' },
    query: stream ? 'alt=sse' : '',
    body: {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ role: 'user', parts: [{ text }] }],
      ...(maxTokens === undefined ? {} : { generationConfig: { maxOutputTokens: maxTokens } }),
    },
  }),
  invalid: [
    { body: {}, field: /^contents:/ },
    { body: { contents: [{ role: 'assistant', parts: [{ text: 'hi' }] }] }, field: /^contents\.0\.role:/ },
    { body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { candidateCount: 0 } }, field: /^generationConfig\.candidateCount:/ },
  ],
  helloEstimate: 21,
  modelInBody: false,
  answer: {
    body: { candidates: [], usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 3, totalTokenCount: 15 }, modelVersion: 'gemini-2.5-flash' },
    usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 },
  },
  rateLimitedBody: { error: { code: 429, message: 'slow down', status: 'RESOURCE_EXHAUSTED' } },
  streamErrorMessage: (events) => String(((JSON.parse(events[0]?.data ?? '{}') as Json)['error'] as Json)['message']),
  answerText: (answer) => partsText(answer as Json),
  streamText: (events: SseEvent[]) => events.map((event) => partsText(JSON.parse(event.data) as Json)).join(''),
});

function joined(body: string | readonly Buffer[]): string {
  return typeof body === 'string' ? body : Buffer.concat(body).toString();
}

describe('the gemini dialect, beyond what every format is checked for', () => {
  const read = (params: Record<string, string>, query = '', body: unknown = { contents: [{ parts: [{ text: 'hi' }] }] }) =>
    geminiDialect.readRequest(body, { forwarded: {}, strict: false, params, query });

  it('reads the llmux model id from the path, with a models/ prefix taken off', () => {
    assert.equal(read({ model: 'models/gemini-2.5-flash', method: 'generateContent' }).model, 'gemini-2.5-flash');
    assert.equal(read({ model: 'groq/openai/gpt-oss-120b', method: 'generateContent' }).model, 'groq/openai/gpt-oss-120b');
    assert.throws(() => read({ model: 'models/', method: 'generateContent' }), (err: unknown) => err instanceof GatewayError && err.status === 400 && /^model:/.test(err.message));
  });

  it('streams server-sent events with alt=sse, else one JSON array', () => {
    assert.equal(read({ model: 'm', method: 'streamGenerateContent' }, 'alt=sse').framing, undefined);
    assert.equal(read({ model: 'm', method: 'streamGenerateContent' }, 'key=k').framing, 'json-array');
    assert.equal(read({ model: 'm', method: 'generateContent' }).framing, undefined);
  });

  it('reads snake_case bodies as Google does', () => {
    const request = read({ model: 'm', method: 'generateContent' }, '', { contents: [{ parts: [{ text: 'hi' }] }], generation_config: { max_output_tokens: 9 } });
    assert.equal(geminiDialect.maxTokens(request.body), 9);
  });

  it('turns a request that streams into a turn that says so (the translations need it: the body does not)', async () => {
    const request = read({ model: 'm', method: 'streamGenerateContent' }, 'alt=sse');
    const services = { responses: { sealer: () => Promise.resolve(TEST_SEALER), sealerNow: () => undefined } } as never;
    const turn = await geminiDialect.beginTurn(request, { keyId: 'k', services, passThrough: false, now: Date.now });
    assert.equal(turn.translation.stream, true);
    // It seals for the key too (llmux.md section 11): what it seals opens for that key.
    const issuer = { provider: 'p', family: 'gemini' };
    assert.deepEqual(turn.translation.open(turn.translation.seal(issuer, { kind: 'reasoning' })), { state: 'open', carried: { issuer, item: { kind: 'reasoning' } } });
  });

  it('passes a history on as its bytes unless it holds llmux seals, which go back as Google\'s signatures or make way for the placeholder', () => {
    const gemini = { provider: 'gemini-up', family: 'gemini' };
    const turn = Object.assign(carryTurn(), { stream: false });
    const carry = { turn, model: { upstreamId: 'g', reasoning: true, maxTokensParam: 'max_tokens' as const, replayReasoning: false, maxOutputTokens: 0, issuer: gemini }, onWarning: () => {} };
    const history = (signature: string): string => JSON.stringify({ contents: [
      { role: 'user', parts: [{ text: 'go' }] },
      { role: 'model', parts: [{ functionCall: { id: 'a', name: 'f', args: {} }, thoughtSignature: signature }] },
      { role: 'user', parts: [{ functionResponse: { id: 'a', name: 'f', response: { output: 'x' } } }] },
    ] });
    const passed = (text: string): Json => {
      const raw = readJsonObject(Buffer.from(text));
      return JSON.parse(joined(geminiDialect.passThroughBody(raw.value as GeminiRequest, 'g', raw, undefined, carry))) as Json;
    };
    const signatureOf = (body: Json): unknown => (((body['contents'] as Json[])[1]?.['parts'] as Json[])[0] as Json)['thoughtSignature'];
    const own = history('google-own');
    assert.equal(joined(geminiDialect.passThroughBody(readJsonObject(Buffer.from(own)).value as GeminiRequest, 'g', readJsonObject(Buffer.from(own)), undefined, carry)), own);
    assert.equal(signatureOf(passed(history(turn.seal(gemini, { kind: 'bundle', items: [{ kind: 'thought-signature', signature: 'google-sig', callId: 'a' }] })))), 'google-sig');
    assert.equal(signatureOf(passed(history(turn.seal({ provider: 'claude-up', family: 'anthropic' }, { kind: 'bundle', items: [] })))), 'skip_thought_signature_validator');
  });

  it('names the llmux model in a passed-through answer, and in no other field', () => {
    const bytes = Buffer.from('{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"modelVersion":"keep"}}}]}}],"modelVersion": "gemini-2.5-flash-001"}');
    const passed = JSON.parse(geminiDialect.passThroughAnswer(bytes, 'my-gemini').bytes.toString()) as Json;
    assert.equal(passed['modelVersion'], 'my-gemini');
    assert.match(JSON.stringify(passed), /"modelVersion":"keep"/);
  });

  it('tells a client whose key was refused where Gemini clients send it, and a 429 how long to wait', () => {
    const refused = JSON.parse(geminiDialect.errorBody(new GatewayError(401, 'invalid_request_error', 'invalid_api_key', 'Invalid authentication credentials'))) as { error: Json };
    assert.deepEqual([refused.error['code'], refused.error['status']], [401, 'UNAUTHENTICATED']);
    assert.match(String(refused.error['message']), /x-goog-api-key/);
    const limited = JSON.parse(geminiDialect.errorBody(new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', 'slow', { headers: { 'retry-after': '7' } }))) as { error: Json };
    assert.deepEqual(limited.error['details'], [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }]);
  });

  it('reads the last user text, not the model\'s nor a thought', () => {
    const body = read({ model: 'm', method: 'generateContent' }, '', {
      contents: [{ role: 'user', parts: [{ text: 'first' }] }, { role: 'model', parts: [{ text: 'answer' }] }, { role: 'user', parts: [{ text: 'x', thought: true }, { text: 'second' }] }],
    }).body;
    assert.equal(geminiDialect.userText(body, 100), 'second');
  });
});
