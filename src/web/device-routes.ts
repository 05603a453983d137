/**
 * The device-flow endpoints (RFC 8628 in our error shape, llmux.md section 3):
 * `POST /auth/device`, `POST /auth/device/token`, `POST /auth/device/approve`, `POST /auth/device/deny`.
 *
 * Decisions beyond the specs:
 * - Token-endpoint refusals are 400 with our error body; `error.code` carries the RFC 8628 error
 *   string (`authorization_pending`, `slow_down`, `expired_token`, `access_denied`,
 *   `invalid_grant`, `unsupported_grant_type`). There is no top-level string `error` field: our
 *   body already uses `error` for the object, so RFC clients read `error.code`. `slow_down` and
 *   `authorization_pending` also carry `error.interval`, the interval to use from now on.
 * - An unknown, already redeemed or long-expired device code is `invalid_grant`.
 * - None of these count against any key's requests/min: the start and token endpoints have no key,
 *   and approve/deny are admin operations like `/metrics`. Starting a grant is limited per client
 *   address instead: 10 starts a minute (`LLMUX_DEVICE_STARTS_PER_MINUTE`) and 5 live grants at
 *   once (`LLMUX_DEVICE_PENDING_PER_ADDRESS`; then 429), so one address holds at most 5 of the
 *   1,000 pending grants (`LLMUX_DEVICE_MAX_PENDING`; past it 503 `overloaded_error`) and cannot
 *   fill them for everyone else. An "address" is an IPv4 address, or an IPv6 /64 (one host gets a
 *   whole /64, so counting its addresses one by one would give it 2^64 budgets). Many parties
 *   together can still fill the cap: that is for a reverse proxy in front to stop (docs/security.md).
 * - The issued key is created when the client redeems the approved grant, not at approval: a
 *   client that never comes back leaves no key behind, and the secret never sits in memory.
 * - Only grant and key ids are logged, never codes, client names or keys.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Config, TierName } from '../config/types.ts';
import { isTierName } from '../config/types.ts';
import { GatewayError, invalidParameters, rateLimited } from '../common/errors.ts';
import { parseJsonBody } from '../http/body.ts';
import { readSmallBody } from '../http/admission.ts';
import { sendJson } from '../http/respond.ts';
import { createSlidingWindows } from '../limits/window.ts';
import type { WindowState } from '../limits/window.ts';
import type { GatewayInternals } from '../gateway/feature.ts';
import { logMessage } from '../gateway/request-log.ts';
import type { Logger } from '../gateway/request-log.ts';
import type { RequestRecord } from '../gateway/request-record.ts';
import { authenticate, requireAdmin } from '../auth/authenticate.ts';
import type { KeyStore } from '../auth/key-store.ts';
import { cleanClientName, createDeviceFlow, formatUserCode } from '../auth/device-flow.ts';
import type { DecideResult, DeviceFlow, PollResult } from '../auth/device-flow.ts';

export const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
export const DEFAULT_STARTS_PER_MINUTE = 10;
export const DEFAULT_PENDING_PER_ADDRESS = 5;
const DEFAULT_CLIENT_NAME = 'unnamed device client';
/** Beyond this many tracked addresses, idle ones are dropped before adding another. */
const MAX_TRACKED_ADDRESSES = 10_000;

export interface DeviceRoutesOptions {
  /** The grant store; default: one made from `maxPending` and the gateway's clock. */
  flow?: DeviceFlow;
  maxPending?: number;
  /** Grants one client address may start per minute. */
  startsPerMinute?: number;
  /** Live grants one client address may have at once. */
  pendingPerAddress?: number;
}

export interface Decision {
  userCode: string;
  action: 'approve' | 'deny';
  tier?: TierName | undefined;
  name?: string | undefined;
  byKeyId: string;
}



/**
 * The address clients should open, from the request's Host header and scheme (`X-Forwarded-Proto:
 * https` is honoured for TLS-terminating proxies). A missing or odd Host falls back to the
 * configured listen address.
 */
export function rootUrl(req: IncomingMessage, config: Pick<Config, 'host' | 'port'>): string {
  const forwarded = req.headers['x-forwarded-proto'];
  const tls = (req.socket as TLSSocket).encrypted === true || (typeof forwarded === 'string' && forwarded.split(',')[0]?.trim().toLowerCase() === 'https');
  const host = req.headers.host;
  const validHost = typeof host === 'string' && /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/.test(host);
  const fallback = config.host.includes(':') ? `[${config.host}]:${config.port}` : `${config.host}:${config.port}`;
  return `${tls ? 'https' : 'http'}://${validHost ? host : fallback}`;
}

/**
 * Reads a small body as JSON or as `application/x-www-form-urlencoded` (what RFC 8628 clients
 * send). An empty body is an empty object.
 */
export async function readParams(req: IncomingMessage, idleTimeoutMs?: number): Promise<Record<string, unknown>> {
  const body = await readSmallBody(req, idleTimeoutMs);
  if (body.length === 0) return {};
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (type.startsWith('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(body.toString('utf8')));
  return parseJsonBody(body);
}

/** `tier` from a request: absent means basic; anything else must be a tier name. */
export function parseTier(value: unknown): TierName {
  if (value === undefined || value === null || value === '') return 'basic';
  if (isTierName(value)) return value;
  throw invalidParameters('tier: must be one of basic, pro, enterprise', 'tier');
}

/** The error a refused approve/deny gets. */
export function decisionError(result: Exclude<DecideResult, { outcome: 'ok' }>): GatewayError {
  switch (result.outcome) {
    case 'not_found':
      return new GatewayError(404, 'not_found_error', 'user_code_not_found', 'No pending device request has this code; check the code shown by the device, or start again from the device');
    case 'expired':
      return new GatewayError(404, 'not_found_error', 'user_code_expired', 'This device request has expired; start again from the device');
    case 'already_decided':
      return new GatewayError(409, 'invalid_request_error', 'already_decided', `This device request was already ${result.status}`);
  }
}

/** Approves or denies a grant and logs the decision by ids only. */
export async function decide(flow: DeviceFlow, log: Logger, decision: Decision): Promise<DecideResult> {
  const result = decision.action === 'approve'
    ? await flow.approve(decision.userCode, { tier: decision.tier ?? 'basic', name: decision.name, byKeyId: decision.byKeyId })
    : await flow.deny(decision.userCode);
  if (result.outcome === 'ok') {
    const what = decision.action === 'approve' ? `approved (tier ${decision.tier ?? 'basic'})` : 'denied';
    log(logMessage('info', `device grant ${result.grant.id} ${what} by ${decision.byKeyId}`));
  }
  return result;
}

function tokenError(code: string, message: string, extra?: Record<string, unknown>): GatewayError {
  return new GatewayError(400, 'invalid_request_error', code, message, {
    headers: { 'cache-control': 'no-store' },
    ...(extra === undefined ? {} : { extra }),
  });
}

function pollError(result: Exclude<PollResult, { outcome: 'approved' }>): GatewayError {
  switch (result.outcome) {
    case 'authorization_pending':
      return tokenError('authorization_pending', `The request has not been approved yet; poll again in ${result.intervalSeconds} s`, { interval: result.intervalSeconds });
    case 'slow_down':
      return tokenError('slow_down', `Polling too fast; wait at least ${result.intervalSeconds} s between polls from now on`, { interval: result.intervalSeconds });
    case 'expired_token':
      return tokenError('expired_token', 'The device code has expired; start again with POST /auth/device');
    case 'access_denied':
      return tokenError('access_denied', 'The request was denied; no key will be issued');
    case 'invalid_grant':
      return tokenError('invalid_grant', 'Unknown or already used device_code; start again with POST /auth/device');
  }
}

/**
 * Who is asking, for per-address budgets: an IPv4 address (IPv4-mapped IPv6 included), or the /64
 * of an IPv6 address, the block one host or one customer is given.
 */
export function addressParty(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1] as string;
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '').toLowerCase()).join(':')}::/64`;
}

/** Per-address counters over a sliding minute, for the device flow's starts and the device page's lookups. */
export function createAddressLimiter(perMinute: number, now: () => number) {
  const windows = createSlidingWindows({ windowMs: 60_000, now });
  const byAddress = new Map<string, WindowState>();
  return {
    /** Counts one for `party`, or returns the seconds to wait when it is over the limit. */
    take(party: string): number | undefined {
      let state = byAddress.get(party);
      if (state === undefined) {
        if (byAddress.size >= MAX_TRACKED_ADDRESSES) {
          for (const [a, s] of byAddress) if (windows.isEmpty(s)) byAddress.delete(a);
        }
        state = windows.create();
        byAddress.set(party, state);
      }
      if (windows.total(state, 0) >= perMinute) return Math.max(1, Math.ceil(windows.msUntilBelow(state, 0, perMinute) / 1000));
      windows.add(state, 0, 1);
      return undefined;
    },
  };
}

function adminKey(req: IncomingMessage, keys: KeyStore, now: number) {
  const key = authenticate(req.headers, keys, now);
  requireAdmin(key, req.headers);
  return key;
}

/**
 * Mounts the four device-flow endpoints and returns the grant store, which the device page and
 * the dashboard share.
 */
export function mountDeviceRoutes(internals: GatewayInternals, options: DeviceRoutesOptions = {}): DeviceFlow {
  const { ctx, log, routes } = internals;
  const flowOptions = { now: ctx.now, ...(options.maxPending === undefined ? {} : { maxPending: options.maxPending }) };
  const flow = options.flow ?? ctx.deviceFlow?.(flowOptions) ?? createDeviceFlow(flowOptions);
  const starts = createAddressLimiter(options.startsPerMinute ?? DEFAULT_STARTS_PER_MINUTE, ctx.now);
  const pendingPerAddress = options.pendingPerAddress ?? DEFAULT_PENDING_PER_ADDRESS;

  routes.add('POST', '/auth/device', async (req: IncomingMessage, res: ServerResponse) => {
    const params = await readParams(req, ctx.config.limits.bodyTimeoutMs);
    const party = addressParty(req.socket.remoteAddress);
    const wait = starts.take(party);
    if (wait !== undefined) {
      throw rateLimited(`Too many device requests from this address; retry after ${wait} s`, { 'retry-after': String(wait) });
    }
    if (await flow.liveCount(party) >= pendingPerAddress) {
      throw rateLimited(`${pendingPerAddress} device requests from this address are already waiting; have one approved or denied, or wait until one expires`, { 'retry-after': '60' });
    }
    const clientName = cleanClientName(params['client_name']) ?? cleanClientName(params['client_id']) ?? DEFAULT_CLIENT_NAME;
    const grant = await flow.start(clientName, party);
    if (grant === undefined) {
      throw new GatewayError(503, 'overloaded_error', 'too_many_pending_devices', `${flow.maxPending} device requests are already pending; retry in a minute`, {
        headers: { 'retry-after': '60' },
      });
    }
    log(logMessage('info', `device grant ${grant.id} started`));
    const verificationUri = `${rootUrl(req, ctx.config)}/device`;
    const userCode = formatUserCode(grant.userCode);
    sendJson(res, 200, JSON.stringify({
      device_code: grant.deviceCode,
      user_code: userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
      expires_in: grant.expiresInSeconds,
      interval: grant.intervalSeconds,
    }), { 'cache-control': 'no-store' });
  });

  routes.add('POST', '/auth/device/token', async (req: IncomingMessage, res: ServerResponse) => {
    const params = await readParams(req, ctx.config.limits.bodyTimeoutMs);
    const grantType = params['grant_type'];
    if (grantType !== undefined && grantType !== DEVICE_GRANT_TYPE) {
      throw tokenError('unsupported_grant_type', `grant_type: must be ${DEVICE_GRANT_TYPE}`);
    }
    const deviceCode = params['device_code'];
    if (typeof deviceCode !== 'string' || deviceCode === '') throw invalidParameters('device_code: required; send the device_code from POST /auth/device', 'device_code');
    const result = await flow.poll(deviceCode);
    if (result.outcome !== 'approved') throw pollError(result);
    // Claimed before the key is made: of two polls (on one process or two), only the one that
    // claims the grant is handed a key. Should making the key fail, the grant is gone and the
    // device starts again; that is better than two keys.
    if (!(await flow.redeem(deviceCode))) throw pollError({ outcome: 'invalid_grant' });
    const { key, record } = await ctx.keys.create({ name: result.keyName, tier: result.tier });
    log(logMessage('info', `device grant ${result.grant.id} redeemed as ${record.id}`));
    sendJson(res, 200, JSON.stringify({ api_key: key, key_id: record.id, tier: record.tier }), { 'cache-control': 'no-store', pragma: 'no-cache' });
  });

  const decideRoute = (action: Decision['action']) => async (req: IncomingMessage, res: ServerResponse, _params: Record<string, string>, record: RequestRecord) => {
    const admin = adminKey(req, ctx.keys, ctx.now());
    record.keyId = admin.id;
    const params = await readParams(req, ctx.config.limits.bodyTimeoutMs);
    const userCode = params['user_code'];
    if (typeof userCode !== 'string' || userCode === '') throw invalidParameters('user_code: required; the XXXX-XXXX code the device shows', 'user_code');
    const tier = action === 'approve' ? parseTier(params['tier']) : undefined;
    if (params['name'] !== undefined && typeof params['name'] !== 'string') throw invalidParameters('name: must be a string', 'name');
    const name = cleanClientName(params['name']);
    const result = await decide(flow, log, { userCode, action, tier, name, byKeyId: admin.id });
    if (result.outcome !== 'ok') throw decisionError(result);
    const body: Record<string, unknown> = { status: action === 'approve' ? 'approved' : 'denied', user_code: formatUserCode(result.grant.userCode), client_name: result.grant.clientName };
    if (tier !== undefined) {
      body['tier'] = tier;
      body['name'] = name ?? result.grant.clientName;
    }
    sendJson(res, 200, JSON.stringify(body));
  };
  routes.add('POST', '/auth/device/approve', decideRoute('approve'));
  routes.add('POST', '/auth/device/deny', decideRoute('deny'));

  return flow;
}

/** Options from the environment: `LLMUX_DEVICE_MAX_PENDING`, `LLMUX_DEVICE_STARTS_PER_MINUTE`, `LLMUX_DEVICE_PENDING_PER_ADDRESS`. */
export function deviceOptionsFromEnv(env: Record<string, string | undefined>): DeviceRoutesOptions {
  const options: DeviceRoutesOptions = {};
  const int = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    return Number.isInteger(n) && n >= 1 ? n : undefined;
  };
  const maxPending = int('LLMUX_DEVICE_MAX_PENDING');
  const startsPerMinute = int('LLMUX_DEVICE_STARTS_PER_MINUTE');
  const pendingPerAddress = int('LLMUX_DEVICE_PENDING_PER_ADDRESS');
  if (maxPending !== undefined) options.maxPending = maxPending;
  if (startsPerMinute !== undefined) options.startsPerMinute = startsPerMinute;
  if (pendingPerAddress !== undefined) options.pendingPerAddress = pendingPerAddress;
  return options;
}
