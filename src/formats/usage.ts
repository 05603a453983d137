/**
 * Usage accounting across the formats (translation.md "Usage"). Everything goes through the
 * neutral `TokenUsage`, where `inputTokens` never includes cached tokens, so nothing is
 * subtracted twice.
 */
import type { ChatUsage, MessagesUsage, TokenUsage } from './wire.ts';
import { isRecord } from '../common/json.ts';

export const ZERO_USAGE: Readonly<TokenUsage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
});

/**
 * The largest token figure taken from an upstream: far above any model's context and output
 * (10 million tokens is the longest context advertised today), and small enough that sums of
 * many stay exact. An upstream reporting `1e308` would otherwise lock its key out of tokens/min
 * for good (the window's sums turn to Infinity) and poison `/metrics`.
 */
export const MAX_REPORTED_TOKENS = 100_000_000;

/** A token figure from an upstream: a whole number from 0 to {@link MAX_REPORTED_TOKENS}; anything else is 0. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(MAX_REPORTED_TOKENS, Math.floor(value)) : 0;
}

/** Reads a messages-format `usage` object (any subset of its fields). */
export function fromMessagesUsage(usage: Partial<MessagesUsage> | null | undefined): TokenUsage {
  if (usage === null || usage === undefined) return { ...ZERO_USAGE };
  return {
    inputTokens: count(usage.input_tokens),
    outputTokens: count(usage.output_tokens),
    cacheReadTokens: count(usage.cache_read_input_tokens),
    cacheCreationTokens: count(usage.cache_creation_input_tokens),
  };
}

/**
 * Reads a chat-format `usage` object. `prompt_tokens` includes cached tokens in OpenAI's and
 * DeepSeek's accounting, so the cached part is taken out of `inputTokens` exactly once.
 */
export function fromChatUsage(usage: Partial<ChatUsage> | null | undefined): TokenUsage {
  if (usage === null || usage === undefined) return { ...ZERO_USAGE };
  const prompt = count(usage.prompt_tokens);
  const cached = Math.min(prompt, count(usage.prompt_tokens_details?.cached_tokens) || count(usage.prompt_cache_hit_tokens));
  const creation = count((usage as Record<string, unknown>)['cache_creation_input_tokens']);
  // xAI leaves reasoning tokens out of completion_tokens but counts them in total_tokens.
  const completion = Math.max(count(usage.completion_tokens), count(usage.total_tokens) - prompt);
  return {
    inputTokens: Math.max(0, prompt - cached - creation),
    outputTokens: completion,
    cacheReadTokens: cached,
    cacheCreationTokens: creation,
  };
}

/**
 * The usage object of a chat-completions chunk or whole answer: `usage`, or where Groq nests it,
 * `x_groq.usage` (older Groq versions sent it only there). Undefined when there is none.
 */
export function chatUsageObject(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const usage = body['usage'];
  if (isRecord(usage)) return usage;
  const xGroq = body['x_groq'];
  return isRecord(xGroq) && isRecord(xGroq['usage']) ? xGroq['usage'] : undefined;
}

/** Neutral usage -> messages-format `usage`. */
export function toMessagesUsage(usage: TokenUsage): MessagesUsage {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: usage.cacheCreationTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
  };
}

/** Every input token, cached ones too: chat's `prompt_tokens`, and what the log and metrics count as in. */
export function promptTokens(usage: TokenUsage): number {
  return usage.inputTokens + usage.cacheReadTokens + usage.cacheCreationTokens;
}

/**
 * Reads a Responses-format `usage` object: `input_tokens` counts the cached ones and those written
 * to the cache (`input_tokens_details.cached_tokens`, `.cache_write_tokens`), which are taken out of
 * `inputTokens` once each; llmux writes the same (src/translate/responses-output.ts).
 */
export function fromResponsesUsage(usage: Record<string, unknown> | null | undefined): TokenUsage {
  if (usage === null || usage === undefined) return { ...ZERO_USAGE };
  const input = count(usage['input_tokens']);
  const details = usage['input_tokens_details'];
  const detail = (key: string): number => (typeof details === 'object' && details !== null ? count((details as Record<string, unknown>)[key]) : 0);
  const cached = Math.min(input, detail('cached_tokens'));
  const written = Math.min(input - cached, detail('cache_write_tokens'));
  return { inputTokens: input - cached - written, outputTokens: count(usage['output_tokens']), cacheReadTokens: cached, cacheCreationTokens: written };
}

/**
 * Reads a Converse `usage` object (Bedrock's `TokenUsage`). `inputTokens` is the input neither read
 * from nor written to the prompt cache (AWS's prompt-caching guide: the whole input is `inputTokens`
 * + `cacheReadInputTokens` + `cacheWriteInputTokens`), the neutral `inputTokens` as it is: nothing is
 * subtracted. `totalTokens` is not read.
 */
export function fromConverseUsage(usage: Record<string, unknown> | null | undefined): TokenUsage {
  if (usage === null || usage === undefined) return { ...ZERO_USAGE };
  return {
    inputTokens: count(usage['inputTokens']),
    outputTokens: count(usage['outputTokens']),
    cacheReadTokens: count(usage['cacheReadInputTokens']),
    cacheCreationTokens: count(usage['cacheWriteInputTokens']),
  };
}

/** Neutral usage -> chat-format `usage`: prompt tokens count every input token, cached ones too. */
export function toChatUsage(usage: TokenUsage): ChatUsage {
  const prompt = promptTokens(usage);
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
  };
}

/** The most a request could have used: its model's context length in, its output cap out. */
export interface UsageBound {
  inputTokens: number;
  outputTokens: number;
}

/**
 * Usage an upstream reported, held to what the request could have used (llmux.md section 7): every
 * input token, cached ones too, to `bound.inputTokens` (cache reads kept first, then cache writes,
 * then the rest), output to `bound.outputTokens`. A buggy or lying upstream cannot exhaust a key's
 * tokens/min or budget. `clamped` says what was cut, for a warning; undefined when nothing was.
 */
export function boundUsage(usage: TokenUsage, bound: UsageBound): { usage: TokenUsage; clamped: string | undefined } {
  const input = Math.max(0, Math.floor(bound.inputTokens));
  const output = Math.max(0, Math.floor(bound.outputTokens));
  if (promptTokens(usage) <= input && usage.outputTokens <= output) return { usage, clamped: undefined };
  const cacheReadTokens = Math.min(usage.cacheReadTokens, input);
  const cacheCreationTokens = Math.min(usage.cacheCreationTokens, input - cacheReadTokens);
  const bounded: TokenUsage = {
    inputTokens: Math.min(usage.inputTokens, input - cacheReadTokens - cacheCreationTokens),
    outputTokens: Math.min(usage.outputTokens, output),
    cacheReadTokens,
    cacheCreationTokens,
  };
  const said = `${promptTokens(usage)} in, ${usage.outputTokens} out`;
  return { usage: bounded, clamped: `usage: the provider reported ${said}, beyond what the request could have used (${input} in, ${output} out); counted as ${promptTokens(bounded)} in, ${bounded.outputTokens} out` };
}

/** Total tokens a request consumed, as counted against tokens/min. */
export function totalTokens(usage: TokenUsage): number {
  return promptTokens(usage) + usage.outputTokens;
}

function latestNonZero(latest: number, earlier: number): number {
  return latest > 0 ? latest : earlier;
}

/**
 * Folds one messages-stream usage report into what is known so far. `message_start` carries the
 * input counts and a placeholder output count; `message_delta` carries the cumulative output count
 * (even 0), and newer API versions repeat the input and cache counts there too.
 */
export function foldMessagesUsage(known: TokenUsage | undefined, raw: Record<string, unknown>, event: 'start' | 'delta'): TokenUsage {
  const next = fromMessagesUsage(raw);
  const prior = known ?? ZERO_USAGE;
  return {
    inputTokens: latestNonZero(next.inputTokens, prior.inputTokens),
    outputTokens: event === 'delta' && typeof raw['output_tokens'] === 'number' ? next.outputTokens : latestNonZero(next.outputTokens, prior.outputTokens),
    cacheReadTokens: latestNonZero(next.cacheReadTokens, prior.cacheReadTokens),
    cacheCreationTokens: latestNonZero(next.cacheCreationTokens, prior.cacheCreationTokens),
  };
}

/**
 * Reads a Gemini `usageMetadata` object. `promptTokenCount` includes `cachedContentTokenCount`
 * (taken out of `inputTokens` once), the tool-use prompt (`toolUsePromptTokenCount`, Google's own
 * tools) is input too, and output is `candidatesTokenCount` plus `thoughtsTokenCount`: Gemini
 * counts thinking apart from the answer, the other formats inside it.
 */
export function fromGeminiUsage(usage: Record<string, unknown> | null | undefined): TokenUsage {
  if (usage === null || usage === undefined) return { ...ZERO_USAGE };
  const prompt = count(usage['promptTokenCount']) + count(usage['toolUsePromptTokenCount']);
  const cached = Math.min(prompt, count(usage['cachedContentTokenCount']));
  return {
    inputTokens: prompt - cached,
    outputTokens: count(usage['candidatesTokenCount']) + count(usage['thoughtsTokenCount']),
    cacheReadTokens: cached,
    cacheCreationTokens: 0,
  };
}

/** The thinking tokens of a Gemini `usageMetadata` object (`thoughtsTokenCount`), 0 when it reports none. */
export function geminiThoughtsTokens(usage: Record<string, unknown>): number {
  return count(usage['thoughtsTokenCount']);
}

/**
 * Neutral usage -> Gemini `usageMetadata`: every input token in `promptTokenCount` (cache reads
 * also as `cachedContentTokenCount`), the answer in `candidatesTokenCount` and thinking in
 * `thoughtsTokenCount` when the upstream reported its reasoning tokens apart (`reasoningTokens`,
 * part of `outputTokens`); otherwise all output is candidates.
 */
export function toGeminiUsage(usage: TokenUsage, reasoningTokens: number): Record<string, number> {
  const prompt = promptTokens(usage);
  const thoughts = Math.min(usage.outputTokens, Math.max(0, reasoningTokens));
  const out: Record<string, number> = { promptTokenCount: prompt, candidatesTokenCount: usage.outputTokens - thoughts };
  if (thoughts > 0) out['thoughtsTokenCount'] = thoughts;
  if (usage.cacheReadTokens > 0) out['cachedContentTokenCount'] = usage.cacheReadTokens;
  out['totalTokenCount'] = prompt + usage.outputTokens;
  return out;
}
