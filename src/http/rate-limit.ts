/**
 * The limiter's numbers as HTTP: the `x-ratelimit-*` headers on every authenticated answer, and the
 * 429 with `retry-after` (llmux.md section 3). Whole seconds, as decimal strings; the headers of an
 * unlimited dimension are left out.
 */
import type { ServerResponse } from 'node:http';
import type { RateLimitState, Refusal } from '../limits/limiter.ts';
import { rateLimited } from '../common/errors.ts';
import { setHeadHeader } from './respond.ts';
import type { GatewayError } from '../common/errors.ts';

/** The headers of a state, in a new object (refusals and tests; answers use {@link setRateLimitHeaders}). */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  const headers: Record<string, string> = {};
  if (state.requestLimit !== Infinity) {
    headers['x-ratelimit-limit-requests'] = String(state.requestLimit);
    headers['x-ratelimit-remaining-requests'] = String(state.requestsRemaining);
    headers['x-ratelimit-reset-requests'] = String(state.requestsResetSeconds);
  }
  if (state.tokenLimit !== Infinity) {
    headers['x-ratelimit-limit-tokens'] = String(state.tokenLimit);
    headers['x-ratelimit-remaining-tokens'] = String(state.tokensRemaining);
    headers['x-ratelimit-reset-tokens'] = String(state.tokensResetSeconds);
  }
  return headers;
}

/** Adds a state's headers to an answer's head (src/http/respond.ts: written with its status). */
export function setRateLimitHeaders(res: ServerResponse, state: RateLimitState): void {
  if (state.requestLimit !== Infinity) {
    setHeadHeader(res, 'x-ratelimit-limit-requests', String(state.requestLimit));
    setHeadHeader(res, 'x-ratelimit-remaining-requests', String(state.requestsRemaining));
    setHeadHeader(res, 'x-ratelimit-reset-requests', String(state.requestsResetSeconds));
  }
  if (state.tokenLimit !== Infinity) {
    setHeadHeader(res, 'x-ratelimit-limit-tokens', String(state.tokenLimit));
    setHeadHeader(res, 'x-ratelimit-remaining-tokens', String(state.tokensRemaining));
    setHeadHeader(res, 'x-ratelimit-reset-tokens', String(state.tokensResetSeconds));
  }
}

/**
 * The refusal's wait as `retry-after`: never more than the window (llmux.md section 3). The limiter
 * counts a request until the end of the second after its window ends, so its figure can be the
 * window plus one second; by then the client retrying once more is at worst told 1 s.
 */
export function retryAfterSeconds(refusal: Refusal): number {
  return Math.min(refusal.retryAfterSeconds, Math.max(1, Math.ceil(refusal.windowMs / 1000)));
}

/**
 * "Rate limit exceeded: 60 requests per minute for this key; retry after 12 s". A tokens refusal of
 * a request whose body was read says what it reserved, so the client knows whether a smaller
 * `max_tokens` would have gone through.
 */
export function refusalMessage(refusal: Refusal): string {
  const perWindow = refusal.windowMs === 60_000 ? 'per minute' : `per ${String(refusal.windowMs / 1000)} s`;
  const limit = String(refusal.limit);
  let what: string;
  switch (refusal.reason) {
    case 'requests':
      what = `${limit} requests ${perWindow} for this key`;
      break;
    case 'tokens':
      what = `${limit} tokens ${perWindow} for this key`;
      if (refusal.reservation > 0) what += ` (this request reserves ${String(refusal.reservation)}: its estimated input plus its max_tokens, or the model's output limit without one)`;
      break;
    case 'concurrency':
      what = `${limit} concurrent requests for this key`;
      break;
    case 'unadmitted_requests':
      what = `${limit} requests ${perWindow} for this key that were refused or only counted tokens`;
      break;
    case 'unadmitted_bytes':
      what = `${limit} bytes ${perWindow} of bodies for this key of requests that were refused or only counted tokens`;
      break;
  }
  return `Rate limit exceeded: ${what}; retry after ${String(retryAfterSeconds(refusal))} s`;
}

/** The 429 `rate_limit_error` / `rate_limit_exceeded` for a refusal, with the state's headers and `retry-after`. */
export function rateLimitError(refusal: Refusal): GatewayError {
  const headers = rateLimitHeaders(refusal.state);
  headers['retry-after'] = String(retryAfterSeconds(refusal));
  return rateLimited(refusalMessage(refusal), headers);
}
