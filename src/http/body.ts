/**
 * A bounded request-body reader: bytes are counted while they arrive, and past the limit the
 * request is answered with 413 without reading further.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError, invalidParameters, tooLarge } from '../errors.ts';

/**
 * Reads the whole body into one Buffer. Rejects with a 413 GatewayError as soon as the declared
 * `content-length` or the bytes received pass `maxBodyBytes`, and with a 400 if the client stops
 * sending midway. A body that stalls is the server's `requestTimeout` to end (a 408 from the
 * server's clientError handler), so no timer is set here per request.
 */
export function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > maxBodyBytes) {
      reject(tooLarge(maxBodyBytes));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        settled = true;
        cleanup();
        // Stop reading: the rest is never buffered. The socket is closed after the 413 is sent.
        req.pause();
        reject(tooLarge(maxBodyBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onAborted = (): void => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(new GatewayError(400, 'invalid_request_error', 'incomplete_body', 'The request body ended before it was complete'));
    };
    const onError = onAborted;
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/**
 * Parses a JSON body. Refuses invalid UTF-8 and non-object bodies with 400 invalid_parameters;
 * never throws anything but GatewayError. V8's JSON.parse is iterative, so deep nesting can't
 * overflow the stack here; the one recursive step that follows (serialising the upstream body)
 * answers a too-deep body with a 400 of its own.
 */
export function parseJsonBody(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw invalidParameters('the request body is empty; send a JSON object');
  const text = body.toString('utf8');
  // A replacement character that wasn't in the bytes means the bytes weren't UTF-8.
  if (text.includes('\uFFFD') && !body.includes(REPLACEMENT_BYTES)) throw invalidParameters('the request body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalidParameters(`the request body is not valid JSON (${(err as Error).message.slice(0, 200)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidParameters('the request body must be a JSON object');
  return value as Record<string, unknown>;
}

const REPLACEMENT_BYTES = Buffer.from('\uFFFD', 'utf8');
