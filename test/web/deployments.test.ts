/**
 * The dashboard's Deployments section (llmux.md section 10): each deployment tried, its health and
 * counters, escaped; and on the dashboard of a gateway that answered through one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deploymentsSection } from '../../src/web/deployments.ts';
import type { DeploymentSnapshot } from '../../src/routing/index.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { createWebClient, csrfOf } from './web-client.ts';

function snapshot(deployment: string, fields: Partial<DeploymentSnapshot>): DeploymentSnapshot {
  return {
    deployment, provider: deployment.split('/')[0]!, upstreamId: deployment.split('/')[1]!, requests: 0, errors: {}, ttfbCount: 0, ttfbSumMs: 0,
    ttfbAverageMs: undefined, inFlight: 0, resting: false, restingForMs: 0, ...fields,
  };
}

describe('the Deployments section', () => {
  it('shows each deployment tried, resting or not, its failures by code and its time to first byte', () => {
    const text = deploymentsSection([
      snapshot('openai/gpt-5', { requests: 10, errors: { '503': 1, '429': 3 }, ttfbCount: 4, ttfbSumMs: 1000, ttfbAverageMs: 300, inFlight: 2 }),
      snapshot('bedrock/<b>claude</b>', { requests: 1, resting: true, restingForMs: 4_200 }),
      snapshot('quiet/never', {}),
    ]).__html;
    assert.match(text, /<td class="mono">openai\/gpt-5<\/td><td><span class="badge ok">ok<\/span><\/td><td>10<\/td><td>429 ×3, 503 ×1<\/td><td>250 ms \(recent 300 ms\)<\/td><td>2<\/td>/);
    assert.match(text, /bedrock\/&lt;b&gt;claude&lt;\/b&gt;<\/td><td><span class="badge warn">resting 5 s<\/span>/);
    assert.ok(!text.includes('quiet/never'));
    assert.match(deploymentsSection([]).__html, /No request has gone upstream yet/);
  });

  it('is on the dashboard of a gateway that answered', async () => {
    const g = await startTestGateway();
    try {
      const res = await fetch(`${g.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
      const web = createWebClient(g.url);
      const page = await web.get('/dashboard');
      assert.equal((await web.post('/dashboard/sign-in', { csrf: csrfOf(page.text), admin_key: g.adminKey })).status, 303);
      const signed = (await web.get('/dashboard')).text;
      assert.match(signed, /<h2 id="deployments">Deployments<\/h2>/);
      assert.match(signed, /<td class="mono">fake-openai\/gpt-upstream<\/td><td><span class="badge ok">ok<\/span><\/td><td>1<\/td><td>none<\/td>/);
    } finally {
      await g.close();
    }
  });
});
