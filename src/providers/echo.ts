/**
 * The built-in model `llmux-echo`, as a provider like any other: it sits at the address `llmux:echo`,
 * answers in whichever format it is asked in, and gives its answer as a byte stream that the same
 * relay writes to the client as any upstream's. The answer is the last user text, streamed word by
 * word with the events a real provider sends. It makes a fresh install work end to end, and it is
 * what the smoke tests talk to.
 *
 * One word is one output token here; the request's output cap cuts the answer like a real model
 * (`max_tokens` / `length`).
 */
import { Readable } from 'node:stream';
import type { ProviderConfig } from '../config-types.ts';
import type { ClientRequestOf, TokenUsage, WireFormat } from '../formats/wire.ts';
import { estimateRequestTokens } from '../formats/estimate.ts';
import { dialects } from '../dialects/index.ts';
import type { Transport, UpstreamResponse } from './upstream.ts';

/** The echo model's provider: answered in-process, in every format. */
export const ECHO_PROVIDER: ProviderConfig = {
  id: 'llmux',
  format: 'chat',
  serves: ['chat', 'messages', 'responses'],
  baseUrl: 'llmux:echo',
  apiKey: undefined,
  keyless: true,
  headers: {},
};

/** The text the echo model answers with: the last user message's text (a Responses request's `input`). */
export function echoText(body: { messages?: unknown; input?: unknown }): string {
  const messages = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.messages ?? body.input;
  if (!Array.isArray(messages)) return '(no text to echo)';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m: unknown = messages[i];
    if (m === null || typeof m !== 'object' || (m as Record<string, unknown>)['role'] !== 'user') continue;
    const text = textOf((m as Record<string, unknown>)['content']);
    if (text !== '') return text;
  }
  return '(no text to echo)';
}

/** Text parts of any format: `text`, and the Responses `input_text`. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const part of content as Array<Record<string, unknown>>) {
    if (part !== null && typeof part === 'object' && (part['type'] === 'text' || part['type'] === 'input_text') && typeof part['text'] === 'string') parts.push(part['text']);
  }
  return parts.join('\n');
}

/** Splits text into words, each keeping the whitespace before it, so joining gives the text back. */
export function splitWords(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [text];
}

/** The echo answer to one request, in the request's own format. */
function answer<F extends WireFormat>(request: ClientRequestOf<F>): UpstreamResponse {
  const dialect = dialects[request.format];
  const body = request.body;
  const maxTokens = dialect.maxTokens(body);
  let words = splitWords(echoText(body));
  const cut = maxTokens !== undefined && words.length > maxTokens;
  if (cut) words = words.slice(0, maxTokens);
  const usage: TokenUsage = { inputTokens: estimateRequestTokens(body), outputTokens: words.length, cacheReadTokens: 0, cacheCreationTokens: 0 };
  const text = { model: body.model, text: words.join(''), cut, usage };
  if (body.stream !== true) {
    return respond(Readable.from([dialect.textAnswer(text)]), 'application/json');
  }
  // Like an upstream asked for usage (the pass-through body always asks): the relay drops the
  // usage chunk when the client did not ask for it.
  const events = dialect.textStream({ ...text, words, includeUsage: true })[Symbol.iterator]();
  const stream = new Readable({
    read() {
      // One word per event-loop turn, like a model producing tokens.
      setImmediate(() => {
        if (this.destroyed) return;
        const next = events.next();
        this.push(next.done === true ? null : next.value);
      });
    },
  });
  return respond(stream, 'text/event-stream');
}

function respond(stream: Readable, contentType: string): UpstreamResponse {
  return Object.assign(stream, { statusCode: 200, headers: { 'content-type': contentType } });
}

/** The echo model's transport. */
export function createEchoTransport(): Transport {
  return {
    send: (request) => Promise.resolve(answer(request.client)),
  };
}
