/**
 * Reading what the other side sent, leniently: translators never throw on an odd shape, they
 * skip what isn't there.
 */

/** The value as a plain object, or undefined. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** The object items of what should be an array of objects; anything else is skipped. */
export function records(value: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(value)) return [];
  const out: Array<Record<string, unknown>> = [];
  for (const item of value) {
    const record = asRecord(item);
    if (record !== undefined) out.push(record);
  }
  return out;
}
