/**
 * Google's error body (llmux.md section 9): `{"error": {"code": <HTTP status>, "message", "status"}}`
 * with the status names of google.rpc.Code as Google's HTTP mapping gives them, and on a 429 a
 * RetryInfo detail saying how long to wait. The `@google/genai` SDK keys its errors on the HTTP
 * status; Gemini CLI also reads `status` and RetryInfo's `retryDelay` to pace its retries.
 */
import type { GeminiErrorBody, GeminiRetryInfo, GeminiStatus } from './gemini-types.ts';

const STATUS_BY_HTTP: ReadonlyMap<number, GeminiStatus> = new Map([
  [400, 'INVALID_ARGUMENT'],
  [401, 'UNAUTHENTICATED'],
  [403, 'PERMISSION_DENIED'],
  [404, 'NOT_FOUND'],
  [409, 'ABORTED'],
  [412, 'FAILED_PRECONDITION'],
  [429, 'RESOURCE_EXHAUSTED'],
  [499, 'CANCELLED'],
  [500, 'INTERNAL'],
  [501, 'UNIMPLEMENTED'],
  [502, 'UNAVAILABLE'],
  [503, 'UNAVAILABLE'],
  [504, 'DEADLINE_EXCEEDED'],
  // Anthropic's "overloaded", when a messages upstream's error is relayed.
  [529, 'UNAVAILABLE'],
]);

/** The HTTP status Google would answer an error of each of our types with (an in-stream error has none of its own). */
const HTTP_BY_TYPE: ReadonlyMap<string, number> = new Map([
  ['invalid_request_error', 400],
  ['authentication_error', 401],
  ['permission_error', 403],
  ['not_found_error', 404],
  ['rate_limit_error', 429],
  ['overloaded_error', 503],
]);

/** The HTTP status of an error of `type` (one of our error types), 500 for any other. */
export function geminiHttpStatusOf(type: string | undefined): number {
  return (type === undefined ? undefined : HTTP_BY_TYPE.get(type)) ?? 500;
}

/** The `@type` of Google's RetryInfo detail. */
export const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

/** Google's status name for an HTTP status; other 4xx are `INVALID_ARGUMENT` (a 413 among them), other 5xx `INTERNAL`. */
export function geminiStatus(httpStatus: number): GeminiStatus {
  return STATUS_BY_HTTP.get(httpStatus) ?? (httpStatus >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}

/**
 * The error body for `httpStatus`. With `retryAfterSeconds` (a 429's wait) it carries a RetryInfo
 * detail, `retryDelay` in Google's duration form (`"7s"`, whole seconds rounded up).
 */
export function geminiErrorBody(httpStatus: number, message: string, retryAfterSeconds?: number): GeminiErrorBody {
  const body: GeminiErrorBody = { error: { code: httpStatus, message, status: geminiStatus(httpStatus) } };
  if (retryAfterSeconds !== undefined && Number.isFinite(retryAfterSeconds) && retryAfterSeconds >= 0) {
    const retry: GeminiRetryInfo = { '@type': RETRY_INFO_TYPE, retryDelay: `${Math.ceil(retryAfterSeconds)}s` };
    body.error.details = [retry];
  }
  return body;
}

/**
 * The wait a Google error body asks for, in seconds: RetryInfo's `retryDelay` (`"34.4s"`), or
 * undefined when it names none. Read from an upstream's 429 so llmux's retries honour it.
 */
export function geminiRetryDelaySeconds(body: unknown): number | undefined {
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  const details = typeof error === 'object' && error !== null ? (error as { details?: unknown }).details : undefined;
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    if (typeof detail !== 'object' || detail === null) continue;
    const record = detail as Record<string, unknown>;
    const delay = record['retryDelay'];
    if (record['@type'] !== RETRY_INFO_TYPE || typeof delay !== 'string' || !delay.endsWith('s')) continue;
    const seconds = Number(delay.slice(0, -1));
    if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  }
  return undefined;
}
