/**
 * The real OpenCode (version pinned in test/clients/pinned/) against llmux, configured as
 * docs/clients.md tells a user: llmux as a custom provider through each AI SDK package OpenCode
 * ships with (`@ai-sdk/openai-compatible` speaks chat completions, `@ai-sdk/anthropic` messages,
 * `@ai-sdk/openai` the Responses API), with fake upstreams of both native formats behind llmux: a
 * text answer, and a tool round trip where OpenCode runs the `bash` command the model called and
 * the final answer quotes what it printed. Against the messages upstream the turn thinks first,
 * and the second request must bring that thinking back signed: sent back by OpenCode in messages,
 * kept by llmux for a chat client.
 *
 * Slow suite: `npm run test:clients`. Nothing but llmux is reachable (a closed proxy for the rest).
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsSkip } from '../helpers/clients.ts';
import { openCodeTexts, runOpenCode } from '../helpers/opencode.ts';
import type { OpenCodeFormat } from '../helpers/opencode.ts';
import { startTestGateway, threeFormatConfig } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { answer, toolRoundTrip } from '../helpers/scripted-answers.ts';
import { records } from '../../src/common/json.ts';

const TIMEOUT_MS = 60_000;
const skip = clientsSkip();
/** Printed by the command the model asks for; the command itself never contains it literally. */
const MARKER = 'llmux-tool-42';
const COMMAND = 'echo llmux-tool-$((40+2))';
const SIGNATURE = 'EqQBCgIYAhIM-signature-opencode-must-bring-back';
const PATHS: Record<OpenCodeFormat, string> = { chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses' };
const UPSTREAMS = [
  { format: 'chat', model: 'gpt-test', path: '/v1/chat/completions' },
  { format: 'messages', model: 'claude-test', path: '/v1/messages' },
] as const;

let gw: TestGateway;
let cwd: string;
/** Where this test's log lines begin. */
let firstLine = 0;

before(async () => {
  gw = await startTestGateway({ config: (url) => threeFormatConfig(url) });
});
after(async () => {
  await gw?.close();
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  gw.upstream.requests.length = 0;
  firstLine = gw.logs.length;
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

function opencode(format: OpenCodeFormat, model: string, prompt: string): ReturnType<typeof runOpenCode> {
  return runOpenCode({ baseUrl: `${gw.url}/v1`, apiKey: gw.key, format, model, limit: { context: 128_000, output: 4_096 }, prompt, cwd, timeoutMs: TIMEOUT_MS });
}

/** This test's request log lines of model requests (not `/v1/models` and the like). */
function modelRequestLines(): Array<Record<string, unknown>> {
  return (gw.logs.slice(firstLine) as Array<Record<string, unknown>>).filter((entry) => Object.values(PATHS).includes(String(entry['path'])));
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}

for (const format of ['chat', 'messages', 'responses'] as const) {
  for (const upstream of UPSTREAMS) {
    describe(`opencode run speaking ${format} through llmux to a ${upstream.format} upstream`, { skip, timeout: 3 * TIMEOUT_MS }, () => {
      test('prints the model\'s text answer', async () => {
        gw.upstream.fallback = answer({ text: `Hello from the ${upstream.format} upstream, through llmux.` });
        const run = await opencode(format, upstream.model, 'Say hello.');

        assert.equal(run.exitCode, 0, run.stderr);
        assert.deepEqual(openCodeTexts(run.stdout), [`Hello from the ${upstream.format} upstream, through llmux.`]);
        assert.equal(gw.upstream.requests.length, 1);
        assert.equal(gw.upstream.requests[0]?.path, upstream.path);
        await gw.allLogged();
        const lines = modelRequestLines();
        assert.deepEqual(lines.map((line) => [line['path'], line['status'], line['model']]), [[PATHS[format], 200, upstream.model]]);
      });
    });
  }
}

// The tool round trip: each format passed through, and translated where the thinking must survive
// it. A chat client has no place for the thinking: llmux keeps it by tool call id. OpenCode's
// Responses provider sends `store: false` without asking for encrypted reasoning, so it has none to
// give back (docs/clients.md says which provider to pick for Claude models).
for (const { format, upstream } of [
  { format: 'chat', upstream: UPSTREAMS[0] },
  { format: 'chat', upstream: UPSTREAMS[1] },
  { format: 'messages', upstream: UPSTREAMS[1] },
  { format: 'responses', upstream: UPSTREAMS[0] },
] as const) {
  describe(`opencode run speaking ${format}, a ${upstream.format} upstream calling its bash tool`, { skip, timeout: 3 * TIMEOUT_MS }, () => {
    test('runs the command the model called and quotes its output in the final answer', async () => {
      gw.upstream.fallback = toolRoundTrip(
        {
          ...(upstream.format === 'messages' ? { thinking: { text: 'The user wants the marker command run.', signature: SIGNATURE } } : {}),
          calls: [{ id: 'call_bash_1', name: 'bash', input: { command: COMMAND, description: 'Print the marker' } }],
        },
        (result) => ({ text: `OpenCode ran the command and it printed ${lastLine(result)}` }),
      );
      const run = await opencode(format, upstream.model, 'Run the marker command and tell me what it printed.');

      assert.equal(run.exitCode, 0, run.stderr);
      assert.equal(openCodeTexts(run.stdout).at(-1), `OpenCode ran the command and it printed ${MARKER}`);
      const [first, second, ...others] = gw.upstream.requests;
      assert.deepEqual(others, []);
      const offered = records(first?.body['tools']).map((tool) => String((tool['function'] as Record<string, unknown> | undefined)?.['name'] ?? tool['name']));
      assert.ok(offered.includes('bash'), `bash is offered: ${offered.join(', ')}`);
      if (upstream.format === 'messages') {
        const assistant = records(second?.body['messages']).find((message) => message['role'] === 'assistant');
        assert.deepEqual(records(assistant?.['content'])[0], { type: 'thinking', thinking: 'The user wants the marker command run.', signature: SIGNATURE });
      }
      await gw.allLogged();
      assert.deepEqual(modelRequestLines().map((line) => line['status']), [200, 200]);
    });
  });
}
