/**
 * The catalog as Gemini `Model` records (llmux.md section 9), what `GET /v1beta/models` and
 * `/v1beta/models/{model}` answer: `name` is `models/{id}` with the llmux id, the limits are the
 * catalog's, and every model offers the three methods llmux serves for it.
 *
 * Pages as Google pages the list: `pageSize` (50 when absent or 0, at most 1000), and a
 * `nextPageToken` to send back as `pageToken` while more are left. The token is llmux's own
 * (the offset, encoded): an unreadable one is a 400, as Google refuses one it did not issue.
 */
import type { ModelEntry } from '../config/types.ts';
import type { GeminiModel, GeminiModelList } from '../formats/gemini-types.ts';
import { invalidParameters, truncate } from '../common/errors.ts';

const METHODS: readonly string[] = ['generateContent', 'streamGenerateContent', 'countTokens'];
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;
const TOKEN_PREFIX = 'llmux:';

/** One catalog entry as a Gemini `Model`. */
export function toGeminiModel(model: ModelEntry): GeminiModel {
  return {
    name: `models/${model.id}`,
    baseModelId: model.id,
    version: model.created_at.slice(0, 10),
    displayName: model.display_name,
    description: `${model.display_name}, served by llmux (${model.owned_by})`,
    inputTokenLimit: model.context_length,
    outputTokenLimit: model.max_output_tokens,
    supportedGenerationMethods: [...METHODS],
    thinking: model.reasoning,
  };
}

function pageToken(offset: number): string {
  return Buffer.from(`${TOKEN_PREFIX}${offset}`).toString('base64url');
}

function offsetOf(token: string): number {
  const text = Buffer.from(token, 'base64url').toString('utf8');
  const offset = text.startsWith(TOKEN_PREFIX) ? Number(text.slice(TOKEN_PREFIX.length)) : Number.NaN;
  if (!Number.isSafeInteger(offset) || offset < 0) throw invalidParameters(`pageToken: "${truncate(token, 100)}" is not a page token llmux gave; send the nextPageToken of the previous page`);
  return offset;
}

/**
 * One page of `models` (the key's, in catalog order) for a list request's query (`pageSize`,
 * `pageToken`).
 * @throws GatewayError 400 for a page size that is not a whole number from 0, or a token llmux did not give.
 */
export function geminiModelPage(models: readonly ModelEntry[], query: URLSearchParams): GeminiModelList {
  const sizeText = query.get('pageSize') ?? query.get('page_size');
  const size = sizeText === null || sizeText === '' ? 0 : Number(sizeText);
  if (!Number.isSafeInteger(size) || size < 0) throw invalidParameters(`pageSize: "${truncate(sizeText ?? '', 20)}" must be a whole number from 0 (at most ${MAX_PAGE_SIZE} models are given a page)`);
  const perPage = size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
  const token = query.get('pageToken') ?? query.get('page_token');
  const start = token === null || token === '' ? 0 : offsetOf(token);
  const page: GeminiModelList = { models: models.slice(start, start + perPage).map(toGeminiModel) };
  if (start + perPage < models.length) page.nextPageToken = pageToken(start + perPage);
  return page;
}
