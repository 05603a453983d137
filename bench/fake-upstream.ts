/**
 * The benchmark's provider: one `node:http` server on 127.0.0.1 speaking both wire formats, with
 * answers shaped like the recorded ones in test/fixtures/upstream (same fields, same sizes).
 *
 *   POST …/chat/completions   OpenAI chat: JSON, or a 100-event stream
 *   POST …/messages           Anthropic messages: JSON, or a 100-event stream
 *   POST /slow/…              the same streams, but held open: the first event at once, then one
 *                             more every `--drip-ms` until the client goes away
 *   GET /__bench/stats        `{"connections":N,"requests":N}` accepted so far, so the runner can
 *                             see whether a proxy reuses its upstream connections
 *
 * Streams are written one event per event-loop turn (`setImmediate`), so a proxy sees them arrive
 * as separate reads, as it would from a real provider. Everything is built once at start-up: the
 * upstream's own CPU shares a core with the load generator and must stay small.
 *
 * Run as a process: `node fake-upstream.js [--port N] [--drip-ms N]`; prints `{"port":N}` on stdout.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { isEntryPoint } from './entry.ts';

/** Events per stream, the terminator (`[DONE]` / `message_stop`) included. */
export const STREAM_EVENTS = 100;

const WORDS = [' The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', ',', ' and', ' then', ' it', ' naps', ' in', ' the', ' sun', '.'];
const CHAT_ID = 'chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL';
const CHAT_MODEL = 'gpt-4o-2024-08-06';
const MESSAGE_ID = 'msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK';
const MESSAGES_MODEL = 'claude-sonnet-4-5-20250929';
const CREATED = 1727346168;

function chatChunk(delta: Record<string, unknown>, finishReason: string | null): string {
  const chunk = {
    id: CHAT_ID,
    object: 'chat.completion.chunk',
    created: CREATED,
    model: CHAT_MODEL,
    system_fingerprint: 'fp_5050236cbd',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function chatContentChunk(i: number): string {
  return chatChunk({ content: WORDS[i % WORDS.length] }, null);
}

/**
 * The OpenAI chat stream, one string per write: a role chunk, content chunks, the finish chunk,
 * the usage chunk (only when the request asked with `stream_options.include_usage`; otherwise one
 * more content chunk keeps the count), then `data: [DONE]`. Always {@link STREAM_EVENTS} events.
 */
export function chatStreamEvents(includeUsage: boolean): string[] {
  const events = [chatChunk({ role: 'assistant', content: '', refusal: null }, null)];
  const contentCount = STREAM_EVENTS - 4 + (includeUsage ? 0 : 1);
  for (let i = 0; i < contentCount; i++) events.push(chatContentChunk(i));
  events.push(chatChunk({}, 'stop'));
  if (includeUsage) {
    const usage = { prompt_tokens: 14, completion_tokens: contentCount, total_tokens: 14 + contentCount, completion_tokens_details: { reasoning_tokens: 0 } };
    events.push(`data: ${JSON.stringify({ id: CHAT_ID, object: 'chat.completion.chunk', created: CREATED, model: CHAT_MODEL, system_fingerprint: 'fp_5050236cbd', choices: [], usage })}\n\n`);
  }
  events.push('data: [DONE]\n\n');
  return events;
}

function messagesEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

function messagesDeltaEvent(i: number): string {
  return messagesEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: WORDS[i % WORDS.length] } });
}

/**
 * The Anthropic messages stream, one string per write: message_start, content_block_start, text
 * deltas, content_block_stop, message_delta, message_stop. Always {@link STREAM_EVENTS} events.
 */
export function messagesStreamEvents(): string[] {
  const deltaCount = STREAM_EVENTS - 5;
  const events = [
    messagesEvent('message_start', {
      message: {
        id: MESSAGE_ID, type: 'message', role: 'assistant', content: [], model: MESSAGES_MODEL, stop_reason: null, stop_sequence: null,
        usage: { input_tokens: 14, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' },
      },
    }),
    messagesEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (let i = 0; i < deltaCount; i++) events.push(messagesDeltaEvent(i));
  events.push(messagesEvent('content_block_stop', { index: 0 }));
  events.push(messagesEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: deltaCount } }));
  events.push(messagesEvent('message_stop', {}));
  return events;
}

const ANSWER_TEXT = "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or app like the Weather Channel or a local news station.";

/** A non-streamed OpenAI chat completion, pretty-printed as the API sends it. */
export function chatJsonBody(): Buffer {
  return Buffer.from(JSON.stringify({
    id: CHAT_ID.replace('w0', 'va'),
    object: 'chat.completion',
    created: CREATED,
    model: CHAT_MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content: ANSWER_TEXT, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 14, completion_tokens: 37, total_tokens: 51, completion_tokens_details: { reasoning_tokens: 0 } },
    system_fingerprint: 'fp_b40fb1c6fb',
  }, null, 2));
}

/** A non-streamed Anthropic message, pretty-printed as the API sends it. */
export function messagesJsonBody(): Buffer {
  return Buffer.from(JSON.stringify({
    model: MESSAGES_MODEL,
    id: 'msg_01Egs18hRzhru3uGon3qesbA',
    type: 'message',
    role: 'assistant',
    content: [{ type: 'text', text: ANSWER_TEXT }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: 14, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: 37, service_tier: 'standard',
    },
  }, null, 2));
}

export interface UpstreamStats {
  connections: number;
  requests: number;
}

export interface FakeUpstreamOptions {
  port?: number;
  /** Gap between events of a `/slow/` stream. */
  dripMs?: number;
}

export interface RunningUpstream {
  port: number;
  /** Connections open right now. */
  openSockets(): number;
  /** Connections accepted and model requests answered since start. */
  stats(): UpstreamStats;
  close(): Promise<void>;
}

// A body flag is found in the bytes, not by JSON.parse or even decoding: the upstream's CPU isn't
// what is measured, but it shares a core with the load generator, and a 200 KB agent turn
// decoded and searched as text would cost it more than the proxy under test spends.
const STREAM_KEY = Buffer.from('"stream"');
const INCLUDE_USAGE_KEY = Buffer.from('"include_usage"');
const TRUE = Buffer.from('true');

/** Whether some `key` in the JSON bytes has the value `true` (`"key": true`, any JSON space). */
export function flagIsTrue(body: Buffer, key: Buffer): boolean {
  for (let at = body.indexOf(key); at !== -1; at = body.indexOf(key, at + 1)) {
    let i = at + key.length;
    while (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09) i++;
    if (body[i] !== 0x3a) continue;
    i++;
    while (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09) i++;
    if (body.subarray(i, i + TRUE.length).equals(TRUE)) return true;
  }
  return false;
}

/** Starts the fake provider on 127.0.0.1. */
export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<RunningUpstream> {
  const dripMs = options.dripMs ?? 1_000;
  const chatWithUsage = chatStreamEvents(true).map((e) => Buffer.from(e));
  const chatWithoutUsage = chatStreamEvents(false).map((e) => Buffer.from(e));
  const messagesEvents = messagesStreamEvents().map((e) => Buffer.from(e));
  const chatJson = chatJsonBody();
  const messagesJson = messagesJsonBody();
  const sockets = new Set<Socket>();
  const counts: UpstreamStats = { connections: 0, requests: 0 };

  const streamHead = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

  function stream(res: ServerResponse, events: Buffer[]): void {
    res.writeHead(200, streamHead);
    let i = 0;
    const next = (): void => {
      if (res.destroyed) return;
      const event = events[i++];
      if (event === undefined) {
        res.end();
        return;
      }
      res.write(event);
      setImmediate(next);
    };
    next();
  }

  function slowStream(res: ServerResponse, head: Buffer[], drip: Buffer[]): void {
    res.writeHead(200, streamHead);
    for (const event of head) res.write(event);
    // Content events only, round and round: the stream never ends on its own; the client closes it.
    let i = 0;
    const timer = setInterval(() => {
      res.write(drip[i] as Buffer);
      i = (i + 1) % drip.length;
    }, dripMs);
    res.once('close', () => clearInterval(timer));
  }

  function answer(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/__bench/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(counts));
      return;
    }
    counts.requests++;
    const chat = url.endsWith('/chat/completions');
    if (req.method !== 'POST' || (!chat && !url.endsWith('/messages'))) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"no such route on the fake upstream","type":"invalid_request_error"}}');
      return;
    }
    if (!flagIsTrue(body, STREAM_KEY)) {
      const json = chat ? chatJson : messagesJson;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length });
      res.end(json);
      return;
    }
    const events = chat ? (flagIsTrue(body, INCLUDE_USAGE_KEY) ? chatWithUsage : chatWithoutUsage) : messagesEvents;
    if (!url.startsWith('/slow/')) stream(res, events);
    else if (chat) slowStream(res, events.slice(0, 1), events.slice(1, -3));
    else slowStream(res, events.slice(0, 2), events.slice(2, -3));
  }

  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
    });
    req.on('end', () => answer(req, res, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
  });
  server.on('connection', (socket: Socket) => {
    counts.connections++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    openSockets: () => sockets.size,
    stats: () => ({ ...counts }),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({ options: { port: { type: 'string' }, 'drip-ms': { type: 'string' } } });
  const upstream = await startFakeUpstream({
    port: values.port === undefined ? 0 : Number(values.port),
    dripMs: values['drip-ms'] === undefined ? 1_000 : Number(values['drip-ms']),
  });
  process.stdout.write(`${JSON.stringify({ port: upstream.port })}\n`);
  const stop = (): void => {
    upstream.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
