/**
 * Records what the pinned Codex CLI, Claude Code and Gemini CLI send, into test/fixtures/clients/*.json:
 * each scenario runs the real client against a fresh recording upstream and saves every request
 * (scrubbed, see scenarios.ts). Run after changing test/clients/pinned/:
 *
 *   node --import tsx test/clients/record-fixtures.ts
 *
 * Then update the versions and anything that changed in test/fixtures/clients/README.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claudeEnv, clientBinaries, codexConfig, runClaude, runClaudeInteractive, runCodex } from '../helpers/clients.ts';
import { GEMINI_SETTINGS, geminiArgs, geminiEnv, runGemini } from '../helpers/gemini-cli.ts';
import type { ClientResult } from '../helpers/clients.ts';
import { answerWith, startRecordingUpstream, toolRoundTrip } from '../helpers/recording-upstream.ts';
import type { RecordingUpstream, Script } from '../helpers/recording-upstream.ts';
import { API_KEY, FIXTURES, GEMINI_FILE_TEXT, SHELL_MARKER, claudeBashRoundTrip, codexShellRoundTrip, scrub } from './scenarios.ts';
import type { Fixture } from './scenarios.ts';

const TIMEOUT_MS = 120_000;
const binaries = clientBinaries();

interface Scenario {
  file: string;
  client: Fixture['client'];
  script: Script;
  /** Runs the client; returns its result and how it was set up. */
  run(upstream: RecordingUpstream, cwd: string): Promise<{ result: ClientResult; setup: Record<string, unknown> }>;
  /** A string the client's output must hold for the recording to count. */
  expect: string;
}

const CODEX_PROMPT = 'Run the marker command and tell me what it printed.';
const CLAUDE_PROMPT = 'Run the marker command and tell me what it printed.';
const TEXT_ANSWER = 'Hello from the recording upstream.';

function codexScenario(file: string, script: Script, expect: string, extra: { model?: string; provider?: Record<string, boolean | number | string>; prompt?: string }): Scenario {
  return {
    file, client: 'codex', script, expect,
    run: async (upstream, cwd) => {
      const options = {
        baseUrl: `${upstream.url}/v1`, apiKey: API_KEY, prompt: extra.prompt ?? 'Say hello.', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
        ...(extra.model === undefined ? {} : { model: extra.model }),
        ...(extra.provider === undefined ? {} : { provider: extra.provider }),
      };
      const result = await runCodex(options);
      return {
        result,
        setup: {
          argv: ['codex', 'exec', '--skip-git-repo-check', '--color', 'never', options.prompt],
          config_toml: codexConfig(options),
          env: { CODEX_HOME: '<HOME>/.codex', LLMUX_API_KEY: '<API_KEY>', HTTPS_PROXY: '<recording upstream>', NO_PROXY: '127.0.0.1,localhost' },
        },
      };
    },
  };
}

/** Gemini CLI in `cwd` (holding notes.txt), as the README sets it up. */
function geminiScenario(file: string, script: Script, expect: string, prompt: string): Scenario {
  return {
    file, client: 'gemini-cli', script, expect,
    run: async (upstream, cwd) => {
      writeFileSync(join(cwd, 'notes.txt'), GEMINI_FILE_TEXT);
      const options = { baseUrl: upstream.url, apiKey: API_KEY, model: 'gemini-test', prompt, cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url };
      return {
        result: await runGemini(options),
        setup: { argv: ['gemini', ...geminiArgs(options)], settings_json: GEMINI_SETTINGS, env: geminiEnv(options, '<HOME>') },
      };
    },
  };
}

const scenarios: Scenario[] = [
  geminiScenario('gemini-text.json', answerWith(TEXT_ANSWER), TEXT_ANSWER, 'Say hello.'),
  geminiScenario('gemini-read-file-tool.json', toolRoundTrip({
    name: 'read_file',
    input: { file_path: 'notes.txt' },
    reasoning: { summary: 'The user wants the notes read.', encryptedContent: 'bGxtdXgtdGVzdC1zaWduYXR1cmU=' },
    answer: (output) => `The notes say: ${output.trim()}`,
  }), 'The notes say: Buy milk.', 'Read notes.txt and tell me what it says.'),
  codexScenario('codex-text.json', answerWith(TEXT_ANSWER), TEXT_ANSWER, { model: 'gpt-test' }),
  codexScenario('codex-shell-tool.json', codexShellRoundTrip, SHELL_MARKER, { model: 'gpt-test', prompt: CODEX_PROMPT }),
  codexScenario('codex-catalog-model-gpt-5.5.json', answerWith(TEXT_ANSWER), TEXT_ANSWER, { model: 'gpt-5.5' }),
  codexScenario('codex-default-model.json', answerWith(TEXT_ANSWER), TEXT_ANSWER, {}),
  codexScenario('codex-websocket-first.json', answerWith(TEXT_ANSWER), TEXT_ANSWER, { model: 'gpt-test', provider: { supports_websockets: true } }),
  {
    file: 'claude-print-partial-tool.json', client: 'claude-code', script: claudeBashRoundTrip, expect: SHELL_MARKER,
    run: async (upstream, cwd) => {
      const options = { baseUrl: upstream.url, apiKey: API_KEY, prompt: CLAUDE_PROMPT, partial: true, allowedTools: ['Bash'], cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url };
      return {
        result: await runClaude(options),
        setup: {
          argv: ['claude', '-p', CLAUDE_PROMPT, '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--allowedTools', 'Bash'],
          env: claudeEnv(options, '<HOME>'),
        },
      };
    },
  },
  {
    file: 'claude-print-custom-model.json', client: 'claude-code', script: answerWith(TEXT_ANSWER), expect: TEXT_ANSWER,
    run: async (upstream, cwd) => {
      const options = { baseUrl: upstream.url, apiKey: API_KEY, prompt: 'Say hello.', partial: true, model: 'claude-test', smallFastModel: 'claude-test-small', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url };
      return {
        result: await runClaude(options),
        setup: {
          argv: ['claude', '-p', 'Say hello.', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--model', 'claude-test'],
          env: claudeEnv(options, '<HOME>'),
        },
      };
    },
  },
  {
    file: 'claude-interactive.json', client: 'claude-code', script: claudeBashRoundTrip, expect: 'Context usage',
    run: async (upstream, cwd) => {
      const options = {
        baseUrl: upstream.url, apiKey: API_KEY, cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
        steps: [
          { send: CLAUDE_PROMPT, waitFor: `it printed ${SHELL_MARKER}` },
          { send: '/context', waitFor: 'Context usage' },
        ],
      };
      return {
        result: await runClaudeInteractive(options),
        setup: {
          argv: ['claude'],
          tmux: 'a detached session, 200x50; typed: the prompt, Enter; "/context", Enter; "/exit", Enter',
          home: '~/.claude.json seeded with hasCompletedOnboarding, the approved key (last 20 characters) and the trusted work folder',
          env: claudeEnv(options, '<HOME>'),
        },
      };
    },
  },
];

const only = process.argv.slice(2);
mkdirSync(FIXTURES, { recursive: true });
for (const scenario of scenarios) {
  if (only.length > 0 && !only.includes(scenario.file)) continue;
  const upstream = await startRecordingUpstream({ apiKey: API_KEY, script: scenario.script });
  const cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  try {
    const { result, setup } = await scenario.run(upstream, cwd);
    const ok = result.exitCode === 0 && !result.timedOut && result.stdout.includes(scenario.expect);
    process.stdout.write(`${scenario.file}: exit ${String(result.exitCode)}, ${result.durationMs} ms, ${upstream.requests.length} requests, ${upstream.upgrades.length} upgrades, ${upstream.tunnels.length} tunnels${ok ? '' : ' FAILED'}\n`);
    if (!ok) {
      process.stdout.write(`${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}\n`);
      process.exitCode = 1;
      continue;
    }
    const fixture: Fixture = {
      client: scenario.client,
      version: { codex: binaries.codex.version, 'claude-code': binaries.claude.version, 'gemini-cli': binaries.gemini.version }[scenario.client],
      scenario: scenario.file.replace(/\.json$/, ''),
      setup,
      requests: upstream.requests,
      upgrades: upstream.upgrades,
      tunnels: upstream.tunnels,
    };
    writeFileSync(join(FIXTURES, scenario.file), `${JSON.stringify(scrub(fixture), null, 2)}\n`);
  } finally {
    await upstream.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}
