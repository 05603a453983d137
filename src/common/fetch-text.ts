/**
 * One small HTTP exchange whose answer is text: what the cloud platforms' credential and token
 * endpoints need (the container credentials endpoint, the EC2 instance metadata service, OAuth
 * token endpoints, Google's metadata server). Not for model traffic, which streams.
 *
 * A deadline covers the whole exchange (connect, send, answer), as the AWS SDKs' 1-second
 * metadata timeout does, and an answer is read to at most `maxResponseBytes`: a credential endpoint
 * that hangs or floods cannot hold a request or memory. Platform modules take a {@link FetchText}
 * as an option so tests can answer in its place.
 */
import { requestFor } from './builtins.ts';

export interface TextRequest {
  method: 'GET' | 'PUT' | 'POST';
  url: string;
  headers?: Readonly<Record<string, string>>;
  body?: string;
  /** The whole exchange's deadline. */
  timeoutMs: number;
  /** Largest answer read; default 1 MiB. */
  maxResponseBytes?: number;
}

export interface TextResponse {
  status: number;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: string;
}

/** Sends a request and reads its whole answer; rejects on a network error, the deadline, or an answer over the limit. */
export type FetchText = (request: TextRequest) => Promise<TextResponse>;

const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** The real {@link FetchText}, over `node:http` and `node:https` (no keep-alive: these exchanges are rare). */
export const fetchText: FetchText = (request) =>
  new Promise<TextResponse>((resolve, reject) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      reject(new Error('not a valid URL'));
      return;
    }
    const maxBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const headers: Record<string, string> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
    let settled = false;
    const finish = (error: Error | undefined, response?: TextResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error !== undefined) {
        req.destroy();
        reject(error);
      } else if (response !== undefined) resolve(response);
    };
    const req = requestFor(url)(url, { method: request.method, headers, agent: false }, (res) => {
      const pieces: Buffer[] = [];
      let size = 0;
      res.on('data', (piece: Buffer) => {
        size += piece.length;
        if (size > maxBytes) finish(new Error(`answer is over ${maxBytes} bytes`));
        else pieces.push(piece);
      });
      res.on('end', () => finish(undefined, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(pieces).toString('utf8') }));
      res.on('error', (err) => finish(err));
    });
    const timer = setTimeout(() => finish(new Error(`no answer within ${request.timeoutMs} ms`)), request.timeoutMs);
    req.on('error', (err) => finish(err));
    req.end(request.body);
  });
