/**
 * schema/config.schema.json, held to the config loader (src/config/load.ts) so the two never
 * disagree:
 * - each section of the schema lists exactly the fields the loader reads (`CONFIG_FIELDS`, the
 *   lists the loader's unknown-field checks use): a field the loader learns fails here until the
 *   schema has it, and the other way round;
 * - for every field, a valid value is accepted by both and each kind of bad value (wrong type,
 *   out of range, unknown value) refused by both, derived from the schema's own description of the
 *   field; plus a table of cases across fields;
 * - every config example in the README and docs/ loads through both, and docs/configuration.md
 *   shows each top-level field in one;
 * - the rules only the loader can check (references between fields, the environment) are listed.
 *
 * Validated with Ajv (a devDependency: JSON Schema draft 2020-12, strict mode, so a keyword the
 * schema misspells is an error rather than ignored).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CONFIG_FIELDS, ConfigError, loadConfig } from '../../src/config/load.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
type Json = Record<string, unknown>;
const SCHEMA = JSON.parse(readFileSync(join(ROOT, 'schema', 'config.schema.json'), 'utf8')) as Json;
const DEFS = SCHEMA['$defs'] as Record<string, Json>;
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(SCHEMA);

/** The schema object of a section: the root for `config`, else its `$defs` entry. */
const sectionOf = (name: string): Json => (name === 'config' ? SCHEMA : DEFS[name] as Json);
const propertiesOf = (name: string): Record<string, Json> => (sectionOf(name)['properties'] ?? {}) as Record<string, Json>;

function loads(file: unknown): true | string {
  try {
    loadConfig({ file, env: {}, home: '/nonexistent-llmux-home' });
    return true;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.message;
  }
}

function schemaAccepts(file: unknown): true | string {
  return validate(file) ? true : JSON.stringify(validate.errors);
}

/** A provider's fields that belong to one platform, each beside what that platform requires. */
const BEDROCK: Json = { format: 'anthropic', platform: 'bedrock', region: 'us-east-1' };
const VERTEX: Json = { format: 'anthropic', platform: 'vertex', project: 'my-project' };
const PROVIDER_ON: Record<string, Json> = {
  region: BEDROCK,
  credentials: BEDROCK,
  profile: BEDROCK,
  betas: BEDROCK,
  project: VERTEX,
  location: VERTEX,
  credentials_file: VERTEX,
  api_version: { format: 'openai', platform: 'azure', base_url: 'https://res.openai.azure.com/openai', api_key: 'env:AZURE_OPENAI_API_KEY' },
  azure_ad_token: { format: 'openai', platform: 'azure', base_url: 'https://res.openai.azure.com/openai/v1' },
};

/** Where a field of each section sits in a config file, beside what makes the rest of it valid. */
const PLACE: Record<string, (field: string, value: unknown) => Json> = {
  config: (f, v) => ({ [f]: v }),
  provider: (f, v) => ({ providers: { p: { ...(PROVIDER_ON[f] ?? { format: 'openai', base_url: 'http://127.0.0.1:11434/v1' }), [f]: v } } }),
  credentials: (f, v) => ({ providers: { p: { ...BEDROCK, credentials: { access_key_id: 'env:KEY_ID', secret_access_key: 'env:SECRET', [f]: v } } } }),
  model: (f, v) => ({ models: [f === 'deployments' ? { id: 'm', [f]: v } : { id: 'm', provider: 'llmux', [f]: v }] }),
  capabilities: (f, v) => ({ models: [{ id: 'm', provider: 'llmux', capabilities: { [f]: v } }] }),
  pricing: (f, v) => ({ models: [{ id: 'm', provider: 'llmux', pricing: { [f]: v } }] }),
  tiers: (f, v) => ({ tiers: { [f]: v } }),
  tier: (f, v) => ({ tiers: { pro: { budget_usd: 5, [f]: v } } }),
  limits: (f, v) => ({ limits: { [f]: v } }),
  retry: (f, v) => ({ retry: { [f]: v } }),
  responses: (f, v) => ({ responses: { [f]: v } }),
  telemetry: (f, v) => ({ telemetry: { [f]: v } }),
  state: (f, v) => ({ state: { url: 'redis://127.0.0.1:6379', [f]: v } }),
  deployment: (f, v) => ({
    providers: { p: { format: 'openai', base_url: 'http://127.0.0.1:11434/v1' } },
    models: [{ id: 'm', deployments: [{ provider: 'p', upstream_id: 'x', [f]: v }] }],
  }),
  route: (f, v) => ({ routes: [{ when: {}, model: 'llmux-echo', [f]: v }] }),
  when: (f, v) => ({ routes: [{ when: { [f]: v }, model: 'llmux-echo' }] }),
};

/** Valid values the schema's defaults and examples do not give. */
const VALID: Record<string, unknown> = {
  'config.state': { url: 'redis://127.0.0.1:6379/2' },
  'model.provider': 'llmux',
  'provider.credentials': { access_key_id: 'env:BEDROCK_ACCESS_KEY_ID', secret_access_key: 'env:BEDROCK_SECRET_ACCESS_KEY' },
  'model.fallbacks': ['gpt-5'],
  'model.deployments': [{ provider: 'anthropic', upstream_id: 'claude-sonnet-4-5' }],
  'deployment.provider': 'p',
};

/** A value the schema describes as valid: an override, its default, its first example, else one of its type. */
function validValue(section: string, field: string, property: Json): unknown {
  const key = `${section}.${field}`;
  if (key in VALID) return VALID[key];
  if ('default' in property) return property['default'];
  if (Array.isArray(property['examples'])) return property['examples'][0];
  if ('const' in property) return property['const'];
  if (Array.isArray(property['enum'])) return property['enum'][0];
  if (typeof property['$ref'] === 'string') return {};
  switch (property['type']) {
    case 'boolean': return true;
    case 'integer': return typeof property['minimum'] === 'number' ? property['minimum'] : 1;
    case 'number': return 1.5;
    case 'array': return [];
    case 'object': return {};
    default: return 'some text';
  }
}

/** Bad values of each kind the schema's description of the field refuses. */
function invalidValues(property: Json): unknown[] {
  if (typeof property['$ref'] === 'string') return ['text', [], 5];
  if ('const' in property || Array.isArray(property['enum'])) return ['not-one-of-them', 5];
  const minimum = property['minimum'];
  switch (property['type']) {
    case 'boolean': return ['yes', 1];
    case 'integer': return ['5', 1.5, typeof minimum === 'number' ? minimum - 1 : -1];
    case 'number': return ['5', typeof minimum === 'number' ? minimum - 1 : -1];
    case 'array': return ['text', [''], [5]];
    case 'object': return ['text', [], { name: 5 }];
    default: return [5, true, ...(property['minLength'] === 1 ? [''] : []), ...(property['pattern'] !== undefined ? ['not a url or a date'] : [])];
  }
}

describe('schema/config.schema.json', () => {
  it('is a valid draft 2020-12 schema that refuses unknown fields at the top level, as the loader does', () => {
    assert.equal(SCHEMA['$schema'], 'https://json-schema.org/draft/2020-12/schema');
    assert.equal(SCHEMA['additionalProperties'], false);
    assert.match(loads({ colour: 'blue' }) as string, /colour: unknown field/);
    assert.notEqual(schemaAccepts({ colour: 'blue' }), true);
  });

  it('lists, section by section, exactly the fields the loader reads, and refuses others in each', () => {
    for (const [section, fields] of Object.entries(CONFIG_FIELDS)) {
      const schemaFields = Object.keys(propertiesOf(section)).sort();
      assert.deepEqual(schemaFields, [...fields].sort(), `section "${section}": the schema's fields and the loader's differ (add the field to schema/config.schema.json)`);
      assert.equal(sectionOf(section)['additionalProperties'], false, `section "${section}" refuses unknown fields`);
      const place = PLACE[section];
      assert.ok(place !== undefined, `a place for section "${section}" in this test`);
      const unknown = place('not_a_field', 1);
      assert.notEqual(loads(unknown), true, `the loader refuses an unknown field in "${section}"`);
      assert.notEqual(schemaAccepts(unknown), true, `the schema refuses an unknown field in "${section}"`);
    }
    const sections = Object.entries(DEFS).filter(([, def]) => def['properties'] !== undefined).map(([name]) => name);
    for (const name of sections) assert.ok(name in CONFIG_FIELDS, `$defs.${name} is a section the loader knows`);
  });

  it('keeps every object with fields in $defs, where the check above sees it', () => {
    const withFields: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      if (!Array.isArray(node) && (node as Json)['properties'] !== undefined) withFields.push(path);
      for (const [key, child] of Object.entries(node)) walk(child, `${path}/${key}`);
    };
    walk(SCHEMA, '');
    // The root, a section of $defs, or a condition (if/then, one of allOf's, dependentSchemas) on a section's own fields.
    assert.deepEqual(withFields.filter((path) => !/^(\/\$defs\/[a-z]+(\/(if|then|allOf\/\d+\/(if|then|else)|dependentSchemas\/[a-z_]+))?)?$/.test(path)), []);
  });

  for (const [section, fields] of Object.entries(CONFIG_FIELDS)) {
    it(`agrees with the loader on each field of "${section}": a valid value and every kind of bad one`, () => {
      const place = PLACE[section] as (field: string, value: unknown) => Json;
      for (const field of fields) {
        const property = propertiesOf(section)[field] as Json;
        const good = place(field, validValue(section, field, property));
        assert.equal(loads(good), true, `the loader accepts ${JSON.stringify(good)}`);
        assert.equal(schemaAccepts(good), true, `the schema accepts ${JSON.stringify(good)}`);
        for (const value of invalidValues(property)) {
          const bad = place(field, value);
          assert.notEqual(loads(bad), true, `the loader refuses ${JSON.stringify(bad)}`);
          assert.notEqual(schemaAccepts(bad), true, `the schema refuses ${JSON.stringify(bad)}`);
        }
      }
    });
  }

  const CASES: Array<{ name: string; config: unknown; valid: boolean }> = [
    { name: 'an empty file', config: {}, valid: true },
    { name: 'api_key and api_keys on one provider', config: { providers: { p: { format: 'openai', base_url: 'http://127.0.0.1:1/v1', api_key: 'a', api_keys: ['b'] } } }, valid: false },
    { name: 'a model with deployments and a weight', config: { models: [{ id: 'm', routing: 'least_busy', deployments: [{ provider: 'anthropic', upstream_id: 'claude-sonnet-4-5', weight: 3 }] }] }, valid: true },
    { name: 'a route on a list of client formats', config: { routes: [{ when: { client_format: ['chat', 'gemini'], has_tools: true }, model: 'llmux-echo' }] }, valid: true },
    { name: 'a route on a client format llmux does not know', config: { routes: [{ when: { client_format: 'grpc' }, model: 'llmux-echo' }] }, valid: false },
    { name: 'a $schema line', config: { $schema: './node_modules/llmux/schema/config.schema.json' }, valid: true },
    { name: 'a $schema that is not a string', config: { $schema: 5 }, valid: false },
    { name: 'not an object', config: [], valid: false },
    { name: 'a provider without base_url', config: { providers: { p: { format: 'openai' } } }, valid: false },
    { name: 'a provider without format', config: { providers: { p: { base_url: 'http://x' } } }, valid: false },
    { name: 'a provider name with a space', config: { providers: { 'my provider': { format: 'openai', base_url: 'http://x' } } }, valid: false },
    { name: 'a provider that is not an object', config: { providers: { p: 'http://x' } }, valid: false },
    { name: 'an ftp base_url', config: { providers: { p: { format: 'openai', base_url: 'ftp://x/v1' } } }, valid: false },
    { name: 'responses on an openai provider', config: { providers: { p: { format: 'openai', base_url: 'https://x/v1', responses: true } } }, valid: true },
    { name: 'responses on an anthropic provider', config: { providers: { p: { format: 'anthropic', base_url: 'https://x/v1', responses: true } } }, valid: false },
    { name: 'responses false on an anthropic provider', config: { providers: { p: { format: 'anthropic', base_url: 'https://x/v1', responses: false } } }, valid: true },
    { name: 'a built-in model changed without naming its provider', config: { models: [{ id: 'gpt-5', context_length: 1000 }] }, valid: true },
    { name: 'a model id of 257 characters', config: { models: [{ id: 'x'.repeat(257), provider: 'llmux' }] }, valid: false },
    { name: 'a model that is not an object', config: { models: ['gpt-5'] }, valid: false },
    { name: 'models as an object', config: { models: { m: {} } }, valid: false },
    { name: 'an unknown capability', config: { models: [{ id: 'm', provider: 'llmux', capabilities: { supports_audio: true } }] }, valid: false },
    { name: 'a tier named gold', config: { tiers: { gold: { rpm: 5 } } }, valid: false },
    { name: 'a tier with a budget per day', config: { tiers: { basic: { budget_usd: 2.5, budget_period: 'day' } } }, valid: true },
    { name: 'a budget_period without budget_usd', config: { tiers: { basic: { budget_period: 'day' } } }, valid: false },
    { name: 'a limit of 0', config: { limits: { max_body_bytes: 0 } }, valid: false },
    { name: 'a negative limit', config: { limits: { upstream_timeout_ms: -5 } }, valid: false },
    { name: 'retry delays of 0', config: { retry: { base_delay_ms: 0, max_delay_ms: 0 } }, valid: true },
    { name: 'no attempts', config: { retry: { attempts: 0 } }, valid: false },
    { name: 'a rediss state URL with a password and a database', config: { state: { url: 'rediss://u:p%40ss@cache.internal:6380/3', on_failure: 'closed' } }, valid: true },
    { name: 'an http state URL', config: { state: { url: 'http://127.0.0.1:6379' } }, valid: false },
    { name: 'a lease under a second', config: { state: { url: 'redis://h:1', lease_ms: 500 } }, valid: false },
    { name: 'telemetry headers that are not strings', config: { telemetry: { headers: { authorization: 5 } } }, valid: false },
    { name: 'validation loose', config: { validation: 'loose' }, valid: false },
    { name: 'a Bedrock provider with its region and nothing else', config: { providers: { b: BEDROCK } }, valid: true },
    { name: 'a Bedrock provider without a region', config: { providers: { b: { format: 'anthropic', platform: 'bedrock' } } }, valid: false },
    { name: 'a Bedrock provider of format openai', config: { providers: { b: { ...BEDROCK, format: 'openai' } } }, valid: false },
    { name: 'a Bedrock provider of format converse', config: { providers: { b: { ...BEDROCK, format: 'converse' } } }, valid: true },
    { name: 'an http provider of format converse', config: { providers: { h: { format: 'converse', base_url: 'https://x/v1', api_key: 'k' } } }, valid: false },
    { name: 'a Vertex provider of format converse', config: { providers: { v: { ...VERTEX, format: 'converse' } } }, valid: false },
    { name: 'a Bedrock provider with an api_key', config: { providers: { b: { ...BEDROCK, api_key: 'k' } } }, valid: false },
    { name: 'Bedrock credentials without the secret', config: { providers: { b: { ...BEDROCK, credentials: { access_key_id: 'AKID' } } } }, valid: false },
    { name: 'a region on an http provider', config: { providers: { p: { format: 'anthropic', base_url: 'https://x/v1', region: 'us-east-1' } } }, valid: false },
    { name: 'a Vertex provider with its project', config: { providers: { v: { ...VERTEX, location: 'us-east5', base_url: 'https://proxy.example/v1' } } }, valid: true },
    { name: 'a Vertex openai provider', config: { providers: { v: { ...VERTEX, format: 'openai' } } }, valid: true },
    { name: 'a Vertex provider without a project', config: { providers: { v: { format: 'anthropic', platform: 'vertex' } } }, valid: false },
    { name: 'a Vertex provider of format gemini', config: { providers: { v: { ...VERTEX, format: 'gemini' } } }, valid: true },
    { name: 'a Gemini-format http provider', config: { providers: { g: { format: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', api_key: 'env:GEMINI_API_KEY' } } }, valid: true },
    { name: 'a Bedrock provider of format gemini', config: { providers: { b: { ...BEDROCK, format: 'gemini' } } }, valid: false },
    { name: 'a Gemini-format provider serving responses', config: { providers: { g: { format: 'gemini', base_url: 'https://g/v1beta', api_key: 'k', responses: true } } }, valid: false },
    { name: 'a Vertex openai provider serving responses', config: { providers: { v: { ...VERTEX, format: 'openai', responses: true } } }, valid: false },
    { name: 'betas on an Azure provider', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k', betas: ['x'] } } }, valid: false },
    { name: 'an Azure v1 provider with a key', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'env:AZURE_OPENAI_API_KEY', responses: true } } }, valid: true },
    { name: 'an Azure v1 provider with an api_version', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k', api_version: '2024-10-21' } } }, valid: false },
    { name: 'an Azure classic provider without an api_version', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai', api_key: 'k' } } }, valid: false },
    { name: 'an Azure classic provider with an Entra token', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai', api_version: '2025-03-01-preview', azure_ad_token: 'env:AZ_TOKEN' } } }, valid: true },
    { name: 'an Azure provider with no credential', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1' } } }, valid: false },
    { name: 'an Azure provider with both credentials', config: { providers: { a: { format: 'openai', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k', azure_ad_token: 't' } } }, valid: false },
    { name: 'an Azure provider of format anthropic', config: { providers: { a: { format: 'anthropic', platform: 'azure', base_url: 'https://r.openai.azure.com/openai/v1', api_key: 'k' } } }, valid: false },
    { name: 'an Azure provider without base_url', config: { providers: { a: { format: 'openai', platform: 'azure', api_key: 'k' } } }, valid: false },
  ];

  for (const { name, config, valid } of CASES) {
    it(`${valid ? 'accepts' : 'refuses'}, with the loader, ${name}`, () => {
      assert.equal(loads(config) === true, valid, `loader: ${String(loads(config))}`);
      assert.equal(schemaAccepts(config) === true, valid, `schema: ${String(schemaAccepts(config))}`);
    });
  }

  // What a schema cannot know: other fields' values, the catalog, the environment. The schema's
  // description says these are checked when llmux loads the file; `llmux doctor` runs the loader.
  const LOADER_ONLY: Array<{ name: string; config: unknown }> = [
    { name: 'a model of a provider that is not configured', config: { models: [{ id: 'm', provider: 'nowhere' }] } },
    { name: 'a model that is not built in, without a provider', config: { models: [{ id: 'my-model' }] } },
    { name: 'a model id twice', config: { models: [{ id: 'm', provider: 'llmux' }, { id: 'm', provider: 'llmux' }] } },
    { name: 'a fallback to an unknown model', config: { models: [{ id: 'm', provider: 'llmux', fallbacks: ['nope'] }] } },
    { name: 'a model falling back to itself', config: { models: [{ id: 'gpt-5', fallbacks: ['gpt-5'] }] } },
    { name: 'a state section without url (and no LLMUX_STATE_URL)', config: { state: { timeout_ms: 100 } } },
    { name: 'a created_at that is no date', config: { models: [{ id: 'm', provider: 'llmux', created_at: '2024-13-45' }] } },
  ];

  for (const { name, config } of LOADER_ONLY) {
    it(`leaves to the loader ${name}`, () => {
      assert.notEqual(loads(config), true, 'the loader refuses it');
      assert.equal(schemaAccepts(config), true, 'the schema cannot see it: if it now can, move this case to CASES');
    });
  }
});

/** Config examples in a Markdown file: JSON blocks made of config fields, and inline `"field": …` snippets. */
export function configExamples(markdown: string): unknown[] {
  const top = new Set(CONFIG_FIELDS['config']);
  const examples: unknown[] = [];
  const isConfig = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value)
    && Object.keys(value).length > 0 && Object.keys(value).every((key) => top.has(key));
  for (const [, block] of markdown.matchAll(/```json\n([\s\S]*?)```/g)) {
    try {
      const value: unknown = JSON.parse(block as string);
      if (isConfig(value)) examples.push(value);
    } catch { /* not one JSON value: log lines, several objects */ }
  }
  // Inline, only a section (`"tiers": {…}`): a bare `"responses": true` is as likely a provider's field.
  for (const [, snippet] of markdown.matchAll(/`("[a-z_$]+": \{[^`]+\})`/g)) {
    try {
      const value: unknown = JSON.parse(`{${snippet as string}}`);
      if (isConfig(value)) examples.push(value);
    } catch { /* a fragment, not a field */ }
  }
  return examples;
}

describe('the config examples of the docs', () => {
  const files = [join(ROOT, 'README.md')];
  const docs = join(ROOT, 'docs');
  if (existsSync(docs)) for (const name of readdirSync(docs, { recursive: true }) as string[]) if (name.endsWith('.md')) files.push(join(docs, name));

  it('finds an example of every top-level field in docs/configuration.md', () => {
    const examples = configExamples(readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8'));
    const shown = new Set(examples.flatMap((example) => Object.keys(example as Json)));
    assert.deepEqual(CONFIG_FIELDS['config']?.filter((field) => !shown.has(field)), []);
  });

  for (const file of files) {
    it(`each config example in ${file.slice(ROOT.length)} loads, and the schema accepts it`, () => {
      for (const example of configExamples(readFileSync(file, 'utf8'))) {
        assert.equal(loads(example), true, JSON.stringify(example));
        assert.equal(schemaAccepts(example), true, JSON.stringify(example));
      }
    });
  }
});
