/**
 * Reading a validated Responses request for translation: the pieces both request translators
 * (responses-to-chat.ts, responses-to-messages.ts) share. Everything is read leniently, as the
 * other translators read: a field of the wrong shape is left out, never thrown.
 */
import { createHash } from 'node:crypto';
import type { ResponsesRequest } from '../formats/responses.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import { isLlmuxSeal } from '../formats/responses.ts';
import { asRecord, isRecord, records } from '../common/json.ts';
import type { Carried, CarryReader } from './carried.ts';

/** What a request translator needs besides the request. */
export interface ResponsesRequestContext {
  /** The model the request goes to. */
  model: UpstreamModel;
  /** Opens the reasoning items' llmux seals and sorts their state for the upstream (./carried.ts). */
  carry: CarryReader;
  /** Told about everything dropped or repaired: hosted tools, unknown fields. */
  warn: (message: string) => void;
}

export const PARAGRAPH = '\n\n';
/** Above this, `user` / `metadata.user_id` values are hashed (OpenAI allows 64 characters). */
const MAX_USER_CHARS = 64;
const DEFAULT_MAX_TOKENS = 4096;
const MAX_DEFAULT_MAX_TOKENS = 32000;

/** Top-level fields a translation reads, or drops on purpose without a warning (llmux's own, or no-ops). */
const HANDLED_FIELDS = new Set([
  'model', 'input', 'instructions', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_output_tokens', 'temperature', 'top_p',
  'reasoning', 'text', 'store', 'stream', 'stream_options', 'previous_response_id', 'include', 'metadata', 'user',
  'safety_identifier', 'prompt_cache_key', 'prompt_cache_retention', 'service_tier', 'truncation', 'background',
  // Codex sends it on every request: labels for OpenAI's own logs, nothing a model reads.
  'client_metadata',
]);

/** The request's input as items: a string input is one user message. */
export function inputItems(request: ResponsesRequest): Array<Record<string, unknown>> {
  if (typeof request.input === 'string') return [{ type: 'message', role: 'user', content: request.input }];
  return records(request.input);
}

/** An item's type; an item without one is a message when it has a role, else a reference. */
export function itemType(item: Record<string, unknown>): string {
  if (typeof item['type'] === 'string') return item['type'];
  return item['role'] !== undefined ? 'message' : 'item_reference';
}

/** The call id of an item that calls a tool or answers one (`local_shell_call_output` names it `id`). */
export function callIdOf(item: Record<string, unknown>): string {
  const id = item['type'] === 'local_shell_call_output' ? item['id'] : item['call_id'] ?? item['id'];
  return typeof id === 'string' ? id : '';
}

export function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The text of a content part that carries text (`input_text`, `output_text`, `refusal`), else undefined. */
export function partText(part: Record<string, unknown>): string | undefined {
  if (part['type'] === 'refusal') return text(part['refusal']);
  if (part['type'] === 'input_text' || part['type'] === 'output_text') return text(part['text']);
  return undefined;
}

/** The text of message content: a string, or the text parts joined with `joiner`. */
export function contentText(content: unknown, joiner: string): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of records(content)) {
    const partValue = partText(part);
    if (partValue !== undefined && partValue !== '') texts.push(partValue);
  }
  return texts.join(joiner);
}

/**
 * The state a reasoning item's `encrypted_content` seals, when it is llmux's and this key's; the
 * reader counts seals that do not open or are another key's (llmux.md section 11). Reasoning from
 * elsewhere (OpenAI's own) is not llmux's and gives undefined quietly, as responses.md says.
 */
export function openReasoning(item: Record<string, unknown>, context: ResponsesRequestContext): Carried | undefined {
  const sealed = item['encrypted_content'];
  if (typeof sealed !== 'string' || !isLlmuxSeal(sealed)) return undefined;
  return context.carry.unseal(sealed);
}

/** A reasoning item's summary text, its parts joined with a blank line. */
export function summaryText(item: Record<string, unknown>): string {
  return records(item['summary']).map((part) => text(part['text'])).filter((piece) => piece !== '').join(PARAGRAPH);
}

/**
 * The end-user id for the upstream: `user`, else `safety_identifier`, else `metadata.user_id`.
 * Longer than 64 characters, it is replaced by its SHA-256 (hex, 64 characters): stable, and it
 * fits every upstream's limit.
 */
export function endUserId(request: ResponsesRequest): string | undefined {
  const candidates = [request.user, request.safety_identifier, asRecord(request.metadata)?.['user_id']];
  const id = candidates.find((value): value is string => typeof value === 'string' && value !== '');
  if (id === undefined || id.length <= MAX_USER_CHARS) return id;
  return createHash('sha256').update(id).digest('hex');
}

/** Warns about each top-level field the translation does not understand and drops. */
export function warnUnknownFields(request: ResponsesRequest, target: string, warn: (message: string) => void): void {
  for (const key of Object.keys(request)) {
    if (!HANDLED_FIELDS.has(key)) warn(`${key}: not understood when translating to ${target}; dropped`);
  }
}

/** `max_output_tokens`, or the catalog's limit capped at 32000 (long answers outrun upstream timeouts), 4096 unknown. */
export function maxTokens(request: ResponsesRequest, model: UpstreamModel): { value: number; requested: boolean } {
  const requested = request.max_output_tokens;
  if (typeof requested === 'number' && Number.isInteger(requested) && requested > 0) return { value: requested, requested: true };
  return { value: model.maxOutputTokens > 0 ? Math.min(model.maxOutputTokens, MAX_DEFAULT_MAX_TOKENS) : DEFAULT_MAX_TOKENS, requested: false };
}

/** `reasoning.effort`, or undefined when absent. */
export function reasoningEffort(request: ResponsesRequest): string | undefined {
  const effort = asRecord(request.reasoning)?.['effort'];
  return typeof effort === 'string' ? effort : undefined;
}

/** `data:[media type][;base64],payload` -> media type and base64 payload; undefined for other URLs. */
export function parseDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  if (url.length < 5 || url.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return undefined;
  const meta = url.slice(5, comma).split(';');
  const mediaType = (meta[0] ?? '').trim().toLowerCase() || 'text/plain';
  const payload = url.slice(comma + 1);
  const isBase64 = meta.slice(1).some((param) => param.trim().toLowerCase() === 'base64');
  return { mediaType, base64: isBase64 ? payload : Buffer.from(decodeURIComponentSafe(payload), 'utf8').toString('base64') };
}

function decodeURIComponentSafe(payload: string): string {
  try {
    return decodeURIComponent(payload);
  } catch {
    return payload;
  }
}

/** A best-effort instruction for `text.format` where the upstream cannot enforce it (translation.md). */
export function formatInstruction(format: unknown): string {
  const record = asRecord(format);
  if (record?.['type'] === 'json_object') {
    return 'Respond with a single valid JSON object and nothing else: no prose and no code fences.';
  }
  if (record?.['type'] === 'json_schema') {
    const about = typeof record['description'] === 'string' && record['description'] !== '' ? ` (${record['description']})` : '';
    const schema = isRecord(record['schema']) ? `\n${JSON.stringify(record['schema'])}` : '';
    return `Respond with a single valid JSON value that conforms to the JSON schema "${text(record['name']) || 'response'}"${about}, and nothing else: no prose and no code fences.${schema}`;
  }
  return '';
}

/** A local shell action as the arguments of the `local_shell` function (what the model wrote). */
export function localShellArguments(action: unknown): string {
  const record = asRecord(action) ?? {};
  const args: Record<string, unknown> = {};
  for (const key of ['command', 'working_directory', 'timeout_ms', 'env', 'user']) {
    if (record[key] !== undefined && record[key] !== null) args[key] = record[key];
  }
  return JSON.stringify(args);
}

/** A tool's output as text: text parts joined, anything else named by a placeholder. */
export function toolOutputText(output: unknown): string {
  if (typeof output === 'string') return output;
  return records(output)
    .map((part) => partText(part) ?? (part['type'] === 'input_image' ? '[image omitted: tool results sent to this model carry text only]' : `[${text(part['type']) || 'part'} omitted]`))
    .filter((piece) => piece !== '')
    .join(PARAGRAPH);
}
