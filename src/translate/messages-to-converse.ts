/**
 * Data flowing from the messages format to the Converse format (llmux.md section 8): a messages
 * request sent on to a Bedrock `converse` provider (a Llama, Mistral, Nova, … model, or Claude
 * through Converse). What every translation into Converse shares (messages, tool history, images,
 * tool choice, inference settings, each family's reasoning) is in ./converse-build.ts, whose header
 * holds those decisions.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - `system` (a string or text blocks joined with a blank line) is the system prompt; a
 *   mid-conversation system turn (Claude Code's) becomes user text where it stands.
 * - Blocks: text; base64 images (png, jpeg, gif, webp) as bytes, URL images as a placeholder
 *   (Converse takes bytes only); `document` by base64 as a document of its media type, a text or
 *   content source as text, a URL source as a placeholder; `search_result` as its text. `tool_use`
 *   is a `toolUse` with its id; `tool_result` a `toolResult` (text blocks, images where the family
 *   takes them, `is_error` as `status: "error"` or an `Error: ` prefix).
 * - `thinking` and `redacted_thinking` blocks go back as `reasoningContent` to Claude only, signed
 *   (./converse-build.ts); to other families, whose answers never carried Claude's signatures,
 *   they are dropped. A thinking block whose signature is a llmux seal (llmux.md section 11) goes
 *   back as the thinking it holds when this provider's family issued it, and is stripped
 *   otherwise, counted by the carry reader: a seal is never sent as Claude's signature. Server
 *   tool blocks (`server_tool_use`, `*_tool_result`) in history are dropped with a warning.
 * - Anthropic's server tools (`web_search_*`, `web_fetch_*`, `code_execution_*`): Converse has
 *   nothing like them, so a request offering one is a 400 naming it (./server-tools.ts). Other
 *   Anthropic-defined tools (`bash_*`, …) have no schema to send: dropped with a warning, with a
 *   `tool_choice` naming one.
 * - `tool_choice`: auto, any (Converse `any`), tool (`tool`), none (no tools offered);
 *   `disable_parallel_tool_use` cannot be said: dropped with a warning.
 * - `thinking` (models marked `reasoning` only): to Claude as it is, in
 *   `additionalModelRequestFields.thinking` (with `output_config.effort` for adaptive thinking),
 *   the Anthropic fields Bedrock passes to the model; to the families that take an effort, the
 *   budget as an effort (under 4096 low, under 16384 medium, else high), adaptive thinking as its
 *   `output_config.effort` (medium without one), disabled as nothing.
 * - `output_config.format` json_schema (structured outputs): an instruction appended to the system
 *   prompt, as for the other formats Converse has no JSON mode for; other `output_config` settings
 *   but `effort` are dropped with a warning.
 * - `thread`: a `continue` is a 400 `thread_unsupported_request`, a `create` dropped with a warning
 *   (./message-threads.ts).
 * - Dropped: `metadata` (no Converse field; every Claude Code request has one, so without a
 *   warning), `cache_control` (prompt caching across formats is not carried yet), `service_tier`;
 *   fields newer than this file with a warning.
 */
import type { MessagesRequest } from '../formats/wire.ts';
import type { ConverseContentBlock, ConverseRequest } from '../formats/converse.ts';
import { truncate } from '../common/errors.ts';
import { asRecord, records } from '../common/json.ts';
import type { RequestTranslateOptions, UpstreamModel } from './messages-to-chat.ts';
import type { UpstreamTool } from './responses-tools.ts';
import { messagesToolChoice } from './messages-to-gemini.ts';
import { formatInstruction } from './responses-input.ts';
import { checkThread } from './message-threads.ts';
import {
  type ToolOutput,
  buildConverseRequest,
  createConverseTurns,
  documentBlock,
  imageBlock,
  toolResultBlock,
  toolUseBlock,
} from './converse-build.ts';
import { type ConverseFamily, budgetEffort, converseFamily, effortFields, historyReasoning, sealedReasoning } from './converse-reasoning.ts';
import { type CarryReader, createCarryReader } from './carried.ts';
import { isServerTool, serverToolRefused } from './server-tools.ts';
import { isLlmuxSeal } from '../formats/responses.ts';

const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  'model', 'messages', 'max_tokens', 'system', 'temperature', 'top_p', 'top_k', 'stream', 'stop_sequences', 'tools',
  'tool_choice', 'thinking', 'service_tier', 'metadata', 'output_config', 'thread',
]);
const PARAGRAPH = '\n\n';

type Warn = (message: string) => void;

/**
 * Translates a validated messages request into the Converse request for `model`.
 * @throws GatewayError 400 `thread_unsupported_request` for a thread continuation; anything else
 *   odd is read leniently, dropped with a warning, never thrown.
 */
export function messagesRequestToConverse(req: MessagesRequest, model: UpstreamModel, options: RequestTranslateOptions = {}): ConverseRequest {
  const warn = options.onWarning ?? (() => {});
  const carry = options.carry ?? createCarryReader(undefined, model.issuer, warn);
  checkThread(req['thread'], 'the Converse format', 'a Converse upstream', warn);
  for (const key of Object.keys(req)) {
    if (!KNOWN_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, a Converse upstream has no equivalent`);
  }
  const family = converseFamily(model.upstreamId);

  const turns = createConverseTurns();
  records(req.messages).forEach((message, index) => {
    const path = `messages.${index}`;
    const blocks = contentBlocks(message['content']);
    if (message['role'] === 'system') turns.add('user', [{ text: systemText(message['content']) }]);
    else if (message['role'] === 'assistant') turns.add('assistant', blocks.flatMap((block, k) => assistantBlocks(block, `${path}.content.${k}`, family, carry, warn)));
    else turns.add('user', blocks.flatMap((block, k) => userBlocks(block, `${path}.content.${k}`, family, warn)));
  });

  const system = [systemText(req.system)];
  const outputConfig = asRecord(req['output_config']) ?? {};
  for (const key of Object.keys(outputConfig)) {
    const format = asRecord(outputConfig[key]);
    if (key === 'format' && format?.['type'] === 'json_schema') system.push(formatInstruction(format));
    else if (key !== 'effort') warn(`output_config.${truncate(key, 100)}: dropped, a Converse upstream has no equivalent`);
  }

  const tools: UpstreamTool[] = [];
  const dropped = new Set<string>();
  records(req.tools).forEach((tool, index) => {
    const name = typeof tool['name'] === 'string' ? tool['name'] : '';
    const type = tool['type'];
    if (isServerTool(type)) throw serverToolRefused(index, type, 'Converse');
    if (type !== undefined && type !== 'custom') {
      dropped.add(name);
      warn(`tools.${index}: dropped, "${truncate(String(type), 100)}" is an Anthropic-defined tool, which a Converse upstream cannot run`);
      return;
    }
    const upstream: UpstreamTool = { name, parameters: { type: 'object', properties: {}, ...asRecord(tool['input_schema']) } };
    if (typeof tool['description'] === 'string') upstream.description = tool['description'];
    tools.push(upstream);
  });
  const choiceRecord = asRecord(req.tool_choice);
  let choice = messagesToolChoice(choiceRecord);
  if (choice?.mode === 'tool' && dropped.has(choice.name)) {
    warn(`tool_choice: dropped, it names tool "${truncate(choice.name, 100)}", which a Converse upstream cannot run`);
    choice = undefined;
  }

  const fields = model.reasoning ? thinkingFields(req, family, warn) : undefined;
  return buildConverseRequest(turns, {
    model,
    system,
    tools,
    choice,
    oneCallAtATime: choiceRecord?.['disable_parallel_tool_use'] === true ? 'tool_choice.disable_parallel_tool_use' : undefined,
    inference: {
      maxTokens: typeof req.max_tokens === 'number' ? req.max_tokens : undefined,
      temperature: typeof req.temperature === 'number' ? req.temperature : undefined,
      topP: typeof req.top_p === 'number' ? req.top_p : undefined,
      stop: Array.isArray(req.stop_sequences) ? req.stop_sequences : [],
    },
    topK: typeof req.top_k === 'number' ? req.top_k : undefined,
    fields,
    warn,
  });
}

/** The reasoning fields `thinking` asks for, in the family's shape (see the header). */
function thinkingFields(req: MessagesRequest, family: ConverseFamily, warn: Warn): Record<string, unknown> | undefined {
  const thinking = asRecord(req.thinking);
  const effort = asRecord(req['output_config'])?.['effort'];
  if (thinking === undefined) return undefined;
  if (family === 'anthropic') {
    return typeof effort === 'string' && thinking['type'] === 'adaptive' ? { thinking, output_config: { effort } } : { thinking };
  }
  switch (thinking['type']) {
    case 'enabled':
      return typeof thinking['budget_tokens'] === 'number' ? effortFields(family, budgetEffort(thinking['budget_tokens']), 'thinking', warn) : undefined;
    case 'adaptive':
      return effortFields(family, typeof effort === 'string' ? effort : 'medium', 'thinking', warn);
    default:
      return undefined;
  }
}

function contentBlocks(content: unknown): Array<Record<string, unknown>> {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return records(content);
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  return records(system).map((block) => (typeof block['text'] === 'string' ? block['text'] : '')).filter((text) => text !== '').join(PARAGRAPH);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function assistantBlocks(block: Record<string, unknown>, path: string, family: ConverseFamily, carry: CarryReader, warn: Warn): ConverseContentBlock[] {
  switch (block['type']) {
    case 'text':
      return [{ text: text(block['text']) }];
    case 'tool_use':
      return [toolUseBlock(text(block['id']), text(block['name']), asRecord(block['input']) ?? {})];
    case 'thinking': {
      const signature = text(block['signature']);
      if (isLlmuxSeal(signature)) {
        const opened = carry.unseal(signature);
        const reasoning = opened === undefined || !carry.accept(opened.issuer) ? undefined : sealedReasoning(family, opened.item);
        return reasoning === undefined ? [] : [reasoning];
      }
      const reasoning = historyReasoning(family, text(block['thinking']), signature, undefined);
      return reasoning === undefined ? [] : [reasoning];
    }
    case 'redacted_thinking': {
      const reasoning = historyReasoning(family, '', undefined, text(block['data']));
      return reasoning === undefined ? [] : [reasoning];
    }
    default:
      warn(`${path}: dropped, a Converse upstream has nothing for a "${truncate(String(block['type']), 100)}" block in an assistant turn`);
      return [];
  }
}

function userBlocks(block: Record<string, unknown>, path: string, family: ConverseFamily, warn: Warn): ConverseContentBlock[] {
  switch (block['type']) {
    case 'tool_result': {
      const output: ToolOutput = { texts: [], images: [] };
      if (typeof block['content'] === 'string') output.texts.push(block['content']);
      for (const inner of records(block['content'])) {
        for (const piece of userBlocks(inner, path, family, warn)) {
          if ('text' in piece) output.texts.push(piece.text);
          else if ('image' in piece) output.images.push(piece);
          else output.texts.push('[document omitted: tool results sent to this model carry text and images only]');
        }
      }
      return [toolResultBlock(family, text(block['tool_use_id']), output, block['is_error'] === true)];
    }
    case 'image':
    case 'document': {
      const source = asRecord(block['source']) ?? {};
      if (source['type'] === 'base64' && typeof source['data'] === 'string') {
        const mediaType = text(source['media_type']) || 'application/pdf';
        const media = block['type'] === 'image' ? imageBlock(mediaType, source['data']) : documentBlock(mediaType, source['data'], typeof block['title'] === 'string' ? block['title'] : undefined);
        if (media !== undefined) return [media];
        warn(`${path}: ${truncate(mediaType, 100)} cannot be sent to a Converse upstream; a placeholder stands in its place`);
        return [{ text: `[${String(block['type'])} omitted: ${mediaType} cannot be sent to this model]` }];
      }
      if (source['type'] === 'text' && typeof source['data'] === 'string') return [{ text: source['data'] }];
      if (source['type'] === 'content') return records(source['content']).flatMap((inner) => userBlocks(inner, path, family, warn));
      warn(`${path}: a Converse upstream takes ${String(block['type'])}s as bytes only; a placeholder stands in its place`);
      return [{ text: `[${String(block['type'])} omitted: ${typeof source['url'] === 'string' ? truncate(source['url'], 200) : 'not sent as bytes'}]` }];
    }
    case 'search_result': {
      const joined = [block['title'], ...records(block['content']).map((inner) => inner['text'])].filter((piece) => typeof piece === 'string' && piece !== '').join(PARAGRAPH);
      return [{ text: joined }];
    }
    default:
      if (typeof block['text'] === 'string') return [{ text: block['text'] }];
      warn(`${path}: dropped, a Converse upstream has nothing for a "${truncate(String(block['type']), 100)}" block`);
      return [];
  }
}
