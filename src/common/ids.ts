import { randomBytes } from 'node:crypto';

/**
 * A fresh id in the providers' style: `prefix` then 24 alphanumeric characters (12 random bytes
 * as hex), e.g. `msg_…`, `chatcmpl-…`, `toolu_…`.
 */
export function newId(prefix: string): string {
  return prefix + randomBytes(12).toString('hex');
}
