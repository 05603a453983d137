/**
 * Reads `usage` (or the format's own usage key: Gemini's `usageMetadata`) out of a whole JSON answer
 * without parsing the rest of it. Same-format answers are passed to the client as the upstream's
 * bytes, so parsing the whole answer only to read a dozen numbers would build (and collect) every
 * object in it. The providers put their usage near the end.
 */

import { asRecord } from '../common/json.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const USAGE_KEY = Buffer.from('"usage"');
/** Other formats' usage keys as bytes, made once each. */
const keyBytes = new Map<string, Buffer>([['usage', USAGE_KEY]]);

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Index of the bracket that brings the nesting from `depth` (at `from`) down to 0, or -1. Strings
 * are skipped whole, so brackets inside them don't count.
 */
function closingAt(bytes: Buffer, from: number, depth: number): number {
  let level = depth;
  for (let i = from; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      for (i++; i < bytes.length && bytes[i] !== QUOTE; i++) if (bytes[i] === BACKSLASH) i++;
    } else if (byte === OPEN || byte === OPEN_ARRAY) {
      level++;
    } else if ((byte === CLOSE || byte === CLOSE_ARRAY) && --level === 0) {
      return i;
    }
  }
  return -1;
}

/**
 * The top-level `usage` object (`key`) of a JSON answer, or undefined when there is none or the
 * answer is laid out so that it can't be found this way (the caller then parses the whole answer).
 */
export function peekUsage(bytes: Buffer, key = 'usage'): Record<string, unknown> | undefined {
  // Only an answer that is a JSON object has a top-level key.
  let first = 0;
  while (isSpace(bytes[first])) first++;
  if (bytes[first] !== OPEN) return undefined;
  let quoted = keyBytes.get(key);
  if (quoted === undefined) {
    quoted = Buffer.from(JSON.stringify(key));
    keyBytes.set(key, quoted);
  }
  const at = bytes.lastIndexOf(quoted);
  if (at === -1) return undefined;
  let i = at + quoted.length;
  while (isSpace(bytes[i])) i++;
  if (bytes[i] !== 0x3a /* : */) return undefined;
  i++;
  while (isSpace(bytes[i])) i++;
  if (bytes[i] !== OPEN) return undefined;
  const close = closingAt(bytes, i, 0);
  if (close === -1) return undefined;
  const end = close + 1;
  // What follows must close exactly one level and then nothing: the key was a top-level one,
  // not, say, a tool input's "usage".
  const last = closingAt(bytes, end, 1);
  if (last === -1) return undefined;
  for (let j = last + 1; j < bytes.length; j++) if (!isSpace(bytes[j])) return undefined;
  try {
    const usage = JSON.parse(bytes.toString('utf8', i, end)) as unknown;
    return asRecord(usage);
  } catch {
    return undefined;
  }
}
