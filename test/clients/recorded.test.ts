/**
 * The slow client suite: the real Codex CLI and Claude Code (versions pinned in
 * test/clients/pinned/) against the recording upstream, not llmux. It shows the helpers drive
 * both clients to the end of a turn offline, that the scripted streams are ones the clients
 * accept, and that the recorded fixtures still describe what these versions send (re-record with
 * `node --import tsx test/clients/record-fixtures.ts` when a pinned version changes).
 *
 * Run with `npm run test:clients` (the first run downloads the clients, about 330 MB). Each
 * client run takes 0.5 to 3 s here.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRecord, records } from '../../src/common/json.ts';
import { clientsSkip, runClaude, runClaudeInteractive, runCodex, tmuxSkip } from '../helpers/clients.ts';
import { answerWith, startRecordingUpstream } from '../helpers/recording-upstream.ts';
import type { RecordedRequest, RecordingUpstream } from '../helpers/recording-upstream.ts';
import { API_KEY, SHELL_MARKER, claudeBashRoundTrip, codexShellRoundTrip, readFixture } from './scenarios.ts';

const TIMEOUT_MS = 60_000;
const skip = clientsSkip();

let upstream: RecordingUpstream;
let cwd: string;

beforeEach(async () => {
  upstream = await startRecordingUpstream({ apiKey: API_KEY });
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
});

afterEach(async () => {
  await upstream.close();
  rmSync(cwd, { recursive: true, force: true });
});

function body(request: RecordedRequest | undefined): Record<string, unknown> {
  assert.ok(request !== undefined, 'the request was made');
  assert.ok(isRecord(request.body), `a JSON body on ${request.method} ${request.path}`);
  return request.body;
}

/** Top-level body fields, sorted: what a fixture must still match for these client versions. */
function fields(request: RecordedRequest | undefined): string[] {
  return Object.keys(body(request)).sort();
}

function assertStayedHome(): void {
  assert.deepEqual(upstream.tunnels, [], 'no attempt to reach another host');
  for (const request of upstream.requests) assert.equal(request.credential?.matches, true, `${request.path} carried the key`);
}

describe('Codex CLI against the recording upstream', { skip, timeout: 4 * TIMEOUT_MS }, () => {
  test('prints the text the Responses stream carried as its final message', async () => {
    upstream.script = answerWith('Hello from the recording upstream.');
    const run = await runCodex({ baseUrl: `${upstream.url}/v1`, apiKey: API_KEY, model: 'gpt-test', prompt: 'Say hello.', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url });

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'Hello from the recording upstream.');
    const [request, ...others] = upstream.requests;
    assert.deepEqual(others, []);
    assert.equal(request?.method, 'POST');
    assert.equal(request?.path, '/v1/responses');
    assert.deepEqual(request?.credential, { header: 'authorization', matches: true });
    assert.equal(body(request)['stream'], true);
    assert.equal(body(request)['store'], false);
    assert.deepEqual(upstream.upgrades, [], 'a custom provider does not try WebSockets unless supports_websockets is set');
    assert.deepEqual(fields(request), fields(readFixture('codex-text.json').requests[0]));
    assertStayedHome();
  });

  test('runs the shell command the model called and quotes its output in the final message', async () => {
    upstream.script = codexShellRoundTrip;
    const run = await runCodex({
      baseUrl: `${upstream.url}/v1`, apiKey: API_KEY, model: 'gpt-test', prompt: 'Run the marker command and tell me what it printed.',
      cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
    });

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.trim(), `Codex ran the command and it printed ${SHELL_MARKER}`);
    const [first, second, ...others] = upstream.modelRequests();
    assert.deepEqual(others, []);
    const toolNames = records(body(first)['tools']).map((tool) => tool['name']);
    assert.ok(toolNames.includes('exec_command'), `the shell tool is offered: ${toolNames.join(', ')}`);

    // Stateless (store: false): the second request repeats the conversation and adds the call,
    // its output and the reasoning item handed out with it, encrypted_content included.
    const input = records(body(second)['input']);
    const call = input.find((item) => item['type'] === 'function_call');
    const output = input.find((item) => item['type'] === 'function_call_output');
    const reasoning = input.find((item) => item['type'] === 'reasoning');
    assert.equal(call?.['name'], 'exec_command');
    assert.equal(output?.['call_id'], call?.['call_id']);
    assert.match(String(output?.['output']), new RegExp(`${SHELL_MARKER}\\n?$`));
    assert.equal(reasoning?.['encrypted_content'], 'llmux-test-sealed-reasoning');
    const fixture = readFixture('codex-shell-tool.json');
    assert.deepEqual(fields(first), fields(fixture.requests[0]));
    assert.deepEqual(fields(second), fields(fixture.requests[1]));
    assertStayedHome();
  });

  test('falls back to HTTP after one WebSocket attempt when the upgrade is refused with 426', async () => {
    upstream.script = answerWith('Answered over HTTP.');
    const run = await runCodex({
      baseUrl: `${upstream.url}/v1`, apiKey: API_KEY, model: 'gpt-test', prompt: 'Say hello.', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
      provider: { supports_websockets: true },
    });

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'Answered over HTTP.');
    assert.equal(upstream.upgrades.length, 1);
    assert.equal(upstream.upgrades[0]?.path, '/v1/responses');
    assert.equal(upstream.upgrades[0]?.headers['openai-beta']?.startsWith('responses_websockets='), true);
    assert.equal(upstream.modelRequests().length, 1);
  });

  test('fails the turn when the stream ends without response.completed', async () => {
    upstream.script = () => ({ kind: 'truncated', text: 'This answer never finishes.' });
    const run = await runCodex({
      baseUrl: `${upstream.url}/v1`, apiKey: API_KEY, model: 'gpt-test', prompt: 'Say hello.', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
      // Without this Codex reconnects five times (about 7 s) before giving up the same way.
      provider: { stream_max_retries: 0 },
    });

    assert.equal(run.exitCode, 1);
    assert.match(run.stderr, /stream closed before response\.completed/);
    assert.equal(run.stdout, '');
    assert.equal(upstream.modelRequests().length, 1);
  });
});

describe('Claude Code against the recording upstream', { skip, timeout: 3 * TIMEOUT_MS }, () => {
  test('in print mode streams partial messages and finishes a Bash tool round trip', async () => {
    upstream.script = claudeBashRoundTrip;
    const run = await runClaude({
      baseUrl: upstream.url, apiKey: API_KEY, prompt: 'Run the marker command and tell me what it printed.', partial: true,
      allowedTools: ['Bash'], cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
    });

    assert.equal(run.exitCode, 0, run.stderr + run.stdout.slice(-2000));
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const streamed = lines.filter((line) => line['type'] === 'stream_event').map((line) => (isRecord(line['event']) ? line['event']['type'] : undefined));
    assert.ok(streamed.includes('content_block_delta'), 'partial messages carry the stream events');
    assert.ok(streamed.includes('message_stop'));
    const result = lines.at(-1);
    assert.equal(result?.['type'], 'result');
    assert.equal(result?.['subtype'], 'success');
    assert.equal(result?.['result'], `Claude Code ran the command and it printed ${SHELL_MARKER}`);

    const [first, second, ...others] = upstream.modelRequests();
    assert.deepEqual(others, []);
    assert.equal(first?.path, '/v1/messages?beta=true');
    assert.deepEqual(first?.credential, { header: 'x-api-key', matches: true });
    assert.equal(first?.headers['anthropic-version'], '2023-06-01');
    const lastTurn = records(body(second)['messages']).at(-1);
    const toolResult = records(lastTurn?.['content']).find((block) => block['type'] === 'tool_result');
    assert.equal(toolResult?.['content'], SHELL_MARKER);
    const assistant = records(body(second)['messages']).find((message) => message['role'] === 'assistant');
    const thinking = records(assistant?.['content']).find((block) => block['type'] === 'thinking');
    assert.equal(thinking?.['signature'], 'llmux-test-sealed-reasoning', 'the thinking block comes back signed');
    const fixture = readFixture('claude-print-partial-tool.json');
    assert.deepEqual(fields(first), fields(fixture.requests[0]));
    assert.deepEqual(first?.headers['anthropic-beta'], fixture.requests[0]?.headers['anthropic-beta']);
    assertStayedHome();
  });

  test('in an interactive tmux session answers, counts tokens for /context and quits on /exit', { skip: tmuxSkip() }, async () => {
    upstream.script = claudeBashRoundTrip;
    const run = await runClaudeInteractive({
      baseUrl: upstream.url, apiKey: API_KEY, cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url,
      steps: [
        { send: 'Run the marker command and tell me what it printed.', waitFor: `it printed ${SHELL_MARKER}` },
        { send: '/context', waitFor: 'Context usage' },
      ],
    });

    assert.equal(run.timedOut, false, run.stdout.slice(-3000));
    assert.equal(run.exitCode, 0);
    assert.equal(run.screens.length, 2);
    const models = upstream.modelRequests();
    assert.equal(models.length, 2);
    assert.equal(body(models[0])['stream'], true);
    const counts = upstream.requests.filter((r) => r.path.startsWith('/v1/messages/count_tokens'));
    assert.ok(counts.length > 0, '/context asks count_tokens');
    for (const count of counts) assert.equal(typeof body(count)['model'], 'string');
    assert.deepEqual(fields(models[0]), fields(readFixture('claude-interactive.json').requests[0]));
    assertStayedHome();
  });
});
