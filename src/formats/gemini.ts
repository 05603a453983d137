/**
 * Validation of a Gemini request body (`models/{model}:generateContent`, `:streamGenerateContent`,
 * `:countTokens`), by llmux.md section 9 and, where it is silent, by what Google's API accepts.
 *
 * In the lenient spirit of llmux.md section 5: a field is refused only where Google refuses it
 * too, and fields and values newer than this file pass (unknown fields, new part kinds, new tool
 * kinds, any `functionCallingConfig.mode` or `thinkingLevel` string), to be passed through to a
 * Gemini upstream or dropped with a warning when translated. Checks stop at the first bad field,
 * whose path the 400 names (`contents.1.parts.0.inlineData.data: must be base64 …`).
 *
 * The body is first put in one spelling (./gemini-case.ts: snake_case names become camelCase,
 * null fields are left out), so a client writing `system_instruction` is read like the SDK; paths
 * name the camelCase field. Free-form JSON (function `args` and `response`, schemas) is not walked.
 */
import type { GeminiCountTokensRequest, GeminiRequest } from './gemini-types.ts';
import { camelCaseGeminiCountTokens, camelCaseGeminiRequest } from './gemini-case.ts';
import {
  type JsonObject,
  at,
  checkArray,
  checkBoolean,
  checkInteger,
  checkNonEmptyString,
  checkNumberInRange,
  checkObject,
  checkString,
  checkStringArray,
  fail,
  field,
  reject,
} from './validate-util.ts';

/** Google refuses any other role: "Please use a valid role: user, model." */
const ROLES: ReadonlySet<unknown> = new Set(['user', 'model']);

/** The fields of a part of which exactly one may be set (the proto's `data` oneof). */
const DATA_FIELDS = [
  'text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult', 'toolCall', 'toolResponse',
] as const;

/**
 * Function names as Google allows them: a letter or `_` first, then letters, digits, `_`, `.`,
 * `:` and `-`, at most 128 characters.
 */
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/;

/** Standard or URL-safe base64 (proto JSON takes both), padding optional. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Google's limit: "a set of up to 5 character sequences". */
const MAX_STOP_SEQUENCES = 5;

export interface GeminiValidationOptions {
  /** The countTokens body: `contents`, or `generateContentRequest` holding a whole request. */
  countTokens?: boolean;
}

/**
 * Validates a parsed JSON body of `:generateContent` / `:streamGenerateContent` and returns it
 * typed: the same object, or a copy in camelCase without null fields when the client wrote
 * otherwise.
 *
 * @throws GatewayError 400 `invalid_parameters` naming the path of the first bad field and its rule.
 */
export function validateGeminiRequest(body: unknown): GeminiRequest {
  const request = camelCaseGeminiRequest(checkObject(body, 'body', 'a JSON object'));
  checkRequest(request, '');
  return request as GeminiRequest;
}

/**
 * Validates a parsed JSON body of `:countTokens`: `contents`, or `generateContentRequest` (a
 * generateContent body, with its system instruction and tools, and optionally `model`), not both.
 *
 * @throws GatewayError 400 `invalid_parameters` naming the path of the first bad field and its rule.
 */
export function validateGeminiCountTokens(body: unknown): GeminiCountTokensRequest {
  const request = camelCaseGeminiCountTokens(checkObject(body, 'body', 'a JSON object'));
  const contents = field(request, 'contents');
  const wrapped = field(request, 'generateContentRequest');
  if (contents !== undefined && wrapped !== undefined) fail('generateContentRequest', 'cannot be sent with contents; send one of them');
  if (wrapped !== undefined) {
    const inner = checkObject(wrapped, 'generateContentRequest');
    const model = field(inner, 'model');
    if (model !== undefined) checkString(model, 'generateContentRequest.model');
    checkRequest(inner, 'generateContentRequest');
  } else if (contents === undefined) {
    fail('contents', 'is required (or generateContentRequest): the contents whose tokens to count');
  } else {
    checkContents(contents, 'contents');
  }
  return request as GeminiCountTokensRequest;
}

/** `prefix` + `key`, or `key` at the root. */
function under(prefix: string, key: string): string {
  return prefix === '' ? key : at(prefix, key);
}

function checkRequest(request: JsonObject, prefix: string): void {
  checkContents(field(request, 'contents'), under(prefix, 'contents'));
  const system = field(request, 'systemInstruction');
  if (system !== undefined) checkContent(system, under(prefix, 'systemInstruction'), true);
  const tools = field(request, 'tools');
  if (tools !== undefined) checkTools(tools, under(prefix, 'tools'));
  const toolConfig = field(request, 'toolConfig');
  if (toolConfig !== undefined) checkToolConfig(toolConfig, under(prefix, 'toolConfig'));
  const generation = field(request, 'generationConfig');
  if (generation !== undefined) checkGenerationConfig(generation, under(prefix, 'generationConfig'));
  const safety = field(request, 'safetySettings');
  if (safety !== undefined) checkSafetySettings(safety, under(prefix, 'safetySettings'));
  const cached = field(request, 'cachedContent');
  if (cached !== undefined) checkNonEmptyString(cached, under(prefix, 'cachedContent'));
}

function checkContents(value: unknown, path: string): void {
  const contents = checkArray(value, path, 'a non-empty array of contents');
  if (contents.length === 0) fail(path, 'must have at least 1 item');
  for (let i = 0; i < contents.length; i++) checkContent(contents[i], at(path, i), false);
}

/** A content; the system instruction's role is not read, so any is taken there. */
function checkContent(value: unknown, path: string, system: boolean): void {
  const content = checkObject(value, path, 'a content object {role, parts}');
  const role = field(content, 'role');
  if (!system && role !== undefined && !ROLES.has(role)) reject(role, at(path, 'role'), 'one of user, model');
  const partsPath = at(path, 'parts');
  const parts = checkArray(field(content, 'parts'), partsPath, 'a non-empty array of parts');
  if (parts.length === 0) fail(partsPath, 'must have at least 1 item');
  for (let i = 0; i < parts.length; i++) checkPart(parts[i], at(partsPath, i));
}

function checkPart(value: unknown, path: string): void {
  const part = checkObject(value, path, 'a part object');
  let data: string | undefined;
  for (const name of DATA_FIELDS) {
    if (field(part, name) === undefined) continue;
    if (data !== undefined) fail(at(path, name), `cannot be set beside ${data}: a part holds one kind of data`);
    data = name;
  }
  switch (data) {
    case 'text':
      checkString(field(part, 'text'), at(path, 'text'));
      break;
    case 'inlineData':
      checkBlob(field(part, 'inlineData'), at(path, 'inlineData'));
      break;
    case 'fileData':
      checkFileData(field(part, 'fileData'), at(path, 'fileData'));
      break;
    case 'functionCall': {
      const callPath = at(path, 'functionCall');
      const call = checkObject(field(part, 'functionCall'), callPath);
      checkNonEmptyString(field(call, 'name'), at(callPath, 'name'));
      const args = field(call, 'args');
      if (args !== undefined) checkObject(args, at(callPath, 'args'), 'an object of arguments');
      const id = field(call, 'id');
      if (id !== undefined) checkString(id, at(callPath, 'id'));
      break;
    }
    case 'functionResponse':
      checkFunctionResponse(field(part, 'functionResponse'), at(path, 'functionResponse'));
      break;
    case 'executableCode': {
      const code = checkObject(field(part, 'executableCode'), at(path, 'executableCode'));
      checkString(field(code, 'code'), at(path, 'executableCode.code'));
      break;
    }
    case undefined:
      // A part of a kind newer than this file (or metadata only): the upstream judges it.
      break;
    default:
      checkObject(field(part, data), at(path, data));
  }
  const thought = field(part, 'thought');
  if (thought !== undefined) checkBoolean(thought, at(path, 'thought'));
  const signature = field(part, 'thoughtSignature');
  if (signature !== undefined) checkString(signature, at(path, 'thoughtSignature'));
}

function checkBlob(value: unknown, path: string): void {
  const blob = checkObject(value, path, 'an object {mimeType, data}');
  checkNonEmptyString(field(blob, 'mimeType'), at(path, 'mimeType'));
  const dataPath = at(path, 'data');
  const data = field(blob, 'data');
  if (typeof data !== 'string') reject(data, dataPath, 'a base64 string');
  if (data.startsWith('data:')) fail(dataPath, 'must be plain base64 data, without a "data:…;base64," prefix');
  if (!BASE64.test(data)) fail(dataPath, 'must be a base64 string');
}

function checkFileData(value: unknown, path: string): void {
  const file = checkObject(value, path, 'an object {fileUri, mimeType}');
  checkNonEmptyString(field(file, 'fileUri'), at(path, 'fileUri'));
  const mimeType = field(file, 'mimeType');
  if (mimeType !== undefined) checkString(mimeType, at(path, 'mimeType'));
}

function checkFunctionResponse(value: unknown, path: string): void {
  const response = checkObject(value, path);
  checkNonEmptyString(field(response, 'name'), at(path, 'name'));
  const body = field(response, 'response');
  if (body !== undefined) checkObject(body, at(path, 'response'), 'a JSON object (Google documents {"output": …} or {"error": …})');
  const id = field(response, 'id');
  if (id !== undefined) checkString(id, at(path, 'id'));
  const parts = field(response, 'parts');
  if (parts === undefined) return;
  const items = checkArray(parts, at(path, 'parts'));
  for (let i = 0; i < items.length; i++) {
    const itemPath = at(at(path, 'parts'), i);
    const item = checkObject(items[i], itemPath, 'an object {inlineData} or {fileData}');
    const blob = field(item, 'inlineData');
    if (blob !== undefined) checkBlob(blob, at(itemPath, 'inlineData'));
    const file = field(item, 'fileData');
    if (file !== undefined) checkFileData(file, at(itemPath, 'fileData'));
  }
}

function checkTools(value: unknown, path: string): void {
  const tools = checkArray(value, path);
  const names = new Set<string>();
  for (let i = 0; i < tools.length; i++) {
    const toolPath = at(path, i);
    const tool = checkObject(tools[i], toolPath, 'a tool object');
    const declarations = field(tool, 'functionDeclarations');
    // Google's own tools (googleSearch, codeExecution, urlContext, …) are objects of options.
    for (const key of Object.keys(tool)) {
      if (key !== 'functionDeclarations') checkObject(tool[key], at(toolPath, key), 'an object of options ({} for none)');
    }
    if (declarations === undefined) continue;
    const listPath = at(toolPath, 'functionDeclarations');
    const list = checkArray(declarations, listPath);
    for (let k = 0; k < list.length; k++) checkDeclaration(list[k], at(listPath, k), names);
  }
}

function checkDeclaration(value: unknown, path: string, names: Set<string>): void {
  const declaration = checkObject(value, path, 'a function declaration {name, description, parameters}');
  const namePath = at(path, 'name');
  const name = field(declaration, 'name');
  if (typeof name !== 'string' || !FUNCTION_NAME.test(name)) {
    reject(name, namePath, 'a string of 1 to 128 characters from a-z, A-Z, 0-9, _, ., : and -, starting with a letter or _');
  }
  if (names.has(name)) fail(namePath, 'must be unique among function declarations');
  names.add(name);
  const description = field(declaration, 'description');
  if (description !== undefined) checkString(description, at(path, 'description'));
  const parameters = field(declaration, 'parameters');
  if (parameters !== undefined) checkObject(parameters, at(path, 'parameters'), 'a schema object');
  const jsonSchema = field(declaration, 'parametersJsonSchema');
  if (jsonSchema !== undefined) {
    if (parameters !== undefined) fail(at(path, 'parametersJsonSchema'), 'cannot be sent with parameters; send one of them');
    checkObject(jsonSchema, at(path, 'parametersJsonSchema'), 'a JSON Schema object');
  }
}

function checkToolConfig(value: unknown, path: string): void {
  const config = checkObject(value, path);
  const calling = field(config, 'functionCallingConfig');
  if (calling === undefined) return;
  const callingPath = at(path, 'functionCallingConfig');
  const callingConfig = checkObject(calling, callingPath);
  const mode = field(callingConfig, 'mode');
  // AUTO, ANY, NONE, VALIDATED, and modes newer than this file.
  if (mode !== undefined) checkNonEmptyString(mode, at(callingPath, 'mode'));
  const allowed = field(callingConfig, 'allowedFunctionNames');
  if (allowed !== undefined) checkStringArray(allowed, at(callingPath, 'allowedFunctionNames'));
}

function checkGenerationConfig(value: unknown, path: string): void {
  const config = checkObject(value, path);
  const number = (key: string, min: number, max: number): void => {
    const item = field(config, key);
    if (item !== undefined) checkNumberInRange(item, at(path, key), min, max);
  };
  const integer = (key: string, min: number, max?: number): void => {
    const item = field(config, key);
    if (item !== undefined) checkInteger(item, at(path, key), min, max);
  };
  number('temperature', 0, 2);
  number('topP', 0, 1);
  integer('topK', 0);
  integer('maxOutputTokens', 1);
  integer('candidateCount', 1);
  integer('seed', Number.MIN_SAFE_INTEGER);
  number('presencePenalty', -2, 2);
  number('frequencyPenalty', -2, 2);
  integer('logprobs', 0);
  const stop = field(config, 'stopSequences');
  if (stop !== undefined) {
    const sequences = checkStringArray(stop, at(path, 'stopSequences'));
    if (sequences.length > MAX_STOP_SEQUENCES) fail(at(path, 'stopSequences'), `must have at most ${MAX_STOP_SEQUENCES} items`);
  }
  const mimeType = field(config, 'responseMimeType');
  if (mimeType !== undefined) checkString(mimeType, at(path, 'responseMimeType'));
  const schema = field(config, 'responseSchema');
  if (schema !== undefined) checkObject(schema, at(path, 'responseSchema'), 'a schema object');
  const jsonSchema = field(config, 'responseJsonSchema');
  if (jsonSchema !== undefined) {
    if (schema !== undefined) fail(at(path, 'responseJsonSchema'), 'cannot be sent with responseSchema; send one of them');
    if (typeof jsonSchema !== 'boolean') checkObject(jsonSchema, at(path, 'responseJsonSchema'), 'a JSON Schema');
  }
  const logprobs = field(config, 'responseLogprobs');
  if (logprobs !== undefined) checkBoolean(logprobs, at(path, 'responseLogprobs'));
  const thinking = field(config, 'thinkingConfig');
  if (thinking !== undefined) checkThinkingConfig(thinking, at(path, 'thinkingConfig'));
}

function checkThinkingConfig(value: unknown, path: string): void {
  const thinking = checkObject(value, path);
  const budget = field(thinking, 'thinkingBudget');
  if (budget !== undefined) checkInteger(budget, at(path, 'thinkingBudget'), -1);
  const level = field(thinking, 'thinkingLevel');
  if (level !== undefined) {
    // MINIMAL, LOW, MEDIUM, HIGH, and levels newer than this file.
    checkNonEmptyString(level, at(path, 'thinkingLevel'));
    if (budget !== undefined) fail(at(path, 'thinkingLevel'), 'cannot be sent with thinkingBudget; send one of them');
  }
  const include = field(thinking, 'includeThoughts');
  if (include !== undefined) checkBoolean(include, at(path, 'includeThoughts'));
}

function checkSafetySettings(value: unknown, path: string): void {
  const settings = checkArray(value, path);
  for (let i = 0; i < settings.length; i++) {
    const settingPath = at(path, i);
    const setting = checkObject(settings[i], settingPath, 'an object {category, threshold}');
    checkNonEmptyString(field(setting, 'category'), at(settingPath, 'category'));
    checkNonEmptyString(field(setting, 'threshold'), at(settingPath, 'threshold'));
  }
}
