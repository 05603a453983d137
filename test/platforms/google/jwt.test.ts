import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verify } from 'node:crypto';
import { CLOUD_PLATFORM_SCOPE, serviceAccountAssertion, signJwt } from '../../../src/platforms/google/jwt.ts';
import { createServiceAccount } from '../../helpers/fake-google-oauth.ts';

const account = createServiceAccount();
const decode = (part: string | undefined): Record<string, unknown> => JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;

test("a service account's assertion is an RS256 JWT its public key verifies, with the claims Google requires", () => {
  const nowMs = Date.UTC(2025, 5, 1, 12, 0, 0, 789);
  const jwt = serviceAccountAssertion({ clientEmail: account.clientEmail, privateKeyPem: account.privateKeyPem, privateKeyId: account.privateKeyId, tokenUri: 'https://oauth2.googleapis.com/token', nowMs });
  const [header, claims, signature] = jwt.split('.');
  assert.deepEqual(decode(header), { alg: 'RS256', typ: 'JWT', kid: account.privateKeyId });
  const iat = Math.floor(nowMs / 1000);
  assert.deepEqual(decode(claims), { iss: account.clientEmail, scope: CLOUD_PLATFORM_SCOPE, aud: 'https://oauth2.googleapis.com/token', iat, exp: iat + 3600 });
  assert.ok(verify('sha256', Buffer.from(`${header}.${claims}`), account.publicKeyPem, Buffer.from(signature ?? '', 'base64url')));
  assert.ok(!/[+/=]/.test(jwt), 'base64url without padding');
});

test('the audience is the token_uri the assertion is sent to, and another key does not verify it', () => {
  const jwt = serviceAccountAssertion({ clientEmail: 'a@b', privateKeyPem: account.privateKeyPem, tokenUri: 'http://127.0.0.1:9/token', scope: 'x', nowMs: 0 });
  const [header, claims, signature] = jwt.split('.');
  assert.equal(decode(claims)['aud'], 'http://127.0.0.1:9/token');
  assert.equal(decode(header)['kid'], undefined);
  const other = createServiceAccount('other@x');
  assert.ok(!verify('sha256', Buffer.from(`${header}.${claims}`), other.publicKeyPem, Buffer.from(signature ?? '', 'base64url')));
});

test('a private key that is not PEM throws without quoting it', () => {
  assert.throws(() => signJwt({ alg: 'RS256' }, {}, '-----BEGIN PRIVATE KEY-----\nnot-a-key-SECRETBYTES\n-----END PRIVATE KEY-----\n'), (err: Error) => !err.message.includes('SECRETBYTES'));
});
