/**
 * Writing responses: JSON bodies, the error body, the head of an event stream, request ids.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { GatewayError, errorBody, internalError } from '../common/errors.ts';
import type { ErrorContext } from '../common/errors.ts';

const VALID_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

// A random prefix per process and a counter: unique, and far cheaper than a UUID per request.
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`;
let requestCounter = 0;

/** The client's `x-request-id` when it is a sane token, else a new one. */
export function pickRequestId(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  if (typeof given === 'string' && VALID_REQUEST_ID.test(given)) return given;
  requestCounter += 1;
  return `${REQUEST_ID_PREFIX}${requestCounter.toString(36).padStart(8, '0')}`;
}

export function sendJson(res: ServerResponse, status: number, body: string | Buffer, headers?: Record<string, string>): void {
  if (headers !== undefined) for (const k in headers) res.setHeader(k, headers[k] as string);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
  });
  res.end(body);
}

/** Renders an error as a response body, in some format's shape. */
export type RenderError = (err: GatewayError, context: ErrorContext) => string;

/**
 * Sends an error, rendered by `render` (the client format's shape; our error body by default).
 * Anything that isn't a GatewayError is a bug: it becomes a 500 with nothing of its inside shown.
 * When the response has already started, the socket is closed instead (the stream writers send
 * their own in-stream errors before getting here).
 */
export function sendError(res: ServerResponse, err: unknown, onBug?: (err: unknown) => void, render: RenderError = errorBody): void {
  const gatewayError = err instanceof GatewayError ? err : internalError();
  if (!(err instanceof GatewayError)) onBug?.(err);
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  if (gatewayError.headers !== undefined) for (const k in gatewayError.headers) res.setHeader(k, gatewayError.headers[k] as string);
  // A body too large or too slow: don't keep a connection whose request body we stopped reading.
  if (gatewayError.status === 413 || gatewayError.status === 408) res.setHeader('connection', 'close');
  const requestId = res.getHeader('request-id');
  sendJson(res, gatewayError.status, render(gatewayError, { ...(typeof requestId === 'string' ? { requestId } : {}), headers: res.req.headers, ...(res.req.url === undefined ? {} : { url: res.req.url }) }));
}

/** Writes the head of a server-sent event stream. */
export function startEventStream(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
}

/** Writes the head of a stream that is not server-sent events (a JSON array written element by element). */
export function startFramedStream(res: ServerResponse, contentType: string): void {
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.flushHeaders();
}

/**
 * Runs `fn` once when the response closes, or at once when it already has: a listener added after
 * the client went away would never run, and a concurrency slot or an upstream request would be
 * held for good.
 */
export function onClose(res: ServerResponse, fn: () => void): void {
  if (res.destroyed) fn();
  else res.once('close', fn);
}
