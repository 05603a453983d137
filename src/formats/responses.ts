/**
 * Validation of a Responses-format request body (`POST /v1/responses`, responses.md "Request"),
 * and, where the spec is silent, by what OpenAI's Responses API checks of the fields llmux reads.
 *
 * - Unknown top-level fields, unknown fields inside items, unknown input item types, unknown
 *   content part types and unknown tool types (hosted tools such as `web_search`) are not refused:
 *   a Responses upstream gets them untouched, a translation drops them with a warning.
 * - Refused because llmux does not offer them: `background: true`, `conversation`, and, since
 *   llmux has no files API, `input_file` parts and `input_image` parts given by `file_id`.
 * - OpenAI declares most optional parameters nullable and clients send `null` for "not set": a
 *   top-level null is accepted and left out of the returned request.
 * - An item without `type` is a message when it has a `role`, and an `item_reference` when it has
 *   only an `id` (as the SDK's `EasyInputMessage` and `ItemReference` types allow).
 * - Tool `parameters` and `text.format.schema` are opaque objects, never walked.
 */
import type { ResponsesRequest } from './responses-types.ts';
import {
  type JsonObject,
  at,
  checkArray,
  checkBoolean,
  checkInteger,
  checkNonEmptyString,
  checkNumberInRange,
  checkObject,
  checkOneOf,
  checkString,
  checkStringArray,
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

export type * from './responses-types.ts';

export interface ResponsesValidationOptions {
  /** A `POST /v1/responses/input_tokens` body: `model` may be absent (the count needs none). */
  countTokens?: boolean;
}

const ROLES = oneOf(['user', 'assistant', 'system', 'developer']);
const IMAGE_DETAILS = oneOf(['low', 'high', 'auto', 'original']);
const TOOL_CHOICE_MODES = new Set(['auto', 'none', 'required']);
const TOOL_CHOICE_EXPECTED = 'one of auto, none, required, or an object {"type": "function", "name": …}';
const ALLOWED_TOOLS_MODES = oneOf(['auto', 'required']);
const REASONING_EFFORTS = oneOf(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
const REASONING_SUMMARIES = oneOf(['auto', 'concise', 'detailed']);
const TEXT_FORMAT_TYPES = oneOf(['text', 'json_object', 'json_schema']);
const VERBOSITIES = oneOf(['low', 'medium', 'high']);
const TRUNCATIONS = oneOf(['auto', 'disabled']);
const CUSTOM_FORMAT_TYPES = oneOf(['text', 'grammar']);
const GRAMMAR_SYNTAXES = oneOf(['lark', 'regex']);
const NAMESPACE_TOOL_TYPES = oneOf(['function', 'custom']);


/**
 * Marks state llmux sealed itself (a reasoning item's `encrypted_content`, a thinking block's
 * `signature`, a Gemini `thoughtSignature`: src/responses/seal.ts): what starts with it and fails
 * to open was tampered with or sealed under another secret.
 */
export const SEAL_PREFIX = 'llmux.v2.';
/** The prefix of the seals of earlier llmux versions, bound to no key: still llmux's, never opened. */
const UNBOUND_SEAL_PREFIX = 'llmux.v1.';

/** Whether `text` claims to be an llmux seal, this version's or an earlier one (it may still fail to open). */
export function isLlmuxSeal(text: string): boolean {
  return text.startsWith(SEAL_PREFIX) || text.startsWith(UNBOUND_SEAL_PREFIX);
}

/** OpenAI's metadata bounds: 16 pairs, keys up to 64 characters, values up to 512. */
const MAX_METADATA_KEYS = 16;
const MAX_METADATA_KEY_CHARS = 64;
const MAX_METADATA_VALUE_CHARS = 512;

const NO_FILES_API = 'llmux has no files API';

/** Optional top-level parameters OpenAI types as `… | null`; a null is treated as absent. */
const NULLABLE_PARAMETERS = [
  'input',
  'instructions',
  'tool_choice',
  'parallel_tool_calls',
  'max_output_tokens',
  'temperature',
  'top_p',
  'reasoning',
  'text',
  'store',
  'stream',
  'stream_options',
  'previous_response_id',
  'include',
  'metadata',
  'safety_identifier',
  'prompt_cache_key',
  'service_tier',
  'truncation',
  'background',
  'conversation',
  'top_logprobs',
] as const;

/**
 * Validates a parsed JSON body of `POST /v1/responses` and returns it typed: the same object, or a
 * shallow copy without the top-level parameters that were sent as null.
 *
 * @throws GatewayError 400 `invalid_parameters` naming the path of the first bad field and its rule,
 *   e.g. `input.3.content.0: input_file is not supported: llmux has no files API; …`.
 */
export function validateResponsesRequest(body: unknown, options: ResponsesValidationOptions = {}): ResponsesRequest {
  const request = checkObject(body, 'body', 'a JSON object');

  const model = field(request, 'model');
  if (!(options.countTokens === true && model === undefined)) checkNonEmptyString(model, 'model');

  if (given(request, 'background') === true) {
    fail('background', 'background responses are not offered by llmux; send the request without background (or with background: false)');
  }
  const background = given(request, 'background');
  if (background !== undefined) checkBoolean(background, 'background');
  if (given(request, 'conversation') !== undefined) {
    fail('conversation', 'conversations are not offered by llmux; chain responses with previous_response_id instead');
  }

  const input = given(request, 'input');
  if (input !== undefined && typeof input !== 'string') checkInput(input);
  const instructions = given(request, 'instructions');
  if (instructions !== undefined) checkString(instructions, 'instructions');
  const tools = field(request, 'tools');
  if (tools !== undefined) checkTools(tools);
  const toolChoice = given(request, 'tool_choice');
  if (toolChoice !== undefined) checkToolChoice(toolChoice);
  const parallelToolCalls = given(request, 'parallel_tool_calls');
  if (parallelToolCalls !== undefined) checkBoolean(parallelToolCalls, 'parallel_tool_calls');
  const maxOutputTokens = given(request, 'max_output_tokens');
  if (maxOutputTokens !== undefined) checkInteger(maxOutputTokens, 'max_output_tokens', 1);
  const temperature = given(request, 'temperature');
  if (temperature !== undefined) checkNumberInRange(temperature, 'temperature', 0, 2);
  const topP = given(request, 'top_p');
  if (topP !== undefined) checkNumberInRange(topP, 'top_p', 0, 1);
  const reasoning = given(request, 'reasoning');
  if (reasoning !== undefined) checkReasoning(reasoning);
  const text = given(request, 'text');
  if (text !== undefined) checkText(text);
  for (const key of ['store', 'stream']) {
    const flag = given(request, key);
    if (flag !== undefined) checkBoolean(flag, key);
  }
  for (const key of ['previous_response_id', 'user', 'safety_identifier', 'prompt_cache_key', 'service_tier']) {
    const value = given(request, key);
    if (value !== undefined) checkString(value, key);
  }
  const include = given(request, 'include');
  if (include !== undefined) checkStringArray(include, 'include');
  const metadata = given(request, 'metadata');
  if (metadata !== undefined) checkMetadata(metadata);
  const truncation = given(request, 'truncation');
  if (truncation !== undefined) checkOneOf(truncation, 'truncation', TRUNCATIONS);

  return withoutNulls(request, NULLABLE_PARAMETERS) as ResponsesRequest;
}

/** Whether the request asked for reasoning items to carry `encrypted_content` (stateless clients: Codex). */
export function wantsEncryptedReasoning(request: ResponsesRequest): boolean {
  return Array.isArray(request.include) && request.include.includes('reasoning.encrypted_content');
}

function optionalString(owner: JsonObject, key: string, ownerPath: string): void {
  const value = field(owner, key);
  if (value !== undefined && value !== null) checkString(value, at(ownerPath, key));
}

// ---------- input ----------

/** Input items and tool lists found valid before (an item's rules do not depend on its place). */
const validBefore = createValidMemo();

function checkInput(value: unknown): void {
  const items = checkArray(value, 'input', 'a string or an array of input items');
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (validBefore.has(item)) continue;
    checkItem(item, at('input', i));
    validBefore.note(item);
  }
}

function checkItem(value: unknown, path: string): void {
  const item = checkObject(value, path, 'an input item object');
  const type = field(item, 'type');
  if (type === undefined || type === null) {
    if (field(item, 'role') !== undefined) return checkMessage(item, path);
    if (field(item, 'id') !== undefined) {
      checkNonEmptyString(field(item, 'id'), at(path, 'id'));
      return;
    }
    fail(path, 'must have a "type" (or a "role", for a message)');
  }
  if (typeof type !== 'string') reject(type, at(path, 'type'), 'a string');
  switch (type) {
    case 'message':
      return checkMessage(item, path);
    case 'function_call':
      checkString(field(item, 'call_id'), at(path, 'call_id'));
      checkString(field(item, 'name'), at(path, 'name'));
      checkString(field(item, 'arguments'), at(path, 'arguments'));
      optionalString(item, 'namespace', path);
      return;
    case 'custom_tool_call':
      checkString(field(item, 'call_id'), at(path, 'call_id'));
      checkString(field(item, 'name'), at(path, 'name'));
      checkString(field(item, 'input'), at(path, 'input'));
      optionalString(item, 'namespace', path);
      return;
    case 'function_call_output':
    case 'custom_tool_call_output':
      checkString(field(item, 'call_id'), at(path, 'call_id'));
      checkToolOutput(field(item, 'output'), at(path, 'output'));
      return;
    case 'local_shell_call':
      return checkLocalShellCall(item, path);
    case 'local_shell_call_output':
      checkString(field(item, 'id'), at(path, 'id'));
      checkString(field(item, 'output'), at(path, 'output'));
      return;
    case 'reasoning': {
      const summary = field(item, 'summary');
      if (summary !== undefined) checkArray(summary, at(path, 'summary'));
      optionalString(item, 'encrypted_content', path);
      return;
    }
    case 'item_reference':
      checkNonEmptyString(field(item, 'id'), at(path, 'id'));
      return;
    default:
      // Items of hosted tools (web_search_call, mcp_call, …) and newer types: kept for a Responses
      // upstream, dropped with a warning by a translation.
      return;
  }
}

function checkMessage(item: JsonObject, path: string): void {
  checkOneOf(field(item, 'role'), at(path, 'role'), ROLES);
  const content = field(item, 'content');
  if (typeof content === 'string') return;
  const parts = checkArray(content, at(path, 'content'), 'a string or an array of content parts');
  for (let i = 0; i < parts.length; i++) checkPart(parts[i], at(at(path, 'content'), i));
}

function checkToolOutput(value: unknown, path: string): void {
  if (typeof value === 'string') return;
  const parts = checkArray(value, path, 'a string or an array of content parts');
  for (let i = 0; i < parts.length; i++) checkPart(parts[i], at(path, i));
}

/**
 * A content part. Assistant text may come as `input_text` and user text as `output_text` (clients
 * replaying history mix them, and both are text), so the part type is not checked against the role.
 */
function checkPart(value: unknown, path: string): void {
  const part = checkObject(value, path, 'a content part object');
  const type = checkString(field(part, 'type'), at(path, 'type'));
  switch (type) {
    case 'input_text':
    case 'output_text':
      checkString(field(part, 'text'), at(path, 'text'));
      return;
    case 'refusal':
      checkString(field(part, 'refusal'), at(path, 'refusal'));
      return;
    case 'input_image': {
      const fileId = field(part, 'file_id');
      if (fileId !== undefined && fileId !== null) {
        fail(path, `input_image with a file_id is not supported: ${NO_FILES_API}; send the image as image_url (an https URL or a data: URL)`);
      }
      const url = field(part, 'image_url');
      if (typeof url !== 'string' || !isImageUrl(url)) reject(url, at(path, 'image_url'), 'an http(s) URL or a data: URL');
      const detail = field(part, 'detail');
      if (detail !== undefined && detail !== null) checkOneOf(detail, at(path, 'detail'), IMAGE_DETAILS);
      return;
    }
    case 'input_file':
      return fail(path, `input_file is not supported: ${NO_FILES_API}; send the file's text as input_text, or an image as input_image with a data: URL`);
    default:
      return;
  }
}

/** A prefix check, not a parse: translation only knows these two kinds, and no `new URL` per request. */
function isImageUrl(url: string): boolean {
  return url.startsWith('https://') || url.startsWith('http://') || url.startsWith('data:');
}

function checkLocalShellCall(item: JsonObject, path: string): void {
  // Codex leaves `call_id` out of calls it got from chat-completions; the `id` stands in then.
  const callId = field(item, 'call_id');
  if (callId === undefined || callId === null) checkString(field(item, 'id'), at(path, 'id'));
  else checkString(callId, at(path, 'call_id'));
  const actionPath = at(path, 'action');
  const action = checkObject(field(item, 'action'), actionPath, 'an object {type: "exec", command, …}');
  checkStringArray(field(action, 'command'), at(actionPath, 'command'));
}

// ---------- tools ----------

function checkTools(value: unknown): void {
  if (validBefore.has(value)) return;
  const tools = checkArray(value, 'tools');
  for (let i = 0; i < tools.length; i++) {
    const path = at('tools', i);
    const tool = checkObject(tools[i], path);
    const type = checkString(field(tool, 'type'), at(path, 'type'));
    if (type === 'function' || type === 'custom') checkCallableTool(tool, type, path, true);
    else if (type === 'namespace') checkNamespace(tool, path);
    // Hosted tools and newer types are kept; a translation drops them with a warning.
  }
  validBefore.note(tools);
}

function checkCallableTool(tool: JsonObject, type: string, path: string, strictName: boolean): void {
  if (strictName) checkToolName(field(tool, 'name'), at(path, 'name'));
  else checkNonEmptyString(field(tool, 'name'), at(path, 'name'));
  optionalString(tool, 'description', path);
  if (type === 'function') {
    const parameters = field(tool, 'parameters');
    if (parameters !== undefined && parameters !== null) checkObject(parameters, at(path, 'parameters'), 'a JSON schema object');
    const strict = field(tool, 'strict');
    if (strict !== undefined && strict !== null) checkBoolean(strict, at(path, 'strict'));
    return;
  }
  const format = field(tool, 'format');
  if (format === undefined || format === null) return;
  const formatPath = at(path, 'format');
  const formatObject = checkObject(format, formatPath, 'an object {type: text} or {type: grammar, syntax, definition}');
  if (checkOneOf(field(formatObject, 'type'), at(formatPath, 'type'), CUSTOM_FORMAT_TYPES) === 'grammar') {
    checkOneOf(field(formatObject, 'syntax'), at(formatPath, 'syntax'), GRAMMAR_SYNTAXES);
    checkString(field(formatObject, 'definition'), at(formatPath, 'definition'));
  }
}

/** A namespace's tools are flattened to `NAMESPACE__TOOL` and made valid names then, so any name is taken. */
function checkNamespace(tool: JsonObject, path: string): void {
  checkNonEmptyString(field(tool, 'name'), at(path, 'name'));
  optionalString(tool, 'description', path);
  const inner = checkArray(field(tool, 'tools'), at(path, 'tools'));
  for (let i = 0; i < inner.length; i++) {
    const innerPath = at(at(path, 'tools'), i);
    const innerTool = checkObject(inner[i], innerPath);
    const type = checkOneOf(field(innerTool, 'type'), at(innerPath, 'type'), NAMESPACE_TOOL_TYPES);
    checkCallableTool(innerTool, type, innerPath, false);
  }
}

function checkToolChoice(value: unknown): void {
  if (typeof value === 'string') {
    if (!TOOL_CHOICE_MODES.has(value)) reject(value, 'tool_choice', TOOL_CHOICE_EXPECTED);
    return;
  }
  if (!isObject(value)) reject(value, 'tool_choice', TOOL_CHOICE_EXPECTED);
  const type = checkString(field(value, 'type'), 'tool_choice.type');
  if (type === 'function' || type === 'custom') {
    checkNonEmptyString(field(value, 'name'), 'tool_choice.name');
    optionalString(value, 'namespace', 'tool_choice');
  } else if (type === 'allowed_tools') {
    checkOneOf(field(value, 'mode'), 'tool_choice.mode', ALLOWED_TOOLS_MODES);
    checkArray(field(value, 'tools'), 'tool_choice.tools');
  }
}

// ---------- the rest ----------

function checkReasoning(value: unknown): void {
  const reasoning = checkObject(value, 'reasoning', 'an object {effort?, summary?}');
  const effort = field(reasoning, 'effort');
  if (effort !== undefined && effort !== null) checkOneOf(effort, 'reasoning.effort', REASONING_EFFORTS);
  const summary = field(reasoning, 'summary');
  if (summary !== undefined && summary !== null) checkOneOf(summary, 'reasoning.summary', REASONING_SUMMARIES);
}

function checkText(value: unknown): void {
  const text = checkObject(value, 'text', 'an object {format?, verbosity?}');
  const verbosity = field(text, 'verbosity');
  if (verbosity !== undefined && verbosity !== null) checkOneOf(verbosity, 'text.verbosity', VERBOSITIES);
  const format = field(text, 'format');
  if (format === undefined || format === null) return;
  const formatObject = checkObject(format, 'text.format', 'an object {type: text, json_object or json_schema}');
  if (checkOneOf(field(formatObject, 'type'), 'text.format.type', TEXT_FORMAT_TYPES) !== 'json_schema') return;
  checkToolName(field(formatObject, 'name'), 'text.format.name');
  checkObject(field(formatObject, 'schema'), 'text.format.schema', 'a JSON schema object');
  const strict = field(formatObject, 'strict');
  if (strict !== undefined && strict !== null) checkBoolean(strict, 'text.format.strict');
  optionalString(formatObject, 'description', 'text.format');
}

function checkMetadata(value: unknown): void {
  const metadata = checkObject(value, 'metadata', 'an object of string values');
  const keys = Object.keys(metadata);
  if (keys.length > MAX_METADATA_KEYS) fail('metadata', `must have at most ${MAX_METADATA_KEYS} keys`);
  for (const key of keys) {
    if (key.length > MAX_METADATA_KEY_CHARS) fail('metadata', `keys must be at most ${MAX_METADATA_KEY_CHARS} characters`);
    const entry = metadata[key];
    if (typeof entry !== 'string') reject(entry, at('metadata', key), 'a string');
    if (entry.length > MAX_METADATA_VALUE_CHARS) fail(at('metadata', key), `must be at most ${MAX_METADATA_VALUE_CHARS} characters`);
  }
}
