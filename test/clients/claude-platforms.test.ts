/**
 * The real Claude Code (pinned in test/clients/pinned/) through llmux to Claude on the cloud
 * platforms (llmux.md section 8): Amazon Bedrock (test/helpers/fake-bedrock.ts, which refuses a
 * signature not over the exact bytes, and `model`, `stream` or a missing `anthropic_version` in the
 * body) and Google Vertex AI (test/helpers/fake-vertex.ts, which takes only tokens the fake OAuth
 * server issued, and refuses the `anthropic-beta` values Vertex refuses). Claude Code sends a dozen
 * betas, several of which both platforms refuse: in print mode with `--include-partial-messages`
 * it must finish a Bash round trip, with no 4xx in llmux's log and no refusal at either fake.
 *
 * Slow suite: `npm run test:clients`.
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsSkip, runClaude } from '../helpers/clients.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { lastToolResult } from '../helpers/scripted-answers.ts';
import type { ScriptedAnswer } from '../helpers/scripted-answers.ts';
import { startFakeBedrock } from '../helpers/fake-bedrock.ts';
import type { FakeBedrock } from '../helpers/fake-bedrock.ts';
import { createServiceAccount, startFakeGoogleOAuth } from '../helpers/fake-google-oauth.ts';
import type { FakeGoogleOAuth } from '../helpers/fake-google-oauth.ts';
import { startFakeVertex } from '../helpers/fake-vertex.ts';
import type { FakeVertex } from '../helpers/fake-vertex.ts';

const TIMEOUT_MS = 60_000;
const skip = clientsSkip();
const MARKER = 'llmux-claude-42';
const COMMAND = 'echo llmux-claude-$((40+2))';
const credentials = { accessKeyId: 'ASIACLAUDECODETEST01', secretAccessKey: 'claude-code-bedrock-secret-0123456789', sessionToken: 'claude-code-session-token//+=' };

/** A Bash round trip as either platform's Claude plays it. */
function bashRoundTrip(body: Record<string, unknown>): ScriptedAnswer {
  const result = lastToolResult(body);
  if (result === undefined) return { calls: [{ id: 'toolu_bash_1', name: 'Bash', input: { command: COMMAND, description: 'Print the marker' } }] };
  return { text: `The command printed ${result.includes(MARKER) ? MARKER : 'something else'}` };
}

let bedrock: FakeBedrock;
let oauth: FakeGoogleOAuth;
let vertex: FakeVertex;
let gw: TestGateway;
let dir: string;
let cwd: string;

before(async () => {
  if (skip !== false) return;
  const account = createServiceAccount();
  bedrock = await startFakeBedrock({ credentials: [credentials], region: 'us-west-2', script: bashRoundTrip });
  oauth = await startFakeGoogleOAuth({ serviceAccounts: [account] });
  vertex = await startFakeVertex({ oauth, project: 'claude-code-project', location: 'us-east5', script: bashRoundTrip });
  dir = mkdtempSync(join(tmpdir(), 'llmux-claude-platforms-'));
  const keyPath = join(dir, 'sa.json');
  writeFileSync(keyPath, JSON.stringify(account.keyFile(oauth.tokenUrl)));
  gw = await startTestGateway({
    env: { AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey, AWS_SESSION_TOKEN: credentials.sessionToken },
    config: {
      providers: {
        bedrock: { format: 'anthropic', platform: 'bedrock', region: 'us-west-2', base_url: bedrock.url },
        vertex: { format: 'anthropic', platform: 'vertex', project: 'claude-code-project', location: 'us-east5', base_url: `${vertex.url}/v1`, credentials_file: keyPath },
      },
      models: [
        { id: 'claude-bedrock', provider: 'bedrock', upstream_id: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', reasoning: true, context_length: 200_000, max_output_tokens: 64_000 },
        { id: 'claude-vertex', provider: 'vertex', upstream_id: 'claude-sonnet-4-5@20250929', reasoning: true, context_length: 200_000, max_output_tokens: 64_000 },
      ],
      // Claude Code reserves 32,000 output tokens a request.
      tiers: { basic: { rpm: 1_000, tpm: 10_000_000, concurrency: 20 } },
    },
  });
});
after(async () => {
  await gw?.close();
  await bedrock?.close();
  await vertex?.close();
  await oauth?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  if (gw !== undefined) gw.logs.length = 0;
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** Every request llmux answered with a 4xx, as its log lines. */
function clientErrors(): Array<Record<string, unknown>> {
  return (gw.logs as Array<Record<string, unknown>>).filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500);
}

for (const platform of ['bedrock', 'vertex'] as const) {
  describe(`Claude Code through llmux to Claude on ${platform === 'bedrock' ? 'Amazon Bedrock' : 'Google Vertex AI'}`, { skip, timeout: 2 * TIMEOUT_MS }, () => {
    test('finishes a Bash round trip in print mode, with no 4xx from llmux and no refusal upstream', async () => {
      const seenBefore = platform === 'bedrock' ? bedrock.requests.length : vertex.requests.length;
      const run = await runClaude({
        baseUrl: gw.url, apiKey: gw.key, model: `claude-${platform}`, prompt: 'Run the marker command and tell me what it printed.',
        partial: true, allowedTools: ['Bash'], cwd, timeoutMs: TIMEOUT_MS,
      });

      assert.equal(run.exitCode, 0, run.stderr + run.stdout.slice(-2000));
      const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(lines.some((line) => line['type'] === 'stream_event'), 'partial messages carry the stream events');
      const result = lines.at(-1);
      assert.equal(result?.['subtype'], 'success');
      assert.equal(result?.['result'], `The command printed ${MARKER}`);
      assert.deepEqual(clientErrors(), []);
      const models = (gw.logs as Array<Record<string, unknown>>).filter((line) => line['path'] === '/v1/messages');
      assert.ok(models.length >= 2 && models.every((line) => line['status'] === 200 && line['provider'] === platform), JSON.stringify(models));
      if (platform === 'bedrock') {
        assert.deepEqual(bedrock.refusals, []);
        const seen = bedrock.requests.slice(seenBefore);
        assert.ok(seen.length >= 2 && seen.every((r) => r.operation === 'invoke-with-response-stream'));
        // Claude Code's betas reached Bedrock only as those it takes, in the body.
        assert.ok(seen.every((r) => r.headers['anthropic-beta'] === undefined));
        for (const r of seen) for (const beta of (r.body['anthropic_beta'] as string[] | undefined) ?? []) assert.ok(!beta.startsWith('claude-code-'), beta);
      } else {
        assert.deepEqual(vertex.refusals, []);
        const seen = vertex.requests.slice(seenBefore);
        assert.ok(seen.length >= 2 && seen.every((r) => r.operation === 'streamRawPredict'));
      }
    });
  });
}
