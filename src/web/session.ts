/**
 * Web sessions and CSRF tokens for the dashboard and the device page.
 *
 * A session is a random id in an HttpOnly, SameSite=Strict cookie (Secure over https), mapped in
 * memory to the id of the admin key that signed in; the key itself is never kept. Every request
 * re-checks that key (still there, still admin, not revoked, not expired). Sessions end after
 * `ttlMs` (12 h by default), on sign-out, and when the server restarts.
 *
 * CSRF: a signed-in form carries the session's own token; a form shown before sign-in uses a
 * double-submit token (the same random value in an HttpOnly cookie and in a hidden field).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { KeyRecord, KeyStore } from '../auth/key-store.ts';
import { keyStatus } from '../auth/key-record.ts';

export const SESSION_COOKIE = 'llmux_session';
export const CSRF_COOKIE = 'llmux_csrf';
export const DEFAULT_SESSION_TTL_MS = 12 * 3_600_000;
const DEFAULT_MAX_SESSIONS = 10_000;

export interface Session {
  /** The cookie value. */
  id: string;
  keyId: string;
  /** The token every form of this session carries. */
  csrf: string;
  expiresAt: number;
  /** A one-time message for the next page (a new key is shown exactly once this way). */
  flash?: Flash | undefined;
}

export type Flash =
  | { kind: 'ok' | 'bad'; message: string }
  | { kind: 'new-key'; key: string; keyId: string; name: string };

export interface SessionStore {
  readonly ttlMs: number;
  create(keyId: string): Session;
  get(id: string): Session | undefined;
  destroy(id: string): void;
  size(): number;
}

export interface SessionStoreOptions {
  now?: () => number;
  ttlMs?: number;
  maxSessions?: number;
}

/** A random token: 32 bytes, base64url. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Constant-time comparison of two tokens; false when either is missing. */
export function tokensEqual(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined || a === '' || b === '') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function hashId(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/** Creates an in-memory session store. */
export function createSessionStore(options: SessionStoreOptions = {}): SessionStore {
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlMs ?? DEFAULT_SESSION_TTL_MS;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  // Keyed by a hash of the id, so a look-up's timing says nothing about live ids.
  const sessions = new Map<string, Session>();

  function sweep(t: number): void {
    for (const [h, s] of sessions) if (s.expiresAt <= t) sessions.delete(h);
  }

  return {
    ttlMs,
    create(keyId) {
      const t = now();
      if (sessions.size >= maxSessions) sweep(t);
      // Still full: the oldest session gives way (Map keeps insertion order).
      if (sessions.size >= maxSessions) {
        const oldest = sessions.keys().next();
        if (oldest.done !== true) sessions.delete(oldest.value);
      }
      const session: Session = { id: newToken(), keyId, csrf: newToken(), expiresAt: t + ttlMs };
      sessions.set(hashId(session.id), session);
      return session;
    },
    get(id) {
      const h = hashId(id);
      const session = sessions.get(h);
      if (session === undefined) return undefined;
      if (session.expiresAt <= now()) {
        sessions.delete(h);
        return undefined;
      }
      return session;
    },
    destroy(id) {
      sessions.delete(hashId(id));
    },
    size: () => sessions.size,
  };
}

/** Cookies of a request by name (first value wins). */
export function parseCookies(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const header = req.headers.cookie;
  if (typeof header !== 'string') return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || name in out) continue;
    out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

/** A `Set-Cookie` value: HttpOnly, SameSite=Strict, Path=/, Secure over https. */
export function cookie(name: string, value: string, options: { maxAgeSeconds: number; secure: boolean }): string {
  return `${name}=${value}; Max-Age=${options.maxAgeSeconds}; Path=/; HttpOnly; SameSite=Strict${options.secure ? '; Secure' : ''}`;
}

/** A `Set-Cookie` value that removes the cookie. */
export function clearCookie(name: string, secure: boolean): string {
  return cookie(name, '', { maxAgeSeconds: 0, secure });
}

/** A key that may use the web pages right now: present, admin, not revoked, not expired. */
export function usableAdmin(keys: KeyStore, keyId: string, nowMs: number): KeyRecord | undefined {
  const key = keys.get(keyId);
  if (key === undefined || key.id !== keyId || !key.admin || keyStatus(key, nowMs) !== 'active') return undefined;
  return key;
}

/** The signed-in session of a request and its admin key; an invalid session is ended. */
export function currentSession(req: IncomingMessage, sessions: SessionStore, keys: KeyStore, nowMs: number): { session: Session; key: KeyRecord } | undefined {
  const id = parseCookies(req)[SESSION_COOKIE];
  if (id === undefined || id === '') return undefined;
  const session = sessions.get(id);
  if (session === undefined) return undefined;
  const key = usableAdmin(keys, session.keyId, nowMs);
  if (key === undefined) {
    sessions.destroy(id);
    return undefined;
  }
  return { session, key };
}

export type SignInResult = { ok: true; key: KeyRecord } | { ok: false; status: 401 | 403; message: string };

/**
 * Checks a key typed into a sign-in form. The messages never repeat the key. The same rules as
 * the API apply (prefix, store, revoked, expired), then it must be an admin key.
 */
export function checkAdminSecret(keys: KeyStore, secret: string | undefined, nowMs: number): SignInResult {
  const typed = (secret ?? '').trim();
  if (typed === '') return { ok: false, status: 401, message: 'Enter an admin key.' };
  const found = keys.findBySecret(typed);
  if (found === undefined || keyStatus(found, nowMs) !== 'active') return { ok: false, status: 401, message: 'That key is not valid (unknown, revoked or expired).' };
  if (!found.admin) return { ok: false, status: 403, message: 'That key is valid but not an admin key; create one with `llmux keys create --admin`.' };
  return { ok: true, key: found };
}
