import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { sendWithFallbacks } from '../../src/providers/attempts.ts';
import type { AttemptContext, AttemptOptions, HeldRequest } from '../../src/providers/attempts.ts';
import { createCancellation } from '../../src/providers/upstream.ts';
import type { Transport, UpstreamRequest, UpstreamResponse } from '../../src/providers/upstream.ts';
import { createRedactor } from '../../src/providers/redact.ts';
import { platforms } from '../../src/platforms/index.ts';
import type { Carrier, PlatformServices } from '../../src/platforms/index.ts';
import { readJsonObject } from '../../src/http/body.ts';
import { GatewayError } from '../../src/common/errors.ts';
import type { ModelEntry, ProviderConfig } from '../../src/config/types.ts';
import type { ClientRequestOf } from '../../src/formats/wire.ts';
import type { Attempt } from '../../src/gateway/request-record.ts';
import { createRouter } from '../../src/routing/index.ts';

const services: PlatformServices = { secret: (written) => written, env: {}, now: () => 0 };
const OPENAI: ProviderConfig = { id: 'fake-openai', format: 'chat', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-upstream', keyless: false, headers: {} };
const ANTHROPIC: ProviderConfig = { id: 'fake-anthropic', format: 'messages', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-ant-upstream', keyless: false, headers: {} };

function model(id: string, provider: string): ModelEntry {
  return {
    id, provider, upstream_id: `${id}-upstream`, display_name: id, owned_by: provider, type: 'chat', created_at: '2025-01-01T00:00:00.000Z',
    context_length: 100_000, max_output_tokens: 1_000,
    capabilities: { supports_function_calling: true, supports_vision: false, supports_streaming: true, supports_structured_output: false },
    pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
    reasoning: false, fallbacks: [], max_tokens_param: 'max_tokens', replay_reasoning: false,
  };
}

function response(status: number, body: string, headers: Record<string, string> = {}): UpstreamResponse {
  return Object.assign(Readable.from([Buffer.from(body)]), { statusCode: status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A transport that answers from a script and keeps what it was sent. */
function scripted(answers: UpstreamResponse[]): Transport & { sent: UpstreamRequest[] } {
  const sent: UpstreamRequest[] = [];
  return {
    sent,
    send(request) {
      sent.push(request);
      const next = answers.shift();
      return next === undefined ? Promise.reject(new Error('no more answers')) : Promise.resolve(next);
    },
  };
}

interface Setup {
  transport: Transport;
  /** Overrides of the http carrier, per provider. */
  carrier?: (carrier: Carrier) => Carrier;
  providers?: ProviderConfig[];
}

function context({ transport, carrier = (c) => c, providers = [OPENAI, ANTHROPIC] }: Setup): AttemptContext & { slept: number[] } {
  const slept: number[] = [];
  return {
    slept,
    model: () => undefined,
    provider: (id) => providers.find((p) => p.id === id),
    carriers: { of: (p) => carrier(platforms.http.bind(p, services)) },
    router: createRouter({ models: [], provider: (id) => providers.find((p) => p.id === id), hasCredential: () => true }),
    transport,
    retry: { attempts: 3, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 5_000 },
    connectTimeoutMs: 1_000,
    firstByteTimeoutMs: 1_000,
    idleTimeoutMs: 1_000,
    redact: createRedactor(['sk-upstream', 'sk-ant-upstream']),
    now: () => 0,
    random: () => 0.5,
    // The backoff's clock: nothing waits in this test.
    sleep(ms) {
      slept.push(ms);
      return Promise.resolve();
    },
  };
}

/** A chat request held for the attempts, parsed from its bytes as the pipeline does. */
function held(body: Record<string, unknown>): HeldRequest<'chat'> {
  const raw = readJsonObject(Buffer.from(JSON.stringify(body)));
  const request = { format: 'chat', body: raw.value, model: String(body['model']), stream: body['stream'] === true, raw } as ClientRequestOf<'chat'>;
  return { request };
}

function options(attempts: Attempt[] = []): AttemptOptions<'chat'> {
  return { turn: undefined, cancellation: createCancellation(), onAttempt: (attempt) => attempts.push(attempt), onWarning: () => {}, keyId: 'key_0123456789abcdef' };
}

const bodyOf = (request: UpstreamRequest | undefined): string => {
  const body = request?.body;
  return typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString() : Buffer.concat(body ?? []).toString();
};

describe('the attempts', () => {
  it("back off on the context's clock: exponential with full jitter, an upstream's retry-after as a floor", async () => {
    const transport = scripted([
      response(503, '{"error":{"message":"busy"}}'),
      response(503, '{"error":{"message":"busy"}}', { 'retry-after': '2' }),
      response(200, '{"id":"x"}'),
    ]);
    const ctx = context({ transport });
    const attempts: Attempt[] = [];
    const answered = await sendWithFallbacks(ctx, held({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }), model('gpt-test', 'fake-openai'), options(attempts));
    assert.equal(answered.response.statusCode, 200);
    assert.deepEqual(attempts.map((a) => a.status), [503, 503, 200]);
    // 100 ms then 200 ms ceilings at random 0.5 (three quarters of each); the second is raised to the 2 s the upstream asked for.
    assert.deepEqual(ctx.slept, [75, 2_000]);
  });

  it('send the platform\'s endpoint, path and authorised headers, and the client\'s bytes with the upstream model spliced in', async () => {
    const transport = scripted([response(200, '{}')]);
    const text = '{"model":"gpt-test","messages":[{"role":"user","content":"caf\u00e9"}],"temperature":0.5}';
    const raw = readJsonObject(Buffer.from(text));
    const request = { format: 'chat', body: raw.value, model: 'gpt-test', stream: false, raw } as ClientRequestOf<'chat'>;
    const answered = await sendWithFallbacks(context({ transport }), { request }, model('gpt-test', 'fake-openai'), options());
    const sent = transport.sent[0];
    assert.equal(sent?.endpoint, 'http://127.0.0.1:9/v1');
    assert.equal(sent?.path, '/chat/completions');
    assert.deepEqual(sent?.headers, { accept: 'application/json', authorization: 'Bearer sk-upstream' });
    assert.equal(bodyOf(sent), text.replace('"gpt-test"', '"gpt-test-upstream"'));
    assert.equal(answered.carrier.provider, OPENAI);
  });

  it('make one more attempt, not counted, when the platform says the credential went stale; once only', async () => {
    const transport = scripted([response(401, '{"error":{"message":"expired"}}'), response(200, '{}')]);
    const renewals: Array<[number, string | undefined]> = [];
    let token = 0;
    const ctx = context({
      transport,
      carrier: (carrier) => ({
        ...carrier,
        authorise: (request) => {
          request.headers['authorization'] = `Bearer token-${++token}`;
          return undefined;
        },
        renew: (status, request) => {
          renewals.push([status, request.headers['authorization']]);
          return status === 401;
        },
      }),
    });
    ctx.retry = { ...ctx.retry, attempts: 1 };
    const answered = await sendWithFallbacks(ctx, held({ model: 'gpt-test', messages: [] }), model('gpt-test', 'fake-openai'), options());
    assert.equal(answered.response.statusCode, 200, 'a stale credential gets its attempt even with one attempt configured');
    assert.deepEqual(renewals, [[401, 'Bearer token-1']]);
    assert.deepEqual(transport.sent.map((r) => r.headers['authorization']), ['Bearer token-1', 'Bearer token-2']);

    const again = scripted([response(401, '{}'), response(401, '{}'), response(200, '{}')]);
    // A second refusal is not renewed again: with no other key to try, it is llmux's credential that
    // was refused (502 upstream_auth_failed), never the client's.
    await assert.rejects(
      sendWithFallbacks({ ...ctx, transport: again }, held({ model: 'gpt-test', messages: [] }), model('gpt-test', 'fake-openai'), options()),
      (err: unknown) => err instanceof GatewayError && err.status === 502 && err.code === 'upstream_auth_failed',
    );
    assert.equal(again.sent.length, 2);
  });

  it('refuse a renewed attempt whose credential cannot be made as the first would be, and record it', async () => {
    const transport = scripted([response(401, '{"error":{"message":"expired"}}'), response(200, '{}')]);
    let calls = 0;
    const attempts: Attempt[] = [];
    const ctx = context({
      transport,
      carrier: (carrier) => ({
        ...carrier,
        authorise: (request) => {
          if (++calls > 1) throw new Error('the token endpoint refused sk-upstream');
          request.headers['authorization'] = 'Bearer token-1';
          return undefined;
        },
        renew: () => true,
      }),
    });
    ctx.retry = { ...ctx.retry, attempts: 1 };
    await assert.rejects(
      sendWithFallbacks(ctx, held({ model: 'gpt-test', messages: [] }), model('gpt-test', 'fake-openai'), options(attempts)),
      (err: unknown) => err instanceof GatewayError && err.status === 502 && err.code === 'upstream_auth_failed' && !err.message.includes('sk-upstream'),
    );
    assert.equal(transport.sent.length, 1);
    assert.deepEqual(attempts.map((a) => a.status ?? a.error), [401, 'upstream_auth_failed']);
  });

  it('wait for an authorisation that must wait (a token being fetched), before each attempt', async () => {
    const transport = scripted([response(500, '{}'), response(200, '{}')]);
    let tokens = 0;
    const ctx = context({
      transport,
      carrier: (carrier) => ({
        ...carrier,
        authorise: (request) => new Promise<void>((resolve) => setImmediate(() => {
          request.headers['authorization'] = `Bearer token-${++tokens}`;
          resolve();
        })),
      }),
    });
    await sendWithFallbacks(ctx, held({ model: 'gpt-test', messages: [] }), model('gpt-test', 'fake-openai'), options());
    assert.deepEqual(transport.sent.map((r) => r.headers['authorization']), ['Bearer token-1', 'Bearer token-2']);
  });

  it('answer a platform that cannot authorise with 502 upstream_auth_failed naming the provider and its setting, never the secret', async () => {
    for (const fails of [
      (): undefined => { throw new Error('the token endpoint refused sk-upstream'); },
      (): Promise<void> => Promise.reject(new Error('the token endpoint refused sk-upstream')),
    ]) {
      const transport = scripted([response(200, '{}')]);
      const attempts: Attempt[] = [];
      const ctx = context({ transport, carrier: (carrier) => ({ ...carrier, authorise: fails }) });
      const error = await sendWithFallbacks(ctx, held({ model: 'gpt-test', messages: [] }), model('gpt-test', 'fake-openai'), options(attempts)).then(
        () => assert.fail('authorised'),
        (err: unknown) => err,
      );
      assert.ok(error instanceof GatewayError);
      assert.equal(error.status, 502);
      assert.equal(error.code, 'upstream_auth_failed');
      assert.match(error.message, /Provider "fake-openai" could not be authorised/);
      assert.match(error.message, /providers\.fake-openai\.api_key/);
      assert.doesNotMatch(error.message, /sk-upstream/);
      assert.equal(transport.sent.length, 0);
      assert.deepEqual(attempts.map((a) => a.error), ['upstream_auth_failed']);
    }
  });

  it("put a same-format body in the platform's envelope, and a translated one too", async () => {
    // Bedrock's messages envelope: no model, no stream, its anthropic_version.
    const bedrockLike = (carrier: Carrier): Carrier => ({
      ...carrier,
      target: (call) => `/model/${call.upstreamId}/invoke${call.stream ? '-with-response-stream' : ''}`,
      envelope: () => new Map<string, unknown>([['model', undefined], ['stream', undefined], ['anthropic_version', 'bedrock-2023-05-31']]),
    });
    const claude = model('claude-test', 'fake-anthropic');

    const passed = scripted([response(200, '{}')]);
    const text = '{"model":"claude-test","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}';
    const raw = readJsonObject(Buffer.from(text));
    const messages = { format: 'messages', body: raw.value, model: 'claude-test', stream: true, raw } as ClientRequestOf<'messages'>;
    await sendWithFallbacks(context({ transport: passed, carrier: bedrockLike }), { request: messages }, claude, { ...options(), turn: undefined } as AttemptOptions<'messages'>);
    assert.equal(passed.sent[0]?.path, '/model/claude-test-upstream/invoke-with-response-stream');
    assert.equal(bodyOf(passed.sent[0]), '{"max_tokens":10,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"bedrock-2023-05-31"}');

    const translated = scripted([response(200, '{}')]);
    await sendWithFallbacks(context({ transport: translated, carrier: bedrockLike }), held({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }), claude, options());
    const body = JSON.parse(bodyOf(translated.sent[0])) as Record<string, unknown>;
    assert.equal(body['model'], undefined);
    assert.equal(body['anthropic_version'], 'bedrock-2023-05-31');
    // The translated body carries the prompt-cache breakpoint llmux adds (llmux.md section 11).
    assert.deepEqual(body['messages'], [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }]);
  });
});

describe('the attempts over deployments and provider keys (llmux.md section 10)', () => {
  const POOL: ProviderConfig = { id: 'pool', format: 'chat', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-pool-a', apiKeys: ['sk-pool-a', 'sk-pool-b'], keyless: false, headers: {} };
  const spread = (id: string, upstreams: Array<[string, string]>): ModelEntry => ({
    ...model(id, upstreams[0]![0]),
    upstream_id: upstreams[0]![1],
    deployments: upstreams.map(([provider, upstreamId]) => ({ provider, upstream_id: upstreamId, weight: 1 })),
  });

  function routed(transport: Transport, models: ModelEntry[], providers = [OPENAI, ANTHROPIC, POOL]): AttemptContext & { slept: number[] } {
    const ctx = context({ transport, providers });
    return { ...ctx, router: createRouter({ models, provider: (id) => providers.find((p) => p.id === id), hasCredential: () => true, random: () => 0 }) };
  }

  it('send the chosen key of a pool to the platform, and go on at once with the other key after a 401', async () => {
    const keyed = model('pooled', 'pool');
    const transport = scripted([response(401, '{"error":{"message":"bad key"}}'), response(200, '{}')]);
    const ctx = routed(transport, [keyed]);
    const attempts: Attempt[] = [];
    const answered = await sendWithFallbacks(ctx, held({ model: 'pooled', messages: [] }), keyed, options(attempts));
    assert.deepEqual(transport.sent.map((r) => r.headers['authorization']), ['Bearer sk-pool-a', 'Bearer sk-pool-b']);
    assert.deepEqual(ctx.slept, [], 'another key is no repeat: no backoff');
    assert.equal(answered.key?.label, 'api_keys[1]');
    assert.deepEqual(attempts.map((a) => `${a.key}:${a.status}`), ['api_keys[0]:401', 'api_keys[1]:200']);
    answered.end();
  });

  it('move to the next deployment without a backoff, and hold the answer\'s lease until it is ended, once', async () => {
    const two = spread('two', [['fake-openai', 'up-1'], ['fake-openai', 'up-2']]);
    const transport = scripted([response(503, '{}'), response(200, '{}')]);
    const ctx = routed(transport, [two]);
    const answered = await sendWithFallbacks(ctx, held({ model: 'two', messages: [] }), two, options());
    assert.deepEqual(transport.sent.map((r) => JSON.parse(bodyOf(r)).model), ['up-1', 'up-2']);
    assert.deepEqual(ctx.slept, []);
    const inFlight = (): number[] => ctx.router.snapshot().map((d) => d.inFlight);
    assert.deepEqual(inFlight(), [0, 1], 'the failed attempt\'s lease is freed, the answer\'s held');
    answered.end({ tokens: 10 });
    answered.end({ tokens: 10 });
    assert.deepEqual(inFlight(), [0, 0]);
  });

  it('answer our 429 with the earliest retry-after when every deployment rests', async () => {
    const two = spread('two', [['fake-openai', 'up-1'], ['fake-openai', 'up-2']]);
    const ctx = routed(scripted([
      response(429, '{}', { 'retry-after': '9' }),
      response(503, '{}', { 'retry-after': '4' }),
    ]), [two]);
    const first = await sendWithFallbacks(ctx, held({ model: 'two', messages: [] }), two, options()).catch((err: unknown) => err);
    assert.ok(first instanceof GatewayError && first.code === 'upstream_error', 'both tried: the last failure is passed on');
    const refused = await sendWithFallbacks(ctx, held({ model: 'two', messages: [] }), two, options()).catch((err: unknown) => err);
    assert.ok(refused instanceof GatewayError);
    assert.equal(refused.status, 429);
    assert.equal(refused.code, 'rate_limit_exceeded');
    assert.equal(refused.headers?.['retry-after'], '4');
  });

  it('skip a deployment whose provider cannot take the request, and refuse it when none of the model\'s can, fallbacks untried', async () => {
    // n > 1 is not expressible to a messages upstream.
    const mixed = spread('mixed', [['fake-anthropic', 'claude-up'], ['fake-openai', 'gpt-up']]);
    const transport = scripted([response(200, '{}')]);
    const ctx = routed(transport, [mixed]);
    await sendWithFallbacks(ctx, held({ model: 'mixed', n: 2, messages: [{ role: 'user', content: 'hi' }] }), mixed, options());
    assert.deepEqual(transport.sent.map((r) => r.path), ['/chat/completions']);

    const only = { ...model('only', 'fake-anthropic'), fallbacks: ['gpt-test'] };
    const none = scripted([response(200, '{}')]);
    const fallbackCtx = { ...routed(none, [only]), model: (id: string) => (id === 'gpt-test' ? model('gpt-test', 'fake-openai') : undefined) };
    const error = await sendWithFallbacks(fallbackCtx, held({ model: 'only', n: 2, messages: [{ role: 'user', content: 'hi' }] }), only, options()).catch((err: unknown) => err);
    assert.ok(error instanceof GatewayError && error.status === 400, String(error));
    assert.equal(none.sent.length, 0);
  });
});
