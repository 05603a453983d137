/**
 * The real Claude Code (version pinned in test/clients/pinned/) against llmux, set up as the README
 * tells a user (`ANTHROPIC_BASE_URL` without /v1, an llmux key), with fake upstreams of both native
 * formats behind llmux: a model whose provider speaks the messages format (passed through) and one
 * whose provider speaks chat-completions (translated). In print mode with
 * `--include-partial-messages` and in an interactive session driven through tmux, Claude Code must
 * finish a Bash tool round trip, and llmux's request log must show no 4xx: Claude Code sends
 * adaptive thinking with `display`, `context_management`, `output_config`, a long
 * `metadata.user_id`, `system` turns and a dozen betas, and all of them must be accepted
 * (issue 13, llmux.md section 5).
 *
 * Slow suite: `npm run test:clients`. Nothing but llmux is reachable (a closed proxy for the rest).
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsSkip, runClaude, runClaudeInteractive, tmuxSkip } from '../helpers/clients.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { toolRoundTrip } from '../helpers/scripted-answers.ts';

const TIMEOUT_MS = 60_000;
const skip = clientsSkip();
const MARKER = 'llmux-claude-42';
const COMMAND = 'echo llmux-claude-$((40+2))';

let gw: TestGateway;
let cwd: string;

before(async () => {
  gw = await startTestGateway({
    config: (url) => ({
      providers: {
        'fake-openai': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-openai-secret' },
        'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
      },
      models: [
        { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', reasoning: true, max_output_tokens: 32_000 },
        { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', reasoning: true, max_output_tokens: 32_000 },
      ],
      // Claude Code reserves 32,000 output tokens a request; the basic tier's 90,000 a minute
      // would hold the interactive session's /context counts back.
      tiers: { basic: { rpm: 1_000, tpm: 10_000_000, concurrency: 20 } },
    }),
  });
});
after(async () => {
  await gw?.close();
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  gw.upstream.requests.length = 0;
  gw.logs.length = 0;
  gw.upstream.fallback = toolRoundTrip(
    { calls: [{ id: 'toolu_bash_1', name: 'Bash', input: { command: COMMAND, description: 'Print the marker' } }] },
    (result) => ({ text: `The command printed ${result.includes(MARKER) ? MARKER : 'something else'}` }),
  );
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** Every request llmux answered with a 4xx, as its log lines. */
function clientErrors(): Array<Record<string, unknown>> {
  return (gw.logs as Array<Record<string, unknown>>).filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500);
}

function modelLines(): Array<Record<string, unknown>> {
  return (gw.logs as Array<Record<string, unknown>>).filter((line) => line['path'] === '/v1/messages');
}

for (const target of [{ model: 'claude-test', upstream: '/v1/messages', translated: false }, { model: 'gpt-test', upstream: '/v1/chat/completions', translated: true }] as const) {
  const how = target.translated ? 'a translated model (chat-completions provider)' : 'a passed-through model (messages provider)';
  describe(`Claude Code through llmux to ${how}`, { skip, timeout: 4 * TIMEOUT_MS }, () => {
    test('in print mode with --include-partial-messages finishes a Bash round trip with no 4xx from llmux', async () => {
      const run = await runClaude({
        baseUrl: gw.url, apiKey: gw.key, model: target.model, prompt: 'Run the marker command and tell me what it printed.',
        partial: true, allowedTools: ['Bash'], cwd, timeoutMs: TIMEOUT_MS,
      });

      assert.equal(run.exitCode, 0, run.stderr + run.stdout.slice(-2000));
      const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(lines.some((line) => line['type'] === 'stream_event'), 'partial messages carry the stream events');
      const result = lines.at(-1);
      assert.equal(result?.['subtype'], 'success');
      assert.equal(result?.['result'], `The command printed ${MARKER}`);
      assert.deepEqual(clientErrors(), []);
      const models = modelLines();
      assert.equal(models.length, 2, 'one request for the tool call, one for the answer');
      for (const line of models) {
        assert.equal(line['status'], 200);
        assert.equal(line['translated'], target.translated);
        assert.equal(line['model'], target.model);
      }
      assert.ok(gw.upstream.requests.every((r) => r.path === target.upstream), 'every model request reached the provider of its format');
    });

    test('in an interactive tmux session answers, runs /context and quits, with no 4xx from llmux', { skip: tmuxSkip() }, async () => {
      const run = await runClaudeInteractive({
        baseUrl: gw.url, apiKey: gw.key, model: target.model, cwd, timeoutMs: TIMEOUT_MS, allowedTools: ['Bash'],
        steps: [
          { send: 'Run the marker command and tell me what it printed.', waitFor: `printed ${MARKER}` },
          { send: '/context', waitFor: 'Context usage' },
        ],
      });

      assert.equal(run.timedOut, false, run.stdout.slice(-3000));
      assert.equal(run.exitCode, 0);
      assert.deepEqual(clientErrors(), []);
      assert.ok(modelLines().length >= 2, 'the tool call and the answer went through llmux');
      const counts = (gw.logs as Array<Record<string, unknown>>).filter((line) => line['path'] === '/v1/messages/count_tokens');
      assert.ok(counts.length > 0 && counts.every((line) => line['status'] === 200), '/context counted tokens through llmux');
    });
  });
}
