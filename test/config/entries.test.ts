/**
 * The platform fields of a provider (llmux.md section 8), as src/config/entries.ts reads them: each
 * valid on its platform only, the endpoint each platform derives, and one clear line for each
 * mistake (the formats not served yet, and a format on a platform that cannot carry it, among them).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config/load.ts';

const load = (providers: Record<string, unknown>) => loadConfig({ file: { providers }, env: {}, home: '/tmp/none' }).providers;

function refused(providers: Record<string, unknown>, message: RegExp): void {
  assert.throws(() => load(providers), (err: Error) => err instanceof ConfigError && message.test(err.message) && !err.message.includes('\n'), String(message));
}

describe('a Bedrock provider', () => {
  it('reads its region, credentials, profile and betas, its endpoint made from the region', () => {
    const { b } = load({ b: { format: 'anthropic', platform: 'bedrock', region: 'eu-west-1', credentials: { access_key_id: 'env:K', secret_access_key: 'env:S', session_token: 'env:T' }, profile: 'dev', betas: ['x-1'] } });
    assert.equal(b?.platform, 'bedrock');
    assert.equal(b?.baseUrl, 'https://bedrock-runtime.eu-west-1.amazonaws.com');
    assert.deepEqual(b?.bedrock, { region: 'eu-west-1', credentials: { access_key_id: 'env:K', secret_access_key: 'env:S', session_token: 'env:T' }, profile: 'dev', betas: ['x-1'] });
    assert.equal(b?.apiKey, undefined);
    assert.equal(b?.keyless, false, 'it needs credentials, so it is not usable merely for being configured');
  });

  it('carries the converse format (Bedrock\'s other models), which no other platform carries', () => {
    const { b } = load({ b: { format: 'converse', platform: 'bedrock', region: 'us-west-2' } });
    assert.equal(b?.format, 'converse');
    assert.equal(b?.baseUrl, 'https://bedrock-runtime.us-west-2.amazonaws.com');
    refused({ h: { format: 'converse', base_url: 'https://example.test/v1', api_key: 'k' } }, /providers\.h\.format: must be "openai", "anthropic" or "gemini" \("converse" is Amazon Bedrock's Converse API: it needs "platform": "bedrock"\)/);
    refused({ v: { format: 'converse', platform: 'vertex', project: 'p' } }, /providers\.v\.format: Vertex AI carries "anthropic"/);
    refused({ a: { format: 'converse', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k' } }, /providers\.a\.format: Azure OpenAI speaks "openai"/);
  });

  it('takes base_url as its endpoint (a VPC endpoint, a proxy)', () => {
    assert.equal(load({ b: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', base_url: 'https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com/' } })['b']?.baseUrl, 'https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com');
  });

  it('refuses what Bedrock cannot carry, each with the field and what to do', () => {
    refused({ b: { format: 'anthropic', platform: 'bedrock' } }, /providers\.b\.region: a Bedrock provider needs its AWS region/);
    refused({ b: { format: 'anthropic', platform: 'bedrock', region: 'US East' } }, /providers\.b\.region: lower-case letters/);
    refused({ b: { format: 'openai', platform: 'bedrock', region: 'us-east-1' } }, /providers\.b\.format: Bedrock carries "anthropic" \(Claude through InvokeModel\) and "converse"/);
    refused({ b: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', api_key: 'k' } }, /providers\.b\.api_key: Bedrock requests are signed with AWS credentials/);
    refused({ b: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', credentials: { access_key_id: 'A' } } }, /providers\.b\.credentials: needs access_key_id and secret_access_key/);
    refused({ b: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', credentials: { access_key_id: 'A', secret_access_key: 'S', region: 'x' } } }, /providers\.b\.credentials\.region: unknown field/);
    refused({ b: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', betas: 'all' } }, /providers\.b\.betas: must be an array/);
    refused({ b: { format: 'anthropic', platform: 'bedrock', region: 'us-east-1', project: 'p' } }, /providers\.b\.project: only a provider with "platform": "vertex" has project/);
  });
});

describe('a Vertex AI provider', () => {
  it('defaults to the global location and its endpoint, and reads the regional and multi-region ones', () => {
    assert.equal(load({ v: { format: 'anthropic', platform: 'vertex', project: 'p' } })['v']?.baseUrl, 'https://aiplatform.googleapis.com');
    assert.deepEqual(load({ v: { format: 'anthropic', platform: 'vertex', project: 'p' } })['v']?.vertex, { project: 'p', location: 'global' });
    assert.equal(load({ v: { format: 'openai', platform: 'vertex', project: 'p', location: 'us-east5' } })['v']?.baseUrl, 'https://us-east5-aiplatform.googleapis.com');
    assert.equal(load({ v: { format: 'anthropic', platform: 'vertex', project: 'p', location: 'eu' } })['v']?.baseUrl, 'https://aiplatform.eu.rep.googleapis.com');
  });

  it('takes a base_url with or without /v1, as Claude Code users write ANTHROPIC_VERTEX_BASE_URL, never doubling it', () => {
    for (const written of ['https://proxy.example/vertex', 'https://proxy.example/vertex/', 'https://proxy.example/vertex/v1', 'https://proxy.example/vertex/v1/']) {
      assert.equal(load({ v: { format: 'anthropic', platform: 'vertex', project: 'p', base_url: written } })['v']?.baseUrl, 'https://proxy.example/vertex', written);
    }
  });

  it('reads a Gemini-format provider, which Vertex AI carries to generateContent', () => {
    assert.equal(load({ v: { format: 'gemini', platform: 'vertex', project: 'p' } })['v']?.format, 'gemini');
  });

  it('reads credentials_file and betas', () => {
    assert.deepEqual(load({ v: { format: 'anthropic', platform: 'vertex', project: 'p', credentials_file: '/etc/sa.json', betas: [] } })['v']?.vertex, { project: 'p', location: 'global', credentialsFile: '/etc/sa.json', betas: [] });
  });

  it('refuses what Vertex cannot carry', () => {
    refused({ v: { format: 'anthropic', platform: 'vertex' } }, /providers\.v\.project: a Vertex AI provider needs its Google Cloud project id/);
    refused({ b: { format: 'gemini', platform: 'bedrock', region: 'us-east-1' } }, /providers\.b\.format: Bedrock carries "anthropic"/);
    refused({ v: { format: 'anthropic', platform: 'vertex', project: 'p', api_key: 'k' } }, /providers\.v\.api_key: Vertex AI takes OAuth access tokens/);
    refused({ v: { format: 'openai', platform: 'vertex', project: 'p', responses: true } }, /providers\.v\.responses: Vertex AI's OpenAI-compatible endpoint serves chat completions only/);
    refused({ v: { format: 'anthropic', platform: 'vertex', project: 'p', region: 'us-east-1' } }, /providers\.v\.region: only a provider with "platform": "bedrock" has region/);
  });
});

describe('an Azure OpenAI provider', () => {
  it('is the v1 surface when base_url ends in /openai/v1, with api_key or an Entra token', () => {
    const { a } = load({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'env:AZ', responses: true } });
    assert.equal(a?.baseUrl, 'https://r.openai.azure.com/openai/v1');
    assert.deepEqual(a?.azure, {});
    assert.deepEqual(a?.serves, ['responses']);
    assert.deepEqual(load({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', azure_ad_token: 'env:T' } })['a']?.azure, { azureAdToken: 'env:T' });
  });

  it('is the classic form with api_version, under /openai when base_url is the resource alone', () => {
    const { a } = load({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com', api_version: '2024-10-21', api_key: 'k' } });
    assert.equal(a?.baseUrl, 'https://r.openai.azure.com/openai');
    assert.deepEqual(a?.azure, { apiVersion: '2024-10-21' });
    assert.equal(load({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai', api_version: 'preview', api_key: 'k' } })['a']?.baseUrl, 'https://r.openai.azure.com/openai');
  });

  it('refuses a URL layout and credentials it cannot use', () => {
    refused({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai', api_key: 'k' } }, /providers\.a\.base_url: an Azure base_url ends in \/openai\/v1/);
    refused({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k', api_version: '2024-10-21' } }, /providers\.a\.api_version: the v1 surface .* takes no api-version/);
    refused({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1' } }, /providers\.a\.api_key: an Azure provider needs api_key .* or azure_ad_token/);
    refused({ a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k', azure_ad_token: 't' } }, /providers\.a\.azure_ad_token: give api_key or azure_ad_token, not both/);
    refused({ a: { format: 'anthropic', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k' } }, /providers\.a\.format: Azure OpenAI speaks "openai"/);
    refused({ a: { format: 'openai', platform: 'azure', api_key: 'k' } }, /providers\.a\.base_url: must be an http\(s\) URL string/);
  });
});
