/**
 * Reading parsed JSON of unknown shape: what a client, an upstream or a file sent. Nothing here
 * throws; a value of the wrong shape is simply not taken.
 */

/** Whether the value is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value as a plain object, or undefined. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}

/** The object items of what should be an array of objects; anything else is skipped. */
export function records(value: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(value)) return [];
  const out: Array<Record<string, unknown>> = [];
  for (const item of value) {
    if (isRecord(item)) out.push(item);
  }
  return out;
}

/** The value when it is a string with something in it. */
export function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** `text` parsed as JSON when it is an object; undefined when it does not parse or is anything else (a stored line read back leniently). */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    return asRecord(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** The JSON text of frozen values, by value (see {@link frozenJson}). */
const frozenTexts = new WeakMap<object, string>();

/**
 * `JSON.stringify(value)` of an object, kept for the object when it is frozen: a key's next turn is
 * read from its last (src/common/json-recall.ts) and its history's objects are the same frozen
 * ones, so a translation that writes a tool call's input as `arguments` turn after turn writes it
 * once. An object that may change is serialised every time.
 */
export function frozenJson(value: Record<string, unknown>): string {
  if (!Object.isFrozen(value)) return JSON.stringify(value);
  let text = frozenTexts.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    frozenTexts.set(value, text);
  }
  return text;
}
