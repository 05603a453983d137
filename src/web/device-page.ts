/**
 * `GET /device` and `POST /device`: where a person approves or denies a device request
 * (llmux.md section 3). Enter the code (or arrive with `?user_code=`), see which client asked and
 * when, sign in with an admin key (a password field, posted, never in a URL or a log) or use a
 * dashboard session, choose the tier, approve or deny.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TierName } from '../config/types.ts';
import { TIER_NAMES, isTierName } from '../config/types.ts';
import { formatUserCode, normalizeUserCode } from '../auth/device-flow.ts';
import type { DeviceFlow, GrantView } from '../auth/device-flow.ts';
import { addressParty, createAddressLimiter, decide, decisionError, rootUrl } from './device-routes.ts';
import type { GatewayInternals } from '../gateway/feature.ts';
import type { RequestRecord } from '../gateway/request-record.ts';
import { formatAgo, formatTime, html, isSameOrigin, layout, readForm, sendPage } from './html.ts';
import type { Raw } from './html.ts';
import { CSRF_COOKIE, checkAdminSecret, cookie, currentSession, newToken, parseCookies, tokensEqual } from './session.ts';
import type { SessionStore } from './session.ts';

export interface DevicePageOptions {
  flow: DeviceFlow;
  sessions: SessionStore;
}

const CSRF_COOKIE_SECONDS = 3600;
/**
 * User codes one address may look up a minute, on this page without a key. A person types a few;
 * at this pace a guesser needs years to hit one of 1,000 pending codes among 20^8.
 */
export const LOOKUPS_PER_MINUTE = 30;

/** The tier picker shared by the device page and the dashboard. */
export function tierSelect(selected: TierName = 'basic'): Raw {
  return html`<select name="tier">${TIER_NAMES.map((t) => html`<option value="${t}"${t === selected ? html` selected` : ''}>${t}</option>`)}</select>`;
}

/** A notice box; `bad` ones are announced to screen readers at once. */
export function notice(kind: 'ok' | 'bad', title: string, detail?: string): Raw {
  return html`<div class="notice ${kind}" role="${kind === 'bad' ? 'alert' : 'status'}"><strong>${title}</strong>${detail === undefined ? '' : html`<span>${detail}</span>`}</div>`;
}

function queryParam(url: string, name: string): string | undefined {
  const q = url.indexOf('?');
  if (q === -1) return undefined;
  return new URLSearchParams(url.slice(q + 1)).get(name) ?? undefined;
}

function enterCodePage(message?: Raw, given = ''): Raw {
  return html`
<h1>Connect a device</h1>
${message}
<div class="card narrow">
  <form method="get" action="/device" class="stack">
    <label for="user_code">Code shown on your device</label>
    <input id="user_code" class="code-input" name="user_code" value="${given}" placeholder="XXXX-XXXX" autocomplete="off"
      autocapitalize="characters" spellcheck="false" maxlength="20" required autofocus>
    <div class="actions"><button type="submit">Continue</button></div>
  </form>
</div>
<p class="muted">A program asked llmux for a key and showed you a code. Enter it here to approve or deny the request.</p>`;
}

function approvePage(grant: GrantView, nowMs: number, csrf: string, signedInAs: string | undefined, tier: TierName, message?: Raw): Raw {
  const minutesLeft = Math.max(1, Math.ceil((grant.expiresAt - nowMs) / 60_000));
  return html`
<h1>Approve a device</h1>
${message}
<div class="card narrow">
  <p class="muted">Code</p>
  <p class="user-code">${formatUserCode(grant.userCode)}</p>
  <dl>
    <dt>Client</dt><dd><strong>${grant.clientName}</strong></dd>
    <dt>Asked</dt><dd>${formatAgo(grant.createdAt, nowMs)} <span class="muted">(${formatTime(grant.createdAt)})</span></dd>
    <dt>Expires</dt><dd>in ${minutesLeft} min</dd>
  </dl>
  <p>Approve only if you started this yourself and the code matches the one on your device.</p>
  <form method="post" action="/device" class="stack">
    <input type="hidden" name="csrf" value="${csrf}">
    <input type="hidden" name="user_code" value="${formatUserCode(grant.userCode)}">
    ${signedInAs === undefined
      ? html`<label for="admin_key">Admin key <span class="hint">(sk-llmux-…)</span></label>
    <input id="admin_key" type="password" name="admin_key" autocomplete="current-password" spellcheck="false" required>`
      : html`<p class="muted">Signed in as <code>${signedInAs}</code>.</p>`}
    <label for="tier">Tier for the new key</label>
    ${tierSelect(tier)}
    <div class="actions">
      <button type="submit" name="action" value="approve">Approve</button>
      <button type="submit" name="action" value="deny" class="danger">Deny</button>
    </div>
  </form>
</div>`;
}

function resultPage(action: 'approve' | 'deny', grant: GrantView, tier: TierName): Raw {
  return action === 'approve'
    ? html`<h1>Device approved</h1>
${notice('ok', `Approved “${grant.clientName}”.`, ` It receives its key (tier ${tier}) the next time it checks, within a few seconds. You can close this page.`)}
<p><a href="/device">Approve another device</a></p>`
    : html`<h1>Device denied</h1>
${notice('ok', `Denied “${grant.clientName}”.`, ' It will not get a key. You can close this page.')}
<p><a href="/device">Approve another device</a></p>`;
}

function parseTierField(value: string | undefined): TierName | undefined {
  if (value === undefined || value === '') return 'basic';
  return isTierName(value) ? value : undefined;
}

/** Mounts `GET /device` and `POST /device`. */
export function mountDevicePage(internals: GatewayInternals, options: DevicePageOptions): void {
  const { ctx, log, routes } = internals;
  const { flow, sessions } = options;

  /** The CSRF token for this visitor: the session's, or a double-submit cookie (set when new). */
  function csrfFor(req: IncomingMessage, signed: ReturnType<typeof currentSession>): { token: string; setCookie: string | undefined } {
    if (signed !== undefined) return { token: signed.session.csrf, setCookie: undefined };
    const existing = parseCookies(req)[CSRF_COOKIE];
    if (existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: existing, setCookie: undefined };
    const token = newToken();
    return { token, setCookie: cookie(CSRF_COOKIE, token, { maxAgeSeconds: CSRF_COOKIE_SECONDS, secure: rootUrl(req, ctx.config).startsWith('https:') }) };
  }

  function send(res: ServerResponse, status: number, title: string, body: Raw, signed: ReturnType<typeof currentSession>, setCookie?: string, headers: Record<string, string> = {}): void {
    const signedIn = signed === undefined ? undefined : { csrf: signed.session.csrf, keyId: signed.key.id };
    sendPage(res, status, layout({ title, body, signedIn }), setCookie === undefined ? headers : { ...headers, 'set-cookie': setCookie });
  }

  const lookups = createAddressLimiter(LOOKUPS_PER_MINUTE, ctx.now);
  /** Counts a user-code lookup for the request's address; sends the 429 page and returns false when over. */
  function mayLookUp(req: IncomingMessage, res: ServerResponse, signed: ReturnType<typeof currentSession>): boolean {
    // A signed-in admin is not guessing.
    if (signed !== undefined) return true;
    const wait = lookups.take(addressParty(req.socket.remoteAddress));
    if (wait === undefined) return true;
    const message = notice('bad', 'Too many codes tried from this address.', ` Wait ${wait} s, then enter the code shown on your device.`);
    send(res, 429, 'Connect a device', enterCodePage(message), signed, undefined, { 'retry-after': String(wait) });
    return false;
  }

  routes.add('GET', '/device', async (req: IncomingMessage, res: ServerResponse) => {
    const nowMs = ctx.now();
    const signed = currentSession(req, sessions, ctx.keys, nowMs);
    const csrf = csrfFor(req, signed);
    const given = queryParam(req.url ?? '', 'user_code');
    if (given === undefined || given.trim() === '') {
      send(res, 200, 'Connect a device', enterCodePage(), signed, csrf.setCookie);
      return;
    }
    if (!mayLookUp(req, res, signed)) return;
    const code = normalizeUserCode(given);
    const grant = code === undefined ? undefined : await flow.find(code);
    if (grant === undefined || grant.status !== 'pending') {
      const message = notice('bad', 'No pending request has this code.', ' Check the code on your device; codes expire after 15 minutes.');
      send(res, 404, 'Connect a device', enterCodePage(message, given.slice(0, 20)), signed, csrf.setCookie);
      return;
    }
    send(res, 200, 'Approve a device', approvePage(grant, nowMs, csrf.token, signed?.key.id, 'basic'), signed, csrf.setCookie);
  });

  routes.add('POST', '/device', async (req: IncomingMessage, res: ServerResponse, _params: Record<string, string>, record: RequestRecord) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    const nowMs = ctx.now();
    const signed = currentSession(req, sessions, ctx.keys, nowMs);
    const expected = signed?.session.csrf ?? parseCookies(req)[CSRF_COOKIE];
    if (!isSameOrigin(req, rootUrl(req, ctx.config)) || !tokensEqual(form['csrf'], expected)) {
      const message = notice('bad', 'This form expired or came from another site.', ' Nothing was changed. Open the page again and retry.');
      send(res, 403, 'Connect a device', enterCodePage(message), signed);
      return;
    }
    if (!mayLookUp(req, res, signed)) return;
    const grant = await flow.find(form['user_code'] ?? '');
    if (grant === undefined || grant.status !== 'pending') {
      const message = notice('bad', 'No pending request has this code.', ' It may have expired or been decided already; start again from your device.');
      send(res, 404, 'Connect a device', enterCodePage(message), signed);
      return;
    }
    const tier = parseTierField(form['tier']);
    const action = form['action'] === 'approve' || form['action'] === 'deny' ? form['action'] : undefined;
    const csrf = signed?.session.csrf ?? (expected as string);
    if (tier === undefined || action === undefined) {
      send(res, 400, 'Approve a device', approvePage(grant, nowMs, csrf, signed?.key.id, tier ?? 'basic', notice('bad', 'Choose a tier, then Approve or Deny.')), signed);
      return;
    }
    let byKeyId: string;
    if (signed !== undefined) byKeyId = signed.key.id;
    else {
      const check = checkAdminSecret(ctx.keys, form['admin_key'], nowMs);
      if (!check.ok) {
        send(res, check.status, 'Approve a device', approvePage(grant, nowMs, csrf, undefined, tier, notice('bad', check.message)), signed);
        return;
      }
      byKeyId = check.key.id;
    }
    record.keyId = byKeyId;
    const result = await decide(flow, log, { userCode: grant.userCode, action, tier, byKeyId });
    if (result.outcome !== 'ok') {
      const error = decisionError(result);
      send(res, error.status, 'Connect a device', enterCodePage(notice('bad', error.message)), signed);
      return;
    }
    send(res, 200, action === 'approve' ? 'Device approved' : 'Device denied', resultPage(action, result.grant, tier), signed);
  });
}
