/**
 * The device-flow grant store (RFC 8628, llmux.md section 3): pending grants in memory, with a
 * cap, an expiry and the polling pace. Pure: no I/O, no key store, an injectable clock. The
 * routes turn its answers into HTTP and create the key when a grant is redeemed.
 *
 * Decisions beyond the specs:
 * - A grant is looked up by the SHA-256 of its device code, so the secret itself is not kept.
 * - Only live grants (pending, or approved and not yet redeemed, before their expiry) count
 *   toward the cap. A grant stays known for one more `expiresInMs` after it expires or is denied,
 *   so a late poll still hears `expired_token` / `access_denied`; after that it is forgotten and
 *   polls hear `invalid_grant`. Memory is therefore bounded by about twice the cap.
 * - A redeemed grant is forgotten at once: the key is handed out exactly once, and a second poll
 *   hears `invalid_grant`, as for a code never issued.
 * - A grant remembers the party (client address, see src/web/device-routes.ts) that started it, so
 *   the routes can hold one party to a few live grants of the cap: one party must not be able to
 *   fill it for everyone else.
 * - `slow_down` applies to pending grants only (a decided grant ends the polling anyway) and
 *   allows `POLL_TOLERANCE_MS` of jitter, since two polls sent `interval` apart can arrive a
 *   little closer together. The first poll may come at any time.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { TierName } from '../config/types.ts';

/** Letters without vowels or look-alikes (no 0/O, 1/I/L confusion, no accidental words). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;
export const DEFAULT_EXPIRES_IN_MS = 900_000;
export const DEFAULT_INTERVAL_SECONDS = 5;
export const DEFAULT_MAX_PENDING = 1_000;
/** RFC 8628 section 3.5: each `slow_down` adds 5 seconds to the interval. */
export const SLOW_DOWN_STEP_SECONDS = 5;
export const POLL_TOLERANCE_MS = 500;
const MAX_CLIENT_NAME = 100;

export interface DeviceFlowOptions {
  now?: () => number;
  maxPending?: number;
  expiresInMs?: number;
  intervalSeconds?: number;
}

export type GrantStatus = 'pending' | 'approved' | 'denied';

/** What a person approving a request sees; never the device code. */
export interface GrantView {
  /** A log-safe id (`dev_` + 12 hex), not a secret. */
  id: string;
  /** Shown as `XXXX-XXXX`. */
  userCode: string;
  clientName: string;
  createdAt: number;
  expiresAt: number;
  status: GrantStatus;
}

export interface StartedGrant {
  id: string;
  deviceCode: string;
  userCode: string;
  expiresInSeconds: number;
  intervalSeconds: number;
}

export interface Approval {
  tier: TierName;
  /** Name for the key; the client's name when absent. */
  name?: string | undefined;
  /** Id of the admin key that decided (for the log). */
  byKeyId: string;
}

export type PollResult =
  | { outcome: 'authorization_pending'; intervalSeconds: number }
  | { outcome: 'slow_down'; intervalSeconds: number }
  | { outcome: 'expired_token' }
  | { outcome: 'access_denied' }
  | { outcome: 'invalid_grant' }
  | { outcome: 'approved'; grant: GrantView; keyName: string; tier: TierName };

export type DecideResult =
  | { outcome: 'ok'; grant: GrantView }
  | { outcome: 'not_found' }
  | { outcome: 'expired' }
  | { outcome: 'already_decided'; status: GrantStatus };

/**
 * The grant store as the routes use it: this process's (`createDeviceFlow`, synchronous) or a
 * shared one (src/state/device-grants.ts), whose answers come from the state server, so callers
 * await them.
 */
export interface DeviceFlow {
  readonly intervalSeconds: number;
  readonly expiresInMs: number;
  readonly maxPending: number;
  /** Starts a grant for `party` (who asked: a client address), or returns undefined when `maxPending` live grants exist. */
  start(clientName: string, party?: string): StartedGrant | undefined | Promise<StartedGrant | undefined>;
  /** One poll of the token endpoint. An `approved` answer is final only after `redeem`. */
  poll(deviceCode: string): PollResult | Promise<PollResult>;
  /**
   * Claims an approved grant to issue its key, and forgets it: true for exactly one caller (across
   * processes, for a shared store); false when it is not approved, or was claimed already.
   */
  redeem(deviceCode: string): boolean | Promise<boolean>;
  /** A live grant by user code (any case, dashes and spaces ignored). */
  find(userCode: string): GrantView | undefined | Promise<GrantView | undefined>;
  approve(userCode: string, approval: Approval): DecideResult | Promise<DecideResult>;
  deny(userCode: string): DecideResult | Promise<DecideResult>;
  /** Live pending grants, oldest first. */
  pending(): GrantView[] | Promise<GrantView[]>;
  /** Live grants (pending or approved, not expired), all or those `party` started. */
  liveCount(party?: string): number | Promise<number>;
}

/** This process's grant store: every answer is immediate. */
export interface LocalDeviceFlow extends DeviceFlow {
  start(clientName: string, party?: string): StartedGrant | undefined;
  poll(deviceCode: string): PollResult;
  redeem(deviceCode: string): boolean;
  find(userCode: string): GrantView | undefined;
  approve(userCode: string, approval: Approval): DecideResult;
  deny(userCode: string): DecideResult;
  pending(): GrantView[];
  liveCount(party?: string): number;
}

interface Grant extends GrantView {
  party: string;
  intervalSeconds: number;
  lastPollAt: number | undefined;
  approval: Approval | undefined;
}

/** `WDJBMJHT` or `wdjb-mjht` -> `WDJBMJHT`; undefined when it cannot be a user code. */
export function normalizeUserCode(text: string): string | undefined {
  const code = text.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const c of code) if (!USER_CODE_ALPHABET.includes(c)) return undefined;
  return code;
}

/** `WDJBMJHT` -> `WDJB-MJHT`. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * Characters that change how the text around them is shown without showing themselves: the
 * bidirectional controls (a right-to-left override makes "evil\u202Egnp.exe" read "evilexe.png")
 * and zero-width spaces. An approver must see the name as it is.
 */
const INVISIBLE_FORMATTING = /[\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/**
 * A client name fit to show and store: control characters removed, bidirectional controls and
 * zero-width spaces dropped, trimmed, at most 100 characters.
 */
export function cleanClientName(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  // eslint-disable-next-line no-control-regex
  const name = raw.replace(INVISIBLE_FORMATTING, '').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ').replace(/\s+/g, ' ').trim();
  if (name === '') return undefined;
  return [...name].slice(0, MAX_CLIENT_NAME).join('');
}

/** SHA-256 of a device code, hex: the only form in which grant stores keep it. */
export function hashDeviceCode(deviceCode: string): string {
  return createHash('sha256').update(deviceCode).digest('hex');
}

/** A fresh random user code (8 letters of `USER_CODE_ALPHABET`). */
export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

function view(g: Grant): GrantView {
  return { id: g.id, userCode: g.userCode, clientName: g.clientName, createdAt: g.createdAt, expiresAt: g.expiresAt, status: g.status };
}

/** Creates an empty grant store. */
export function createDeviceFlow(options: DeviceFlowOptions = {}): LocalDeviceFlow {
  const now = options.now ?? Date.now;
  const maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
  const expiresInMs = options.expiresInMs ?? DEFAULT_EXPIRES_IN_MS;
  const intervalSeconds = options.intervalSeconds ?? DEFAULT_INTERVAL_SECONDS;
  /** By SHA-256 of the device code. */
  const byHash = new Map<string, Grant>();
  /** User code -> device-code hash, for grants still known. */
  const byUserCode = new Map<string, string>();

  const isLive = (g: Grant, t: number): boolean => g.status !== 'denied' && t < g.expiresAt;

  function forget(hash: string, g: Grant): void {
    byHash.delete(hash);
    if (byUserCode.get(g.userCode) === hash) byUserCode.delete(g.userCode);
  }

  /** Drops grants past their expiry plus the grace during which they are still answered for. */
  function sweep(t: number): void {
    for (const [hash, g] of byHash) if (t >= g.expiresAt + expiresInMs) forget(hash, g);
  }

  function liveCount(party?: string): number {
    const t = now();
    let n = 0;
    for (const g of byHash.values()) if (isLive(g, t) && (party === undefined || g.party === party)) n++;
    return n;
  }

  function findGrant(userCode: string): Grant | undefined {
    const code = normalizeUserCode(userCode);
    if (code === undefined) return undefined;
    const hash = byUserCode.get(code);
    return hash === undefined ? undefined : byHash.get(hash);
  }

  function decide(userCode: string, apply: (g: Grant) => void): DecideResult {
    const g = findGrant(userCode);
    if (g === undefined) return { outcome: 'not_found' };
    if (now() >= g.expiresAt) return { outcome: 'expired' };
    if (g.status !== 'pending') return { outcome: 'already_decided', status: g.status };
    apply(g);
    return { outcome: 'ok', grant: view(g) };
  }

  return {
    intervalSeconds,
    expiresInMs,
    maxPending,
    start(clientName, party = '') {
      const t = now();
      sweep(t);
      if (liveCount() >= maxPending) return undefined;
      let userCode = newUserCode();
      // 20^8 codes: a clash with a known grant is rare, but a clash would approve the wrong client.
      while (byUserCode.has(userCode)) userCode = newUserCode();
      const deviceCode = randomBytes(32).toString('base64url');
      const hash = hashDeviceCode(deviceCode);
      const grant: Grant = {
        id: `dev_${randomBytes(6).toString('hex')}`,
        userCode,
        clientName,
        party,
        createdAt: t,
        expiresAt: t + expiresInMs,
        status: 'pending',
        intervalSeconds,
        lastPollAt: undefined,
        approval: undefined,
      };
      byHash.set(hash, grant);
      byUserCode.set(userCode, hash);
      return { id: grant.id, deviceCode, userCode, expiresInSeconds: Math.round(expiresInMs / 1000), intervalSeconds };
    },
    poll(deviceCode) {
      const t = now();
      const g = byHash.get(hashDeviceCode(deviceCode));
      if (g === undefined || t >= g.expiresAt + expiresInMs) return { outcome: 'invalid_grant' };
      if (g.status === 'denied') return { outcome: 'access_denied' };
      if (t >= g.expiresAt) return { outcome: 'expired_token' };
      if (g.status === 'approved' && g.approval !== undefined) {
        return { outcome: 'approved', grant: view(g), keyName: g.approval.name ?? g.clientName, tier: g.approval.tier };
      }
      const last = g.lastPollAt;
      g.lastPollAt = t;
      if (last !== undefined && t - last < g.intervalSeconds * 1000 - POLL_TOLERANCE_MS) {
        g.intervalSeconds += SLOW_DOWN_STEP_SECONDS;
        return { outcome: 'slow_down', intervalSeconds: g.intervalSeconds };
      }
      return { outcome: 'authorization_pending', intervalSeconds: g.intervalSeconds };
    },
    redeem(deviceCode) {
      const hash = hashDeviceCode(deviceCode);
      const g = byHash.get(hash);
      if (g === undefined || g.status !== 'approved') return false;
      forget(hash, g);
      return true;
    },
    find(userCode) {
      const g = findGrant(userCode);
      return g === undefined || !isLive(g, now()) ? undefined : view(g);
    },
    approve(userCode, approval) {
      return decide(userCode, (g) => {
        g.status = 'approved';
        g.approval = approval;
      });
    },
    deny(userCode) {
      return decide(userCode, (g) => {
        g.status = 'denied';
      });
    },
    pending() {
      const t = now();
      const list: GrantView[] = [];
      for (const g of byHash.values()) if (g.status === 'pending' && t < g.expiresAt) list.push(view(g));
      return list.sort((a, b) => a.createdAt - b.createdAt);
    },
    liveCount,
  };
}
