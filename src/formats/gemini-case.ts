/**
 * Gemini bodies in one spelling. Google's API reads proto JSON, which takes every field under its
 * lowerCamelCase name or its original snake_case one (`system_instruction`, `generation_config`,
 * `inline_data.mime_type`: how Google's own curl examples and LiteLLM write them), and reads a
 * null as "not set". The SDKs (`@google/genai`, Gemini CLI, `@ai-sdk/google`) send camelCase.
 * So a body is turned into camelCase once, here, and everything after reads one spelling.
 *
 * Only field names of Google's messages are renamed: the keys of maps and of values that are
 * free-form JSON stay as they are (function-call `args`, function-response `response`, a
 * schema's `properties` names, `parametersJsonSchema`, `responseJsonSchema`, `labels`, `default`,
 * `example`). Fields newer than this file are renamed too (they are proto fields) but their values
 * are left alone. A field given under both names is a 400: which one Google would read is not ours
 * to guess.
 *
 * Nothing is copied unless something changes; the walk recurses, bounded by the body reader's
 * nesting limit (src/http/body.ts).
 */
import { fail } from './validate-util.ts';

/**
 * How a value is read: `opaque` (left as it is), `plain` (a message whose fields, and theirs, are
 * all messages: every key renamed), a map (keys kept, values read by the inner shape), or a
 * message with its known fields. An array is read item by item with the same shape.
 */
type Shape = 'opaque' | 'plain' | MapShape | MessageShape;
interface MapShape { readonly map: Shape }
interface MessageShape { readonly fields: Readonly<Record<string, Shape>> }

const SCHEMA: MessageShape = {
  fields: {
    // Filled in below: a schema holds schemas.
  },
};
Object.assign(SCHEMA.fields, {
  properties: { map: SCHEMA },
  items: SCHEMA,
  anyOf: SCHEMA,
  enum: 'opaque',
  default: 'opaque',
  example: 'opaque',
} satisfies Record<string, Shape>);

const BLOB_PART: MessageShape = { fields: { inlineData: 'plain', fileData: 'plain' } };

const PART: MessageShape = {
  fields: {
    inlineData: 'plain',
    fileData: 'plain',
    functionCall: { fields: { args: 'opaque', partialArgs: 'opaque' } },
    functionResponse: { fields: { response: 'opaque', parts: BLOB_PART } },
    executableCode: 'plain',
    codeExecutionResult: 'plain',
    videoMetadata: 'plain',
    mediaResolution: 'plain',
    toolCall: 'opaque',
    toolResponse: 'opaque',
    partMetadata: 'opaque',
  },
};

const CONTENT: MessageShape = { fields: { parts: PART } };

const TOOL: MessageShape = {
  fields: {
    functionDeclarations: {
      fields: { parameters: SCHEMA, response: SCHEMA, parametersJsonSchema: 'opaque', responseJsonSchema: 'opaque' },
    },
    googleSearch: 'plain',
    googleSearchRetrieval: 'plain',
    codeExecution: 'plain',
    urlContext: 'plain',
    computerUse: 'plain',
    fileSearch: 'plain',
    googleMaps: 'plain',
  },
};

const GENERATION_CONFIG: MessageShape = {
  fields: {
    responseSchema: SCHEMA,
    responseJsonSchema: 'opaque',
    thinkingConfig: 'plain',
    speechConfig: 'plain',
    imageConfig: 'plain',
  },
};

const REQUEST: MessageShape = {
  fields: {
    contents: CONTENT,
    systemInstruction: CONTENT,
    tools: TOOL,
    toolConfig: 'plain',
    generationConfig: GENERATION_CONFIG,
    safetySettings: 'plain',
    labels: 'opaque',
  },
};

const COUNT_TOKENS: MessageShape = { fields: { contents: CONTENT, generateContentRequest: REQUEST } };

const SNAKE = /_([a-z0-9])/g;

/** `snake_case` -> `snakeCase`; a name without `_` (or with a leading one) is kept. */
function camelName(name: string): string {
  if (name.indexOf('_') <= 0) return name;
  return name.replace(SNAKE, (_match, letter: string) => letter.toUpperCase());
}

/** Sets an own, enumerable property, even for a key like `__proto__`. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `contents` + 2 -> `contents.2`; the root has no name. */
function join(path: string, key: string | number): string {
  return path === '' ? String(key) : `${path}.${key}`;
}

function normalize(value: unknown, shape: Shape, path: string): unknown {
  if (shape === 'opaque' || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const next = normalize(item, shape, join(path, i));
      if (next !== item) {
        copy ??= value.slice();
        copy[i] = next;
      }
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  const keys = Object.keys(record);
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as string;
    const field = record[key];
    let name = key;
    let inner: Shape = 'opaque';
    if (shape === 'plain') {
      name = camelName(key);
      inner = 'plain';
    } else if ('map' in shape) {
      inner = shape.map;
    } else {
      name = camelName(key);
      inner = Object.hasOwn(shape.fields, name) ? (shape.fields[name] as Shape) : 'opaque';
    }
    if (name !== key && Object.hasOwn(record, name)) {
      fail(join(path, name), `is given twice, as "${name}" and as "${key}"; send one`);
    }
    // A null field is an unset one (proto JSON); map values keep their nulls.
    const drop = field === null && !(typeof shape === 'object' && 'map' in shape);
    const next = drop ? undefined : normalize(field, inner, join(path, name));
    if (!drop && name === key && next === field) {
      if (copy !== undefined) setOwn(copy, key, field);
      continue;
    }
    if (copy === undefined) {
      copy = {};
      for (let j = 0; j < k; j++) setOwn(copy, keys[j] as string, record[keys[j] as string]);
    }
    if (!drop) setOwn(copy, name, next);
  }
  return copy ?? record;
}

/**
 * A generateContent body with every field under its camelCase name and null fields left out.
 * Returns the same object when it was written so already.
 * @throws GatewayError 400 for a field given under both its names.
 */
export function camelCaseGeminiRequest(body: Record<string, unknown>): Record<string, unknown> {
  return normalize(body, REQUEST, '') as Record<string, unknown>;
}

/** {@link camelCaseGeminiRequest} for a countTokens body (`contents` or `generateContentRequest`). */
export function camelCaseGeminiCountTokens(body: Record<string, unknown>): Record<string, unknown> {
  return normalize(body, COUNT_TOKENS, '') as Record<string, unknown>;
}
