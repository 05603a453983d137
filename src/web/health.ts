/**
 * The dashboard's Health section: the checks of `llmux doctor` (src/doctor/), run on demand by an
 * admin (a POST from the section's button, with the dashboard's CSRF protection) against the
 * config this server runs with, and shown as the same rows. The page itself never runs them, so
 * it stays as fast as before: it shows the last run, kept in the process.
 *
 * Decisions: one run at a time per gateway (a second click while one runs waits for it); the last
 * run is shown to every admin, with when and by which key it was run.
 */
import type { DoctorReport, Verdict } from '../doctor/report.ts';
import { formatAgo, formatTime, html } from './html.ts';
import type { Raw } from './html.ts';

export interface HealthRun {
  report: DoctorReport;
  atMs: number;
  byKeyId: string;
}

export interface HealthRunner {
  /** The last finished run, if any. */
  last(): HealthRun | undefined;
  /** Runs the checks (or joins the run under way); undefined when this gateway has none. */
  run(byKeyId: string): Promise<HealthRun | undefined>;
}

/** Keeps the last run of `check` (the gateway's `health` service). */
export function createHealthRunner(check: (() => Promise<DoctorReport>) | undefined, now: () => number): HealthRunner {
  let last: HealthRun | undefined;
  let running: Promise<HealthRun | undefined> | undefined;
  return {
    last: () => last,
    run(byKeyId) {
      if (check === undefined) return Promise.resolve(undefined);
      running ??= check().then((report) => {
        last = { report, atMs: now(), byKeyId };
        return last;
      }).finally(() => {
        running = undefined;
      });
      return running;
    },
  };
}

const WORD: Record<Verdict, string> = { ok: 'ok', warn: 'warn', fail: 'fail', off: 'off' };

/** The section: what it does, the button, and the last run's rows. */
export function healthSection(runner: HealthRunner, available: boolean, csrf: string, nowMs: number): Raw {
  const last = runner.last();
  const button = html`
<form method="post" action="/dashboard/health" class="actions">
  <input type="hidden" name="csrf" value="${csrf}">
  <button type="submit" class="secondary">${last === undefined ? 'Run the checks' : 'Run them again'}</button>
</form>`;
  const failed = last?.report.checks.filter((c) => c.verdict === 'fail').length ?? 0;
  return html`
<h2 id="health">Health</h2>
<p class="muted">The checks of <code>llmux doctor</code> for the config this server runs with: each provider's credential and endpoint
(a model list is asked for with the credential), the state server and the key store. They take up to a few seconds.</p>
${!available ? html`<p class="muted">This gateway was started without them.</p>` : last === undefined ? html`<p class="muted">Not run yet.</p>${button}` : html`
<div class="card">
  <p><strong>${failed === 0 ? 'Everything needed passes.' : `${failed} check${failed === 1 ? '' : 's'} failed.`}</strong>
  <span class="muted">Run ${formatAgo(last.atMs, nowMs)} (${formatTime(last.atMs)}) by ${last.byKeyId}.</span></p>
  <table class="health">
    <thead><tr><th scope="col">Check</th><th scope="col">Verdict</th><th scope="col">Found</th></tr></thead>
    <tbody>${last.report.checks.map((c) => html`
      <tr><td>${c.name}</td><td><span class="badge ${c.verdict}">${WORD[c.verdict]}</span></td><td>${c.detail}${c.hint === undefined ? '' : html`<div class="hint">→ ${c.hint}</div>`}</td></tr>`)}
    </tbody>
  </table>
  ${button}
</div>`}`;
}
