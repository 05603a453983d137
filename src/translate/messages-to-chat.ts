/**
 * Data flowing from the messages format to the chat format (translation.md): a messages-format
 * request sent on to a chat-completions upstream. A messages-format answer given to a chat client
 * goes through the neutral answer events instead (./answer-events.ts: ./messages-decoder.ts reads
 * it, ./chat-encoder.ts writes it).
 *
 * Longer than most files on purpose, like ./chat-to-messages.ts: translation.md's request table
 * reads against one file.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - Text blocks of one turn are joined with "\n\n" (as the spec does for system blocks), so
 *   separately authored pieces (Claude Code's `<system-reminder>` blocks) stay apart. (An answer's
 *   text blocks are joined with "", as its stream's text deltas are: ./chat-encoder.ts.)
 * - A user turn made only of text becomes string content; with an image or document it becomes
 *   content parts, in block order.
 * - Chat `tool` messages carry text only, so a `tool_result` is flattened to text: text blocks
 *   joined with "\n\n", an image replaced by the placeholder `[image omitted: …]` so the model knows
 *   one was there; it is not moved into another message.
 * - `document` blocks: a base64 PDF becomes a chat `file` part (OpenAI's file input), a text or
 *   content source becomes text, a URL source becomes a placeholder naming the URL.
 * - Consecutive turns of one role (accepted, as the Anthropic API accepts them) are merged into
 *   one, so the upstream sees alternating turns.
 * - Anthropic server tools (`web_search_*`, `web_fetch_*`, `code_execution_*`) run on Anthropic's
 *   side: no chat-completions upstream has them, so a request offering one is a 400 naming it
 *   (llmux.md section 11), never an answer that silently searched nothing. Other Anthropic-defined
 *   tools (schema-less client tools such as `bash_20250124`) cannot be described to a chat
 *   upstream: they are dropped, named in the request log's warnings (llmux.md section 5), with a
 *   `tool_choice` that names one of them.
 * - Carried state (llmux.md section 11, ./carry-chat.ts): a thinking block whose signature is a
 *   llmux seal brings back what the upstream issued (a Gemini thought signature onto its call,
 *   `reasoning_details` onto the message) when the upstream is of the issuer's family; anything
 *   else is stripped, counted by the request's carry reader.
 * - `thinking {type:'adaptive'}` with `output_config.effort` low / medium / high (max -> high)
 *   becomes `reasoning_effort`; adaptive without an effort leaves the upstream's default. Thinking
 *   types newer than this file are dropped with a warning.
 * - `metadata.user_id` longer than OpenAI's 64 characters (Claude Code's) goes as a stable hash
 *   (./chat-user.ts).
 * - `thread` (the Anthropic SDK's message threads): the server holds the conversation, which a
 *   translated request cannot give a chat upstream. A `create` is dropped with a warning (the
 *   request carries the whole history); a `continue`, which sends only the new messages, is a 400
 *   `thread_unsupported_request` with `error.details.error_code` saying so, on which the SDK goes
 *   on without threads and sends the whole history.
 * - `stop_sequences` pass through whole, even past OpenAI's limit of 4: other chat upstreams allow
 *   more, and a silent cut would change where the answer stops.
 * - Fields with no chat equivalent are dropped: `top_k`, `service_tier`, `cache_control`,
 *   `redacted_thinking` blocks, Anthropic's own thinking signatures. Top-level fields and block types newer than
 *   this file (`context_management`, `container`, …) are dropped too, each named in a warning.
 */
import type {
  ChatContentPart,
  ChatMessage,
  ChatRequest,
  ChatTool,
  ChatToolCall,
  ChatToolChoice,
  MessagesRequest,
  MessagesTool,
} from '../formats/wire.ts';
import { truncate } from '../common/errors.ts';
import { isServerTool, serverToolRefused } from './server-tools.ts';
import { isLlmuxSeal } from '../formats/responses.ts';
import { checkThread } from './message-threads.ts';
import { chatUserId } from './chat-user.ts';
import { asRecord, frozenJson, records } from '../common/json.ts';
import { deepFreeze } from '../common/json-recall.ts';
import { type CarriedItem, type CarryReader, GEMINI_FAMILY, type Issuer, createCarryReader } from './carried.ts';
import { carryIntoChatMessage, fillChatGaps } from './carry-chat.ts';

/** How the chosen upstream model wants its request shaped. */
export interface UpstreamModel {
  /** Sent as `model`. */
  upstreamId: string;
  /** Accepts reasoning settings (`reasoning_effort` / `thinking`); otherwise they are dropped. */
  reasoning: boolean;
  /** Which chat parameter carries the output cap (OpenAI reasoning models want `max_completion_tokens`). */
  maxTokensParam: 'max_tokens' | 'max_completion_tokens';
  /** DeepSeek-style: earlier thinking is replayed as `reasoning_content` on assistant messages. */
  replayReasoning: boolean;
  /** The catalog's `max_output_tokens`; 0 when unknown. */
  maxOutputTokens: number;
  /** Who answers: the provider and its family, what carried state it may be sent (llmux.md section 11); absent: none. */
  issuer?: Issuer;
  /** Prompt-cache breakpoints added for a messages upstream (model or provider `prompt_cache`, default `auto`). */
  promptCache?: boolean;
}

/** Options of the request translators. */
export interface RequestTranslateOptions {
  /** Told about input that was repaired or dropped rather than refused (for the request log). */
  onWarning?: (message: string) => void;
  /** Opens and sorts the carried state of the history; absent: every seal is stripped. */
  carry?: CarryReader;
}


/** Top-level fields this translator reads, or drops on purpose as documented above. */
const KNOWN_FIELDS = new Set([
  'model', 'messages', 'max_tokens', 'system', 'temperature', 'top_p', 'top_k', 'stream', 'stop_sequences', 'tools',
  'tool_choice', 'thinking', 'service_tier', 'metadata', 'output_config', 'thread',
]);

/** Block types a chat message can carry something of. */
const KNOWN_BLOCKS = new Set([
  'text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking',
]);

const PARAGRAPH = '\n\n';
const TOOL_RESULT_IMAGE_NOTE = '[image omitted: tool results sent to this model carry text only]';


/**
 * Chat messages translated from a frozen turn, and chat tools from a frozen tool: a turn the
 * gateway remembers from the key's last body (src/common/json-recall.ts) is the same frozen object
 * in the next body, so its translation, frozen too, is reused, and so is its JSON text
 * (`frozenJson`, which the upstream body's writer uses for frozen items). Kept only where the
 * translation depends on nothing but the turn: not for merged turns (a new object), nor for an
 * assistant turn that brings back carried state or whose model has fillChatGaps add to it.
 */
const translatedTurns = new WeakMap<object, readonly ChatMessage[]>();
/** Frozen turns with no block a chat message has nothing for (which are named by their place, so never kept). */
const quietTurns = new WeakSet<object>();
const translatedTools = new WeakMap<object, ChatTool>();

/**
 * Translates a validated messages-format request into the chat-completions request for `model`.
 * Throws `thread_unsupported_request` for a `thread` continuation, which a chat upstream cannot
 * continue; anything else odd is read leniently (fields of the wrong shape are left out, fields and
 * blocks it cannot carry dropped with a warning), never thrown.
 */
export function messagesRequestToChat(req: MessagesRequest, model: UpstreamModel, options: RequestTranslateOptions = {}): ChatRequest {
  const warn = options.onWarning ?? (() => {});
  const carry = options.carry ?? createCarryReader(undefined, model.issuer, warn);
  checkThread(req['thread'], 'the chat-completions format', 'a chat-completions upstream', warn);
  for (const key of Object.keys(req)) {
    if (!KNOWN_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, a chat-completions upstream has no equivalent`);
  }

  const messages: ChatMessage[] = [];
  const system = systemText(req.system);
  if (system !== '') messages.push({ role: 'system', content: system });

  const turns = records(req.messages);
  turns.forEach((message, index) => {
    if (quietTurns.has(message)) return;
    if (!warnUnknownBlocks(message['content'], index, warn) && Object.isFrozen(message)) quietTurns.add(message);
  });
  // An assistant turn's chat message depends on the model only through what fillChatGaps adds.
  const assistantsKept = !model.replayReasoning && carry.target?.family !== GEMINI_FAMILY;
  for (const message of mergedTurns(turns)) {
    if (message['role'] === 'system') {
      // A mid-conversation system turn (Claude Code) stays a system message where it stands.
      const text = systemText(message['content'] as MessagesRequest['system']);
      if (text !== '') messages.push({ role: 'system', content: text });
      continue;
    }
    const assistant = message['role'] === 'assistant';
    const kept = assistant && !assistantsKept ? undefined : translatedTurns.get(message);
    if (kept !== undefined) {
      for (const chatMessage of kept) messages.push(chatMessage);
      continue;
    }
    const from = messages.length;
    let keep = Object.isFrozen(message);
    if (assistant) {
      const { chatMessage, carried } = assistantToChat(message['content'], model, carry);
      messages.push(chatMessage);
      keep &&= assistantsKept && !carried;
    } else {
      pushUserTurn(messages, message['content']);
    }
    if (keep) {
      const translated = messages.slice(from);
      deepFreeze(translated);
      translatedTurns.set(message, translated);
    }
  }
  fillChatGaps(messages, model, carry);

  const out: ChatRequest = { model: model.upstreamId, messages };
  if (typeof req.max_tokens === 'number') out[model.maxTokensParam] = req.max_tokens;

  const tools: ChatTool[] = [];
  (Array.isArray(req.tools) ? req.tools : []).forEach((tool, index) => {
    const chatTool = translatedTools.get(tool) ?? toolToChat(tool, index, warn);
    if (chatTool !== undefined) tools.push(chatTool);
  });
  if (tools.length > 0) {
    out.tools = tools;
    const choice = asRecord(req.tool_choice);
    const chatChoice = choice === undefined ? undefined : toolChoiceToChat(choice);
    if (typeof chatChoice === 'object' && !tools.some((tool) => tool.function.name === chatChoice.function.name)) {
      warn(`tool_choice: dropped, it names tool "${truncate(chatChoice.function.name, 100)}", which this model's chat-completions upstream cannot run`);
    } else if (chatChoice !== undefined) {
      out.tool_choice = chatChoice;
    }
    if (choice?.['disable_parallel_tool_use'] === true) out.parallel_tool_calls = false;
  }

  const stop = Array.isArray(req.stop_sequences) ? req.stop_sequences.filter((sequence) => typeof sequence === 'string') : [];
  if (stop.length > 0) out.stop = stop;
  if (typeof req.temperature === 'number') out.temperature = req.temperature;
  if (typeof req.top_p === 'number') out.top_p = req.top_p;
  const userId = asRecord(req.metadata)?.['user_id'];
  if (typeof userId === 'string') out.user = chatUserId(userId);

  const thinkingType = asRecord(req.thinking)?.['type'];
  if (typeof thinkingType === 'string' && !['enabled', 'adaptive', 'disabled'].includes(thinkingType)) {
    warn(`thinking.type "${truncate(thinkingType, 100)}": dropped, a chat-completions upstream has no equivalent`);
  }
  for (const key of Object.keys(asRecord(req['output_config']) ?? {})) {
    if (key !== 'effort') warn(`output_config.${truncate(key, 100)}: dropped, a chat-completions upstream has no equivalent`);
  }
  if (model.reasoning) {
    const effort = reasoningEffort(req);
    if (effort !== undefined) out.reasoning_effort = effort;
  }

  if (req.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}

// ---------- reading leniently ----------



function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

// ---------- requests ----------

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  return joinTexts(records(system).map((block) => (block['type'] === 'text' ? text(block['text']) : '')));
}

/** Joins non-empty pieces with a blank line. */
function joinTexts(pieces: string[]): string {
  return pieces.filter((piece) => piece !== '').join(PARAGRAPH);
}

/**
 * One messages user turn -> chat messages: each `tool_result` becomes a `tool` message, emitted
 * first because chat wants tool answers right after the assistant message that called them;
 * whatever else the turn holds follows as one user message.
 */
function pushUserTurn(out: ChatMessage[], content: unknown): void {
  if (!Array.isArray(content)) {
    out.push({ role: 'user', content: text(content) });
    return;
  }
  const parts: ChatContentPart[] = [];
  let toolMessages = 0;
  for (const block of records(content)) {
    switch (block['type']) {
      case 'tool_result':
        out.push({ role: 'tool', tool_call_id: text(block['tool_use_id']), content: toolResultText(block) });
        toolMessages += 1;
        break;
      case 'image': {
        const part = imagePart(block);
        if (part !== undefined) parts.push(part);
        break;
      }
      case 'tool_use':
      case 'thinking':
      case 'redacted_thinking':
        // Not valid in a user turn; nothing a chat user message could carry.
        break;
      default:
        pushOtherPart(parts, block);
    }
  }
  if (parts.length > 0) out.push({ role: 'user', content: collapseParts(parts) });
  else if (toolMessages === 0) out.push({ role: 'user', content: '' });
}

/** Text-only parts become one string (what every chat upstream accepts); otherwise parts as they are. */
function collapseParts(parts: ChatContentPart[]): string | ChatContentPart[] {
  const texts: string[] = [];
  for (const part of parts) {
    if (part.type !== 'text') return parts;
    texts.push(text((part as Record<string, unknown>)['text']));
  }
  return texts.join(PARAGRAPH);
}

function imagePart(block: Record<string, unknown>): ChatContentPart | undefined {
  const source = asRecord(block['source']);
  if (source?.['type'] === 'url' && typeof source['url'] === 'string') return { type: 'image_url', image_url: { url: source['url'] } };
  if (source?.['type'] === 'base64' && typeof source['data'] === 'string') {
    return { type: 'image_url', image_url: { url: `data:${text(source['media_type'])};base64,${source['data']}` } };
  }
  return undefined;
}

/** Text, `document` and block types newer than this file: whatever of them a chat user message can carry. */
function pushOtherPart(parts: ChatContentPart[], block: Record<string, unknown>): void {
  if (block['type'] === 'document') {
    const source = asRecord(block['source']);
    if (source?.['type'] === 'base64' && typeof source['data'] === 'string') {
      const mediaType = typeof source['media_type'] === 'string' ? source['media_type'] : 'application/pdf';
      const title = typeof block['title'] === 'string' && block['title'] !== '' ? block['title'] : 'document.pdf';
      parts.push({ type: 'file', file: { filename: title, file_data: `data:${mediaType};base64,${source['data']}` } });
      return;
    }
  }
  const blockText = otherBlockText(block);
  if (blockText !== '') parts.push({ type: 'text', text: blockText });
}

/** The text a chat message can carry for a block: its text, or a placeholder naming what was left out. */
function otherBlockText(block: Record<string, unknown>): string {
  switch (block['type']) {
    case 'image':
      return TOOL_RESULT_IMAGE_NOTE;
    case 'document': {
      const source = asRecord(block['source']);
      if (source?.['type'] === 'text') return text(source['data']);
      if (source?.['type'] === 'content') return nestedText(source['content']);
      if (source?.['type'] === 'url' && typeof source['url'] === 'string') return `[document omitted: ${source['url']}]`;
      return '[document omitted: this model cannot read it]';
    }
    case 'search_result':
      return joinTexts([text(block['title']), nestedText(block['content'])]);
    default:
      return text(block['text']);
  }
}

function nestedText(content: unknown): string {
  if (!Array.isArray(content)) return text(content);
  return joinTexts(records(content).map(otherBlockText));
}

/** A tool result as chat `tool` content (text only); `is_error` keeps its signal as an `Error: ` prefix. */
function toolResultText(block: Record<string, unknown>): string {
  const resultText = nestedText(block['content']);
  if (block['is_error'] !== true) return resultText;
  return resultText === '' ? 'Error' : `Error: ${resultText}`;
}

/** An assistant turn as a chat message, and whether it brought back carried state (which depends on the upstream). */
function assistantToChat(content: unknown, model: UpstreamModel, carry: CarryReader): { chatMessage: ChatMessage; carried: boolean } {
  if (!Array.isArray(content)) return { chatMessage: { role: 'assistant', content: text(content) }, carried: false };
  const texts: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: ChatToolCall[] = [];
  const carried: CarriedItem[] = [];
  let sealed = false;
  for (const block of records(content)) {
    if (block['type'] === 'text') texts.push(text(block['text']));
    else if (block['type'] === 'tool_use') toolCalls.push(toolCall(block));
    else if (block['type'] === 'thinking') {
      reasoning.push(text(block['thinking']));
      const signature = block['signature'];
      if (typeof signature === 'string' && isLlmuxSeal(signature)) {
        sealed = true;
        const opened = carry.unseal(signature);
        if (opened !== undefined && carry.accept(opened.issuer)) carried.push(opened.item);
      }
    }
  }
  const joined = joinTexts(texts);
  // Chat wants content null beside tool_calls when there is no text, and a string otherwise.
  const message: ChatMessage = { role: 'assistant', content: joined === '' && toolCalls.length > 0 ? null : joined };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (model.replayReasoning) {
    const replay = joinTexts(reasoning);
    if (replay !== '') message.reasoning_content = replay;
  }
  carryIntoChatMessage(message, carried, model);
  return { chatMessage: message, carried: sealed };
}

function toolCall(block: Record<string, unknown>): ChatToolCall {
  const input = asRecord(block['input']) ?? {};
  return { id: text(block['id']), type: 'function', function: { name: text(block['name']), arguments: frozenJson(input) } };
}

/** A custom tool as a chat function; a server tool is a 400, another Anthropic-defined one dropped with a warning. */
function toolToChat(tool: MessagesTool, index: number, warn: (message: string) => void): ChatTool | undefined {
  const record = asRecord(tool) ?? {};
  const type = record['type'];
  if (isServerTool(type)) throw serverToolRefused(index, type, 'chat-completions');
  if (type !== undefined && type !== 'custom') {
    warn(`tools.${index}: dropped, "${truncate(String(type), 100)}" is an Anthropic-defined tool, which this model's chat-completions upstream cannot run`);
    return undefined;
  }
  const fn: ChatTool['function'] = { name: text(record['name']) };
  if (typeof record['description'] === 'string') fn.description = record['description'];
  const schema = asRecord(record['input_schema']);
  if (schema !== undefined) fn.parameters = schema;
  const chatTool: ChatTool = { type: 'function', function: fn };
  if (Object.isFrozen(tool)) {
    deepFreeze(chatTool);
    translatedTools.set(tool, chatTool);
  }
  return chatTool;
}

function toolChoiceToChat(choice: Record<string, unknown>): ChatToolChoice | undefined {
  switch (choice['type']) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: text(choice['name']) } };
    default:
      return undefined;
  }
}

/** Consecutive user or assistant turns as one turn each (a system turn stands between them). */
function mergedTurns(messages: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const message of messages) {
    const last = out[out.length - 1];
    if (last === undefined || message['role'] === 'system' || last['role'] !== message['role']) {
      out.push(message);
      continue;
    }
    out[out.length - 1] = { role: last['role'], content: [...asBlocks(last['content']), ...asBlocks(message['content'])] };
  }
  return out;
}

function asBlocks(content: unknown): unknown[] {
  if (Array.isArray(content)) return content;
  return typeof content === 'string' && content !== '' ? [{ type: 'text', text: content }] : [];
}

/** Names in the log the blocks of a turn that a chat message has nothing for; whether there were any. */
function warnUnknownBlocks(content: unknown, index: number, warn: (message: string) => void): boolean {
  let warned = false;
  records(content).forEach((block, k) => {
    const type = block['type'];
    if (typeof type === 'string' && !KNOWN_BLOCKS.has(type) && !type.endsWith('_tool_use') && !type.endsWith('_tool_result') && typeof block['text'] !== 'string') {
      warn(`messages.${index}.content.${k}: dropped, a chat-completions upstream has nothing for a "${truncate(type, 100)}" block`);
      warned = true;
    }
  });
  return warned;
}

/** `thinking` -> `reasoning_effort` by budget (translation.md); adaptive thinking by its effort. */
function reasoningEffort(req: MessagesRequest): string | undefined {
  const thinking = asRecord(req.thinking);
  if (thinking?.['type'] === 'enabled') {
    const budget = thinking['budget_tokens'];
    if (typeof budget !== 'number') return undefined;
    if (budget < 2048) return 'low';
    if (budget < 8192) return 'medium';
    return 'high';
  }
  if (thinking?.['type'] === 'adaptive') {
    const effort = asRecord(req['output_config'])?.['effort'];
    if (effort === 'low' || effort === 'medium' || effort === 'high') return effort;
    if (effort === 'max') return 'high';
  }
  return undefined;
}
