/**
 * Writing responses: JSON bodies, the error body, the head of an event stream, request ids.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { GatewayError, errorBody, internalError } from '../common/errors.ts';
import type { ErrorContext } from '../common/errors.ts';
import { endAtTurnEnd, endPending } from '../common/turn-writes.ts';

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

/**
 * The headers an answer is given before its status is known (request ids, rate limits, the budget,
 * `connection: close`), per response until {@link writeHead} writes them with the status. Not set
 * with `res.setHeader`: Node keeps headers set that way (a dictionary, and a [name, value] array
 * per header) for the response's whole life, ~1.5 KB that every open stream held for nothing;
 * given to `res.writeHead` in one object, they are written and let go.
 */
const heads = new WeakMap<ServerResponse, OutgoingHttpHeaders>();

/** Adds a header (`name` in lower case) to the head {@link writeHead} will write; a later value replaces an earlier one. */
export function setHeadHeader(res: ServerResponse, name: string, value: string): void {
  const head = heads.get(res);
  if (head === undefined) heads.set(res, { [name]: value });
  else head[name] = value;
}

/** A header of the head to be written (or already set on the response the usual way). */
export function headHeader(res: ServerResponse, name: string): OutgoingHttpHeaders[string] {
  return heads.get(res)?.[name] ?? res.getHeader(name);
}

/**
 * Writes the head: the status, the headers added with {@link setHeadHeader}, then `headers`
 * (which win over them, as `res.writeHead`'s own headers win over those set before).
 */
export function writeHead(res: ServerResponse, status: number, headers: OutgoingHttpHeaders): void {
  const head = heads.get(res);
  if (head === undefined) {
    res.writeHead(status, headers);
    return;
  }
  heads.delete(res);
  for (const name in headers) head[name] = headers[name];
  res.writeHead(status, head);
}

/**
 * Moves the head's headers onto the response with `res.setHeader`, for a handler that may write its
 * answer with `res.writeHead` or `res.end` directly (a feature mounted from outside): they are not lost.
 */
export function setHeadOnResponse(res: ServerResponse): void {
  const head = heads.get(res);
  if (head === undefined) return;
  heads.delete(res);
  for (const name in head) res.setHeader(name, head[name] as string | string[] | number);
}

export function sendJson(res: ServerResponse, status: number, body: string | Buffer, headers?: Record<string, string>): void {
  if (headers !== undefined) for (const k in headers) setHeadHeader(res, k, headers[k] as string);
  writeHead(res, status, {
    'content-type': 'application/json',
    'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
  });
  // Ended at the turn's end with the other answers (src/common/turn-writes.ts).
  endAtTurnEnd(res, body);
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
    // An answer whose end waits for the turn's end is whole: ended now, it would lose its body.
    if (!res.writableEnded && !endPending(res)) res.end();
    return;
  }
  if (gatewayError.headers !== undefined) for (const k in gatewayError.headers) setHeadHeader(res, k, gatewayError.headers[k] as string);
  // A body too large or too slow: don't keep a connection whose request body we stopped reading.
  if (gatewayError.status === 413 || gatewayError.status === 408) setHeadHeader(res, 'connection', 'close');
  const requestId = headHeader(res, 'request-id');
  sendJson(res, gatewayError.status, render(gatewayError, { ...(typeof requestId === 'string' ? { requestId } : {}), headers: res.req.headers, ...(res.req.url === undefined ? {} : { url: res.req.url }) }));
}

/** Writes the head of a server-sent event stream. */
export function startEventStream(res: ServerResponse): void {
  writeHead(res, 200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
}

/** Writes the head of a stream that is not server-sent events (a JSON array written element by element). */
export function startFramedStream(res: ServerResponse, contentType: string): void {
  writeHead(res, 200, { 'content-type': contentType, 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.flushHeaders();
}

/**
 * Runs `fn` once when the response closes, or at once when it already has: a listener added after
 * the client went away would never run, and a concurrency slot or an upstream request would be
 * held for good. With `on`, not `once`: a response emits 'close' once (Node guards it), and each
 * `once` is a wrapper (a bound function, its arguments and state) an open stream holds.
 */
export function onClose(res: ServerResponse, fn: () => void): void {
  if (res.destroyed) fn();
  else res.on('close', fn);
}
