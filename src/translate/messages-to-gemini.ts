/**
 * Data flowing from the messages format to the Gemini format (llmux.md section 9): a messages
 * request sent on to a Gemini upstream (`format: "gemini"`). What every translation into Gemini
 * shares (turns, tool results, the placeholder signature, thinking budgets) is in
 * ./gemini-build.ts, whose header holds those decisions.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - `system` (a string or text blocks joined with a blank line) is the system instruction; a
 *   mid-conversation system turn (Claude Code's) becomes user text where it stands.
 * - Blocks: text; images by base64 or URL; a `document` by base64 (its media type) or URL (as a
 *   PDF), a text or content source as text; `search_result` as its text. `tool_use` is a
 *   `functionCall` with its id; `tool_result` a `functionResponse` (text blocks joined, `is_error`
 *   as `{"error": …}`), its images following it.
 * - `thinking` and `redacted_thinking` blocks: Anthropic's signatures mean nothing to a Gemini
 *   upstream, so they are dropped (counted as stripped state when they are llmux seals of another
 *   family); a thinking block whose signature is a llmux seal of Gemini's state (a thought
 *   signature, llmux.md section 11) gives it back to its call (./carry-gemini.ts). Server tool
 *   blocks (`server_tool_use`, `*_tool_result`) in history are dropped with a warning.
 * - Anthropic's server tools map to Gemini's own (llmux.md section 11): `web_search_*` ->
 *   `googleSearch` (its grounding comes back as the search blocks Anthropic writes:
 *   ./messages-encoder.ts), `web_fetch_*` -> `urlContext`, `code_execution_*` -> `codeExecution`;
 *   their limits (`max_uses`, domains, location) have no Gemini setting: dropped with a warning. Other
 *   Anthropic-defined tools (`bash_*`, `text_editor_*`, `computer_*`) have no schema to send:
 *   dropped with a warning, with a `tool_choice` naming one.
 * - `tool_choice`: auto -> AUTO, any -> ANY, tool -> ANY with that name allowed, none -> NONE;
 *   `disable_parallel_tool_use` has no Gemini equivalent: dropped with a warning.
 * - `thinking`: `enabled` -> its budget (at most 24576, the most every Gemini model takes),
 *   `adaptive` -> -1 (the model decides) or its `output_config.effort` by the effort table,
 *   `disabled` -> budget 0; thoughts asked back whenever thinking is on; models marked `reasoning`
 *   only. The budget keeps the answer its share of `max_tokens` (./gemini-build.ts).
 * - `output_config.format` json_schema (Anthropic's structured outputs) -> `responseMimeType:
 *   application/json` + `responseJsonSchema`; other `output_config` settings but `effort` are
 *   dropped with a warning.
 * - `thread`: a `continue` sends only the messages after a reply the server holds, which a
 *   translated request cannot give: a 400 `thread_unsupported_request` (as for chat upstreams),
 *   on which the Anthropic SDK sends the whole history; a `create` is dropped with a warning.
 * - Dropped: `metadata` (no Gemini field; every Claude Code request has one, so without a
 *   warning), `cache_control`, `service_tier`; fields newer than this file with a warning.
 */
import type { MessagesRequest } from '../formats/wire.ts';
import type { GeminiFunctionDeclaration, GeminiGenerationConfig, GeminiPart, GeminiRequest, GeminiTool } from '../formats/gemini-types.ts';
import { truncate } from '../common/errors.ts';
import { checkThread } from './message-threads.ts';
import { asRecord, records } from '../common/json.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import type { UpstreamToolChoice } from './responses-tools.ts';
import {
  createContentsBuilder,
  effortBudget,
  functionCallPart,
  functionResponsePart,
  geminiToolConfig,
  mediaPartFromUrl,
  stopSequences,
  thinkingConfig,
  withGenerationConfig,
} from './gemini-build.ts';
import type { ToGeminiOptions } from './chat-to-gemini.ts';
import { type CarriedItem, type CarryReader, createCarryReader } from './carried.ts';
import { countPlaceholders, signCalls } from './carry-gemini.ts';
import { isLlmuxSeal } from '../formats/responses.ts';

const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  'model', 'messages', 'max_tokens', 'system', 'temperature', 'top_p', 'top_k', 'stream', 'stop_sequences', 'tools',
  'tool_choice', 'thinking', 'service_tier', 'metadata', 'output_config', 'thread',
]);
const PARAGRAPH = '\n\n';
const MAX_THINKING_BUDGET = 24576;
/** The fields of an Anthropic server tool that say nothing Gemini's own would need. */
const SERVER_TOOL_FIELDS: ReadonlySet<string> = new Set(['type', 'name', 'cache_control']);
/** Anthropic's server tools and Gemini's own that do the same (llmux.md section 11). */
const SERVER_TOOLS: ReadonlyArray<[prefix: string, tool: string]> = [
  ['web_search_', 'googleSearch'],
  ['web_fetch_', 'urlContext'],
  ['code_execution_', 'codeExecution'],
];

/**
 * Translates a validated messages request into the Gemini request for `model`.
 * @throws GatewayError 400 `thread_unsupported_request` for a thread continuation; anything else
 *   odd is read leniently, dropped with a warning, never thrown.
 */
export function messagesRequestToGemini(req: MessagesRequest, model: UpstreamModel, options: ToGeminiOptions = {}): GeminiRequest {
  const warn = options.onWarning ?? (() => {});
  const carry = options.carry ?? createCarryReader(undefined, model.issuer, warn);
  checkThread(req['thread'], 'the Gemini format', 'a Gemini upstream', warn);
  for (const key of Object.keys(req)) {
    if (!KNOWN_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, a Gemini upstream has no equivalent`);
  }

  const builder = createContentsBuilder();
  const callNames = new Map<string, string>();
  records(req.messages).forEach((message, index) => {
    const path = `messages.${index}`;
    if (message['role'] === 'system') {
      const text = systemText(message['content']);
      builder.add('user', text === '' ? [] : [{ text }]);
    } else if (message['role'] === 'assistant') {
      const content = blocks(message['content']);
      const parts = content.flatMap((block, k) => assistantParts(block, `${path}.content.${k}`, callNames, warn));
      signCalls(parts, sealedState(content, carry));
      builder.add('model', parts);
    } else {
      builder.add('user', blocks(message['content']).flatMap((block, k) => userParts(block, `${path}.content.${k}`, callNames, warn)));
    }
  });

  const contents = builder.finish(countPlaceholders(carry));
  const out: GeminiRequest = { contents };
  const system = systemText(req.system);
  if (system !== '') out.systemInstruction = { parts: [{ text: system }] };

  const declarations: GeminiFunctionDeclaration[] = [];
  const googleTools: GeminiTool[] = [];
  const dropped = new Set<string>();
  records(req.tools).forEach((tool, index) => {
    const name = typeof tool['name'] === 'string' ? tool['name'] : '';
    const type = tool['type'];
    if (type !== undefined && type !== 'custom') {
      const server = typeof type === 'string' ? SERVER_TOOLS.find(([prefix]) => type.startsWith(prefix)) : undefined;
      if (server !== undefined) {
        if (!googleTools.some((entry) => server[1] in entry)) googleTools.push({ [server[1]]: {} });
        // Its limits (max_uses, allowed and blocked domains, the user's location) have no Gemini setting.
        for (const key of Object.keys(tool)) {
          if (!SERVER_TOOL_FIELDS.has(key)) warn(`tools.${index}.${truncate(key, 100)}: dropped, Gemini's ${server[1]} takes no such setting`);
        }
      } else {
        dropped.add(name);
        warn(`tools.${index}: dropped, "${truncate(String(type), 100)}" is an Anthropic-defined tool, which a Gemini upstream cannot run`);
      }
      return;
    }
    const declaration: GeminiFunctionDeclaration = { name };
    if (typeof tool['description'] === 'string') declaration.description = tool['description'];
    const schema = asRecord(tool['input_schema']);
    if (schema !== undefined) declaration.parametersJsonSchema = schema;
    declarations.push(declaration);
  });
  const tools: GeminiTool[] = [...googleTools];
  if (declarations.length > 0) tools.push({ functionDeclarations: declarations });
  if (tools.length > 0) out.tools = tools;
  const choiceRecord = asRecord(req.tool_choice);
  const choice = messagesToolChoice(choiceRecord);
  if (choice?.mode === 'tool' && dropped.has(choice.name)) {
    warn(`tool_choice: dropped, it names tool "${truncate(choice.name, 100)}", which a Gemini upstream cannot run`);
  } else if (choice !== undefined && declarations.length > 0) {
    out.toolConfig = geminiToolConfig(choice);
  }
  if (choiceRecord?.['disable_parallel_tool_use'] === true) warn('tool_choice.disable_parallel_tool_use: dropped, a Gemini upstream cannot be told to call one function at a time');

  const config: GeminiGenerationConfig = {};
  const maxTokens = typeof req.max_tokens === 'number' ? req.max_tokens : undefined;
  if (maxTokens !== undefined) config.maxOutputTokens = maxTokens;
  if (typeof req.temperature === 'number') config.temperature = req.temperature;
  if (typeof req.top_p === 'number') config.topP = req.top_p;
  if (typeof req.top_k === 'number') config.topK = req.top_k;
  const stop = stopSequences(Array.isArray(req.stop_sequences) ? req.stop_sequences : [], 'stop_sequences', warn);
  if (stop.length > 0) config.stopSequences = stop;
  // Anthropic's structured outputs say what Gemini's JSON mode says; the other settings have no equivalent.
  const outputConfig = asRecord(req['output_config']) ?? {};
  for (const key of Object.keys(outputConfig)) {
    const format = asRecord(outputConfig[key]);
    if (key === 'format' && format?.['type'] === 'json_schema' && asRecord(format['schema']) !== undefined) {
      config.responseMimeType = 'application/json';
      config.responseJsonSchema = format['schema'];
    } else if (key !== 'effort') {
      warn(`output_config.${truncate(key, 100)}: dropped, a Gemini upstream has no equivalent`);
    }
  }
  const budget = model.reasoning ? thinkingBudget(req) : undefined;
  if (budget !== undefined) {
    const thinking = budget < 0 ? { thinkingBudget: -1, includeThoughts: true } : thinkingConfig(budget, maxTokens, 'thinking', warn);
    if (thinking !== undefined) config.thinkingConfig = thinking;
  }
  return withGenerationConfig(out, config);
}

/** The budget `thinking` asks for: -1 for adaptive without an effort, 0 for disabled, undefined for none. */
function thinkingBudget(req: MessagesRequest): number | undefined {
  const thinking = asRecord(req.thinking);
  switch (thinking?.['type']) {
    case 'enabled': {
      const budget = thinking['budget_tokens'];
      return typeof budget === 'number' ? Math.min(budget, MAX_THINKING_BUDGET) : undefined;
    }
    case 'adaptive': {
      const effort = asRecord(req['output_config'])?.['effort'];
      return (typeof effort === 'string' ? effortBudget(effort) : undefined) ?? -1;
    }
    case 'disabled':
      return 0;
    default:
      return undefined;
  }
}

function blocks(content: unknown): Array<Record<string, unknown>> {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return records(content);
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  return records(system).map((block) => (typeof block['text'] === 'string' ? block['text'] : '')).filter((text) => text !== '').join(PARAGRAPH);
}

function assistantParts(block: Record<string, unknown>, path: string, callNames: Map<string, string>, warn: (message: string) => void): GeminiPart[] {
  switch (block['type']) {
    case 'text':
      return typeof block['text'] === 'string' && block['text'] !== '' ? [{ text: block['text'] }] : [];
    case 'tool_use': {
      const id = typeof block['id'] === 'string' ? block['id'] : '';
      const name = typeof block['name'] === 'string' ? block['name'] : '';
      callNames.set(id, name);
      return [functionCallPart(id, name, asRecord(block['input']) ?? {})];
    }
    case 'thinking':
    case 'redacted_thinking':
      // Anthropic's signatures mean nothing to Gemini; the state llmux sealed in one is read apart (sealedState).
      return [];
    default:
      warn(`${path}: dropped, a Gemini upstream has nothing for a "${truncate(String(block['type']), 100)}" block in a model turn`);
      return [];
  }
}

/** The state the thinking blocks of an assistant turn carry sealed, when a Gemini upstream may be sent it. */
function sealedState(content: ReadonlyArray<Record<string, unknown>>, carry: CarryReader): CarriedItem[] {
  const items: CarriedItem[] = [];
  for (const block of content) {
    const signature = block['signature'];
    if (block['type'] !== 'thinking' || typeof signature !== 'string' || !isLlmuxSeal(signature)) continue;
    const opened = carry.unseal(signature);
    if (opened !== undefined && carry.accept(opened.issuer)) items.push(opened.item);
  }
  return items;
}

function userParts(block: Record<string, unknown>, path: string, callNames: Map<string, string>, warn: (message: string) => void): GeminiPart[] {
  switch (block['type']) {
    case 'tool_result': {
      const id = typeof block['tool_use_id'] === 'string' ? block['tool_use_id'] : '';
      const texts: string[] = [];
      const media: GeminiPart[] = [];
      if (typeof block['content'] === 'string') texts.push(block['content']);
      for (const inner of records(block['content'])) {
        for (const part of userParts(inner, path, callNames, warn)) {
          if (typeof part.text === 'string') texts.push(part.text);
          else media.push(part);
        }
      }
      const output = texts.filter((text) => text !== '').join(PARAGRAPH);
      const name = callNames.get(id);
      if (name === undefined) {
        warn(`${path}: answers tool_use "${truncate(id, 100)}", which is not in the messages; sent as user text`);
        return [{ text: `Output of tool call ${id}:\n${output}` }, ...media];
      }
      return [functionResponsePart(id, name, output, block['is_error'] === true), ...media];
    }
    case 'image':
    case 'document': {
      const source = asRecord(block['source']) ?? {};
      if (source['type'] === 'base64' && typeof source['data'] === 'string') {
        const mimeType = typeof source['media_type'] === 'string' ? source['media_type'] : 'application/pdf';
        return [{ inlineData: { mimeType, data: source['data'] } }];
      }
      if (source['type'] === 'url' && typeof source['url'] === 'string') {
        const part = mediaPartFromUrl(source['url']);
        if (block['type'] === 'document' && part.fileData !== undefined) part.fileData.mimeType = 'application/pdf';
        return [part];
      }
      if (source['type'] === 'text' && typeof source['data'] === 'string') return [{ text: source['data'] }];
      if (source['type'] === 'content') return records(source['content']).flatMap((inner) => userParts(inner, path, callNames, warn));
      warn(`${path}: dropped, a Gemini upstream cannot read this ${String(block['type'])} source`);
      return [];
    }
    case 'search_result': {
      const text = [block['title'], ...records(block['content']).map((inner) => inner['text'])].filter((piece) => typeof piece === 'string' && piece !== '').join(PARAGRAPH);
      return text === '' ? [] : [{ text }];
    }
    default:
      if (typeof block['text'] === 'string') return block['text'] === '' ? [] : [{ text: block['text'] }];
      warn(`${path}: dropped, a Gemini upstream has nothing for a "${truncate(String(block['type']), 100)}" block`);
      return [];
  }
}

/** A messages `tool_choice` in neither format's words (./responses-tools.ts); undefined when unset or unreadable. */
export function messagesToolChoice(choice: Record<string, unknown> | undefined): UpstreamToolChoice | undefined {
  switch (choice?.['type']) {
    case 'auto':
      return { mode: 'auto' };
    case 'any':
      return { mode: 'required' };
    case 'none':
      return { mode: 'none' };
    case 'tool':
      return { mode: 'tool', name: typeof choice['name'] === 'string' ? choice['name'] : '' };
    default:
      return undefined;
  }
}
