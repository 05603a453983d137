/**
 * An upstream's error answer as llmux's error (llmux.md section 3): its status kept for 4xx (429
 * becomes our rate_limit_exceeded), 5xx as 502 upstream_error, the upstream's message quoted, with
 * every configured credential taken out of what it said (./redact.ts).
 * Not the client's fault, so never in the client's words: an upstream 401 or 403 (llmux's own
 * credential refused) is 502 upstream_auth_failed naming the setting that holds the credential,
 * never the credential nor the upstream's message (OpenAI's quotes part of the key); an upstream
 * 529 or `overloaded_error` is our 529 overloaded_error. A `retry-after` passed on is at most the
 * 60 s window.
 */
import type { ProviderConfig } from '../config/types.ts';
import { GatewayError, UpstreamError } from '../common/errors.ts';
import type { ErrorType } from '../common/errors.ts';
import { readUpstreamBody } from './upstream.ts';
import type { UpstreamResponse } from './upstream.ts';
import type { Redact } from './redact.ts';

/** Largest upstream error body read for its message. */
const MAX_ERROR_BODY_BYTES = 1024 * 1024;

/** The longest `retry-after` llmux gives (llmux.md section 3: never more than the 60 s window). */
const MAX_RETRY_AFTER_SECONDS = 60;

const ENV_PREFIX = 'env:';

/** Where a provider's credential is set, in words that never include it. */
export function credentialSetting(provider: ProviderConfig): string {
  const setting = `providers.${provider.id}.api_key`;
  const written = provider.apiKey;
  if (written === undefined) return `${setting} (none is set)`;
  if (written.startsWith(ENV_PREFIX)) return `the environment variable ${written.slice(ENV_PREFIX.length)} (${setting})`;
  return `${setting} in the llmux config`;
}

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
  if (typeof retryAfter === 'string' && /^\d+$/.test(retryAfter)) headers['retry-after'] = String(Math.min(Number(retryAfter), MAX_RETRY_AFTER_SECONDS));
  if (status === 429) {
    return new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', `Provider "${provider.id}" is rate limiting llmux: ${message}`, { headers });
  }
  if (status === 529 || (status >= 500 && said.type === 'overloaded_error')) {
    return new UpstreamError(529, 'upstream_overloaded', `Provider "${provider.id}" is overloaded (HTTP ${status}): ${message}; try again shortly`, true, undefined, {
      type: 'overloaded_error',
      headers,
    });
  }
  if (status >= 500) {
    return new UpstreamError(502, 'upstream_error', `Provider "${provider.id}" failed with HTTP ${status}: ${message}`, true);
  }
  if (status === 401 || status === 403) {
    const what = said.code ?? said.type;
    return new UpstreamError(
      502,
      'upstream_auth_failed',
      `Provider "${provider.id}" refused the credential llmux sends it (HTTP ${status}${what === undefined ? '' : `, ${what.slice(0, 100)}`}): ` +
        `your key for llmux is fine; the llmux operator should check ${credentialSetting(provider)}`,
      false,
    );
  }
  const type: ErrorType = status === 404 ? 'not_found_error' : 'invalid_request_error';
  const code = said.code ?? said.type ?? 'upstream_error';
  return new GatewayError(status, type, code, `Provider "${provider.id}" refused the request: ${message}`);
}
