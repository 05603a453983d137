/**
 * Every answer a test gateway writes, checked against the official schemas (./schemas.ts) as it
 * leaves. The check sits on the gateway's HTTP server, before its handler, so answers read by
 * fetch, an SDK or a raw socket are all seen, and every test started with ./gateway.ts has it.
 *
 * What is checked, by route (under `/v1` and at the root):
 * - `POST /chat/completions`: the completion, each chunk, an in-stream error (OpenAI);
 * - `POST /responses`, `GET /responses/{id}`, `…/input_items`, `POST /responses/input_tokens`:
 *   the response, each event (its `event:` name equal to its `type`, `sequence_number` counting up
 *   from 0 by one: responses.md "Stream"), the item list, the count (OpenAI);
 * - `POST /messages`, `…/count_tokens`: the message, each event (name equal to `type`), the
 *   count (Anthropic);
 * - `GET /models`, `GET /models/{id}`: OpenAI's list and model, or Anthropic's for a client that
 *   sends `anthropic-version`; a Gemini client's (a `x-goog-api-key` or `?key=`) is not checked;
 * - every error body: Anthropic's on the messages routes, OpenAI's elsewhere, but Gemini's routes.
 * Other answers (pages, usage, health, Gemini's formats) have no official schema here.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createSseParser } from '../../src/sse/parser.ts';
import { eventProblems, problemsOf } from './schemas.ts';

type Json = Record<string, unknown>;

/** What a route answers, as far as the schemas go. */
type Route =
  | 'chat' | 'messages' | 'count_tokens' | 'responses' | 'response' | 'input_items' | 'input_tokens'
  | 'models' | 'model' | 'anthropic_models' | 'anthropic_model' | 'anthropic_other' | 'other';

/** Answers larger than this are not kept for checking (none of the e2e tests' come near). */
const MAX_CHECKED_BYTES = 8 * 1024 * 1024;

export interface AnswerWatch {
  /** Answers checked so far. */
  checked: number;
  /** While above 0, requests that arrive are not checked (see TestGateway `replaying`). */
  paused: number;
}

/** Checks each answer `server` writes from now on; `onProblem` gets one line per problem. */
export function watchAnswers(server: Server, onProblem: (line: string) => void): AnswerWatch {
  const watch: AnswerWatch = { checked: 0, paused: 0 };
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const route = watch.paused > 0 ? undefined : routeOf(req);
    if (route === undefined) return;
    const chunks: Buffer[] = [];
    let bytes = 0;
    const keep = (chunk: unknown, encoding: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || bytes > MAX_CHECKED_BYTES) return;
      // A Buffer is kept as it is (writers do not change what they wrote), not copied.
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      bytes += buffer.length;
      chunks.push(buffer);
    };
    const writable = res as unknown as { write: (...args: unknown[]) => boolean; end: (...args: unknown[]) => ServerResponse; writeHead: (...args: unknown[]) => ServerResponse };
    const write = writable.write;
    const end = writable.end;
    const writeHead = writable.writeHead;
    // Headers given to writeHead alone are not readable from the response afterwards.
    let contentType: string | undefined;
    let requestId: string | undefined;
    writable.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      const headers = args.find((arg, index) => index > 0 && typeof arg === 'object' && arg !== null);
      if (headers !== undefined && !Array.isArray(headers)) {
        for (const [name, value] of Object.entries(headers as Json)) {
          if (name.toLowerCase() === 'content-type') contentType = String(value);
          if (name.toLowerCase() === 'x-request-id') requestId = String(value);
        }
      }
      return writeHead.apply(this, args);
    };
    writable.write = function (this: ServerResponse, ...args: unknown[]) {
      keep(args[0], args[1]);
      return write.apply(this, args);
    };
    writable.end = function (this: ServerResponse, ...args: unknown[]) {
      keep(args[0], args[1]);
      return end.apply(this, args);
    };
    let done = false;
    const check = (finished: boolean): void => {
      if (done || !res.headersSent || bytes > MAX_CHECKED_BYTES) return;
      done = true;
      watch.checked += 1;
      const where = `${req.method ?? 'GET'} ${req.url ?? '/'} (${requestId ?? String(res.getHeader('x-request-id'))}, ${res.statusCode})`;
      for (const line of problemsOfAnswer(route, res, contentType ?? String(res.getHeader('content-type') ?? ''), Buffer.concat(chunks), finished)) onProblem(`${where}: ${line}`);
    };
    res.once('finish', () => check(true));
    // A stream the client left: its complete events are still checked.
    res.once('close', () => check(false));
  });
  return watch;
}

/** The route's kind, or undefined for what is not checked at all (Gemini's routes and clients). */
function routeOf(req: IncomingMessage): Route | undefined {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = (query === -1 ? url : url.slice(0, query)).replace(/^\/v1(?=\/)/, '');
  if (path.startsWith('/v1beta/') || path.includes(':')) return undefined;
  const method = req.method ?? 'GET';
  if (path === '/models' || path.startsWith('/models/')) {
    const gemini = req.headers['x-goog-api-key'] !== undefined || (query !== -1 && new URLSearchParams(url.slice(query + 1)).has('key'));
    if (gemini) return undefined;
    const anthropic = req.headers['anthropic-version'] !== undefined || req.headers['alt-version'] !== undefined;
    if (method !== 'GET') return anthropic ? 'anthropic_other' : 'other';
    if (path === '/models') return anthropic ? 'anthropic_models' : 'models';
    return anthropic ? 'anthropic_model' : 'model';
  }
  if (path === '/messages' || path === '/messages/count_tokens') {
    if (method !== 'POST') return 'anthropic_other';
    return path === '/messages' ? 'messages' : 'count_tokens';
  }
  if (method === 'POST') {
    if (path === '/chat/completions') return 'chat';
    if (path === '/responses') return 'responses';
    if (path === '/responses/input_tokens') return 'input_tokens';
  }
  if (method === 'GET' && /^\/responses\/[^/]+\/input_items$/.test(path)) return 'input_items';
  if (method === 'GET' && /^\/responses\/[^/]+$/.test(path)) return 'response';
  return 'other';
}

/** Routes whose errors are Anthropic's: the messages routes, and the model list to an Anthropic client. */
const ANTHROPIC_ROUTES: ReadonlySet<Route> = new Set(['messages', 'count_tokens', 'anthropic_models', 'anthropic_model', 'anthropic_other']);

/** The whole answer's schema by route, for a success. */
const WHOLE: Partial<Record<Route, ['openai' | 'anthropic', string]>> = {
  chat: ['openai', 'CreateChatCompletionResponse'],
  responses: ['openai', 'Response'],
  response: ['openai', 'Response'],
  input_items: ['openai', 'ResponseItemList'],
  input_tokens: ['openai', 'TokenCountsResource'],
  models: ['openai', 'ListModelsResponse'],
  model: ['openai', 'Model'],
  messages: ['anthropic', 'Message'],
  count_tokens: ['anthropic', 'MessageTokensCount'],
  anthropic_models: ['anthropic', 'ModelInfoPage'],
  anthropic_model: ['anthropic', 'ModelInfo'],
};

function problemsOfAnswer(route: Route, res: ServerResponse, type: string, body: Buffer, finished: boolean): string[] {
  if (type.startsWith('text/event-stream')) return streamProblems(route, body, finished);
  if (!type.startsWith('application/json') || !finished) return [];
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return [`the body is not JSON: ${body.toString('utf8').slice(0, 80)}`];
  }
  if (res.statusCode >= 400) return errorProblems(ANTHROPIC_ROUTES.has(route) ? 'anthropic' : 'openai', value);
  const schema = WHOLE[route];
  return schema === undefined ? [] : problemsOf(schema[0], schema[1], value);
}

/** The problems of a whole answer of a client format (the model operation's success). */
export function answerProblems(format: 'chat' | 'messages' | 'responses', answer: unknown): string[] {
  const [side, name] = WHOLE[format] as ['openai' | 'anthropic', string];
  return problemsOf(side, name, answer);
}

/** The problems of a whole stream of a client format: its framing and each event. */
export function streamAnswerProblems(format: 'chat' | 'messages' | 'responses', stream: string): string[] {
  return streamProblems(format, Buffer.from(stream), true);
}

function errorProblems(side: 'openai' | 'anthropic', value: unknown): string[] {
  return problemsOf(side, 'ErrorResponse', value);
}

function streamProblems(route: Route, body: Buffer, finished: boolean): string[] {
  const problems: string[] = [];
  let sequence = 0;
  const parser = createSseParser({
    onEvent: (event) => {
      if (route === 'chat' && event.data === '[DONE]') return;
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        problems.push(`an event is not JSON: ${event.data.slice(0, 80)}`);
        return;
      }
      const type = (data as Json | null)?.['type'];
      if (route === 'chat') {
        problems.push(...((data as Json | null)?.['error'] !== undefined ? errorProblems('openai', data) : problemsOf('openai', 'CreateChatCompletionStreamResponse', data)));
        return;
      }
      if (event.event !== type) problems.push(`event "${String(event.event)}" carries type ${JSON.stringify(type)}`);
      if (route === 'messages') {
        if (type === 'ping') {
          // Anthropic's keep-alive, which the SDK's types leave out; its docs show it whole.
          if (JSON.stringify(data) !== '{"type":"ping"}') problems.push(`a ping carries more than its type: ${event.data}`);
        } else problems.push(...(type === 'error' ? errorProblems('anthropic', data) : eventProblems('anthropic', 'RawMessageStreamEvent', data)));
        return;
      }
      if (route === 'responses') {
        const number = (data as Json | null)?.['sequence_number'];
        if (number !== sequence) problems.push(`${String(type)} has sequence_number ${String(number)}, not ${sequence}`);
        sequence += 1;
        problems.push(...eventProblems('openai', 'ResponseStreamEvent', data));
        return;
      }
      problems.push(`an event stream on a route that has none: ${event.data.slice(0, 80)}`);
    },
  });
  parser.feed(body);
  // A stream the client left may stop inside an event: only whole ones are checked.
  if (finished) parser.end();
  return problems;
}
