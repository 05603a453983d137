#!/usr/bin/env node
/**
 * Generates test/fixtures/schemas/anthropic.json (read by test/helpers/schemas.ts) from the types
 * of the installed `@anthropic-ai/sdk`: the roots named in ./anthropic-roots.ts.
 *
 * Usage: node scripts/schemas/anthropic.mjs > test/fixtures/schemas/anthropic.json
 *
 * ts-json-schema-generator (a devDependency for this script only) turns each type into JSON
 * Schema: interfaces become closed objects (`additionalProperties: false`), so a field the SDK
 * does not know fails. One rule is added after it, because the SDK's types are not a statement of
 * which fields the API sends: a field typed `T | null` is required in TypeScript, yet the API
 * leaves most of them out (recorded answers carry no `container`, `diagnostics`, `citations`,
 * `server_tool_use`, `speed`, ...), and the SDKs read a missing one as null. So a field whose
 * schema admits null is not required; every other required field stays required.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGenerator } from 'ts-json-schema-generator';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const ROOTS = [
  'Message', 'RawMessageStreamEvent', 'RawMessageStartEvent', 'RawMessageDeltaEvent', 'RawMessageStopEvent',
  'RawContentBlockStartEvent', 'RawContentBlockDeltaEvent', 'RawContentBlockStopEvent', 'MessageTokensCount',
  'ErrorResponse', 'ModelInfo', 'ModelInfoPage',
];

const generator = createGenerator({
  path: join(HERE, 'anthropic-roots.ts'),
  tsconfig: join(HERE, 'tsconfig.json'),
  type: '*',
  expose: 'export',
  topRef: true,
  jsDoc: 'none',
  additionalProperties: false,
  skipTypeCheck: true,
});
const definitions = {};
for (const root of ROOTS) Object.assign(definitions, generator.createSchema(root).definitions);

function admitsNull(schema) {
  if (schema === null || typeof schema !== 'object') return false;
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true;
  if (Array.isArray(schema.anyOf)) return schema.anyOf.some(admitsNull);
  if (typeof schema.$ref === 'string') return admitsNull(definitions[schema.$ref.replace('#/definitions/', '')]);
  return false;
}

function relax(schema) {
  if (Array.isArray(schema)) {
    schema.forEach(relax);
    return;
  }
  if (schema === null || typeof schema !== 'object') return;
  if (schema.properties !== undefined && Array.isArray(schema.required)) {
    schema.required = schema.required.filter((name) => !admitsNull(schema.properties[name]));
    if (schema.required.length === 0) delete schema.required;
  }
  for (const value of Object.values(schema)) relax(value);
}
relax(definitions);

const sdk = JSON.parse(readFileSync(join(ROOT, 'node_modules', '@anthropic-ai', 'sdk', 'package.json'), 'utf8'));
const sorted = Object.fromEntries(Object.keys(definitions).sort().map((name) => [name, definitions[name]]));
const out = {
  $comment: `Generated from @anthropic-ai/sdk ${sdk.version} (its types: ${ROOTS.join(', ')}) by scripts/schemas/anthropic.mjs: fields typed T | null are not required.`,
  definitions: sorted,
};
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
