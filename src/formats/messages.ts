/**
 * Validation of a messages-format request body (`POST /v1/messages`), by the request tables of
 * gateway-api.md ("Messages-format request body", "Message", "Input content blocks", "Tool"), and,
 * where they are silent, by what the Anthropic API accepts.
 *
 * Checks run in the order of the spec's field table and stop at the first bad field. Unknown
 * top-level fields and unknown fields inside known objects are passed through untouched; tool
 * `input` and `input_schema.properties` are opaque objects, never walked.
 *
 * Forward compatibility (llmux.md section 5): values the description does not rule on are never
 * refused: any `thinking.type` (only `enabled` has its budget checked) and any `thinking.display`.
 * Three rules of the description are stricter than the Anthropic API and real clients break on
 * them (a screenshot pasted as the first prompt, consecutive user turns, a `tool_result` with no
 * content); by default llmux accepts what the API accepts, and so it does a block of a type newer
 * than this file. Option `strict` (config `"validation": "strict"`) enforces those rules and
 * refuses unknown block types.
 */
import type { MessagesRequest } from './wire.ts';
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
  oneOf,
  reject,
} from './validate-util.ts';

export interface MessagesValidationOptions {
  /**
   * True when the client sent the `interleaved-thinking-2025-05-14` beta: Anthropic then lets
   * `thinking.budget_tokens` reach or exceed `max_tokens` (it budgets a whole turn of thinking).
   */
  interleavedThinking?: boolean;
  /**
   * A `count_tokens` body: the messages request without `max_tokens` (the operation generates
   * nothing), so neither it nor the budget-below-max_tokens rule applies.
   */
  countTokens?: boolean;
  /**
   * The description's stricter rules: text only in the first message, alternating roles,
   * `tool_result` content required, no block types but the known ones.
   */
  strict?: boolean;
}

const ROLES = oneOf(['user', 'assistant']);
const MEDIA_TYPES = oneOf(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const IMAGE_SOURCE_TYPES = oneOf(['base64', 'url']);
const CACHE_TYPES = oneOf(['ephemeral']);
const CACHE_TTLS = oneOf(['5m', '1h']);
const TEXT_TYPE = oneOf(['text']);
const OBJECT_TYPE = oneOf(['object']);
const TOOL_CHOICE_TYPES = oneOf(['auto', 'any', 'tool', 'none']);
const SERVICE_TIERS = oneOf(['auto', 'standard_only']);

/** Thinking budgets below this are refused by Anthropic. */
const MIN_THINKING_BUDGET_TOKENS = 1024;

const BLOCK_TYPES =
  'one of text, image, document, tool_use, tool_result, thinking, redacted_thinking, ' +
  'server_tool_use, mcp_tool_use or a server tool result (web_search_tool_result, …)';

/**
 * Standard base64 with padding. One linear pass; a data URL prefix or line breaks fail it, which is
 * what Anthropic does too.
 */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Validates a parsed JSON body of `POST /v1/messages` and returns it typed (the same object).
 *
 * @throws GatewayError 400 `invalid_parameters` naming the path of the first bad field and its rule,
 *   e.g. `messages.2.content.0.source.media_type: must be one of image/jpeg, image/png, image/gif, image/webp`.
 */
export function validateMessagesRequest(body: unknown, options: MessagesValidationOptions = {}): MessagesRequest {
  const request = checkObject(body, 'body', 'a JSON object');

  const strict = options.strict === true;
  checkNonEmptyString(field(request, 'model'), 'model');
  checkMessages(field(request, 'messages'), strict);
  const maxTokens = options.countTokens === true && field(request, 'max_tokens') === undefined
    ? Number.POSITIVE_INFINITY
    : checkInteger(field(request, 'max_tokens'), 'max_tokens', 1);

  const system = field(request, 'system');
  if (system !== undefined) checkSystem(system);
  const temperature = field(request, 'temperature');
  if (temperature !== undefined) checkNumberInRange(temperature, 'temperature', 0, 1);
  const topP = field(request, 'top_p');
  if (topP !== undefined) checkNumberInRange(topP, 'top_p', 0, 1);
  const topK = field(request, 'top_k');
  if (topK !== undefined) checkInteger(topK, 'top_k', 0);
  const stream = field(request, 'stream');
  if (stream !== undefined) checkBoolean(stream, 'stream');
  const stopSequences = field(request, 'stop_sequences');
  if (stopSequences !== undefined) checkStringArray(stopSequences, 'stop_sequences');
  const tools = field(request, 'tools');
  if (tools !== undefined) checkTools(tools);
  const toolChoice = field(request, 'tool_choice');
  if (toolChoice !== undefined) checkToolChoice(toolChoice);
  const thinking = field(request, 'thinking');
  if (thinking !== undefined) checkThinking(thinking, maxTokens, options.interleavedThinking === true);
  const serviceTier = field(request, 'service_tier');
  if (serviceTier !== undefined) checkOneOf(serviceTier, 'service_tier', SERVICE_TIERS);
  const metadata = field(request, 'metadata');
  if (metadata !== undefined) checkMetadata(metadata);

  return request as MessagesRequest;
}

/** Messages (after the first) and tool lists found valid before (outside `strict`, where a message's place decides). */
const validBefore = createValidMemo();

function checkMessages(value: unknown, strict: boolean): void {
  const messages = checkArray(value, 'messages', 'a non-empty array of messages');
  if (messages.length === 0) fail('messages', 'must have at least 1 item');
  let previousRole = '';
  for (let i = 0; i < messages.length; i++) {
    // The first message's rules are its own (its role); any later one's are the same at every place.
    if (i > 0 && !strict && validBefore.has(messages[i])) continue;
    const path = at('messages', i);
    const message = checkObject(messages[i], path);
    // Claude Code (its mid-conversation-system beta) sends `system` turns between the others:
    // text only, and outside the user/assistant alternation.
    if (i > 0 && field(message, 'role') === 'system') {
      checkSystemTurn(field(message, 'content'), at(path, 'content'));
      if (!strict) validBefore.note(message);
      continue;
    }
    const role = checkOneOf(field(message, 'role'), at(path, 'role'), ROLES);
    if (i === 0 && role !== 'user') fail(at(path, 'role'), 'the first message must have role "user"');
    // The API merges consecutive same-role turns; the description wants them alternating.
    if (strict && role === previousRole) {
      fail(at(path, 'role'), `must be "${role === 'user' ? 'assistant' : 'user'}": roles must alternate between user and assistant`);
    }
    previousRole = role;
    checkMessageContent(field(message, 'content'), at(path, 'content'), role, strict && i === 0, strict);
    if (i > 0 && !strict) validBefore.note(message);
  }
}

function checkSystemTurn(value: unknown, path: string): void {
  if (typeof value === 'string') return;
  const blocks = checkArray(value, path, 'a string or an array of text blocks');
  for (let i = 0; i < blocks.length; i++) {
    const type = checkBlock(blocks[i], at(path, i), 'system', true);
    if (type !== 'text') fail(at(at(path, i), 'type'), 'must be "text": a system turn may only contain text');
  }
}

function checkMessageContent(value: unknown, path: string, role: string, textOnly: boolean, strict: boolean): void {
  if (typeof value === 'string') return;
  const blocks = checkArray(value, path, 'a string or an array of content blocks');
  for (let i = 0; i < blocks.length; i++) {
    const blockPath = at(path, i);
    const type = checkBlock(blocks[i], blockPath, role, strict);
    // gateway-api.md: "Only text content is supported for the first user message." (strict only)
    if (textOnly && type !== 'text') fail(at(blockPath, 'type'), 'must be "text": the first message may only contain text');
  }
}

/** Checks one content block of a message and returns its type; `strict` refuses unknown types. */
function checkBlock(value: unknown, path: string, role: string, strict: boolean): string {
  const block = checkObject(value, path, 'a content block object');
  const typePath = at(path, 'type');
  const type = field(block, 'type');
  if (typeof type !== 'string') reject(type, typePath, BLOCK_TYPES);
  switch (type) {
    case 'text':
      checkTextBlock(block, path);
      return type;
    case 'image':
      checkImageBlock(block, path);
      return type;
    case 'document':
      // Shape only: the document source variants (base64 PDF, text, content, url, file) are the upstream's to judge.
      checkObject(field(block, 'source'), at(path, 'source'));
      checkOptionalCacheControl(block, path);
      return type;
    case 'tool_result':
      if (role !== 'user') fail(typePath, 'tool_result blocks may only appear in user messages');
      checkToolResultBlock(block, path, strict);
      return type;
    case 'tool_use':
    case 'server_tool_use':
    case 'mcp_tool_use':
      if (role !== 'assistant') fail(typePath, `${type} blocks may only appear in assistant messages`);
      checkNonEmptyString(field(block, 'id'), at(path, 'id'));
      checkNonEmptyString(field(block, 'name'), at(path, 'name'));
      checkObject(field(block, 'input'), at(path, 'input'));
      checkOptionalCacheControl(block, path);
      return type;
    case 'thinking': {
      if (role !== 'assistant') fail(typePath, 'thinking blocks may only appear in assistant messages');
      checkString(field(block, 'thinking'), at(path, 'thinking'));
      // Anthropic requires the signature; other upstreams' reasoning, translated into thinking
      // blocks, has none, and such history must still be accepted back.
      const signature = field(block, 'signature');
      if (signature !== undefined) checkString(signature, at(path, 'signature'));
      return type;
    }
    case 'redacted_thinking':
      if (role !== 'assistant') fail(typePath, 'redacted_thinking blocks may only appear in assistant messages');
      checkString(field(block, 'data'), at(path, 'data'));
      return type;
    default:
      // Results of Anthropic server tools (web_search_tool_result, code_execution_tool_result, …)
      // come back in assistant history when a server tool was used; accepting server tools means
      // accepting their history.
      if (type.endsWith('_tool_result') && type !== '_tool_result') {
        // The type is client text of any length, so the message names the kind, not the value.
        if (role !== 'assistant') fail(typePath, 'server tool result blocks may only appear in assistant messages');
        checkNonEmptyString(field(block, 'tool_use_id'), at(path, 'tool_use_id'));
        return type;
      }
      // A block type newer than this file: the API accepts what it knows, so only strict refuses it.
      if (strict || type === '') return reject(type, typePath, BLOCK_TYPES);
      return type;
  }
}

function checkTextBlock(block: JsonObject, path: string): void {
  checkString(field(block, 'text'), at(path, 'text'));
  checkOptionalCacheControl(block, path);
}

function checkImageBlock(block: JsonObject, path: string): void {
  const sourcePath = at(path, 'source');
  const source = checkObject(field(block, 'source'), sourcePath);
  const sourceType = checkOneOf(field(source, 'type'), at(sourcePath, 'type'), IMAGE_SOURCE_TYPES);
  if (sourceType === 'base64') {
    checkOneOf(field(source, 'media_type'), at(sourcePath, 'media_type'), MEDIA_TYPES);
    checkBase64(field(source, 'data'), at(sourcePath, 'data'));
  } else {
    checkHttpUrl(field(source, 'url'), at(sourcePath, 'url'));
  }
  checkOptionalCacheControl(block, path);
}

function checkBase64(value: unknown, path: string): void {
  if (typeof value !== 'string' || value === '') reject(value, path, 'a non-empty base64 string');
  if (value.startsWith('data:')) fail(path, 'must be plain base64 data, without a "data:…;base64," prefix');
  if (value.length % 4 !== 0 || !BASE64.test(value)) fail(path, 'must be a base64 string (A-Z, a-z, 0-9, +, /, = padding)');
}

function checkHttpUrl(value: unknown, path: string): void {
  if (typeof value !== 'string' || !isHttpUrl(value)) reject(value, path, 'an http:// or https:// URL');
}

/** A prefix check, not a parse: no `new URL` per request, and the upstream fetches it anyway. */
function isHttpUrl(url: string): boolean {
  return (url.startsWith('https://') && url.length > 8) || (url.startsWith('http://') && url.length > 7);
}

function checkToolResultBlock(block: JsonObject, path: string, strict: boolean): void {
  checkNonEmptyString(field(block, 'tool_use_id'), at(path, 'tool_use_id'));
  const contentPath = at(path, 'content');
  const content = field(block, 'content');
  // The API takes a tool_result without content (a tool that printed nothing); the description requires it.
  const absentAllowed = content === undefined && !strict;
  if (!absentAllowed && typeof content !== 'string') {
    const items = checkArray(content, contentPath, 'a string or an array of content blocks');
    for (let i = 0; i < items.length; i++) {
      const itemPath = at(contentPath, i);
      const item = checkObject(items[i], itemPath);
      const type = field(item, 'type');
      if (typeof type !== 'string') reject(type, at(itemPath, 'type'), 'a string naming the block type');
      // text and image results are what translation reads; other kinds (document, search_result)
      // are passed on for the upstream to judge.
      if (type === 'text') checkTextBlock(item, itemPath);
      else if (type === 'image') checkImageBlock(item, itemPath);
    }
  }
  const isError = field(block, 'is_error');
  if (isError !== undefined) checkBoolean(isError, at(path, 'is_error'));
  checkOptionalCacheControl(block, path);
}

function checkOptionalCacheControl(owner: JsonObject, ownerPath: string): void {
  const value = field(owner, 'cache_control');
  if (value === undefined) return;
  const path = at(ownerPath, 'cache_control');
  const cacheControl = checkObject(value, path, 'an object {type: "ephemeral"}');
  checkOneOf(field(cacheControl, 'type'), at(path, 'type'), CACHE_TYPES);
  const ttl = field(cacheControl, 'ttl');
  if (ttl !== undefined) checkOneOf(ttl, at(path, 'ttl'), CACHE_TTLS);
}

function checkSystem(value: unknown): void {
  if (typeof value === 'string') return;
  const blocks = checkArray(value, 'system', 'a string or an array of text blocks');
  for (let i = 0; i < blocks.length; i++) {
    const path = at('system', i);
    const block = checkObject(blocks[i], path, 'a text block object');
    checkOneOf(field(block, 'type'), at(path, 'type'), TEXT_TYPE);
    checkTextBlock(block, path);
  }
}

function checkTools(value: unknown): void {
  if (validBefore.has(value)) return;
  const tools = checkArray(value, 'tools');
  const names = new Set<string>();
  for (let i = 0; i < tools.length; i++) {
    const path = at('tools', i);
    const tool = checkObject(tools[i], path);
    const type = field(tool, 'type');
    if (type !== undefined && typeof type !== 'string') reject(type, at(path, 'type'), 'a string');
    const namePath = at(path, 'name');
    const name = checkToolName(field(tool, 'name'), namePath);
    // Anthropic refuses duplicate names: the model could not tell the tools apart.
    if (names.has(name)) fail(namePath, 'must be unique among tools');
    names.add(name);
    // A typed tool other than `custom` is an Anthropic server tool (web_search_20250305, bash_…):
    // its other fields are versioned by Anthropic, so only the name is ours to check.
    if (type !== undefined && type !== 'custom') continue;
    const description = field(tool, 'description');
    if (description !== undefined) checkString(description, at(path, 'description'));
    const schemaPath = at(path, 'input_schema');
    const schema = checkObject(field(tool, 'input_schema'), schemaPath, 'a JSON schema object');
    checkOneOf(field(schema, 'type'), at(schemaPath, 'type'), OBJECT_TYPE);
    checkObject(field(schema, 'properties'), at(schemaPath, 'properties'));
    const required = field(schema, 'required');
    if (required !== undefined) checkStringArray(required, at(schemaPath, 'required'));
    checkOptionalCacheControl(tool, path);
  }
  validBefore.note(tools);
}

function checkToolChoice(value: unknown): void {
  const choice = checkObject(value, 'tool_choice', 'an object with type auto, any, tool or none');
  const type = checkOneOf(field(choice, 'type'), 'tool_choice.type', TOOL_CHOICE_TYPES);
  if (type === 'tool') checkToolName(field(choice, 'name'), 'tool_choice.name');
  const disableParallel = field(choice, 'disable_parallel_tool_use');
  if (disableParallel !== undefined) checkBoolean(disableParallel, 'tool_choice.disable_parallel_tool_use');
}

/**
 * `thinking`: an object with a string `type`; `enabled` (the description's) has its budget checked.
 * Other types (`disabled`, `adaptive`, newer ones) and any `display` (`summarized`, `omitted`,
 * Claude Code's `updates`, newer ones) are the upstream's to judge.
 */
function checkThinking(value: unknown, maxTokens: number, interleaved: boolean): void {
  const thinking = checkObject(value, 'thinking', 'an object with a type (enabled, disabled, adaptive, …)');
  const type = checkNonEmptyString(field(thinking, 'type'), 'thinking.type');
  if (type === 'enabled') {
    const budget = checkInteger(field(thinking, 'budget_tokens'), 'thinking.budget_tokens', MIN_THINKING_BUDGET_TOKENS);
    if (budget >= maxTokens && !interleaved) fail('thinking.budget_tokens', 'must be less than max_tokens');
  }
}

function checkMetadata(value: unknown): void {
  const metadata = checkObject(value, 'metadata');
  const userId = field(metadata, 'user_id');
  // The Anthropic SDKs type user_id as `string | null`.
  if (userId !== undefined && userId !== null) checkString(userId, 'metadata.user_id');
}
