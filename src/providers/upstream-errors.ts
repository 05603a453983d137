/**
 * An upstream's error answer as llmux's error (llmux.md section 3), in the words its platform reads
 * from it (src/platforms/: OpenAI's and Anthropic's error bodies on `http`): its status kept for 4xx (429
 * becomes our rate_limit_exceeded), 5xx as 502 upstream_error, the upstream's message quoted, with
 * every configured credential taken out of what it said (./redact.ts).
 * Not the client's fault, so never in the client's words: an upstream 401 or 403 (llmux's own
 * credential refused) is 502 upstream_auth_failed naming the setting that holds the credential,
 * never the credential nor the upstream's message (OpenAI's quotes part of the key); an upstream
 * 529 or `overloaded_error` is our 529 overloaded_error. A `retry-after` passed on is at most the
 * 60 s window; a 429 without one passes on the wait Google's body names (its RetryInfo detail).
 */
import type { Carrier, UpstreamErrorWords } from '../platforms/index.ts';
import { GatewayError, UpstreamError, rateLimited, upstreamAuthFailed, upstreamFailed } from '../common/errors.ts';
import type { ErrorType } from '../common/errors.ts';
import { geminiRetryDelaySeconds } from '../formats/gemini-errors.ts';
import { readUpstreamBody } from './upstream.ts';
import type { UpstreamResponse } from './upstream.ts';
import type { Redact } from './redact.ts';

/** Largest upstream error body read for its message. */
const MAX_ERROR_BODY_BYTES = 1024 * 1024;

/** The longest `retry-after` llmux gives (llmux.md section 3: never more than the 60 s window). */
const MAX_RETRY_AFTER_SECONDS = 60;

/** `credentialSetting`: where the credential the request was sent with is set (a pool's key: its own); default the carrier's. */
export async function upstreamErrorOf(response: UpstreamResponse, carrier: Carrier, idleTimeoutMs: number, redact: Redact, credentialSetting = carrier.credentialSetting): Promise<GatewayError> {
  const { provider } = carrier;
  let text = '';
  try {
    text = redact((await readUpstreamBody(response, MAX_ERROR_BODY_BYTES, idleTimeoutMs)).toString('utf8'));
  } catch {
    // The body could not be read: the status alone says what happened.
  }
  const said: UpstreamErrorWords = carrier.readError(response.statusCode ?? 502, response.headers, text);
  const { status } = said;
  const message = said.message === '' ? `HTTP ${status}` : said.message.slice(0, 2000);
  const headers: Record<string, string> = {};
  const retryAfter = response.headers['retry-after'];
  if (typeof retryAfter === 'string' && /^\d+$/.test(retryAfter)) headers['retry-after'] = String(Math.min(Number(retryAfter), MAX_RETRY_AFTER_SECONDS));
  else if (status === 429) {
    // Google says how long to wait in its body (RetryInfo), not in a header.
    const seconds = geminiRetryDelaySeconds(parsedOrUndefined(text));
    if (seconds !== undefined) headers['retry-after'] = String(Math.min(Math.ceil(seconds), MAX_RETRY_AFTER_SECONDS));
  }
  if (status === 429) {
    return rateLimited(`Provider "${provider.id}" is rate limiting llmux: ${message}`, headers);
  }
  if (status === 529 || (status >= 500 && said.type === 'overloaded_error')) {
    return new UpstreamError(529, 'upstream_overloaded', `Provider "${provider.id}" is overloaded (HTTP ${status}): ${message}; try again shortly`, true, undefined, {
      type: 'overloaded_error',
      headers,
    });
  }
  if (status >= 500) {
    return upstreamFailed(`Provider "${provider.id}" failed with HTTP ${status}: ${message}`, { retryable: true });
  }
  if (status === 401 || status === 403) {
    const what = said.code ?? said.type;
    return upstreamAuthFailed(
      `Provider "${provider.id}" refused the credential llmux sends it (HTTP ${status}${what === undefined ? '' : `, ${what.slice(0, 100)}`}): ` +
        `your key for llmux is fine; the llmux operator should check ${credentialSetting}`,
    );
  }
  const type: ErrorType = status === 404 ? 'not_found_error' : 'invalid_request_error';
  const code = said.code ?? said.type ?? 'upstream_error';
  return new GatewayError(status, type, code, `Provider "${provider.id}" refused the request: ${message}`);
}

/** The JSON an error body holds, or undefined when it is not JSON. */
function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
