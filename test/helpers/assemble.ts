/**
 * Streams assembled into whole answers the way the official SDKs accumulate them: the Anthropic
 * SDK's `MessageStream` (blocks by `index`, text and thinking deltas appended, citations gathered,
 * `partial_json` gathered per block and parsed, `message_delta` setting the stop reason) and the OpenAI SDK's
 * `ChatCompletionStream` (choices by `index`, `content` / `refusal` / reasoning appended, tool
 * calls by `index` with their `arguments` appended, the last `finish_reason`). Used to compare a
 * stream with the whole answer of the same content, and to derive the whole upstream answer of a
 * recorded stream that has no whole twin.
 */
import { createSseParser } from '../../src/sse/parser.ts';
import type { SseEvent } from '../../src/sse/parser.ts';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The parsed events of an SSE byte stream. */
export function sseEvents(bytes: Buffer | string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createSseParser({ onEvent: (event) => events.push(event) });
  parser.feed(typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
  parser.end();
  return events;
}

/** A tool input that did not parse: the raw text, kept so two sides can still be compared. */
export interface IncompleteInput { incomplete: string }

/**
 * A ConverseStream answer (as the Bedrock platform hands it on: `event: <:event-type>`) as one
 * Converse answer, the way callers of the AWS SDK's `ConverseStreamCommand` gather it: blocks by
 * `contentBlockIndex`, text and reasoning text appended, the signature and redacted content set,
 * a tool's `input` strings joined and parsed (`{}` when empty), `messageStop` and `metadata` as the
 * whole answer's `stopReason`, `usage` and `metrics`. Undefined when the stream holds an error.
 */
export function assembleConverseStream(bytes: Buffer | string): Json | undefined {
  const blocks: Json[] = [];
  const inputs = new Map<number, string>();
  const answer: Json = {};
  for (const event of sseEvents(bytes)) {
    const data = JSON.parse(event.data) as Json;
    const index = data['contentBlockIndex'] as number;
    switch (event.event) {
      case 'contentBlockStart': {
        const toolUse = (data['start'] as Json)['toolUse'] as Json | undefined;
        if (toolUse !== undefined) blocks[index] = { toolUse: { toolUseId: toolUse['toolUseId'], name: toolUse['name'], input: {} } };
        break;
      }
      case 'contentBlockDelta': {
        const delta = data['delta'] as Json;
        if (typeof delta['text'] === 'string') {
          const block = (blocks[index] ??= { text: '' });
          block['text'] = String(block['text']) + delta['text'];
        } else if (isRecord(delta['toolUse'])) {
          inputs.set(index, (inputs.get(index) ?? '') + String(delta['toolUse']['input']));
        } else if (isRecord(delta['reasoningContent'])) {
          const reasoning = delta['reasoningContent'];
          if (typeof reasoning['redactedContent'] === 'string') {
            blocks[index] = { reasoningContent: { redactedContent: reasoning['redactedContent'] } };
            break;
          }
          const block = (blocks[index] ??= { reasoningContent: { reasoningText: { text: '' } } });
          const text = (block['reasoningContent'] as Json)['reasoningText'] as Json;
          if (typeof reasoning['text'] === 'string') text['text'] = String(text['text']) + reasoning['text'];
          if (typeof reasoning['signature'] === 'string') text['signature'] = reasoning['signature'];
        }
        break;
      }
      case 'messageStop':
        answer['stopReason'] = data['stopReason'];
        break;
      case 'metadata':
        answer['usage'] = data['usage'];
        answer['metrics'] = data['metrics'];
        break;
      case 'messageStart':
      case 'contentBlockStop':
        break;
      default:
        return undefined;
    }
  }
  for (const [index, input] of inputs) {
    const toolUse = blocks[index]?.['toolUse'] as Json | undefined;
    if (toolUse !== undefined) toolUse['input'] = input === '' ? {} : JSON.parse(input);
  }
  return { output: { message: { role: 'assistant', content: blocks.filter((block) => block !== undefined) } }, ...answer };
}

/**
 * A messages-format stream as one messages answer (`MessageStream.finalMessage()`, with the
 * `stop_details` of a refusal), or undefined when the stream holds an error event. A tool block's input is its gathered `partial_json` parsed,
 * `{}` when there was none, or `{incomplete: text}` when it does not parse (a call cut by max_tokens).
 */
export function assembleMessagesStream(bytes: Buffer | string): Json | undefined {
  let message: Json | undefined;
  const content: Json[] = [];
  const json = new Map<number, string>();
  for (const event of sseEvents(bytes)) {
    const data = JSON.parse(event.data) as Json;
    switch (data['type']) {
      case 'error':
        return undefined;
      case 'message_start':
        message = { ...(data['message'] as Json) };
        break;
      case 'content_block_start':
        content[data['index'] as number] = { ...(data['content_block'] as Json) };
        break;
      case 'content_block_delta': {
        const index = data['index'] as number;
        const block = content[index];
        const delta = data['delta'] as Json;
        if (block === undefined) break;
        if (delta['type'] === 'text_delta' && block['type'] === 'text') block['text'] = String(block['text'] ?? '') + String(delta['text']);
        else if (delta['type'] === 'thinking_delta' && block['type'] === 'thinking') block['thinking'] = String(block['thinking'] ?? '') + String(delta['thinking']);
        else if (delta['type'] === 'signature_delta' && block['type'] === 'thinking') block['signature'] = delta['signature'];
        else if (delta['type'] === 'input_json_delta') json.set(index, (json.get(index) ?? '') + String(delta['partial_json']));
        else if (delta['type'] === 'citations_delta' && block['type'] === 'text') block['citations'] = [...(Array.isArray(block['citations']) ? block['citations'] : []), delta['citation']];
        break;
      }
      case 'message_delta': {
        if (message === undefined) break;
        const delta = data['delta'] as Json;
        message['stop_reason'] = delta['stop_reason'];
        message['stop_sequence'] = delta['stop_sequence'] ?? null;
        if (delta['stop_details'] !== undefined) message['stop_details'] = delta['stop_details'];
        message['usage'] = { ...(message['usage'] as Json), ...(data['usage'] as Json) };
        break;
      }
      default:
        break;
    }
  }
  if (message === undefined) return undefined;
  json.forEach((text, index) => {
    const block = content[index];
    if (block === undefined) return;
    if (text.trim() === '') return;
    try {
      block['input'] = JSON.parse(text);
    } catch {
      block['input'] = { incomplete: text } satisfies IncompleteInput;
    }
  });
  message['content'] = content.filter((block) => block !== undefined);
  return message;
}

/**
 * A chat-format stream as one chat completion (`ChatCompletionStream.finalChatCompletion()`), or
 * undefined when the stream holds an error chunk. Legacy `function_call` deltas are gathered too.
 */
export function assembleChatStream(bytes: Buffer | string): Json | undefined {
  let completion: Json | undefined;
  const choices = new Map<number, Json>();
  for (const event of sseEvents(bytes)) {
    if (event.data === '[DONE]') break;
    const chunk = JSON.parse(event.data) as Json;
    if (chunk['error'] !== undefined && chunk['error'] !== null) return undefined;
    const { choices: chunkChoices, ...rest } = chunk;
    completion = { ...(completion ?? {}), ...rest };
    for (const choice of Array.isArray(chunkChoices) ? (chunkChoices as Json[]) : []) {
      const index = typeof choice['index'] === 'number' ? choice['index'] : 0;
      let snapshot = choices.get(index);
      if (snapshot === undefined) {
        snapshot = { index, message: { role: 'assistant', content: null }, finish_reason: null };
        choices.set(index, snapshot);
      }
      const message = snapshot['message'] as Json;
      const delta = isRecord(choice['delta']) ? choice['delta'] : {};
      for (const key of ['content', 'refusal', 'reasoning_content', 'reasoning']) {
        const piece = delta[key];
        if (typeof piece === 'string') message[key] = String(message[key] ?? '') + piece;
      }
      if (isRecord(delta['function_call'])) {
        const call = (message['function_call'] as Json | undefined) ?? { name: '', arguments: '' };
        const fragment = delta['function_call'];
        if (typeof fragment['name'] === 'string') call['name'] = String(call['name']) + fragment['name'];
        if (typeof fragment['arguments'] === 'string') call['arguments'] = String(call['arguments']) + fragment['arguments'];
        message['function_call'] = call;
      }
      if (Array.isArray(delta['tool_calls'])) {
        const calls = (message['tool_calls'] as Json[] | undefined) ?? [];
        for (const fragment of delta['tool_calls'] as Json[]) {
          const at = typeof fragment['index'] === 'number' ? fragment['index'] : calls.length;
          const call = calls[at] ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
          calls[at] = call;
          const fn = call['function'] as Json;
          if (typeof fragment['id'] === 'string' && fragment['id'] !== '') call['id'] = fragment['id'];
          const fragmentFn = isRecord(fragment['function']) ? fragment['function'] : {};
          if (typeof fragmentFn['name'] === 'string' && fragmentFn['name'] !== '') fn['name'] = fragmentFn['name'];
          if (typeof fragmentFn['arguments'] === 'string') fn['arguments'] = String(fn['arguments']) + fragmentFn['arguments'];
        }
        message['tool_calls'] = calls;
      }
      if (typeof choice['finish_reason'] === 'string') snapshot['finish_reason'] = choice['finish_reason'];
      for (const key of ['stop_reason', 'matched_stop']) if (choice[key] !== undefined) snapshot[key] = choice[key];
    }
  }
  if (completion === undefined) return undefined;
  return { ...completion, object: 'chat.completion', choices: [...choices.values()].sort((a, b) => Number(a['index']) - Number(b['index'])) };
}

/** What two answers must agree on, read from a messages answer. */
export interface MessagesGist {
  text: string;
  thinking: string;
  tools: Array<{ id: string; name: string; input: unknown }>;
  stopReason: unknown;
  stopSequence: unknown;
}

export function messagesGist(answer: Json): MessagesGist {
  const gist: MessagesGist = { text: '', thinking: '', tools: [], stopReason: answer['stop_reason'], stopSequence: answer['stop_sequence'] ?? null };
  for (const block of (answer['content'] as Json[] | undefined) ?? []) {
    if (block['type'] === 'text') gist.text += String(block['text'] ?? '');
    else if (block['type'] === 'thinking') gist.thinking += String(block['thinking'] ?? '');
    else if (block['type'] === 'tool_use') gist.tools.push({ id: String(block['id']), name: String(block['name']), input: block['input'] });
  }
  return gist;
}

/** What two answers must agree on, read from a chat completion (choice 0). */
export interface ChatGist {
  content: string;
  reasoning: string;
  tools: Array<{ id: string; name: string; input: unknown }>;
  finishReason: unknown;
}

/** Arguments as the input they stand for: parsed, or `{incomplete: text}` when they do not parse. */
export function argumentsInput(args: unknown): unknown {
  const text = typeof args === 'string' ? args : '';
  try {
    return JSON.parse(text);
  } catch {
    return { incomplete: text } satisfies IncompleteInput;
  }
}

export function chatGist(completion: Json): ChatGist {
  const choice = ((completion['choices'] as Json[] | undefined) ?? []).find((c) => (c['index'] ?? 0) === 0) ?? {};
  const message = (choice['message'] as Json | undefined) ?? {};
  const tools = ((message['tool_calls'] as Json[] | undefined) ?? []).map((call) => {
    const fn = (call['function'] as Json | undefined) ?? {};
    return { id: String(call['id']), name: String(fn['name']), input: argumentsInput(fn['arguments']) };
  });
  return {
    // A chat client reads null content as no text.
    content: typeof message['content'] === 'string' ? message['content'] : '',
    reasoning: String(message['reasoning_content'] ?? message['reasoning'] ?? ''),
    tools,
    finishReason: choice['finish_reason'],
  };
}

/**
 * Recordings with no whole answer to agree with: the upstream fails mid-answer, or (Azure) only
 * the first chunk was recorded, so the stream ends before the answer does.
 */
export const FAILING_RECORDINGS: ReadonlySet<string> = new Set([
  'azure-openai-stream-first-chunk-prompt-filter.sse',
  'openai-stream-error-midstream.sse',
  'anthropic-stream-error-midstream-overloaded.sse',
  'anthropic-docs-stream-error-event.sse',
  'converse-stream-exception.sse',
]);

/** Generated ids differ between two translations of the same answer; only ids an upstream gave must agree. */
const GENERATED_ID = /^(toolu_|call_)[0-9a-f]{24}$/;

/** A gist with made-up tool ids read as `(generated)`. */
export function withoutGeneratedIds<T extends { tools: Array<{ id: string }> }>(gist: T): T {
  return { ...gist, tools: gist.tools.map((tool) => (GENERATED_ID.test(tool.id) ? { ...tool, id: '(generated)' } : tool)) };
}

/**
 * A Gemini stream (`data:` events, each a whole `GenerateContentResponse`) as one whole answer,
 * the way Gemini CLI gathers a streamed turn: candidate 0's parts in order, adjacent text pieces of
 * one kind (answer or thought) merged and keeping the last signature given among them, empty text
 * without a signature left out; the last `finishReason`, usage, `modelVersion` and `responseId`.
 * Undefined when the stream holds an error event. Reads `[`…`]` JSON-array streams too.
 */
export function assembleGeminiStream(bytes: Buffer | string): Json | undefined {
  const text = typeof bytes === 'string' ? bytes : bytes.toString('utf8');
  const responses = text.trimStart().startsWith('[')
    ? (JSON.parse(text) as Json[])
    : sseEvents(text).map((event) => JSON.parse(event.data) as Json);
  const parts: Json[] = [];
  const answer: Json = {};
  let finishReason: unknown;
  for (const response of responses) {
    if (response['error'] !== undefined) return undefined;
    for (const key of ['usageMetadata', 'modelVersion', 'responseId']) if (response[key] !== undefined) answer[key] = response[key];
    const candidate = (response['candidates'] as Json[] | undefined)?.[0];
    if (candidate === undefined) continue;
    if (candidate['finishReason'] !== undefined) finishReason = candidate['finishReason'];
    for (const part of ((candidate['content'] as Json | undefined)?.['parts'] as Json[] | undefined) ?? []) {
      const last = parts.at(-1);
      if (typeof part['text'] === 'string') {
        if (part['text'] === '' && part['thoughtSignature'] === undefined) continue;
        if (last !== undefined && typeof last['text'] === 'string' && last['thought'] === part['thought']) {
          last['text'] = String(last['text']) + part['text'];
          if (part['thoughtSignature'] !== undefined) last['thoughtSignature'] = part['thoughtSignature'];
          continue;
        }
      }
      parts.push({ ...part });
    }
  }
  return {
    candidates: [{ content: { parts, role: 'model' }, ...(finishReason === undefined ? {} : { finishReason }), index: 0 }],
    ...answer,
  };
}

/** What two Gemini answers must agree on: candidate 0's text, thoughts and calls, and its finish reason. */
export interface GeminiGist {
  text: string;
  thoughts: string;
  tools: Array<{ id: string; name: string; input: unknown }>;
  finishReason: unknown;
}

export function geminiGist(answer: Json): GeminiGist {
  const candidate = (answer['candidates'] as Json[] | undefined)?.[0] ?? {};
  const gist: GeminiGist = { text: '', thoughts: '', tools: [], finishReason: candidate['finishReason'] };
  for (const part of ((candidate['content'] as Json | undefined)?.['parts'] as Json[] | undefined) ?? []) {
    if (typeof part['text'] === 'string') {
      if (part['thought'] === true) gist.thoughts += part['text'];
      else gist.text += part['text'];
    }
    const call = part['functionCall'];
    if (isRecord(call)) gist.tools.push({ id: String(call['id'] ?? ''), name: String(call['name']), input: call['args'] ?? {} });
  }
  return gist;
}
