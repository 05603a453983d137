/**
 * A fake Amazon Bedrock runtime: a real `node:http` server on 127.0.0.1, port 0, that checks what
 * Bedrock checks before it answers, and answers as Bedrock does.
 *
 * - Every request must carry a SigV4 signature (service `bedrock`, the fake's region) made with one
 *   of the fake's credentials over the exact bytes received: the fake recomputes it (path as it
 *   arrived on the wire, query, the signed headers, the raw body) and refuses a bad one with 403 and
 *   Bedrock's error shape (`x-amzn-errortype` + `{"message"}`). A credential with a session token
 *   must send it as `x-amz-security-token` and sign it. `x-amz-date` must be within 5 minutes of
 *   the fake's clock.
 * - InvokeModel (`POST /model/{id}/invoke`) answers a messages JSON body;
 *   InvokeModelWithResponseStream (`…/invoke-with-response-stream`) answers
 *   `application/vnd.amazon.eventstream` frames, each a `chunk` wrapping one messages event.
 *   The body must be a messages body for Bedrock: `anthropic_version: "bedrock-2023-05-31"`,
 *   no `model`, no `stream` (400 ValidationException otherwise, as Bedrock).
 * - Converse (`…/converse`) answers a whole Converse answer; ConverseStream (`…/converse-stream`)
 *   answers event-stream frames, one per event (`:event-type` its name, the payload its JSON, padded
 *   with `p` as Bedrock pads them). The body must be one Bedrock takes (./converse-validate.ts:
 *   alternating roles, well-formed content blocks, tool blocks only with a `toolConfig`, the
 *   `toolConfig` shape, and the refusals of a model family), else 400 ValidationException.
 * - Tests script answers (`script`, from the request body, e.g. a tool round trip), and queue
 *   faults: a throttle (429 ThrottlingException), any Bedrock error, or an exception frame after
 *   some events of a stream.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { signRequest } from '../../src/platforms/aws/sigv4.ts';
import type { AwsCredentials } from '../../src/platforms/aws/sigv4.ts';
import { encodeEventStreamMessage } from '../../src/platforms/aws/event-stream.ts';
import { converseEvents, converseWhole, messagesStream, messagesWhole } from './scripted-answers.ts';
import { converseRequestProblem } from './converse-validate.ts';
import type { ScriptedAnswer } from './scripted-answers.ts';
import { sseEvents } from './assemble.ts';
import { listenOnLoopback } from './loopback.ts';

export type BedrockOperation = 'invoke' | 'invoke-with-response-stream' | 'converse' | 'converse-stream';

export interface BedrockSeenRequest {
  operation: BedrockOperation;
  /** The model id, decoded from the path (`anthropic.claude-sonnet-4-5-v1:0`). */
  modelId: string;
  /** The path as it arrived on the wire. */
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: Record<string, unknown>;
  /** The access key id that signed it. */
  accessKeyId: string;
}

/** A fault the next model request gets instead of its answer. */
export type BedrockFault =
  | { kind: 'error'; status: number; type: string; message: string }
  | { kind: 'stream-exception'; afterEvents: number; exception: string; message: string };

export interface FakeBedrockOptions {
  credentials: AwsCredentials[];
  region?: string;
  /** The fake's clock for the 5-minute skew check (epoch ms); default the real one. */
  now?: () => number;
  /** The answer to a model request; default a short text answer. */
  script?: (body: Record<string, unknown>, seen: BedrockSeenRequest) => ScriptedAnswer;
}

export interface FakeBedrock {
  url: string;
  /** `host` as clients send it (127.0.0.1:port), for signing. */
  host: string;
  region: string;
  requests: BedrockSeenRequest[];
  /** Every refusal the fake made for a bad signature, with the reason (for test failure messages). */
  refusals: string[];
  faults: BedrockFault[];
  /** A throttle for each of the next `count` requests. */
  throttle(count?: number): void;
  close(): Promise<void>;
}

export const THROTTLE_MESSAGE = 'Too many requests, please wait before trying again.';
const SIGNATURE_MISMATCH = 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';
const MAX_SKEW_MS = 5 * 60 * 1000;
const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': 'fake-request' });
  res.end(body);
}

const stringHeaders = (values: Record<string, string>): Record<string, { type: 'string'; value: string }> =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { type: 'string' as const, value: v }]));

/** One `chunk` frame wrapping a messages event, padded as Bedrock pads them. */
export function chunkFrame(eventJson: string): Buffer {
  const payload = JSON.stringify({ bytes: Buffer.from(eventJson).toString('base64'), p: 'abcdefghijklmnop'.slice(0, 1 + (eventJson.length % 16)) });
  return encodeEventStreamMessage({ headers: stringHeaders({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }), payload });
}

/** One ConverseStream event frame: the event's JSON as its payload, padded as Bedrock pads them. */
export function converseFrame(eventType: string, payload: Record<string, unknown>): Buffer {
  const json = JSON.stringify({ ...payload, p: 'abcdefghijklmnopqrstuvwxyz'.slice(0, 1 + (eventType.length % 26)) });
  return encodeEventStreamMessage({ headers: stringHeaders({ ':event-type': eventType, ':content-type': 'application/json', ':message-type': 'event' }), payload: json });
}

/** An exception frame (`throttlingException`, `modelStreamErrorException`, …). */
export function exceptionFrame(exception: string, message: string): Buffer {
  return encodeEventStreamMessage({
    headers: stringHeaders({ ':exception-type': exception, ':content-type': 'application/json', ':message-type': 'exception' }),
    payload: JSON.stringify({ message }),
  });
}

/** Why a request's signature is refused, or undefined when it is good. */
function checkSignature(req: IncomingMessage, raw: Buffer, options: Required<Pick<FakeBedrockOptions, 'credentials' | 'region' | 'now'>>): { accessKeyId: string } | { status: number; type: string; message: string } {
  const authorization = req.headers['authorization'];
  if (authorization === undefined) return { status: 403, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const match = AUTHORIZATION.exec(authorization);
  if (match === null) return { status: 403, type: 'IncompleteSignatureException', message: 'Authorization header requires Credential, SignedHeaders and Signature' };
  const [, accessKeyId = '', day = '', region = '', service = '', signedHeaders = '', signature = ''] = match;
  const credentials = options.credentials.find((c) => c.accessKeyId === accessKeyId);
  if (credentials === undefined) return { status: 403, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  if (service !== 'bedrock' || region !== options.region) return { status: 403, type: 'InvalidSignatureException', message: `Credential should be scoped to a valid region and the service bedrock, not ${region}/${service}` };
  const date = req.headers['x-amz-date'];
  if (typeof date !== 'string' || !/^\d{8}T\d{6}Z$/.test(date) || date.slice(0, 8) !== day) return { status: 403, type: 'IncompleteSignatureException', message: 'x-amz-date is missing or does not match the credential scope' };
  const timeMs = Date.UTC(+date.slice(0, 4), +date.slice(4, 6) - 1, +date.slice(6, 8), +date.slice(9, 11), +date.slice(11, 13), +date.slice(13, 15));
  if (Math.abs(timeMs - options.now()) > MAX_SKEW_MS) return { status: 403, type: 'InvalidSignatureException', message: 'Signature expired: the request time is more than 5 minutes from the server time' };
  const signed = signedHeaders.split(';');
  const token = req.headers['x-amz-security-token'];
  if (credentials.sessionToken !== undefined) {
    if (token !== credentials.sessionToken) return { status: 403, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
    if (!signed.includes('x-amz-security-token')) return { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
  } else if (token !== undefined) {
    return { status: 403, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  if (!signed.includes('host')) return { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
  const headers: Record<string, string | string[]> = {};
  for (const name of signed) {
    if (name === 'x-amz-date' || name === 'x-amz-security-token' || name === 'x-amz-content-sha256') continue;
    const value = req.headers[name];
    if (value === undefined) return { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
    headers[name] = value;
  }
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  const expected = signRequest(
    { method: req.method ?? 'POST', path: q === -1 ? target : target.slice(0, q), query: q === -1 ? '' : target.slice(q + 1), headers, body: raw },
    {
      credentials: signed.includes('x-amz-security-token') ? credentials : { ...credentials, sessionToken: undefined },
      region,
      service,
      timeMs,
      contentSha256: signed.includes('x-amz-content-sha256'),
    },
  );
  if (expected.headers['x-amz-content-sha256'] !== undefined && req.headers['x-amz-content-sha256'] !== expected.headers['x-amz-content-sha256']) {
    return { status: 400, type: 'ValidationException', message: 'The provided x-amz-content-sha256 header does not match what was computed.' };
  }
  const good = expected.signedHeaders === signedHeaders && timingSafeEqual(Buffer.from(expected.signature), Buffer.from(signature));
  return good ? { accessKeyId } : { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
}

/** Starts the fake; close it when done. */
export async function startFakeBedrock(options: FakeBedrockOptions): Promise<FakeBedrock> {
  const region = options.region ?? 'us-east-1';
  const now = options.now ?? Date.now;
  const script = options.script ?? ((): ScriptedAnswer => ({ text: 'Hello from the Bedrock fake.' }));
  const requests: BedrockSeenRequest[] = [];
  const refusals: string[] = [];
  const faults: BedrockFault[] = [];

  const invoke = async (res: ServerResponse, seen: BedrockSeenRequest): Promise<void> => {
    const body = seen.body;
    const extraneous = ['model', 'stream'].find((key) => key in body);
    if (extraneous !== undefined) return sendError(res, 400, 'ValidationException', `Malformed input request: #: extraneous key [${extraneous}] is not permitted, please reformat your input and try again.`);
    if (body['anthropic_version'] !== 'bedrock-2023-05-31') return sendError(res, 400, 'ValidationException', 'Malformed input request: #/anthropic_version: bedrock-2023-05-31 is required');
    const fault = faults.shift();
    if (fault?.kind === 'error') return sendError(res, fault.status, fault.type, fault.message);
    const answer = script(body, seen);
    const whole = { ...messagesWhole(answer), id: `msg_bdrk_${requests.length}`, model: seen.modelId };
    if (seen.operation === 'invoke') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '12', 'x-amzn-bedrock-output-token-count': '7' });
      res.end(JSON.stringify(whole));
      return;
    }
    const events = sseEvents(messagesStream(answer)).map((event) => {
      const json = JSON.parse(event.data) as Record<string, unknown>;
      if (json['type'] === 'message_start') json['message'] = { ...(json['message'] as Record<string, unknown>), id: whole.id, model: seen.modelId };
      if (json['type'] === 'message_stop') json['amazon-bedrock-invocationMetrics'] = { inputTokenCount: 12, outputTokenCount: 7, invocationLatency: 120, firstByteLatency: 40 };
      return JSON.stringify(json);
    });
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-bedrock-content-type': 'application/json' });
    const cut = fault?.kind === 'stream-exception' ? Math.min(fault.afterEvents, events.length) : events.length;
    // One frame per event-loop turn, so a client reads them in as many pieces as the network gives.
    for (const event of events.slice(0, cut)) {
      if (res.destroyed) return;
      res.write(chunkFrame(event));
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (fault?.kind === 'stream-exception') res.write(exceptionFrame(fault.exception, fault.message));
    res.end();
  };

  /** Converse and ConverseStream: the body checked as Bedrock checks it, then the scripted answer. */
  const converse = async (res: ServerResponse, seen: BedrockSeenRequest): Promise<void> => {
    const problem = converseRequestProblem(seen.body, seen.modelId);
    if (problem !== undefined) return sendError(res, 400, 'ValidationException', problem);
    const fault = faults.shift();
    if (fault?.kind === 'error') return sendError(res, fault.status, fault.type, fault.message);
    const answer = script(seen.body, seen);
    if (seen.operation === 'converse') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': 'fake-request' });
      res.end(JSON.stringify(converseWhole(answer)));
      return;
    }
    const events = converseEvents(answer);
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'fake-request' });
    const cut = fault?.kind === 'stream-exception' ? Math.min(fault.afterEvents, events.length) : events.length;
    for (const [eventType, payload] of events.slice(0, cut)) {
      if (res.destroyed) return;
      res.write(converseFrame(eventType, payload));
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (fault?.kind === 'stream-exception') res.write(exceptionFrame(fault.exception, fault.message));
    res.end();
  };

  const server = http.createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const raw = Buffer.concat(pieces);
      const checked = checkSignature(req, raw, { credentials: options.credentials, region, now });
      if (!('accessKeyId' in checked)) {
        refusals.push(`${checked.type}: ${checked.message}`);
        return sendError(res, checked.status, checked.type, checked.message);
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const route = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|converse|converse-stream)$/.exec(path);
      if (req.method !== 'POST' || route === null) return sendError(res, 404, 'UnknownOperationException', `No operation at ${req.method} ${path}`);
      let body: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(raw.toString('utf8'));
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        return sendError(res, 400, 'ValidationException', 'Malformed input request, please reformat your input and try again.');
      }
      const seen: BedrockSeenRequest = {
        operation: route[2] as BedrockOperation,
        modelId: decodeURIComponent(route[1] ?? ''),
        path,
        headers: req.headers,
        raw,
        body,
        accessKeyId: checked.accessKeyId,
      };
      requests.push(seen);
      if (seen.operation === 'converse' || seen.operation === 'converse-stream') return void converse(res, seen);
      void invoke(res, seen);
    });
  });
  const { port, url, close } = await listenOnLoopback(server);
  return {
    url,
    host: `127.0.0.1:${port}`,
    region,
    requests,
    refusals,
    faults,
    throttle(count = 1) {
      for (let i = 0; i < count; i += 1) faults.push({ kind: 'error', status: 429, type: 'ThrottlingException', message: THROTTLE_MESSAGE });
    },
    close,
  };
}
