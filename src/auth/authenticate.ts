/**
 * Who is calling: reads the key from where the client's format sends it (`x-api-key` or
 * `Authorization: Bearer` unless told otherwise: src/common/credentials.ts), finds it in the
 * store, and refuses with 401 `invalid_api_key` when it is missing, malformed, unknown, revoked or
 * expired. With `X-Debug-Auth: true` the 401 says which of these it was, never a key or a hash.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError, insufficientPermissions, invalidApiKey } from '../common/errors.ts';
import { STANDARD_CREDENTIALS, readCredential } from '../common/credentials.ts';
import type { CredentialSource } from '../common/credentials.ts';
import type { KeyRecord, KeyStore } from './key-store.ts';
import { KEY_LENGTH, KEY_PREFIX } from './key-store.ts';
import { isExpired, keyStatus } from './key-record.ts';

export interface AuthDebug {
  /** The source the key was read from: a header's name, or `?name` for a query parameter. */
  credential_header: string | null;
  prefix_ok: boolean;
  key_found: boolean;
  revoked: boolean;
  expired: boolean;
  key_id?: string;
}

/** Where a request's key is read: its format's sources, and its query (for a `?key=` source). */
export interface CredentialPlaces {
  sources: readonly CredentialSource[];
  /** The request target's query, without the `?` ('' when none). */
  query: string;
}

const STANDARD_PLACES: CredentialPlaces = { sources: STANDARD_CREDENTIALS, query: '' };

function isDebug(headers: IncomingHttpHeaders): boolean {
  const v = headers['x-debug-auth'];
  return typeof v === 'string' && v.toLowerCase() === 'true';
}

/** Authenticates a request; returns its key record or throws 401. `places`: where its format sends the key (default `x-api-key`, then bearer). */
export function authenticate(headers: IncomingHttpHeaders, store: KeyStore, now: number, places: CredentialPlaces = STANDARD_PLACES): KeyRecord {
  return authenticateFrom(headers, store, now, places).key;
}

/**
 * {@link authenticate}, telling also which source carried the key (a header's name, or `?name`):
 * a route shared by formats answers in the one whose place the client used (`GET /v1/models`).
 */
export function authenticateFrom(headers: IncomingHttpHeaders, store: KeyStore, now: number, places: CredentialPlaces): { key: KeyRecord; source: string } {
  const { source: header, secret } = readCredential(headers, places.query, places.sources);
  const prefixOk = secret !== undefined && secret.length === KEY_LENGTH && secret.startsWith(KEY_PREFIX);
  const record = prefixOk ? store.findBySecret(secret) : undefined;
  if (record !== undefined && header !== null && keyStatus(record, now) === 'active') return { key: record, source: header };
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
  throw insufficientPermissions('This operation needs an admin key; create one with `llmux keys create --admin`', isDebug(headers) ? { debug: { key_id: record.id, admin: false } } : undefined);
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
