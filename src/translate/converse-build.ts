/**
 * Building a Converse request from another format's (llmux.md section 8): what ./chat-to-converse.ts,
 * ./messages-to-converse.ts and ./responses-to-converse.ts share. The body has no model and no
 * streaming flag: Bedrock takes both in the path (`/model/{id}/converse`, `/converse-stream`).
 *
 * Decisions where the spec is silent (the Bedrock Runtime API reference and the model families'
 * parameter pages decide, and these notes record how):
 * - Messages: roles `user` and `assistant`, alternating from a user message (Bedrock refuses
 *   anything else): consecutive same-role content is merged, a conversation that would open with
 *   the assistant gets a minimal user turn `"."` first. Blank text blocks are left out (Bedrock
 *   refuses "blank" text), tool results go first in their user message and reasoning first in its
 *   assistant message, and the last assistant message (a prefill) loses its trailing whitespace
 *   (Claude refuses it). A message with a document gets a text block naming it (Bedrock wants text
 *   beside a document).
 * - Tool calls and results: Bedrock refuses `toolUse` / `toolResult` blocks in a request without a
 *   `toolConfig`, and a result that answers no call of the assistant message just before it. So
 *   when no tool is offered (no tools, or `tool_choice: none`, which Converse can only say by
 *   offering none), the history's calls and results are sent as text (`[tool call …]`, `Output of
 *   tool call …`), with a warning; a result answering no call just before it is sent as text too.
 * - Tool results: text as `{text}` (an empty result as `"."`); images only to Claude (the only
 *   models that take them there), others get a placeholder; `status: "error"` only to Claude and
 *   Nova (the families the reference lists), others get the output prefixed `Error: `.
 * - Images: Converse takes bytes only (png, jpeg, gif, webp). A data URL of one of those goes as
 *   bytes; an http(s) URL cannot be fetched by Bedrock and is not fetched by llmux: a placeholder
 *   `[image omitted: …]` takes its place, with a warning. PDFs (and csv, html, txt, md, doc(x),
 *   xls(x)) go as documents, their names made of the characters Bedrock allows.
 * - `toolChoice`: `auto` is Converse's default and is not sent; `any` (required) and `tool` are
 *   sent to the families that take them (Claude, Nova, Mistral) and dropped with a warning for the
 *   others, whose requests Bedrock refuses with them.
 * - `inferenceConfig`: `maxTokens`, `temperature` and `topP` held to Converse's 0..1, stop
 *   sequences that are non-empty strings. `top_k` goes in `additionalModelRequestFields` where the
 *   family takes it: `top_k` (Claude, Mistral), `inferenceConfig.topK` (Nova); dropped otherwise.
 * - Reasoning, and the model families a request is shaped for (read from the model id), are
 *   ./converse-reasoning.ts's.
 * - System prompts: text blocks; the few models that take none (Mistral 7B, Mixtral 8x7B, Titan
 *   Text) get the system text as the first user text instead.
 */
import type {
  ConverseContentBlock,
  ConverseDocumentFormat,
  ConverseImageFormat,
  ConverseInferenceConfig,
  ConverseMessage,
  ConverseRequest,
  ConverseRole,
  ConverseToolConfig,
  ConverseToolResultContent,
} from '../formats/converse.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import type { UpstreamTool, UpstreamToolChoice } from './responses-tools.ts';
import { parseDataUrl } from './responses-input.ts';
import { addTurn, frontFirst, type Turn } from './message-turns.ts';
import { type ConverseFamily, converseFamily, takesSystemPrompt } from './converse-reasoning.ts';
import { truncate } from '../common/errors.ts';

type Warn = (message: string) => void;

const FIRST_TURN_FILLER = '.';
const EMPTY_RESULT = '.';
const PARAGRAPH = '\n\n';
const HTTP_URL = /^https?:\/\//i;
const IMAGE_FORMATS: ReadonlyMap<string, ConverseImageFormat> = new Map([
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['image/jpg', 'jpeg'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
]);
const DOCUMENT_FORMATS: ReadonlyMap<string, ConverseDocumentFormat> = new Map([
  ['application/pdf', 'pdf'],
  ['text/csv', 'csv'],
  ['text/html', 'html'],
  ['text/plain', 'txt'],
  ['text/markdown', 'md'],
  ['application/msword', 'doc'],
  ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
  ['application/vnd.ms-excel', 'xls'],
  ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'xlsx'],
]);
/** Characters a document name may not hold (Bedrock: letters, digits, whitespace, `-`, `()`, `[]`). */
const DOCUMENT_NAME_REFUSED = /[^A-Za-z0-9 \-()[\]]+/g;

// ---------- content ----------

/** An image from its media type and base64 bytes, or undefined when Converse takes no such image. */
export function imageBlock(mediaType: string, base64: string): ConverseContentBlock | undefined {
  const format = IMAGE_FORMATS.get(mediaType.toLowerCase());
  return format === undefined ? undefined : { image: { format, source: { bytes: base64 } } };
}

/** An image (or a document, named `name`) by URL: a data URL as bytes, anything else a placeholder with a warning. */
export function mediaFromUrl(url: string, path: string, warn: Warn, name?: string): ConverseContentBlock {
  const data = parseDataUrl(url);
  if (data !== undefined) {
    const block = imageBlock(data.mediaType, data.base64) ?? documentBlock(data.mediaType, data.base64, name);
    if (block !== undefined) return block;
    warn(`${path}: ${truncate(data.mediaType, 100)} cannot be sent to a Converse upstream; a placeholder stands in its place`);
    return { text: `[file omitted: ${data.mediaType} cannot be sent to this model]` };
  }
  warn(`${path}: ${HTTP_URL.test(url) ? 'an image URL' : 'this URL'} cannot be sent to a Converse upstream, which takes image bytes only; a placeholder stands in its place`);
  return { text: '[image omitted: only images sent as data URLs can be sent to this model]' };
}

/** A document from its media type and base64 bytes, or undefined when Converse takes no such document. */
export function documentBlock(mediaType: string, base64: string, name: string | undefined): ConverseContentBlock | undefined {
  const format = DOCUMENT_FORMATS.get(mediaType.toLowerCase());
  if (format === undefined) return undefined;
  const cleaned = (name ?? '').replace(/\.[A-Za-z0-9]{1,5}$/, '').replace(DOCUMENT_NAME_REFUSED, ' ').replace(/\s+/g, ' ').trim();
  return { document: { format, name: cleaned === '' ? 'document' : cleaned.slice(0, 200), source: { bytes: base64 } } };
}

/** A tool call's block: `input` must be an object. */
export function toolUseBlock(id: string, name: string, input: Record<string, unknown>): ConverseContentBlock {
  return { toolUse: { toolUseId: id, name, input } };
}

/** What a tool result holds before it is shaped for a family: text pieces and images. */
export interface ToolOutput {
  texts: string[];
  images: ConverseContentBlock[];
}

// ---------- the request ----------

/** The inference settings a client asked for, before Converse's limits are applied. */
export interface Inference {
  maxTokens?: number | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  stop: unknown[];
}

/** What every translator into Converse gives the builder besides the messages. */
export interface ConverseBuild {
  model: UpstreamModel;
  system: string[];
  tools: UpstreamTool[];
  choice: UpstreamToolChoice | undefined;
  /** The field in which the client asked for one call at a time, which Converse cannot say; undefined when it did not. */
  oneCallAtATime: string | undefined;
  inference: Inference;
  topK?: number | undefined;
  /** The fields of the model's own body the translator decided (reasoning); merged last. */
  fields?: Record<string, unknown> | undefined;
  warn: Warn;
}

/**
 * Conversation turns under construction: blocks added to the last turn of the same role, else to
 * a new one; blank text is never added. `finish` writes the Converse messages (see the header).
 */
export interface ConverseTurns {
  add(role: ConverseRole, blocks: ConverseContentBlock[]): void;
  /** The turns so far, for the reasoning checks (the last user turn answering calls, and so on). */
  readonly turns: ReadonlyArray<Turn<ConverseContentBlock>>;
}

export function createConverseTurns(): ConverseTurns {
  const turns: Array<Turn<ConverseContentBlock>> = [];
  return {
    turns,
    add(role, blocks) {
      addTurn(turns, role, blocks.filter((block) => !('text' in block) || block.text.trim() !== ''));
    },
  };
}

/** A tool result shaped for the family: its status and images where they are taken. */
export function toolResultBlock(family: ConverseFamily, id: string, output: ToolOutput, isError: boolean): ConverseContentBlock {
  const text = output.texts.filter((piece) => piece !== '').join(PARAGRAPH);
  const status = family === 'anthropic' || family === 'nova';
  const content: ConverseToolResultContent[] = [];
  const written = !status && isError ? `Error: ${text}` : text;
  if (written !== '' || output.images.length === 0 || family !== 'anthropic') content.push({ text: written === '' ? EMPTY_RESULT : written });
  for (const image of output.images) {
    if (family === 'anthropic' && 'image' in image) content.push({ image: image.image });
    else content.push({ text: '[image omitted: this model takes text tool results only]' });
  }
  const result = { toolUseId: id, content, ...(status && isError ? { status: 'error' as const } : {}) };
  return { toolResult: result };
}

/** The request's body from its turns and settings (see the header); never throws. */
export function buildConverseRequest(built: ConverseTurns, settings: ConverseBuild): ConverseRequest {
  const { model, warn } = settings;
  const family = converseFamily(model.upstreamId);
  const turns = built.turns as Array<Turn<ConverseContentBlock>>;
  const systemText = settings.system.filter((part) => part !== '').join(PARAGRAPH);
  const body: ConverseRequest = { messages: [] };
  if (systemText !== '') {
    if (takesSystemPrompt(model.upstreamId)) body.system = [{ text: systemText }];
    else if (turns[0]?.role === 'user') turns[0].blocks.unshift({ text: systemText });
    else turns.unshift({ role: 'user', blocks: [{ text: systemText }] });
  }

  const toolConfig = toolConfigOf(settings, family);
  body.messages = finishTurns(turns, toolConfig !== undefined, warn);
  if (toolConfig !== undefined) body.toolConfig = toolConfig;

  const inference = inferenceConfigOf(settings);
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference;

  const fields: Record<string, unknown> = {};
  if (typeof settings.topK === 'number') {
    if (family === 'anthropic' || family === 'mistral') fields['top_k'] = settings.topK;
    else if (family === 'nova') fields['inferenceConfig'] = { topK: settings.topK };
    else warn('top_k: dropped, this model on Converse takes no top_k');
  }
  Object.assign(fields, settings.fields);
  if (Object.keys(fields).length > 0) body.additionalModelRequestFields = fields;
  return body;
}

function toolConfigOf(settings: ConverseBuild, family: ConverseFamily): ConverseToolConfig | undefined {
  const { tools, choice, warn } = settings;
  if (tools.length === 0 || choice?.mode === 'none') return undefined;
  const config: ConverseToolConfig = {
    tools: tools.map((tool) => ({
      toolSpec: {
        name: tool.name,
        ...(tool.description === undefined || tool.description === '' ? {} : { description: tool.description }),
        inputSchema: { json: tool.parameters },
      },
    })),
  };
  if (choice?.mode === 'required' || choice?.mode === 'tool') {
    if (family === 'anthropic' || family === 'nova' || family === 'mistral') {
      config.toolChoice = choice.mode === 'tool' ? { tool: { name: choice.name } } : { any: {} };
    } else {
      warn('tool_choice: dropped, this model on Converse cannot be made to call a tool');
    }
  }
  if (settings.oneCallAtATime !== undefined) warn(`${settings.oneCallAtATime}: dropped, a Converse upstream cannot be told to call one tool at a time`);
  return config;
}

function inferenceConfigOf(settings: ConverseBuild): ConverseInferenceConfig {
  const { maxTokens, temperature, topP, stop } = settings.inference;
  const config: ConverseInferenceConfig = {};
  if (typeof maxTokens === 'number' && maxTokens >= 1) config.maxTokens = maxTokens;
  if (typeof temperature === 'number') config.temperature = Math.min(1, Math.max(0, temperature));
  if (typeof topP === 'number') config.topP = Math.min(1, Math.max(0, topP));
  const sequences = stop.filter((sequence): sequence is string => typeof sequence === 'string' && sequence !== '');
  if (sequences.length > 0) config.stopSequences = sequences;
  return config;
}

/** The finished messages: tool history as text without a tool config, orphan results as text, the order rules. */
function finishTurns(turns: Array<Turn<ConverseContentBlock>>, withTools: boolean, warn: Warn): ConverseMessage[] {
  // The calls of the assistant turn just before: the only ones a user turn's results may answer.
  let called = new Set<string>();
  let unoffered = 0;
  for (const turn of turns) {
    const calls = new Set<string>();
    turn.blocks = turn.blocks.map((block) => {
      if ('toolUse' in block) {
        if (withTools) {
          calls.add(block.toolUse.toolUseId);
          return block;
        }
        unoffered += 1;
        return { text: `[tool call ${block.toolUse.toolUseId}: ${block.toolUse.name}(${JSON.stringify(block.toolUse.input)})]` };
      }
      if ('toolResult' in block) {
        if (withTools && called.has(block.toolResult.toolUseId)) return block;
        if (withTools) warn(`a tool result answers call "${truncate(block.toolResult.toolUseId, 100)}", which is not in the assistant turn before it; sent as user text`);
        else unoffered += 1;
        return { text: resultText(block.toolResult.toolUseId, block.toolResult.content, block.toolResult.status === 'error') };
      }
      return block;
    });
    called = calls;
    if (turn.role === 'user') frontFirst(turn, (block) => 'toolResult' in block);
    else frontFirst(turn, (block) => 'reasoningContent' in block);
    const document = turn.blocks.find((block) => 'document' in block);
    if (document !== undefined && 'document' in document && !turn.blocks.some((block) => 'text' in block)) {
      turn.blocks.push({ text: `The attached document: ${document.document.name}` });
    }
  }
  if (unoffered > 0) warn('the conversation\'s tool calls and results are sent as text: a Converse upstream takes them only with tools offered');
  const last = turns[turns.length - 1];
  if (last?.role === 'assistant') {
    const final = last.blocks[last.blocks.length - 1];
    if (final !== undefined && 'text' in final) {
      const trimmed = final.text.trimEnd();
      if (trimmed === '') last.blocks.pop();
      else last.blocks[last.blocks.length - 1] = { text: trimmed };
    }
    if (last.blocks.length === 0) turns.pop();
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', blocks: [{ text: FIRST_TURN_FILLER }] });
  return turns.map((turn) => ({ role: turn.role, content: turn.blocks }));
}

function resultText(id: string, content: ConverseToolResultContent[], isError: boolean): string {
  const pieces = content.map((piece) => ('text' in piece ? piece.text : 'json' in piece ? JSON.stringify(piece.json) : '[image omitted]'));
  return `${isError ? 'Error output' : 'Output'} of tool call ${id}:\n${pieces.join(PARAGRAPH)}`;
}
