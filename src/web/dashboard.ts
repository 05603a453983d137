/**
 * `/dashboard`: sign in with an admin key, then the API keys section (list, create new key,
 * revoke), pending device requests (approve, deny), each key's usage against its limits
 * (gateway-api.md "Authentication" 4, llmux.md section 1), the deployments and their health
 * (`deployments.ts`, llmux.md section 10) and the health checks (`health.ts`). Plain HTML forms; the only script is
 * the copy button.
 *
 * Decisions beyond the specs:
 * - A key with a budget (its own, or its tier's) shows what it spent of it in the current UTC
 *   period, from the usage ledger; the usage view (`usage-page.ts`) has the charts.
 * - "Last used" is not shown: the key store does not record it, and the limiter only knows the
 *   last minute. Usage shows what counts now: requests and tokens in the current minute, and
 *   requests in flight.
 * - Admin keys are not created here (only with `llmux keys create --admin`), so a stolen session
 *   cannot mint lasting admin access.
 * - A new key is shown once: it is kept on the session only until the next page view (a GET, not
 *   a HEAD, which shows nothing).
 * - After each POST the browser is sent back to `/dashboard` (303), so a reload never repeats it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Budget, TierLimits, TierName } from '../config/types.ts';
import { isTierName } from '../config/types.ts';
import type { KeyRecord, NewKey } from '../auth/key-store.ts';
import { parseDuration } from '../auth/key-store.ts';
import { cleanClientName, formatUserCode } from '../auth/device-flow.ts';
import type { DeviceFlow } from '../auth/device-flow.ts';
import { decide, decisionError, rootUrl } from './device-routes.ts';
import { budgetFor, keyStatus, limitsFor } from '../auth/key-record.ts';
import { currentBudgetStatus, formatUsd } from '../usage/budget.ts';
import type { BudgetStatus } from '../usage/budget.ts';
import type { RequestRecord } from '../gateway/request-record.ts';
import type { GatewayInternals } from '../gateway/feature.ts';
import { formatAgo, formatLimit, formatTime, html, isSameOrigin, layout, readForm, redirect, sendPage } from './html.ts';
import type { Raw } from './html.ts';
import { notice, tierSelect } from './device-page.ts';
import { createHealthRunner, healthSection } from './health.ts';
import { deploymentsSection } from './deployments.ts';
import {
  CSRF_COOKIE, SESSION_COOKIE, checkAdminSecret, clearCookie, cookie, currentSession, newToken, parseCookies, tokensEqual,
} from './session.ts';
import type { Flash, Session, SessionStore } from './session.ts';

export interface DashboardOptions {
  flow: DeviceFlow;
  sessions: SessionStore;
}

const CSRF_COOKIE_SECONDS = 3600;
const MAX_NAME = 100;

type Signed = NonNullable<ReturnType<typeof currentSession>>;

function signInPage(csrf: string, message?: Raw): Raw {
  return html`
<h1>Sign in</h1>
${message}
<div class="card narrow">
  <form method="post" action="/dashboard/sign-in" class="stack">
    <input type="hidden" name="csrf" value="${csrf}">
    <label for="admin_key">Admin key <span class="hint">(sk-llmux-…)</span></label>
    <input id="admin_key" type="password" name="admin_key" autocomplete="current-password" spellcheck="false" required autofocus>
    <div class="actions"><button type="submit">Sign in</button></div>
  </form>
</div>
<p class="muted">The first <code>llmux serve</code> printed an admin key; <code>llmux keys create --admin</code> makes another.
Signing in keeps you signed in on this browser for 12 hours, or until you sign out.</p>`;
}

function usageRow(label: string, used: number, limit: number): Raw {
  const finite = Number.isFinite(limit);
  return html`<span>${label}</span>${finite ? html`<meter min="0" max="${Math.max(limit, 1)}" high="${Math.max(limit, 1) * 0.8}" value="${Math.min(used, limit)}"></meter>` : html`<span></span>`}<span class="mono">${used.toLocaleString('en-US')} / ${formatLimit(limit)}</span>`;
}

export interface KeyCardData {
  key: KeyRecord;
  limits: TierLimits;
  usage: { requests: number; tokens: number; concurrent: number };
  /** Where the key stands against its budget (its own or its tier's), when it has one. */
  budget?: BudgetStatus | undefined;
}

/** `$4.20 of $25.00 today`, with a meter, and when it resets. */
function budgetRow(status: BudgetStatus, own: boolean): Raw {
  const max = Math.max(status.budgetUsd, 0.0001);
  const period = status.period === 'day' ? 'today' : 'this month';
  return html`<dt>Budget</dt><dd>${formatUsd(status.spentUsd)} of ${formatUsd(status.budgetUsd)} ${period}${own ? '' : html` <span class="hint">(tier's)</span>`}
    <meter min="0" max="${max}" high="${max * 0.8}" value="${Math.min(status.spentUsd, max)}" aria-label="Budget spent"></meter>
    <span class="hint">${status.exceeded ? 'Spent: model requests are refused until' : 'Resets'} ${formatTime(Date.parse(status.resetsAt))}</span></dd>`;
}

function keyCard(data: KeyCardData, csrf: string, nowMs: number, selfId: string): Raw {
  const { key, limits, usage, budget } = data;
  const state = keyStatus(key, nowMs);
  return html`
<div class="card${state === 'active' ? '' : ' revoked-card'}">
  <div class="key-head"><strong>${key.name}</strong><span><span class="badge ${state}">${state}</span>${key.admin ? html` <span class="badge admin">admin</span>` : ''}</span></div>
  <dl>
    <dt>ID</dt><dd class="mono">${key.id}</dd>
    <dt>Tier</dt><dd>${key.tier}</dd>
    <dt>Limits</dt><dd>${formatLimit(limits.rpm)} req/min, ${formatLimit(limits.tpm)} tokens/min, ${formatLimit(limits.concurrency)} at once</dd>
    ${budget === undefined ? '' : budgetRow(budget, key.budget !== undefined)}
    ${key.models === null ? '' : html`<dt>Models</dt><dd>${key.models.join(', ')}</dd>`}
    <dt>Created</dt><dd>${formatTime(Date.parse(key.created_at))}</dd>
    <dt>Expires</dt><dd>${key.expires_at === null ? 'never' : formatTime(Date.parse(key.expires_at))}</dd>
    ${key.revoked_at === null ? '' : html`<dt>Revoked</dt><dd>${formatTime(Date.parse(key.revoked_at))}</dd>`}
  </dl>
  ${state === 'active' ? html`
  <div class="usage" aria-label="Usage in the current minute">
    ${usageRow('Requests', usage.requests, limits.rpm)}
    ${usageRow('Tokens', usage.tokens, limits.tpm)}
    ${usageRow('In flight', usage.concurrent, limits.concurrency)}
  </div>
  <form method="post" action="/dashboard/keys/revoke">
    <input type="hidden" name="csrf" value="${csrf}">
    <input type="hidden" name="key_id" value="${key.id}">
    <button type="submit" class="danger">Revoke${key.id === selfId ? ' (signs you out)' : ''}</button>
  </form>` : ''}
</div>`;
}

function flashBox(flash: Flash | undefined): Raw {
  if (flash === undefined) return html``;
  if (flash.kind !== 'new-key') return notice(flash.kind, flash.message);
  return html`
<div class="notice ok" role="status">
  <strong>Created key “${flash.name}” (${flash.keyId}).</strong>
  <span>Copy it now: it is shown only this once.</span>
  <div class="secret">
    <textarea id="new-key" readonly rows="2" aria-label="The new key" spellcheck="false">${flash.key}</textarea>
    <button type="button" class="secondary" data-copy="new-key" hidden>Copy</button>
  </div>
</div>`;
}

function createForm(csrf: string): Raw {
  return html`
<details class="card" id="create">
  <summary>Create new key</summary>
  <form method="post" action="/dashboard/keys" class="stack">
    <input type="hidden" name="csrf" value="${csrf}">
    <div class="fields">
      <div><label for="name">Name</label><input id="name" name="name" maxlength="${MAX_NAME}" placeholder="e.g. laptop" required></div>
      <div><label for="tier">Tier</label>${tierSelect('basic')}</div>
      <div><label for="expires_in">Expires in <span class="hint">(optional)</span></label><input id="expires_in" name="expires_in" placeholder="e.g. 30d, 12h"></div>
    </div>
    <div class="fields">
      <div><label for="rpm">Requests/min</label><input id="rpm" name="rpm" type="number" min="1" step="1" inputmode="numeric" placeholder="tier's"></div>
      <div><label for="tpm">Tokens/min</label><input id="tpm" name="tpm" type="number" min="1" step="1" inputmode="numeric" placeholder="tier's"></div>
      <div><label for="concurrency">At once</label><input id="concurrency" name="concurrency" type="number" min="1" step="1" inputmode="numeric" placeholder="tier's"></div>
    </div>
    <div class="fields">
      <div><label for="budget_usd">Budget, USD <span class="hint">(optional)</span></label><input id="budget_usd" name="budget_usd" type="number" min="0" step="0.01" inputmode="decimal" placeholder="tier's"></div>
      <div><label for="budget_period">Budget per</label><select id="budget_period" name="budget_period"><option value="month">month</option><option value="day">day</option></select></div>
    </div>
    <div><label for="models">Models <span class="hint">(optional, comma-separated; empty = all)</span></label><input id="models" name="models" placeholder="e.g. claude-sonnet-4-5, gpt-5"></div>
    <div class="actions"><button type="submit">Create key</button></div>
  </form>
</details>`;
}

/** Parses the create-key form; returns the key options or the first problem. */
export function parseCreateForm(form: Record<string, string>): { ok: true; options: NewKey } | { ok: false; message: string } {
  const name = cleanClientName(form['name'] ?? '');
  if (name === undefined) return { ok: false, message: 'Give the key a name.' };
  const tier = form['tier'] === undefined || form['tier'] === '' ? 'basic' : form['tier'];
  if (!isTierName(tier)) return { ok: false, message: 'Tier must be basic, pro or enterprise.' };
  const limits: Partial<TierLimits> = {};
  for (const field of ['rpm', 'tpm', 'concurrency'] as const) {
    const raw = (form[field] ?? '').trim();
    if (raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) return { ok: false, message: `${field}: must be a whole number of 1 or more, or empty for the tier's.` };
    limits[field] = n;
  }
  const options: NewKey = { name: name.slice(0, MAX_NAME), tier: tier as TierName, limits };
  const budgetUsd = (form['budget_usd'] ?? '').trim();
  if (budgetUsd !== '') {
    const usd = Number(budgetUsd);
    const period = form['budget_period'] === 'day' ? 'day' : 'month';
    if (!Number.isFinite(usd) || usd < 0) return { ok: false, message: 'Budget: an amount of US dollars of 0 or more, or empty for the tier\'s.' };
    options.budget = { usd, period } satisfies Budget;
  }
  const models = (form['models'] ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '');
  if (models.length > 0) options.models = models;
  const expires = (form['expires_in'] ?? '').trim();
  if (expires !== '') {
    const ms = parseDuration(expires);
    if (ms === undefined) return { ok: false, message: 'Expires in: write it like 30d, 12h, 15m or 45s, or leave it empty.' };
    options.expiresInMs = ms;
  }
  return { ok: true, options };
}

/** Mounts the dashboard's pages and form handlers. */
export function mountDashboard(internals: GatewayInternals, options: DashboardOptions): void {
  const { ctx, log, routes } = internals;
  const { flow, sessions } = options;
  const secure = (req: IncomingMessage): boolean => rootUrl(req, ctx.config).startsWith('https:');
  const health = createHealthRunner(ctx.health, ctx.now);

  async function dashboardPage(signed: Signed, flash: Flash | undefined): Promise<Raw> {
    const nowMs = ctx.now();
    const csrf = signed.session.csrf;
    const keys = ctx.keys.list().sort((a, b) => {
      const order = (k: KeyRecord) => (keyStatus(k, nowMs) === 'active' ? 0 : 1);
      return order(a) - order(b) || b.created_at.localeCompare(a.created_at);
    });
    // One peek per key; a shared limiter answers them all in one round trip (they leave in one write).
    const cards = await Promise.all(keys.map(async (key) => {
      const limits = limitsFor(key, ctx.config.tiers);
      const { requests, tokens, concurrent } = await ctx.limiter.peek(key.id, limits);
      const budget = budgetFor(key, ctx.config.tierBudgets);
      const status = budget === undefined ? undefined : currentBudgetStatus(budget, key.id, ctx.usage, nowMs);
      return keyCard({ key, limits, usage: { requests, tokens, concurrent }, budget: status }, csrf, nowMs, signed.key.id);
    }));
    const pending = await flow.pending();
    const active = keys.filter((k) => keyStatus(k, nowMs) === 'active').length;
    return html`
<h1>Dashboard</h1>
${flashBox(flash)}
<h2 id="devices">Pending device requests</h2>
${pending.length === 0 ? html`<p class="muted">None. When a program starts device sign-in, its request appears here and at <a href="/device">/device</a>.</p>` : html`
<div class="grid">${pending.map((g) => html`
  <div class="card">
    <div class="key-head"><strong>${g.clientName}</strong><span class="mono nowrap">${formatUserCode(g.userCode)}</span></div>
    <p class="muted">asked ${formatAgo(g.createdAt, nowMs)} (${formatTime(g.createdAt)})</p>
    <form method="post" action="/dashboard/device" class="stack">
      <input type="hidden" name="csrf" value="${csrf}">
      <input type="hidden" name="user_code" value="${formatUserCode(g.userCode)}">
      <label>Tier ${tierSelect('basic')}</label>
      <div class="actions">
        <button type="submit" name="action" value="approve">Approve</button>
        <button type="submit" name="action" value="deny" class="danger">Deny</button>
      </div>
    </form>
  </div>`)}
</div>`}
<h2 id="keys">API keys</h2>
<p class="muted">${active} active of ${keys.length}. Usage is what counts in the current minute. Last use is not recorded.</p>
${createForm(csrf)}
<div class="grid">${cards}</div>
${deploymentsSection(ctx.deployments?.())}
${healthSection(health, ctx.health !== undefined, csrf, nowMs)}`;
  }

  function sendSignIn(req: IncomingMessage, res: ServerResponse, status: number, message?: Raw): void {
    const existing = parseCookies(req)[CSRF_COOKIE];
    const reuse = existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing);
    const token = reuse ? existing : newToken();
    const headers: Record<string, string> = reuse ? {} : { 'set-cookie': cookie(CSRF_COOKIE, token, { maxAgeSeconds: CSRF_COOKIE_SECONDS, secure: secure(req) }) };
    sendPage(res, status, layout({ title: 'Sign in', body: signInPage(token, message) }), headers);
  }

  /** Checks a signed-in POST: same origin and the session's CSRF token. */
  function signedPost(req: IncomingMessage, res: ServerResponse, form: Record<string, string>): Signed | undefined {
    const signed = currentSession(req, sessions, ctx.keys, ctx.now());
    if (signed === undefined) {
      sendSignIn(req, res, 401, notice('bad', 'Your session has ended.', ' Sign in again; nothing was changed.'));
      return undefined;
    }
    if (!isSameOrigin(req, rootUrl(req, ctx.config)) || !tokensEqual(form['csrf'], signed.session.csrf)) {
      forbidden(res, signed);
      return undefined;
    }
    return signed;
  }

  function forbidden(res: ServerResponse, signed: Signed): void {
    const body = html`<h1>Not done</h1>${notice('bad', 'This form expired or came from another site.', ' Nothing was changed.')}<p><a href="/dashboard">Back to the dashboard</a></p>`;
    sendPage(res, 403, layout({ title: 'Not done', body, signedIn: { csrf: signed.session.csrf, keyId: signed.key.id } }));
  }

  const back = (res: ServerResponse, session: Session, flash: Flash, anchor = ''): void => {
    session.flash = flash;
    redirect(res, `/dashboard${anchor}`);
  };

  routes.add('GET', '/dashboard', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const signed = currentSession(req, sessions, ctx.keys, ctx.now());
    if (signed === undefined) {
      sendSignIn(req, res, 200);
      return;
    }
    record.keyId = signed.key.id;
    const flash = signed.session.flash;
    const body = await dashboardPage(signed, flash);
    // A HEAD (a link preview, a prefetch, a monitor) gets no body: it must not use up a new key's
    // one showing. Nor does a page that could not be built.
    if (req.method !== 'HEAD') signed.session.flash = undefined;
    sendPage(res, 200, layout({ title: 'Dashboard', body, signedIn: { csrf: signed.session.csrf, keyId: signed.key.id } }));
  });

  routes.add('POST', '/dashboard/sign-in', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    if (!isSameOrigin(req, rootUrl(req, ctx.config)) || !tokensEqual(form['csrf'], parseCookies(req)[CSRF_COOKIE])) {
      sendSignIn(req, res, 403, notice('bad', 'This form expired or came from another site.', ' Try signing in again.'));
      return;
    }
    const check = checkAdminSecret(ctx.keys, form['admin_key'], ctx.now());
    if (!check.ok) {
      sendSignIn(req, res, check.status, notice('bad', check.message));
      return;
    }
    record.keyId = check.key.id;
    const session = sessions.create(check.key.id);
    log({ time: new Date().toISOString(), level: 'info', message: `dashboard sign-in by ${check.key.id}` });
    redirect(res, '/dashboard', {
      'set-cookie': [
        cookie(SESSION_COOKIE, session.id, { maxAgeSeconds: Math.floor(sessions.ttlMs / 1000), secure: secure(req) }),
        clearCookie(CSRF_COOKIE, secure(req)),
      ],
    });
  });

  routes.add('POST', '/dashboard/sign-out', async (req: IncomingMessage, res: ServerResponse) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    const id = parseCookies(req)[SESSION_COOKIE];
    const signed = currentSession(req, sessions, ctx.keys, ctx.now());
    if (signed !== undefined && (!isSameOrigin(req, rootUrl(req, ctx.config)) || !tokensEqual(form['csrf'], signed.session.csrf))) {
      forbidden(res, signed);
      return;
    }
    if (id !== undefined) sessions.destroy(id);
    redirect(res, '/dashboard', { 'set-cookie': clearCookie(SESSION_COOKIE, secure(req)) });
  });

  routes.add('POST', '/dashboard/keys', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    const signed = signedPost(req, res, form);
    if (signed === undefined) return;
    record.keyId = signed.key.id;
    const parsed = parseCreateForm(form);
    if (!parsed.ok) {
      back(res, signed.session, { kind: 'bad', message: `Key not created: ${parsed.message}` }, '#keys');
      return;
    }
    const { key, record: created } = await ctx.keys.create(parsed.options);
    log({ time: new Date().toISOString(), level: 'info', message: `dashboard: ${signed.key.id} created ${created.id}` });
    back(res, signed.session, { kind: 'new-key', key, keyId: created.id, name: created.name });
  });

  routes.add('POST', '/dashboard/keys/revoke', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    const signed = signedPost(req, res, form);
    if (signed === undefined) return;
    record.keyId = signed.key.id;
    const id = form['key_id'] ?? '';
    // By id only: a name could match a different key than the card the button was on.
    const target = /^key_[0-9a-f]{16}$/.test(id) ? ctx.keys.get(id) : undefined;
    if (target === undefined || target.id !== id) {
      back(res, signed.session, { kind: 'bad', message: 'No key has this id; nothing was revoked.' }, '#keys');
      return;
    }
    await ctx.keys.revoke(id);
    log({ time: new Date().toISOString(), level: 'info', message: `dashboard: ${signed.key.id} revoked ${id}` });
    back(res, signed.session, { kind: 'ok', message: `Revoked “${target.name}” (${id}). Requests with it now get 401.` }, '#keys');
  });

  routes.add('POST', '/dashboard/health', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    const signed = signedPost(req, res, form);
    if (signed === undefined) return;
    record.keyId = signed.key.id;
    const run = await health.run(signed.key.id);
    const failed = run?.report.checks.filter((c) => c.verdict === 'fail').map((c) => c.name) ?? [];
    log({ time: new Date().toISOString(), level: 'info', message: `dashboard: ${signed.key.id} ran the health checks${failed.length === 0 ? '' : `; failed: ${failed.join(', ')}`}` });
    redirect(res, '/dashboard#health');
  });

  routes.add('POST', '/dashboard/device', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const form = await readForm(req, ctx.config.limits.bodyTimeoutMs);
    const signed = signedPost(req, res, form);
    if (signed === undefined) return;
    record.keyId = signed.key.id;
    const action = form['action'] === 'approve' || form['action'] === 'deny' ? form['action'] : undefined;
    const tier = form['tier'] === undefined || form['tier'] === '' ? 'basic' : form['tier'];
    if (action === undefined || !isTierName(tier)) {
      back(res, signed.session, { kind: 'bad', message: 'Choose a tier, then Approve or Deny.' }, '#devices');
      return;
    }
    const result = await decide(flow, log, { userCode: form['user_code'] ?? '', action, tier, byKeyId: signed.key.id });
    if (result.outcome !== 'ok') {
      back(res, signed.session, { kind: 'bad', message: decisionError(result).message }, '#devices');
      return;
    }
    const name = result.grant.clientName;
    back(res, signed.session, {
      kind: 'ok',
      message: action === 'approve' ? `Approved “${name}” (tier ${tier}); it receives its key when it next checks.` : `Denied “${name}”.`,
    }, '#devices');
  });
}
