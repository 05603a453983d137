/**
 * The real clients (versions pinned in test/clients/pinned/) through llmux to upstreams that
 * refuse a turn without the opaque state of their earlier answers (llmux.md section 11, the fakes
 * of test/helpers/fake-stateful.ts, which answer two parallel calls, then one, then `done`):
 *
 * - Claude Code (messages) to a Gemini 3 model behind Google's OpenAI-compatible surface: the thought
 *   signatures travel in Claude Code's history as sealed thinking signatures and come back on their
 *   calls as `extra_content.google.thought_signature`.
 * - Claude Code to a Gemini 3 model behind the native Gemini format (the `gemini` provider format):
 *   the same signatures come back as each call part's `thoughtSignature`.
 * - Codex CLI (Responses, `store: false`) to a DeepSeek-style model: the `reasoning_content` of each
 *   tool-call turn travels sealed in the reasoning items Codex replays.
 *
 * Each runs its shell tool three times over three turns and ends with `done`; the upstream refuses
 * nothing, and llmux's log shows no 4xx. Slow suite: `npm run test:clients`.
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsSkip, runClaude, runCodex } from '../helpers/clients.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { SKIP_SIGNATURE, type StatefulFake, list, startStatefulFake } from '../helpers/fake-stateful.ts';

const TIMEOUT_MS = 90_000;
const skip = clientsSkip();
/** Printed by the command the model asks for; the command itself never contains it literally. */
const MARKER = 'llmux-state-42';
const COMMAND = 'echo llmux-state-$((40+2))';

let gemini: StatefulFake;
let geminiNative: StatefulFake;
let deepseek: StatefulFake;
let gw: TestGateway;
let cwd: string;

before(async () => {
  gemini = await startStatefulFake('gemini', { tool: { name: 'Bash', input: { command: COMMAND, description: 'Print the marker' } } });
  geminiNative = await startStatefulFake('gemini-native', { tool: { name: 'Bash', input: { command: COMMAND, description: 'Print the marker' } } });
  deepseek = await startStatefulFake('deepseek', { tool: { name: 'exec_command', input: { cmd: COMMAND } } });
  gw = await startTestGateway({
    config: {
      providers: {
        'gemini-openai': { format: 'openai', base_url: `${gemini.url}/v1beta/openai`, api_key: 'g-secret', family: 'gemini' },
        'gemini-native': { format: 'gemini', base_url: `${geminiNative.url}/v1beta`, api_key: 'gn-secret' },
        'deepseek-up': { format: 'openai', base_url: `${deepseek.url}/v1`, api_key: 'd-secret' },
      },
      models: [
        { id: 'gemini-3-pro', provider: 'gemini-openai', upstream_id: 'gemini-3-pro-preview', reasoning: true, context_length: 1_000_000, max_output_tokens: 32_000 },
        { id: 'gemini-3-native', provider: 'gemini-native', upstream_id: 'gemini-3-pro-preview', reasoning: true, context_length: 1_000_000, max_output_tokens: 32_000 },
        { id: 'deepseek-think', provider: 'deepseek-up', upstream_id: 'deepseek-v4-pro', reasoning: true, replay_reasoning: true, context_length: 1_000_000, max_output_tokens: 32_000 },
      ],
      // Claude Code reserves 32,000 output tokens a request.
      tiers: { basic: { rpm: 1_000, tpm: 10_000_000, concurrency: 20 } },
    },
  });
});
after(async () => {
  await gw?.close();
  await gemini?.close();
  await geminiNative?.close();
  await deepseek?.close();
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  gw.logs.length = 0;
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** Every request llmux answered with a 4xx, as its log lines. */
function clientErrors(): Array<Record<string, unknown>> {
  return (gw.logs as Array<Record<string, unknown>>).filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500);
}

/** The tool results the upstream was given back, as text. */
function toolResults(fake: StatefulFake): string {
  return JSON.stringify(fake.requests.map((request) => list(request.body['messages']).filter((message) => message['role'] === 'tool')));
}

/** The function responses the native Gemini upstream was given back, as text. */
function functionResponses(fake: StatefulFake): string {
  return JSON.stringify(fake.requests.map((request) => list(request.body['contents']).flatMap((content) => list(content['parts']).filter((part) => part['functionResponse'] !== undefined))));
}

/**
 * Claude Code's three-turn Bash loop with `model` behind `fake`: it ends `done`, the fake refused
 * nothing, llmux answered no 4xx, the command ran (its output in what `results` reads of the fake),
 * and the last request with tools holds the signatures the fake issued (`signatures`), no placeholder.
 */
async function claudeLoop(model: string, fake: StatefulFake, results: (fake: StatefulFake) => string, signatures: RegExp): Promise<void> {
  const from = fake.requests.length;
  const run = await runClaude({
    baseUrl: gw.url, apiKey: gw.key, model, smallFastModel: model, prompt: 'Run the marker command as often as you need, then say done.',
    partial: false, allowedTools: ['Bash'], cwd, timeoutMs: TIMEOUT_MS,
  });
  assert.equal(run.exitCode, 0, run.stderr + run.stdout.slice(-2000));
  assert.deepEqual(fake.refusals, [], 'Gemini refused nothing');
  assert.deepEqual(clientErrors(), []);
  const result = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).at(-1);
  assert.equal(result?.['result'], 'done');
  assert.ok(results(fake).includes(MARKER), 'Claude Code ran the command the model called');
  const loop = fake.requests.slice(from).filter((request) => list(request.body['tools']).length > 0);
  const last = JSON.stringify(loop.at(-1)?.body ?? {});
  assert.match(last, signatures, 'the signatures Gemini issued came back');
  assert.equal(last.includes(SKIP_SIGNATURE), false, 'no placeholder: the conversation had the real ones');
}

describe('Claude Code to a Gemini 3 model behind Google\'s OpenAI-compatible surface', { skip, timeout: 2 * TIMEOUT_MS }, () => {
  test('completes a three-turn tool loop (two parallel Bash calls, then one) with the thought signatures given back, and no 4xx', async () => {
    await claudeLoop('gemini-3-pro', gemini, toolResults, /"thought_signature":"gemini-sig-/);
  });
});

describe('Claude Code to a Gemini 3 model behind the native Gemini format', { skip, timeout: 2 * TIMEOUT_MS }, () => {
  test('completes a three-turn tool loop (two parallel Bash calls, then one) with each call part\'s thoughtSignature given back, and no 4xx', async () => {
    await claudeLoop('gemini-3-native', geminiNative, functionResponses, /"thoughtSignature":"gemini-native-sig-/);
  });
});

describe('Codex CLI to a DeepSeek-style model', { skip, timeout: 2 * TIMEOUT_MS }, () => {
  test('completes a three-turn tool loop with every tool-call turn\'s reasoning_content given back, and no 4xx', async () => {
    const from = deepseek.requests.length;
    const run = await runCodex({
      baseUrl: `${gw.url}/v1`, apiKey: gw.key, model: 'deepseek-think', prompt: 'Run the marker command as often as you need, then say done.', cwd, timeoutMs: TIMEOUT_MS,
      provider: { stream_max_retries: 0, request_max_retries: 0 },
    });
    assert.equal(run.exitCode, 0, run.stderr);
    assert.deepEqual(deepseek.refusals, [], 'DeepSeek refused nothing');
    assert.deepEqual(clientErrors(), []);
    assert.equal(run.stdout.trim().split('\n').at(-1), 'done');
    assert.ok(toolResults(deepseek).includes(MARKER), 'Codex ran the command the model called');
    const last = deepseek.requests.slice(from).at(-1)?.body ?? {};
    const replayed = list(last['messages']).filter((message) => message['role'] === 'assistant').map((message) => message['reasoning_content']);
    assert.equal(replayed.length, 2, 'both tool-call turns are in the history');
    for (const text of replayed) assert.match(String(text), /^Reasoning at step \d: r\d+\.$/, 'the reasoning DeepSeek issued, not a placeholder');
  });
});
