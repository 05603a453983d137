/**
 * A fake provider: a real `node:http` server on 127.0.0.1, port 0, speaking both wire formats.
 * Tests queue responders; without one it answers from the recorded fixtures.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

export const FIXTURES = fileURLToPath(new URL('../fixtures/upstream/', import.meta.url));

export function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  raw: string;
}

export type Responder = (req: IncomingMessage, res: ServerResponse, seen: SeenRequest) => void | Promise<void>;

export interface FakeUpstream {
  url: string;
  requests: SeenRequest[];
  /** Responders used in order, one per request; when empty, `fallback` answers. */
  queue: Responder[];
  fallback: Responder;
  /** Whether to keep every request in `requests` (a soak turns this off). */
  record: boolean;
  /** Sockets open right now (for leak checks). */
  openSockets(): number;
  close(): Promise<void>;
}

export const respond = {
  json(status: number, body: unknown, headers: Record<string, string> = {}): Responder {
    return (_req, res) => {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(text);
    };
  },
  fixtureJson(name: string, status = 200): Responder {
    return (_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(fixture(name));
    };
  },
  /** Streams bytes, `chunkSize` at a time, one piece per event-loop turn (or every `delayMs`). */
  sse(bytes: Buffer | string, options: { chunkSize?: number; delayMs?: number; dropAfterBytes?: number } = {}): Responder {
    return async (_req, res) => {
      const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const size = options.chunkSize ?? 64;
      for (let i = 0; i < data.length; i += size) {
        if (options.dropAfterBytes !== undefined && i >= options.dropAfterBytes) {
          res.socket?.destroy();
          return;
        }
        if (res.destroyed) return;
        res.write(data.subarray(i, i + size));
        await new Promise((r) => (options.delayMs === undefined ? setImmediate(r) : setTimeout(r, options.delayMs)));
      }
      res.end();
    };
  },
  /** Never answers. */
  hang(): Responder {
    return () => {};
  },
  /** Closes the connection without an answer. */
  reset(): Responder {
    return (req) => {
      req.socket.destroy();
    };
  },
};

/** Google's Gemini fixtures (hand-made, test/fixtures/gemini/README.md). */
export const GEMINI_FIXTURES = fileURLToPath(new URL('../fixtures/gemini/', import.meta.url));

export function geminiFixture(name: string): Buffer {
  return readFileSync(join(GEMINI_FIXTURES, name));
}

/** The default: a fixture answer in the format of the path asked for. */
const defaultResponder: Responder = (_req, res, seen) => {
  if (seen.path.includes(':streamGenerateContent')) return respond.sse(geminiFixture('text.sse'))(_req, res, seen);
  if (seen.path.includes(':generateContent')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(geminiFixture('text.json'));
    return;
  }
  const stream = seen.body['stream'] === true;
  if (seen.path.endsWith('/messages')) {
    return stream ? respond.sse(fixture('anthropic-stream-text.sse'))(_req, res, seen) : respond.fixtureJson('anthropic-nonstream-text.json')(_req, res, seen);
  }
  return stream ? respond.sse(fixture('openai-stream-text-include-usage.sse'))(_req, res, seen) : respond.fixtureJson('openai-nonstream-text.json')(_req, res, seen);
};

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: SeenRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const fake: FakeUpstream = {
    url: '',
    requests,
    queue: [],
    fallback: defaultResponder,
    record: true,
    openSockets: () => sockets.size,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      // An answer held open keeps this closure: its request's bytes go now (test/resilience/idle-streams.test.ts measures what stays).
      chunks.length = 0;
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch { /* keep {} */ }
      const seen: SeenRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, raw };
      if (fake.record) requests.push(seen);
      const responder = fake.queue.shift() ?? fake.fallback;
      void Promise.resolve(responder(req, res, seen)).catch(() => res.destroy());
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
