import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { fetchText } from '../../src/common/fetch-text.ts';
import { serviceAccountAssertion, signJwt } from '../../src/platforms/google/jwt.ts';
import { createServiceAccount, startFakeGoogleOAuth } from './fake-google-oauth.ts';

const account = createServiceAccount();
const user = { client_id: 'cid', client_secret: 'csecret', refresh_token: 'rtoken' };
const fake = await startFakeGoogleOAuth({ serviceAccounts: [account], users: [user] });
after(() => fake.close());

const post = (form: Record<string, string>) =>
  fetchText({ method: 'POST', url: fake.tokenUrl, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString(), timeoutMs: 2000 });
const jwtBearer = (assertion: string) => post({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
const assertion = (overrides: Partial<Parameters<typeof serviceAccountAssertion>[0]> = {}) =>
  serviceAccountAssertion({ clientEmail: account.clientEmail, privateKeyPem: account.privateKeyPem, privateKeyId: account.privateKeyId, tokenUri: fake.tokenUrl, nowMs: Date.now(), ...overrides });

test('a valid assertion gets an access token the fake knows it issued', async () => {
  const answer = await jwtBearer(assertion());
  assert.equal(answer.status, 200);
  const body = JSON.parse(answer.body) as { access_token: string; expires_in: number; token_type: string };
  assert.equal(body.token_type, 'Bearer');
  assert.equal(body.expires_in, 3599);
  assert.ok(fake.isIssued(body.access_token));
  assert.ok(!fake.isIssued('ya29.other'));
});

test('an assertion signed by another key, for another audience, expired, or from a stranger is refused as invalid_grant', async () => {
  const other = createServiceAccount(account.clientEmail);
  const expired = Date.now() - 2 * 3600_000;
  const cases: [string, string, RegExp][] = [
    ['other key', assertion({ privateKeyPem: other.privateKeyPem, privateKeyId: undefined }), /Invalid JWT Signature/],
    ['other audience', assertion({ tokenUri: 'https://oauth2.googleapis.com/token' }), /aud must be/],
    ['expired', assertion({ nowMs: expired }), /short-lived token/],
    ['stranger', assertion({ clientEmail: 'nobody@x' }), /unknown issuer/],
    ['not a JWT', 'abc', /not a JWS/],
    ['HS256', signJwt({ alg: 'HS256' }, { iss: account.clientEmail }, account.privateKeyPem), /alg must be RS256/],
  ];
  for (const [what, jwt, reason] of cases) {
    const answer = await jwtBearer(jwt);
    assert.equal(answer.status, 400, what);
    const body = JSON.parse(answer.body) as { error: string; error_description: string };
    assert.equal(body.error, 'invalid_grant', what);
    assert.match(body.error_description, reason, what);
  }
});

test('the refresh grant needs the client and refresh token the fake knows', async () => {
  assert.equal((await post({ grant_type: 'refresh_token', ...user })).status, 200);
  assert.equal((await post({ grant_type: 'refresh_token', ...user, client_secret: 'x' })).status, 401);
  assert.equal((await post({ grant_type: 'refresh_token', ...user, refresh_token: 'x' })).status, 400);
  assert.equal((await post({ grant_type: 'password' })).status, 400);
});

test('the metadata server needs Metadata-Flavor: Google and answers with it; failures can be injected', async () => {
  const url = `http://${fake.metadataHost}/computeMetadata/v1/instance/service-accounts/default/token`;
  assert.equal((await fetchText({ method: 'GET', url, timeoutMs: 2000 })).status, 403);
  const answer = await fetchText({ method: 'GET', url, headers: { 'metadata-flavor': 'Google' }, timeoutMs: 2000 });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers['metadata-flavor'], 'Google');
  fake.failNext(1, 503);
  assert.equal((await fetchText({ method: 'GET', url, headers: { 'metadata-flavor': 'Google' }, timeoutMs: 2000 })).status, 503);
  assert.ok(fake.counts.metadata >= 3);
});
