/**
 * The upstream client: one keep-alive agent per protocol, endpoints parsed once, and the connect
 * and first-byte timeouts. It returns the upstream response as soon as its headers arrive, so
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
import http from 'node:http';
import type https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { Transform } from 'node:stream';
import type { ProviderConfig } from '../config/types.ts';
import type { ClientRequestOf, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { UpstreamAnswer } from '../platforms/index.ts';
import { loadHttps, loadZlib } from '../common/builtins.ts';
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
  lib: typeof http | typeof https;
  agent: http.Agent;
  hostname: string;
  port: number;
  basePath: string;
  hostHeader: string;
}

export interface UpstreamClient extends Transport {
  /** Closes idle keep-alive sockets. */
  close(): void;
}

/** Base URL scheme of providers answered in-process. */
export const IN_PROCESS_SCHEME = 'llmux:';

// `node:https` is loaded on the first https provider, `node:zlib` on the first compressed answer.
// The doctor's provider checks load https through here too.
export { loadHttps };

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
function decoded(res: http.IncomingMessage, decoder: Transform): UpstreamResponse {
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

const AGENT_OPTIONS = { keepAlive: true, keepAliveMsecs: 1_000, maxFreeSockets: 256, scheduling: 'lifo' } as const;

/** Creates the client; `inProcess` answers providers whose base URL starts with `llmux:`. */
export function createUpstreamClient(inProcess: Transport): UpstreamClient {
  const httpAgent = new http.Agent(AGENT_OPTIONS);
  let httpsLib: typeof https | undefined;
  let httpsAgent: https.Agent | undefined;
  const targets = new Map<string, Target>();

  function targetFor(endpoint: string): Target {
    let t = targets.get(endpoint);
    if (t !== undefined) return t;
    const url = new URL(endpoint); // once per endpoint, not per request
    const secure = url.protocol === 'https:';
    if (secure && httpsAgent === undefined) {
      httpsLib = loadHttps();
      httpsAgent = new httpsLib.Agent(AGENT_OPTIONS);
    }
    t = {
      lib: secure ? (httpsLib as typeof https) : http,
      agent: secure ? (httpsAgent as https.Agent) : httpAgent,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
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
      const headers: Record<string, string | number> = {
        'accept-encoding': 'identity',
        ...req.provider.headers,
        host: target.hostHeader,
        'content-type': 'application/json',
        'content-length': bodyLength(req.body),
        ...req.headers,
      };
      return new Promise<UpstreamResponse>((resolve, reject) => {
        let settled = false;
        let connectTimer: NodeJS.Timeout | undefined;
        const fail = (err: UpstreamError | ClientClosedError): void => {
          if (settled) return;
          settled = true;
          clearTimeout(firstByteTimer);
          clearTimeout(connectTimer);
          req.cancellation.unlisten();
          outgoing.destroy();
          reject(err);
        };
        const onAbort = (): void => fail(new ClientClosedError());
        const outgoing = target.lib.request({
          method: req.method ?? 'POST',
          hostname: target.hostname,
          port: target.port,
          path: target.basePath + req.path,
          headers: headerList(headers),
          agent: target.agent,
        });
        const firstByteTimer = setTimeout(() => {
          fail(upstreamTimeout(`Provider "${req.provider.id}" did not answer within ${req.firstByteTimeoutMs} ms (limits.upstream_timeout_ms)`, true));
        }, req.firstByteTimeoutMs);
        outgoing.once('socket', (socket) => {
          // A reused keep-alive socket is already connected.
          if (!socket.connecting) return;
          connectTimer = setTimeout(() => {
            fail(upstreamFailed(`Provider "${req.provider.id}" could not be reached: connect timed out after ${req.connectTimeoutMs} ms`, { retryable: true }));
          }, req.connectTimeoutMs);
          socket.once('connect', () => clearTimeout(connectTimer));
        });
        const onError = (err: NodeJS.ErrnoException): void => {
          fail(upstreamFailed(`Provider "${req.provider.id}" could not be reached (${err.code ?? err.message})`, { retryable: true, cause: err }));
        };
        outgoing.once('response', (res) => {
          if (settled) {
            res.destroy();
            return;
          }
          settled = true;
          clearTimeout(firstByteTimer);
          clearTimeout(connectTimer);
          req.cancellation.unlisten();
          // From here on the response reports failures. Swapping the listener also lets this
          // closure (and the request body it holds) be collected while a long stream is open.
          outgoing.off('error', onError);
          outgoing.on('error', ignoreError);
          const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
          const decoder = decoderFor(encoding);
          if (decoder === 'unknown') {
            res.destroy();
            reject(upstreamFailed(`Provider "${req.provider.id}" answered with content-encoding "${encoding.slice(0, 40)}", which llmux cannot read`));
            return;
          }
          resolve(decoder === undefined ? res : decoded(res, decoder));
        });
        outgoing.on('error', onError);
        req.cancellation.listen(onAbort);
        if (settled) return;
        // Parts of a long body are written as they are (corked: one writev with the head); a short
        // one is cheaper joined than written part by part.
        const length = headers['content-length'] as number;
        if (typeof req.body === 'string' || Buffer.isBuffer(req.body)) {
          outgoing.end(req.body);
        } else if (length <= JOIN_PARTS_BELOW_BYTES) {
          outgoing.end(Buffer.concat(req.body, length));
        } else {
          for (const part of req.body) outgoing.write(part);
          outgoing.end();
        }
      });
    },
    close() {
      httpAgent.destroy();
      httpsAgent?.destroy();
    },
  };
}

/**
 * The headers as a flat name, value list: given an object, Node sets each with `setHeader` and the
 * request keeps them (a dictionary and a [name, value] array per header) for as long as it is open,
 * a whole stream; given a list, it writes them into the head and keeps none. The list has `host`
 * already (Node adds it only to an object).
 */
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

/** Errors of a request whose response has arrived surface on the response; this keeps them from crashing the process. */
function ignoreError(): void {}

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
 * The body of a response that has arrived whole and has not been read, else undefined. Only
 * Node's own response says so for certain: its parser sets `complete` as it pushes the end of the
 * body, so every byte is in the buffer (a decoder's `complete` is its source's, and its output may
 * still be coming). Reading the buffer to its end lets the response end, and its socket go back to
 * the pool, as reading it through events does.
 */
function arrivedBody(res: UpstreamResponse, maxBytes: number): Buffer | undefined {
  if (!(res instanceof http.IncomingMessage) || !res.complete || res.readableFlowing !== null || res.readableLength > maxBytes) return undefined;
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
