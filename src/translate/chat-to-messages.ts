/**
 * Data flowing from the chat format to the messages format (translation.md): a chat-completions
 * request sent on to a messages upstream. A chat-completions answer given to a messages client
 * goes through the neutral answer events instead (./answer-events.ts: ./chat-decoder.ts reads it,
 * ./messages-encoder.ts writes it).
 *
 * Longer than most files on purpose: translation.md's request table reads against one file.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - Turns: the messages format wants alternating turns starting with `user`, no empty turn except
 *   a final assistant one, tool results first in their user turn, and no trailing whitespace at
 *   the end of a final assistant turn (prefill). So: same-role turns are merged, empty turns are
 *   dropped, `tool_result` blocks are moved to the front of their turn (stable), the final
 *   assistant text is trimmed at its end, and when the first turn is not `user` (or there is no
 *   turn at all) a minimal user turn `"."` is put first, which steers the model least.
 * - `max_tokens` absent: the model's `max_output_tokens` capped at 32000 (long non-streamed answers
 *   would outrun upstream timeouts), 4096 when the catalog does not know it.
 * - `reasoning_effort` -> `thinking.budget_tokens` by the one rule of ./thinking-budget.ts: minimal/low
 *   1024, medium 4096, high 16384, xhigh 32768; at most three quarters of `max_tokens`, so the answer
 *   keeps its share; a client's own cap kept, our default raised to make room; under 1024, none.
 * - Thinking and the rest: the messages API refuses thinking with a forced tool choice and with
 *   changed sampling. A forced tool (`required` / a named function) wins over reasoning (no
 *   thinking); reasoning wins over sampling (`temperature` dropped, `top_p` kept only >= 0.95).
 *   It also refuses thinking in a request that answers tool calls unless the assistant turn being
 *   continued starts with its signed thinking block, which a chat client never has itself: the
 *   server-side store gives it back (llmux.md section 11: the signed thinking a messages upstream
 *   issued before the calls, recalled by their ids, goes first in their assistant turn); a request
 *   whose continued turn still has none is sent without thinking.
 * - `response_format` json_object / json_schema: an instruction appended to the system text (the
 *   schema included as JSON). Best effort: nothing enforces it upstream.
 * - Prompt caching: with the model's `prompt_cache` on (the default), breakpoints on the tools, the
 *   system prompt and the last user turn (./cache-breakpoints.ts), so the upstream's cache hits.
 * - Content parts: http(s) image URLs -> url sources, data URLs -> base64 sources (a data URL that is
 *   not base64 is re-encoded); other URLs, `input_audio` and uploaded-file ids cannot be sent, so a
 *   text placeholder `[… omitted: …]` takes their place; a `file` part with PDF `file_data` becomes a
 *   `document` block.
 * - Legacy `function_call` / `function` messages become tool_use / tool_result with ids made up
 *   as `call_legacy_N`, pairing each result with the latest call.
 * - Dropped, no messages equivalent: `frequency_penalty`, `presence_penalty`, `seed`, `logprobs`,
 *   `stream_options`, `service_tier`, assistant `reasoning_content` history (its signature, when a
 *   messages upstream issued it, comes from the store instead), state another family issued,
 *   image `detail`, tool `strict`. Top-level fields newer than this file (`store`, `prediction`,
 *   `web_search_options`, …) are dropped too, each named in a warning (llmux.md section 5).
 */
import type {
  ChatRequest,
  ChatToolChoice,
  MessagesContentBlock,
  MessagesImageBlock,
  MessagesMessage,
  MessagesRequest,
  MessagesTool,
  MessagesToolChoice,
  MessagesToolResultBlock,
} from '../formats/wire.ts';
import { invalidParameters, truncate } from '../common/errors.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { asRecord, records } from '../common/json.ts';
import { chatContentText } from './chat-choice.ts';
import { addTurn, closeTurns, continuesUnsignedToolLoop, frontFirst, type Turn as MessageTurn } from './message-turns.ts';
import { type CarriedRecord, type CarryReader, createCarryReader } from './carried.ts';
import { MIN_THINKING_BUDGET, effortBudget, planThinking } from './thinking-budget.ts';
import { addCacheBreakpoints } from './cache-breakpoints.ts';

/** Options of the request translator. */
export interface RequestTranslateOptions {
  /** Told about input that was repaired rather than refused, e.g. unparsable tool arguments (for the request log). */
  onWarning?: (message: string) => void;
  /** Sorts carried state for the upstream (./carried.ts); absent: nothing recalled is sent. */
  carry?: CarryReader;
  /** State the server-side store remembered for the request's tool calls, by call id. */
  recalled?: ReadonlyMap<string, CarriedRecord> | undefined;
}

/** Top-level fields this translator reads, or drops on purpose as documented above. */
const KNOWN_FIELDS = new Set([
  'model', 'messages', 'stream', 'stream_options', 'tools', 'tool_choice', 'parallel_tool_calls', 'temperature', 'top_p',
  'max_tokens', 'max_completion_tokens', 'frequency_penalty', 'presence_penalty', 'n', 'stop', 'user', 'response_format',
  'seed', 'reasoning_effort', 'logprobs', 'top_logprobs', 'service_tier',
]);

const PARAGRAPH = '\n\n';
const HTTP_URL = /^https?:\/\//i;
const HEX_PAIR = /^[0-9a-f]{2}$/i;
const DEFAULT_MAX_TOKENS = 4096;
const MAX_DEFAULT_MAX_TOKENS = 32000;

/** A block of the messages format that wire.ts does not list: PDF documents. */
interface DocumentBlock { type: 'document'; source: { type: 'base64'; media_type: string; data: string }; title?: string }
type Block = MessagesContentBlock | DocumentBlock;
/** A tool_use block of a request turn. */
type ToolUse = { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };
type Turn = MessageTurn<Block>;

/**
 * Translates a validated chat-completions request into the messages request for `model`.
 * Throws `invalidParameters` for `n > 1`: the messages format gives one answer per request;
 * anything else odd is read leniently (fields of the wrong shape are left out), never thrown.
 */
export function chatRequestToMessages(req: ChatRequest, model: UpstreamModel, options: RequestTranslateOptions = {}): MessagesRequest {
  const warn = options.onWarning ?? (() => {});
  const carry = options.carry ?? createCarryReader(undefined, model.issuer, warn);
  if (typeof req.n === 'number' && req.n > 1) {
    throw invalidParameters(`n: must be 1 for model "${model.upstreamId}", whose upstream gives one answer per request; send ${req.n} requests instead`, 'n');
  }
  for (const key of Object.keys(req)) {
    if (!KNOWN_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, a messages upstream has no equivalent`);
  }

  const systemParts: string[] = [];
  const turns: Turn[] = [];
  let legacyCalls = 0;
  const messages: unknown[] = Array.isArray(req.messages) ? req.messages : [];
  let index = 0;
  for (; index < messages.length; index++) {
    const message = asRecord(messages[index]);
    if (message === undefined || (message['role'] !== 'system' && message['role'] !== 'developer')) break;
    systemParts.push(chatContentText(message['content']));
  }
  for (; index < messages.length; index++) {
    const message = asRecord(messages[index]);
    if (message === undefined) continue;
    switch (message['role']) {
      case 'assistant': {
        const blocks: Block[] = recalledThinking(message, options.recalled, carry);
        const text = chatContentText(message['content']);
        if (text !== '') blocks.push({ type: 'text', text });
        records(message['tool_calls']).forEach((call, k) => {
          const fn = asRecord(call['function']);
          blocks.push(toolUse(call['id'], fn?.['name'], fn?.['arguments'], `messages.${index}.tool_calls.${k}.function.arguments`, warn));
        });
        const legacy = asRecord(message['function_call']);
        if (legacy !== undefined) {
          legacyCalls += 1;
          blocks.push(toolUse(`call_legacy_${legacyCalls}`, legacy['name'], legacy['arguments'], `messages.${index}.function_call.arguments`, warn));
        }
        addTurn(turns, 'assistant', blocks);
        break;
      }
      case 'tool':
        addTurn(turns, 'user', [toolResult(typeof message['tool_call_id'] === 'string' ? message['tool_call_id'] : '', message['content'])]);
        break;
      case 'function':
        addTurn(turns, 'user', [toolResult(`call_legacy_${legacyCalls}`, message['content'])]);
        break;
      case 'system':
      case 'developer': {
        const text = chatContentText(message['content']);
        addTurn(turns, 'user', text === '' ? [] : [{ type: 'text', text }]);
        break;
      }
      default:
        addTurn(turns, 'user', userBlocks(message['content']));
    }
  }
  finishTurns(turns);

  const out: MessagesRequest = {
    model: model.upstreamId,
    messages: turns.map(toMessage),
    max_tokens: 0,
  };

  const instruction = responseFormatInstruction(req.response_format);
  if (instruction !== '') systemParts.push(instruction);
  const system = systemParts.filter((part) => part !== '').join(PARAGRAPH);
  if (system !== '') out.system = system;

  const requested = positiveInteger(req.max_completion_tokens) ?? positiveInteger(req.max_tokens);
  let maxTokens = requested ?? defaultMaxTokens(model);

  const tools = Array.isArray(req.tools) ? req.tools : [];
  let toolChoice: MessagesToolChoice | undefined;
  if (tools.length > 0) {
    out.tools = tools.map((tool): MessagesTool => {
      const fn = asRecord(asRecord(tool)?.['function']) ?? {};
      const schema = { type: 'object', properties: {}, ...asRecord(fn['parameters']) } as MessagesTool['input_schema'];
      const result: MessagesTool = { name: typeof fn['name'] === 'string' ? fn['name'] : '', input_schema: schema };
      if (typeof fn['description'] === 'string') result.description = fn['description'];
      return result;
    });
    toolChoice = toolChoiceToMessages(req.tool_choice);
    if (req.parallel_tool_calls === false) {
      toolChoice ??= { type: 'auto' };
      if (toolChoice.type !== 'none') toolChoice.disable_parallel_tool_use = true;
    }
    if (toolChoice !== undefined) out.tool_choice = toolChoice;
  }

  const stop: unknown[] = typeof req.stop === 'string' ? [req.stop] : Array.isArray(req.stop) ? req.stop : [];
  const stopSequences = stop.filter((sequence): sequence is string => typeof sequence === 'string' && sequence !== '');
  if (stopSequences.length > 0) out.stop_sequences = stopSequences;

  let thinkingBudget: number | undefined;
  const wanted = effortBudget(req.reasoning_effort);
  if (model.reasoning && wanted !== undefined) {
    if (toolChoice?.type === 'any' || toolChoice?.type === 'tool') {
      warn('reasoning_effort: dropped, the messages upstream cannot think with a forced tool_choice');
    } else if (continuesUnsignedToolLoop(turns as Array<MessageTurn<MessagesContentBlock>>)) {
      warn('reasoning_effort: dropped, the messages upstream wants the signed thinking of the assistant turn this request continues, and llmux holds none for its tool calls');
    } else {
      const plan = planThinking(wanted, { value: maxTokens, requested: requested !== undefined }, model.maxOutputTokens);
      maxTokens = plan.maxTokens;
      thinkingBudget = plan.budget;
      if (thinkingBudget === undefined) warn(`reasoning_effort: dropped, max_tokens ${maxTokens} leaves no room for the minimum thinking budget of ${MIN_THINKING_BUDGET} beside the answer`);
    }
  }

  out.max_tokens = maxTokens;
  if (thinkingBudget !== undefined) {
    out.thinking = { type: 'enabled', budget_tokens: thinkingBudget };
    if (typeof req.top_p === 'number' && req.top_p >= 0.95) out.top_p = req.top_p;
  } else {
    if (typeof req.temperature === 'number') out.temperature = Math.min(1, Math.max(0, req.temperature));
    if (typeof req.top_p === 'number') out.top_p = req.top_p;
  }

  if (model.promptCache === true) addCacheBreakpoints(out);
  if (typeof req.user === 'string') out.metadata = { user_id: req.user };
  if (req.stream === true) out.stream = true;
  return out;
}

// ---------- requests ----------



function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

function defaultMaxTokens(model: UpstreamModel): number {
  return model.maxOutputTokens > 0 ? Math.min(model.maxOutputTokens, MAX_DEFAULT_MAX_TOKENS) : DEFAULT_MAX_TOKENS;
}

/** A user message's content as blocks: text, images, PDFs; what cannot be sent leaves a placeholder. */
function userBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const blocks: Block[] = [];
  for (const part of content) {
    const record = asRecord(part);
    if (record === undefined) continue;
    const block = partToBlock(record);
    if (block !== undefined) blocks.push(block);
  }
  return blocks;
}

function partToBlock(part: Record<string, unknown>): Block | undefined {
  switch (part['type']) {
    case 'text':
      return typeof part['text'] === 'string' && part['text'] !== '' ? { type: 'text', text: part['text'] } : undefined;
    case 'image_url': {
      const url = asRecord(part['image_url'])?.['url'];
      return typeof url === 'string' ? imageBlock(url) : undefined;
    }
    case 'input_audio':
      return { type: 'text', text: '[audio omitted: this model does not take audio input]' };
    case 'file': {
      const file = asRecord(part['file']) ?? {};
      const data = typeof file['file_data'] === 'string' ? parseDataUrl(file['file_data']) : undefined;
      const filename = typeof file['filename'] === 'string' && file['filename'] !== '' ? file['filename'] : undefined;
      if (data !== undefined && data.mediaType === 'application/pdf') {
        const document: DocumentBlock = { type: 'document', source: { type: 'base64', media_type: data.mediaType, data: data.base64 } };
        if (filename !== undefined) document.title = filename;
        return document;
      }
      return { type: 'text', text: `[file omitted: ${filename ?? 'only PDF file_data can be sent to this model'}]` };
    }
    default:
      return typeof part['text'] === 'string' && part['text'] !== '' ? { type: 'text', text: part['text'] } : undefined;
  }
}

function imageBlock(url: string): Block {
  const data = parseDataUrl(url);
  if (data !== undefined) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.base64 } } satisfies MessagesImageBlock;
  if (HTTP_URL.test(url)) return { type: 'image', source: { type: 'url', url } } satisfies MessagesImageBlock;
  return { type: 'text', text: '[image omitted: only http(s) and data URLs can be sent to this model]' };
}

/** `data:[media type][;base64],payload` -> media type and base64 payload; undefined for other URLs. */
function parseDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  if (url.length < 5 || url.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return undefined;
  const meta = url.slice(5, comma).split(';');
  const mediaType = (meta[0] ?? '').trim().toLowerCase() || 'text/plain';
  const payload = url.slice(comma + 1);
  const isBase64 = meta.slice(1).some((param) => param.trim().toLowerCase() === 'base64');
  return { mediaType, base64: isBase64 ? payload : percentDecode(payload).toString('base64') };
}

/** RFC 3986 percent-decoding to bytes; a malformed escape is kept as it is (never throws). */
function percentDecode(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x25 && i + 2 < text.length) {
      const hex = text.slice(i + 1, i + 3);
      if (HEX_PAIR.test(hex)) {
        bytes.push(Number.parseInt(hex, 16));
        i += 2;
        continue;
      }
    }
    if (code < 0x80) bytes.push(code);
    else for (const byte of Buffer.from(text[i] ?? '', 'utf8')) bytes.push(byte);
  }
  return Buffer.from(bytes);
}

function toolUse(id: unknown, name: unknown, args: unknown, field: string, warn: (message: string) => void): ToolUse {
  return { type: 'tool_use', id: typeof id === 'string' ? id : '', name: typeof name === 'string' ? name : '', input: parseArguments(args, field, warn) };
}

/** Tool-call arguments -> an input object; anything else becomes `{}` (and a warning), never an error. */
function parseArguments(args: unknown, field: string, warn: (message: string) => void): Record<string, unknown> {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    const record = asRecord(parsed);
    if (record !== undefined) return record;
    warn(`${field}: JSON but not an object; sent upstream as {}`);
  } catch {
    warn(`${field}: not valid JSON; sent upstream as {}`);
  }
  return {};
}

function toolResult(toolUseId: string, content: unknown): MessagesToolResultBlock {
  if (typeof content === 'string' || !Array.isArray(content)) {
    return { type: 'tool_result', tool_use_id: toolUseId, content: typeof content === 'string' ? content : '' };
  }
  const blocks = userBlocks(content).filter((block): block is MessagesContentBlock & { type: 'text' | 'image' } => block.type === 'text' || block.type === 'image');
  return { type: 'tool_result', tool_use_id: toolUseId, content: blocks };
}

function finishTurns(turns: Turn[]): void {
  for (const turn of turns) if (turn.role === 'user') frontFirst(turn, (block) => block.type === 'tool_result');
  closeTurns(turns);
}

/**
 * The signed thinking a messages upstream issued before an assistant message's calls, recalled by
 * their ids (./carried.ts): it goes first in the turn. State of another family is stripped.
 */
function recalledThinking(message: Record<string, unknown>, recalled: ReadonlyMap<string, CarriedRecord> | undefined, carry: CarryReader): Block[] {
  if (recalled === undefined || recalled.size === 0) return [];
  const blocks: Block[] = [];
  for (const call of records(message['tool_calls'])) {
    const record = typeof call['id'] === 'string' ? recalled.get(call['id']) : undefined;
    if (record === undefined || !carry.accept(record.issuer)) continue;
    for (const item of record.message ?? []) {
      if (item.kind === 'thinking') blocks.push({ type: 'thinking', thinking: item.thinking, signature: item.signature });
      else if (item.kind === 'redacted-thinking') blocks.push({ type: 'redacted_thinking', data: item.data });
    }
  }
  return blocks;
}

function toMessage(turn: Turn): MessagesMessage {
  const only = turn.blocks.length === 1 ? turn.blocks[0] : undefined;
  if (only?.type === 'text') return { role: turn.role, content: only.text };
  return { role: turn.role, content: turn.blocks as MessagesContentBlock[] };
}

function toolChoiceToMessages(choice: ChatToolChoice | undefined): MessagesToolChoice | undefined {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  const name = asRecord(asRecord(choice)?.['function'])?.['name'];
  return typeof name === 'string' ? { type: 'tool', name } : undefined;
}

/** A best-effort instruction for `response_format`; the messages upstream cannot enforce it. */
function responseFormatInstruction(format: ChatRequest['response_format']): string {
  if (format?.type === 'json_object') {
    return 'Respond with a single valid JSON object and nothing else: no prose and no code fences.';
  }
  if (format?.type === 'json_schema') {
    const spec = format.json_schema;
    const about = typeof spec?.description === 'string' && spec.description !== '' ? ` (${spec.description})` : '';
    const schema = spec?.schema === undefined ? '' : `\n${JSON.stringify(spec.schema)}`;
    return `Respond with a single valid JSON value that conforms to the JSON schema "${spec?.name ?? 'response'}"${about}, and nothing else: no prose and no code fences.${schema}`;
  }
  return '';
}
