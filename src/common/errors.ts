/**
 * The gateway's error vocabulary: one class for everything llmux refuses or fails at, with a typed
 * `type`, and named factories for the errors raised in more than one place. Rendering an error (the
 * JSON body, the in-stream frame of each wire format) belongs to whoever writes the response:
 * src/http/respond.ts and the dialects.
 *
 * A client that went away is not an error anyone is answered with: it is its own class,
 * {@link ClientClosedError}, so nothing has to recognise it by a made-up status.
 */

/** The `error.type` values llmux answers with (the description's, plus Anthropic's where they differ). */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export interface GatewayErrorOptions {
  cause?: unknown;
  /** Extra fields merged into `error` (for example `debug` for X-Debug-Auth, `interval`). */
  extra?: Record<string, unknown>;
  /** Headers to add to the error response (for example `allow`, `retry-after`). */
  headers?: Record<string, string>;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, type: ErrorType, code: string, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.code = code;
    this.extra = options.extra;
    this.headers = options.headers;
  }
}

/**
 * An upstream failure, with whether another attempt may help. Client-facing like any GatewayError:
 * when the attempts run out, the last one is the answer.
 */
export class UpstreamError extends GatewayError {
  readonly retryable: boolean;
  constructor(status: number, code: string, message: string, retryable: boolean, cause?: unknown, options: { type?: ErrorType; headers?: Record<string, string> } = {}) {
    super(status, options.type ?? 'api_error', code, message, {
      ...(cause === undefined ? {} : { cause }),
      ...(options.headers === undefined ? {} : { headers: options.headers }),
    });
    this.name = 'UpstreamError';
    this.retryable = retryable;
  }
}

/** The client closed its connection: stop work, answer nobody. */
export class ClientClosedError extends Error {
  constructor() {
    super('The client went away');
    this.name = 'ClientClosedError';
  }
}

/** 400 invalid_request_error / invalid_parameters, the description's validation error. */
export function invalidParameters(message: string): GatewayError {
  return new GatewayError(400, 'invalid_request_error', 'invalid_parameters', message);
}

export function invalidApiKey(extra?: Record<string, unknown>): GatewayError {
  return new GatewayError(
    401,
    'invalid_request_error',
    'invalid_api_key',
    'Invalid authentication credentials: send a valid llmux key as "Authorization: Bearer <key>" or "x-api-key: <key>"',
    extra === undefined ? {} : { extra },
  );
}

export function notFound(message = 'Not found'): GatewayError {
  return new GatewayError(404, 'not_found_error', 'not_found', message);
}

export function modelNotFound(model: string): GatewayError {
  return new GatewayError(
    404,
    'not_found_error',
    'model_not_found',
    `model: "${truncate(model, 200)}" is not a model served here; GET /v1/models lists the models you can use`,
  );
}

export function internalError(): GatewayError {
  return new GatewayError(500, 'api_error', 'internal_error', 'Internal server error');
}

/** 502 api_error / upstream_error: a provider failed in a way that is not worth another attempt. */
export function upstreamFailed(message: string): GatewayError {
  return new GatewayError(502, 'api_error', 'upstream_error', message);
}

/**
 * 502 api_error / upstream_auth_failed: llmux could not authorise itself to a provider's platform
 * (no credentials found, a token endpoint refusing, a credential endpoint not answering) — llmux.md
 * section 8. Names the provider, what went wrong and the setting to check; never a credential.
 */
export function platformAuthFailed(providerId: string, reason: string, setting: string): UpstreamError {
  return new UpstreamError(
    502,
    'upstream_auth_failed',
    `Provider "${providerId}" could not be authorised: ${reason}. Your key for llmux is fine; the llmux operator should check ${setting}`,
    false,
  );
}

/** 413 request_too_large: the body passed `limits.max_body_bytes`. */
export function tooLarge(maxBodyBytes: number): GatewayError {
  return new GatewayError(
    413,
    'invalid_request_error',
    'request_too_large',
    `Request body is larger than the ${maxBodyBytes}-byte limit (limits.max_body_bytes); send a smaller request`,
  );
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * 503 api_error / state_unavailable: the shared-state server is slow or down and `state.on_failure`
 * is `closed` (llmux.md section 6), or an operation that lives only there (a key, a device grant)
 * could not reach it. Worth retrying shortly.
 */
export function stateUnavailable(what = 'This request'): GatewayError {
  return new GatewayError(503, 'api_error', 'state_unavailable', `${what} needs the shared state server, which is not answering; retry in a few seconds`, {
    headers: { 'retry-after': '1' },
  });
}
