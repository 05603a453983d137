/**
 * Data flowing from the chat format to the Converse format (llmux.md section 8): a chat-completions
 * request sent on to a Bedrock `converse` provider. What every translation into Converse shares
 * (messages, tool history, images, tool choice, inference settings, each family's reasoning) is in
 * ./converse-build.ts, whose header holds those decisions.
 *
 * Decisions where the spec is silent (the official APIs decide, and these notes record how):
 * - The leading system and developer messages, joined with a blank line, are the system prompt; a
 *   later one becomes user text where it stands (Converse has no system turn).
 * - Content parts: text; `image_url` by data URL (an http(s) URL cannot be sent: a placeholder); a
 *   `file` with `file_data` as a document (PDF and the other types Converse takes) or an image;
 *   `input_audio` and uploaded-file ids cannot be sent: a placeholder, with a warning.
 * - Assistant messages: text (string, text and refusal parts) and `tool_calls` as `toolUse` blocks
 *   with their ids; unparsable arguments become `{}` with a warning. `reasoning_content` carries no
 *   signature, so no family can take it back: dropped.
 * - `tool` messages answer the call with their `tool_call_id`: text, and images where the family
 *   takes them. Legacy `function_call` / `function` messages pair by order, ids `call_legacy_N`.
 * - `tool_choice`: `auto`, `required` (Converse `any`), `none` (no tools offered), a named function
 *   (`tool`); `parallel_tool_calls: false` cannot be said: dropped with a warning.
 * - `response_format` json_object / json_schema: an instruction appended to the system prompt (the
 *   schema included), as for a messages upstream: Converse has no JSON mode to enforce it.
 * - `reasoning_effort` -> the family's reasoning fields (models marked `reasoning` only), Claude's
 *   by the budget rule with our default cap raised to make room (./converse-build.ts).
 * - `n` above 1 is a 400 (one answer per request, as for the other upstreams).
 * - Dropped with a warning, no Converse equivalent: `user`, `seed`, `frequency_penalty`,
 *   `presence_penalty`, `logprobs`, `top_logprobs`, `service_tier`, `store`, `metadata` and fields
 *   newer than this file. `stream_options` is llmux's own (Converse always reports usage).
 */
import type { ChatRequest } from '../formats/wire.ts';
import type { ConverseContentBlock, ConverseRequest } from '../formats/converse.ts';
import { invalidParameters, truncate } from '../common/errors.ts';
import { asRecord, records } from '../common/json.ts';
import type { RequestTranslateOptions, UpstreamModel } from './messages-to-chat.ts';
import type { UpstreamTool } from './responses-tools.ts';
import { formatInstruction } from './responses-input.ts';
import { chatContentText } from './chat-choice.ts';
import { chatToolChoice, parseArguments } from './chat-to-gemini.ts';
import { type ToolOutput, buildConverseRequest, createConverseTurns, mediaFromUrl, toolResultBlock, toolUseBlock } from './converse-build.ts';
import { converseFamily, effortSettings } from './converse-reasoning.ts';

/** Fields read, or llmux's own (the model and streaming go in the Converse path). */
const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  'model', 'messages', 'stream', 'stream_options', 'tools', 'tool_choice', 'parallel_tool_calls', 'temperature', 'top_p',
  'max_tokens', 'max_completion_tokens', 'n', 'stop', 'response_format', 'reasoning_effort',
]);
const DEFAULT_MAX_TOKENS = 4096;
const MAX_DEFAULT_MAX_TOKENS = 32000;

/**
 * Translates a validated chat-completions request into the Converse request for `model`.
 * @throws GatewayError 400 for `n` above 1; anything else odd is read leniently, never thrown.
 */
export function chatRequestToConverse(req: ChatRequest, model: UpstreamModel, options: RequestTranslateOptions = {}): ConverseRequest {
  const warn = options.onWarning ?? (() => {});
  if (typeof req.n === 'number' && req.n > 1) {
    throw invalidParameters(`n: must be 1 for model "${model.upstreamId}", whose upstream gives one answer per request; send ${req.n} requests instead`);
  }
  for (const key of Object.keys(req)) {
    if (!KNOWN_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, a Converse upstream has no equivalent`);
  }
  const family = converseFamily(model.upstreamId);

  const system: string[] = [];
  const turns = createConverseTurns();
  let legacyCalls = 0;
  const messages = records(req.messages);
  let index = 0;
  for (; index < messages.length; index++) {
    const message = messages[index] as Record<string, unknown>;
    if (message['role'] !== 'system' && message['role'] !== 'developer') break;
    system.push(chatContentText(message['content']));
  }
  for (; index < messages.length; index++) {
    const message = messages[index] as Record<string, unknown>;
    const path = `messages.${index}`;
    switch (message['role']) {
      case 'assistant': {
        const blocks: ConverseContentBlock[] = [{ text: chatContentText(message['content']) }];
        records(message['tool_calls']).forEach((call, k) => {
          const fn = asRecord(call['function']) ?? {};
          const id = typeof call['id'] === 'string' ? call['id'] : '';
          blocks.push(toolUseBlock(id, typeof fn['name'] === 'string' ? fn['name'] : '', parseArguments(fn['arguments'], `${path}.tool_calls.${k}.function.arguments`, warn)));
        });
        const legacy = asRecord(message['function_call']);
        if (legacy !== undefined) {
          legacyCalls += 1;
          blocks.push(toolUseBlock(`call_legacy_${legacyCalls}`, typeof legacy['name'] === 'string' ? legacy['name'] : '', parseArguments(legacy['arguments'], `${path}.function_call.arguments`, warn)));
        }
        turns.add('assistant', blocks);
        break;
      }
      case 'tool':
      case 'function': {
        const id = message['role'] === 'function' ? `call_legacy_${legacyCalls}` : typeof message['tool_call_id'] === 'string' ? message['tool_call_id'] : '';
        turns.add('user', [toolResultBlock(family, id, toolOutput(message['content'], `${path}.content`, warn), false)]);
        break;
      }
      case 'system':
      case 'developer':
        turns.add('user', [{ text: chatContentText(message['content']) }]);
        break;
      default:
        turns.add('user', userBlocks(message['content'], path, warn));
    }
  }

  const format = asRecord(req.response_format);
  const instruction = formatInstruction(format?.['type'] === 'json_schema' ? { type: 'json_schema', ...asRecord(format['json_schema']) } : format);
  if (instruction !== '') system.push(instruction);

  const tools: UpstreamTool[] = records(req.tools).map((tool) => {
    const fn = asRecord(tool['function']) ?? {};
    const upstream: UpstreamTool = { name: typeof fn['name'] === 'string' ? fn['name'] : '', parameters: { type: 'object', properties: {}, ...asRecord(fn['parameters']) } };
    if (typeof fn['description'] === 'string') upstream.description = fn['description'];
    return upstream;
  });
  const choice = chatToolChoice(req.tool_choice);

  const requested = positiveInteger(req.max_completion_tokens) ?? positiveInteger(req.max_tokens);
  const { inference, fields } = effortSettings(model, turns, {
    effort: typeof req.reasoning_effort === 'string' ? req.reasoning_effort : undefined,
    field: 'reasoning_effort',
    cap: { value: requested ?? defaultMaxTokens(model), requested: requested !== undefined },
    forcedTool: tools.length > 0 && (choice?.mode === 'required' || choice?.mode === 'tool'),
  }, {
    maxTokens: requested,
    temperature: typeof req.temperature === 'number' ? req.temperature : undefined,
    topP: typeof req.top_p === 'number' ? req.top_p : undefined,
    stop: typeof req.stop === 'string' ? [req.stop] : Array.isArray(req.stop) ? req.stop : [],
  }, warn);
  return buildConverseRequest(turns, {
    model,
    system,
    tools,
    choice,
    oneCallAtATime: req.parallel_tool_calls === false ? 'parallel_tool_calls' : undefined,
    inference,
    fields,
    warn,
  });
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

function defaultMaxTokens(model: UpstreamModel): number {
  return model.maxOutputTokens > 0 ? Math.min(model.maxOutputTokens, MAX_DEFAULT_MAX_TOKENS) : DEFAULT_MAX_TOKENS;
}

function userBlocks(content: unknown, path: string, warn: (message: string) => void): ConverseContentBlock[] {
  if (typeof content === 'string') return [{ text: content }];
  const blocks: ConverseContentBlock[] = [];
  records(content).forEach((part, index) => {
    const at = `${path}.content.${index}`;
    switch (part['type']) {
      case 'image_url': {
        const url = asRecord(part['image_url'])?.['url'];
        if (typeof url === 'string') blocks.push(mediaFromUrl(url, at, warn));
        break;
      }
      case 'file': {
        const file = asRecord(part['file']) ?? {};
        const name = typeof file['filename'] === 'string' ? file['filename'] : undefined;
        if (typeof file['file_data'] === 'string') {
          blocks.push(mediaFromUrl(file['file_data'], at, warn, name));
        } else {
          warn(`${at}: an uploaded file id cannot be sent to a Converse upstream; a placeholder stands in its place`);
          blocks.push({ text: `[file omitted: ${name ?? 'an uploaded file'}]` });
        }
        break;
      }
      case 'input_audio':
        warn(`${at}: audio cannot be sent to a Converse upstream; a placeholder stands in its place`);
        blocks.push({ text: '[audio omitted: this model does not take audio input]' });
        break;
      default:
        if (typeof part['text'] === 'string') blocks.push({ text: part['text'] });
    }
  });
  return blocks;
}

/** A tool message's content: its text parts, and its images. */
function toolOutput(content: unknown, path: string, warn: (message: string) => void): ToolOutput {
  if (typeof content === 'string') return { texts: [content], images: [] };
  const output: ToolOutput = { texts: [], images: [] };
  records(content).forEach((part, index) => {
    const url = asRecord(part['image_url'])?.['url'];
    if (part['type'] === 'image_url' && typeof url === 'string') {
      const block = mediaFromUrl(url, `${path}.${index}`, warn);
      if ('text' in block) output.texts.push(block.text);
      else output.images.push(block);
    } else if (typeof part['text'] === 'string') {
      output.texts.push(part['text']);
    }
  });
  return output;
}
