/**
 * `/dashboard/usage` (admin sign-in): the usage view of llmux.md section 7 — cost and tokens per
 * day for the last 30 UTC days, stacked by model, and the top keys by cost — drawn as server-side
 * SVG (`charts.ts`), so the page has no script and reads the same at phone width.
 *
 * Decisions: the 30 days end with today (UTC), so today's bar grows during the day; top keys are
 * named by their key-store name, with the id added when two keys share a name or for usage of a
 * key no longer in the store; a signed-out visitor is sent to `/dashboard` to sign in.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayInternals } from '../gateway/feature.ts';
import type { RequestRecord } from '../gateway/request-record.ts';
import type { UsageRow } from '../usage/ledger.ts';
import { formatUsd } from '../usage/budget.ts';
import { horizontalBarChart, lastDays, modelColours, stackedBarChart, usageSegments } from './charts.ts';
import { html, layout, raw, redirect, sendPage } from './html.ts';
import type { Raw } from './html.ts';
import { currentSession } from './session.ts';
import type { SessionStore } from './session.ts';

const DAYS = 30;
const DAY_MS = 86_400_000;

/** The top-keys bars: each key's cost, labelled by name (and id when the name alone is ambiguous). */
export function keyBars(rows: readonly UsageRow[], names: ReadonlyMap<string, string>): Array<{ label: string; value: number }> {
  const counts = new Map<string, number>();
  for (const row of rows) {
    const name = row.key_id === null ? undefined : names.get(row.key_id);
    if (name !== undefined) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return rows.filter((row) => row.key_id !== null).map((row) => {
    const id = row.key_id as string;
    const name = names.get(id);
    return { label: name === undefined ? id : (counts.get(name) ?? 0) > 1 ? `${name} (${id})` : name, value: row.cost_usd };
  });
}

function summary(rows: readonly UsageRow[]): { requests: number; tokens: number; cost: number } {
  let requests = 0;
  let tokens = 0;
  let cost = 0;
  for (const r of rows) {
    requests += r.requests;
    tokens += r.input_tokens + r.output_tokens + r.cache_read_input_tokens + r.cache_creation_input_tokens;
    cost += r.cost_usd;
  }
  return { requests, tokens, cost };
}

/** The page body for the 30 days ending with the UTC day of `nowMs`. */
export function usageView(byDayModel: readonly UsageRow[], byKey: readonly UsageRow[], names: ReadonlyMap<string, string>, nowMs: number): Raw {
  const days = lastDays(nowMs, DAYS);
  const first = days[0] as string;
  const last = days[days.length - 1] as string;
  const total = summary(byDayModel);
  // One colour per model over the page: both charts draw a model alike even when one lacks it.
  const colours = modelColours(usageSegments(byDayModel, 'tokens').map((s) => s.model));
  const chart = (heading: string, svg: string): Raw => html`<section class="card chart"><h2>${heading}</h2>${raw(svg)}</section>`;
  return html`
<h1>Usage</h1>
<p class="muted">All keys, ${first} to ${last} (UTC): ${total.requests.toLocaleString('en-US')} requests, ${total.tokens.toLocaleString('en-US')} tokens, ${formatUsd(total.cost)} at the catalog's prices.
Per key, model or hour: <code>llmux usage</code> or <code>GET /v1/usage</code>.</p>
<div class="charts">
${chart('Cost per day', stackedBarChart({ days, segments: usageSegments(byDayModel, 'usd'), unit: 'usd', title: `Cost per day by model, ${first} to ${last}`, colours }))}
${chart('Tokens per day', stackedBarChart({ days, segments: usageSegments(byDayModel, 'tokens'), unit: 'tokens', title: `Tokens per day by model, ${first} to ${last}`, colours }))}
</div>
${chart('Top keys by cost', horizontalBarChart({ bars: keyBars(byKey, names), unit: 'usd', title: `Top keys by cost, ${first} to ${last}`, axisLabel: `Cost (USD), ${first} to ${last}` }))}`;
}

/** Mounts `GET /dashboard/usage`. */
export function mountUsagePage(internals: GatewayInternals, options: { sessions: SessionStore }): void {
  const { ctx, routes } = internals;
  routes.add('GET', '/dashboard/usage', async (req: IncomingMessage, res: ServerResponse, _p: Record<string, string>, record: RequestRecord) => {
    const nowMs = ctx.now();
    const signed = currentSession(req, options.sessions, ctx.keys, nowMs);
    if (signed === undefined) {
      redirect(res, '/dashboard');
      return;
    }
    record.keyId = signed.key.id;
    const since = (Math.floor(nowMs / DAY_MS) - DAYS + 1) * DAY_MS;
    const range = { since, until: nowMs + 1, keyId: 'all' };
    const [byDayModel, byKey] = await Promise.all([
      ctx.usage.query({ ...range, groupBy: ['day', 'model'] }),
      ctx.usage.query({ ...range, groupBy: 'key' }),
    ]);
    const names = new Map(ctx.keys.list().map((k) => [k.id, k.name]));
    const body = usageView(byDayModel, byKey, names, nowMs);
    sendPage(res, 200, layout({ title: 'Usage', body, signedIn: { csrf: signed.session.csrf, keyId: signed.key.id } }));
  });
}
