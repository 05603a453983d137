/**
 * Pieces of a Responses answer (responses.md "Answer") that the whole-answer and stream
 * translators share: the options they take, the response object and its echoed request fields,
 * output items, ids and usage (the stop-reason rules are ./stop-reasons.ts's).
 *
 * Decisions beyond the spec:
 * - Item ids are derived from the response id and the item's output index (`msg_<id>_0`,
 *   `fc_<id>_1`, …): unique, and the same whether the answer was streamed or not. A tool call the
 *   upstream gave no id gets `call_<id>_<index>`.
 * - A call of a tool without arguments carries `"{}"` (clients JSON.parse arguments; "" does not parse).
 * - A custom tool's input is the `input` string of the arguments the model wrote (`{"input": "…"}`);
 *   when the arguments were cut short (max tokens), the part of the string written so far; when
 *   they are not that shape at all, the arguments as they are.
 * - When the response is incomplete, its last item (the one cut short) has status `incomplete`.
 */
import type { TokenUsage } from '../formats/wire.ts';
import type {
  ResponseEcho,
  ResponsesLocalShellAction,
  ResponsesOutputItem,
  ResponsesRequest,
  ResponsesResponse,
  ResponsesItemStatus,
  ResponsesTool,
  ResponsesUsage,
} from '../formats/responses.ts';
import type { CarriedItem } from './carried.ts';
import type { AnswerUsage } from './answer-events.ts';
import type { RestoredTool, ToolNames } from './responses-tools.ts';
import { asRecord, isRecord } from '../common/json.ts';
import { newId } from '../common/ids.ts';

/** Options of the answer translators, whole and streamed. */
export interface ResponsesAnswerOptions {
  /** The llmux model id to report as `model`: always this, never the upstream's. */
  model: string;
  /** The request fields the response repeats (`responseEcho(request)`). */
  echo: ResponseEcho;
  /** From the request translator: restores flattened, custom and local shell calls. */
  toolNames: ToolNames;
  /** `resp_…`; a fresh one by default. Tests pin it. */
  responseId?: string;
  /** Milliseconds since the epoch, like `Date.now`. */
  now?: () => number;
  /**
   * Seals a piece of carried state (a thinking block, reasoning text, a thought signature,
   * reasoning details: ./carried.ts) for the key that asked, naming the provider that answered
   * (src/dialects/carry.ts). Without it no reasoning item carries `encrypted_content`.
   */
  sealItem?: (item: CarriedItem) => string;
  /** The client's copy carries the seals: the request asked for `include: ["reasoning.encrypted_content"]`. */
  exposeSeals?: boolean;
  /**
   * Told of each reasoning item's seal as the item closes, whether or not the client's copy carries
   * it: a stored response keeps its reasoning sealed, so `previous_response_id` can replay it. With
   * it, state without text (a redacted thinking block, a call's thought signature) gets its
   * (summary-less) item even when the client's copy carries no seals, so there is an item to keep it by.
   */
  keepSealed?: (itemId: string, sealed: string) => void;
  /** Input tokens to report when the upstream reports no usage. */
  estimatedInputTokens?: number;
}

/** How an answer ended, in Responses terms. */
export type ResponsesStop =
  | { status: 'completed' }
  | { status: 'incomplete'; reason: 'max_output_tokens' }
  | { status: 'incomplete'; reason: 'content_filter'; refusal: string };

/** The request fields a response repeats, with OpenAI's defaults where the request left them out. */
export function responseEcho(request: ResponsesRequest): ResponseEcho {
  const reasoning = asRecord(request.reasoning);
  return {
    instructions: typeof request.instructions === 'string' ? request.instructions : null,
    max_output_tokens: request.max_output_tokens ?? null,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: {
      effort: (reasoning?.['effort'] as ResponseEcho['reasoning']['effort'] | undefined) ?? null,
      summary: typeof reasoning?.['summary'] === 'string' ? reasoning['summary'] : null,
    },
    store: request.store ?? true,
    temperature: request.temperature ?? null,
    text: { format: { type: 'text' }, ...request.text },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).map(echoedTool),
    top_p: request.top_p ?? null,
    truncation: request.truncation ?? 'disabled',
    metadata: request.metadata ?? {},
    ...(typeof request.user === 'string' ? { user: request.user } : {}),
  };
}

/**
 * A tool as a response repeats it: a function tool always states `parameters` and `strict` (null
 * when the request left them out), as OpenAI's response object requires; other tools as given.
 */
function echoedTool(tool: ResponsesTool): ResponsesTool {
  if (tool.type !== 'function') return tool;
  return { ...tool, parameters: tool['parameters'] ?? null, strict: tool['strict'] ?? null };
}

export function newResponseId(): string {
  return newId('resp_');
}

/** An id for the item at `outputIndex` of response `responseId`, e.g. `fc_0a1b…_2`. */
export function outputItemId(prefix: string, responseId: string, outputIndex: number): string {
  return `${prefix}${responseId.startsWith('resp_') ? responseId.slice(5) : responseId}_${outputIndex}`;
}

/** The response object; `output` and `usage` are filled in as the answer ends. */
export function responseObject(options: ResponsesAnswerOptions, responseId: string, createdAt: number): ResponsesResponse {
  const { echo } = options;
  return {
    id: responseId,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    model: options.model,
    output: [],
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: echo.previous_response_id,
    reasoning: echo.reasoning,
    store: echo.store,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: echo.truncation,
    usage: null,
    ...(echo.user === undefined ? {} : { user: echo.user }),
    metadata: echo.metadata,
  };
}

/** Neutral usage -> Responses usage: input tokens count cached ones too, reasoning tokens where reported. */
export function toResponsesUsage(usage: TokenUsage, reasoningTokens: number): ResponsesUsage {
  const input = usage.inputTokens + usage.cacheReadTokens + usage.cacheCreationTokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens, cache_write_tokens: usage.cacheCreationTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: Math.min(reasoningTokens, usage.outputTokens) },
    total_tokens: input + usage.outputTokens,
  };
}

/**
 * The response's usage: the upstream's when it reported any (with the reasoning tokens it counted),
 * else the input estimate and no output tokens.
 */
export function answerUsage(reported: AnswerUsage | undefined, options: ResponsesAnswerOptions): ResponsesUsage {
  if (reported !== undefined) return toResponsesUsage(reported, reported.reasoningTokens);
  return toResponsesUsage({ inputTokens: tokenCount(options.estimatedInputTokens), outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 }, 0);
}

/** A count read leniently: a finite number >= 0, else 0. */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** An llmux error type -> the `code` of a failed response's `error` (Codex retries `server_error` and `rate_limit_exceeded`). */
export function failureCode(type: string | undefined): string {
  if (type === 'rate_limit_error') return 'rate_limit_exceeded';
  if (type === 'invalid_request_error') return 'invalid_prompt';
  return 'server_error';
}

/** The call item for a call of `restored`; `args` is the arguments text the model wrote. */
export function callItem(restored: RestoredTool, id: string, callId: string, args: string, status: ResponsesItemStatus): ResponsesOutputItem {
  const namespace = restored.namespace === undefined ? {} : { namespace: restored.namespace };
  switch (restored.kind) {
    case 'custom':
      return { type: 'custom_tool_call', id, call_id: callId, name: restored.name, input: customInput(args), ...namespace };
    case 'local_shell':
      return { type: 'local_shell_call', id, call_id: callId, action: localShellAction(args), status };
    default:
      return { type: 'function_call', id, call_id: callId, name: restored.name, arguments: args === '' ? '{}' : args, status, ...namespace };
  }
}

/** The id prefix of a call item of `restored`'s kind. */
export function callItemPrefix(restored: RestoredTool): string {
  return restored.kind === 'custom' ? 'ctc_' : restored.kind === 'local_shell' ? 'lsh_' : 'fc_';
}

/** The exec action of a `local_shell` call from the arguments the model wrote. */
export function localShellAction(args: string): ResponsesLocalShellAction {
  let parsed: Record<string, unknown> = {};
  try {
    parsed = asRecord(JSON.parse(args)) ?? {};
  } catch {
    // Cut short (max tokens): an action without a command, which the client will not run.
  }
  const command = parsed['command'];
  const env = asRecord(parsed['env']) ?? {};
  const action: ResponsesLocalShellAction = {
    type: 'exec',
    command: typeof command === 'string' ? [command] : Array.isArray(command) ? command.filter((part): part is string => typeof part === 'string') : [],
    env: Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string')),
  };
  if (typeof parsed['timeout_ms'] === 'number') action.timeout_ms = parsed['timeout_ms'];
  if (typeof parsed['working_directory'] === 'string') action.working_directory = parsed['working_directory'];
  if (typeof parsed['user'] === 'string') action.user = parsed['user'];
  return action;
}

/** The raw input of a custom tool call from the arguments the model wrote (see the file's notes). */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (isRecord(parsed) && typeof parsed['input'] === 'string') return parsed['input'];
    if (typeof parsed === 'string') return parsed;
  } catch {
    // Cut short: what the unwrapper decodes of it below.
  }
  const unwrapper = createInputUnwrapper();
  const decoded = unwrapper.push(args);
  return unwrapper.inValue ? decoded : args;
}

export interface InputUnwrapper {
  /** The next arguments fragment; returns the text of the `input` string it completes, decoded. */
  push(fragment: string): string;
  /** Whether the scan reached the `input` string (false when the arguments are another shape). */
  readonly inValue: boolean;
}

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

/**
 * Decodes the `input` string of `{"input": "…"}` arguments as their fragments arrive, so a custom
 * tool's raw input can stream while the model writes it. Arguments of another shape (another first
 * key, not an object) stream nothing: the `.done` event then carries the whole input. A `\uXXXX`
 * high surrogate is held until its pair arrives.
 */
export function createInputUnwrapper(): InputUnwrapper {
  type State = 'start' | 'key-open' | 'key' | 'colon' | 'value-open' | 'value' | 'escape' | 'unicode' | 'stopped';
  let state: State = 'start';
  let key = '';
  let hex = '';
  let highSurrogate = '';
  // `inValue` a plain property, set here: an object literal with a getter survives young
  // collections in V8 until a full one (src/dialects/carry.ts, SealTurn).
  const unwrapper = { push, inValue: false };

  function push(fragment: string): string {
    let out = '';
    let i = 0;
    while (i < fragment.length && state !== 'stopped') {
      const char = fragment[i] ?? '';
      if (state === 'value') {
        // Copy a run of plain characters at once.
        let end = i;
        while (end < fragment.length && fragment[end] !== '"' && fragment[end] !== '\\') end += 1;
        if (end > i) {
          out += highSurrogate + fragment.slice(i, end);
          highSurrogate = '';
          i = end;
          continue;
        }
        if (char === '"') {
          out += highSurrogate;
          highSurrogate = '';
          state = 'stopped';
        } else {
          state = 'escape';
        }
      } else if (state === 'escape') {
        if (char === 'u') {
          state = 'unicode';
          hex = '';
        } else {
          out += highSurrogate + (ESCAPES[char] ?? char);
          highSurrogate = '';
          state = 'value';
        }
      } else if (state === 'unicode') {
        hex += char;
        if (hex.length === 4) {
          const unit = String.fromCharCode(Number.parseInt(hex, 16) || 0);
          const code = unit.charCodeAt(0);
          if (code >= 0xd800 && code <= 0xdbff) {
            out += highSurrogate;
            highSurrogate = unit;
          } else {
            out += highSurrogate + unit;
            highSurrogate = '';
          }
          state = 'value';
        }
      } else if (!WHITESPACE.has(char) || state === 'key') {
        state = structural(state, char);
      }
      i += 1;
    }
    return out;
  }

  /** The state after a non-whitespace character outside the value. */
  function structural(current: State, char: string): State {
    switch (current) {
      case 'start':
        return char === '{' ? 'key-open' : 'stopped';
      case 'key-open':
        return char === '"' ? 'key' : 'stopped';
      case 'key':
        if (char === '"') return 'colon';
        key += char;
        return key.length > 5 ? 'stopped' : 'key';
      case 'colon':
        return char === ':' ? 'value-open' : 'stopped';
      case 'value-open':
        if (char !== '"' || key !== 'input') return 'stopped';
        unwrapper.inValue = true;
        return 'value';
      default:
        return 'stopped';
    }
  }

  return unwrapper;
}
