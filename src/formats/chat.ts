/**
 * Validation of a chat-format request body (`POST /v1/chat/completions`), by the request table of
 * gateway-api.md with the parameter names of llmux.md section 3, and, where both are silent, by
 * what the OpenAI API accepts.
 *
 * OpenAI declares most optional parameters nullable and clients (LiteLLM, LangChain, many
 * OpenAI-compatible tools) do send `"temperature": null`; such a null means "not set". It is
 * accepted and left out of the returned request, so nothing downstream has to tell null from
 * absent. Unknown fields are passed through; tool `parameters` and `json_schema.schema` are opaque
 * objects, never walked.
 */
import type { ChatRequest } from './wire.ts';
import {
  type JsonObject,
  type OneOf,
  at,
  checkArray,
  checkBoolean,
  checkInteger,
  checkNonEmptyString,
  checkNumberInRange,
  checkObject,
  checkOneOf,
  checkString,
  checkToolName,
  createValidMemo,
  fail,
  field,
  given,
  isObject,
  oneOf,
  reject,
  withoutNulls,
} from './validate-util.ts';

const ROLES = oneOf(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const TOOL_TYPES = oneOf(['function']);
const TOOL_CHOICE_MODES = new Set(['auto', 'required', 'none']);
const TOOL_CHOICE_EXPECTED = 'one of auto, required, none, or {"type": "function", "function": {"name": …}}';
const IMAGE_DETAILS = oneOf(['auto', 'low', 'high']);
const RESPONSE_FORMAT_TYPES = oneOf(['text', 'json_object', 'json_schema']);
const REASONING_EFFORTS = oneOf(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);

/** Content part types each role may send, as OpenAI documents them per message type. */
const SYSTEM_PARTS = oneOf(['text']);
const USER_PARTS = oneOf(['text', 'image_url', 'input_audio', 'file']);
const ASSISTANT_PARTS = oneOf(['text', 'refusal']);
const TOOL_PARTS = oneOf(['text']);

/** OpenAI's bounds: at most 128 choices, at most 4 stop sequences. */
const MAX_CHOICES = 128;
const MAX_STOP_SEQUENCES = 4;

/** Optional top-level parameters OpenAI types as `… | null`; a null is treated as absent. */
const NULLABLE_PARAMETERS = [
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'frequency_penalty',
  'presence_penalty',
  'n',
  'stop',
  'seed',
  'reasoning_effort',
] as const;

/**
 * Validates a parsed JSON body of `POST /v1/chat/completions` and returns it typed. The result is
 * the same object, or a shallow copy without the top-level parameters that were sent as null.
 *
 * @throws GatewayError 400 `invalid_parameters` naming the path of the first bad field and its rule,
 *   e.g. `temperature: must be a number from 0 to 2`.
 */
export function validateChatRequest(body: unknown): ChatRequest {
  const request = checkObject(body, 'body', 'a JSON object');

  checkNonEmptyString(field(request, 'model'), 'model');
  checkMessages(field(request, 'messages'));

  const stream = given(request, 'stream');
  if (stream !== undefined) checkBoolean(stream, 'stream');
  const streamOptions = given(request, 'stream_options');
  if (streamOptions !== undefined) {
    const options = checkObject(streamOptions, 'stream_options', 'an object or null');
    const includeUsage = field(options, 'include_usage');
    if (includeUsage !== undefined) checkBoolean(includeUsage, 'stream_options.include_usage');
  }
  const tools = field(request, 'tools');
  if (tools !== undefined) checkTools(tools);
  const toolChoice = field(request, 'tool_choice');
  if (toolChoice !== undefined) checkToolChoice(toolChoice);
  const parallelToolCalls = field(request, 'parallel_tool_calls');
  if (parallelToolCalls !== undefined) checkBoolean(parallelToolCalls, 'parallel_tool_calls');
  const temperature = given(request, 'temperature');
  if (temperature !== undefined) checkNumberInRange(temperature, 'temperature', 0, 2);
  const topP = given(request, 'top_p');
  if (topP !== undefined) checkNumberInRange(topP, 'top_p', 0, 1);
  const maxTokens = given(request, 'max_tokens');
  if (maxTokens !== undefined) checkInteger(maxTokens, 'max_tokens', 1);
  const maxCompletionTokens = given(request, 'max_completion_tokens');
  if (maxCompletionTokens !== undefined) checkInteger(maxCompletionTokens, 'max_completion_tokens', 1);
  const frequencyPenalty = given(request, 'frequency_penalty');
  if (frequencyPenalty !== undefined) checkNumberInRange(frequencyPenalty, 'frequency_penalty', -2, 2);
  const presencePenalty = given(request, 'presence_penalty');
  if (presencePenalty !== undefined) checkNumberInRange(presencePenalty, 'presence_penalty', -2, 2);
  const n = given(request, 'n');
  if (n !== undefined) checkInteger(n, 'n', 1, MAX_CHOICES);
  const stop = given(request, 'stop');
  if (stop !== undefined) checkStop(stop);
  const user = field(request, 'user');
  if (user !== undefined) checkString(user, 'user');
  const responseFormat = field(request, 'response_format');
  if (responseFormat !== undefined) checkResponseFormat(responseFormat);
  const seed = given(request, 'seed');
  if (seed !== undefined && !Number.isInteger(seed)) reject(seed, 'seed', 'an integer');
  const reasoningEffort = given(request, 'reasoning_effort');
  if (reasoningEffort !== undefined) checkOneOf(reasoningEffort, 'reasoning_effort', REASONING_EFFORTS);

  return withoutNulls(request, NULLABLE_PARAMETERS) as ChatRequest;
}

/** Messages and tool lists found valid before (a chat message's rules do not depend on its place). */
const validBefore = createValidMemo();

function checkMessages(value: unknown): void {
  const messages = checkArray(value, 'messages', 'a non-empty array of messages');
  if (messages.length === 0) fail('messages', 'must have at least 1 item');
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (validBefore.has(message)) continue;
    checkMessage(message, at('messages', i));
    validBefore.note(message);
  }
}

function checkMessage(value: unknown, path: string): void {
  const message = checkObject(value, path);
  const role = checkOneOf(field(message, 'role'), at(path, 'role'), ROLES);
  const contentPath = at(path, 'content');
  const content = field(message, 'content');
  const name = field(message, 'name');
  if (name !== undefined && role !== 'function') checkString(name, at(path, 'name'));
  switch (role) {
    case 'system':
    case 'developer':
      checkContent(content, contentPath, SYSTEM_PARTS);
      return;
    case 'user':
      checkContent(content, contentPath, USER_PARTS);
      return;
    case 'assistant': {
      const toolCalls = field(message, 'tool_calls');
      if (toolCalls !== undefined) checkToolCalls(toolCalls, at(path, 'tool_calls'));
      const functionCall = field(message, 'function_call');
      if (functionCall !== undefined && functionCall !== null) checkFunctionCall(functionCall, at(path, 'function_call'));
      // OpenAI: content is required unless the turn is only tool calls (or a legacy function call).
      const callsOnly = toolCalls !== undefined || (functionCall !== undefined && functionCall !== null);
      if (!(callsOnly && (content === undefined || content === null))) checkContent(content, contentPath, ASSISTANT_PARTS);
      checkOptionalNullableString(message, 'refusal', path);
      checkOptionalNullableString(message, 'reasoning_content', path);
      return;
    }
    case 'tool':
      checkString(field(message, 'tool_call_id'), at(path, 'tool_call_id'));
      checkContent(content, contentPath, TOOL_PARTS);
      return;
    case 'function':
      checkString(name, at(path, 'name'));
      if (content !== null && typeof content !== 'string') reject(content, contentPath, 'a string or null');
      return;
  }
}

function checkOptionalNullableString(owner: JsonObject, key: string, ownerPath: string): void {
  const value = field(owner, key);
  if (value !== undefined && value !== null && typeof value !== 'string') reject(value, at(ownerPath, key), 'a string or null');
}

function checkContent(value: unknown, path: string, parts: OneOf): void {
  if (typeof value === 'string') return;
  const items = checkArray(value, path, parts === SYSTEM_PARTS || parts === TOOL_PARTS
    ? 'a string or an array of text parts'
    : 'a string or an array of content parts');
  for (let i = 0; i < items.length; i++) checkPart(items[i], at(path, i), parts);
}

function checkPart(value: unknown, path: string, allowed: OneOf): void {
  const part = checkObject(value, path, 'a content part object');
  const type = checkOneOf(field(part, 'type'), at(path, 'type'), allowed);
  switch (type) {
    case 'text':
      checkString(field(part, 'text'), at(path, 'text'));
      return;
    case 'refusal':
      checkString(field(part, 'refusal'), at(path, 'refusal'));
      return;
    case 'image_url': {
      const imagePath = at(path, 'image_url');
      const image = checkObject(field(part, 'image_url'), imagePath, 'an object {url, detail?}');
      const url = field(image, 'url');
      if (typeof url !== 'string' || !isImageUrl(url)) reject(url, at(imagePath, 'url'), 'an http(s) URL or a data: URL');
      const detail = field(image, 'detail');
      if (detail !== undefined) checkOneOf(detail, at(imagePath, 'detail'), IMAGE_DETAILS);
      return;
    }
    case 'input_audio': {
      const audioPath = at(path, 'input_audio');
      const audio = checkObject(field(part, 'input_audio'), audioPath, 'an object {data, format}');
      checkString(field(audio, 'data'), at(audioPath, 'data'));
      checkString(field(audio, 'format'), at(audioPath, 'format'));
      return;
    }
    case 'file': {
      const filePath = at(path, 'file');
      const file = checkObject(field(part, 'file'), filePath, 'an object {file_data?, file_id?, filename?}');
      for (const key of ['file_data', 'file_id', 'filename']) {
        const item = field(file, key);
        if (item !== undefined) checkString(item, at(filePath, key));
      }
      return;
    }
  }
}

/** A prefix check, not a parse: translation only knows these two kinds, and no `new URL` per request. */
function isImageUrl(url: string): boolean {
  return url.startsWith('https://') || url.startsWith('http://') || url.startsWith('data:');
}

function checkToolCalls(value: unknown, path: string): void {
  const calls = checkArray(value, path);
  for (let i = 0; i < calls.length; i++) {
    const callPath = at(path, i);
    const call = checkObject(calls[i], callPath);
    checkString(field(call, 'id'), at(callPath, 'id'));
    checkOneOf(field(call, 'type'), at(callPath, 'type'), TOOL_TYPES);
    checkFunctionCall(field(call, 'function'), at(callPath, 'function'));
  }
}

function checkFunctionCall(value: unknown, path: string): void {
  const call = checkObject(value, path, 'an object {name, arguments}');
  checkString(field(call, 'name'), at(path, 'name'));
  checkString(field(call, 'arguments'), at(path, 'arguments'));
}

function checkTools(value: unknown): void {
  if (validBefore.has(value)) return;
  const tools = checkArray(value, 'tools');
  for (let i = 0; i < tools.length; i++) {
    const path = at('tools', i);
    const tool = checkObject(tools[i], path);
    checkOneOf(field(tool, 'type'), at(path, 'type'), TOOL_TYPES);
    const functionPath = at(path, 'function');
    const fn = checkObject(field(tool, 'function'), functionPath, 'an object {name, description?, parameters?}');
    checkToolName(field(fn, 'name'), at(functionPath, 'name'));
    const description = field(fn, 'description');
    if (description !== undefined) checkString(description, at(functionPath, 'description'));
    const parameters = field(fn, 'parameters');
    if (parameters !== undefined) checkObject(parameters, at(functionPath, 'parameters'), 'a JSON schema object');
    const strict = field(fn, 'strict');
    if (strict !== undefined && strict !== null) checkBoolean(strict, at(functionPath, 'strict'));
  }
  validBefore.note(tools);
}

function checkToolChoice(value: unknown): void {
  if (typeof value === 'string') {
    if (!TOOL_CHOICE_MODES.has(value)) reject(value, 'tool_choice', TOOL_CHOICE_EXPECTED);
    return;
  }
  if (!isObject(value)) reject(value, 'tool_choice', TOOL_CHOICE_EXPECTED);
  checkOneOf(field(value, 'type'), 'tool_choice.type', TOOL_TYPES);
  const fn = checkObject(field(value, 'function'), 'tool_choice.function', 'an object {name}');
  checkNonEmptyString(field(fn, 'name'), 'tool_choice.function.name');
}

function checkStop(value: unknown): void {
  if (typeof value === 'string') return;
  const stops = checkArray(value, 'stop', 'a string or an array of strings');
  if (stops.length > MAX_STOP_SEQUENCES) fail('stop', `must have at most ${MAX_STOP_SEQUENCES} items`);
  for (let i = 0; i < stops.length; i++) {
    if (typeof stops[i] !== 'string') fail(at('stop', i), 'must be a string');
  }
}

function checkResponseFormat(value: unknown): void {
  const format = checkObject(value, 'response_format', 'an object {type: text, json_object or json_schema}');
  const type = checkOneOf(field(format, 'type'), 'response_format.type', RESPONSE_FORMAT_TYPES);
  if (type !== 'json_schema') return;
  const schema = checkObject(field(format, 'json_schema'), 'response_format.json_schema', 'an object {name, schema?, strict?}');
  checkToolName(field(schema, 'name'), 'response_format.json_schema.name');
  const inner = field(schema, 'schema');
  if (inner !== undefined) checkObject(inner, 'response_format.json_schema.schema', 'a JSON schema object');
  const strict = field(schema, 'strict');
  if (strict !== undefined && strict !== null) checkBoolean(strict, 'response_format.json_schema.strict');
  const description = field(schema, 'description');
  if (description !== undefined) checkString(description, 'response_format.json_schema.description');
}
