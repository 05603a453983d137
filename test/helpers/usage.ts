/**
 * Upstream answers with known usage, priced models for them, and a wait for the ledger: what the
 * usage, budget and telemetry tests share.
 */
import type { Responder } from './fake-upstream.ts';
import { respond } from './fake-upstream.ts';
import type { TestGateway } from './gateway.ts';
import { anthropicHeaders, openaiHeaders } from './gateway.ts';
import { waitUntil } from './wait.ts';

/** gpt-test: $2 / $8 per million input / output tokens; claude-test: $3 / $15. */
export const PRICED_MODELS = [
  { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', max_output_tokens: 16384, pricing: { input_tokens_cost_per_million: 2, output_tokens_cost_per_million: 8, currency: 'USD' } },
  { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', max_output_tokens: 8192, pricing: { input_tokens_cost_per_million: 3, output_tokens_cost_per_million: 15, currency: 'USD' } },
];

export interface ChatUsageNumbers { prompt: number; completion: number; cached: number }
export interface MessagesUsageNumbers { input: number; output: number; cacheRead: number; cacheCreation: number }

function chatUsage(u: ChatUsageNumbers): Record<string, unknown> {
  return { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion, prompt_tokens_details: { cached_tokens: u.cached } };
}

function messagesUsage(u: MessagesUsageNumbers): Record<string, unknown> {
  return { input_tokens: u.input, output_tokens: u.output, cache_read_input_tokens: u.cacheRead, cache_creation_input_tokens: u.cacheCreation };
}

/** A chat-completions JSON answer reporting `u`. */
export function chatJson(u: ChatUsageNumbers): Responder {
  return respond.json(200, {
    id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-upstream',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hi', refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: chatUsage(u),
  });
}

/** A chat-completions stream whose last chunk reports `u`. */
export function chatStream(u: ChatUsageNumbers): Responder {
  const chunk = (extra: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-upstream', ...extra })}\n\n`;
  return respond.sse(
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }] })
    + chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
    + chunk({ choices: [], usage: chatUsage(u) })
    + 'data: [DONE]\n\n',
  );
}

/** A messages JSON answer reporting `u`. */
export function messagesJson(u: MessagesUsageNumbers): Responder {
  return respond.json(200, {
    id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-upstream', content: [{ type: 'text', text: 'Hi' }],
    stop_reason: 'end_turn', stop_sequence: null, usage: messagesUsage(u),
  });
}

/** The events of a messages stream reporting `u` (input and cache counts at the start, output at the end). */
export function messagesStreamText(u: MessagesUsageNumbers): string {
  const event = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  return event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-upstream', content: [], stop_reason: null, stop_sequence: null, usage: { ...messagesUsage(u), output_tokens: 1 } } })
    + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })
    + event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } })
    + event('content_block_stop', { index: 0 })
    + event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: u.output } })
    + event('message_stop', {});
}

export function messagesStream(u: MessagesUsageNumbers): Responder {
  return respond.sse(messagesStreamText(u));
}

/** POST /v1/chat/completions. */
export function chat(t: TestGateway, key: string, model: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: openaiHeaders(key, headers),
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
}

/** POST /v1/messages. */
export function messages(t: TestGateway, key: string, model: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}/v1/messages`, {
    method: 'POST',
    headers: anthropicHeaders(key, headers),
    body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
}

/**
 * Waits (at most `timeoutMs`) until the ledger has counted `requests` requests in all: a request
 * is recorded when its response closes on the server, a moment after the client has read it.
 */
export async function ledgerCounted(t: TestGateway, requests: number, timeoutMs = 10_000): Promise<void> {
  let counted = -1;
  await waitUntil(async () => {
    const rows = await t.gateway.usage.query({ since: 0, until: 8.64e15, keyId: 'all', groupBy: 'key' });
    counted = rows.reduce((sum, row) => sum + row.requests, 0);
    if (counted > requests) throw new Error(`the ledger counted ${counted} requests, not ${requests}`);
    return counted === requests;
  }, () => `the ledger counting ${requests} requests (it counted ${counted})`, { timeoutMs, pollMs: 10 });
}
