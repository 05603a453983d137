/**
 * The Claude Code routing recipe of docs/routing.md, checked as written with the real Claude Code
 * (version pinned in test/clients/pinned/): the config is read from its "Claude Code: background,
 * thinking and long context on different models" section, and only its providers' addresses and
 * credentials are replaced by fake providers' (one fake serves every format's path). Claude Code
 * runs as the recipe says (`--model claude-sonnet-4-6`, its own small model left as it is):
 *
 * - a main turn with thinking on goes to `claude-opus-4-6`, and a subagent on Claude Code's small
 *   model (`haiku`) goes to the local `qwen-local`;
 * - with a `CLAUDE.md` of about 70,000 tokens in the work folder, every request is over the
 *   recipe's 60,000 and goes to `gemini-2.5-pro`;
 *
 * each seen in llmux's request log (`requested_model` → `model`), with no 4xx.
 *
 * Slow suite: `npm run test:clients`. Nothing but llmux is reachable (a closed proxy for the rest).
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsSkip, runClaude } from '../helpers/clients.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { answer, lastToolResult } from '../helpers/scripted-answers.ts';

const TIMEOUT_MS = 90_000;
const skip = clientsSkip();
const RECIPE_HEADING = '## Claude Code: background, thinking and long context on different models';

/** The recipe's config block, as docs/routing.md has it. */
function recipe(): Record<string, unknown> {
  const page = readFileSync(new URL('../../docs/routing.md', import.meta.url), 'utf8');
  const at = page.indexOf(RECIPE_HEADING);
  assert.ok(at !== -1, 'docs/routing.md has the recipe');
  const block = /```json\n([\s\S]*?)\n```/.exec(page.slice(at))?.[1];
  assert.ok(block !== undefined, 'the recipe has a config block');
  return JSON.parse(block) as Record<string, unknown>;
}

let gw: TestGateway;
let cwd: string;

before(async () => {
  const config = recipe();
  gw = await startTestGateway({
    config: (url) => ({
      ...config,
      // The recipe's own providers, at the fake's address; the built-in ones it relies on too.
      providers: {
        ...Object.fromEntries(Object.entries(config['providers'] as Record<string, Record<string, unknown>>).map(([id, p]) => [id, { ...p, base_url: `${url}/v1` }])),
        anthropic: { format: 'anthropic', base_url: `${url}/v1`, api_key: 'env:ANTHROPIC_API_KEY' },
        gemini: { format: 'openai', base_url: `${url}/v1`, api_key: 'env:GEMINI_API_KEY' },
      },
      builtin_catalog: true,
      // Claude Code reserves up to 128,000 output tokens a request.
      tiers: { basic: { rpm: 1_000, tpm: 100_000_000, concurrency: 20 } },
    }),
    env: { ANTHROPIC_API_KEY: 'upstream-anthropic-secret', GEMINI_API_KEY: 'upstream-gemini-secret' },
  });
});
after(async () => {
  await gw?.close();
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-routing-'));
  gw.upstream.requests.length = 0;
  gw.logs.length = 0;
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** The model requests' log lines: what Claude Code asked for and what answered. */
function routed(): Array<{ requested: string; model: string; status: number }> {
  return (gw.logs as Array<Record<string, unknown>>)
    .filter((line) => line['path'] === '/v1/messages')
    .map((line) => ({ requested: String(line['requested_model'] ?? line['model']), model: String(line['model']), status: Number(line['status']) }));
}

function clientErrors(): Array<Record<string, unknown>> {
  return (gw.logs as Array<Record<string, unknown>>).filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500);
}

describe('the Claude Code routing recipe of docs/routing.md, with Claude Code', { skip, timeout: 4 * TIMEOUT_MS }, () => {
  test('sends thinking turns to the large model and a haiku subagent to the local one', async () => {
    // The large model asks a subagent on Claude Code's small model; the small model answers it.
    gw.upstream.fallback = (req, res, seen) => {
      if (seen.body['model'] === 'qwen3:8b') return answer({ text: 'hello from the small model' })(req, res, seen);
      const result = lastToolResult(seen.body);
      return answer(result === undefined
        ? { calls: [{ id: 'toolu_agent_1', name: 'Agent', input: { description: 'Say hello', prompt: 'Say hello in one line.', subagent_type: 'general-purpose', model: 'haiku', run_in_background: false } }] }
        : { text: `The agent said: ${result.includes('hello from the small model') ? 'hello from the small model' : 'something else'}` })(req, res, seen);
    };
    const run = await runClaude({
      baseUrl: gw.url, apiKey: gw.key, model: 'claude-sonnet-4-6', prompt: 'Ask an agent to say hello, then tell me what it said.',
      partial: false, allowedTools: ['Agent'], cwd, timeoutMs: TIMEOUT_MS,
    });

    assert.equal(run.exitCode, 0, run.stderr + run.stdout.slice(-2000));
    const result = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).at(-1);
    assert.equal(result?.['result'], 'The agent said: hello from the small model');
    assert.deepEqual(clientErrors(), []);
    const lines = routed();
    const main = lines.filter((l) => l.requested === 'claude-sonnet-4-6');
    const background = lines.filter((l) => /^claude-.*haiku/.test(l.requested));
    assert.ok(main.length >= 2, 'the tool call and the answer');
    assert.ok(main.every((l) => l.model === 'claude-opus-4-6' && l.status === 200), JSON.stringify(main));
    assert.ok(background.length >= 1, `a subagent on the small model: ${JSON.stringify(lines)}`);
    assert.ok(background.every((l) => l.model === 'qwen-local' && l.status === 200), JSON.stringify(background));
    assert.equal(lines.length, main.length + background.length);
    // Seen from the providers: the large model's turns passed through, the small model's translated to chat.
    assert.ok(gw.upstream.requests.some((r) => r.path === '/v1/messages' && r.body['model'] === 'claude-opus-4-6'));
    assert.ok(gw.upstream.requests.some((r) => r.path === '/v1/chat/completions' && r.body['model'] === 'qwen3:8b'));
  });

  test('sends a request over 60,000 tokens to the long-context model', async () => {
    // About 280,000 characters: some 70,000 tokens by llmux's estimate, in every request.
    writeFileSync(join(cwd, 'CLAUDE.md'), `# Project notes\n\n${'The build uses plain tools and a careful review. '.repeat(5_800)}\n`);
    gw.upstream.fallback = (req, res, seen) => answer({ text: seen.body['model'] === 'gemini-2.5-pro' ? 'Read your notes.' : 'wrong model' })(req, res, seen);
    const run = await runClaude({
      baseUrl: gw.url, apiKey: gw.key, model: 'claude-sonnet-4-6', prompt: 'Summarise the project notes in one line.',
      partial: false, cwd, timeoutMs: TIMEOUT_MS,
    });

    assert.equal(run.exitCode, 0, run.stderr + run.stdout.slice(-2000));
    const result = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).at(-1);
    assert.equal(result?.['result'], 'Read your notes.');
    assert.deepEqual(clientErrors(), []);
    const lines = routed();
    assert.ok(lines.length >= 1);
    assert.ok(lines.every((l) => l.requested === 'claude-sonnet-4-6' && l.model === 'gemini-2.5-pro' && l.status === 200), JSON.stringify(lines));
  });
});
