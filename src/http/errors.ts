/**
 * One error class for everything the gateway refuses or fails at, and the functions that
 * render it: the JSON error body `{error:{message,type,code}}` and the in-stream error of each
 * wire format (llmux.md section 3).
 */

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  /** Extra fields merged into `error` (for example `debug` for X-Debug-Auth, `param`). */
  readonly extra: Record<string, unknown> | undefined;
  /** Headers to add to the error response (for example `allow`, `retry-after`). */
  readonly headers: Record<string, string> | undefined;

  constructor(
    status: number,
    type: string,
    code: string,
    message: string,
    options: { cause?: unknown; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.code = code;
    this.extra = options.extra;
    this.headers = options.headers;
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

/** Renders the JSON error body. */
export function errorBody(err: GatewayError): string {
  const error: Record<string, unknown> = { message: err.message, type: err.type, code: err.code };
  if (err.extra !== undefined) Object.assign(error, err.extra);
  return JSON.stringify({ error });
}

/** An error after a messages-format stream has started: `event: error`. */
export function messagesStreamError(message: string, type = 'api_error'): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`;
}

/** An error after a chat-format stream has started: an error chunk, and no `[DONE]` after it. */
export function chatStreamError(message: string, type = 'api_error', code: string | null = null): string {
  return `data: ${JSON.stringify({ error: { message, type, code } })}\n\n`;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
