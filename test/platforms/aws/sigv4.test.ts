import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { signRequest, uriEncode, amzDate } from '../../../src/platforms/aws/sigv4.ts';
import type { SigV4Request } from '../../../src/platforms/aws/sigv4.ts';

const SUITE = fileURLToPath(new URL('../../fixtures/sigv4/', import.meta.url));

interface Context {
  credentials: { access_key_id: string; secret_access_key: string; token?: string };
  normalize: boolean;
  region: string;
  service: string;
  sign_body: boolean;
  timestamp: string;
  omit_session_token?: boolean;
}

/** A request.txt as the suite writes it: a request line, `Name:value` headers (folded lines start with spaces), a blank line, the body. */
function parseRequest(text: string): SigV4Request {
  const blank = text.indexOf('\n\n');
  const head = blank === -1 ? text : text.slice(0, blank);
  const body = blank === -1 ? '' : text.slice(blank + 2);
  const [requestLine = '', ...lines] = head.split('\n');
  const method = requestLine.slice(0, requestLine.indexOf(' '));
  const target = requestLine.slice(method.length + 1, requestLine.lastIndexOf(' HTTP/'));
  const q = target.indexOf('?');
  const headers: Record<string, string[]> = {};
  let last: string[] | undefined;
  for (const line of lines) {
    if (line === '') continue;
    if (/^\s/.test(line) && last !== undefined) {
      last[last.length - 1] += `\n${line}`;
      continue;
    }
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    last = headers[name] ?? (headers[name] = []);
    last.push(line.slice(colon + 1));
  }
  return { method, path: q === -1 ? target : target.slice(0, q), query: q === -1 ? '' : target.slice(q + 1), headers, body };
}

const cases = readdirSync(SUITE, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();

test('the whole v4 suite is here', () => {
  assert.equal(cases.length, 38);
});

for (const name of cases) {
  test(`AWS signing suite: ${name} signs as AWS does`, () => {
    const read = (file: string): string => readFileSync(join(SUITE, name, file), 'utf8');
    const context = JSON.parse(read('context.json')) as Context;
    const token = context.omit_session_token === true ? undefined : context.credentials.token;
    const signed = signRequest(parseRequest(read('request.txt')), {
      credentials: { accessKeyId: context.credentials.access_key_id, secretAccessKey: context.credentials.secret_access_key, sessionToken: token },
      region: context.region,
      service: context.service,
      timeMs: Date.parse(context.timestamp),
      contentSha256: context.sign_body,
      normalizePath: context.normalize,
    });
    assert.equal(signed.canonicalRequest, read('header-canonical-request.txt'));
    assert.equal(signed.stringToSign, read('header-string-to-sign.txt'));
    assert.equal(signed.signature, read('header-signature.txt').trim());
    const authorization = read('header-signed-request.txt').split('\n').find((line) => line.startsWith('Authorization:'));
    assert.equal(`Authorization:${signed.headers['authorization']}`, authorization);
  });
}

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const bedrockRequest = (headers: Record<string, string> = {}): SigV4Request => ({
  method: 'POST',
  path: '/model/anthropic.claude-sonnet-4-5-v1%3A0/invoke',
  headers: { host: 'bedrock-runtime.us-east-1.amazonaws.com', 'content-type': 'application/json', ...headers },
  body: '{"anthropic_version":"bedrock-2023-05-31","max_tokens":10,"messages":[]}',
});

test("a Bedrock model id's encoded colon is encoded again in the canonical path", () => {
  const signed = signRequest(bedrockRequest(), { credentials, region: 'us-east-1', service: 'bedrock', timeMs: Date.UTC(2025, 0, 2, 3, 4, 5) });
  assert.equal(signed.canonicalRequest.split('\n')[1], '/model/anthropic.claude-sonnet-4-5-v1%253A0/invoke');
  assert.match(signed.headers['authorization'] ?? '', /Credential=AKIDEXAMPLE\/20250102\/us-east-1\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=[0-9a-f]{64}$/);
  assert.equal(signed.headers['x-amz-date'], '20250102T030405Z');
});

test('a session token is sent and signed', () => {
  const signed = signRequest(bedrockRequest(), {
    credentials: { ...credentials, sessionToken: 'FQoGZXIvYXdzEXAMPLE//token+/=' },
    region: 'us-east-1',
    service: 'bedrock',
    timeMs: 0,
  });
  assert.equal(signed.headers['x-amz-security-token'], 'FQoGZXIvYXdzEXAMPLE//token+/=');
  assert.equal(signed.signedHeaders, 'content-type;host;x-amz-date;x-amz-security-token');
  assert.ok(signed.canonicalRequest.includes('\nx-amz-security-token:FQoGZXIvYXdzEXAMPLE//token+/=\n'));
});

test('the signature covers the exact body bytes', () => {
  const options = { credentials, region: 'us-east-1', service: 'bedrock', timeMs: 0 };
  const a = signRequest({ ...bedrockRequest(), body: '{"a":1}' }, options);
  const b = signRequest({ ...bedrockRequest(), body: '{"a": 1}' }, options);
  const c = signRequest({ ...bedrockRequest(), body: Buffer.from('{"a":1}') }, options);
  assert.notEqual(a.signature, b.signature);
  assert.equal(a.signature, c.signature);
  // A body sent in parts is signed over the bytes they make, in order.
  const d = signRequest({ ...bedrockRequest(), body: [Buffer.from('{"a"'), Buffer.from(':1}')] }, options);
  assert.equal(a.signature, d.signature);
});

test('headers that proxies change are never signed, and the body hash header is signed when asked', () => {
  const signed = signRequest(bedrockRequest({ 'User-Agent': 'llmux', Connection: 'keep-alive', Authorization: 'old' }), {
    credentials, region: 'us-east-1', service: 'bedrock', timeMs: 0, contentSha256: true,
  });
  assert.equal(signed.signedHeaders, 'content-type;host;x-amz-content-sha256;x-amz-date');
  assert.equal(signed.headers['x-amz-content-sha256'], createHash('sha256').update(bedrockRequest().body as string).digest('hex'));
  assert.ok(signed.canonicalRequest.endsWith(`\n${signed.headers['x-amz-content-sha256']}`));
});

test('URI encoding keeps only the unreserved characters', () => {
  assert.equal(uriEncode("a:b/c d~e!*'()ሴ%"), 'a%3Ab%2Fc%20d~e%21%2A%27%28%29%E1%88%B4%25');
  assert.equal(amzDate(Date.UTC(2015, 7, 30, 12, 36, 0)), '20150830T123600Z');
});
