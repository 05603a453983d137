/**
 * `llmux doctor`'s checks of the cloud platforms (src/doctor/providers.ts), against the fakes: where
 * credentials came from (never a value), and each platform's cheapest authenticated call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diagnose } from '../../src/doctor/doctor.ts';
import type { CheckResult, DoctorReport } from '../../src/doctor/report.ts';
import { loadConfig } from '../../src/config/load.ts';
import { startFakeBedrock } from '../helpers/fake-bedrock.ts';
import type { FakeBedrock } from '../helpers/fake-bedrock.ts';
import { createServiceAccount, startFakeGoogleOAuth } from '../helpers/fake-google-oauth.ts';
import type { FakeGoogleOAuth } from '../helpers/fake-google-oauth.ts';
import { startFakeAzure } from '../helpers/fake-azure.ts';
import type { FakeAzure } from '../helpers/fake-azure.ts';

const SECRET = 'doctorSECRETaccessKEY0123456789abcdefGHIJ';
const AZURE_KEY = 'doctor-azure-key-0123456789';
const account = createServiceAccount();
let bedrock: FakeBedrock;
let oauth: FakeGoogleOAuth;
let azure: FakeAzure;
let dir: string;

before(async () => {
  bedrock = await startFakeBedrock({ credentials: [{ accessKeyId: 'AKIADOCTOR', secretAccessKey: SECRET }] });
  oauth = await startFakeGoogleOAuth({ serviceAccounts: [account] });
  azure = await startFakeAzure({ apiKey: AZURE_KEY, deployments: ['gpt-4o'] });
  dir = mkdtempSync(join(tmpdir(), 'llmux-doctor-platforms-'));
  writeFileSync(join(dir, 'sa.json'), JSON.stringify(account.keyFile(oauth.tokenUrl)));
});

after(async () => {
  await bedrock.close();
  await oauth.close();
  await azure.close();
  rmSync(dir, { recursive: true, force: true });
});

function row(report: DoctorReport, name: string): CheckResult {
  const found = report.checks.find((c) => c.name === name);
  assert.ok(found, `a "${name}" row in ${JSON.stringify(report.checks.map((c) => c.name))}`);
  return found;
}

async function run(provider: Record<string, unknown>, env: Record<string, string | undefined> = {}, upstreamId = 'anthropic.claude-haiku-4-5-20251001-v1:0'): Promise<DoctorReport> {
  const file = { builtin_catalog: false, providers: { p: provider }, models: [{ id: 'm', provider: 'p', upstream_id: upstreamId }] };
  const report = await diagnose({ load: () => loadConfig({ file, env, home: dir }), timeoutMs: 3_000 });
  const text = JSON.stringify(report);
  for (const secret of [SECRET, AZURE_KEY, account.privateKeyPem.split('\n')[1] ?? '']) assert.ok(!text.includes(secret), 'no credential in the report');
  return report;
}

describe('llmux doctor on Bedrock', () => {
  const base = (): Record<string, unknown> => ({ format: 'anthropic', platform: 'bedrock', region: 'us-east-1', base_url: bedrock.url });

  it('says where the credentials came from, and signs an InvokeModel that runs no model', async () => {
    const report = await run({ ...base(), credentials: { access_key_id: 'AKIADOCTOR', secret_access_key: 'env:DOCTOR_SECRET' } }, { DOCTOR_SECRET: SECRET });
    assert.deepEqual(row(report, 'provider p: credential'), { name: 'provider p: credential', verdict: 'ok', detail: 'providers.p.credentials in the llmux config' });
    const endpoint = row(report, 'provider p: endpoint');
    assert.equal(endpoint.verdict, 'ok', endpoint.detail);
    assert.match(endpoint.detail, /InvokeModel anthropic\.claude-haiku-4-5-20251001-v1:0 .*400 ValidationException.*the signature and the permission were accepted/);
    assert.equal(bedrock.requests.at(-1)?.operation, 'invoke');
  });

  it('signs a Converse that runs no model for a converse provider', async () => {
    const report = await run({ ...base(), format: 'converse', credentials: { access_key_id: 'AKIADOCTOR', secret_access_key: 'env:DOCTOR_SECRET' } }, { DOCTOR_SECRET: SECRET }, 'us.meta.llama3-3-70b-instruct-v1:0');
    const endpoint = row(report, 'provider p: endpoint');
    assert.equal(endpoint.verdict, 'ok', endpoint.detail);
    assert.match(endpoint.detail, /^Converse us\.meta\.llama3-3-70b-instruct-v1:0 .*400 ValidationException.*the signature and the permission were accepted/);
    assert.equal(bedrock.requests.at(-1)?.operation, 'converse');
  });

  it('names refused credentials and the setting to check', async () => {
    const report = await run({ ...base(), credentials: { access_key_id: 'AKIADOCTOR', secret_access_key: 'wrong-secret-wrong-secret' } });
    const endpoint = row(report, 'provider p: endpoint');
    assert.equal(endpoint.verdict, 'fail');
    assert.match(endpoint.detail, /403 InvalidSignatureException.*the credentials were refused/);
    assert.match(endpoint.hint ?? '', /providers\.p\.credentials/);
  });

  it('names credentials that are not found, and does not call the endpoint', async () => {
    const before = bedrock.requests.length;
    const report = await run(base(), { AWS_EC2_METADATA_DISABLED: 'true', AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none') });
    const credential = row(report, 'provider p: credential');
    assert.equal(credential.verdict, 'fail');
    assert.match(credential.detail, /no AWS credentials found/);
    assert.equal(row(report, 'provider p: endpoint').verdict, 'off');
    assert.equal(bedrock.requests.length, before);
  });
});

describe('llmux doctor on Vertex AI', () => {
  it('fetches a token with the service account and says whose it is', async () => {
    const report = await run({ format: 'anthropic', platform: 'vertex', project: 'p1', credentials_file: join(dir, 'sa.json'), base_url: 'http://127.0.0.1:9' }, {}, 'claude-sonnet-4-5@20250929');
    const credential = row(report, 'provider p: credential');
    assert.equal(credential.verdict, 'ok', credential.detail);
    assert.match(credential.detail, new RegExp(`service account ${account.clientEmail}.*an access token is held until`));
    assert.equal(row(report, 'provider p: endpoint').verdict, 'off');
  });

  it('names a credentials file that is missing', async () => {
    const report = await run({ format: 'anthropic', platform: 'vertex', project: 'p1', credentials_file: join(dir, 'missing.json') }, {}, 'claude-sonnet-4-5@20250929');
    const credential = row(report, 'provider p: credential');
    assert.equal(credential.verdict, 'fail');
    assert.match(credential.detail + (credential.hint ?? ''), /missing\.json/);
  });
});

describe('llmux doctor on Azure OpenAI', () => {
  it('lists the deployments with the key, on the v1 surface and the classic one', async () => {
    const v1 = await run({ format: 'openai', platform: 'azure', base_url: `${azure.url}/openai/v1`, api_key: 'env:AZ' }, { AZ: AZURE_KEY }, 'gpt-4o');
    assert.equal(row(v1, 'provider p: credential').detail, 'from the environment variable AZ (providers.p.api_key)');
    assert.match(row(v1, 'provider p: endpoint').detail, /GET .*\/openai\/v1\/models: 200/);
    const classic = await run({ format: 'openai', platform: 'azure', base_url: azure.url, api_version: '2024-10-21', api_key: 'env:AZ' }, { AZ: AZURE_KEY }, 'gpt-4o');
    assert.equal(row(classic, 'provider p: endpoint').verdict, 'ok');
    assert.equal(azure.requests.at(-1)?.query.get('api-version'), '2024-10-21');
  });

  it('names a refused key, and an unset one without calling', async () => {
    const refused = await run({ format: 'openai', platform: 'azure', base_url: `${azure.url}/openai/v1`, api_key: 'env:AZ' }, { AZ: 'not-the-key' }, 'gpt-4o');
    assert.equal(row(refused, 'provider p: endpoint').verdict, 'fail');
    assert.match(row(refused, 'provider p: endpoint').detail, /401 .*the credential was refused/);
    const unset = await run({ format: 'openai', platform: 'azure', base_url: `${azure.url}/openai/v1`, api_key: 'env:AZ' }, {}, 'gpt-4o');
    assert.equal(row(unset, 'provider p: credential').verdict, 'fail');
    assert.equal(row(unset, 'provider p: endpoint').verdict, 'off');
  });
});
