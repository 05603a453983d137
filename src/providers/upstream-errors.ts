/**
 * An upstream's error answer as llmux's error (llmux.md section 3): its status kept for 4xx (429
 * becomes our rate_limit_exceeded), 5xx as 502 upstream_error, the upstream's message quoted, with
 * every configured credential taken out of what it said (./redact.ts).
 */
import type { ProviderConfig } from '../config-types.ts';
import { GatewayError, UpstreamError } from '../errors.ts';
import type { ErrorType } from '../errors.ts';
import { readUpstreamBody } from './upstream.ts';
import type { UpstreamResponse } from './upstream.ts';
import type { Redact } from './redact.ts';

/** Largest upstream error body read for its message. */
const MAX_ERROR_BODY_BYTES = 1024 * 1024;

/** The upstream's own words for its error: `error.message` (OpenAI, Anthropic), or a bare `message`. */
function readError(text: string): { message: string; type: string | undefined; code: string | undefined } {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown; code?: unknown } | string; message?: unknown };
    const e = parsed.error;
    if (typeof e === 'object' && e !== null) {
      return {
        message: typeof e.message === 'string' ? e.message : '',
        type: typeof e.type === 'string' ? e.type : undefined,
        code: typeof e.code === 'string' ? e.code : undefined,
      };
    }
    if (typeof e === 'string') return { message: e, type: undefined, code: undefined };
    return { message: typeof parsed.message === 'string' ? parsed.message : '', type: undefined, code: undefined };
  } catch {
    return { message: text.slice(0, 500), type: undefined, code: undefined };
  }
}

export async function upstreamErrorOf(response: UpstreamResponse, provider: ProviderConfig, idleTimeoutMs: number, redact: Redact): Promise<GatewayError> {
  const status = response.statusCode ?? 502;
  let said = { message: '', type: undefined as string | undefined, code: undefined as string | undefined };
  try {
    said = readError(redact((await readUpstreamBody(response, MAX_ERROR_BODY_BYTES, idleTimeoutMs)).toString('utf8')));
  } catch {
    // The body could not be read: the status alone says what happened.
  }
  const message = said.message === '' ? `HTTP ${status}` : said.message.slice(0, 2000);
  const headers: Record<string, string> = {};
  const retryAfter = response.headers['retry-after'];
  if (typeof retryAfter === 'string' && /^\d+$/.test(retryAfter)) headers['retry-after'] = retryAfter;
  if (status === 429) {
    return new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', `Provider "${provider.id}" is rate limiting llmux: ${message}`, { headers });
  }
  if (status >= 500) {
    return new UpstreamError(502, 'upstream_error', `Provider "${provider.id}" failed with HTTP ${status}: ${message}`, true);
  }
  const auth = status === 401 || status === 403;
  const type: ErrorType = auth ? 'permission_error' : status === 404 ? 'not_found_error' : 'invalid_request_error';
  const code = auth ? 'upstream_auth_error' : (said.code ?? said.type ?? 'upstream_error');
  const prefix = auth
    ? `Provider "${provider.id}" refused llmux's credential for it (check its api_key in the llmux config): `
    : `Provider "${provider.id}" refused the request: `;
  return new GatewayError(status, type, code, prefix + message);
}
