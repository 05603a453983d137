/**
 * llmux's answers checked against the official schemas (test/fixtures/schemas/, origins in its
 * README): OpenAI's OpenAPI description for chat completions, Responses, models and errors; the
 * Anthropic SDK's types for messages, models and errors. Each check returns the problems it
 * found, as lines naming the field; none is a pass.
 *
 * How the schemas are read (Ajv, JSON Schema draft 2019-09):
 * - Both are closed: a field the schema does not name fails. The Anthropic one is generated closed;
 *   OpenAI's objects are closed here (`unevaluatedProperties: false` on each object that names its
 *   `properties`, the members of an `allOf` left open so the whole is closed once; one with empty
 *   `properties` is free-form), so a drifted or invented field fails on either side.
 * - OpenAI's description mixes in OpenAPI 3.0's `nullable: true`, read as "or null"; its one
 *   `$recursiveRef` names the schema it is in. `format` is not checked (no format package).
 * - A stream event is checked against its own type's schema (picked by `type`), not the union of
 *   all events; and a union whose members each have their own `type` (content blocks, output
 *   items) is read as discriminated by it. Either way a failure names the field of the member that
 *   applies rather than every alternative's. Neither changes what passes.
 *
 * Where llmux differs on purpose, or a schema misses what the API really sends, it is allowed in
 * {@link ALLOWED}, one entry each, with the reason; nothing else is loosened.
 */
import { readFileSync } from 'node:fs';
import { Ajv2019 } from 'ajv/dist/2019.js';
import type { ErrorObject, ValidateFunction } from 'ajv';

type Json = Record<string, unknown>;
type Side = 'openai' | 'anthropic';

interface Allowance {
  side: Side;
  /** The schema (a name of components/schemas or definitions) the fields are added to. */
  at: readonly string[];
  /** Fields the schema does not name, with the schema their values follow. */
  fields?: Record<string, Json>;
  /** Or: a change to the schema itself (for a value rather than a field), given all of `side`'s schemas. */
  change?: (schema: Json, schemas: Json) => void;
  why: string;
}

const STRING = { type: 'string' };
const INTEGER = { type: 'integer' };
const NUMBER = { type: 'number' };
const OBJECT = { type: 'object' };

/** The members of the Anthropic SDK's `ErrorObject` union (one per `error.type`). */
const ANTHROPIC_ERROR_OBJECTS = [
  'InvalidRequestErrorObject', 'AuthenticationErrorObject', 'BillingErrorObject', 'PermissionErrorObject', 'NotFoundErrorObject',
  'RateLimitErrorObject', 'GatewayTimeoutErrorObject', 'APIErrorObject', 'OverloadedErrorObject',
];
/** llmux's fields in an error object beside the format's own: its code, X-Debug-Auth's `debug`. */
const LLMUX_ERROR_FIELDS = { code: STRING, debug: OBJECT };

/**
 * Every difference from the schemas that the checks accept, and why. An entry names the schema it
 * opens and exactly what it lets through there.
 */
export const ALLOWED: readonly Allowance[] = [
  {
    side: 'openai',
    at: ['Model'],
    fields: {
      type: STRING,
      created_at: STRING,
      display_name: STRING,
      capabilities: { type: 'object', additionalProperties: { type: 'boolean' } },
      pricing: { type: 'object', properties: { input_tokens_cost_per_million: NUMBER, output_tokens_cost_per_million: NUMBER, currency: STRING }, required: ['input_tokens_cost_per_million', 'output_tokens_cost_per_million', 'currency'], additionalProperties: false },
      context_length: INTEGER,
      max_output_tokens: INTEGER,
    },
    why: "llmux's model record (gateway-api.md \"Model record\") extends OpenAI's model object; the SDKs keep unknown fields",
  },
  {
    side: 'openai',
    at: ['Response'],
    fields: { store: { type: 'boolean' } },
    why: 'OpenAI\'s responses carry `store`, as every response example in its description shows, though the Response schema does not list it',
  },
  {
    side: 'openai',
    at: ['Response'],
    change: (schema) => {
      for (const member of schema['allOf'] as Json[]) {
        const properties = member['properties'] as Json | undefined;
        if (properties?.['usage'] !== undefined) properties['usage'] = { anyOf: [properties['usage'], { type: 'null' }] };
      }
      // Only while it is not done: a completed or incomplete response has its usage.
      (schema['allOf'] as Json[]).push({ if: { properties: { status: { enum: ['completed', 'incomplete'] } }, required: ['status'] }, then: { properties: { usage: OBJECT } } });
    },
    why: 'a response in progress (`response.created`, `.in_progress`, a failure before any usage) has `usage: null`, as the stream examples of POST /responses in OpenAI\'s description show; its ResponseUsage is not nullable',
  },
  {
    side: 'openai',
    at: ['Error'],
    fields: { debug: OBJECT, interval: INTEGER },
    why: 'llmux\'s own error fields: `debug` answers X-Debug-Auth (llmux.md section 3), `interval` tells a device polling too fast how long to wait (RFC 8628 in llmux\'s error shape)',
  },
  {
    side: 'anthropic',
    at: ANTHROPIC_ERROR_OBJECTS,
    fields: LLMUX_ERROR_FIELDS,
    why: 'llmux keeps its own `code` beside Anthropic\'s `type` (gateway-api.md "Errors"), and `debug` answers X-Debug-Auth; the SDKs read `type` and `message` only',
  },
  {
    side: 'anthropic',
    at: ANTHROPIC_ERROR_OBJECTS,
    fields: { details: { anyOf: [{ type: 'null' }, { type: 'object', properties: { error_code: STRING }, required: ['error_code'] }] } },
    why: 'Anthropic\'s errors carry `details` (null, or `{error_code, …}`: recorded in test/fixtures/upstream/anthropic-stream-error-midstream-overloaded.sse), which the SDK\'s APIError reads (core/error.ts `errorCode`) though its ErrorObject types leave it out',
  },
  {
    side: 'anthropic',
    at: ['ErrorObject'],
    change: (schema, schemas) => {
      schemas['RequestTooLargeErrorObject'] = { type: 'object', properties: { message: STRING, type: { type: 'string', const: 'request_too_large' }, ...LLMUX_ERROR_FIELDS }, required: ['message', 'type'], additionalProperties: false };
      (schema['anyOf'] as Json[]).push({ $ref: '#/definitions/RequestTooLargeErrorObject' });
    },
    why: 'a 413 is `request_too_large` on Anthropic\'s errors page (docs.claude.com/en/api/errors), a type the SDK\'s ErrorObject union does not name',
  },
  {
    side: 'openai',
    at: ['ChatCompletionResponseMessage', 'ChatCompletionStreamResponseDelta'],
    fields: { reasoning_content: STRING },
    why: 'a chat answer carries thinking as `reasoning_content` (translation.md "Streams": thinking_delta -> delta.reasoning_content), the field DeepSeek and other OpenAI-compatible servers use; the OpenAI SDK keeps unknown fields',
  },
  {
    side: 'openai',
    at: ['CreateChatCompletionResponse', 'CreateChatCompletionStreamResponse'],
    fields: { prompt_filter_results: { type: 'array' } },
    why: 'Azure OpenAI adds its prompt filter results to chat answers (test/helpers/fake-azure.ts), which llmux passes on from an Azure upstream as Azure\'s own clients get them',
  },
  {
    side: 'openai',
    at: ['CreateChatCompletionStreamResponse'],
    change: (schema, schemas) => {
      const published = { ...schema };
      for (const key of Object.keys(schema)) delete schema[key];
      schemas['AzurePromptFilterChunk'] = {
        type: 'object',
        properties: { id: { const: '' }, choices: { type: 'array', maxItems: 0 }, created: { const: 0 }, model: STRING, object: { const: '' }, system_fingerprint: { type: 'null' }, prompt_filter_results: { type: 'array' } },
        required: ['choices', 'object', 'prompt_filter_results'],
        additionalProperties: false,
      };
      // Told apart by Azure's empty `object`, so a failure names the one schema that applies.
      schema['if'] = { properties: { object: { const: '' } }, required: ['object'] };
      schema['then'] = { $ref: '#/components/schemas/AzurePromptFilterChunk' };
      schema['else'] = published;
    },
    why: 'Azure OpenAI opens a chat stream with a chunk of its own (empty id, object and choices, only `prompt_filter_results`: test/fixtures/upstream/azure-openai-stream-first-chunk-prompt-filter.sse), passed on from an Azure upstream; that chunk exactly, and no other',
  },
  {
    side: 'anthropic',
    at: ['RawMessageStopEvent'],
    fields: { 'amazon-bedrock-invocationMetrics': OBJECT },
    why: 'Bedrock puts its invocation metrics on a stream\'s `message_stop`, which llmux passes on from a Bedrock upstream as Bedrock\'s own clients get them',
  },
  {
    side: 'anthropic',
    at: ['RawMessageDeltaEvent'],
    fields: { context_management: OBJECT },
    why: 'the context-management beta\'s `message_delta` carries `context_management` (the SDK\'s Beta event types have it), passed on when a client asks for the beta',
  },
  {
    side: 'openai',
    at: ['ResponseItemList'],
    change: (schema) => {
      const properties = schema['properties'] as Json;
      properties['first_id'] = { type: ['string', 'null'] };
      properties['last_id'] = { type: ['string', 'null'] };
    },
    why: 'an empty page of input items (after the last one) has no first or last id: null, where the schema types them strings',
  },
  {
    side: 'openai',
    at: ['ListModelsResponse'],
    fields: { has_more: { type: 'boolean' }, first_id: { type: ['string', 'null'] }, last_id: { type: ['string', 'null'] } },
    why: 'the list carries the Anthropic SDK\'s paging fields too (llmux.md section 3), so both SDKs can list models',
  },
];

const ROOT = new URL('../fixtures/schemas/', import.meta.url);
const OPEN_SUFFIX = '~open';

function load(file: string): Json {
  return JSON.parse(readFileSync(new URL(file, ROOT), 'utf8')) as Json;
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose value is a map of names to schemas, or one schema or an array of them. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SCHEMA_VALUES = new Set(['items', 'additionalProperties', 'unevaluatedProperties', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf']);

/**
 * OpenAI's schema `node` as JSON Schema, closed unless `open` (an `allOf` member): `nullable` read,
 * a `$recursiveRef` named, objects closed.
 */
function normalise(node: unknown, name: string, open: boolean): unknown {
  if (Array.isArray(node)) return node.map((item) => normalise(item, name, false));
  if (!isObject(node)) return node;
  const out: Json = {};
  // An object whose `properties` is empty is free-form there (`EmptyModelParam`: any JSON Schema).
  const named = isObject(node['properties']) && Object.keys(node['properties']).length > 0;
  const composite = named || node['allOf'] !== undefined;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'nullable' || key === '$recursiveAnchor' || key === 'discriminator') continue;
    if (key === '$recursiveRef') out['$ref'] = `#/components/schemas/${name}`;
    else if (key === '$ref' && open) out['$ref'] = `${value as string}${OPEN_SUFFIX}`;
    else if (key === 'allOf') out[key] = (value as unknown[]).map((member) => normalise(member, name, true));
    // Alternatives beside the object's own fields add to them: closed once, at the object.
    else if ((key === 'anyOf' || key === 'oneOf') && composite) out[key] = (value as unknown[]).map((member) => normalise(member, name, true));
    else if (SCHEMA_MAPS.has(key)) out[key] = Object.fromEntries(Object.entries(value as Json).map(([field, sub]) => [field, normalise(sub, name, false)]));
    else if (SCHEMA_VALUES.has(key)) out[key] = normalise(value, name, false);
    else out[key] = value;
  }
  if (composite && !open && out['additionalProperties'] === undefined) out['unevaluatedProperties'] = false;
  if (node['nullable'] === true) return { anyOf: [out, { type: 'null' }] };
  return out;
}

function openaiDocument(): Json {
  const published = (load('openai.json')['components'] as Json)['schemas'] as Json;
  const schemas: Json = {};
  for (const [name, schema] of Object.entries(published)) {
    schemas[name] = normalise(schema, name, false);
    schemas[`${name}${OPEN_SUFFIX}`] = normalise(schema, name, true);
  }
  allow('openai', schemas);
  discriminate(schemas, '#/components/schemas/');
  return { $id: 'openai', components: { schemas } };
}

function anthropicDocument(): Json {
  const definitions = load('anthropic.json')['definitions'] as Json;
  allow('anthropic', definitions);
  discriminate(definitions, '#/definitions/');
  return { $id: 'anthropic', definitions };
}

function allow(side: Side, schemas: Json): void {
  for (const allowance of ALLOWED) {
    if (allowance.side !== side) continue;
    for (const name of allowance.at) {
      for (const suffix of side === 'openai' ? ['', OPEN_SUFFIX] : ['']) {
        const schema = schemas[`${name}${suffix}`];
        if (!isObject(schema)) throw new Error(`ALLOWED names ${side} schema ${name}, which is not there`);
        if (allowance.fields !== undefined) schema['properties'] = { ...(schema['properties'] as Json), ...allowance.fields };
        allowance.change?.(schema, schemas);
      }
    }
  }
}

/**
 * Each union of references to objects told apart by a constant `type` becomes a discriminated
 * `oneOf` (Ajv's `discriminator`): the same values pass, and a failure is reported for the
 * member its `type` names only.
 */
function discriminate(schemas: Json, prefix: string): void {
  const tagOf = (ref: unknown): string | undefined => {
    if (typeof ref !== 'string' || !ref.startsWith(prefix)) return undefined;
    const target = schemas[decodeURIComponent(ref.slice(prefix.length))];
    if (!isObject(target) || !(target['required'] as unknown[] | undefined)?.includes('type')) return undefined;
    const type = (target['properties'] as Json | undefined)?.['type'];
    if (!isObject(type)) return undefined;
    const values = type['const'] !== undefined ? [type['const']] : type['enum'];
    return Array.isArray(values) && values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(visit);
      return;
    }
    if (!isObject(node)) return;
    for (const key of ['anyOf', 'oneOf']) {
      const members = node[key];
      if (!Array.isArray(members) || members.length < 2 || node['discriminator'] !== undefined) continue;
      const tags = members.map((member) => (isObject(member) && Object.keys(member).length === 1 ? tagOf(member['$ref']) : undefined));
      if (tags.some((tag) => tag === undefined) || new Set(tags).size !== tags.length) continue;
      delete node[key];
      node['oneOf'] = members;
      node['discriminator'] = { propertyName: 'type' };
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(schemas);
}

let compiled: { ajv: Ajv2019; openai: Json; anthropic: Json } | undefined;
const validators = new Map<string, ValidateFunction>();

function validator(side: Side, name: string): ValidateFunction {
  const ref = side === 'openai' ? `openai#/components/schemas/${name}` : `anthropic#/definitions/${name}`;
  let validate = validators.get(ref);
  if (validate === undefined) {
    compiled ??= (() => {
      const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false, discriminator: true });
      const openai = openaiDocument();
      const anthropic = anthropicDocument();
      ajv.addSchema(openai);
      ajv.addSchema(anthropic);
      return { ajv, openai, anthropic };
    })();
    validate = compiled.ajv.getSchema(ref);
    if (validate === undefined) throw new Error(`no ${side} schema ${name}`);
    validators.set(ref, validate);
  }
  return validate;
}

/** The problems of `value` against `side`'s schema `name`, one line each (at most `limit`). */
export function problemsOf(side: Side, name: string, value: unknown, limit = 8): string[] {
  const validate = validator(side, name);
  if (validate(value)) return [];
  const errors = (validate.errors ?? []) as ErrorObject[];
  const lines = errors.slice(0, limit).map((error) => `${side} ${name}${error.instancePath === '' ? '' : ` at ${error.instancePath}`}: ${error.message ?? error.keyword}${describeParams(error)}`);
  if (errors.length > limit) lines.push(`… and ${errors.length - limit} more`);
  return lines;
}

function describeParams(error: ErrorObject): string {
  const params = error.params as Json;
  if (params['unevaluatedProperty'] !== undefined) return ` ("${String(params['unevaluatedProperty'])}")`;
  if (params['additionalProperty'] !== undefined) return ` ("${String(params['additionalProperty'])}")`;
  if (params['allowedValues'] !== undefined) return ` (${JSON.stringify(params['allowedValues'])})`;
  return '';
}

/** The member of a union of event schemas whose `type` is `type`, by the union's name. */
function eventSchemas(side: Side, union: string): Map<string, string> {
  if (compiled === undefined) validator(side, union);
  const document = (side === 'openai' ? ((compiled?.openai['components'] as Json)['schemas'] as Json) : (compiled?.anthropic['definitions'] as Json));
  const byType = new Map<string, string>();
  // The union may have been made a discriminated oneOf (see discriminate).
  const schema = document[union] as Json;
  const members = (schema['oneOf'] ?? schema['anyOf'] ?? []) as Json[];
  for (const member of members) {
    const name = (member['$ref'] as string).split('/').pop() as string;
    const typeField = ((document[name] as Json)['properties'] as Json | undefined)?.['type'] as Json | undefined;
    const value = typeField?.['const'] ?? (typeField?.['enum'] as unknown[] | undefined)?.[0];
    if (typeof value === 'string') byType.set(value, name);
  }
  return byType;
}

const unions = new Map<string, Map<string, string>>();

/** The problems of one stream event of a union (`ResponseStreamEvent`, `RawMessageStreamEvent`), checked as its own type. */
export function eventProblems(side: Side, union: string, event: unknown): string[] {
  let byType = unions.get(union);
  if (byType === undefined) {
    byType = eventSchemas(side, union);
    unions.set(union, byType);
  }
  const type = isObject(event) ? event['type'] : undefined;
  const name = typeof type === 'string' ? byType.get(type) : undefined;
  if (name === undefined) return [`${side} ${union}: no event type ${JSON.stringify(type)} in the schema`];
  return problemsOf(side, name, event);
}
