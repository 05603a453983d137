/**
 * The real Gemini CLI (version pinned in test/clients/pinned/) against llmux, set up as the README
 * tells a user (`GOOGLE_GEMINI_BASE_URL`, an llmux key in `GEMINI_API_KEY`, the API-key auth type
 * in `~/.gemini/settings.json`), non-interactive (`gemini -p`), with fake upstreams of the three
 * native formats behind llmux: a chat-completions provider and a messages provider (translated)
 * and a Gemini provider (passed through). Gemini CLI must answer a prompt and finish a
 * `read_file` tool round trip through each, with no 4xx in llmux's request log and nothing sent
 * anywhere but llmux (the proxy is a recording server that counts attempts to leave).
 *
 * And the same CLI against the recording upstream, not llmux: it shows the helper drives it offline
 * to the end of a turn, and that the recorded fixtures (test/fixtures/clients/gemini-*.json) still
 * describe what this version sends.
 *
 * Slow suite: `npm run test:clients`.
 */
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRecord, records } from '../../src/common/json.ts';
import { clientsSkip } from '../helpers/clients.ts';
import { GEMINI_SETTINGS, runGemini } from '../helpers/gemini-cli.ts';
import { startTestGateway, threeFormatConfig } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { SCRIPTED_THOUGHT_SIGNATURE, toolRoundTrip } from '../helpers/scripted-answers.ts';
import { answerWith, startRecordingUpstream, toolRoundTrip as recordedRoundTrip } from '../helpers/recording-upstream.ts';
import type { RecordedRequest, RecordingUpstream } from '../helpers/recording-upstream.ts';
import { API_KEY, GEMINI_FILE_TEXT, readFixture } from './scenarios.ts';

const TIMEOUT_MS = 90_000;
const skip = clientsSkip();
const PROMPT = 'Read notes.txt and tell me what it says.';

let gw: TestGateway;
/** The proxy Gemini CLI is given: anything that tries to leave lands here. */
let outside: RecordingUpstream;
let cwd: string;
/** Where this test's log lines start (the log keeps every test's, so `allLogged` can count them). */
let firstLine = 0;

before(async () => {
  outside = await startRecordingUpstream({ apiKey: API_KEY });
  gw = await startTestGateway({
    config: (url) => ({
      ...threeFormatConfig(url, { chat: 65_536, messages: 32_000, gemini: 65_536 }),
      // Gemini CLI's requests carry a long system prompt and every tool's schema.
      tiers: { basic: { rpm: 1_000, tpm: 10_000_000, concurrency: 20 } },
    }),
  });
});
after(async () => {
  await gw?.close();
  await outside?.close();
});
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'llmux-work-'));
  writeFileSync(join(cwd, 'notes.txt'), GEMINI_FILE_TEXT);
  gw.upstream.requests.length = 0;
  firstLine = gw.logs.length;
  outside.tunnels.length = 0;
  outside.requests.length = 0;
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** This test's log lines. */
function logLines(): Array<Record<string, unknown>> {
  return gw.logs.slice(firstLine) as Array<Record<string, unknown>>;
}

/** Every request llmux answered with a 4xx, as its log lines. */
function clientErrors(): Array<Record<string, unknown>> {
  return logLines().filter((line) => typeof line['status'] === 'number' && (line['status'] as number) >= 400 && (line['status'] as number) < 500);
}

function assertStayedHome(): void {
  assert.deepEqual(outside.tunnels, [], 'no attempt to reach another host');
  assert.deepEqual(outside.requests, [], 'nothing sent through the proxy');
}

const TARGETS = [
  { model: 'gpt-test', kind: 'a chat-completions provider (translated)', upstreamPath: /^\/v1\/chat\/completions$/ },
  { model: 'claude-test', kind: 'a messages provider (translated)', upstreamPath: /^\/v1\/messages$/ },
  { model: 'gemini-test', kind: 'a Gemini provider (passed through)', upstreamPath: /^\/v1beta\/models\/gemini-upstream:streamGenerateContent\?alt=sse$/ },
] as const;

for (const target of TARGETS) {
  describe(`Gemini CLI through llmux to ${target.kind}`, { skip, timeout: 4 * TIMEOUT_MS }, () => {
    test('answers a prompt, with no 4xx from llmux', async () => {
      gw.upstream.fallback = toolRoundTrip({ text: 'Hello from behind llmux.' }, () => ({ text: 'unexpected' }));
      const run = await runGemini({ baseUrl: gw.url, apiKey: gw.key, model: target.model, prompt: 'Say hello.', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: outside.url });
      assert.equal(run.exitCode, 0, run.stderr.slice(-3000));
      assert.equal(run.stdout.trim(), 'Hello from behind llmux.');
      await gw.allLogged();
      assert.deepEqual(clientErrors(), []);
      const lines = logLines().filter((line) => typeof line['path'] === 'string' && String(line['path']).startsWith('/v1beta/models/'));
      assert.ok(lines.length > 0 && lines.every((line) => line['path'] === `/v1beta/models/${target.model}:streamGenerateContent`), JSON.stringify(lines.map((line) => line['path'])));
      assert.ok(gw.upstream.requests.every((request) => target.upstreamPath.test(request.path)), gw.upstream.requests.map((request) => request.path).join(', '));
      assertStayedHome();
    });

    test('finishes a read_file tool round trip, with no 4xx from llmux', async () => {
      gw.upstream.fallback = toolRoundTrip(
        { calls: [{ id: 'toolu_read_1', name: 'read_file', input: { file_path: 'notes.txt' } }] },
        (result) => ({ text: `The notes say: ${result.trim()}` }),
      );
      const run = await runGemini({ baseUrl: gw.url, apiKey: gw.key, model: target.model, prompt: PROMPT, cwd, timeoutMs: TIMEOUT_MS, proxyUrl: outside.url });
      assert.equal(run.exitCode, 0, run.stderr.slice(-3000));
      assert.equal(run.stdout.trim(), `The notes say: ${GEMINI_FILE_TEXT.trim()}`);
      await gw.allLogged();
      assert.deepEqual(clientErrors(), []);
      const [first, second] = gw.upstream.requests;
      assert.ok(first !== undefined && second !== undefined, 'two model requests: the call, then its result');
      if (target.model === 'gemini-test') {
        // Passed through: Google's signature on the call goes back as it came.
        assert.ok(JSON.stringify(second.body['contents']).includes(SCRIPTED_THOUGHT_SIGNATURE));
      }
      const warnings = logLines().flatMap((line) => (Array.isArray(line['warnings']) ? (line['warnings'] as string[]) : []));
      assert.ok(!warnings.some((warning) => /refus|could not/.test(warning)), warnings.join('\n'));
      assertStayedHome();
    });
  });
}

describe('Gemini CLI against the recording upstream', { skip, timeout: 3 * TIMEOUT_MS }, () => {
  let upstream: RecordingUpstream;
  beforeEach(async () => {
    upstream = await startRecordingUpstream({ apiKey: API_KEY });
  });
  afterEach(async () => {
    await upstream.close();
  });

  function body(request: RecordedRequest | undefined): Record<string, unknown> {
    assert.ok(request !== undefined && isRecord(request.body), 'a JSON body');
    return request.body;
  }
  const fields = (request: RecordedRequest | undefined): string[] => Object.keys(body(request)).sort();

  test('streams its turn with alt=sse, the key in x-goog-api-key, and prints the answer', async () => {
    upstream.script = answerWith('Hello from the recording upstream.');
    const run = await runGemini({ baseUrl: upstream.url, apiKey: API_KEY, model: 'gemini-test', prompt: 'Say hello.', cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url });
    assert.equal(run.exitCode, 0, run.stderr.slice(-3000));
    assert.equal(run.stdout.trim(), 'Hello from the recording upstream.');
    const [request, ...others] = upstream.modelRequests();
    assert.deepEqual(others, []);
    assert.equal(request?.path, '/v1beta/models/gemini-test:streamGenerateContent?alt=sse');
    assert.deepEqual(request?.credential, { header: 'x-goog-api-key', matches: true });
    assert.deepEqual(fields(request), fields(readFixture('gemini-text.json').requests.find((r) => r.path.includes(':streamGenerateContent'))));
    assert.deepEqual(upstream.tunnels, []);
  });

  test('runs read_file at the model\'s call and sends its output back with the call, its signature and id', async () => {
    upstream.script = recordedRoundTrip({
      name: 'read_file',
      input: { file_path: 'notes.txt' },
      reasoning: { summary: 'The user wants the notes read.', encryptedContent: 'bGxtdXgtdGVzdC1zaWduYXR1cmU=' },
      answer: (output) => `The notes say: ${output.trim()}`,
    });
    const run = await runGemini({ baseUrl: upstream.url, apiKey: API_KEY, model: 'gemini-test', prompt: PROMPT, cwd, timeoutMs: TIMEOUT_MS, proxyUrl: upstream.url });
    assert.equal(run.exitCode, 0, run.stderr.slice(-3000));
    assert.equal(run.stdout.trim(), `The notes say: ${GEMINI_FILE_TEXT.trim()}`);
    const [first, second, ...others] = upstream.modelRequests();
    assert.deepEqual(others, []);
    const declarations = records(body(first)['tools']).flatMap((tool) => records(tool['functionDeclarations']));
    assert.ok(declarations.some((declaration) => declaration['name'] === 'read_file' && isRecord(declaration['parametersJsonSchema'])), 'tools are declared with parametersJsonSchema');
    const contents = records(body(second)['contents']);
    const modelTurn = contents.find((content) => content['role'] === 'model');
    const call = records(modelTurn?.['parts']).find((part) => part['functionCall'] !== undefined);
    assert.equal(call?.['thoughtSignature'], 'bGxtdXgtdGVzdC1zaWduYXR1cmU=', 'the call goes back with its signature');
    const response = records(contents.at(-1)?.['parts']).map((part) => part['functionResponse']).find(isRecord);
    assert.equal(response?.['name'], 'read_file');
    assert.equal(response?.['id'], (call?.['functionCall'] as Record<string, unknown>)['id'], 'the response names the id the CLI gave its call');
    const fixture = readFixture('gemini-read-file-tool.json');
    const recorded = fixture.requests.filter((r) => r.path.includes(':streamGenerateContent'));
    assert.deepEqual(fields(first), fields(recorded[0]));
    assert.deepEqual(fields(second), fields(recorded[1]));
    assert.deepEqual(upstream.tunnels, []);
  });
});

describe('the README\'s Gemini CLI settings', () => {
  test('are the ones the suite runs with', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Gemini CLI'));
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block !== undefined, 'the README shows ~/.gemini/settings.json');
    assert.deepEqual(JSON.parse(block), { security: GEMINI_SETTINGS.security });
  });
});
