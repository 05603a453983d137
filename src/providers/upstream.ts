/**
 * The upstream client: keep-alive connections per host (./http1.ts), endpoints parsed once, and
 * the connect and first-byte timeouts. It returns the upstream response as soon as its headers arrive, so
 * streams pass through as bytes come. Where a request goes (endpoint, path and query) and the
 * headers it carries are the caller's: the provider's platform (src/platforms/) makes them, with
 * the provider's own credential, never the client's key.
 *
 * An endpoint is reached by its scheme: `http:` and `https:` over the network, and `llmux:` for
 * the built-in echo model (./echo.ts), which answers in-process.
 *
 * Upstream bodies are read as they come (streams pass through byte for byte), so llmux asks for
 * them uncompressed (`accept-encoding: identity`); a server that compresses anyway (gzip, deflate,
 * br) is decoded, and one that uses an encoding llmux cannot read is a 502. Otherwise its
 * compressed bytes would reach clients under llmux's own headers, unreadable.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Transform } from 'node:stream';
import type { ProviderConfig } from '../config/types.ts';
import type { ClientRequestOf, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { UpstreamAnswer } from '../platforms/index.ts';
import { loadZlib, requestFor } from '../common/builtins.ts';
import { requestTargetValid } from '../common/http-chars.ts';
import { Http1Answer, createHttp1Client, unwritableHeader } from './http1.ts';
import type { Http1Target } from './http1.ts';
import { ClientClosedError, upstreamFailed, upstreamTimeout } from '../common/errors.ts';
import type { UpstreamError } from '../common/errors.ts';

/**
 * The client side of a request going away, as one small object per request (an AbortController
 * and its EventTarget cost more, and are held by every open stream). One listener at a time:
 * the upstream request in flight, or the backoff timer between attempts.
 */
export interface Cancellation {
  readonly cancelled: boolean;
  /** Runs `listener` on cancel (at once when already cancelled); replaces any earlier listener. */
  listen(listener: () => void): void;
  /** Forgets the listener. */
  unlisten(): void;
  cancel(): void;
}

export function createCancellation(): Cancellation {
  return new RequestCancellation();
}

/**
 * A class, its methods on the prototype: three closures and their context per request would cost
 * several times its two fields. `cancelled` is a plain field, not a getter (V8 keeps an object with
 * an accessor in dictionary mode, ~500 B more).
 */
class RequestCancellation implements Cancellation {
  cancelled = false;
  private current: (() => void) | undefined = undefined;

  listen(listener: () => void): void {
    if (this.cancelled) {
      listener();
      return;
    }
    this.current = listener;
  }

  unlisten(): void {
    this.current = undefined;
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const listener = this.current;
    this.current = undefined;
    listener?.();
  }
}

export interface UpstreamRequest {
  /** `POST` when absent; `GET` and `DELETE` read or delete what a provider keeps (./forward.ts). */
  method?: 'POST' | 'GET' | 'DELETE';
  provider: ProviderConfig;
  /** The base URL to reach (the provider's platform gives it: `base_url` on `http`); parsed once per endpoint. */
  endpoint: string;
  /** The wire format the request is in. */
  format: UpstreamFormat;
  /** The path and query appended to the endpoint's base path (`/chat/completions`, `…:streamGenerateContent?alt=sse`). */
  path: string;
  /** The body: a string, or parts written in order (the client's bytes with a member spliced in). */
  body: string | Buffer | readonly Buffer[];
  /** Headers for the provider, authorised: its credential, the format's version headers, `accept`. */
  headers: Record<string, string>;
  /** The request as the client sent it, for a provider answered in-process (the echo model answers it); not kept for the network. */
  client: ClientRequestOf<WireFormat> | undefined;
  cancellation: Cancellation;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
}

/** An upstream's answer as it arrives (src/platforms/platform.ts). */
export type UpstreamResponse = UpstreamAnswer;

/** How a provider is reached. */
export interface Transport {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
}

interface Target {
  /** Where the connections go (one pool of keep-alive connections each). */
  peer: Http1Target;
  basePath: string;
  hostHeader: string;
}

export interface UpstreamClient extends Transport {
  /** Closes the keep-alive connections, idle or not. */
  close(): void;
}

/** Base URL scheme of providers answered in-process. */
export const IN_PROCESS_SCHEME = 'llmux:';

// `node:tls` is loaded on the first https provider (./http1.ts), `node:zlib` on the first
// compressed answer. The doctor's provider checks pick http or https through here.
export { requestFor };

/** A decoder for a `content-encoding`, undefined when there is nothing to decode, or `unknown`. */
function decoderFor(encoding: string): Transform | 'unknown' | undefined {
  switch (encoding) {
    case '':
    case 'identity':
      return undefined;
    case 'gzip':
    case 'x-gzip':
      return loadZlib().createGunzip();
    case 'deflate':
      return loadZlib().createInflate();
    case 'br':
      return loadZlib().createBrotliDecompress();
    default:
      return 'unknown';
  }
}

/**
 * The upstream's answer as its plain bytes: itself, or a decoder of its compressed body that
 * carries its status and headers (without `content-encoding` and `content-length`). Failures of
 * the answer become the decoder's errors; destroying the decoder stops the answer.
 */
function decoded(res: Http1Answer, decoder: Transform): UpstreamResponse {
  const headers: IncomingHttpHeaders = { ...res.headers };
  delete headers['content-encoding'];
  delete headers['content-length'];
  res.on('error', (err) => decoder.destroy(err));
  res.on('aborted', () => decoder.destroy(new Error('the answer was cut off')));
  decoder.once('close', () => {
    if (!res.complete) res.destroy();
  });
  res.pipe(decoder);
  const answer = Object.assign(decoder, { statusCode: res.statusCode, headers });
  Object.defineProperty(answer, 'complete', { get: () => res.complete });
  return answer;
}

/** Bodies in parts shorter than this are joined into one buffer before they are written. */
const JOIN_PARTS_BELOW_BYTES = 16 * 1024;

/** Creates the client; `inProcess` answers providers whose base URL starts with `llmux:`. */
export function createUpstreamClient(inProcess: Transport): UpstreamClient {
  const client = createHttp1Client();
  const targets = new Map<string, Target>();

  function targetFor(endpoint: string): Target {
    let t = targets.get(endpoint);
    if (t !== undefined) return t;
    const url = new URL(endpoint); // once per endpoint, not per request
    const secure = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    t = {
      peer: { hostname, port: url.port === '' ? (secure ? 443 : 80) : Number(url.port), secure },
      basePath: url.pathname.replace(/\/+$/, ''),
      hostHeader: url.host,
    };
    targets.set(endpoint, t);
    return t;
  }

  return {
    send(req) {
      if (req.endpoint.startsWith(IN_PROCESS_SCHEME)) return inProcess.send(req);
      const target = targetFor(req.endpoint);
      const length = bodyLength(req.body);
      const headers = headerList({
        'accept-encoding': 'identity',
        ...req.provider.headers,
        host: target.hostHeader,
        'content-type': 'application/json',
        'content-length': length,
        ...req.headers,
      });
      const path = target.basePath + req.path;
      const unwritable = unwritableHeader(headers);
      if (unwritable !== undefined || !requestTargetValid(path)) {
        const what = unwritable === undefined ? 'its path' : `header "${unwritable.slice(0, 60)}"`;
        return Promise.reject(upstreamFailed(`Provider "${req.provider.id}" cannot be sent this request: ${what} has a character HTTP does not allow there (a space, a line break, a control character)`));
      }
      // Parts of a long body are written as they are (corked: one writev with the head); a short
      // one is cheaper joined than written part by part.
      const body = typeof req.body === 'string' || Buffer.isBuffer(req.body) || length > JOIN_PARTS_BELOW_BYTES ? req.body : Buffer.concat(req.body, length);
      return new Promise<UpstreamResponse>((resolve, reject) => {
        let settled = false;
        let connectTimer: NodeJS.Timeout | undefined;
        const fail = (err: UpstreamError | ClientClosedError): void => {
          if (settled) return;
          settled = true;
          clearTimeout(firstByteTimer);
          clearTimeout(connectTimer);
          req.cancellation.unlisten();
          call.destroy();
          reject(err);
        };
        const onAnswer = (res: Http1Answer): void => {
          if (settled) {
            res.destroy();
            return;
          }
          settled = true;
          clearTimeout(firstByteTimer);
          clearTimeout(connectTimer);
          req.cancellation.unlisten();
          const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
          const decoder = decoderFor(encoding);
          if (decoder === 'unknown') {
            res.destroy();
            reject(upstreamFailed(`Provider "${req.provider.id}" answered with content-encoding "${encoding.slice(0, 40)}", which llmux cannot read`));
            return;
          }
          resolve(decoder === undefined ? res : decoded(res, decoder));
        };
        const onError = (err: Error): void => {
          fail(upstreamFailed(`Provider "${req.provider.id}" could not be reached (${(err as NodeJS.ErrnoException).code ?? err.message})`, { retryable: true, cause: err }));
        };
        const call = client.request(target.peer, { method: req.method ?? 'POST', path, headers, body }, onAnswer, onError);
        const firstByteTimer = setTimeout(() => {
          fail(upstreamTimeout(`Provider "${req.provider.id}" did not answer within ${req.firstByteTimeoutMs} ms (limits.upstream_timeout_ms)`, true));
        }, req.firstByteTimeoutMs);
        // A reused keep-alive connection is already connected.
        if (call.connecting) {
          connectTimer = setTimeout(() => {
            fail(upstreamFailed(`Provider "${req.provider.id}" could not be reached: connect timed out after ${req.connectTimeoutMs} ms`, { retryable: true }));
          }, req.connectTimeoutMs);
          call.onConnect(() => clearTimeout(connectTimer));
        }
        req.cancellation.listen(() => fail(new ClientClosedError()));
      });
    },
    close() {
      client.close();
    },
  };
}

/** The headers as a flat name, value list, in the order given, for the request's head. */
function headerList(headers: Record<string, string | number>): string[] {
  const list: string[] = [];
  for (const name in headers) list.push(name, String(headers[name]));
  return list;
}

function bodyLength(body: UpstreamRequest['body']): number {
  if (typeof body === 'string') return Buffer.byteLength(body);
  if (Buffer.isBuffer(body)) return body.length;
  let length = 0;
  for (const part of body) length += part.length;
  return length;
}

/**
 * Reads a whole (non-streamed) upstream body into one Buffer, bounded. An answer that has already
 * arrived whole (a small one comes in the packet of its headers) is taken from the response's
 * buffer at once, with no listeners, timer or promise: the Buffer itself is returned.
 */
export function readUpstreamBody(res: UpstreamResponse, maxBytes: number, idleTimeoutMs: number): Buffer | Promise<Buffer> {
  const arrived = arrivedBody(res, maxBytes);
  return arrived ?? readArriving(res, maxBytes, idleTimeoutMs);
}

/**
 * The body of a response that has arrived whole and has not been read, else undefined. Only the
 * HTTP/1.1 client's own answer says so for certain: it sets `complete` once the body's last byte
 * is off the connection (a decoder's `complete` is its source's, and its output may still be
 * coming). A body that came in the packet of its head is handed over as it is; one that came in
 * parts is read from the answer's buffer. Either way the connection is already back in the pool.
 */
function arrivedBody(res: UpstreamResponse, maxBytes: number): Buffer | undefined {
  if (!(res instanceof Http1Answer) || !res.complete) return undefined;
  const whole = res.takeWhole(maxBytes);
  if (whole !== undefined) return whole;
  if (res.whole !== undefined || res.readableFlowing !== null || res.readableLength > maxBytes) return undefined;
  const bytes = res.read() as Buffer | null;
  return bytes ?? Buffer.alloc(0);
}

/** Reads a body still arriving: bounded in size and in silence between chunks. */
function readArriving(res: UpstreamResponse, maxBytes: number, idleTimeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // One timer for the whole body, re-armed only when it fires: a chunk just notes the time,
    // rather than clearing and setting a timer per chunk. None when the whole answer has already
    // arrived (a small answer comes in the packet of its headers): nothing is left to wait for.
    let lastData = Date.now();
    let timer = res.complete ? undefined : setTimeout(onTimer, idleTimeoutMs);
    function onTimer(): void {
      const quietMs = Date.now() - lastData;
      if (quietMs < idleTimeoutMs) {
        timer = setTimeout(onTimer, idleTimeoutMs - quietMs);
        return;
      }
      res.destroy();
      reject(upstreamTimeout(`The provider stopped sending its answer for ${idleTimeoutMs} ms`, false));
    }
    const cutOff = (why: string): void => {
      clearTimeout(timer);
      reject(upstreamFailed(why));
    };
    res.on('data', (chunk: Buffer) => {
      lastData = Date.now();
      size += chunk.length;
      if (size > maxBytes) {
        // Refused before the destroy: destroying emits 'aborted' at once, whose "cut off" would come first.
        cutOff(`The provider's answer is larger than ${maxBytes} bytes`);
        res.destroy();
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () => {
      clearTimeout(timer);
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    res.on('error', (err) => cutOff(`The provider's answer was cut off (${(err as NodeJS.ErrnoException).code ?? err.message})`));
    res.on('aborted', () => cutOff("The provider's answer was cut off"));
  });
}

/** How long a finished answer's leftover bytes may take to arrive before its socket is dropped. */
const DRAIN_FOR_REUSE_MS = 5_000;

/**
 * The client has its whole answer, but the upstream response may not have ended yet (bytes after
 * `[DONE]` / `message_stop`): read it to its end so the keep-alive socket goes back to the pool
 * instead of being closed, within a bound.
 */
export function releaseForReuse(response: UpstreamResponse): void {
  if (response.complete === true) return;
  const timer = setTimeout(() => response.destroy(), DRAIN_FOR_REUSE_MS);
  timer.unref();
  response.once('end', () => clearTimeout(timer));
  response.once('close', () => clearTimeout(timer));
  response.resume();
}
