/**
 * Data flowing from the chat format to the Gemini format (llmux.md section 9): a chat-completions
 * request sent on to a Gemini upstream (`format: "gemini"`). What every translation into Gemini
 * shares (turns, tool results, the placeholder signature, thinking budgets) is in
 * ./gemini-build.ts, whose header holds those decisions.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - The leading system and developer messages, joined with a blank line, are the system
 *   instruction; a later one becomes user text where it stands (Gemini has no system turn).
 * - Content parts: text; `image_url` by data or http(s) URL; `input_audio` inline (`audio/wav`,
 *   `audio/mp3`); a `file` with `file_data` inline by its MIME type. Uploaded-file ids cannot be
 *   sent: a text placeholder `[file omitted: …]` takes their place, with a warning.
 * - Assistant messages: text (string, text and refusal parts) and `tool_calls` as `functionCall`
 *   parts with their ids; unparsable arguments become `{}` with a warning. `reasoning_content` has
 *   no signature a Gemini upstream would take: dropped. A call's thought signature comes back
 *   (llmux.md section 11, ./carry-gemini.ts): what the server-side store recalled for it when a
 *   Gemini upstream issued it, else the client's own copy (`extra_content.google.thought_signature`,
 *   which only Google writes).
 * - A `tool` message answers the call with its `tool_call_id`; one whose call is not in the
 *   history (Gemini wants the function's name) is sent as user text naming it, with a warning.
 *   Legacy `function_call` / `function` messages pair by order, ids `call_legacy_N`.
 * - `tool_choice`: `auto` -> AUTO, `required` -> ANY, `none` -> NONE, a named function -> ANY with
 *   that name allowed. `parallel_tool_calls: false` has no Gemini equivalent: dropped with a
 *   warning. A tool's `strict` has none either (Gemini's VALIDATED mode is per request): dropped.
 * - `response_format` json_schema -> `responseMimeType: application/json` + `responseJsonSchema`
 *   (JSON Schema as it is); json_object -> the MIME type alone.
 * - `reasoning_effort` -> `thinkingConfig` (models marked `reasoning` only), by ./gemini-build.ts.
 * - `n` above 1 is a 400 (one answer per request, as for the other upstreams).
 * - Dropped with a warning, no Gemini equivalent: `user`, `logprobs`, `top_logprobs`,
 *   `service_tier`, `store`, `metadata` and fields newer than this file.
 */
import type { ChatRequest } from '../formats/wire.ts';
import type { GeminiFunctionDeclaration, GeminiGenerationConfig, GeminiPart, GeminiRequest } from '../formats/gemini-types.ts';
import { invalidParameters, truncate } from '../common/errors.ts';
import { asRecord, records } from '../common/json.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import type { UpstreamToolChoice } from './responses-tools.ts';
import { type CarriedItem, type CarriedRecord, type CarryReader, GEMINI_FAMILY, createCarryReader, recordItems } from './carried.ts';
import { callSignature } from './carry-chat.ts';
import { countPlaceholders, signCalls } from './carry-gemini.ts';
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

/** Options of the translators into Gemini. */
export interface ToGeminiOptions {
  /** Told about input that was repaired or dropped rather than refused (for the request log). */
  onWarning?: (message: string) => void;
  /** Opens and sorts the carried state of the history (./carried.ts); absent: every seal is stripped. */
  carry?: CarryReader;
  /** State the server-side store remembered for a chat client's tool calls, by call id. */
  recalled?: ReadonlyMap<string, CarriedRecord> | undefined;
}

/** Fields read, or llmux's own (the model and streaming go in a Gemini URL). */
const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  'model', 'messages', 'stream', 'stream_options', 'tools', 'tool_choice', 'parallel_tool_calls', 'temperature', 'top_p',
  'max_tokens', 'max_completion_tokens', 'frequency_penalty', 'presence_penalty', 'n', 'stop', 'response_format', 'seed',
  'reasoning_effort',
]);
const PARAGRAPH = '\n\n';
const AUDIO_TYPES: ReadonlyMap<string, string> = new Map([['wav', 'audio/wav'], ['mp3', 'audio/mp3']]);

/**
 * Translates a validated chat-completions request into the Gemini request for `model`.
 * @throws GatewayError 400 for `n` above 1; anything else odd is read leniently, never thrown.
 */
export function chatRequestToGemini(req: ChatRequest, model: UpstreamModel, options: ToGeminiOptions = {}): GeminiRequest {
  const warn = options.onWarning ?? (() => {});
  const carry = options.carry ?? createCarryReader(undefined, model.issuer, warn);
  if (typeof req.n === 'number' && req.n > 1) {
    throw invalidParameters(`n: must be 1 for model "${model.upstreamId}", whose upstream gives one answer per request; send ${req.n} requests instead`);
  }
  for (const key of Object.keys(req)) {
    if (!KNOWN_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, a Gemini upstream has no equivalent`);
  }

  const systemParts: string[] = [];
  const builder = createContentsBuilder();
  const callNames = new Map<string, string>();
  let legacyCalls = 0;
  const messages = records(req.messages);
  let index = 0;
  for (; index < messages.length; index++) {
    const message = messages[index] as Record<string, unknown>;
    if (message['role'] !== 'system' && message['role'] !== 'developer') break;
    systemParts.push(contentText(message['content']));
  }
  for (; index < messages.length; index++) {
    const message = messages[index] as Record<string, unknown>;
    const path = `messages.${index}`;
    switch (message['role']) {
      case 'assistant': {
        const parts: GeminiPart[] = [];
        const text = contentText(message['content']);
        if (text !== '') parts.push({ text });
        records(message['tool_calls']).forEach((call, k) => {
          const fn = asRecord(call['function']) ?? {};
          const id = typeof call['id'] === 'string' ? call['id'] : '';
          const name = typeof fn['name'] === 'string' ? fn['name'] : '';
          callNames.set(id, name);
          parts.push(functionCallPart(id, name, parseArguments(fn['arguments'], `${path}.tool_calls.${k}.function.arguments`, warn)));
        });
        signCalls(parts, carriedOfCalls(records(message['tool_calls']), options.recalled, carry));
        const legacy = asRecord(message['function_call']);
        if (legacy !== undefined) {
          legacyCalls += 1;
          const name = typeof legacy['name'] === 'string' ? legacy['name'] : '';
          callNames.set(`call_legacy_${legacyCalls}`, name);
          parts.push(functionCallPart(`call_legacy_${legacyCalls}`, name, parseArguments(legacy['arguments'], `${path}.function_call.arguments`, warn)));
        }
        builder.add('model', parts);
        break;
      }
      case 'tool':
      case 'function': {
        const id = message['role'] === 'function' ? `call_legacy_${legacyCalls}` : typeof message['tool_call_id'] === 'string' ? message['tool_call_id'] : '';
        const name = callNames.get(id);
        const output = contentText(message['content']);
        if (name === undefined) {
          warn(`${path}: answers call "${truncate(id, 100)}", which is not in the messages; sent as user text`);
          builder.add('user', [{ text: `Output of tool call ${id}:\n${output}` }]);
        } else {
          builder.add('user', [functionResponsePart(id, name, output, false)]);
        }
        break;
      }
      case 'system':
      case 'developer': {
        const text = contentText(message['content']);
        builder.add('user', text === '' ? [] : [{ text }]);
        break;
      }
      default:
        builder.add('user', userParts(message['content'], path, warn));
    }
  }

  const contents = builder.finish(countPlaceholders(carry));
  const out: GeminiRequest = { contents };
  const system = systemParts.filter((part) => part !== '').join(PARAGRAPH);
  if (system !== '') out.systemInstruction = { parts: [{ text: system }] };

  const declarations: GeminiFunctionDeclaration[] = [];
  for (const tool of records(req.tools)) {
    const fn = asRecord(tool['function']) ?? {};
    const declaration: GeminiFunctionDeclaration = { name: typeof fn['name'] === 'string' ? fn['name'] : '' };
    if (typeof fn['description'] === 'string') declaration.description = fn['description'];
    const parameters = asRecord(fn['parameters']);
    if (parameters !== undefined) declaration.parametersJsonSchema = parameters;
    declarations.push(declaration);
  }
  if (declarations.length > 0) {
    out.tools = [{ functionDeclarations: declarations }];
    const choice = chatToolChoice(req.tool_choice);
    if (choice !== undefined) out.toolConfig = geminiToolConfig(choice);
    if (req.parallel_tool_calls === false) warn('parallel_tool_calls: dropped, a Gemini upstream cannot be told to call one function at a time');
  }

  const config: GeminiGenerationConfig = {};
  const requested = positiveInteger(req.max_completion_tokens) ?? positiveInteger(req.max_tokens);
  if (requested !== undefined) config.maxOutputTokens = requested;
  if (typeof req.temperature === 'number') config.temperature = req.temperature;
  if (typeof req.top_p === 'number') config.topP = req.top_p;
  const stop = stopSequences(typeof req.stop === 'string' ? [req.stop] : Array.isArray(req.stop) ? req.stop : [], 'stop', warn);
  if (stop.length > 0) config.stopSequences = stop;
  if (typeof req.seed === 'number') config.seed = req.seed;
  if (typeof req.presence_penalty === 'number') config.presencePenalty = req.presence_penalty;
  if (typeof req.frequency_penalty === 'number') config.frequencyPenalty = req.frequency_penalty;
  const format = asRecord(req.response_format);
  if (format?.['type'] === 'json_object' || format?.['type'] === 'json_schema') {
    config.responseMimeType = 'application/json';
    const schema = asRecord(asRecord(format['json_schema'])?.['schema']);
    if (schema !== undefined) config.responseJsonSchema = schema;
  }
  const budget = model.reasoning && typeof req.reasoning_effort === 'string' ? effortBudget(req.reasoning_effort) : undefined;
  if (budget !== undefined) {
    const thinking = thinkingConfig(budget, requested, 'reasoning_effort', warn);
    if (thinking !== undefined) config.thinkingConfig = thinking;
  }
  return withGenerationConfig(out, config);
}

/**
 * The thought signatures of an assistant message's calls: recalled from the store where a Gemini
 * upstream issued them, else the client's own copy on the call; counted as stripped when the
 * target is not a Gemini upstream.
 */
function carriedOfCalls(calls: ReadonlyArray<Record<string, unknown>>, recalled: ReadonlyMap<string, CarriedRecord> | undefined, carry: CarryReader): CarriedItem[] {
  const items: CarriedItem[] = [];
  for (const call of calls) {
    const id = typeof call['id'] === 'string' ? call['id'] : '';
    const record = recalled?.get(id);
    if (record !== undefined && carry.accept(record.issuer)) {
      items.push(...recordItems(record));
      continue;
    }
    const own = callSignature(call);
    if (own === undefined) continue;
    if (carry.target?.family === GEMINI_FAMILY) items.push({ kind: 'thought-signature', signature: own, callId: id });
    else carry.stripped('a provider the client kept it from (extra_content.google on its calls)');
  }
  return items;
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** The text of chat content: a string, or its text and refusal parts joined with a blank line. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of records(content)) {
    if (typeof part['text'] === 'string' && part['text'] !== '') texts.push(part['text']);
    else if (part['type'] === 'refusal' && typeof part['refusal'] === 'string' && part['refusal'] !== '') texts.push(part['refusal']);
  }
  return texts.join(PARAGRAPH);
}

function userParts(content: unknown, path: string, warn: (message: string) => void): GeminiPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  const parts: GeminiPart[] = [];
  records(content).forEach((part, index) => {
    switch (part['type']) {
      case 'image_url': {
        const url = asRecord(part['image_url'])?.['url'];
        if (typeof url === 'string') parts.push(mediaPartFromUrl(url));
        break;
      }
      case 'input_audio': {
        const audio = asRecord(part['input_audio']) ?? {};
        const mimeType = AUDIO_TYPES.get(String(audio['format']));
        if (mimeType !== undefined && typeof audio['data'] === 'string') parts.push({ inlineData: { mimeType, data: audio['data'] } });
        else warn(`${path}.content.${index}: dropped, only WAV and MP3 audio can be sent to a Gemini upstream`);
        break;
      }
      case 'file': {
        const file = asRecord(part['file']) ?? {};
        if (typeof file['file_data'] === 'string') {
          parts.push(mediaPartFromUrl(file['file_data']));
        } else {
          warn(`${path}.content.${index}: an uploaded file id cannot be sent to a Gemini upstream; a placeholder stands in its place`);
          parts.push({ text: `[file omitted: ${typeof file['filename'] === 'string' ? file['filename'] : 'an uploaded file'}]` });
        }
        break;
      }
      default:
        if (typeof part['text'] === 'string' && part['text'] !== '') parts.push({ text: part['text'] });
    }
  });
  return parts;
}

/** Tool-call arguments as an object; anything else becomes `{}` with a warning, never an error. */
export function parseArguments(args: unknown, path: string, warn: (message: string) => void): Record<string, unknown> {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const record = asRecord(JSON.parse(args));
    if (record !== undefined) return record;
    warn(`${path}: JSON but not an object; sent upstream as {}`);
  } catch {
    warn(`${path}: not valid JSON; sent upstream as {}`);
  }
  return {};
}

/** A chat `tool_choice` in neither format's words (./responses-tools.ts); undefined when unset or unreadable. */
export function chatToolChoice(choice: ChatRequest['tool_choice']): UpstreamToolChoice | undefined {
  if (choice === 'auto' || choice === 'required' || choice === 'none') return { mode: choice };
  const name = asRecord(asRecord(choice)?.['function'])?.['name'];
  return typeof name === 'string' ? { mode: 'tool', name } : undefined;
}
