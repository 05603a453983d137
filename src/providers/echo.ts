/**
 * The built-in model `llmux-echo`: no upstream; answers with the last user text, in the client's
 * format, streamed word by word with the same events a real provider sends. It makes a fresh
 * install work end to end, and it is what the smoke tests talk to.
 *
 * One word is one output token here; `max_tokens` cuts the answer like a real model
 * (`max_tokens` / `length`).
 */
import type { ServerResponse } from 'node:http';
import type { ChatRequest, MessagesRequest, TokenUsage, WireFormat } from '../formats/wire.ts';
import { startEventStream } from '../http/respond.ts';
import { newId } from '../ids.ts';

export interface EchoOptions {
  model: string;
  inputTokens: number;
  /** Called when the first byte of the answer is about to be written. */
  onFirstByte(): void;
  /** Whether the client went away (stop writing). */
  isClosed(): boolean;
}

/** The text the echo model answers with. */
export function echoText(format: WireFormat, body: MessagesRequest | ChatRequest): string {
  const messages = body.messages as Array<{ role: string; content?: unknown }>;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m === undefined || m.role !== 'user') continue;
    const text = textOf(m.content);
    if (text !== '') return text;
  }
  void format;
  return '(no text to echo)';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const part of content as Array<Record<string, unknown>>) {
    if (part !== null && typeof part === 'object' && part['type'] === 'text' && typeof part['text'] === 'string') parts.push(part['text']);
  }
  return parts.join('\n');
}

/** Splits text into words, each keeping the whitespace before it, so joining gives the text back. */
export function splitWords(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [text];
}

function cap(words: string[], maxTokens: number | undefined): { words: string[]; cut: boolean } {
  if (maxTokens === undefined || words.length <= maxTokens) return { words, cut: false };
  return { words: words.slice(0, maxTokens), cut: true };
}


/** Answers one request; resolves with its usage once everything is written. */
export async function runEcho(
  format: WireFormat,
  body: MessagesRequest | ChatRequest,
  res: ServerResponse,
  options: EchoOptions,
): Promise<TokenUsage> {
  const maxTokens = format === 'anthropic'
    ? (body as MessagesRequest).max_tokens
    : ((body as ChatRequest).max_completion_tokens ?? (body as ChatRequest).max_tokens);
  const { words, cut } = cap(splitWords(echoText(format, body)), maxTokens);
  const usage: TokenUsage = { inputTokens: options.inputTokens, outputTokens: words.length, cacheReadTokens: 0, cacheCreationTokens: 0 };
  const text = words.join('');
  options.onFirstByte();
  if (body.stream !== true) {
    const payload = format === 'anthropic' ? messagesAnswer(options.model, text, cut, usage) : chatAnswer(options.model, text, cut, usage);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
    return usage;
  }
  startEventStream(res);
  const events = format === 'anthropic'
    ? messagesEvents(options.model, words, cut, usage)
    : chatEvents(options.model, words, cut, usage, (body as ChatRequest).stream_options?.include_usage === true);
  for (const event of events) {
    if (options.isClosed()) return usage;
    if (!res.write(event)) await drainOrClose(res);
    // One word per event-loop turn, like a model producing tokens.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  res.end();
  return usage;
}

/** Resolves when the client can take more, or has gone. */
function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function messagesAnswer(model: string, text: string, cut: boolean, usage: TokenUsage): string {
  return JSON.stringify({
    id: newId('msg_'),
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: cut ? 'max_tokens' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  });
}

function chatAnswer(model: string, text: string, cut: boolean, usage: TokenUsage): string {
  return JSON.stringify({
    id: newId('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: cut ? 'length' : 'stop' }],
    usage: {
      prompt_tokens: usage.inputTokens,
      completion_tokens: usage.outputTokens,
      total_tokens: usage.inputTokens + usage.outputTokens,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  });
}

function* messagesEvents(model: string, words: string[], cut: boolean, usage: TokenUsage): Generator<string> {
  const ev = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  yield ev('message_start', {
    type: 'message_start',
    message: {
      id: newId('msg_'), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: usage.inputTokens, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    },
  });
  yield ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  yield ev('ping', { type: 'ping' });
  for (const word of words) yield ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } });
  yield ev('content_block_stop', { type: 'content_block_stop', index: 0 });
  yield ev('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: cut ? 'max_tokens' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: usage.outputTokens },
  });
  yield ev('message_stop', { type: 'message_stop' });
}

function* chatEvents(model: string, words: string[], cut: boolean, usage: TokenUsage, includeUsage: boolean): Generator<string> {
  const chunkId = newId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: unknown, finish: string | null): string =>
    `data: ${JSON.stringify({ id: chunkId, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  yield chunk({ role: 'assistant', content: '', refusal: null }, null);
  for (const word of words) yield chunk({ content: word }, null);
  yield chunk({}, cut ? 'length' : 'stop');
  if (includeUsage) {
    yield `data: ${JSON.stringify({
      id: chunkId, object: 'chat.completion.chunk', created, model, choices: [],
      usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens },
    })}\n\n`;
  }
  yield 'data: [DONE]\n\n';
}
