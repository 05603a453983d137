/**
 * What the web pages share: escaping, the page layout, the stylesheet and the one script (served
 * as files, so the Content-Security-Policy allows no inline code at all), the security headers,
 * form reading and the same-origin check.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../common/errors.ts';
import { readSmallBody } from '../http/admission.ts';
import { writeHead } from '../http/respond.ts';
import type { RouteRegistry } from '../gateway/feature.ts';
import { CHART_CSS } from './charts.ts';


const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** A template tag that escapes every interpolated value except `raw(...)` ones. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Raw {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return raw(out);
}

/** Markup that is already safe (built by `html`). */
export interface Raw { readonly __html: string }

/** Marks markup as safe; only for strings built from constants or by `html`. */
export function raw(markup: string): Raw {
  return { __html: markup };
}

function render(value: unknown): string {
  if (value === undefined || value === null || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  if (typeof value === 'object' && '__html' in value) return (value as Raw).__html;
  return escapeHtml(value);
}

export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
});

export interface LayoutOptions {
  title: string;
  body: Raw;
  /** Shows the sign-out button. */
  signedIn?: { csrf: string; keyId: string } | undefined;
}

/** A whole page: viewport meta for phones, the stylesheet, the header. */
export function layout(options: LayoutOptions): string {
  const signOut = options.signedIn === undefined ? '' : html`
      <form method="post" action="/dashboard/sign-out" class="sign-out">
        <input type="hidden" name="csrf" value="${options.signedIn.csrf}">
        <span class="who">${options.signedIn.keyId}</span>
        <button type="submit" class="link">Sign out</button>
      </form>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(options.title)} · llmux</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/llmux.css">
<script src="/assets/llmux.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="/dashboard">llmux</a>
  <nav><a href="/dashboard">Dashboard</a><a href="/dashboard/usage">Usage</a><a href="/device">Device sign-in</a></nav>${render(signOut)}
</header>
<main>
${options.body.__html}
</main>
</body>
</html>
`;
}

/** Sends a page with the security headers. */
export function sendPage(res: ServerResponse, status: number, page: string, headers: Record<string, string | string[]> = {}): void {
  writeHead(res, status, { ...SECURITY_HEADERS, ...headers, 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(page) });
  res.end(page);
}

/** 303 See Other: after a POST, the browser GETs `location` (no re-submission on reload). */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  writeHead(res, 303, { ...SECURITY_HEADERS, ...headers, location, 'content-length': 0 });
  res.end();
}

/** Reads an `application/x-www-form-urlencoded` body (what a plain HTML form posts). */
export async function readForm(req: IncomingMessage, idleTimeoutMs?: number): Promise<Record<string, string>> {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  const body = await readSmallBody(req, idleTimeoutMs);
  if (!type.startsWith('application/x-www-form-urlencoded')) {
    throw new GatewayError(415, 'invalid_request_error', 'unsupported_media_type', 'Send this form as application/x-www-form-urlencoded');
  }
  const form: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) if (!(name in form)) form[name] = value;
  return form;
}

/**
 * Whether a state-changing request comes from our own pages: `Sec-Fetch-Site` (when the browser
 * sends it) must be same-origin, and `Origin` (when sent) must be the address the request came to.
 * `Origin: null` is what browsers send for our own forms under `Referrer-Policy: no-referrer`, so
 * it proves nothing either way. Clients that send neither (curl, old browsers) still need the CSRF
 * token, which every form checks as well.
 */
export function isSameOrigin(req: IncomingMessage, ownRoot: string): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return false;
  const origin = req.headers.origin;
  if (typeof origin === 'string' && origin !== 'null' && origin !== ownRoot) return false;
  return true;
}

/** `2026-03-01 14:05 UTC`. */
export function formatTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** `just now`, `4 min ago`, `2 h ago`. */
export function formatAgo(ms: number, nowMs: number): string {
  const s = Math.max(0, Math.round((nowMs - ms) / 1000));
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** A number, or "unlimited" for Infinity. */
export function formatLimit(n: number): string {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : 'unlimited';
}

export const STYLESHEET = `
:root { color-scheme: light dark; --bg: #f6f7f9; --fg: #1b1f24; --muted: #5b6570; --card: #fff; --line: #d9dee4;
  --accent: #2450d6; --accent-fg: #fff; --ok: #176c3a; --ok-bg: #e3f5e9; --bad: #a32020; --bad-bg: #fbe7e7; --warn: #8a5a00; --code-bg: #eef1f5; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #14171b; --fg: #e6e9ed; --muted: #9aa4ae; --card: #1d2126; --line: #343a42; --accent: #6d8ff5; --accent-fg: #0d1117;
    --ok: #7fd39c; --ok-bg: #16301f; --bad: #ff9b9b; --bad-bg: #3a1c1c; --warn: #f0c060; --code-bg: #262b31; }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--accent); }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem; padding: .75rem max(1rem, calc((100% - 60rem) / 2 + 1rem));
  background: var(--card); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; font-size: 1.15rem; text-decoration: none; color: var(--fg); letter-spacing: .02em; }
header nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; flex: 1; }
header nav a { text-decoration: none; white-space: nowrap; }
.sign-out { display: flex; align-items: center; gap: .5rem; margin: 0; }
.who { color: var(--muted); font: .8rem ui-monospace, SFMono-Regular, Menlo, monospace; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
p { margin: .5rem 0; }
.muted { color: var(--muted); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .6rem; padding: 1rem; margin: 0 0 1rem; }
.narrow { max-width: 28rem; }
.grid { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); }
.grid .card { margin: 0; }
form.stack > * + * { margin-top: .75rem; }
label { display: block; font-weight: 600; font-size: .9rem; }
label .hint { font-weight: 400; color: var(--muted); }
input, select, textarea { display: block; width: 100%; margin-top: .25rem; padding: .55rem .65rem; font: inherit; color: inherit;
  background: var(--bg); border: 1px solid var(--line); border-radius: .4rem; }
input:focus, select:focus, textarea:focus, button:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.code-input { font: 600 1.35rem ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .12em; text-transform: uppercase; }
.fields { display: grid; gap: .75rem; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); align-items: end; }
.nowrap { white-space: nowrap; }
button { font: inherit; font-weight: 600; padding: .55rem 1rem; border-radius: .4rem; border: 1px solid var(--accent);
  background: var(--accent); color: var(--accent-fg); cursor: pointer; }
button.secondary { background: transparent; color: var(--accent); }
button.danger { background: transparent; color: var(--bad); border-color: var(--bad); }
button.link { background: none; border: 0; padding: 0; color: var(--accent); font-weight: 500; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; }
.notice { padding: .75rem 1rem; border-radius: .5rem; margin: 0 0 1rem; border: 1px solid; }
.notice.ok { color: var(--ok); background: var(--ok-bg); border-color: currentColor; }
.notice.bad { color: var(--bad); background: var(--bad-bg); border-color: currentColor; }
.notice strong { display: block; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
code { background: var(--code-bg); padding: .1em .35em; border-radius: .3em; overflow-wrap: anywhere; }
.user-code { font: 700 1.6rem ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .12em; }
.secret { display: flex; gap: .5rem; align-items: stretch; margin-top: .5rem; }
.secret textarea { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9rem; resize: none; word-break: break-all; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .75rem; margin: .5rem 0; font-size: .92rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.key-head { display: flex; justify-content: space-between; align-items: baseline; gap: .5rem; }
.key-head strong { overflow-wrap: anywhere; }
.badge { display: inline-block; font-size: .75rem; font-weight: 600; padding: .05rem .45rem; border-radius: 1rem; border: 1px solid currentColor; white-space: nowrap; }
.badge.active { color: var(--ok); }
.badge.revoked, .badge.expired { color: var(--bad); }
.badge.ok { color: var(--ok); }
.badge.fail { color: var(--bad); }
.badge.warn { color: var(--warn); }
.badge.off { color: var(--muted); }
table.health { width: 100%; border-collapse: collapse; margin: .5rem 0 1rem; font-size: .92rem; }
table.health th { text-align: left; color: var(--muted); font-weight: 600; }
table.health th, table.health td { padding: .4rem .75rem .4rem 0; border-bottom: 1px solid var(--line); vertical-align: top; }
table.health td:first-child { min-width: 9rem; }
table.health td:last-child { overflow-wrap: anywhere; }
table.health .hint { color: var(--muted); margin-top: .15rem; }
@media (max-width: 40rem) {
  table.health thead { display: none; }
  table.health tr { display: grid; grid-template-columns: 1fr auto; gap: .15rem .5rem; padding: .5rem 0; border-bottom: 1px solid var(--line); }
  table.health td { border: 0; padding: 0; min-width: 0; }
  table.health td:first-child { font-weight: 600; min-width: 0; }
  table.health td:last-child { grid-column: 1 / -1; }
}
.badge.admin { color: var(--accent); }
.usage { display: grid; grid-template-columns: 5.5rem 1fr auto; gap: .2rem .5rem; align-items: center; font-size: .85rem; margin: .5rem 0; }
meter { width: 100%; height: .7rem; }
.revoked-card { opacity: .65; }
details summary { cursor: pointer; font-weight: 600; }
.chart h2 { font-size: 1.05rem; margin: 0 0 .75rem; }
.charts { display: grid; gap: 1rem; margin: 0 0 1rem; grid-template-columns: repeat(auto-fit, minmax(min(100%, 24rem), 1fr)); }
.charts .card { margin: 0; }
${CHART_CSS}
@media (max-width: 30rem) {
  main { padding: .75rem; }
  .actions button { flex: 1; }
  .secret { flex-direction: column; }
}
`;

/** The one script: copy buttons (`<button data-copy="ID">` copies the value of element ID). */
export const SCRIPT = `
document.addEventListener('click', function (event) {
  var button = event.target.closest('button[data-copy]');
  if (!button) return;
  var field = document.getElementById(button.getAttribute('data-copy'));
  if (!field) return;
  var done = function () { button.textContent = 'Copied'; setTimeout(function () { button.textContent = 'Copy'; }, 2000); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, function () { field.select(); });
  } else {
    field.select();
    try { document.execCommand('copy'); done(); } catch (e) { /* the text stays selected to copy by hand */ }
  }
});
document.querySelectorAll('button[data-copy]').forEach(function (b) { b.hidden = false; });
`;

/** A small mark for the browser tab (browsers ask for one; a 404 would be noise). */
export const ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2450d6"/><path d="M9 8v16h5M17 8v16M23 8v16" stroke="#fff" stroke-width="3" fill="none" stroke-linecap="round"/></svg>';

/** Serves the stylesheet, the script and the icon. */
export function mountAssets(routes: RouteRegistry): void {
  const asset = (type: string, body: string) => (_req: IncomingMessage, res: ServerResponse) => {
    writeHead(res, 200, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'public, max-age=3600',
      'x-content-type-options': 'nosniff',
    });
    res.end(body);
  };
  routes.add('GET', '/assets/llmux.css', asset('text/css; charset=utf-8', STYLESHEET));
  routes.add('GET', '/assets/llmux.js', asset('text/javascript; charset=utf-8', SCRIPT));
  routes.add('GET', '/assets/icon.svg', asset('image/svg+xml', ICON));
}
