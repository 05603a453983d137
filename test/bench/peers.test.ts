import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { PEERS, renderPeers } from '../../bench/peers.ts';
import type { PeerResult } from '../../bench/peers.ts';
import { loadScenarios } from '../../bench/measure.ts';
import type { LoadResult } from '../../bench/measure.ts';

function result(proxy: LoadResult['proxy'], scenario: string, cpuUsPerRequest: number, p99Ms: number): LoadResult {
  return { scenario, proxy, requests: 1000, rps: 1000, p50Ms: 1, p99Ms, cpuUsPerRequest, cpuShare: 1, peakRssMb: 80, bytesPerResponse: 900, upstreamConnectionsPer1k: 0, errors: 0 };
}

describe('the peers of `npm run bench -- --peers`', () => {
  it('send each scenario they take as a request for an existing scenario, the model named their way', () => {
    const scenarios = loadScenarios();
    for (const peer of PEERS) {
      for (const [id, request] of Object.entries(peer.requests)) {
        const scenario = scenarios.find((s) => s.id === id);
        assert.ok(scenario !== undefined, `${peer.id}: scenario ${id} exists`);
        const sent = request(scenario, 4000);
        assert.match(sent.path, /^\/v1\//);
        const body = JSON.parse(sent.body) as { model?: unknown; stream?: unknown };
        assert.equal(typeof body.model, 'string');
        assert.equal(body.stream, (JSON.parse(scenario.body) as { stream?: unknown }).stream, `${peer.id} ${id}: streamed as the scenario is`);
      }
    }
  });

  it('start with their files in their own folder: claude-code-router its config (a stale pid file gone), copilot-api its shim', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmux-peers-'));
    try {
      const ccr = PEERS.find((peer) => peer.id === 'claude-code-router');
      mkdirSync(join(dir, '.claude-code-router'), { recursive: true });
      writeFileSync(join(dir, '.claude-code-router', '.claude-code-router.pid'), '123');
      const launch = ccr?.launch(dir, 5000, 4000);
      assert.equal(launch?.env['HOME'], dir);
      assert.equal(existsSync(join(dir, '.claude-code-router', '.claude-code-router.pid')), false);
      const config = JSON.parse(readFileSync(join(dir, '.claude-code-router', 'config.json'), 'utf8')) as { PORT: number; Providers: Array<{ api_base_url: string }> };
      assert.equal(config.PORT, 5000);
      assert.ok(config.Providers.every((provider) => provider.api_base_url.startsWith('http://127.0.0.1:4000/')));
      PEERS.find((peer) => peer.id === 'copilot-api')?.launch(dir, 5001, 4000);
      assert.ok(existsSync(join(dir, 'bench-shim.mjs')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("copilot-api's shim answers GitHub's look-ups itself and sends Copilot's calls to the fake upstream", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmux-peers-'));
    try {
      PEERS.find((peer) => peer.id === 'copilot-api')?.launch(dir, 5001, 4000);
      const fetched: string[] = [];
      const context = { Response, URL, Math, Date, JSON, globalThis: {} as { fetch?: (url: string, init?: unknown) => Promise<Response> } };
      context.globalThis.fetch = (url: string) => {
        fetched.push(url);
        return Promise.resolve(new Response('{}'));
      };
      runInNewContext(readFileSync(join(dir, 'bench-shim.mjs'), 'utf8'), context);
      const fetch = context.globalThis.fetch;
      const token = await (await fetch('https://api.github.com/copilot_internal/v2/token')).json() as { token: string };
      assert.equal(token.token, 'bench');
      const models = await (await fetch('https://api.githubcopilot.com/models')).json() as { data: Array<{ id: string }> };
      assert.equal(models.data[0]?.id, 'bench-chat');
      await fetch('https://api.githubcopilot.com/chat/completions', { method: 'POST' });
      assert.deepEqual(fetched, ['http://127.0.0.1:4000/v1/chat/completions']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are shown beside llmux with their ratios to the bare proxy of their own rounds, and what was not measured says why', () => {
    const scenarios = loadScenarios();
    const llmux = [result('bare', 'chat-json', 100, 2), result('llmux', 'chat-json', 150, 3)];
    const peers: PeerResult[] = [{ peer: 'Peer A', scenario: 'chat-json', bare: result('bare', 'chat-json', 110, 2), result: result('peer', 'chat-json', 1100, 20) }];
    const text = renderPeers(scenarios, peers, ['Peer B: npm install failed'], llmux);
    assert.match(text, /\| chat JSON pass-through \| llmux \| 150 \| 1\.50× \| 3\.00 \| 1\.50× \|/);
    assert.match(text, /\| chat JSON pass-through \| Peer A \| 1100 \| 10\.00× \| 20\.00 \| 10\.00× \|/);
    assert.match(text, /- Peer B: npm install failed/);
    assert.doesNotMatch(text, /messages JSON/);
  });
});
