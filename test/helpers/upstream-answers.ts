/**
 * The whole upstream answer a recorded stream stands for, assembled the way the providers' SDKs
 * assemble a stream, so a stream translator's result can be compared with the whole-answer
 * translator's result for the same answer.
 */
import type { ChatResponse, MessagesResponse } from '../../src/formats/wire.ts';
import type { SseEvent } from '../../src/sse/parser.ts';
import { createSseParser } from '../../src/sse/parser.ts';

function parse(bytes: Uint8Array): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createSseParser({ onEvent: (event) => events.push(event) });
  parser.feed(bytes);
  parser.end();
  return events;
}

type Json = Record<string, unknown>;

/** A chat stream's choice 0 as a non-streamed chat answer: content, reasoning, refusal, tool calls by index, finish reason, usage. */
export function chatAnswerFromStream(bytes: Uint8Array): ChatResponse {
  let content: string | null = null;
  let reasoning = '';
  let refusal: string | null = null;
  let finishReason: string | null = null;
  let usage: Json | undefined;
  let model = '';
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for (const event of parse(bytes)) {
    if (event.data === '[DONE]') continue;
    const chunk = JSON.parse(event.data) as Json;
    if (typeof chunk['model'] === 'string' && chunk['model'] !== '') model = chunk['model'];
    if (typeof chunk['usage'] === 'object' && chunk['usage'] !== null) usage = chunk['usage'] as Json;
    const choices = Array.isArray(chunk['choices']) ? (chunk['choices'] as Json[]) : [];
    const choice = choices.find((entry) => (entry['index'] ?? 0) === 0);
    if (choice === undefined) continue;
    const delta = (choice['delta'] ?? {}) as Json;
    if (typeof delta['content'] === 'string' && delta['content'] !== '') content = (content ?? '') + delta['content'];
    const thought = delta['reasoning_content'] ?? delta['reasoning'];
    if (typeof thought === 'string') reasoning += thought;
    if (typeof delta['refusal'] === 'string' && delta['refusal'] !== '') refusal = (refusal ?? '') + delta['refusal'];
    for (const call of (Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : []) as Json[]) {
      const index = typeof call['index'] === 'number' ? call['index'] : 0;
      const fn = (call['function'] ?? {}) as Json;
      const known = calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (typeof call['id'] === 'string') known.id = call['id'];
      if (typeof fn['name'] === 'string') known.name = fn['name'];
      if (typeof fn['arguments'] === 'string') known.arguments += fn['arguments'];
      calls.set(index, known);
    }
    if (typeof choice['finish_reason'] === 'string' && finishReason === null) finishReason = choice['finish_reason'];
  }
  const message: ChatResponse['choices'][number]['message'] = { role: 'assistant', content, refusal };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.size > 0) {
    message.tool_calls = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, call]) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  }
  const answer: ChatResponse = { id: 'chatcmpl-assembled', object: 'chat.completion', created: 0, model, choices: [{ index: 0, message, finish_reason: finishReason }] };
  if (usage !== undefined) answer.usage = usage as unknown as NonNullable<ChatResponse['usage']>;
  return answer;
}

/**
 * A messages stream as a non-streamed messages answer: blocks by index, tool input parsed from its
 * JSON fragments (`{}` when there were none or they were cut short), stop reason, and usage as the
 * stream reports it (input from `message_start` unless `message_delta` repeats it, output from
 * `message_delta`).
 */
export function messagesAnswerFromStream(bytes: Uint8Array): MessagesResponse & { stop_details?: unknown } {
  const blocks = new Map<number, Json & { partial?: string }>();
  let stopReason: MessagesResponse['stop_reason'] = null;
  let stopDetails: unknown;
  let usage: Json = {};
  let model = '';
  for (const event of parse(bytes)) {
    const data = JSON.parse(event.data) as Json;
    switch (data['type']) {
      case 'message_start': {
        const message = data['message'] as Json;
        model = String(message['model'] ?? '');
        usage = { ...(message['usage'] as Json | undefined) };
        break;
      }
      case 'content_block_start':
        blocks.set(Number(data['index']), structuredClone(data['content_block']) as Json);
        break;
      case 'content_block_delta': {
        const block = blocks.get(Number(data['index']));
        const delta = data['delta'] as Json;
        if (block === undefined) break;
        if (delta['type'] === 'text_delta') block['text'] = String(block['text'] ?? '') + String(delta['text']);
        if (delta['type'] === 'thinking_delta') block['thinking'] = String(block['thinking'] ?? '') + String(delta['thinking']);
        if (delta['type'] === 'signature_delta') block['signature'] = String(block['signature'] ?? '') + String(delta['signature']);
        if (delta['type'] === 'input_json_delta') block.partial = (block.partial ?? '') + String(delta['partial_json']);
        break;
      }
      case 'message_delta': {
        const delta = data['delta'] as Json;
        stopReason = (delta['stop_reason'] ?? null) as MessagesResponse['stop_reason'];
        stopDetails = delta['stop_details'];
        const deltaUsage = (data['usage'] ?? {}) as Json;
        for (const [key, value] of Object.entries(deltaUsage)) {
          if (key === 'output_tokens' || (typeof value === 'number' && value > 0) || typeof value === 'object') usage[key] = value;
        }
        break;
      }
    }
  }
  const content = [...blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, block]) => {
    if (block['type'] !== 'tool_use') return block;
    const { partial, ...rest } = block;
    let input: unknown = block['input'] ?? {};
    if (partial !== undefined && partial.trim() !== '') {
      try {
        input = JSON.parse(partial);
      } catch {
        input = {};
      }
    }
    return { ...rest, input };
  });
  const answer = {
    id: 'msg_assembled',
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
    stop_details: stopDetails,
  };
  return answer as unknown as MessagesResponse & { stop_details?: unknown };
}
