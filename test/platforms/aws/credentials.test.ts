import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAwsCredentialChain } from '../../../src/platforms/aws/credentials.ts';
import type { AwsCredentialChainOptions } from '../../../src/platforms/aws/credentials.ts';
import { createRefusals } from '../../helpers/refusals.ts';
import type { TextRequest, TextResponse } from '../../../src/common/fetch-text.ts';

const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYzzSECRET';
const TOKEN = 'IQoJb3JpZ2luX2VjEXAMPLEsessiontoken==';
const IMDS_TOKEN = 'AQAEAimdsTOKENvalue==';
const CONTAINER_TOKEN = 'Bearer containerAUTHtoken';

type Answer = TextResponse | Error | ((request: TextRequest) => TextResponse | Promise<TextResponse>);

/** A FetchText that answers from a table keyed by "METHOD url" and keeps every request. */
function fakeFetch(table: Record<string, Answer>): { fetchText: (r: TextRequest) => Promise<TextResponse>; requests: TextRequest[] } {
  const requests: TextRequest[] = [];
  return {
    requests,
    fetchText: async (request) => {
      requests.push(request);
      const answer = table[`${request.method} ${request.url}`];
      if (answer === undefined) throw new Error('connect ECONNREFUSED');
      if (answer instanceof Error) throw answer;
      return typeof answer === 'function' ? answer(request) : answer;
    },
  };
}

const ok = (body: unknown): TextResponse => ({ status: 200, headers: {}, body: typeof body === 'string' ? body : JSON.stringify(body) });
const temporary = (id: string, expiration: string): TextResponse =>
  ok({ Code: 'Success', AccessKeyId: id, SecretAccessKey: SECRET, Token: TOKEN, Expiration: expiration });

function files(map: Record<string, string>): (path: string) => Promise<string> {
  return async (path) => {
    const text = map[path];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return text;
  };
}

const chain = (options: Partial<AwsCredentialChainOptions>) =>
  createAwsCredentialChain({ providerId: 'bedrock-us', env: {}, homeDir: '/home/u', readFile: files({}), fetchText: fakeFetch({}).fetchText, ...options });

/** Every message an error path produced, to search for secrets at the end. */
const { refusal, messages: seenMessages } = createRefusals();

test("the provider's credentials come first, literal or env:NAME, over every other source", async () => {
  const env = { AWS_ACCESS_KEY_ID: 'AKIAENV', AWS_SECRET_ACCESS_KEY: 'envsecret', MY_SECRET: SECRET, MY_TOKEN: TOKEN };
  const c = chain({ env, credentials: { access_key_id: 'AKIACONFIG', secret_access_key: 'env:MY_SECRET', session_token: 'env:MY_TOKEN' } });
  assert.deepEqual(await c.get(), { accessKeyId: 'AKIACONFIG', secretAccessKey: SECRET, sessionToken: TOKEN });
  assert.deepEqual(await c.describe(), { ok: true, source: 'config', detail: 'providers.bedrock-us.credentials in the llmux config' });
});

test('a configured credential naming an unset variable is a 502 upstream_auth_failed naming the variable, not a fall-through', async () => {
  const c = chain({ env: { AWS_ACCESS_KEY_ID: 'AKIAENV', AWS_SECRET_ACCESS_KEY: SECRET }, credentials: { access_key_id: 'AKIACONFIG', secret_access_key: 'env:MISSING_SECRET' } });
  const err = await refusal(c.get());
  assert.equal(err.status, 502);
  assert.equal(err.type, 'api_error');
  assert.equal(err.code, 'upstream_auth_failed');
  assert.match(err.message, /Provider "bedrock-us".*providers\.bedrock-us\.credentials\.secret_access_key names the environment variable MISSING_SECRET/);
  assert.match((await c.describe() as { reason: string }).reason, /MISSING_SECRET/);
  await refusal(chain({ credentials: { secret_access_key: SECRET } }).get());
});

test("the provider's profile is read from the shared credentials file, before the AWS_* variables", async () => {
  const file = '[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = x\n\n[dev]\n# a comment\naws_access_key_id=AKIADEV\naws_secret_access_key = devsecret\naws_session_token = devtoken\ns3 =\n  max_concurrent_requests = 2\n';
  const c = chain({ profile: 'dev', env: { AWS_ACCESS_KEY_ID: 'AKIAENV', AWS_SECRET_ACCESS_KEY: 'e', AWS_SHARED_CREDENTIALS_FILE: '/etc/aws/creds' }, readFile: files({ '/etc/aws/creds': file }) });
  assert.deepEqual(await c.get(), { accessKeyId: 'AKIADEV', secretAccessKey: 'devsecret', sessionToken: 'devtoken' });
  assert.deepEqual(await c.describe(), { ok: true, source: 'profile', detail: 'profile "dev" in /etc/aws/creds' });
});

test("a provider profile that is missing, or that assumes a role, is an error naming the profile and the file", async () => {
  const readFile = files({ '/home/u/.aws/credentials': `[ops]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n[half]\naws_access_key_id = AKIA\n` });
  assert.match((await refusal(chain({ profile: 'nope', readFile }).get())).message, /\/home\/u\/\.aws\/credentials has no profile "nope".*providers\.bedrock-us\.profile/);
  assert.match((await refusal(chain({ profile: 'ops', readFile }).get())).message, /profile "ops" uses role_arn, which llmux does not support/);
  assert.match((await refusal(chain({ profile: 'half', readFile }).get())).message, /profile "half" has no aws_access_key_id and aws_secret_access_key/);
  assert.match((await refusal(chain({ profile: 'dev' }).get())).message, /there is no shared credentials file \/home\/u\/\.aws\/credentials/);
});

test('the AWS_* variables come before AWS_PROFILE in the shared file', async () => {
  const env = { AWS_ACCESS_KEY_ID: 'AKIAENV', AWS_SECRET_ACCESS_KEY: SECRET, AWS_SESSION_TOKEN: TOKEN, AWS_CREDENTIAL_EXPIRATION: '2030-01-01T00:00:00Z', AWS_PROFILE: 'dev' };
  const c = chain({ env, readFile: files({ '/home/u/.aws/credentials': '[dev]\naws_access_key_id=AKIADEV\naws_secret_access_key=d\n' }) });
  assert.deepEqual(await c.get(), { accessKeyId: 'AKIAENV', secretAccessKey: SECRET, sessionToken: TOKEN, expiresAtMs: Date.parse('2030-01-01T00:00:00Z') });
  assert.deepEqual(await c.describe(), { ok: true, source: 'environment', detail: 'the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN variables' });
});

test('half of the AWS_* pair is an error saying which one is missing', async () => {
  assert.match((await refusal(chain({ env: { AWS_SECRET_ACCESS_KEY: SECRET } }).get())).message, /AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not/);
  assert.match((await refusal(chain({ env: { AWS_ACCESS_KEY_ID: 'AKIA' } }).get())).message, /AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not/);
});

test('AWS_PROFILE, else default, in ~/.aws/credentials; an AWS_PROFILE the file lacks is an error', async () => {
  const readFile = files({ '/home/u/.aws/credentials': '[default]\naws_access_key_id=AKIADEFAULT\naws_secret_access_key=s\n[work]\naws_access_key_id=AKIAWORK\naws_secret_access_key=w\n' });
  assert.equal((await chain({ readFile }).get()).accessKeyId, 'AKIADEFAULT');
  assert.equal((await chain({ readFile, env: { AWS_PROFILE: 'work' } }).get()).accessKeyId, 'AKIAWORK');
  assert.deepEqual(await chain({ readFile, env: { AWS_PROFILE: 'work' } }).describe(), { ok: true, source: 'shared-file', detail: 'profile "work" in /home/u/.aws/credentials' });
  assert.match((await refusal(chain({ readFile, env: { AWS_PROFILE: 'gone' } }).get())).message, /has no profile "gone".*check AWS_PROFILE/);
  const home = files({ '/home/u/alt': '[default]\naws_access_key_id=AKIAALT\naws_secret_access_key=s\n' });
  assert.equal((await chain({ readFile: home, env: { AWS_SHARED_CREDENTIALS_FILE: '~/alt' } }).get()).accessKeyId, 'AKIAALT');
});

test('the container endpoint: the relative URI under 169.254.170.2 with the authorization token, as the SDKs ask', async () => {
  const fake = fakeFetch({ 'GET http://169.254.170.2/v2/credentials/5f1a-task': temporary('ASIACONTAINER', '2030-01-01T00:00:00Z') });
  const env = { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/5f1a-task', AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN };
  const c = chain({ env, fetchText: fake.fetchText });
  assert.deepEqual(await c.get(), { accessKeyId: 'ASIACONTAINER', secretAccessKey: SECRET, sessionToken: TOKEN, expiresAtMs: Date.parse('2030-01-01T00:00:00Z') });
  assert.equal(fake.requests[0]?.headers?.['authorization'], CONTAINER_TOKEN);
  assert.deepEqual(await c.describe(), {
    ok: true, source: 'container', detail: 'the container credentials endpoint at 169.254.170.2 (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)', expiresAtMs: Date.parse('2030-01-01T00:00:00Z'),
  });
});

test('the full container URI is used without a relative one, with the token file read on every fetch before the token', async () => {
  let fileToken = 'eks-token-1';
  const fake = fakeFetch({ 'GET http://169.254.170.23/v1/credentials': temporary('ASIAEKS', '2020-01-01T00:00:00Z') });
  const env = { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://169.254.170.23/v1/credentials', AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: '/var/run/token', AWS_CONTAINER_AUTHORIZATION_TOKEN: 'ignored' };
  const c = chain({ env, fetchText: fake.fetchText, readFile: async (path) => (path === '/var/run/token' ? `${fileToken}\n` : files({})(path)) });
  await c.get();
  fileToken = 'eks-token-2';
  await c.get();
  assert.deepEqual(fake.requests.map((r) => r.headers?.['authorization']), ['eks-token-1', 'eks-token-2']);
});

test('a full container URI that is plain http to another host is refused, as the SDKs refuse it', async () => {
  const err = await refusal(chain({ env: { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://evil.example.com/creds' } }).get());
  assert.match(err.message, /AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback/);
  for (const allowed of ['https://creds.example.com/x', 'http://127.0.0.1:8080/x', 'http://localhost/x', 'http://[::1]/x']) {
    const fake = fakeFetch({ [`GET ${new URL(allowed).href}`]: temporary('ASIA', '2030-01-01T00:00:00Z') });
    assert.equal((await chain({ env: { AWS_CONTAINER_CREDENTIALS_FULL_URI: allowed }, fetchText: fake.fetchText }).get()).accessKeyId, 'ASIA', allowed);
  }
});

test('a failing container endpoint is an error naming its host, never its path or token', async () => {
  const env = { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/secret-task-id', AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN };
  for (const answer of [{ status: 403, headers: {}, body: `denied ${CONTAINER_TOKEN}` }, ok('{"AccessKeyId": 1}'), ok('<html>'), new Error('timeout')] as Answer[]) {
    const fake = fakeFetch({ 'GET http://169.254.170.2/v2/credentials/secret-task-id': answer });
    const err = await refusal(chain({ env, fetchText: fake.fetchText }).get());
    assert.match(err.message, /container credentials endpoint at 169\.254\.170\.2/);
    assert.ok(!err.message.includes('secret-task-id'));
  }
});

function imds(base: string, expiration: string, counter = { token: 0, creds: 0 }): Record<string, Answer> {
  return {
    [`PUT ${base}/latest/api/token`]: (request) => {
      counter.token += 1;
      assert.equal(request.headers?.['x-aws-ec2-metadata-token-ttl-seconds'], '21600');
      return ok(IMDS_TOKEN);
    },
    [`GET ${base}/latest/meta-data/iam/security-credentials/`]: (request) => {
      assert.equal(request.headers?.['x-aws-ec2-metadata-token'], IMDS_TOKEN);
      return ok('llmux-role\n');
    },
    [`GET ${base}/latest/meta-data/iam/security-credentials/llmux-role`]: (request) => {
      counter.creds += 1;
      assert.equal(request.headers?.['x-aws-ec2-metadata-token'], IMDS_TOKEN);
      return temporary(`ASIAIMDS${counter.creds}`, expiration);
    },
  };
}

test("IMDSv2: a PUT for a token with its TTL header, then the role and its credentials with the token header", async () => {
  const fake = fakeFetch(imds('http://169.254.169.254', '2030-01-01T00:00:00Z'));
  const c = chain({ fetchText: fake.fetchText });
  assert.equal((await c.get()).accessKeyId, 'ASIAIMDS1');
  assert.deepEqual(fake.requests.map((r) => `${r.method} ${r.url}`), [
    'PUT http://169.254.169.254/latest/api/token',
    'GET http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    'GET http://169.254.169.254/latest/meta-data/iam/security-credentials/llmux-role',
  ]);
  assert.ok(fake.requests.every((r) => r.timeoutMs === 1000));
  assert.equal((await c.describe() as { detail: string }).detail, 'the EC2 instance metadata service (IMDSv2) at http://169.254.169.254');
});

test('AWS_EC2_METADATA_SERVICE_ENDPOINT overrides the IMDS address; the IPv6 mode picks the IPv6 one; it can be turned off', async () => {
  const fake = fakeFetch(imds('http://127.0.0.1:1338', '2030-01-01T00:00:00Z'));
  assert.equal((await chain({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:1338/' }, fetchText: fake.fetchText }).get()).accessKeyId, 'ASIAIMDS1');
  const six = fakeFetch(imds('http://[fd00:ec2::254]', '2030-01-01T00:00:00Z'));
  assert.equal((await chain({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: 'IPv6' }, fetchText: six.fetchText }).get()).accessKeyId, 'ASIAIMDS1');
  const off = fakeFetch({});
  const err = await refusal(chain({ env: { AWS_EC2_METADATA_DISABLED: 'true' }, fetchText: off.fetchText }).get());
  assert.match(err.message, /no AWS credentials found.*turned off \(AWS_EC2_METADATA_DISABLED\)/);
  assert.equal(off.requests.length, 0);
});

test('nothing found: one error listing every source tried and what to set', async () => {
  const err = await refusal(chain({}).get());
  assert.equal(err.code, 'upstream_auth_failed');
  assert.match(err.message, /no AWS credentials found \(AWS_ACCESS_KEY_ID \/ AWS_SECRET_ACCESS_KEY are not set; no "default" profile in \/home\/u\/\.aws\/credentials; no container credentials endpoint is set; the EC2 instance metadata service at http:\/\/169\.254\.169\.254 did not answer \(connect ECONNREFUSED\)\)/);
  assert.match(err.message, /providers\.bedrock-us\.credentials, providers\.bedrock-us\.profile, the AWS_\* environment variables, or the instance's IAM role/);
  const noRole = fakeFetch({ ...imds('http://169.254.169.254', '2030-01-01T00:00:00Z'), 'GET http://169.254.169.254/latest/meta-data/iam/security-credentials/': { status: 404, headers: {}, body: '' } });
  assert.match((await refusal(chain({ fetchText: noRole.fetchText }).get())).message, /answered HTTP 404/);
});

test('expired temporary credentials are refreshed once for many concurrent callers', async () => {
  let time = Date.parse('2025-06-01T12:00:00Z');
  const counter = { token: 0, creds: 0 };
  let expiration = '2025-06-01T13:00:00Z';
  const table = imds('http://169.254.169.254', '', counter);
  const credsKey = 'GET http://169.254.169.254/latest/meta-data/iam/security-credentials/llmux-role';
  const serve = table[credsKey] as (r: TextRequest) => TextResponse;
  table[credsKey] = async (request) => {
    await new Promise((r) => setImmediate(r));
    const answer = serve(request);
    return { ...answer, body: answer.body.replace('"Expiration":""', `"Expiration":"${expiration}"`) };
  };
  const c = chain({ fetchText: fakeFetch(table).fetchText, now: () => time });
  assert.equal((await c.get()).accessKeyId, 'ASIAIMDS1');
  time = Date.parse('2025-06-01T12:30:00Z');
  assert.equal((await c.get()).accessKeyId, 'ASIAIMDS1');
  assert.equal(counter.creds, 1, 'fresh credentials are reused');

  time = Date.parse('2025-06-01T13:00:01Z');
  expiration = '2025-06-01T14:00:00Z';
  const all = await Promise.all(Array.from({ length: 25 }, () => c.get()));
  assert.ok(all.every((creds) => creds.accessKeyId === 'ASIAIMDS2'));
  assert.equal(counter.creds, 2, 'one refresh for 25 callers');
  assert.equal(counter.token, 2);
});

test('inside the refresh margin the credentials are refreshed once for everyone, before they expire', async () => {
  let time = Date.parse('2025-06-01T12:00:00Z');
  const counter = { token: 0, creds: 0 };
  const c = chain({ fetchText: fakeFetch(imds('http://169.254.169.254', '2025-06-01T13:00:00Z', counter)).fetchText, now: () => time });
  await c.get();
  time = Date.parse('2025-06-01T12:54:59Z');
  assert.equal((await c.get()).accessKeyId, 'ASIAIMDS1', 'more than 5 minutes left');
  time = Date.parse('2025-06-01T12:56:00Z');
  const during = await Promise.all(Array.from({ length: 10 }, () => c.get()));
  assert.ok(during.every((creds) => creds.accessKeyId === 'ASIAIMDS2'));
  assert.equal(counter.creds, 2, 'one refresh for 10 callers');
});

test('a refresh that fails after the credentials expired is an error; before they expire the old ones are still used', async () => {
  let time = Date.parse('2025-06-01T12:00:00Z');
  let up = true;
  const table = imds('http://169.254.169.254', '2025-06-01T13:00:00Z');
  const put = table['PUT http://169.254.169.254/latest/api/token'] as (r: TextRequest) => TextResponse;
  table['PUT http://169.254.169.254/latest/api/token'] = (request) => {
    if (!up) throw new Error('no answer within 1000 ms');
    return put(request);
  };
  const c = chain({ fetchText: fakeFetch(table).fetchText, now: () => time });
  await c.get();
  up = false;
  time = Date.parse('2025-06-01T12:59:00Z');
  assert.equal((await c.get()).accessKeyId, 'ASIAIMDS1');
  time = Date.parse('2025-06-01T13:00:01Z');
  const err = await refusal(c.get());
  assert.match(err.message, /instance metadata service at http:\/\/169\.254\.169\.254 did not answer \(no answer within 1000 ms\)/);
  up = true;
  assert.equal((await c.get()).accessKeyId, 'ASIAIMDS2');
});


test('an unreadable shared file or container token file is an error naming the file', async () => {
  const denied = async (): Promise<string> => Promise.reject(Object.assign(new Error('EACCES'), { code: 'EACCES' }));
  assert.match((await refusal(chain({ readFile: denied }).get())).message, /the shared credentials file \/home\/u\/\.aws\/credentials cannot be read/);
  const env = { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/creds', AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: '/var/run/token' };
  assert.match((await refusal(chain({ env, readFile: files({}) }).get())).message, /the file AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE names \(\/var\/run\/token\) cannot be read/);
});

test('secrets() names the secret keys and session tokens in play, the last two credentials only', async () => {
  let time = Date.parse('2025-06-01T12:00:00Z');
  const c = chain({ fetchText: fakeFetch(imds('http://169.254.169.254', '2025-06-01T13:00:00Z')).fetchText, now: () => time });
  assert.deepEqual(c.secrets(), []);
  await c.get();
  assert.deepEqual(c.secrets(), [SECRET, TOKEN]);
  for (let i = 0; i < 5; i += 1) {
    time += 2 * 3600_000;
    await c.get().catch(() => undefined);
  }
  assert.equal(c.secrets().length, 4);
});

test("no secret, session token, IMDS token or container token appears in any error message", () => {
  assert.ok(seenMessages.length >= 15, `only ${seenMessages.length} messages seen`);
  for (const message of seenMessages) {
    for (const secret of [SECRET, TOKEN, IMDS_TOKEN, CONTAINER_TOKEN, 'containerAUTHtoken', 'envsecret']) assert.ok(!message.includes(secret), `${secret} in: ${message}`);
  }
});
