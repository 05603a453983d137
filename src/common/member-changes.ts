/**
 * Changes to a JSON object body's top-level members, made the same way to the client's bytes
 * (./json-bytes.ts `withMembers`) and to a body object: a platform's envelope is one
 * (src/platforms/platform.ts).
 */
import { setOwn } from './json-bytes.ts';

/**
 * Top-level members to change in a JSON object body, by key: a value to set (added at the end when
 * the object lacks it), or undefined to take the member out. A platform's envelope is one
 * (src/platforms/platform.ts): Bedrock's takes out `model` and `stream` and sets `anthropic_version`.
 */
export type MemberChanges = ReadonlyMap<string, unknown>;

/** `edits` (JSON texts, as `withMembers` takes them) with `changes` over them. */
export function withChanges(edits: Map<string, string | undefined>, changes: MemberChanges): Map<string, string | undefined> {
  for (const [key, value] of changes) edits.set(key, value === undefined ? undefined : JSON.stringify(value));
  return edits;
}

/** A shallow copy of `value` with `changes` made: what `withMembers` makes of its bytes. */
export function changedObject<T extends object>(value: T, changes: MemberChanges): T {
  const copy = { ...value } as Record<string, unknown>;
  for (const [key, member] of changes) {
    if (member === undefined) delete copy[key];
    else setOwn(copy, key, member);
  }
  return copy as T;
}
