#!/usr/bin/env node
/**
 * Cuts OpenAI's OpenAPI description down to the schemas llmux's answers are checked against
 * (test/fixtures/schemas/openai.json, read by test/helpers/schemas.ts).
 *
 * Usage: node scripts/schemas/cut-openai.mjs OPENAPI_JSON COMMIT > test/fixtures/schemas/openai.json
 *
 * OPENAPI_JSON is `openapi.json` of github openai/openai-openapi at COMMIT (the repository
 * publishes the description as JSON beside the YAML, from the same source, so no YAML parser is
 * needed). The cut:
 * - keeps the schemas named in ROOTS and every schema they reference, transitively, under the
 *   same names, so each `$ref` ("#/components/schemas/X") still resolves in the cut file;
 * - drops what only documents a schema (`description`, `title`, `example`, `examples`, `x-*`
 *   extensions), walking schema positions only, so a property named "description" stays;
 * - changes nothing else: `nullable`, `discriminator` and `$recursiveRef` are as published, and
 *   the helper says how it reads them.
 */
import { readFileSync } from 'node:fs';

/** The schemas of what llmux answers in OpenAI's formats (paths of the description in comments). */
const ROOTS = [
  'CreateChatCompletionResponse', // POST /chat/completions, application/json
  'CreateChatCompletionStreamResponse', // POST /chat/completions, text/event-stream
  'Response', // POST /responses, GET /responses/{id}
  'ResponseStreamEvent', // POST /responses, text/event-stream
  'ResponseItemList', // GET /responses/{id}/input_items
  'TokenCountsResource', // POST /responses/input_tokens
  'ListModelsResponse', // GET /models
  'Model', // GET /models/{model}
  'ErrorResponse', // every error answer
];

/** Keywords whose value is a map of names to schemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is a schema or an array of schemas. */
const SCHEMA_VALUES = new Set([
  'items', 'prefixItems', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'contains',
  'propertyNames', 'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf',
]);
const DOCUMENTATION = new Set(['description', 'title', 'example', 'examples']);

function strip(schema) {
  if (Array.isArray(schema)) return schema.map(strip);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DOCUMENTATION.has(key) || key.startsWith('x-')) continue;
    if (SCHEMA_MAPS.has(key)) out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, strip(sub)]));
    else if (SCHEMA_VALUES.has(key)) out[key] = strip(value);
    else out[key] = value;
  }
  return out;
}

function referenced(schema, into) {
  if (Array.isArray(schema)) for (const item of schema) referenced(item, into);
  else if (schema !== null && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') {
        const match = /^#\/components\/schemas\/(.+)$/.exec(value);
        if (match === null) throw new Error(`a reference outside components/schemas: ${value}`);
        into.push(match[1]);
      } else referenced(value, into);
    }
  }
}

const [path, commit] = process.argv.slice(2);
if (path === undefined || commit === undefined || !/^[0-9a-f]{40}$/.test(commit)) {
  process.stderr.write('usage: node scripts/schemas/cut-openai.mjs OPENAPI_JSON COMMIT\n');
  process.exit(2);
}
const description = JSON.parse(readFileSync(path, 'utf8'));
const all = description.components.schemas;
const kept = new Map();
const queue = [...ROOTS];
while (queue.length > 0) {
  const name = queue.pop();
  if (kept.has(name)) continue;
  if (all[name] === undefined) throw new Error(`no schema ${name} in ${path}`);
  const schema = strip(all[name]);
  kept.set(name, schema);
  referenced(schema, queue);
}
const schemas = Object.fromEntries([...kept.keys()].sort().map((name) => [name, kept.get(name)]));
const out = {
  $comment: `Cut from github openai/openai-openapi@${commit} openapi.json (OpenAPI ${description.openapi}, API ${description.info.version}) by scripts/schemas/cut-openai.mjs: the schemas of ${ROOTS.join(', ')} and all they reference, documentation keywords dropped.`,
  components: { schemas },
};
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
