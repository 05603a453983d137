/**
 * Upstream answers written for a test: chat-completions, messages and Gemini streams (and whole answers)
 * with text, thinking and tool calls, shaped like the recorded ones in test/fixtures/upstream/,
 * and fake-upstream responders that pick the answer from the request they get.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Responder, SeenRequest } from './fake-upstream.ts';
import { respond } from './fake-upstream.ts';
import { createResponsesEmitter } from '../../src/translate/responses-events.ts';
import { responseEcho, toResponsesUsage } from '../../src/translate/responses-output.ts';
import { NO_TOOL_NAMES } from '../../src/translate/responses-tools.ts';

export interface ScriptedCall {
  id: string;
  name: string;
  /** The arguments object (JSON-encoded for chat, `input` for messages). */
  input: Record<string, unknown>;
}

export interface ScriptedAnswer {
  text?: string;
  /** Messages upstreams only: a thinking block first, with its signature. */
  thinking?: { text: string; signature: string };
  calls?: ScriptedCall[];
  /** Default: `tool_calls` / `tool_use` with calls, else `stop` / `end_turn`. */
  stop?: string;
  usage?: { input: number; output: number };
}

const USAGE = { input: 12, output: 7 };

/** A chat-completions stream, split the way OpenAI splits one (a role chunk, one chunk per piece, usage last). */
export function chatStream(answer: ScriptedAnswer): string {
  const usage = answer.usage ?? USAGE;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const out = [chunk({ role: 'assistant', content: '' })];
  for (const word of (answer.text ?? '').match(/\s*\S+/g) ?? []) out.push(chunk({ content: word }));
  (answer.calls ?? []).forEach((call, index) => {
    out.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
    out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
  });
  out.push(chunk({}, answer.stop ?? ((answer.calls ?? []).length > 0 ? 'tool_calls' : 'stop')));
  out.push(`data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } })}\n\n`);
  out.push('data: [DONE]\n\n');
  return out.join('');
}

/** The same answer as a whole chat-completions answer. */
export function chatWhole(answer: ScriptedAnswer): Record<string, unknown> {
  const usage = answer.usage ?? USAGE;
  const calls = (answer.calls ?? []).map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input) } }));
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    created: 1,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: answer.text ?? null, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) }, logprobs: null, finish_reason: answer.stop ?? (calls.length > 0 ? 'tool_calls' : 'stop') }],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  };
}

/** A messages stream: thinking (with its signature delta), text, then each tool_use with its input in two fragments. */
export function messagesStream(answer: ScriptedAnswer): string {
  const usage = answer.usage ?? USAGE;
  const ev = (name: string, data: Record<string, unknown>): string => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const out = [ev('message_start', { message: { id: 'msg_scripted', type: 'message', role: 'assistant', model: 'upstream-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: 1 } } })];
  let index = 0;
  if (answer.thinking !== undefined) {
    out.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: answer.thinking.text } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: answer.thinking.signature } }));
    out.push(ev('content_block_stop', { index }));
    index += 1;
  }
  if (answer.text !== undefined) {
    out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const word of answer.text.match(/\s*\S+/g) ?? []) out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: word } }));
    out.push(ev('content_block_stop', { index }));
    index += 1;
  }
  for (const call of answer.calls ?? []) {
    out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, caller: { type: 'direct' }, input: {} } }));
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(half) } }));
    out.push(ev('content_block_stop', { index }));
    index += 1;
  }
  out.push(ev('message_delta', { delta: { stop_reason: answer.stop ?? ((answer.calls ?? []).length > 0 ? 'tool_use' : 'end_turn'), stop_sequence: null }, usage: { output_tokens: usage.output } }));
  out.push(ev('message_stop', {}));
  return out.join('');
}

/** The same answer as a whole messages answer. */
export function messagesWhole(answer: ScriptedAnswer): Record<string, unknown> {
  const usage = answer.usage ?? USAGE;
  const content: Array<Record<string, unknown>> = [];
  if (answer.thinking !== undefined) content.push({ type: 'thinking', thinking: answer.thinking.text, signature: answer.thinking.signature });
  if (answer.text !== undefined) content.push({ type: 'text', text: answer.text });
  for (const call of answer.calls ?? []) content.push({ type: 'tool_use', id: call.id, name: call.name, caller: { type: 'direct' }, input: call.input });
  return {
    id: 'msg_scripted',
    type: 'message',
    role: 'assistant',
    model: 'upstream-model',
    content,
    stop_reason: answer.stop ?? ((answer.calls ?? []).length > 0 ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  };
}

/** Gemini's signature on a scripted call (Gemini 3 gives the first call of a step one), made up. */
export const SCRIPTED_THOUGHT_SIGNATURE = 'EpYCCpMCAb4+scripted+signature+the+client+must+send+back';

/** The parts of a scripted answer as a Gemini model turn: thinking (a thought part), text, then each call (the first with a signature). */
function geminiParts(answer: ScriptedAnswer): Array<Record<string, unknown>> {
  const parts: Array<Record<string, unknown>> = [];
  if (answer.thinking !== undefined) parts.push({ text: answer.thinking.text, thought: true });
  if (answer.text !== undefined) parts.push({ text: answer.text });
  (answer.calls ?? []).forEach((call, k) => parts.push({ functionCall: { name: call.name, args: call.input }, ...(k === 0 ? { thoughtSignature: SCRIPTED_THOUGHT_SIGNATURE } : {}) }));
  return parts;
}

function geminiUsage(answer: ScriptedAnswer): Record<string, number> {
  const usage = answer.usage ?? USAGE;
  return { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output };
}

/** A Gemini stream as `streamGenerateContent?alt=sse` writes one: one part an event (text a word an event), usage on each, `finishReason` last. */
export function geminiStream(answer: ScriptedAnswer): string {
  const event = (parts: unknown[], finish?: string): string => `data: ${JSON.stringify({
    candidates: [{ content: { parts, role: 'model' }, ...(finish === undefined ? {} : { finishReason: finish }), index: 0 }],
    usageMetadata: geminiUsage(answer),
    modelVersion: 'upstream-model',
    responseId: 'resp-scripted',
  })}\r\n\r\n`;
  const out: string[] = [];
  for (const part of geminiParts(answer)) {
    if (typeof part['text'] === 'string' && part['thought'] !== true) for (const word of part['text'].match(/\s*\S+/g) ?? []) out.push(event([{ text: word }]));
    else out.push(event([part]));
  }
  out.push(event([{ text: '' }], answer.stop ?? 'STOP'));
  return out.join('');
}

/** The same answer as a whole Gemini answer. */
export function geminiWhole(answer: ScriptedAnswer): Record<string, unknown> {
  return {
    candidates: [{ content: { parts: geminiParts(answer), role: 'model' }, finishReason: answer.stop ?? 'STOP', index: 0 }],
    usageMetadata: geminiUsage(answer),
    modelVersion: 'upstream-model',
    responseId: 'resp-scripted',
  };
}

/**
 * The same answer as ConverseStream events (`:event-type` and payload), as Bedrock sends them: a
 * reasoning block (text then signature), text deltas with no block start, each tool call opened by
 * `contentBlockStart` with its input in two pieces, `messageStop`, then `metadata` with the usage.
 */
export function converseEvents(answer: ScriptedAnswer): Array<[string, Record<string, unknown>]> {
  const usage = answer.usage ?? USAGE;
  const out: Array<[string, Record<string, unknown>]> = [['messageStart', { role: 'assistant' }]];
  let index = 0;
  if (answer.thinking !== undefined) {
    out.push(['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text: answer.thinking.text } } }]);
    out.push(['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { signature: answer.thinking.signature } } }]);
    out.push(['contentBlockStop', { contentBlockIndex: index }]);
    index += 1;
  }
  if (answer.text !== undefined) {
    for (const word of answer.text.match(/\s*\S+/g) ?? []) out.push(['contentBlockDelta', { contentBlockIndex: index, delta: { text: word } }]);
    out.push(['contentBlockStop', { contentBlockIndex: index }]);
    index += 1;
  }
  for (const call of answer.calls ?? []) {
    out.push(['contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: call.id, name: call.name } } }]);
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    out.push(['contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: args.slice(0, half) } } }]);
    out.push(['contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: args.slice(half) } } }]);
    out.push(['contentBlockStop', { contentBlockIndex: index }]);
    index += 1;
  }
  out.push(['messageStop', { stopReason: answer.stop ?? ((answer.calls ?? []).length > 0 ? 'tool_use' : 'end_turn') }]);
  out.push(['metadata', { usage: { inputTokens: usage.input, outputTokens: usage.output, totalTokens: usage.input + usage.output }, metrics: { latencyMs: 120 } }]);
  return out;
}

/** The same answer as a whole Converse answer. */
export function converseWhole(answer: ScriptedAnswer): Record<string, unknown> {
  const usage = answer.usage ?? USAGE;
  const content: Array<Record<string, unknown>> = [];
  if (answer.thinking !== undefined) content.push({ reasoningContent: { reasoningText: { text: answer.thinking.text, signature: answer.thinking.signature } } });
  if (answer.text !== undefined) content.push({ text: answer.text });
  for (const call of answer.calls ?? []) content.push({ toolUse: { toolUseId: call.id, name: call.name, input: call.input } });
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: answer.stop ?? ((answer.calls ?? []).length > 0 ? 'tool_use' : 'end_turn'),
    usage: { inputTokens: usage.input, outputTokens: usage.output, totalTokens: usage.input + usage.output },
    metrics: { latencyMs: 120 },
  };
}

/** Answers in the format of the path asked for, streamed or whole as the request says. */
export function answer(scripted: ScriptedAnswer): Responder {
  return (req: IncomingMessage, res: ServerResponse, seen: SeenRequest) => {
    if (seen.path.includes(':streamGenerateContent')) return respond.sse(geminiStream(scripted))(req, res, seen);
    if (seen.path.includes(':generateContent')) return respond.json(200, geminiWhole(scripted))(req, res, seen);
    const stream = seen.body['stream'] === true;
    if (seen.path.endsWith('/messages')) {
      return stream ? respond.sse(messagesStream(scripted))(req, res, seen) : respond.json(200, messagesWhole(scripted))(req, res, seen);
    }
    return stream ? respond.sse(chatStream(scripted))(req, res, seen) : respond.json(200, chatWhole(scripted))(req, res, seen);
  };
}

/** The text of the last tool result a Gemini request carries (a `functionResponse`'s `output`, else its JSON), when its last content holds one. */
function lastFunctionResponse(contents: Array<Record<string, unknown>>): string | undefined {
  const last = contents.at(-1);
  const parts = Array.isArray(last?.['parts']) ? (last['parts'] as Array<Record<string, unknown>>) : [];
  for (let i = parts.length - 1; i >= 0; i--) {
    const response = parts[i]?.['functionResponse'] as Record<string, unknown> | undefined;
    if (response === undefined) continue;
    const body = (response['response'] ?? {}) as Record<string, unknown>;
    const output = body['output'] ?? body['content'] ?? body['result'];
    return typeof output === 'string' ? output : JSON.stringify(body);
  }
  return undefined;
}

/** The text of the last tool result an upstream request carries (a chat `tool` message, a messages `tool_result`, a Gemini `functionResponse`, a Converse `toolResult`), or undefined. */
export function lastToolResult(body: Record<string, unknown>): string | undefined {
  if (Array.isArray(body['contents'])) return lastFunctionResponse(body['contents'] as Array<Record<string, unknown>>);
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Array<Record<string, unknown>>) : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] ?? {};
    if (message['role'] === 'tool') return typeof message['content'] === 'string' ? message['content'] : JSON.stringify(message['content']);
    if (message['role'] !== 'user' || !Array.isArray(message['content'])) continue;
    for (const block of message['content'] as Array<Record<string, unknown>>) {
      const converse = block['toolResult'] as Record<string, unknown> | undefined;
      if (converse !== undefined) return (converse['content'] as Array<Record<string, unknown>>).map((part) => String(part['text'] ?? '')).join('');
      if (block['type'] !== 'tool_result') continue;
      const content = block['content'];
      if (typeof content === 'string') return content;
      if (Array.isArray(content)) return (content as Array<Record<string, unknown>>).map((part) => String(part['text'] ?? '')).join('');
    }
    return undefined;
  }
  return undefined;
}

/**
 * A tool round trip as an upstream plays it: a first request (no tool result yet) is answered with
 * `first`; a request carrying a tool result with `then(result)`.
 */
export function toolRoundTrip(first: ScriptedAnswer, then: (result: string) => ScriptedAnswer): Responder {
  return (req, res, seen) => {
    const result = lastToolResult(seen.body);
    return answer(result === undefined ? first : then(result))(req, res, seen);
  };
}

/** The model id a scripted Responses upstream names in its answers (never the llmux id). */
export const RESPONSES_UPSTREAM_MODEL = 'gpt-upstream-2026-01-01';

/**
 * A Responses stream as OpenAI writes one (`event:` lines, sequence numbers, the response object in
 * created / in_progress / completed), naming the upstream's own model id; and the whole answer.
 */
export function responsesUpstream(scripted: ScriptedAnswer & { responseId?: string }): { stream: string; whole: Record<string, unknown> } {
  const frames: string[] = [];
  const emitter = createResponsesEmitter({
    model: RESPONSES_UPSTREAM_MODEL,
    echo: responseEcho({ model: RESPONSES_UPSTREAM_MODEL }),
    toolNames: NO_TOOL_NAMES,
    responseId: scripted.responseId ?? 'resp_upstream0001',
    // A fixed clock: a test that builds the expected stream a moment after the upstream built its
    // own must not see them differ because a second turned over between the two.
    now: () => 1_795_000_000_000,
    write: (frame) => frames.push(frame),
  });
  emitter.start();
  for (const word of (scripted.text ?? '').match(/\s*\S+/g) ?? []) emitter.text(word);
  for (const call of scripted.calls ?? []) {
    emitter.openCall(call.id, call.name);
    emitter.callArguments(JSON.stringify(call.input));
  }
  const usage = scripted.usage ?? USAGE;
  emitter.complete(toResponsesUsage({ inputTokens: usage.input, outputTokens: usage.output, cacheReadTokens: 0, cacheCreationTokens: 0 }, 0));
  return { stream: frames.join(''), whole: emitter.response() as unknown as Record<string, unknown> };
}
