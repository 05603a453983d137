/**
 * Data flowing from the Gemini format to the chat format (llmux.md section 9): a Gemini client's
 * generateContent request sent on to a chat-completions upstream. The contents are read by
 * ./gemini-history.ts and the config by ./gemini-params.ts, whose headers hold the decisions they
 * share with ./gemini-to-messages.ts.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - The model and streaming come from the URL (`models/{model}:streamGenerateContent`), so the
 *   caller says whether to stream; a stream asks for usage (`stream_options.include_usage`).
 * - The system instruction is the first system message. A user turn's function responses become
 *   `tool` messages first (chat wants them right after the assistant message that called), then
 *   the rest of the turn one user message: a string when it is text only (pieces joined with a
 *   blank line), else content parts in order.
 * - Tool messages carry text: the response's `output` (or `content`, `result`) when that is all it
 *   says, else its JSON; an `error` is sent as `Error: …`. Media in a function response is left out
 *   with a placeholder, as for messages tool results (translation.md).
 * - Media: images as `image_url` (data URL or the public URL), a PDF by its bytes as a `file` part,
 *   WAV and MP3 audio as `input_audio`; a PDF by URL and other audio cannot be sent, so a text
 *   placeholder takes their place.
 * - A model turn's text pieces are joined with "" (fragments of one answer), its function calls
 *   become `tool_calls`; its thoughts are replayed as `reasoning_content` only to `replay_reasoning`
 *   models (DeepSeek-style), and dropped otherwise (no chat upstream takes them back).
 * - The state its signatures carried (llmux.md section 11) goes back where a chat upstream of its
 *   issuer's family reads it (./carry-chat.ts: a Gemini thought signature onto its call,
 *   `reasoning_details` onto the message, the issuer's reasoning text as `reasoning_content` to a
 *   `replay_reasoning` model), and what the upstream needs and the history lacks is filled in.
 * - `thinkingConfig` -> `reasoning_effort` (models marked `reasoning` only): a level as it is
 *   (`MINIMAL` -> `minimal`, …); a budget by size as translation.md maps `budget_tokens` (under
 *   2048 low, under 8192 medium, else high); "off" (budget 0) and "the model decides" (-1) leave
 *   the upstream's default, since `none` is refused by most reasoning models.
 * - `topK` has no chat parameter: dropped with a warning, like `safetySettings` and `cachedContent`.
 */
import type { ChatContentPart, ChatMessage, ChatRequest, ChatTool, ChatToolCall } from '../formats/wire.ts';
import type { GeminiRequest } from '../formats/gemini-types.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { type GeminiMedia, type HistoryTurn, functionResponseText, readGeminiHistory } from './gemini-history.ts';
import { type CarriedItem, type CarryReader, createCarryReader } from './carried.ts';
import { carryIntoChatMessage, fillChatGaps } from './carry-chat.ts';
import {
  type GeminiThinking,
  geminiFunctionTools,
  geminiGenerationConfig,
  geminiJsonFormat,
  geminiStopSequences,
  geminiThinking,
  numberField,
} from './gemini-params.ts';

/** Options of the Gemini request translators. */
export interface GeminiRequestTranslateOptions {
  /** Told about input that was repaired or dropped rather than refused (for the request log). */
  onWarning?: (message: string) => void;
  /** The client called `:streamGenerateContent`: the body says nothing of streaming. */
  stream?: boolean;
  /** Opens and sorts the state the history's signatures carry (./carried.ts); absent: none is sent. */
  carry?: CarryReader;
}

const TARGET = 'a chat-completions upstream';
const PARAGRAPH = '\n\n';
const READS: ReadonlySet<string> = new Set([
  'temperature', 'topP', 'maxOutputTokens', 'stopSequences', 'seed', 'presencePenalty', 'frequencyPenalty',
  'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig',
]);
const AUDIO_FORMATS: ReadonlyMap<string, string> = new Map([
  ['audio/wav', 'wav'],
  ['audio/x-wav', 'wav'],
  ['audio/wave', 'wav'],
  ['audio/mp3', 'mp3'],
  ['audio/mpeg', 'mp3'],
]);
const TOOL_RESULT_MEDIA_NOTE = '[image omitted: tool results sent to this model carry text only]';

/**
 * Translates a validated Gemini request into the chat-completions request for `model`.
 * @throws GatewayError 400 for `candidateCount` above 1 and for a Google-run tool; anything else
 *   odd is read leniently, dropped with a warning, never thrown.
 */
export function geminiRequestToChat(req: GeminiRequest, model: UpstreamModel, options: GeminiRequestTranslateOptions = {}): ChatRequest {
  const warn = options.onWarning ?? (() => {});
  const config = geminiGenerationConfig(req, model, TARGET, READS, warn);
  const { tools, choice } = geminiFunctionTools(req, TARGET, warn);
  const carry = options.carry ?? createCarryReader(undefined, model.issuer, warn);
  const history = readGeminiHistory(req, { warn, carry });

  const messages: ChatMessage[] = [];
  if (history.system !== '') messages.push({ role: 'system', content: history.system });
  for (const turn of history.turns) {
    if (turn.role === 'model') messages.push(assistantMessage(turn, model));
    else pushUserTurn(messages, turn, warn);
  }
  fillChatGaps(messages, model, carry);

  const out: ChatRequest = { model: model.upstreamId, messages };
  const maxTokens = numberField(config, 'maxOutputTokens');
  if (maxTokens !== undefined) out[model.maxTokensParam] = maxTokens;
  const temperature = numberField(config, 'temperature');
  if (temperature !== undefined) out.temperature = temperature;
  const topP = numberField(config, 'topP');
  if (topP !== undefined) out.top_p = topP;
  const stop = geminiStopSequences(config);
  if (stop.length > 0) out.stop = stop;
  const seed = numberField(config, 'seed');
  if (seed !== undefined) out.seed = seed;
  const presence = numberField(config, 'presencePenalty');
  if (presence !== undefined) out.presence_penalty = presence;
  const frequency = numberField(config, 'frequencyPenalty');
  if (frequency !== undefined) out.frequency_penalty = frequency;

  const format = geminiJsonFormat(config, warn);
  if (format?.type === 'json_object') out.response_format = { type: 'json_object' };
  else if (format !== undefined) out.response_format = { type: 'json_schema', json_schema: { name: 'response', schema: format.schema } };

  if (tools.length > 0) {
    out.tools = tools.map((tool): ChatTool => {
      const fn: ChatTool['function'] = { name: tool.name, parameters: tool.parameters };
      if (tool.description !== undefined) fn.description = tool.description;
      return { type: 'function', function: fn };
    });
    if (choice !== undefined) out.tool_choice = choice.mode === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.mode;
  }

  const thinking = geminiThinking(config, warn);
  if (model.reasoning && thinking !== undefined) {
    const effort = reasoningEffort(thinking);
    if (effort !== undefined) out.reasoning_effort = effort;
  }
  if (options.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}

function reasoningEffort(thinking: GeminiThinking): string | undefined {
  switch (thinking.kind) {
    case 'level':
      return thinking.level;
    case 'budget':
      return thinking.tokens < 2048 ? 'low' : thinking.tokens < 8192 ? 'medium' : 'high';
    default:
      return undefined;
  }
}

function assistantMessage(turn: HistoryTurn, model: UpstreamModel): ChatMessage {
  let text = '';
  const reasoning: string[] = [];
  const calls: ChatToolCall[] = [];
  const carried: CarriedItem[] = [];
  for (const item of turn.items) {
    if (item.kind === 'text') text += item.text;
    else if (item.kind === 'thought') reasoning.push(item.text);
    else if (item.kind === 'call') calls.push({ id: item.id, type: 'function', function: { name: item.name, arguments: JSON.stringify(item.args) } });
    else if (item.kind === 'carried') carried.push(item.item);
  }
  // Chat wants content null beside tool_calls when there is no text.
  const message: ChatMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
  if (calls.length > 0) message.tool_calls = calls;
  if (model.replayReasoning && reasoning.length > 0) message.reasoning_content = reasoning.join('');
  carryIntoChatMessage(message, carried, model);
  return message;
}

function pushUserTurn(out: ChatMessage[], turn: HistoryTurn, warn: (message: string) => void): void {
  const parts: ChatContentPart[] = [];
  for (const item of turn.items) {
    if (item.kind === 'result') {
      const { text, isError } = functionResponseText(item.response);
      const pieces = [isError ? (text === '' ? 'Error' : `Error: ${text}`) : text];
      if (item.media.length > 0) pieces.push(TOOL_RESULT_MEDIA_NOTE);
      out.push({ role: 'tool', tool_call_id: item.id, content: pieces.filter((piece) => piece !== '').join(PARAGRAPH) });
    } else if (item.kind === 'text') {
      parts.push({ type: 'text', text: item.text });
    } else if (item.kind === 'media') {
      parts.push(mediaPart(item.media, warn));
    }
  }
  if (parts.length === 0) return;
  const textOnly = parts.every((part) => part.type === 'text');
  out.push({ role: 'user', content: textOnly ? parts.map((part) => String((part as { text: string }).text)).join(PARAGRAPH) : parts });
}

function mediaPart(media: GeminiMedia, warn: (message: string) => void): ChatContentPart {
  if ('url' in media) {
    if (media.type === 'image') return { type: 'image_url', image_url: { url: media.url } };
    warn('a PDF given by URL cannot be sent to a chat-completions upstream; a placeholder stands in its place');
    return { type: 'text', text: `[document omitted: ${media.url}]` };
  }
  const dataUrl = `data:${media.mimeType};base64,${media.data}`;
  if (media.type === 'image') return { type: 'image_url', image_url: { url: dataUrl } };
  if (media.type === 'document') return { type: 'file', file: { filename: 'document.pdf', file_data: dataUrl } };
  const format = AUDIO_FORMATS.get(media.mimeType);
  if (format !== undefined) return { type: 'input_audio', input_audio: { data: media.data, format } };
  warn(`${media.mimeType} audio cannot be sent to a chat-completions upstream (WAV and MP3 only); a placeholder stands in its place`);
  return { type: 'text', text: `[audio omitted: ${media.mimeType} cannot be sent to this model]` };
}
