/**
 * A recording fake provider for the real coding-agent clients (Codex CLI, Claude Code, Gemini
 * CLI): a `node:http` server on 127.0.0.1, port 0, that keeps every request it is sent (credentials
 * redacted) and answers from a script, the way OpenAI's Responses API, Anthropic's Messages API
 * and Google's generateContent API (./recording-gemini.ts) answer. It is the thing llmux is tested against in test/clients/, never llmux itself.
 *
 * Besides the model endpoints it answers what the clients were seen to probe, as the real APIs
 * do: `POST /v1/messages/count_tokens`, `GET /v1/models` (Anthropic's or OpenAI's list shape, by
 * whether `anthropic-version` was sent), everything else 404 in the asking client's error shape.
 *
 * It also stands in for the outside world: point a client's `HTTPS_PROXY` at it and every attempt
 * to reach the internet lands in `tunnels` (refused with 403); WebSocket upgrades land in
 * `upgrades` and are refused with 426, the answer Codex 0.169 falls back to HTTP on at once
 * (400 is fatal to it; 404, 5xx or a dropped socket cost about 7 s of retries first).
 */
import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { isRecord, records } from '../../src/common/json.ts';
import { geminiError, geminiModelList, geminiOperation, geminiToolOutputs, serveGemini } from './recording-gemini.ts';

/** One request as a client sent it. */
export interface RecordedRequest {
  method: string;
  /** Path and query as sent, e.g. `/v1/messages?beta=true`. */
  path: string;
  /** Every header, credential values replaced by `[redacted]` (a bearer keeps its scheme). */
  headers: Record<string, string>;
  /** Which header carried a credential, and whether it was the key the server was started with. */
  credential: { header: string; matches: boolean } | null;
  /** The parsed JSON body, the raw text when it is not JSON, or null when there was none. */
  body: unknown;
}

/** An attempt to reach another host through the server acting as the client's proxy. */
export interface Tunnel {
  /** `host:port` of a CONNECT, or the absolute URL of a plain-HTTP proxy request. */
  target: string;
  headers: Record<string, string>;
}

/** What the scripted model does next. */
export type ModelTurn =
  | { kind: 'text'; text: string; reasoning?: Reasoning }
  | { kind: 'tool_call'; name: string; input: Record<string, unknown>; reasoning?: Reasoning }
  /** An error answer instead of a model turn. */
  | { kind: 'http_error'; status: number; message: string; headers?: Record<string, string> }
  /** A stream that stops after the first text delta, without its terminal event. */
  | { kind: 'truncated'; text: string };

/**
 * Reasoning the turn starts with: a Responses `reasoning` item carrying `encryptedContent`, or an
 * Anthropic `thinking` block signed with it. Clients keep neither; they send it back next turn.
 */
export interface Reasoning {
  summary: string;
  encryptedContent: string;
}

/** What a script sees of a model request. */
export interface ScriptInput {
  format: 'responses' | 'messages' | 'gemini';
  body: Record<string, unknown>;
  /** The outputs of tool calls this request sends back, in order (Responses: every
   * `function_call_output` / `custom_tool_call_output`; Messages: the last user turn's `tool_result`s;
   * Gemini: the last content's `functionResponse`s). */
  toolOutputs: string[];
}

export type Script = (input: ScriptInput) => ModelTurn;

/** A script that always answers `text`. */
export function answerWith(text: string): Script {
  return () => ({ kind: 'text', text });
}

/**
 * A script for one tool round trip: while the request carries no tool output, call the tool;
 * once it does, answer with `answer(output)`.
 */
export function toolRoundTrip(options: {
  name: string;
  input: Record<string, unknown>;
  answer: (output: string) => string;
  reasoning?: Reasoning;
}): Script {
  return ({ toolOutputs }) => {
    const output = toolOutputs.at(-1);
    if (output !== undefined) return { kind: 'text', text: options.answer(output) };
    const turn: ModelTurn = { kind: 'tool_call', name: options.name, input: options.input };
    return options.reasoning === undefined ? turn : { ...turn, reasoning: options.reasoning };
  };
}

export interface RecordingUpstreamOptions {
  /** The key clients are given; `credential.matches` says whether a request carried it. */
  apiKey?: string;
  /** Decides every model answer; replaceable later through `upstream.script`. Default: "ok". */
  script?: Script;
  /** Model ids `GET /v1/models` lists. */
  models?: string[];
}

export interface RecordingUpstream {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  requests: RecordedRequest[];
  tunnels: Tunnel[];
  /** WebSocket upgrade requests (refused with 426). */
  upgrades: RecordedRequest[];
  script: Script;
  /** The model requests only (`/responses`, `/messages`, Gemini's `:generateContent` and `:streamGenerateContent`; counting excluded), in order. */
  modelRequests(): RecordedRequest[];
  close(): Promise<void>;
}

const CREDENTIAL_HEADERS = new Set(['authorization', 'x-api-key', 'proxy-authorization', 'cookie', 'api-key', 'x-goog-api-key']);

/** Starts the server on 127.0.0.1, port 0. */
export async function startRecordingUpstream(options: RecordingUpstreamOptions = {}): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const tunnels: Tunnel[] = [];
  const upgrades: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const counter = { next: 0 };
  const nextId = (prefix: string): string => `${prefix}${(counter.next += 1).toString().padStart(4, '0')}`;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = record(req, Buffer.concat(chunks).toString('utf8'), options.apiKey);
      if (/^[a-z]+:\/\//i.test(req.url ?? '')) {
        tunnels.push({ target: req.url ?? '', headers: recorded.headers });
        refuse(res, 403, 'llmux test upstream: no internet here');
        return;
      }
      requests.push(recorded);
      answer(req, res, recorded, upstream.script, options.models ?? [], nextId);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    // A client that gives up mid-answer resets the socket; that is not the server's error.
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => {});
    tunnels.push({ target: req.url ?? '', headers: plainHeaders(req.headers) });
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => {});
    upgrades.push(record(req, '', options.apiKey));
    const body = JSON.stringify({ error: { message: 'WebSocket is not offered here; use HTTP.', type: 'invalid_request_error', code: 'websocket_not_supported' } });
    socket.end(`HTTP/1.1 426 Upgrade Required\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const upstream: RecordingUpstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    tunnels,
    upgrades,
    script: options.script ?? answerWith('ok'),
    modelRequests: () => requests.filter((r) => r.method === 'POST' && /(\/(responses|messages)|:(generateContent|streamGenerateContent))(\?|$)/.test(r.path)),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return upstream;
}

function plainHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function record(req: IncomingMessage, raw: string, apiKey: string | undefined): RecordedRequest {
  const headers = plainHeaders(req.headers);
  let credential: RecordedRequest['credential'] = null;
  for (const name of Object.keys(headers)) {
    if (!CREDENTIAL_HEADERS.has(name)) continue;
    const value = headers[name] ?? '';
    const bearer = /^bearer\s+/i.exec(value);
    const secret = bearer === null ? value : value.slice(bearer[0].length);
    if (credential === null && name !== 'cookie' && name !== 'proxy-authorization') {
      credential = { header: name, matches: apiKey !== undefined && secret === apiKey };
    }
    headers[name] = bearer === null ? '[redacted]' : `${bearer[0]}[redacted]`;
  }
  let body: unknown = null;
  if (raw !== '') {
    try {
      body = JSON.parse(raw) as unknown;
    } catch {
      body = raw;
    }
  }
  return { method: req.method ?? '', path: req.url ?? '', headers, credential, body };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function refuse(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: { message, type: 'invalid_request_error' } });
}

function answer(
  req: IncomingMessage,
  res: ServerResponse,
  recorded: RecordedRequest,
  script: Script,
  models: string[],
  nextId: (prefix: string) => string,
): void {
  const path = recorded.path.split('?')[0] ?? '';
  const anthropic = recorded.headers['anthropic-version'] !== undefined;
  const body = isRecord(recorded.body) ? recorded.body : undefined;
  const gemini = geminiOperation(path);
  if (req.method === 'POST' && body !== undefined && gemini !== undefined) {
    const turn = gemini.method === 'countTokens' ? ({ kind: 'text', text: '' } as const) : script({ format: 'gemini', body, toolOutputs: geminiToolOutputs(body) });
    serveGemini(res, gemini.method, gemini.model, turn, body, estimateTokens);
    return;
  }
  if (req.method === 'GET' && /^\/v1(beta)?\/models$/.test(path) && recorded.headers['x-goog-api-key'] !== undefined) {
    sendJson(res, 200, geminiModelList(models));
    return;
  }
  if (req.method === 'POST' && body !== undefined && (path === '/v1/responses' || path === '/responses')) {
    const turn = script({ format: 'responses', body, toolOutputs: responsesToolOutputs(body) });
    serveResponses(res, turn, body, nextId);
    return;
  }
  if (req.method === 'POST' && body !== undefined && path === '/v1/messages/count_tokens') {
    sendJson(res, 200, { input_tokens: estimateTokens(recorded.body) });
    return;
  }
  if (req.method === 'POST' && body !== undefined && path === '/v1/messages') {
    const turn = script({ format: 'messages', body, toolOutputs: messagesToolOutputs(body) });
    serveMessages(res, turn, body, nextId);
    return;
  }
  if (req.method === 'GET' && path === '/v1/models') {
    if (anthropic) {
      const data = models.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
      sendJson(res, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
    } else {
      sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 1735689600, owned_by: 'llmux-test' })) });
    }
    return;
  }
  const message = `llmux test upstream: nothing at ${req.method ?? ''} ${path}`;
  if (recorded.headers['x-goog-api-key'] !== undefined) geminiError(res, 404, message);
  else if (anthropic) sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message } });
  else sendJson(res, 404, { error: { message, type: 'invalid_request_error', code: 'not_found' } });
}

/** About four characters a token, as a stand-in for a tokenizer. */
function estimateTokens(value: unknown): number {
  return Math.max(1, Math.ceil(JSON.stringify(value).length / 4));
}

/** The text of a tool output: a string, or content parts with `text`. */
function outputText(value: unknown): string {
  if (typeof value === 'string') return value;
  return records(value).map((part) => (typeof part['text'] === 'string' ? part['text'] : '')).join('');
}

function responsesToolOutputs(body: Record<string, unknown>): string[] {
  return records(body['input'])
    .filter((item) => item['type'] === 'function_call_output' || item['type'] === 'custom_tool_call_output')
    .map((item) => outputText(item['output']));
}

function messagesToolOutputs(body: Record<string, unknown>): string[] {
  const lastUser = records(body['messages']).filter((m) => m['role'] === 'user').at(-1);
  if (lastUser === undefined) return [];
  return records(lastUser['content'])
    .filter((block) => block['type'] === 'tool_result')
    .map((block) => outputText(block['content']));
}

// ---- Responses API -------------------------------------------------------------------------

function serveResponses(res: ServerResponse, turn: ModelTurn, body: Record<string, unknown>, nextId: (prefix: string) => string): void {
  if (turn.kind === 'http_error') {
    sendJson(res, turn.status, { error: { message: turn.message, type: turn.status === 429 ? 'rate_limit_error' : 'invalid_request_error', code: null } }, turn.headers);
    return;
  }
  const model = typeof body['model'] === 'string' ? body['model'] : 'unknown';
  const events = responsesEvents(turn, { model, responseId: nextId('resp_'), nextId, inputTokens: estimateTokens(body['input']) });
  if (body['stream'] !== true) {
    const terminal = events.at(-1);
    sendJson(res, 200, isRecord(terminal) ? terminal['response'] : {});
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(encodeResponsesStream(events));
}

/**
 * The events of one Responses stream, in the order OpenAI sends them, without
 * `sequence_number` (the encoder numbers them): `response.created`, `response.in_progress`, each
 * output item added → its parts and deltas → done, then `response.completed` carrying the whole
 * response. A `truncated` turn stops after its first text delta.
 */
export function responsesEvents(
  turn: Exclude<ModelTurn, { kind: 'http_error' }>,
  context: { model: string; responseId: string; nextId: (prefix: string) => string; inputTokens: number; createdAt?: number },
): Array<Record<string, unknown>> {
  const createdAt = context.createdAt ?? 1_735_689_600;
  const base = {
    id: context.responseId, object: 'response', created_at: createdAt, status: 'in_progress', model: context.model,
    output: [] as unknown[], usage: null, error: null, incomplete_details: null, parallel_tool_calls: true, store: false,
  };
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response: base },
    { type: 'response.in_progress', response: base },
  ];
  const output: Array<Record<string, unknown>> = [];
  let outputTokens = 0;
  let reasoningTokens = 0;

  if (turn.kind !== 'truncated' && turn.reasoning !== undefined) {
    const item = {
      id: context.nextId('rs_'), type: 'reasoning',
      summary: [{ type: 'summary_text', text: turn.reasoning.summary }], encrypted_content: turn.reasoning.encryptedContent,
    };
    const outputIndex = output.length;
    events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, summary: [] } });
    events.push({ type: 'response.reasoning_summary_part.added', item_id: item.id, output_index: outputIndex, summary_index: 0, part: { type: 'summary_text', text: '' } });
    events.push({ type: 'response.reasoning_summary_text.delta', item_id: item.id, output_index: outputIndex, summary_index: 0, delta: turn.reasoning.summary });
    events.push({ type: 'response.reasoning_summary_text.done', item_id: item.id, output_index: outputIndex, summary_index: 0, text: turn.reasoning.summary });
    events.push({ type: 'response.reasoning_summary_part.done', item_id: item.id, output_index: outputIndex, summary_index: 0, part: { type: 'summary_text', text: turn.reasoning.summary } });
    events.push({ type: 'response.output_item.done', output_index: outputIndex, item });
    output.push(item);
    reasoningTokens = estimateTokens(turn.reasoning.summary);
  }

  if (turn.kind === 'text' || turn.kind === 'truncated') {
    const id = context.nextId('msg_');
    const outputIndex = output.length;
    const pieces = halves(turn.text);
    const where = { item_id: id, output_index: outputIndex, content_index: 0 };
    events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    events.push({ type: 'response.content_part.added', ...where, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    events.push({ type: 'response.output_text.delta', ...where, delta: pieces[0], logprobs: [] });
    if (turn.kind === 'truncated') return events;
    events.push({ type: 'response.output_text.delta', ...where, delta: pieces[1], logprobs: [] });
    events.push({ type: 'response.output_text.done', ...where, text: turn.text, logprobs: [] });
    const part = { type: 'output_text', text: turn.text, annotations: [], logprobs: [] };
    events.push({ type: 'response.content_part.done', ...where, part });
    const item = { id, type: 'message', status: 'completed', role: 'assistant', content: [part] };
    events.push({ type: 'response.output_item.done', output_index: outputIndex, item });
    output.push(item);
    outputTokens = estimateTokens(turn.text);
  } else {
    const id = context.nextId('fc_');
    const callId = context.nextId('call_');
    const outputIndex = output.length;
    const args = JSON.stringify(turn.input);
    const pieces = halves(args);
    events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { id, type: 'function_call', status: 'in_progress', arguments: '', call_id: callId, name: turn.name } });
    events.push({ type: 'response.function_call_arguments.delta', item_id: id, output_index: outputIndex, delta: pieces[0] });
    events.push({ type: 'response.function_call_arguments.delta', item_id: id, output_index: outputIndex, delta: pieces[1] });
    events.push({ type: 'response.function_call_arguments.done', item_id: id, output_index: outputIndex, name: turn.name, arguments: args });
    const item = { id, type: 'function_call', status: 'completed', arguments: args, call_id: callId, name: turn.name };
    events.push({ type: 'response.output_item.done', output_index: outputIndex, item });
    output.push(item);
    outputTokens = estimateTokens(args);
  }

  const usage = {
    input_tokens: context.inputTokens, input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens + reasoningTokens, output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: context.inputTokens + outputTokens + reasoningTokens,
  };
  events.push({ type: 'response.completed', response: { ...base, status: 'completed', output, usage } });
  return events;
}

/** `event: TYPE` + `data: JSON` per event, `sequence_number` counting from 0; no `[DONE]`. */
export function encodeResponsesStream(events: Array<Record<string, unknown>>): string {
  return events.map((event, index) => `event: ${String(event['type'])}\ndata: ${JSON.stringify({ ...event, sequence_number: index })}\n\n`).join('');
}

/** Two pieces of a text, so every stream carries more than one delta. */
function halves(text: string): [string, string] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

// ---- Messages API --------------------------------------------------------------------------

function serveMessages(res: ServerResponse, turn: ModelTurn, body: Record<string, unknown>, nextId: (prefix: string) => string): void {
  if (turn.kind === 'http_error') {
    const type = { 400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 529: 'overloaded_error' }[turn.status] ?? 'api_error';
    sendJson(res, turn.status, { type: 'error', error: { type, message: turn.message } }, { 'request-id': nextId('req_'), ...turn.headers });
    return;
  }
  const model = typeof body['model'] === 'string' ? body['model'] : 'unknown';
  const message = messagesMessage(turn, { model, id: nextId('msg_'), nextId, inputTokens: estimateTokens(body['messages']) });
  if (body['stream'] !== true) {
    sendJson(res, 200, message, { 'request-id': nextId('req_') });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': nextId('req_') });
  res.end(encodeMessagesStream(message, turn.kind === 'truncated'));
}

/** The whole Messages answer for a turn (a `truncated` turn's text is the part that streams). */
export function messagesMessage(
  turn: Exclude<ModelTurn, { kind: 'http_error' }>,
  context: { model: string; id: string; nextId: (prefix: string) => string; inputTokens: number },
): Record<string, unknown> {
  const content: Array<Record<string, unknown>> = [];
  if (turn.kind !== 'truncated' && turn.reasoning !== undefined) {
    content.push({ type: 'thinking', thinking: turn.reasoning.summary, signature: turn.reasoning.encryptedContent });
  }
  if (turn.kind === 'tool_call') content.push({ type: 'tool_use', id: context.nextId('toolu_'), name: turn.name, input: turn.input });
  else content.push({ type: 'text', text: turn.text });
  return {
    id: context.id, type: 'message', role: 'assistant', model: context.model, content,
    stop_reason: turn.kind === 'tool_call' ? 'tool_use' : 'end_turn', stop_sequence: null,
    usage: { input_tokens: context.inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: estimateTokens(content) },
  };
}

/**
 * Anthropic's stream of a whole message: `message_start` (empty content, usage so far), per block
 * `content_block_start` → deltas (`thinking_delta` + `signature_delta`, `text_delta`,
 * `input_json_delta`) → `content_block_stop`, a `ping`, `message_delta` with the stop reason and
 * output usage, `message_stop`. `truncated` ends the bytes after the first text delta.
 */
export function encodeMessagesStream(message: Record<string, unknown>, truncated = false): string {
  const lines: string[] = [];
  const emit = (type: string, data: Record<string, unknown>): void => {
    lines.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  const usage = isRecord(message['usage']) ? message['usage'] : {};
  emit('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
  const blocks = records(message['content']);
  for (const [index, block] of blocks.entries()) {
    if (block['type'] === 'thinking') {
      emit('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block['thinking'] } });
      emit('content_block_delta', { index, delta: { type: 'signature_delta', signature: block['signature'] } });
    } else if (block['type'] === 'tool_use') {
      emit('content_block_start', { index, content_block: { type: 'tool_use', id: block['id'], name: block['name'], input: {} } });
      for (const piece of halves(JSON.stringify(block['input']))) emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
    } else {
      const [first, second] = halves(typeof block['text'] === 'string' ? block['text'] : '');
      emit('content_block_start', { index, content_block: { type: 'text', text: '' } });
      if (index === 0) emit('ping', {});
      emit('content_block_delta', { index, delta: { type: 'text_delta', text: first } });
      if (truncated) return lines.join('');
      emit('content_block_delta', { index, delta: { type: 'text_delta', text: second } });
    }
    emit('content_block_stop', { index });
  }
  emit('message_delta', { delta: { stop_reason: message['stop_reason'], stop_sequence: null }, usage: { output_tokens: usage['output_tokens'] } });
  emit('message_stop', {});
  return lines.join('');
}
