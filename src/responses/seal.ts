/**
 * Sealed reasoning (responses.md "State"): a thinking block sealed with AES-256-GCM under a server
 * secret, so a stateless client (Codex sends `store: false`) can carry it as a reasoning item's
 * `encrypted_content` and a later request can replay the original block, signature included.
 *
 * Format: `llmux.v1.` + base64url(12-byte IV | ciphertext | 16-byte tag). The prefix is also the
 * GCM additional data, so it cannot be swapped. Opening never throws: anything foreign (OpenAI's
 * own encrypted reasoning), tampered, cut or sealed under another secret gives undefined.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { SealableBlock } from '../formats/wire.ts';
import { SEAL_PREFIX, isLlmuxSeal } from '../formats/responses.ts';
import { writeFileAtomic } from '../common/files.ts';
import { isRecord } from '../common/json.ts';

/** What can be sealed: a thinking block with its signature, or a redacted one. */
export type { SealableBlock } from '../formats/wire.ts';

export { SEAL_PREFIX, isLlmuxSeal } from '../formats/responses.ts';
export const SEAL_SECRET_BYTES = 32;
/** The secret's file in LLMUX_HOME. */
export const SEAL_SECRET_FILE = 'responses-secret';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const AAD = Buffer.from(SEAL_PREFIX);

export interface Sealer {
  /** The block sealed, prefixed with `llmux.v1.`; a fresh IV each time. */
  seal(block: SealableBlock): string;
  /** The block, or undefined for anything not sealed by this secret. Never throws. */
  open(sealed: string): SealableBlock | undefined;
}


/** A sealer for a 32-byte secret. */
export function createSealer(secret: Uint8Array): Sealer {
  if (secret.byteLength !== SEAL_SECRET_BYTES) throw new Error(`the seal secret must be ${SEAL_SECRET_BYTES} bytes, not ${secret.byteLength}`);
  const key = Buffer.from(secret);
  return {
    seal(block) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv(ALGORITHM, key, iv);
      cipher.setAAD(AAD);
      const body = Buffer.concat([cipher.update(JSON.stringify(plain(block)), 'utf8'), cipher.final()]);
      return SEAL_PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
    },
    open(sealed) {
      if (typeof sealed !== 'string' || !isLlmuxSeal(sealed)) return undefined;
      const bytes = Buffer.from(sealed.slice(SEAL_PREFIX.length), 'base64url');
      if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
      try {
        const decipher = createDecipheriv(ALGORITHM, key, bytes.subarray(0, IV_BYTES));
        decipher.setAAD(AAD);
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
        const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
        return block(JSON.parse(text));
      } catch {
        return undefined;
      }
    },
  };
}

/** Only the fields that make the block, so nothing else a caller attached is sealed along. */
function plain(sealable: SealableBlock): SealableBlock {
  return sealable.type === 'redacted_thinking'
    ? { type: 'redacted_thinking', data: sealable.data }
    : { type: 'thinking', thinking: sealable.thinking, signature: sealable.signature ?? '' };
}

function block(value: unknown): SealableBlock | undefined {
  if (!isRecord(value)) return undefined;
  if (value['type'] === 'thinking' && typeof value['thinking'] === 'string' && typeof value['signature'] === 'string') {
    return { type: 'thinking', thinking: value['thinking'], signature: value['signature'] };
  }
  if (value['type'] === 'redacted_thinking' && typeof value['data'] === 'string') return { type: 'redacted_thinking', data: value['data'] };
  return undefined;
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
