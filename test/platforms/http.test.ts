import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { createCarriers, platforms } from '../../src/platforms/index.ts';
import { apiKeySetting } from '../../src/platforms/http.ts';
import type { OutgoingRequest, PlatformServices, UpstreamAnswer, UpstreamCall } from '../../src/platforms/index.ts';
import type { ProviderConfig } from '../../src/config/types.ts';
import type { WireFormat } from '../../src/formats/wire.ts';

const env: Record<string, string | undefined> = { OPENAI_KEY: 'sk-openai' };
const services: PlatformServices = {
  secret: (written) => {
    if (written === undefined || written === '') return undefined;
    if (!written.startsWith('env:')) return written;
    const value = env[written.slice(4)];
    return value === '' ? undefined : value;
  },
  env,
  now: () => 0,
};

function provider(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return { id: 'p', format: 'chat', baseUrl: 'https://api.example.test/v1', apiKey: 'env:OPENAI_KEY', keyless: false, headers: {}, ...overrides };
}

function call(format: WireFormat, stream = false, formatHeaders: Record<string, string> = {}): UpstreamCall {
  return { upstreamId: 'up-model', format, stream, formatHeaders };
}

/** The headers an attempt sends: the carrier's, then its authorisation. */
function authorised(p: ProviderConfig, c: UpstreamCall): Record<string, string> {
  const carrier = platforms.http.bind(p, services);
  const request: OutgoingRequest = { call: c, target: carrier.target(c), body: '{}', headers: carrier.headers(c) };
  assert.equal(carrier.authorise(request), undefined, 'a key from the config is at hand: nothing to wait for');
  return request.headers;
}

function answer(contentType: string): UpstreamAnswer {
  return Object.assign(Readable.from([]), { statusCode: 200, headers: { 'content-type': contentType } });
}

describe('the http platform', () => {
  it('reaches each format at its path under the base URL, with no envelope', () => {
    const carrier = platforms.http.bind(provider(), services);
    assert.equal(carrier.endpoint, 'https://api.example.test/v1');
    assert.equal(carrier.target(call('chat', true)), '/chat/completions');
    assert.equal(carrier.target(call('messages')), '/messages');
    assert.equal(carrier.target(call('responses')), '/responses');
    assert.equal(carrier.envelope(call('messages', true)), undefined);
  });

  it("reaches a Gemini model at its resource name, streamed with alt=sse, the key in x-goog-api-key", () => {
    const carrier = platforms.http.bind(provider({ format: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta' }), services);
    assert.equal(carrier.target(call('gemini')), '/models/up-model:generateContent');
    assert.equal(carrier.target(call('gemini', true)), '/models/up-model:streamGenerateContent?alt=sse');
    assert.equal(carrier.target({ ...call('gemini'), upstreamId: 'tunedModels/my-tune' }), '/tunedModels/my-tune:generateContent');
    assert.equal(carrier.target({ ...call('gemini'), upstreamId: 'models/gemini-2.5-flash' }), '/models/gemini-2.5-flash:generateContent');
    assert.equal(carrier.target({ ...call('gemini'), upstreamId: 'a b?c' }), '/models/a%20b%3Fc:generateContent');
    assert.deepEqual(authorised(provider({ format: 'gemini', apiKey: 'AIza-test' }), call('gemini', true)), { accept: 'text/event-stream', 'x-goog-api-key': 'AIza-test' });
  });

  it("carries the credential where each format's API reads it, with the format's own headers", () => {
    assert.deepEqual(authorised(provider(), call('chat', true)), { accept: 'text/event-stream', authorization: 'Bearer sk-openai' });
    assert.deepEqual(authorised(provider(), call('responses')), { accept: 'application/json', authorization: 'Bearer sk-openai' });
    assert.deepEqual(authorised(provider({ apiKey: 'sk-ant' }), call('messages', false, { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'b1' })), {
      accept: 'application/json',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'b1',
      'x-api-key': 'sk-ant',
    });
    assert.deepEqual(authorised(provider({ apiKey: undefined, keyless: true }), call('chat')), { accept: 'application/json' });
  });

  it('reads an env: credential on every request, so a changed environment takes effect', () => {
    const carrier = platforms.http.bind(provider(), services);
    const send = (): Record<string, string> => {
      const request: OutgoingRequest = { call: call('chat'), target: '/chat/completions', body: '{}', headers: carrier.headers(call('chat')) };
      carrier.authorise(request);
      return request.headers;
    };
    assert.equal(send()['authorization'], 'Bearer sk-openai');
    env['OPENAI_KEY'] = '';
    assert.equal(send()['authorization'], undefined);
    env['OPENAI_KEY'] = 'sk-openai';
  });

  it('passes a server-sent event stream as it is, and no other answer to a streamed request', () => {
    const carrier = platforms.http.bind(provider(), services);
    const sse = answer('text/event-stream; charset=utf-8');
    assert.equal(carrier.events(sse), sse);
    assert.equal(carrier.events(answer('application/json')), undefined);
  });

  it('reads OpenAI, Anthropic and Google error bodies, a bare message and text that is not JSON', () => {
    const carrier = platforms.http.bind(provider(), services);
    assert.deepEqual(carrier.readError(400, {}, '{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}'), { status: 400, message: 'bad', type: 'invalid_request_error', code: 'x' });
    assert.deepEqual(carrier.readError(529, {}, '{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'), { status: 529, message: 'busy', type: 'overloaded_error', code: undefined });
    assert.deepEqual(carrier.readError(400, {}, '{"error":{"code":400,"message":"no","status":"INVALID_ARGUMENT"}}'), { status: 400, message: 'no', type: undefined, code: 'INVALID_ARGUMENT' });
    assert.deepEqual(carrier.readError(500, {}, '{"error":"down"}'), { status: 500, message: 'down', type: undefined, code: undefined });
    assert.deepEqual(carrier.readError(502, {}, '{"message":"gateway"}'), { status: 502, message: 'gateway', type: undefined, code: undefined });
    assert.deepEqual(carrier.readError(503, {}, '<html>oops</html>'), { status: 503, message: '<html>oops</html>', type: undefined, code: undefined });
  });

  it('names where the credential is set without saying it', () => {
    assert.equal(platforms.http.bind(provider(), services).credentialSetting, 'the environment variable OPENAI_KEY (providers.p.api_key)');
    assert.equal(platforms.http.bind(provider({ apiKey: 'sk-literal' }), services).credentialSetting, 'providers.p.api_key in the llmux config');
    assert.equal(platforms.http.bind(provider({ apiKey: undefined }), services).credentialSetting, 'providers.p.api_key (none is set)');
  });
});

describe('the http platform with a pool of keys (api_keys, llmux.md section 10)', () => {
  it('sends the key chosen for the attempt, resolved as written, and names its own setting', () => {
    env['POOL_B'] = 'sk-pool-b';
    const pooled = provider({ apiKey: 'sk-pool-a', apiKeys: ['sk-pool-a', 'env:POOL_B'] });
    const carrier = platforms.http.bind(pooled, services);
    const c = call('chat');
    const request: OutgoingRequest = { call: c, target: carrier.target(c), body: '{}', headers: carrier.headers(c), apiKey: 'env:POOL_B' };
    carrier.authorise(request);
    assert.equal(request.headers['authorization'], 'Bearer sk-pool-b');
    assert.equal(apiKeySetting(pooled, 1), 'the environment variable POOL_B (providers.p.api_keys[1])');
    assert.equal(apiKeySetting(pooled, 0), 'providers.p.api_keys[0] in the llmux config');
    assert.equal(platforms.http.bind(pooled, services).credentialSetting, 'providers.p.api_keys (each of its 2 keys)');
  });
});

describe('createCarriers', () => {
  it('binds each provider once, on its platform (http when the config names none)', () => {
    const carriers = createCarriers(services);
    const p = provider();
    const carrier = carriers.of(p);
    assert.equal(carriers.of(p), carrier);
    assert.equal(carrier.provider, p);
    assert.equal(carriers.of(provider({ platform: 'http', baseUrl: 'http://127.0.0.1:9/v1' })).endpoint, 'http://127.0.0.1:9/v1');
  });
});
