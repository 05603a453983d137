/**
 * The real Codex CLI (version pinned in test/clients/pinned/) against llmux, configured as the
 * README tells a user (`wire_api = "responses"`, the key in LLMUX_API_KEY), with fake upstreams of
 * both native formats behind llmux: a text answer, and a tool round trip where Codex runs the
 * `exec_command` the model called and the final answer quotes what it printed. Against the messages
 * upstream the turn thinks first, and Codex's stateless second request must bring that thinking
 * back signed (sealed reasoning). Codex's default model sends its tools inside an
 * `additional_tools` input item; llmux must still offer them to the upstream.
 *
 * Slow suite: `npm run test:clients`. Nothing but llmux is reachable (a closed proxy for the rest).
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsSkip, runCodex } from '../helpers/clients.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { answer, toolRoundTrip } from '../helpers/scripted-answers.ts';
import { records } from '../../src/common/json.ts';

const TIMEOUT_MS = 60_000;
const skip = clientsSkip();
/** Printed by the command the model asks for; the command itself never contains it literally. */
const MARKER = 'llmux-tool-42';
const COMMAND = 'echo llmux-tool-$((40+2))';
const SIGNATURE = 'EqQBCgIYAhIM-signature-codex-must-bring-back';

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
        { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', reasoning: true },
        { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', reasoning: true, max_output_tokens: 8192 },
        // Codex 0.171's own default model, in the built-in catalog too. Its output limit there (128K)
        // is more than the basic key's tokens/min: Codex sends no max_output_tokens, so each request
        // would reserve all of it and wait for the key to have nothing in use (docs/keys-and-limits.md).
        { id: 'gpt-6.2-sol', provider: 'fake-openai', upstream_id: 'gpt-upstream', max_output_tokens: 8192 },
      ],
    }),
  });
});
after(async () => {
  await gw?.close();
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  gw.upstream.requests.length = 0;
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}

async function codex(model: string | undefined, prompt: string): Promise<Awaited<ReturnType<typeof runCodex>>> {
  return runCodex({ baseUrl: `${gw.url}/v1`, apiKey: gw.key, ...(model === undefined ? {} : { model }), prompt, cwd, timeoutMs: TIMEOUT_MS, provider: { stream_max_retries: 0, request_max_retries: 0 } });
}

function modelRequestLines(): Array<Record<string, unknown>> {
  return gw.logs.filter((entry) => (entry as Record<string, unknown>)['path'] === '/v1/responses') as Array<Record<string, unknown>>;
}

for (const upstream of [{ format: 'chat', model: 'gpt-test', path: '/v1/chat/completions' }, { format: 'messages', model: 'claude-test', path: '/v1/messages' }] as const) {
  describe(`codex exec through llmux to a ${upstream.format} upstream`, { skip, timeout: 3 * TIMEOUT_MS }, () => {
    test('prints the model\'s text answer as its final message', async () => {
      gw.upstream.fallback = answer({ text: `Hello from the ${upstream.format} upstream, through llmux.` });
      const run = await codex(upstream.model, 'Say hello.');

      assert.equal(run.exitCode, 0, run.stderr);
      assert.equal(run.stdout.trim(), `Hello from the ${upstream.format} upstream, through llmux.`);
      assert.equal(gw.upstream.requests.length, 1);
      assert.equal(gw.upstream.requests[0]?.path, upstream.path);
      const line = modelRequestLines().at(-1);
      assert.equal(line?.['status'], 200);
      assert.equal(line?.['model'], upstream.model);
    });

    test('runs the exec_command the model called and quotes its output in the final answer', async () => {
      gw.upstream.fallback = toolRoundTrip(
        {
          ...(upstream.format === 'messages' ? { thinking: { text: 'The user wants the marker command run.', signature: SIGNATURE } } : {}),
          calls: [{ id: 'call_exec_1', name: 'exec_command', input: { cmd: COMMAND } }],
        },
        (result) => ({ text: `Codex ran the command and it printed ${lastLine(result)}` }),
      );
      const run = await codex(upstream.model, 'Run the marker command and tell me what it printed.');

      assert.equal(run.exitCode, 0, run.stderr);
      assert.equal(run.stdout.trim(), `Codex ran the command and it printed ${MARKER}`);
      const [first, second, ...others] = gw.upstream.requests;
      assert.deepEqual(others, []);
      const offered = records(first?.body['tools']).map((tool) => String((tool['function'] as Record<string, unknown> | undefined)?.['name'] ?? tool['name']));
      assert.ok(offered.includes('exec_command'), `exec_command is offered: ${offered.join(', ')}`);
      assert.ok(!offered.includes('web_search'), 'the hosted web_search is not');
      if (upstream.format === 'messages') {
        // Codex keeps nothing (store: false): the thinking comes back from the sealed reasoning item it replayed.
        const assistant = records(second?.body['messages']).find((message) => message['role'] === 'assistant');
        assert.deepEqual(records(assistant?.['content'])[0], { type: 'thinking', thinking: 'The user wants the marker command run.', signature: SIGNATURE });
      }
    });
  });
}

describe('codex exec with its default model ("responses lite": tools in an additional_tools input item)', { skip, timeout: 2 * TIMEOUT_MS }, () => {
  test('offers the namespaced tools of the additional_tools item to the upstream, flattened', async () => {
    gw.upstream.fallback = answer({ text: 'Default model answered.' });
    const run = await codex(undefined, 'Say hello.');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'Default model answered.');
    const offered = records(gw.upstream.requests[0]?.body['tools']).map((tool) => String((tool['function'] as Record<string, unknown> | undefined)?.['name']));
    assert.ok(offered.length > 0, 'the model gets tools');
    assert.ok(offered.some((name) => name.startsWith('functions__')), `flattened namespace tools: ${offered.join(', ')}`);
    // The developer messages after the additional_tools item are still system text, not user turns.
    const roles = records(gw.upstream.requests[0]?.body['messages']).map((message) => message['role']);
    assert.equal(roles[0], 'system');
  });
});
