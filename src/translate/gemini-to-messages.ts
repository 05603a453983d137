/**
 * Data flowing from the Gemini format to the messages format (llmux.md section 9): a Gemini
 * client's generateContent request sent on to a messages upstream. The contents are read by
 * ./gemini-history.ts and the config by ./gemini-params.ts, whose headers hold the decisions they
 * share with ./gemini-to-chat.ts.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - Turns follow translation.md: same-role turns merged, so they alternate from a first `user`
 *   turn (a "." turn is put first when there is none), tool results first in their user turn,
 *   replayed thinking first in its assistant turn, the end of a final assistant turn trimmed.
 * - A function response is a `tool_result`: its `output` (or `content`, `result`) as text when
 *   that is all it says, else its JSON; `error` sets `is_error`; its images go in the result.
 * - Media: JPEG, PNG, GIF and WebP images by bytes or URL, PDFs by bytes or URL as `document`
 *   blocks; other image types and audio cannot be sent, so a placeholder takes their place.
 * - Thought parts: a thinking block needs the upstream's signature, which a Gemini client's thought
 *   text does not have, so `thought: true` parts are dropped. A `thoughtSignature` llmux sealed
 *   holds the upstream's own signed thinking when a messages upstream issued it (llmux.md section
 *   11): replayed first in its model turn.
 * - `thinkingConfig` -> `thinking.budget_tokens` (models marked `reasoning` only): a budget as it
 *   is (at least Anthropic's 1024), a level by the table the other translators use (minimal/low
 *   1024, medium 4096, high 16384), "the model decides" (-1) as medium; "off" (0) is no thinking.
 *   Thinking counts inside `max_tokens` in both formats: a client's `maxOutputTokens` is kept and
 *   the budget lowered below it; when the cap is llmux's default it is raised to budget + 4096
 *   (within the model's known maximum). As for chat clients, no thinking with a forced tool (`ANY`)
 *   nor when the request continues a tool loop whose assistant turn does not start with signed
 *   thinking (the messages API refuses both), and thinking drops `temperature` and `topK` and keeps
 *   `topP` only from 0.95.
 * - Prompt caching (llmux.md section 11): with the model's `prompt_cache` on (the default),
 *   breakpoints on the tools, the system prompt and the last user turn (./cache-breakpoints.ts),
 *   so a conversation's next turn reads what this one wrote.
 * - `max_tokens` absent: the model's `max_output_tokens` capped at 32000, 4096 when unknown.
 * - `temperature` is clamped to the messages range 0–1 (Gemini's goes to 2).
 * - `responseMimeType: application/json` (with its schema): an instruction appended to the system
 *   text, as translation.md does for `response_format` (best effort: nothing enforces it).
 * - Dropped with a warning, no messages equivalent: `seed`, `presencePenalty`, `frequencyPenalty`,
 *   `safetySettings`, `cachedContent`, and fields newer than this file.
 */
import type {
  MessagesContentBlock,
  MessagesRequest,
  MessagesTool,
  MessagesToolChoice,
  MessagesToolResultBlock,
} from '../formats/wire.ts';
import type { GeminiRequest } from '../formats/gemini-types.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { formatInstruction } from './responses-input.ts';
import { addTurn, closeTurns, continuesUnsignedToolLoop, frontFirst, turnToMessage, type Turn as MessageTurn } from './message-turns.ts';
import { type GeminiMedia, type HistoryItem, functionResponseText, readGeminiHistory } from './gemini-history.ts';
import {
  type GeminiThinking,
  geminiFunctionTools,
  geminiGenerationConfig,
  geminiJsonFormat,
  geminiStopSequences,
  geminiThinking,
  numberField,
} from './gemini-params.ts';
import type { GeminiRequestTranslateOptions } from './gemini-to-chat.ts';
import { addCacheBreakpoints } from './cache-breakpoints.ts';

/** Options of {@link geminiRequestToMessages}. */
export type GeminiToMessagesOptions = GeminiRequestTranslateOptions;

type Turn = MessageTurn<MessagesContentBlock>;

const TARGET = 'a messages upstream';
const PARAGRAPH = '\n\n';
const READS: ReadonlySet<string> = new Set([
  'temperature', 'topP', 'topK', 'maxOutputTokens', 'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig',
]);
const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const DEFAULT_MAX_TOKENS = 4096;
const MAX_DEFAULT_MAX_TOKENS = 32000;
const MIN_THINKING_BUDGET = 1024;
const THINKING_HEADROOM_TOKENS = 4096;
const LEVEL_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['minimal', 1024],
  ['low', 1024],
  ['medium', 4096],
  ['high', 16384],
]);

/**
 * Translates a validated Gemini request into the messages request for `model`.
 * @throws GatewayError 400 for `candidateCount` above 1 and for a Google-run tool; anything else
 *   odd is read leniently, dropped with a warning, never thrown.
 */
export function geminiRequestToMessages(req: GeminiRequest, model: UpstreamModel, options: GeminiToMessagesOptions = {}): MessagesRequest {
  const warn = options.onWarning ?? (() => {});
  const config = geminiGenerationConfig(req, model, TARGET, READS, warn);
  const { tools, choice } = geminiFunctionTools(req, TARGET, warn);
  const history = readGeminiHistory(req, { warn, carry: options.carry });

  const turns: Turn[] = [];
  for (const turn of history.turns) {
    if (turn.role === 'model') addTurn(turns, 'assistant', turn.items.flatMap(assistantBlocks));
    else addTurn(turns, 'user', turn.items.flatMap((item) => userBlocks(item, warn)));
  }
  for (const turn of turns) {
    if (turn.role === 'user') frontFirst(turn, (block) => block.type === 'tool_result');
    else frontFirst(turn, (block) => block.type === 'thinking' || block.type === 'redacted_thinking');
  }
  closeTurns(turns);

  const out: MessagesRequest = { model: model.upstreamId, messages: turns.map(turnToMessage), max_tokens: 0 };
  const systemParts = [history.system];
  const format = geminiJsonFormat(config, warn);
  if (format !== undefined) systemParts.push(formatInstruction(format.type === 'json_object' ? format : { type: 'json_schema', name: 'response', schema: format.schema }));
  const system = systemParts.filter((part) => part !== '').join(PARAGRAPH);
  if (system !== '') out.system = system;

  let toolChoice: MessagesToolChoice | undefined;
  if (tools.length > 0) {
    out.tools = tools.map((tool): MessagesTool => {
      const result: MessagesTool = { name: tool.name, input_schema: tool.parameters as MessagesTool['input_schema'] };
      if (tool.description !== undefined) result.description = tool.description;
      return result;
    });
    if (choice !== undefined) toolChoice = choice.mode === 'tool' ? { type: 'tool', name: choice.name } : choice.mode === 'required' ? { type: 'any' } : { type: choice.mode };
    if (toolChoice !== undefined) out.tool_choice = toolChoice;
  }

  const requested = numberField(config, 'maxOutputTokens');
  let maxTokens = requested ?? (model.maxOutputTokens > 0 ? Math.min(model.maxOutputTokens, MAX_DEFAULT_MAX_TOKENS) : DEFAULT_MAX_TOKENS);
  let thinkingBudget: number | undefined;
  const thinking = geminiThinking(config, warn);
  const wanted = thinking === undefined ? undefined : budgetFor(thinking);
  if (model.reasoning && wanted !== undefined) {
    if (toolChoice?.type === 'any' || toolChoice?.type === 'tool') {
      warn('generationConfig.thinkingConfig: dropped, the messages upstream cannot think with a forced function call (mode ANY)');
    } else if (continuesUnsignedToolLoop(turns)) {
      warn('generationConfig.thinkingConfig: dropped, the messages upstream wants the signed thinking of the model turn this request continues, and the conversation carried none a messages upstream issued');
    } else {
      if (requested === undefined && wanted >= maxTokens) {
        const ceiling = model.maxOutputTokens > 0 ? model.maxOutputTokens : Number.POSITIVE_INFINITY;
        maxTokens = Math.max(maxTokens, Math.min(wanted + THINKING_HEADROOM_TOKENS, ceiling));
      }
      const budget = Math.min(wanted, maxTokens - 1);
      if (budget >= MIN_THINKING_BUDGET) thinkingBudget = budget;
      else warn(`generationConfig.thinkingConfig: dropped, maxOutputTokens ${maxTokens} leaves no room for the minimum thinking budget of ${MIN_THINKING_BUDGET}`);
    }
  }
  out.max_tokens = maxTokens;

  const temperature = numberField(config, 'temperature');
  const topP = numberField(config, 'topP');
  const topK = numberField(config, 'topK');
  if (thinkingBudget !== undefined) {
    out.thinking = { type: 'enabled', budget_tokens: thinkingBudget };
    if (topP !== undefined && topP >= 0.95) out.top_p = topP;
  } else {
    if (temperature !== undefined) out.temperature = Math.min(1, Math.max(0, temperature));
    if (topP !== undefined) out.top_p = topP;
    if (topK !== undefined) out.top_k = topK;
  }
  const stop = geminiStopSequences(config);
  if (stop.length > 0) out.stop_sequences = stop;
  if (model.promptCache === true) addCacheBreakpoints(out);
  if (options.stream === true) out.stream = true;
  return out;
}

/** The thinking budget a messages upstream is asked for; undefined for none. */
function budgetFor(thinking: GeminiThinking): number | undefined {
  switch (thinking.kind) {
    case 'off':
      return undefined;
    case 'dynamic':
      return LEVEL_BUDGETS.get('medium');
    case 'budget':
      return Math.max(MIN_THINKING_BUDGET, thinking.tokens);
    case 'level':
      return LEVEL_BUDGETS.get(thinking.level);
  }
}

function assistantBlocks(item: HistoryItem): MessagesContentBlock[] {
  switch (item.kind) {
    case 'text':
      return [{ type: 'text', text: item.text }];
    case 'call':
      return [{ type: 'tool_use', id: item.id, name: item.name, input: item.args }];
    case 'carried':
      if (item.item.kind === 'thinking') return [{ type: 'thinking', thinking: item.item.thinking, signature: item.item.signature }];
      if (item.item.kind === 'redacted-thinking') return [{ type: 'redacted_thinking', data: item.item.data }];
      return [];
    default:
      // Thoughts without a signature the upstream issued: a messages upstream refuses them.
      return [];
  }
}

function userBlocks(item: HistoryItem, warn: (message: string) => void): MessagesContentBlock[] {
  switch (item.kind) {
    case 'text':
      return [{ type: 'text', text: item.text }];
    case 'media':
      return [mediaBlock(item.media, warn)];
    case 'result': {
      const { text, isError } = functionResponseText(item.response);
      const result: MessagesToolResultBlock = { type: 'tool_result', tool_use_id: item.id, content: text };
      if (item.media.length > 0) {
        const blocks: Array<MessagesContentBlock & { type: 'text' | 'image' }> = text === '' ? [] : [{ type: 'text', text }];
        for (const media of item.media) {
          const block = mediaBlock(media, warn);
          if (block.type === 'text' || block.type === 'image') blocks.push(block);
        }
        result.content = blocks;
      }
      if (isError) result.is_error = true;
      return [result];
    }
    default:
      return [];
  }
}

function mediaBlock(media: GeminiMedia, warn: (message: string) => void): MessagesContentBlock {
  if (media.type === 'image' && IMAGE_TYPES.has(media.mimeType)) {
    return 'url' in media
      ? { type: 'image', source: { type: 'url', url: media.url } }
      : { type: 'image', source: { type: 'base64', media_type: media.mimeType, data: media.data } };
  }
  if (media.type === 'document') {
    const source = 'url' in media ? { type: 'url', url: media.url } : { type: 'base64', media_type: media.mimeType, data: media.data };
    // The messages format's document block, which wire.ts does not list.
    return { type: 'document', source } as unknown as MessagesContentBlock;
  }
  warn(`${media.mimeType} cannot be sent to a messages upstream; a placeholder stands in its place`);
  return { type: 'text', text: `[${media.type} omitted: ${media.mimeType} cannot be sent to this model]` };
}
