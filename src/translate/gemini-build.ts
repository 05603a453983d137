/**
 * Building a Gemini request from another format's (llmux.md section 9): what ./chat-to-gemini.ts,
 * ./messages-to-gemini.ts and ./responses-to-gemini.ts share. The body has no `model` and no
 * streaming flag: a Gemini upstream takes both in the URL (`models/{id}:streamGenerateContent`).
 *
 * Decisions where the spec is silent (Google's API reference decides, and these notes record how):
 * - Contents: roles `user` and `model`; consecutive contents of one role merged; empty ones left
 *   out; a conversation that would open with the model gets a minimal user turn `"."` first.
 * - Tool results are `functionResponse` parts in a user turn, named after the call they answer
 *   (Gemini wants the name) and keeping its id. The result is an object, as Google documents:
 *   `{"output": text}`, or `{"error": text}` for a failed call. Images of a result follow it as
 *   `inlineData` parts of the same turn (every Gemini model takes those; only Gemini 3 takes media
 *   inside the response).
 * - Gemini 3 refuses a function call of the current turn (since the last user content that answers
 *   no call: Google's "standard user message") without the `thoughtSignature` its own answer
 *   carried. The translators put back Google's own where the conversation carried them
 *   (./carry-gemini.ts, llmux.md section 11); the first call of each model turn there that still
 *   has none carries Google's documented placeholder `skip_thought_signature_validator`.
 * - Images: a data URL as `inlineData`, an http(s) URL as `fileData` (Google fetches public URLs)
 *   with the MIME type its extension names, `image/jpeg` when it names none.
 * - Thinking: a budget (`thinkingBudget`), which every thinking Gemini model takes (Gemini 3 for
 *   compatibility, beside its levels), by Google's own OpenAI-compatible table: minimal 512, low
 *   1024, medium 8192, high 24576 (xhigh and max too: the most every model allows); `none` is
 *   budget 0, which the models that cannot stop thinking refuse, as on Google's own surface.
 *   Thoughts are asked back (`includeThoughts`) whenever thinking is on. Thinking counts inside
 *   `maxOutputTokens`, so with a client's cap the budget keeps the answer its share: half the cap,
 *   at most 4096 tokens of it; a budget that leaves under 128 (the least a Gemini Pro takes) is
 *   dropped with a warning.
 * - Stop sequences: Gemini takes 5; more are cut with a warning.
 */
import type { GeminiContent, GeminiGenerationConfig, GeminiPart, GeminiRequest, GeminiThinkingConfig, GeminiToolConfig } from '../formats/gemini-types.ts';
import type { UpstreamToolChoice } from './responses-tools.ts';
import { parseDataUrl } from './responses-input.ts';

import { SKIP_THOUGHT_SIGNATURE } from './carried.ts';

export { SKIP_THOUGHT_SIGNATURE } from './carried.ts';

const FIRST_TURN_FILLER = '.';
const MAX_STOP_SEQUENCES = 5;
const MIN_THINKING_BUDGET = 128;
const ANSWER_SHARE_TOKENS = 4096;
const HTTP_URL = /^https?:\/\//i;
const EXTENSION_TYPES: ReadonlyMap<string, string> = new Map([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['gif', 'image/gif'],
  ['webp', 'image/webp'],
  ['heic', 'image/heic'],
  ['heif', 'image/heif'],
  ['pdf', 'application/pdf'],
]);
/** Reasoning efforts as thinking budgets (Google's OpenAI-compatible mapping; see the header). */
const EFFORT_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['none', 0],
  ['minimal', 512],
  ['low', 1024],
  ['medium', 8192],
  ['high', 24576],
  ['xhigh', 24576],
  ['max', 24576],
]);

/** Contents under construction: parts added to the last content when it has the role, else to a new one. */
export interface ContentsBuilder {
  add(role: 'user' | 'model', parts: GeminiPart[]): void;
  /** The finished contents (see the header), `onPlaceholder` told of each placeholder signature; the builder is not used after. */
  finish(onPlaceholder?: () => void): GeminiContent[];
}

export function createContentsBuilder(): ContentsBuilder {
  const contents: Array<{ role: 'user' | 'model'; parts: GeminiPart[] }> = [];
  return {
    add(role, parts) {
      if (parts.length === 0) return;
      const last = contents[contents.length - 1];
      if (last !== undefined && last.role === role) last.parts.push(...parts);
      else contents.push({ role, parts: [...parts] });
    },
    finish(onPlaceholder) {
      if (contents[0]?.role === 'model') contents.unshift({ role: 'user', parts: [{ text: FIRST_TURN_FILLER }] });
      signCurrentTurn(contents, onPlaceholder);
      return contents;
    },
  };
}

/** The placeholder signature on the first unsigned call of each model turn since the last user content that answers no call; true when one was put. */
export function signCurrentTurn(contents: GeminiContent[], onPlaceholder?: () => void): boolean {
  let signed = false;
  let start = 0;
  for (let i = contents.length - 1; i >= 0; i--) {
    const content = contents[i] as GeminiContent;
    // A "standard" user content, in Google's words: one that answers no call.
    if (content.role === 'user' && content.parts.every((part) => part.functionResponse === undefined)) {
      start = i + 1;
      break;
    }
  }
  for (let i = start; i < contents.length; i++) {
    const content = contents[i] as GeminiContent;
    if (content.role !== 'model') continue;
    const first = content.parts.find((part) => part.functionCall !== undefined);
    if (first !== undefined && first.thoughtSignature === undefined) {
      first.thoughtSignature = SKIP_THOUGHT_SIGNATURE;
      onPlaceholder?.();
      signed = true;
    }
  }
  return signed;
}

/** A function call part; `args` must be an object, and an id is kept when there is one. */
export function functionCallPart(id: string, name: string, args: Record<string, unknown>): GeminiPart {
  return { functionCall: id === '' ? { name, args } : { id, name, args } };
}

/** A tool result as a function response part: `{"output": text}`, or `{"error": text}` for a failure. */
export function functionResponsePart(id: string, name: string, text: string, isError: boolean): GeminiPart {
  const response = isError ? { error: text } : { output: text };
  return { functionResponse: id === '' ? { name, response } : { id, name, response } };
}

/** An image (or PDF) by URL: a data URL inline, an http(s) URL as a file Google fetches, else a placeholder. */
export function mediaPartFromUrl(url: string): GeminiPart {
  const data = parseDataUrl(url);
  if (data !== undefined) return { inlineData: { mimeType: data.mediaType, data: data.base64 } };
  if (HTTP_URL.test(url)) return { fileData: { mimeType: mimeTypeOfUrl(url), fileUri: url } };
  return { text: '[image omitted: only http(s) and data URLs can be sent to this model]' };
}

function mimeTypeOfUrl(url: string): string {
  const path = url.split(/[?#]/, 1)[0] ?? '';
  const dot = path.lastIndexOf('.');
  return (dot > path.lastIndexOf('/') ? EXTENSION_TYPES.get(path.slice(dot + 1).toLowerCase()) : undefined) ?? 'image/jpeg';
}

/** A tool choice as Gemini's function-calling config. */
export function geminiToolConfig(choice: UpstreamToolChoice): GeminiToolConfig {
  switch (choice.mode) {
    case 'auto':
      return { functionCallingConfig: { mode: 'AUTO' } };
    case 'required':
      return { functionCallingConfig: { mode: 'ANY' } };
    case 'none':
      return { functionCallingConfig: { mode: 'NONE' } };
    case 'tool':
      return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } };
  }
}

/** A reasoning effort (chat's, Responses') as a thinking budget; undefined for an effort this file does not know. */
export function effortBudget(effort: string | undefined): number | undefined {
  return effort === undefined ? undefined : EFFORT_BUDGETS.get(effort);
}

/**
 * The thinking config for a budget (0 = off), fitted inside the client's output cap when there is
 * one; undefined, with a warning, when the cap leaves no room for thinking.
 */
export function thinkingConfig(budget: number, maxOutputTokens: number | undefined, field: string, warn: (message: string) => void): GeminiThinkingConfig | undefined {
  if (budget === 0) return { thinkingBudget: 0 };
  let fitted = budget;
  if (maxOutputTokens !== undefined) fitted = Math.min(budget, maxOutputTokens - Math.min(ANSWER_SHARE_TOKENS, Math.floor(maxOutputTokens / 2)));
  if (fitted < MIN_THINKING_BUDGET) {
    warn(`${field}: dropped, an output cap of ${maxOutputTokens ?? 0} tokens leaves no room for thinking`);
    return undefined;
  }
  return { thinkingBudget: fitted, includeThoughts: true };
}

/** Stop sequences Gemini takes: non-empty strings, at most 5 (the rest cut with a warning). */
export function stopSequences(sequences: unknown[], field: string, warn: (message: string) => void): string[] {
  const kept = sequences.filter((sequence): sequence is string => typeof sequence === 'string' && sequence !== '');
  if (kept.length <= MAX_STOP_SEQUENCES) return kept;
  warn(`${field}: only the first ${MAX_STOP_SEQUENCES} are sent, the most a Gemini upstream takes`);
  return kept.slice(0, MAX_STOP_SEQUENCES);
}

/** The request with its generation config set when anything is in it. */
export function withGenerationConfig(request: GeminiRequest, config: GeminiGenerationConfig): GeminiRequest {
  if (Object.keys(config).length > 0) request.generationConfig = config;
  return request;
}
