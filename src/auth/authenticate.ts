/**
 * Who is calling: reads the key from `x-api-key` or `Authorization: Bearer`, finds it in the
 * store, and refuses with 401 `invalid_api_key` when it is missing, malformed, unknown, revoked or
 * expired. With `X-Debug-Auth: true` the 401 says which of these it was, never a key or a hash.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError, invalidApiKey } from '../common/errors.ts';
import type { KeyRecord, KeyStore } from './key-store.ts';
import { KEY_LENGTH, KEY_PREFIX } from './key-store.ts';
import { isExpired, keyStatus } from './key-record.ts';

export interface AuthDebug {
  credential_header: 'x-api-key' | 'authorization' | null;
  prefix_ok: boolean;
  key_found: boolean;
  revoked: boolean;
  expired: boolean;
  key_id?: string;
}

/** Reads the presented key and which header carried it. `x-api-key` wins when both are sent. */
export function readCredential(headers: IncomingHttpHeaders): { header: AuthDebug['credential_header']; secret: string | undefined } {
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey !== '') return { header: 'x-api-key', secret: apiKey.trim() };
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth !== '') {
    const space = auth.indexOf(' ');
    const scheme = space === -1 ? auth : auth.slice(0, space);
    if (scheme.toLowerCase() === 'bearer') return { header: 'authorization', secret: auth.slice(space + 1).trim() };
    return { header: 'authorization', secret: undefined };
  }
  return { header: null, secret: undefined };
}

function isDebug(headers: IncomingHttpHeaders): boolean {
  const v = headers['x-debug-auth'];
  return typeof v === 'string' && v.toLowerCase() === 'true';
}

/** Authenticates a request; returns its key record or throws 401. */
export function authenticate(headers: IncomingHttpHeaders, store: KeyStore, now: number): KeyRecord {
  const { header, secret } = readCredential(headers);
  const prefixOk = secret !== undefined && secret.length === KEY_LENGTH && secret.startsWith(KEY_PREFIX);
  const record = prefixOk ? store.findBySecret(secret) : undefined;
  if (record !== undefined && keyStatus(record, now) === 'active') return record;
  const revoked = record !== undefined && record.revoked_at !== null;
  const expired = record !== undefined && isExpired(record, now);
  if (!isDebug(headers)) throw invalidApiKey();
  const debug: AuthDebug = { credential_header: header, prefix_ok: prefixOk, key_found: record !== undefined, revoked, expired };
  if (record !== undefined) debug.key_id = record.id;
  throw invalidApiKey({ debug });
}

/** 403 for a non-admin key on an admin operation. */
export function requireAdmin(record: KeyRecord, headers: IncomingHttpHeaders): void {
  if (record.admin) return;
  throw new GatewayError(
    403,
    'permission_error',
    'insufficient_permissions',
    'This operation needs an admin key; create one with `llmux keys create --admin`',
    isDebug(headers) ? { extra: { debug: { key_id: record.id, admin: false } } } : {},
  );
}

/** 403 when a key limited to some models asks for another; with `X-Debug-Auth: true`, which key and that it is limited. */
export function checkModelAllowed(record: KeyRecord, model: string, headers: IncomingHttpHeaders): void {
  if (record.models === null || record.models.includes(model)) return;
  throw new GatewayError(
    403,
    'permission_error',
    'model_not_allowed',
    `This key may not use model "${model.slice(0, 200)}"; it is limited to: ${record.models.join(', ')}`,
    isDebug(headers) ? { extra: { debug: { key_id: record.id, model_allowed: false } } } : {},
  );
}
