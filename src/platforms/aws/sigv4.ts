/**
 * AWS Signature Version 4 over a request's exact bytes (AWS's "Create a signed AWS API request",
 * checked against AWS's published signing test suite in test/fixtures/sigv4/).
 *
 * The rules implementations get wrong, kept here on purpose:
 * - The canonical path is the path as it goes on the wire with each segment URI-encoded once
 *   more: every service but S3 double-encodes. A Bedrock model id's `:` is sent as `%3A`
 *   (`/model/anthropic.claude-sonnet-4-5-v1%3A0/invoke`) and signed as `%253A`.
 * - The path is normalised first (empty, `.` and `..` segments), as every service but S3 expects.
 * - A session token is sent as `x-amz-security-token` and signed: a temporary credential whose
 *   token is left out of SignedHeaders is refused.
 * - Header values are trimmed and inner runs of whitespace (folded lines included) become one
 *   space; a repeated header's values are joined with `,` in the order sent.
 *
 * Headers that proxies and clients change on the way (the AWS SDKs' "unsignable" list: `user-agent`,
 * `connection`, …) are never signed, whatever the caller passes.
 */
import { createHash, createHmac } from 'node:crypto';

/** AWS credentials as the signer needs them. Temporary ones carry a session token and an expiry. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  /** When temporary credentials stop working (epoch ms); undefined for long-term keys. */
  expiresAtMs?: number | undefined;
}

/** The parts of a request that are signed, as they will be sent. */
export interface SigV4Request {
  method: string;
  /** The path exactly as it goes on the wire (already percent-encoded as sent), without the query. */
  path: string;
  /** The query string as sent, without `?` ('' or omitted for none). */
  query?: string;
  /**
   * The headers to sign, names in any case; `host` must be among them, as sent (with the port
   * when it is not the scheme's default). A repeated header is an array of its values in order.
   */
  headers: Readonly<Record<string, string | readonly string[]>>;
  /** The exact body bytes that will be sent ('' for none), or its parts in the order they are sent. */
  body: Uint8Array | string | readonly Uint8Array[];
}

export interface SigV4Options {
  credentials: AwsCredentials;
  region: string;
  /** The signing name: `bedrock` for Bedrock's runtime. */
  service: string;
  /** The signing time, epoch ms (AWS refuses a signature more than 5 minutes off its clock). */
  timeMs: number;
  /** Also send and sign `x-amz-content-sha256` (S3 needs it; Bedrock accepts it). Default false. */
  contentSha256?: boolean;
  /** Normalise the path before signing (every service but S3). Default true. */
  normalizePath?: boolean;
}

export interface SigV4Signature {
  /** The headers to add to the request: `authorization`, `x-amz-date`, and `x-amz-security-token` / `x-amz-content-sha256` when used. */
  headers: Record<string, string>;
  /** `host;x-amz-date;…`: the names signed, sorted. */
  signedHeaders: string;
  signature: string;
  /** The intermediate texts, for tests and for a fake that explains a refusal. */
  canonicalRequest: string;
  stringToSign: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';

/** The AWS SDKs' headers that are never signed (smithy's ALWAYS_UNSIGNABLE_HEADERS). */
const UNSIGNABLE = new Set([
  'authorization', 'cache-control', 'connection', 'expect', 'from', 'keep-alive', 'max-forwards', 'pragma',
  'referer', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'x-amzn-trace-id',
]);

/** RFC 3986 unreserved characters, which AWS's URI encoding leaves as they are. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const HEX = '0123456789ABCDEF';

/** AWS's URI encoding: every UTF-8 byte but the unreserved ones as `%XX`, upper-case hex. */
export function uriEncode(text: string): string {
  let out = '';
  for (const char of text) {
    if (UNRESERVED.test(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) out += `%${HEX[byte >> 4]}${HEX[byte & 15]}`;
  }
  return out;
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    // Not valid percent-encoding: sign what was sent.
    return text;
  }
}

function sha256Hex(data: Uint8Array | string | readonly Uint8Array[]): string {
  const hash = createHash('sha256');
  if (typeof data === 'string' || data instanceof Uint8Array) hash.update(data);
  else for (const part of data) hash.update(part);
  return hash.digest('hex');
}

function hmac(key: Uint8Array | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/** `20150830T123600Z` for a time in epoch ms. */
export function amzDate(timeMs: number): string {
  return new Date(timeMs).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

function canonicalPath(path: string, normalize: boolean): string {
  if (path === '') return '/';
  let segments = path.split('/');
  if (normalize) {
    const kept: string[] = [];
    for (const segment of segments) {
      if (segment === '' || segment === '.') continue;
      if (segment === '..') kept.pop();
      else kept.push(segment);
    }
    const trailing = kept.length > 0 && path.endsWith('/');
    segments = ['', ...kept, ...(trailing ? [''] : [])];
    if (kept.length === 0) return '/';
  }
  return segments.map(uriEncode).join('/');
}

function canonicalQuery(query: string): string {
  if (query === '') return '';
  const pairs: [string, string][] = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    const value = eq === -1 ? '' : part.slice(eq + 1);
    pairs.push([uriEncode(decodeComponent(key)), uriEncode(decodeComponent(value))]);
  }
  pairs.sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0));
  return pairs.map(([key, value]) => `${key}=${value}`).join('&');
}

function canonicalValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}

/** The derived key for one day, region and service. */
export function signingKey(secretAccessKey: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service), 'aws4_request');
}

/**
 * Signs a request: returns the headers to add (and what was signed). The caller sends exactly the
 * path, query, signed headers and body it passed, plus the returned headers.
 */
export function signRequest(request: SigV4Request, options: SigV4Options): SigV4Signature {
  const { credentials, region, service } = options;
  const date = amzDate(options.timeMs);
  const day = date.slice(0, 8);
  const payloadHash = sha256Hex(request.body);

  const added: Record<string, string> = { 'x-amz-date': date };
  const sessionToken = credentials.sessionToken;
  if (sessionToken !== undefined && sessionToken !== '') added['x-amz-security-token'] = sessionToken;
  if (options.contentSha256 === true) added['x-amz-content-sha256'] = payloadHash;

  const values = new Map<string, string[]>();
  for (const [name, value] of Object.entries(request.headers)) {
    const key = name.toLowerCase();
    if (UNSIGNABLE.has(key) || key in added) continue;
    const list = values.get(key) ?? [];
    if (typeof value === 'string') list.push(value);
    else list.push(...value);
    values.set(key, list);
  }
  for (const [name, value] of Object.entries(added)) values.set(name, [value]);
  const names = [...values.keys()].sort();
  const headerLines = names.map((name) => `${name}:${(values.get(name) ?? []).map(canonicalValue).join(',')}\n`).join('');
  const signedHeaders = names.join(';');

  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalPath(request.path, options.normalizePath ?? true),
    canonicalQuery(request.query ?? ''),
    headerLines,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = `${ALGORITHM}\n${date}\n${scope}\n${sha256Hex(canonicalRequest)}`;
  const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, day, region, service)).update(stringToSign, 'utf8').digest('hex');

  return {
    headers: {
      ...added,
      authorization: `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    },
    signedHeaders,
    signature,
    canonicalRequest,
    stringToSign,
  };
}
