/**
 * Schemas between Google's subset and JSON Schema, both ways.
 *
 * Google's `Schema` (a function declaration's `parameters`, `generationConfig.responseSchema`) is a
 * subset of OpenAPI 3.0: an upper-case `type` (the API takes lower case too, and `@ai-sdk/google`
 * sends it so), `nullable` instead of a `null` type, string `enum` values (`format: "enum"`),
 * `propertyOrdering`, and the int64 bounds (`minItems`, `maxLength`, …) as strings. Chat, messages
 * and Responses upstreams take JSON Schema, so a Gemini client's schema is turned into one.
 *
 * The other way, a Gemini upstream takes JSON Schema as it is in `parametersJsonSchema` and
 * `responseJsonSchema` (v1beta, and what Gemini CLI sends), so the request translators send it
 * there untouched. {@link jsonSchemaToGeminiSchema} is for an endpoint that takes only the subset:
 * what the subset cannot say is dropped with a warning, following what `@google/genai`'s
 * `processJsonSchema` does (`type` arrays and `anyOf` with `null` become `nullable`).
 *
 * Both walks recurse; a parsed body's nesting is bounded by the body reader (src/http/body.ts).
 */
import type { GeminiSchema } from './gemini-types.ts';

type Json = Record<string, unknown>;

const GEMINI_TYPES: ReadonlySet<string> = new Set(['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']);
/** Bounds the SDK sends as int64 strings. */
const COUNT_KEYWORDS: ReadonlySet<string> = new Set(['minItems', 'maxItems', 'minLength', 'maxLength', 'minProperties', 'maxProperties']);
/** Keywords the subset has, beside the structural ones handled by name. */
const SUBSET_KEYWORDS: ReadonlySet<string> = new Set([
  'format', 'title', 'description', 'minimum', 'maximum', 'pattern', 'default', 'required', 'propertyOrdering', ...COUNT_KEYWORDS,
]);
/** The most `$ref`s one schema may have inlined: a schema whose definitions fan out grows no further. */
const MAX_REF_EXPANSIONS = 256;
/** JSON Schema keywords that only annotate or point elsewhere: dropped from the subset without a warning. */
const QUIET_KEYWORDS: ReadonlySet<string> = new Set(['$schema', '$id', '$comment', '$defs', 'definitions', 'examples', 'readOnly', 'writeOnly', 'deprecated']);

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An int64 bound as the SDK writes it (`"5"`) or as a number. */
function count(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return undefined;
}

// ---------- Google's subset -> JSON Schema ----------

/**
 * Google's schema subset as JSON Schema: types lower-cased, `nullable` as a `null` type (and a
 * `null` enum value), `propertyOrdering` as the order of `properties`, numeric enum strings of an
 * integer or number type as numbers, string bounds as numbers, `format: "enum"` and
 * `TYPE_UNSPECIFIED` dropped. Keywords beyond the subset (`$ref`, `additionalProperties`,
 * `oneOf`, … which clients send and the API takes) are kept, their subschemas converted too.
 */
export function geminiSchemaToJsonSchema(schema: unknown): Json {
  if (!isJson(schema)) return {};
  const out: Json = {};
  const rawType = typeof schema['type'] === 'string' ? schema['type'].toUpperCase() : undefined;
  const type = rawType !== undefined && GEMINI_TYPES.has(rawType) ? rawType.toLowerCase() : undefined;
  const nullable = schema['nullable'] === true;
  for (const key of Object.keys(schema)) {
    const value = schema[key];
    switch (key) {
      case 'type':
        if (type !== undefined) out['type'] = nullable && type !== 'null' ? [type, 'null'] : type;
        else if (typeof value !== 'string') out['type'] = value;
        break;
      case 'nullable':
        break;
      case 'format':
        if (value !== 'enum') out['format'] = value;
        break;
      case 'enum':
        out['enum'] = Array.isArray(value) ? enumValues(value, type, nullable) : value;
        break;
      case 'properties':
        if (isJson(value)) out['properties'] = orderedProperties(value, schema['propertyOrdering']);
        break;
      case 'propertyOrdering':
        break;
      case 'items':
      case 'additionalProperties':
      case 'not':
        out[key] = isJson(value) ? geminiSchemaToJsonSchema(value) : value;
        break;
      case 'anyOf':
      case 'oneOf':
      case 'allOf':
        out[key] = Array.isArray(value) ? value.map((item) => geminiSchemaToJsonSchema(item)) : value;
        break;
      case 'example':
        out['examples'] = [value];
        break;
      default:
        out[key] = COUNT_KEYWORDS.has(key) ? (count(value) ?? value) : value;
    }
  }
  // `nullable` on a schema without a type (an anyOf, say): null becomes one more choice.
  if (nullable && type === undefined && Array.isArray(out['anyOf'])) out['anyOf'] = [...out['anyOf'], { type: 'null' }];
  return out;
}

function enumValues(values: unknown[], type: string | undefined, nullable: boolean): unknown[] {
  const numeric = type === 'integer' || type === 'number';
  const out = values.map((value) => (numeric && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value));
  if (nullable && !out.includes(null)) out.push(null);
  return out;
}

/** Properties converted, in `propertyOrdering`'s order first (the names it lists), then the rest as given. */
function orderedProperties(properties: Json, ordering: unknown): Json {
  const out: Json = {};
  const names = Array.isArray(ordering) ? ordering.filter((name): name is string => typeof name === 'string' && Object.hasOwn(properties, name)) : [];
  for (const name of [...names, ...Object.keys(properties)]) {
    if (Object.hasOwn(out, name)) continue;
    Object.defineProperty(out, name, { value: geminiSchemaToJsonSchema(properties[name]), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

// ---------- JSON Schema -> Google's subset ----------

/** Where local `$ref`s point: `#/$defs/…` and `#/definitions/…` of the root schema. */
interface RefContext {
  root: Json;
  /** References being expanded: one met again is a cycle. */
  open: Set<string>;
  /** References expanded so far, shared by the whole walk: what bounds a schema that fans out. */
  expanded: { count: number };
  warn: (message: string) => void;
  path: string;
}

/**
 * A JSON Schema as Google's subset, for an endpoint that takes only `parameters` /
 * `responseSchema`. Types upper-cased; `type: [t, "null"]` and `anyOf` with a `null` member become
 * `nullable`; several types become `anyOf`; `const` and non-string `enum` values become string
 * enums; `oneOf` becomes `anyOf`; local `$ref`s are inlined (a cycle, or references past the
 * 256th, cut to an object); an
 * `allOf` of objects is merged. Keywords the subset has no place for (`additionalProperties`,
 * `patternProperties`, `if`/`then`/`else`, `not`, `exclusiveMinimum`, …) are dropped, each named
 * once in a warning with its path.
 */
export function jsonSchemaToGeminiSchema(schema: unknown, warn: (message: string) => void = () => {}, path = 'schema'): GeminiSchema {
  const root = isJson(schema) ? schema : {};
  return toSubset(schema, { root, open: new Set(), expanded: { count: 0 }, warn, path });
}

function toSubset(schema: unknown, context: RefContext): GeminiSchema {
  // `true` / `{}` accept anything; the subset has no "any", so the type is left unset.
  if (!isJson(schema)) return {};
  const ref = schema['$ref'];
  if (typeof ref === 'string') return inlineRef(ref, schema, context);
  const allOf = schema['allOf'];
  if (Array.isArray(allOf)) return toSubset(mergeAllOf(schema, allOf, context), context);

  const out: GeminiSchema = {};
  // A schema already in the subset's form keeps its `nullable`.
  if (schema['nullable'] === true) out.nullable = true;
  const anyOf = Array.isArray(schema['anyOf']) ? schema['anyOf'] : Array.isArray(schema['oneOf']) ? schema['oneOf'] : undefined;
  if (anyOf !== undefined) {
    const members = anyOf.filter((member) => !(isJson(member) && member['type'] === 'null'));
    if (members.length < anyOf.length) out.nullable = true;
    // `anyOf: [X, {type: null}]` is X, nullable: what zod's `.nullable()` writes.
    if (members.length === 1) return Object.assign(out, toSubset({ ...without(schema, ['anyOf', 'oneOf']), ...(isJson(members[0]) ? members[0] : {}) }, context));
    out.anyOf = members.map((member, index) => toSubset(member, { ...context, path: `${context.path}.anyOf.${index}` }));
  }

  const type = schema['type'];
  if (typeof type === 'string') {
    if (type === 'null') out.nullable = true;
    else out.type = type.toUpperCase();
  } else if (Array.isArray(type)) {
    const types = type.filter((item): item is string => typeof item === 'string' && item !== 'null');
    if (types.length < type.length) out.nullable = true;
    if (types.length === 1) out.type = (types[0] as string).toUpperCase();
    else if (types.length > 1) out.anyOf = types.map((item) => ({ type: item.toUpperCase() }));
  }

  for (const key of Object.keys(schema)) {
    const value = schema[key];
    if (key === 'type' || key === 'anyOf' || key === 'oneOf' || key === 'nullable') continue;
    if (key === 'properties' && isJson(value)) {
      const properties: Record<string, GeminiSchema> = {};
      for (const name of Object.keys(value)) {
        const converted = toSubset(value[name], { ...context, path: `${context.path}.properties.${name}` });
        Object.defineProperty(properties, name, { value: converted, enumerable: true, writable: true, configurable: true });
      }
      out.properties = properties;
    } else if (key === 'items' && isJson(value)) {
      out.items = toSubset(value, { ...context, path: `${context.path}.items` });
    } else if (key === 'items' && Array.isArray(value)) {
      context.warn(`${context.path}.items: a tuple cannot be described to this Gemini upstream; its first item's schema is used for every item`);
      out.items = toSubset(value[0], { ...context, path: `${context.path}.items.0` });
    } else if (key === 'enum' && Array.isArray(value)) {
      out.enum = value.filter((item) => item !== null).map((item) => (typeof item === 'string' ? item : JSON.stringify(item)));
      if (value.includes(null)) out.nullable = true;
      out.format ??= 'enum';
    } else if (key === 'const') {
      out.enum = [typeof value === 'string' ? value : JSON.stringify(value)];
      out.format ??= 'enum';
    } else if (key === 'examples' && Array.isArray(value)) {
      if (value.length > 0) out.example = value[0];
    } else if (COUNT_KEYWORDS.has(key)) {
      const bound = count(value);
      if (bound !== undefined) out[key] = String(bound);
    } else if (SUBSET_KEYWORDS.has(key)) {
      out[key] = value;
    } else if (!QUIET_KEYWORDS.has(key)) {
      context.warn(`${context.path}.${key}: dropped, this Gemini upstream's schema subset has no "${key}"`);
    }
  }
  if (out.type === undefined && out.anyOf === undefined && out.properties !== undefined) out.type = 'OBJECT';
  return out;
}

function without(schema: Json, keys: string[]): Json {
  const out: Json = {};
  for (const key of Object.keys(schema)) if (!keys.includes(key)) out[key] = schema[key];
  return out;
}

function inlineRef(ref: string, schema: Json, context: RefContext): GeminiSchema {
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const defs = match === null ? undefined : context.root[match[1] as string];
  const target = isJson(defs) && match !== null ? defs[decodeURIComponent((match[2] as string).replace(/~1/g, '/').replace(/~0/g, '~'))] : undefined;
  if (target === undefined) {
    context.warn(`${context.path}.$ref: "${ref}" cannot be resolved here; described as an object`);
    return { type: 'OBJECT' };
  }
  if (context.open.has(ref)) {
    context.warn(`${context.path}.$ref: "${ref}" refers to itself, which this Gemini upstream's schema subset cannot say; cut to an object`);
    return { type: 'OBJECT' };
  }
  // Each definition referring to the next one twice would double the schema at every step.
  if (++context.expanded.count > MAX_REF_EXPANSIONS) {
    if (context.expanded.count === MAX_REF_EXPANSIONS + 1) context.warn(`${context.path}.$ref: more than ${MAX_REF_EXPANSIONS} references to inline; this one and the rest are cut to objects`);
    return { type: 'OBJECT' };
  }
  context.open.add(ref);
  const converted = toSubset({ ...without(schema, ['$ref']), ...(isJson(target) ? target : {}) }, context);
  context.open.delete(ref);
  return converted;
}

/** `allOf` folded into its schema: properties and `required` gathered, the first of anything else kept. */
function mergeAllOf(schema: Json, members: unknown[], context: RefContext): Json {
  const merged: Json = without(schema, ['allOf']);
  const properties: Json = isJson(merged['properties']) ? { ...merged['properties'] } : {};
  const required = new Set<string>(Array.isArray(merged['required']) ? merged['required'].filter((name): name is string => typeof name === 'string') : []);
  for (const member of members) {
    if (!isJson(member)) continue;
    const resolved = typeof member['$ref'] === 'string' ? (toSubset(member, context) as Json) : member;
    for (const key of Object.keys(resolved)) {
      const value = resolved[key];
      if (key === 'properties' && isJson(value)) {
        Object.assign(properties, value);
      } else if (key === 'required' && Array.isArray(value)) {
        for (const name of value) if (typeof name === 'string') required.add(name);
      } else if (!Object.hasOwn(merged, key)) {
        merged[key] = value;
      }
    }
  }
  if (Object.keys(properties).length > 0) merged['properties'] = properties;
  if (required.size > 0) merged['required'] = [...required];
  return merged;
}
