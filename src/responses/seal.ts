/**
 * Sealed state (llmux.md section 11): what an upstream needs back unread on a later turn, sealed
 * with AES-256-GCM under a server secret so a client can carry it in its format's place for opaque
 * data (a Responses reasoning item's `encrypted_content`, a messages thinking block's `signature`,
 * a Gemini `thoughtSignature`), and a later request can replay it to the upstream that issued it.
 * What a seal holds (the state, its issuer, the key it was issued to) is the caller's JSON value:
 * src/dialects/carry.ts.
 *
 * Format: `llmux.v2.` + base64url(12-byte IV | ciphertext | 16-byte tag). The prefix is also the
 * GCM additional data, so it cannot be swapped. Opening never throws: anything foreign (OpenAI's
 * own encrypted reasoning), tampered, cut, sealed under another secret, or sealed by an earlier
 * llmux (`llmux.v1.`, bound to no key) gives undefined.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { SEAL_PREFIX } from '../formats/responses.ts';
import { writeFileAtomic } from '../common/files.ts';

export { SEAL_PREFIX, isLlmuxSeal } from '../formats/responses.ts';
export const SEAL_SECRET_BYTES = 32;
/** The secret's file in LLMUX_HOME. */
export const SEAL_SECRET_FILE = 'responses-secret';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const AAD = Buffer.from(SEAL_PREFIX);

export interface Sealer {
  /** `value` as JSON, sealed and prefixed with `llmux.v2.`; a fresh IV each time. */
  seal(value: object): string;
  /** The JSON value, or undefined for anything not sealed by this secret (in this version). Never throws. */
  open(sealed: string): unknown;
}


/** A sealer for a 32-byte secret. */
export function createSealer(secret: Uint8Array): Sealer {
  if (secret.byteLength !== SEAL_SECRET_BYTES) throw new Error(`the seal secret must be ${SEAL_SECRET_BYTES} bytes, not ${secret.byteLength}`);
  const key = Buffer.from(secret);
  return {
    seal(value) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv(ALGORITHM, key, iv);
      cipher.setAAD(AAD);
      const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
      return SEAL_PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
    },
    open(sealed) {
      if (typeof sealed !== 'string' || !sealed.startsWith(SEAL_PREFIX)) return undefined;
      const bytes = Buffer.from(sealed.slice(SEAL_PREFIX.length), 'base64url');
      if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
      try {
        const decipher = createDecipheriv(ALGORITHM, key, bytes.subarray(0, IV_BYTES));
        decipher.setAAD(AAD);
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
        const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The seal secret kept in `$LLMUX_HOME/responses-secret` (base64url, mode 0600), created on first
 * use. Creation cannot replace a secret another process made at the same moment: the file is
 * written whole under a temporary name and linked into place, which fails if the name exists, and
 * then the existing secret is read. Throws when the file exists but does not hold a secret.
 */
export function loadOrCreateSealSecret(home: string): Buffer {
  const path = join(home, SEAL_SECRET_FILE);
  const existing = readSecret(path);
  if (existing !== undefined) return existing;
  const secret = randomBytes(SEAL_SECRET_BYTES);
  const tmp = `${path}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
  writeFileAtomic(tmp, `${secret.toString('base64url')}\n`);
  try {
    linkSync(tmp, path);
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const winner = readSecret(path);
    if (winner === undefined) throw err;
    return winner;
  } finally {
    try { unlinkSync(tmp); } catch { /* already gone */ }
  }
}

function readSecret(path: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const secret = Buffer.from(text.trim(), 'base64url');
  if (secret.length !== SEAL_SECRET_BYTES) {
    throw new Error(`${path} does not hold a ${SEAL_SECRET_BYTES}-byte seal secret; restore it, or delete it to make a new one (reasoning sealed under the old one can no longer be replayed)`);
  }
  return secret;
}
