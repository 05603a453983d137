/**
 * Small checks shared by the request validators of both formats. Every failure throws
 * `invalidParameters("<path>: <rule>", path)`, so a client sees which field is wrong and what it
 * must be (and OpenAI's `error.param` names it).
 *
 * The input is hostile parsed JSON: fields are read as own properties only (a body may carry
 * `__proto__` or `constructor` keys, and an absent field must never resolve to something inherited
 * from `Object.prototype`), and nothing here recurses.
 */
import { invalidParameters } from '../common/errors.ts';
import { isRecord } from '../common/json.ts';

export type JsonObject = Record<string, unknown>;

/** True for a JSON object: not null, not an array. */
export const isObject: (value: unknown) => value is JsonObject = isRecord;

/** An own property of `obj`, or undefined; never an inherited one. */
export function field(obj: JsonObject, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** Joins a parent path and a key or index: `messages` + 2 -> `messages.2`. */
/** A top-level parameter, with an explicit null read as "not given". */
export function given(request: JsonObject, key: string): unknown {
  const value = field(request, key);
  return value === null ? undefined : value;
}

/** The request without the `nullable` parameters that are explicitly null (a copy only when one is). */
export function withoutNulls(request: JsonObject, nullable: readonly string[]): JsonObject {
  let copy: JsonObject | undefined;
  for (const key of nullable) {
    if (field(request, key) !== null) continue;
    // Spread copies own properties with define semantics, so a `__proto__` key stays data.
    copy ??= { ...request };
    delete copy[key];
  }
  return copy ?? request;
}

export function at(path: string, key: string | number): string {
  return `${path}.${key}`;
}

/** Throws the 400 for `path` with a free-form rule. */
export function fail(path: string, rule: string): never {
  throw invalidParameters(`${path}: ${rule}`, path);
}

/**
 * Throws the 400 for a value that broke `expected` ("a string", "an integer >= 1"); a missing
 * value says it is required, so the same check serves required and optional fields.
 */
export function reject(value: unknown, path: string, expected: string): never {
  return fail(path, value === undefined ? `is required and must be ${expected}` : `must be ${expected}`);
}

/** A JSON object (not null, not an array). */
export function checkObject(value: unknown, path: string, expected = 'an object'): JsonObject {
  if (!isObject(value)) reject(value, path, expected);
  return value;
}

/** A JSON array; its items are the caller's to check. */
export function checkArray(value: unknown, path: string, expected = 'an array'): unknown[] {
  if (!Array.isArray(value)) reject(value, path, expected);
  return value;
}

/** A string, possibly empty. */
export function checkString(value: unknown, path: string): string {
  if (typeof value !== 'string') reject(value, path, 'a string');
  return value;
}

/** A string with at least one character. */
export function checkNonEmptyString(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '') reject(value, path, 'a non-empty string');
  return value;
}

/** `true` or `false`; no truthy strings or numbers. */
export function checkBoolean(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') reject(value, path, 'a boolean');
  return value;
}

/** A finite number in `[min, max]`. */
export function checkNumberInRange(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !(value >= min && value <= max)) {
    reject(value, path, `a number from ${min} to ${max}`);
  }
  return value;
}

/** An integer `>= min` (and `<= max` when given). */
export function checkInteger(value: unknown, path: string, min: number, max?: number): number {
  if (!Number.isInteger(value) || (value as number) < min || (max !== undefined && (value as number) > max)) {
    reject(value, path, max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`);
  }
  return value as number;
}

/** A fixed set of allowed strings with its description, built once at module level by `oneOf`. */
export interface OneOf {
  readonly values: ReadonlySet<string>;
  /** "one of a, b, c", or `"a"` for a single value. */
  readonly expected: string;
}

/** Builds a fixed set for `checkOneOf`; call it once at module level, not per request. */
export function oneOf(values: readonly string[]): OneOf {
  return {
    values: new Set(values),
    expected: values.length === 1 ? `"${values[0]}"` : `one of ${values.join(', ')}`,
  };
}

/** A string from a fixed set. */
export function checkOneOf(value: unknown, path: string, allowed: OneOf): string {
  if (typeof value !== 'string' || !allowed.values.has(value)) reject(value, path, allowed.expected);
  return value;
}

/** An array whose every item is a string. */
export function checkStringArray(value: unknown, path: string): string[] {
  const items = checkArray(value, path, 'an array of strings');
  for (let i = 0; i < items.length; i++) {
    if (typeof items[i] !== 'string') fail(at(path, i), 'must be a string');
  }
  return items as string[];
}

/** Tool and schema names as both providers allow them: 1 to 64 of a-z, A-Z, 0-9, `_`, `-`. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A tool (or schema) name in the charset and length both providers accept. */
export function checkToolName(value: unknown, path: string): string {
  if (typeof value !== 'string' || !TOOL_NAME.test(value)) {
    reject(value, path, 'a string of 1 to 64 characters from a-z, A-Z, 0-9, _ and -');
  }
  return value;
}

/** Objects one rule found valid before (see {@link createValidMemo}). */
export interface ValidMemo {
  has(value: unknown): boolean;
  /** Notes `value` as valid, when it is an object that cannot change. */
  note(value: unknown): void;
}

/**
 * Objects a rule found valid before, by object: a key's next turn is read from its last
 * (src/common/json-recall.ts), and the messages, items and tools it kept are the same objects,
 * frozen, so what was valid is valid still. Only frozen objects are noted; a rule whose verdict on
 * an object depends on where the object is (the first message, strict alternation) must not ask.
 */
export function createValidMemo(): ValidMemo {
  const valid = new WeakSet<object>();
  return {
    has: (value) => typeof value === 'object' && value !== null && valid.has(value),
    note(value) {
      if (typeof value === 'object' && value !== null && Object.isFrozen(value)) valid.add(value);
    },
  };
}
