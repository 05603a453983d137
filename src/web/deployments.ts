/**
 * The dashboard's Deployments section (llmux.md section 10): each deployment that answered or was
 * tried since the gateway started, as the router counts it: attempts, failures by code, the time
 * to first byte, what is in flight and whether it rests (a cooldown after failures) and for how
 * long. Read from the router's snapshot when the page is drawn; nothing is sent upstream for it.
 */
import type { DeploymentSnapshot } from '../routing/index.ts';
import { html } from './html.ts';
import type { Raw } from './html.ts';

/** `503 ×2, 429 ×1`, the most frequent code first; `none` without failures. */
function errorsText(errors: Readonly<Record<string, number>>): string {
  const codes = Object.entries(errors).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return codes.length === 0 ? 'none' : codes.map(([code, count]) => `${code} ×${count}`).join(', ');
}

/** The average time to first byte, and the moving average routing's `latency` strategy reads. */
function ttfbText(d: DeploymentSnapshot): string {
  if (d.ttfbCount === 0) return '—';
  const mean = Math.round(d.ttfbSumMs / d.ttfbCount);
  return d.ttfbAverageMs === undefined ? `${mean} ms` : `${mean} ms (recent ${Math.round(d.ttfbAverageMs)} ms)`;
}

/** The section; `deployments` undefined: this gateway was started without routing's counters. */
export function deploymentsSection(deployments: readonly DeploymentSnapshot[] | undefined): Raw {
  const shown = (deployments ?? []).filter((d) => d.requests > 0 || d.inFlight > 0 || d.resting);
  return html`
<h2 id="deployments">Deployments</h2>
<p class="muted">What answers each model: a provider and its upstream model id. A deployment that fails rests for a while (a 429, 503 or 529 at once, 500s after three in a row) and requests go to the model's other deployments.</p>
${shown.length === 0 ? html`<p class="muted">No request has gone upstream yet.</p>` : html`
<table class="health deployments">
  <thead><tr><th scope="col">Deployment</th><th scope="col">Health</th><th scope="col">Attempts</th><th scope="col">Failures</th><th scope="col">First byte</th><th scope="col">In flight</th></tr></thead>
  <tbody>${shown.map((d) => html`
    <tr><td class="mono">${d.deployment}</td><td>${d.resting ? html`<span class="badge warn">resting ${Math.ceil(d.restingForMs / 1000)} s</span>` : html`<span class="badge ok">ok</span>`}</td><td>${d.requests}</td><td>${errorsText(d.errors)}</td><td>${ttfbText(d)}</td><td>${d.inFlight}</td></tr>`)}
  </tbody>
</table>`}`;
}
