/**
 * Fake upstreams that enforce each provider's rule about the opaque state of its earlier answers
 * exactly as the real one (llmux.md section 11; the error texts are the providers' own, as users
 * report them): each plays a three-turn tool loop (two parallel calls, then one call, then the
 * answer: the step is the number of assistant tool-call turns in the history) and refuses a
 * request that does not give its state back.
 *
 * - `anthropic` (messages): signed thinking before the calls (an HMAC of the text: any other
 *   signature is "Invalid `signature` in `thinking` block"), a redacted block on the second turn;
 *   with thinking on, the assistant turn a request continues must start with one. At most four
 *   cache_control breakpoints; cache reads reported for a prefix it saw before (./fake-stateful-messages.ts).
 * - `gemini` (Google's OpenAI-compatible surface), `deepseek`, `openrouter`: ./fake-stateful-chat.ts.
 * - `responses` (OpenAI's Responses API): ./fake-stateful-responses.ts.
 * - `gemini-native` (Gemini 3 on Google's own format): ./fake-stateful-gemini.ts.
 *
 * Every request is kept (`requests`) with the refusals sent (`refusals`), so a test can say both
 * that the loop finished and that nothing was refused on the way.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { serveMessages } from './fake-stateful-messages.ts';
import { serveChat } from './fake-stateful-chat.ts';
import { serveResponses } from './fake-stateful-responses.ts';
import { serveGemini } from './fake-stateful-gemini.ts';

export type Personality = 'anthropic' | 'gemini' | 'deepseek' | 'openrouter' | 'responses' | 'gemini-native';

/** Google's documented placeholder signature, which Gemini takes where it issued none. */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export interface StatefulRequest {
  path: string;
  body: Record<string, unknown>;
}

export interface Refusal {
  status: number;
  message: string;
}

/** The tool every call of the loop calls, and its input (default: `lookup` with `{q}`). */
export interface FakeTool {
  name: string;
  input: Record<string, unknown>;
}

/** What a personality keeps between requests: what it issued, and counters for fresh ids. */
export interface FakeMemory {
  /** The tool the loop's calls call; undefined: `lookup` with a different `q` each. */
  tool: FakeTool | undefined;
  /** Ids made so far, for fresh ones. */
  next(prefix: string): string;
  /** A signature of `text` only this fake makes. */
  sign(text: string): string;
  /** Whatever the personality remembers of its answers, by its own keys. */
  issued: Map<string, unknown>;
  /** Prefixes seen with cache breakpoints (anthropic). */
  cached: Set<string>;
}

/** One answer: a status, and a JSON body or SSE text. */
export interface FakeAnswer {
  status: number;
  json?: unknown;
  sse?: string;
}

export interface StatefulFake {
  url: string;
  personality: Personality;
  requests: StatefulRequest[];
  refusals: Refusal[];
  /** The next this many requests are answered 503 (the provider overloaded), for fallbacks. */
  unavailable: number;
  close(): Promise<void>;
}

/** The answer to a refused request, recorded. */
export function refuse(fake: { refusals: Refusal[] }, status: number, message: string, json: unknown): FakeAnswer {
  fake.refusals.push({ status, message });
  return { status, json };
}

/** The step of the tool loop: how many tool-call turns the history holds. */
export function stepOf(turns: number): 0 | 1 | 2 {
  return turns >= 2 ? 2 : turns === 1 ? 1 : 0;
}

/** Splits `text` in two, for answers that stream a field in pieces. */
export function halves(text: string): [string, string] {
  const half = Math.max(1, Math.floor(text.length / 2));
  return [text.slice(0, half), text.slice(half)];
}

/** The name and input of the loop's call `q` (`a`, `b`, `c`). */
export function callOf(memory: FakeMemory, q: string): FakeTool {
  return memory.tool ?? { name: 'lookup', input: { q } };
}

/** Starts a fake of `personality` on 127.0.0.1; `tool`: what its calls call (a real client's tool). */
export async function startStatefulFake(personality: Personality, options: { tool?: FakeTool } = {}): Promise<StatefulFake> {
  let counter = 0;
  const memory: FakeMemory = {
    tool: options.tool,
    next: (prefix) => `${prefix}${(counter += 1)}`,
    sign: (text) => createHmac('sha256', `fake-${personality}-secret`).update(text).digest('base64'),
    issued: new Map(),
    cached: new Set(),
  };
  const sockets = new Set<import('node:net').Socket>();
  const fake: StatefulFake = {
    url: '',
    personality,
    requests: [],
    refusals: [],
    unavailable: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch { /* an empty body */ }
      const path = req.url ?? '';
      fake.requests.push({ path, body });
      if (fake.unavailable > 0) {
        fake.unavailable -= 1;
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }));
        return;
      }
      const answer = personality === 'anthropic' ? serveMessages(body, memory, fake)
        : personality === 'responses' ? serveResponses(body, memory, fake)
        : personality === 'gemini-native' ? serveGemini(path, body, memory, fake)
        : serveChat(personality, body, memory, fake);
      if (answer.sse !== undefined) {
        res.writeHead(answer.status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.end(answer.sse);
      } else {
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.json));
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

/** `value` as an array of records (anything else: none). */
export function list(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? value.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null && !Array.isArray(item)) : [];
}

/** A field of a record, as a record. */
export function field(value: unknown, key: string): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const found = (value as Record<string, unknown>)[key];
  return typeof found === 'object' && found !== null && !Array.isArray(found) ? (found as Record<string, unknown>) : undefined;
}

/** An SSE frame. */
export function frame(data: unknown, event?: string): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}
