/**
 * What HTTP/1.1 lets into a request's head, as Node's client checks it: a header's name is a token,
 * its value has no line break or other control character (a tab is allowed), and the request
 * target has no space or control character. A value that broke these rules could end a line of
 * the head and start another (a header of its own, or a second request). Used where llmux writes
 * a head (src/providers/http1.ts) and where a config names headers (src/config/entries.ts).
 */

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;
const INVALID_TARGET_CHAR = /[^\u0021-\u00ff]/;

/** Whether `name` can be a header's name. */
export function headerNameValid(name: string): boolean {
  return TOKEN.test(name);
}

/** Whether `value` can be a header's value. */
export function headerValueValid(value: string): boolean {
  return !INVALID_VALUE_CHAR.test(value);
}

/** Whether `target` (a path and query) can be written in a request line as it is. */
export function requestTargetValid(target: string): boolean {
  return !INVALID_TARGET_CHAR.test(target);
}
