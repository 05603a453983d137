/**
 * One suite, run against every dialect (as Hono's `router/common.case.test.ts` runs one suite over
 * every router): what the gateway asks of a wire format, checked the same way for each. A new
 * format gets these tests by adding its row (a {@link DialectCase}) and one line calling
 * {@link runDialectCases} in its test file: the row says how a client of the format writes a
 * request, where it puts its key, and how its answers are read back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import type { Arrival, Dialect } from '../../src/dialects/dialect.ts';
import type { TokenUsage, WireFormat } from '../../src/formats/wire.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { readCredential } from '../../src/common/credentials.ts';
import { readJsonObject } from '../../src/http/body.ts';
import { createRouter } from '../../src/http/router.ts';
import { peekUsage } from '../../src/formats/usage-peek.ts';
import { estimateRequestTokens } from '../../src/formats/estimate.ts';
import { sseEvents } from '../helpers/assemble.ts';
import type { SseEvent } from '../../src/sse/parser.ts';

/** A request as a client of the format sends it: where, with which headers, and its body. */
export interface ClientCall {
  /** A path one of the dialect's routes matches (Gemini's holds the model and method). */
  path: string;
  /** What the route gives (`model`, `method` for Gemini; none for the others). */
  params: Record<string, string>;
  query: string;
  body: Record<string, unknown>;
}

/** What the suite needs to know of one wire format. */
export interface DialectCase<F extends WireFormat> {
  dialect: Dialect<F>;
  /** The headers a client of the format sends besides its key; and headers it refuses, with the 400's words. */
  headers: IncomingHttpHeaders;
  badHeaders: Array<{ headers: IncomingHttpHeaders; error: RegExp }>;
  /** Where a client puts its llmux key: headers (and a query) carrying `key`. */
  keyIn(key: string): { headers: IncomingHttpHeaders; query: string };
  /** A request whose last user turn says `text`, for model `model`, streamed or not, capped at `maxTokens` when given. */
  request(options: { text: string; model: string; stream: boolean; maxTokens?: number }): ClientCall;
  /** Bodies the format refuses, with the field the 400 must name. */
  invalid: Array<{ body: unknown; field: RegExp }>;
  /** The estimate of `request({text: 'Hello, llmux', …})`: today's numbers, kept. */
  helloEstimate: number;
  /** Whether the body names its model (Gemini's path does instead). */
  modelInBody: boolean;
  /** A whole answer of the format as an upstream sends it, and the usage read from it. */
  answer: { body: Record<string, unknown>; usage: TokenUsage };
  /** The JSON body of `new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', 'slow down')`. */
  rateLimitedBody: unknown;
  /** What an in-stream error frame's events say: its message. */
  streamErrorMessage(events: SseEvent[]): string;
  /** The text of a whole answer of the format, and of a stream (its events). */
  answerText(answer: unknown): string;
  streamText(events: SseEvent[]): string;
}

/** The formats the estimate counted before it was each format's own. */
const LEGACY_FORMATS: ReadonlySet<WireFormat> = new Set(['chat', 'messages', 'responses']);

const USAGE: TokenUsage = { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 };

/** The request a dialect reads from a client call. */
function read<F extends WireFormat>(c: DialectCase<F>, call: ClientCall, strict = false): ReturnType<Dialect<F>['readRequest']> {
  const { dialect } = c;
  const arrival: Arrival = { forwarded: dialect.readHeaders(c.headers), strict, params: call.params, query: call.query };
  return dialect.readRequest(call.body, arrival);
}

function joined(body: string | readonly Buffer[]): string {
  return typeof body === 'string' ? body : Buffer.concat(body).toString();
}

/** Runs the suite against one dialect. */
export function runDialectCases<F extends WireFormat>(c: DialectCase<F>): void {
  const { dialect } = c;

  describe(`the ${dialect.format} dialect, as every format is checked`, () => {
    it('serves its model operation on its routes, under /v1 and at the root', () => {
      const router = createRouter<string>();
      for (const path of dialect.routes) router.add('POST', path, path);
      const call = c.request({ text: 'hi', model: 'm', stream: false });
      const matched = router.match('POST', `${call.path}${call.query === '' ? '' : `?${call.query}`}`);
      assert.equal(matched.kind, 'found');
      if (matched.kind === 'found') assert.deepEqual(matched.match.params, call.params);
      assert.ok(dialect.routes.some((path) => path.startsWith('/v1')) && dialect.routes.some((path) => !path.startsWith('/v1')));
    });

    it("reads the client's llmux key from where the format sends it", () => {
      const { headers, query } = c.keyIn('llmux-key');
      assert.equal(readCredential(headers, query, dialect.credentials).secret, 'llmux-key');
    });

    it('reads its headers, and refuses bad ones with a 400 naming the header', () => {
      assert.doesNotThrow(() => dialect.readHeaders(c.headers));
      for (const bad of c.badHeaders) {
        assert.throws(() => dialect.readHeaders(bad.headers), (err: unknown) => err instanceof GatewayError && err.status === 400 && bad.error.test(err.message));
      }
    });

    it('reads a request: its model and whether it streams, from wherever the format puts them', () => {
      for (const stream of [false, true]) {
        const request = read(c, c.request({ text: 'hi', model: 'some/model:v1', stream }));
        assert.equal(request.format, dialect.format);
        assert.equal(request.model, 'some/model:v1');
        assert.equal(request.stream, stream);
      }
    });

    it('refuses an invalid request with a 400 naming the field', () => {
      for (const { body, field } of c.invalid) {
        const call = { ...c.request({ text: 'hi', model: 'm', stream: false }), body: body as Record<string, unknown> };
        assert.throws(() => read(c, call), (err: unknown) => err instanceof GatewayError && err.status === 400 && field.test(err.message), `${JSON.stringify(body).slice(0, 80)} must be refused naming ${field}`);
      }
    });

    it('estimates its input as before, never under a quarter of the text it carries', () => {
      const hello = read(c, c.request({ text: 'Hello, llmux', model: 'm', stream: false })).body;
      assert.equal(dialect.estimate(hello), c.helloEstimate);
      if (LEGACY_FORMATS.has(dialect.format)) assert.equal(c.helloEstimate, estimateRequestTokens(hello), 'the number the format-blind estimate gave');
      const long = 'word '.repeat(20_000);
      assert.ok(dialect.estimate(read(c, c.request({ text: long, model: 'm', stream: false })).body) >= long.length / 4);
    });

    it('reads its output cap', () => {
      assert.equal(dialect.maxTokens(read(c, c.request({ text: 'hi', model: 'm', stream: false, maxTokens: 77 })).body), 77);
    });

    it("passes the client's own bytes on, with the upstream's model (and a platform's envelope) spliced in", () => {
      // An escaped character the client wrote stays as it wrote it: the bytes were not re-serialised.
      const call = c.request({ text: 'caf\u00e9 \u2192', model: 'llmux-model', stream: false });
      const text = JSON.stringify(call.body).replace('caf\u00e9', 'caf\\u00e9');
      const raw = readJsonObject(Buffer.from(text));
      const request = read(c, { ...call, body: raw.value });
      const spliced = joined(dialect.passThroughBody(request.body, 'upstream-model', raw));
      assert.ok(spliced.includes('caf\\u00e9'), 'the client\'s bytes are passed on');
      const serialised = joined(dialect.passThroughBody(request.body, 'upstream-model'));
      assert.deepEqual(JSON.parse(spliced), JSON.parse(serialised));
      const passed = JSON.parse(spliced) as Record<string, unknown>;
      if (c.modelInBody) assert.equal(passed['model'], 'upstream-model');

      const envelope = new Map<string, unknown>([['model', undefined], ['x_platform_version', 'v1']]);
      const enveloped = JSON.parse(joined(dialect.passThroughBody(request.body, 'upstream-model', raw, envelope))) as Record<string, unknown>;
      assert.deepEqual(enveloped, JSON.parse(joined(dialect.passThroughBody(request.body, 'upstream-model', undefined, envelope))));
      assert.equal(enveloped['model'], undefined);
      assert.equal(enveloped['x_platform_version'], 'v1');
    });

    it('reads the usage of a whole answer, also without parsing the rest of it', () => {
      const answer = c.answer.body;
      assert.deepEqual(dialect.readUsage(answer[dialect.usageKey]), c.answer.usage);
      assert.deepEqual(dialect.readUsage(peekUsage(Buffer.from(JSON.stringify(answer)), dialect.usageKey)), c.answer.usage);
    });

    it('renders an error in its own shape, before a stream and inside one', () => {
      const error = new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', 'slow down');
      assert.deepEqual(JSON.parse(dialect.errorBody(error)), c.rateLimitedBody);
      assert.equal(c.streamErrorMessage(sseEvents(dialect.errorFrame({ message: 'cut off', type: 'api_error' }))), 'cut off');
    });

    it("gives the echo model the last user text, and the echo model's answers read back as that text", () => {
      const body = read(c, c.request({ text: 'echo these words', model: 'm', stream: true })).body;
      assert.equal(dialect.userText(body, 100), 'echo these words');
      assert.equal(dialect.userText(body, 4), 'echo');
      const answer = { model: 'llmux-echo', text: 'echo these words', cut: false, usage: USAGE };
      assert.equal(c.answerText(JSON.parse(dialect.textAnswer(answer))), 'echo these words');
      const frames = [...dialect.textStream({ ...answer, words: ['echo', ' these', ' words'], includeUsage: true })];
      assert.equal(c.streamText(sseEvents(frames.join(''))), 'echo these words');
    });
  });
}
