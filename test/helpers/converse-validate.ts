/**
 * What Bedrock refuses in a Converse or ConverseStream request body, checked the way its
 * ValidationException messages say it checks (the Converse API reference's constraints on
 * `Message`, `ContentBlock`, `ToolConfiguration`, `InferenceConfiguration`): the fake Bedrock
 * answers 400 with these, and the request translators' tests run every body they make through them.
 *
 * Per model family, only what Bedrock is known to refuse: `toolChoice` `any` / `tool` on Llama,
 * and reasoning blocks for models other than Claude.
 */
type Json = Record<string, unknown>;

const TOP_LEVEL = new Set([
  'messages', 'system', 'inferenceConfig', 'toolConfig', 'guardrailConfig', 'additionalModelRequestFields', 'promptVariables',
  'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig', 'serviceTier',
]);
const BLOCK_MEMBERS = new Set(['text', 'image', 'document', 'video', 'toolUse', 'toolResult', 'guardContent', 'cachePoint', 'reasoningContent', 'citationsContent']);
const USER_ONLY = new Set(['image', 'document', 'video', 'toolResult']);
const ASSISTANT_ONLY = new Set(['toolUse', 'reasoningContent']);
const IMAGE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);
const DOCUMENT_FORMATS = new Set(['pdf', 'csv', 'doc', 'docx', 'xls', 'xlsx', 'html', 'txt', 'md']);
const INFERENCE_KEYS = new Set(['maxTokens', 'temperature', 'topP', 'stopSequences']);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_USE_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const DOCUMENT_NAME = /^[A-Za-z0-9\-()[\]]+(?: [A-Za-z0-9\-()[\]]+)*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function blank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
}

/** The one member a union object sets, or why it is not one. */
function member(block: Json, at: string): string {
  const keys = Object.keys(block);
  if (keys.length !== 1) throw new Error(`${at} must set exactly one member, not ${keys.length} (${keys.join(', ')})`);
  return keys[0] as string;
}

function checkBytes(source: unknown, at: string): void {
  if (!isRecord(source) || typeof source['bytes'] !== 'string' || source['bytes'] === '' || !BASE64.test(source['bytes'])) throw new Error(`${at}.source.bytes must be base64 bytes`);
}

function checkToolResult(result: Json, at: string): void {
  if (typeof result['toolUseId'] !== 'string' || !TOOL_USE_ID.test(result['toolUseId'])) throw new Error(`${at}.toolUseId is not a valid tool use id`);
  const content = result['content'];
  if (!Array.isArray(content) || content.length === 0) throw new Error(`${at}.content must hold at least one block`);
  content.forEach((piece: unknown, k) => {
    if (!isRecord(piece)) throw new Error(`${at}.content.${k} must be an object`);
    const kind = member(piece, `${at}.content.${k}`);
    if (kind === 'text' && typeof piece['text'] !== 'string') throw new Error(`${at}.content.${k}.text must be a string`);
    if (kind === 'image') {
      const image = piece['image'] as Json;
      if (!IMAGE_FORMATS.has(String(image['format']))) throw new Error(`${at}.content.${k}.image.format is not an image format`);
      checkBytes(image['source'], `${at}.content.${k}.image`);
    }
    if (!['text', 'json', 'image', 'document', 'video'].includes(kind)) throw new Error(`${at}.content.${k}: ${kind} is not a tool result content block`);
  });
  if (result['status'] !== undefined && result['status'] !== 'success' && result['status'] !== 'error') throw new Error(`${at}.status must be success or error`);
}

function checkBlock(block: unknown, role: string, at: string, modelId: string): string {
  if (!isRecord(block)) throw new Error(`${at} must be an object`);
  const kind = member(block, at);
  if (!BLOCK_MEMBERS.has(kind)) throw new Error(`${at}: ${kind} is not a content block member`);
  if (role === 'assistant' && USER_ONLY.has(kind)) throw new Error(`${at}: a ${kind} block can only be in a user message`);
  if (role === 'user' && ASSISTANT_ONLY.has(kind)) throw new Error(`${at}: a ${kind} block can only be in an assistant message`);
  const value = block[kind];
  switch (kind) {
    case 'text':
      if (blank(value)) throw new Error(`The text field in the ContentBlock object at ${at} is blank. Add text to the text field, and try again.`);
      break;
    case 'image': {
      const image = value as Json;
      if (!IMAGE_FORMATS.has(String(image['format']))) throw new Error(`${at}.image.format is not an image format`);
      checkBytes(image['source'], `${at}.image`);
      break;
    }
    case 'document': {
      const document = value as Json;
      if (!DOCUMENT_FORMATS.has(String(document['format']))) throw new Error(`${at}.document.format is not a document format`);
      if (typeof document['name'] !== 'string' || !DOCUMENT_NAME.test(document['name'])) throw new Error(`${at}.document.name may only contain alphanumeric characters, whitespace characters (no more than one in a row), hyphens, parentheses and square brackets`);
      checkBytes(document['source'], `${at}.document`);
      break;
    }
    case 'toolUse': {
      const toolUse = value as Json;
      if (typeof toolUse['toolUseId'] !== 'string' || !TOOL_USE_ID.test(toolUse['toolUseId'])) throw new Error(`${at}.toolUse.toolUseId is not a valid tool use id`);
      if (typeof toolUse['name'] !== 'string' || !TOOL_NAME.test(toolUse['name'])) throw new Error(`${at}.toolUse.name is not a valid tool name`);
      if (!isRecord(toolUse['input'])) throw new Error(`${at}.toolUse.input must be an object`);
      break;
    }
    case 'toolResult':
      checkToolResult(value as Json, `${at}.toolResult`);
      break;
    case 'reasoningContent': {
      if (!modelId.includes('anthropic.')) throw new Error("This model doesn't support the reasoningContent.reasoningText.signature field. Remove reasoningContent.reasoningText.signature and try again.");
      const reasoning = value as Json;
      const shape = member(reasoning, `${at}.reasoningContent`);
      if (shape === 'reasoningText' && (!isRecord(reasoning['reasoningText']) || typeof reasoning['reasoningText']['text'] !== 'string')) throw new Error(`${at}.reasoningContent.reasoningText.text must be a string`);
      if (shape === 'redactedContent' && (typeof reasoning['redactedContent'] !== 'string' || !BASE64.test(reasoning['redactedContent']))) throw new Error(`${at}.reasoningContent.redactedContent must be base64 bytes`);
      break;
    }
    default:
      break;
  }
  return kind;
}

function checkToolConfig(config: unknown, modelId: string): void {
  if (!isRecord(config)) throw new Error('toolConfig must be an object');
  const tools = config['tools'];
  if (!Array.isArray(tools) || tools.length === 0) throw new Error('toolConfig.tools must hold at least one tool');
  const names = new Set<string>();
  tools.forEach((tool: unknown, index) => {
    const spec = isRecord(tool) ? tool['toolSpec'] : undefined;
    if (!isRecord(spec)) throw new Error(`toolConfig.tools.${index} must be a toolSpec`);
    if (typeof spec['name'] !== 'string' || !TOOL_NAME.test(spec['name'])) throw new Error(`toolConfig.tools.${index}.toolSpec.name is not a valid tool name`);
    if (names.has(spec['name'])) throw new Error(`toolConfig.tools.${index}.toolSpec.name: the tool name ${spec['name']} is used twice`);
    names.add(spec['name']);
    if (spec['description'] !== undefined && blank(spec['description'])) throw new Error(`toolConfig.tools.${index}.toolSpec.description is blank`);
    const schema = isRecord(spec['inputSchema']) ? spec['inputSchema']['json'] : undefined;
    if (!isRecord(schema) || schema['type'] !== 'object') throw new Error(`toolConfig.tools.${index}.toolSpec.inputSchema.json must be a JSON schema of type object`);
  });
  const choice = config['toolChoice'];
  if (choice === undefined) return;
  if (!isRecord(choice)) throw new Error('toolConfig.toolChoice must be an object');
  const kind = member(choice, 'toolConfig.toolChoice');
  if ((kind === 'any' || kind === 'tool') && modelId.includes('meta.')) throw new Error(`This model doesn't support the toolConfig.toolChoice.${kind} field. Remove toolConfig.toolChoice.${kind} and try again.`);
  if (kind === 'tool' && !names.has(String((choice['tool'] as Json)['name']))) throw new Error('toolConfig.toolChoice.tool.name names no tool in toolConfig.tools');
  if (!['auto', 'any', 'tool'].includes(kind)) throw new Error(`toolConfig.toolChoice: ${kind} is not a tool choice`);
}

function checkInference(config: unknown): void {
  if (!isRecord(config)) throw new Error('inferenceConfig must be an object');
  for (const key of Object.keys(config)) if (!INFERENCE_KEYS.has(key)) throw new Error(`inferenceConfig.${key} is not an inference parameter; use additionalModelRequestFields`);
  const { maxTokens, temperature, topP, stopSequences } = config;
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)) throw new Error('inferenceConfig.maxTokens must be an integer of at least 1');
  for (const [name, value] of [['temperature', temperature], ['topP', topP]] as const) {
    if (value !== undefined && (typeof value !== 'number' || value < 0 || value > 1)) throw new Error(`inferenceConfig.${name} must be between 0 and 1`);
  }
  if (stopSequences !== undefined && (!Array.isArray(stopSequences) || stopSequences.some((sequence) => typeof sequence !== 'string' || sequence === ''))) throw new Error('inferenceConfig.stopSequences must be non-empty strings');
}

/** Why Bedrock would refuse this Converse body for `modelId`, or undefined when it takes it. */
export function converseRequestProblem(body: Json, modelId: string): string | undefined {
  try {
    for (const key of Object.keys(body)) if (!TOP_LEVEL.has(key)) throw new Error(`Malformed input request: extraneous key [${key}] is not permitted`);
    const messages = body['messages'];
    if (!Array.isArray(messages) || messages.length === 0) throw new Error('messages must hold at least one message');
    let usesTools = false;
    let called = new Set<string>();
    messages.forEach((message: unknown, index) => {
      if (!isRecord(message)) throw new Error(`messages.${index} must be an object`);
      const role = message['role'];
      if (role !== 'user' && role !== 'assistant') throw new Error(`messages.${index}.role must be user or assistant`);
      if (index === 0 && role !== 'user') throw new Error('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
      if (index > 0 && (messages[index - 1] as Json)['role'] === role) throw new Error('A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
      const content = message['content'];
      if (!Array.isArray(content) || content.length === 0) throw new Error(`messages.${index}.content must hold at least one content block`);
      const kinds = content.map((block: unknown, k) => checkBlock(block, role, `messages.${index}.content.${k}`, modelId));
      if (kinds.includes('document') && !kinds.includes('text')) throw new Error(`messages.${index}: a message with a document must also have a text block`);
      const calls = new Set<string>();
      content.forEach((block: unknown, k) => {
        const record = block as Json;
        if (kinds[k] === 'toolUse') calls.add(String((record['toolUse'] as Json)['toolUseId']));
        if (kinds[k] === 'toolResult' && !called.has(String((record['toolResult'] as Json)['toolUseId']))) {
          throw new Error(`messages.${index}.content.${k}: the toolResult's toolUseId answers no toolUse of the previous assistant message`);
        }
      });
      if (kinds.includes('toolUse') || kinds.includes('toolResult')) usesTools = true;
      called = role === 'assistant' ? calls : new Set();
    });
    if (usesTools && body['toolConfig'] === undefined) throw new Error('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
    if (body['system'] !== undefined) {
      const system = body['system'];
      if (!Array.isArray(system)) throw new Error('system must be a list of system content blocks');
      system.forEach((block: unknown, index) => {
        if (!isRecord(block) || member(block, `system.${index}`) !== 'text' || blank(block['text'])) throw new Error(`system.${index} must be a text block that is not blank`);
      });
    }
    if (body['toolConfig'] !== undefined) checkToolConfig(body['toolConfig'], modelId);
    if (body['inferenceConfig'] !== undefined) checkInference(body['inferenceConfig']);
    if (body['additionalModelRequestFields'] !== undefined && !isRecord(body['additionalModelRequestFields'])) throw new Error('additionalModelRequestFields must be an object');
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
