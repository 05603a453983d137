import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createGoogleTokenSource, isReusable } from '../../../src/platforms/google/token-source.ts';
import type { GoogleTokenSourceOptions } from '../../../src/platforms/google/token-source.ts';
import { fetchText } from '../../../src/common/fetch-text.ts';
import type { FetchText, TextRequest, TextResponse } from '../../../src/common/fetch-text.ts';
import { createServiceAccount, startFakeGoogleOAuth } from '../../helpers/fake-google-oauth.ts';
import { createRefusals } from '../../helpers/refusals.ts';

const account = createServiceAccount();
const user = { client_id: '764086051850-llmux.apps.googleusercontent.com', client_secret: 'GOCSPX-clientSECRETvalue', refresh_token: '1//0gREFRESHtokenVALUE' };
let time = Date.UTC(2025, 5, 1, 12, 0, 0);
const fake = await startFakeGoogleOAuth({ serviceAccounts: [account], users: [user], now: () => time });
after(() => fake.close());

const KEY_PATH = '/secrets/sa.json';
const USER_PATH = '/home/u/.config/gcloud/application_default_credentials.json';
const fileMap: Record<string, string> = {
  [KEY_PATH]: JSON.stringify(account.keyFile(fake.tokenUrl)),
  [USER_PATH]: JSON.stringify({ type: 'authorized_user', ...user, quota_project_id: 'billing-project' }),
};
const readFile = async (path: string): Promise<string> => {
  const text = fileMap[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT ${path}`), { code: 'ENOENT' });
  return text;
};
/** Google's fixed token URL, sent to the fake instead. */
const toFake: FetchText = (request) => fetchText({ ...request, url: request.url.replace('https://oauth2.googleapis.com', fake.url) });

const sleeps: number[] = [];
const source = (options: Partial<GoogleTokenSourceOptions>) =>
  createGoogleTokenSource({ providerId: 'vertex', env: {}, homeDir: '/home/nobody', readFile, fetchText: toFake, now: () => time, sleep: async (ms) => { sleeps.push(ms); }, ...options });

const { refusal, messages: seenMessages } = createRefusals();

test("a service-account file's assertion is exchanged at its token_uri, with that token_uri as its audience", async () => {
  const before = fake.counts.jwtBearer;
  const s = source({ credentialsFile: KEY_PATH });
  const token = await s.token();
  assert.ok(fake.isIssued(token));
  assert.equal(fake.counts.jwtBearer, before + 1);
  const claims = fake.assertions.at(-1)?.claims;
  assert.equal(claims?.['aud'], fake.tokenUrl);
  assert.equal(claims?.['iss'], account.clientEmail);
  assert.equal(claims?.['scope'], 'https://www.googleapis.com/auth/cloud-platform');
  assert.match(fake.bodies.at(-1) ?? '', /^grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.deepEqual(await s.headers(), { authorization: `Bearer ${token}` });
  assert.deepEqual(await s.describe(), {
    ok: true, source: 'service-account', detail: `service account ${account.clientEmail} in ${KEY_PATH} (providers.vertex.credentials_file)`, expiresAtMs: time + fake.expiresInSeconds * 1000,
  });
});

test("an authorized_user file's refresh token is exchanged at Google's token URL, and its quota project is sent", async () => {
  const seen: TextRequest[] = [];
  const s = source({ env: { CLOUDSDK_CONFIG: '/home/u/.config/gcloud' }, fetchText: (r) => { seen.push(r); return toFake(r); } });
  const token = await s.token();
  assert.ok(fake.isIssued(token));
  assert.equal(seen[0]?.url, 'https://oauth2.googleapis.com/token');
  const form = new URLSearchParams(seen[0]?.body);
  assert.deepEqual(Object.fromEntries(form), { grant_type: 'refresh_token', ...user });
  assert.deepEqual(await s.headers(), { authorization: `Bearer ${token}`, 'x-goog-user-project': 'billing-project' });
  assert.equal((await s.describe() as { source: string }).source, 'authorized-user');
});

test('with no file anywhere, the metadata server at GCE_METADATA_HOST is asked with Metadata-Flavor: Google', async () => {
  const before = fake.counts.metadata;
  const s = source({ env: { GCE_METADATA_HOST: fake.metadataHost }, fetchText });
  assert.ok(fake.isIssued(await s.token()));
  assert.equal(fake.counts.metadata, before + 1);
  assert.deepEqual(await s.describe(), { ok: true, source: 'metadata-server', detail: `the default service account on the metadata server ${fake.metadataHost}`, expiresAtMs: time + fake.expiresInSeconds * 1000 });
});

test('a metadata answer without Metadata-Flavor: Google is not trusted', async () => {
  const impostor: FetchText = async () => ({ status: 200, headers: {}, body: '{"access_token":"ya29.impostor","expires_in":3599}' });
  const err = await refusal(source({ fetchText: impostor }).token());
  assert.match(err.message, /answered without Metadata-Flavor: Google/);
  assert.match(err.message, /metadata\.google\.internal/);
});

test('credentials_file comes before GOOGLE_APPLICATION_CREDENTIALS, which comes before gcloud\'s file', async () => {
  const seen: string[] = [];
  const spy: FetchText = (r) => { seen.push(new URLSearchParams(r.body).get('grant_type') ?? ''); return toFake(r); };
  await source({ credentialsFile: KEY_PATH, env: { GOOGLE_APPLICATION_CREDENTIALS: USER_PATH }, fetchText: spy }).token();
  await source({ env: { GOOGLE_APPLICATION_CREDENTIALS: KEY_PATH, CLOUDSDK_CONFIG: '/home/u/.config/gcloud' }, fetchText: spy }).token();
  await source({ homeDir: '/home/u', env: { GCE_METADATA_HOST: fake.metadataHost }, fetchText: spy }).token();
  assert.deepEqual(seen, ['urn:ietf:params:oauth:grant-type:jwt-bearer', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'refresh_token']);
});

test('a token is reused until less than five minutes or half its lifetime remain, whichever is smaller', () => {
  const hour = { obtainedAtMs: 0, expiresAtMs: 3600_000 };
  assert.equal(isReusable(hour, 3600_000 - 301_000), true);
  assert.equal(isReusable(hour, 3600_000 - 299_000), false);
  const short = { obtainedAtMs: 0, expiresAtMs: 300_000 };
  assert.equal(isReusable(short, 149_000), true);
  assert.equal(isReusable(short, 151_000), false);
});

test('the reuse rule holds over a real exchange with an injected clock', async () => {
  const start = time;
  const s = source({ credentialsFile: KEY_PATH });
  fake.expiresInSeconds = 3600;
  const first = await s.token();
  const count = fake.counts.jwtBearer;
  time = start + (3600 - 301) * 1000;
  assert.equal(await s.token(), first);
  assert.equal(fake.counts.jwtBearer, count);
  time = start + (3600 - 299) * 1000;
  const second = await s.token();
  assert.notEqual(second, first);
  assert.equal(fake.counts.jwtBearer, count + 1);

  fake.expiresInSeconds = 300;
  const shortStart = time = start + 10 * 3600_000;
  const short = await s.token();
  time = shortStart + 149_000;
  assert.equal(await s.token(), short);
  time = shortStart + 151_000;
  assert.notEqual(await s.token(), short);
  fake.expiresInSeconds = 3599;
});

test('an expired token is refreshed once for many concurrent requests', async () => {
  const s = source({ credentialsFile: KEY_PATH });
  await s.token();
  const before = fake.counts.jwtBearer;
  time += 2 * 3600_000;
  const tokens = await Promise.all(Array.from({ length: 40 }, () => s.token()));
  assert.equal(new Set(tokens).size, 1);
  assert.ok(fake.isIssued(tokens[0] ?? ''));
  assert.equal(fake.counts.jwtBearer, before + 1);
});

test('a refresh failing with 503 is retried with doubling delays; a 400 is not retried', async () => {
  sleeps.length = 0;
  const before = fake.counts.jwtBearer;
  fake.failNext(2, 503);
  assert.ok(fake.isIssued(await source({ credentialsFile: KEY_PATH }).token()));
  assert.equal(fake.counts.jwtBearer, before + 3);
  assert.deepEqual(sleeps, [250, 500]);

  sleeps.length = 0;
  fake.failNext(3, 503);
  const err = await refusal(source({ credentialsFile: KEY_PATH }).token());
  assert.equal(err.status, 502);
  assert.equal(err.code, 'upstream_auth_failed');
  assert.match(err.message, new RegExp(`Provider "vertex" could not be authorised: the token endpoint ${fake.tokenUrl.replace(/[./]/g, '\\$&')} answered HTTP 503 \\(internal_failure: failure injected by the test\\).*check providers\\.vertex\\.credentials_file \\(/secrets/sa\\.json\\)`));
  assert.deepEqual(sleeps, [250, 500]);

  sleeps.length = 0;
  fake.failNext(1, 400);
  await refusal(source({ credentialsFile: KEY_PATH }).token());
  assert.deepEqual(sleeps, []);
});

test('when a refresh fails but the old token has not expired, the old token is used', async () => {
  const s = source({ credentialsFile: KEY_PATH });
  const first = await s.token();
  time += 3600_000 - 200_000;
  fake.failNext(3, 500);
  assert.equal(await s.token(), first);
  time += 201_000;
  fake.failNext(3, 500);
  await refusal(s.token());
  assert.notEqual(await s.token(), first);
});

test('a key the token endpoint refuses is an error naming the setting and what Google said', async () => {
  const stranger = createServiceAccount('stranger@llmux-project.iam.gserviceaccount.com');
  fileMap['/secrets/stranger.json'] = JSON.stringify(stranger.keyFile(fake.tokenUrl));
  const err = await refusal(source({ env: { GOOGLE_APPLICATION_CREDENTIALS: '/secrets/stranger.json' } }).token());
  assert.match(err.message, /answered HTTP 400 \(invalid_grant: Invalid JWT: unknown issuer\).*check GOOGLE_APPLICATION_CREDENTIALS \(\/secrets\/stranger\.json\)/);
  assert.deepEqual(await source({ env: { GOOGLE_APPLICATION_CREDENTIALS: '/secrets/stranger.json' } }).describe(), { ok: false, reason: err.message });
});

test('a named file that is missing, not JSON, of another kind or with a bad key is an error naming it, never quoting it', async () => {
  fileMap['/secrets/garbage.json'] = `{"private_key": "${'K'.repeat(40)}SECRET-IN-FILE", oops`;
  fileMap['/secrets/external.json'] = JSON.stringify({ type: 'external_account', audience: 'x' });
  fileMap['/secrets/badkey.json'] = JSON.stringify({ ...account.keyFile(fake.tokenUrl), private_key: '-----BEGIN PRIVATE KEY-----\nSECRET-IN-FILE\n-----END PRIVATE KEY-----\n' });
  fileMap['/secrets/incomplete.json'] = JSON.stringify({ type: 'authorized_user', client_id: 'x' });
  const cases: [string, RegExp][] = [
    ['/secrets/none.json', /the credentials file \/secrets\/none\.json does not exist.*check GOOGLE_APPLICATION_CREDENTIALS/],
    ['/secrets/garbage.json', /\/secrets\/garbage\.json is not JSON/],
    ['/secrets/external.json', /holds credentials of type "external_account"; llmux reads service_account and authorized_user files/],
    ['/secrets/badkey.json', /the private_key in \/secrets\/badkey\.json is not a usable RSA private key/],
    ['/secrets/incomplete.json', /has no client_id, client_secret or refresh_token/],
  ];
  for (const [path, pattern] of cases) {
    const err = await refusal(source({ env: { GOOGLE_APPLICATION_CREDENTIALS: path } }).token());
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes('SECRET-IN-FILE'));
  }
  const unreadable = async (): Promise<string> => Promise.reject(Object.assign(new Error('EACCES'), { code: 'EACCES' }));
  assert.match((await refusal(source({ credentialsFile: KEY_PATH, readFile: unreadable }).token())).message, /cannot be read.*providers\.vertex\.credentials_file/);
  assert.match((await refusal(source({ readFile: unreadable }).token())).message, /gcloud's credentials file .* cannot be read/);
});

test('an endpoint that echoes the assertion, refresh token or client secret has them taken out before they are quoted', async () => {
  const echo: FetchText = async (request): Promise<TextResponse> => ({
    status: 400,
    headers: {},
    body: JSON.stringify({ error: 'invalid_grant', error_description: `bad request: ${request.body ?? ''}` }),
  });
  for (const options of [{ credentialsFile: KEY_PATH }, { env: { CLOUDSDK_CONFIG: '/home/u/.config/gcloud' } }]) {
    const err = await refusal(source({ ...options, fetchText: echo }).token());
    assert.match(err.message, /\[redacted\]/);
  }
  const down: FetchText = async () => { throw new Error('connect ECONNREFUSED'); };
  assert.match((await refusal(source({ fetchText: down, env: { GCE_METADATA_HOST: '127.0.0.1:9' } }).token())).message, /the metadata server 127\.0\.0\.1:9 did not answer \(connect ECONNREFUSED\).*GCE_METADATA_HOST/);
});

test('secrets() names the key, the last assertion and the last two access tokens, and no more over many refreshes', async () => {
  const s = source({ credentialsFile: KEY_PATH });
  assert.deepEqual(s.secrets(), []);
  const tokens: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    tokens.push(await s.token());
    time += 2 * 3600_000;
  }
  const secrets = s.secrets();
  assert.equal(secrets.length, 4);
  assert.equal(secrets[0], account.privateKeyPem);
  assert.match(secrets[1] ?? '', /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.deepEqual(secrets.slice(2), [tokens[3], tokens[2]]);
});

test('no private key, assertion, refresh token, client secret or access token appears in any error message', () => {
  assert.ok(seenMessages.length >= 12, `only ${seenMessages.length} messages`);
  const secrets = [user.client_secret, user.refresh_token, 'SECRET-IN-FILE', 'BEGIN PRIVATE KEY', 'ya29.', 'eyJ'];
  for (const message of seenMessages) for (const secret of secrets) assert.ok(!message.includes(secret), `${secret} in: ${message}`);
});
