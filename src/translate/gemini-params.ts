/**
 * Reading a Gemini client's tools, tool config and generation config for a chat or messages
 * upstream (llmux.md section 9); ./gemini-history.ts reads its contents. Each writer
 * (./gemini-to-chat.ts, ./gemini-to-messages.ts) spells the result its way.
 *
 * Decisions where the spec is silent:
 * - Function declarations: `parametersJsonSchema` goes as it is; `parameters` (Google's subset)
 *   is turned into JSON Schema (src/formats/gemini-schema.ts); none means no parameters.
 * - Google's own tools (`googleSearch`, `googleSearchRetrieval`, `urlContext`, `codeExecution`,
 *   `fileSearch`, `googleMaps`, `computerUse`) run on Google's side only: a request with one is a
 *   400 naming it, never an answer that silently searched nothing (llmux.md section 11's rule for
 *   server tools). Tool kinds newer than this file are dropped with a warning.
 * - Function-calling modes: `AUTO` -> auto, `ANY` -> required (one allowed name: that tool),
 *   `NONE` -> none, `VALIDATED` -> auto (schema adherence is the upstream's). Allowed names that
 *   leave several tools callable are kept by offering only those tools: the model can call no
 *   other, as Google's mode says. Unknown modes are dropped with a warning.
 * - `thinkingConfig`: `thinkingBudget` 0 is "off", -1 "the model decides", a positive budget a
 *   budget; `thinkingLevel` a level. The writers turn these into their own settings.
 * - `responseMimeType: application/json` with `responseJsonSchema` (or `responseSchema`, as JSON
 *   Schema) is a JSON-schema answer format, without a schema a JSON-object one. Other MIME types
 *   (`text/x.enum`, whose answer is not JSON) are dropped with a warning.
 * - `candidateCount` above 1 is a 400: these upstreams give one answer per request (section 9).
 * - `safetySettings` and `cachedContent` are Google's: dropped with a warning (section 9), as are
 *   top-level and generation-config fields newer than this file.
 */
import type { GeminiRequest } from '../formats/gemini-types.ts';
import { geminiSchemaToJsonSchema } from '../formats/gemini-schema.ts';
import { invalidParameters, truncate } from '../common/errors.ts';
import { asRecord, records } from '../common/json.ts';
import type { UpstreamTool, UpstreamToolChoice } from './responses-tools.ts';
import { upstreamToolName } from './gemini-history.ts';
import type { UpstreamModel } from './messages-to-chat.ts';

/** Google-run tools, by their field, as a 400 names them. */
const GOOGLE_TOOLS: ReadonlyMap<string, string> = new Map([
  ['googleSearch', 'Google Search'],
  ['googleSearchRetrieval', 'Google Search retrieval'],
  ['urlContext', 'URL context'],
  ['codeExecution', 'code execution'],
  ['fileSearch', 'file search'],
  ['googleMaps', 'Google Maps'],
  ['computerUse', 'computer use'],
  ['enterpriseWebSearch', 'enterprise web search'],
  ['retrieval', 'retrieval'],
]);

/** Top-level fields the writers read; `safetySettings` and `cachedContent` are warned about by name. */
const READ_FIELDS: ReadonlySet<string> = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig']);

const LEVELS: ReadonlyMap<string, Level> = new Map([
  ['MINIMAL', 'minimal'],
  ['LOW', 'low'],
  ['MEDIUM', 'medium'],
  ['HIGH', 'high'],
]);

export type Level = 'minimal' | 'low' | 'medium' | 'high';

/** What the client asked of thinking, in neither upstream's words. */
export type GeminiThinking = { kind: 'off' } | { kind: 'dynamic' } | { kind: 'budget'; tokens: number } | { kind: 'level'; level: Level };

/** The answer format asked for: JSON, with a JSON Schema or without. */
export type GeminiJsonFormat = { type: 'json_object' } | { type: 'json_schema'; schema: Record<string, unknown> };

/** The request's function tools and tool choice for a function-only upstream. */
export interface GeminiFunctionTools {
  tools: UpstreamTool[];
  choice: UpstreamToolChoice | undefined;
}

/**
 * The request's generation config, after the checks every writer shares: `candidateCount` above 1
 * refused, and the top-level and generation-config fields the writer does not read named in
 * warnings. `reads` lists the generation-config fields the writer reads.
 */
export function geminiGenerationConfig(
  request: GeminiRequest,
  model: UpstreamModel,
  target: string,
  reads: ReadonlySet<string>,
  warn: (message: string) => void,
): Record<string, unknown> {
  const config = asRecord(request.generationConfig) ?? {};
  const candidates = config['candidateCount'];
  if (typeof candidates === 'number' && candidates > 1) {
    throw invalidParameters(`generationConfig.candidateCount: must be 1 for model "${model.upstreamId}", whose upstream gives one answer per request; send ${candidates} requests instead`);
  }
  for (const key of Object.keys(request)) {
    if (!READ_FIELDS.has(key)) warn(`${truncate(key, 100)}: dropped, ${target} has no equivalent`);
  }
  for (const key of Object.keys(config)) {
    if (reads.has(key) || key === 'candidateCount') continue;
    // A text-only answer is what every upstream gives.
    if (key === 'responseModalities' && isTextOnly(config[key])) continue;
    warn(`generationConfig.${truncate(key, 100)}: dropped, ${target} has no equivalent`);
  }
  return config;
}

function isTextOnly(modalities: unknown): boolean {
  return Array.isArray(modalities) && modalities.every((modality) => modality === 'TEXT');
}

/**
 * The request's function declarations as tools a chat or messages upstream takes, and its
 * function-calling config as a tool choice (see the file header).
 * @throws GatewayError 400 for a Google-run tool (`googleSearch`, `codeExecution`, …).
 */
export function geminiFunctionTools(request: GeminiRequest, target: string, warn: (message: string) => void): GeminiFunctionTools {
  let tools: UpstreamTool[] = [];
  records(request.tools).forEach((tool, index) => {
    for (const key of Object.keys(tool)) {
      if (key === 'functionDeclarations') continue;
      const label = GOOGLE_TOOLS.get(key);
      if (label !== undefined) {
        throw invalidParameters(`tools.${index}.${key}: ${label} runs only on Google's side, and ${target} cannot run it; remove the tool or use a model served by Gemini`);
      }
      warn(`tools.${index}.${truncate(key, 100)}: dropped, ${target} cannot run this kind of tool`);
    }
    for (const declaration of records(tool['functionDeclarations'])) tools.push(upstreamTool(declaration));
  });
  if (tools.length === 0) return { tools, choice: undefined };

  const calling = asRecord(asRecord(request.toolConfig)?.['functionCallingConfig']) ?? {};
  const mode = calling['mode'];
  const allowed = Array.isArray(calling['allowedFunctionNames'])
    ? calling['allowedFunctionNames'].filter((name): name is string => typeof name === 'string').map(upstreamToolName)
    : [];
  const offered = new Set(tools.map((tool) => tool.name));
  const named = allowed.filter((name) => offered.has(name));
  if (named.length < allowed.length) warn('toolConfig.functionCallingConfig.allowedFunctionNames: names that no function declaration has are ignored');
  let choice: UpstreamToolChoice | undefined;
  switch (mode) {
    case 'AUTO':
      choice = { mode: 'auto' };
      break;
    case 'ANY':
      choice = named.length === 1 ? { mode: 'tool', name: named[0] as string } : { mode: 'required' };
      break;
    case 'VALIDATED':
      choice = { mode: 'auto' };
      break;
    case 'NONE':
      return { tools, choice: { mode: 'none' } };
    case undefined:
    case 'MODE_UNSPECIFIED':
      return { tools, choice: undefined };
    default:
      warn(`toolConfig.functionCallingConfig.mode "${truncate(String(mode), 100)}": dropped, this model's upstream has no equivalent`);
      return { tools, choice: undefined };
  }
  if (named.length > 1 || (named.length === 1 && choice.mode !== 'tool')) {
    const keep = new Set(named);
    tools = tools.filter((tool) => keep.has(tool.name));
  }
  return { tools, choice };
}

function upstreamTool(declaration: Record<string, unknown>): UpstreamTool {
  const jsonSchema = asRecord(declaration['parametersJsonSchema']);
  const parameters = jsonSchema ?? (declaration['parameters'] === undefined ? {} : geminiSchemaToJsonSchema(declaration['parameters']));
  const tool: UpstreamTool = {
    name: upstreamToolName(typeof declaration['name'] === 'string' ? declaration['name'] : ''),
    parameters: { type: 'object', properties: {}, ...parameters },
  };
  if (typeof declaration['description'] === 'string' && declaration['description'] !== '') tool.description = declaration['description'];
  return tool;
}

/** `generationConfig.thinkingConfig` in neither upstream's words; undefined when it asks nothing. */
export function geminiThinking(config: Record<string, unknown>, warn: (message: string) => void): GeminiThinking | undefined {
  const thinking = asRecord(config['thinkingConfig']);
  if (thinking === undefined) return undefined;
  const level = thinking['thinkingLevel'];
  if (typeof level === 'string' && level !== 'THINKING_LEVEL_UNSPECIFIED') {
    const known = LEVELS.get(level.toUpperCase());
    if (known !== undefined) return { kind: 'level', level: known };
    warn(`generationConfig.thinkingConfig.thinkingLevel "${truncate(level, 100)}": dropped, this model's upstream has no equivalent`);
    return undefined;
  }
  const budget = thinking['thinkingBudget'];
  if (typeof budget !== 'number') return undefined;
  if (budget === 0) return { kind: 'off' };
  if (budget < 0) return { kind: 'dynamic' };
  return { kind: 'budget', tokens: budget };
}

/** `responseMimeType` and its schema as an answer format; undefined for plain text. */
export function geminiJsonFormat(config: Record<string, unknown>, warn: (message: string) => void): GeminiJsonFormat | undefined {
  const mimeType = config['responseMimeType'];
  if (mimeType === undefined || mimeType === 'text/plain') return undefined;
  if (mimeType !== 'application/json') {
    warn(`generationConfig.responseMimeType "${truncate(String(mimeType), 100)}": dropped, this model's upstream answers in text or JSON only`);
    return undefined;
  }
  const jsonSchema = asRecord(config['responseJsonSchema']);
  if (jsonSchema !== undefined) return { type: 'json_schema', schema: jsonSchema };
  if (config['responseSchema'] !== undefined) return { type: 'json_schema', schema: geminiSchemaToJsonSchema(config['responseSchema']) };
  return { type: 'json_object' };
}

/** `stopSequences` that are strings with something in them. */
export function geminiStopSequences(config: Record<string, unknown>): string[] {
  const stop = config['stopSequences'];
  return Array.isArray(stop) ? stop.filter((sequence): sequence is string => typeof sequence === 'string' && sequence !== '') : [];
}

/** A number field of the config, or undefined. */
export function numberField(config: Record<string, unknown>, key: string): number | undefined {
  const value = config[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
