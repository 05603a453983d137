/**
 * The gateway's error vocabulary: one class for everything llmux refuses or fails at, with a typed
 * `type`, and named factories for the errors raised in more than one place. What an error says is
 * here ({@link errorObject}); its envelope (the JSON body and the in-stream frame of each wire
 * format) belongs to whoever writes the response: src/http/respond.ts and the dialects.
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
  /** The request field at fault (`messages.2.content`), as OpenAI's `error.param` names it. */
  param?: string;
  /** Extra fields merged into `error` (for example `debug` for X-Debug-Auth, `interval`). */
  extra?: Record<string, unknown>;
  /** Headers to add to the error response (for example `allow`, `retry-after`). */
  headers?: Record<string, string>;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly param: string | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, type: ErrorType, code: string, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.code = code;
    this.param = options.param;
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

/** What the renderer of an error body may know of the request it answers. */
export interface ErrorContext {
  /** The request's id, as its `request-id` header gives it. */
  requestId?: string;
  /** The request's headers: a route shared by formats answers in its client's shape. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** The request's path and query: a route shared by formats may tell its client by a query (Gemini's `?key=`). */
  url?: string;
}

/**
 * The `error` object an error body carries in some envelope: `message`, `type`, `code`, and any
 * extra fields; `type` as given, since each envelope says it in its own words.
 */
export function errorObject(err: GatewayError, type: string = err.type): Record<string, unknown> {
  const error: Record<string, unknown> = { message: err.message, type, code: err.code };
  if (err.extra !== undefined) Object.assign(error, err.extra);
  return error;
}

/**
 * The JSON error body `{error:{message,type,param,code}}` (llmux.md section 3): the gateway's own,
 * and the chat and Responses formats'. `param` is OpenAI's (its error object requires it: the
 * field at fault, or null). A format with another shape renders its own (src/dialects/).
 */
export function errorBody(err: GatewayError): string {
  const error: Record<string, unknown> = { message: err.message, type: err.type, param: err.param ?? null, code: err.code };
  if (err.extra !== undefined) Object.assign(error, err.extra);
  return JSON.stringify({ error });
}

/** The client closed its connection: stop work, answer nobody. */
export class ClientClosedError extends Error {
  constructor() {
    super('The client went away');
    this.name = 'ClientClosedError';
  }
}

/** 400 invalid_request_error / invalid_parameters, the description's validation error; `param` names the field at fault. */
export function invalidParameters(message: string, param?: string): GatewayError {
  return new GatewayError(400, 'invalid_request_error', 'invalid_parameters', message, param === undefined ? {} : { param });
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

/**
 * 502 api_error / upstream_error: a provider could not be reached or failed. By default not worth
 * another attempt; `retryable` when it may be (a refused connection, an upstream 5xx).
 */
export function upstreamFailed(message: string, options: { retryable?: boolean; cause?: unknown } = {}): UpstreamError {
  return new UpstreamError(502, 'upstream_error', message, options.retryable === true, options.cause);
}

/** 504 api_error / upstream_timeout: a provider did not answer, or stopped answering, in time. */
export function upstreamTimeout(message: string, retryable: boolean): UpstreamError {
  return new UpstreamError(504, 'upstream_timeout', message, retryable);
}

/**
 * 502 api_error / upstream_auth_failed: llmux's own credential for a provider was refused, or could
 * not be made (llmux.md sections 3 and 8). Never the client's fault, so never a 401; `message`
 * names the provider and the setting to check, never a secret.
 */
export function upstreamAuthFailed(message: string, cause?: unknown): UpstreamError {
  return new UpstreamError(502, 'upstream_auth_failed', message, false, cause);
}

/** 429 rate_limit_error / rate_limit_exceeded, with its `retry-after` (and any other headers). */
export function rateLimited(message: string, headers: Record<string, string>): GatewayError {
  return new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', message, { headers });
}

/** 403 permission_error / insufficient_permissions: the key may not do this (`extra`: X-Debug-Auth's `debug`). */
export function insufficientPermissions(message: string, extra?: Record<string, unknown>): GatewayError {
  return new GatewayError(403, 'permission_error', 'insufficient_permissions', message, extra === undefined ? {} : { extra });
}

/**
 * 502 api_error / upstream_auth_failed: llmux could not authorise itself to a provider's platform
 * (no credentials found, a token endpoint refusing, a credential endpoint not answering) — llmux.md
 * section 8. Names the provider, what went wrong and the setting to check; never a credential.
 */
export function platformAuthFailed(providerId: string, reason: string, setting: string): UpstreamError {
  return upstreamAuthFailed(`Provider "${providerId}" could not be authorised: ${reason}. Your key for llmux is fine; the llmux operator should check ${setting}`);
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
