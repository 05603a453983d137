/**
 * Google's Gemini format through llmux as the SDKs' users call it, with the SDKs pinned in
 * test/clients/sdks/ (installed on first use into the clients cache, like ./sdks.test.ts): the AI
 * SDK's `@ai-sdk/google` (`generateText`, `streamText` with a tool over two steps) and the
 * `@google/genai` SDK's chat session (`chats.create`, `sendMessageStream` with function calling:
 * the SDK keeps each streamed chunk as its own history turn, which llmux merges), against chat,
 * messages and Gemini upstreams (fakes); and the README's two snippets, run as written (the
 * address swapped for the test gateway's) in a child process. The SDK's other operations run in
 * the socket tests (test/gemini-e2e.test.ts), from the devDependency.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pinnedSdks } from '../helpers/clients.ts';
import { blockUnder } from '../helpers/markdown.ts';
import { startTestGateway, threeFormatConfig } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { SCRIPTED_THOUGHT_SIGNATURE, answer, toolRoundTrip } from '../helpers/scripted-answers.ts';
import { isRecord, records } from '../../src/common/json.ts';

const TIMEOUT_MS = 60_000;

interface AiSdk {
  generateText(options: Record<string, unknown>): Promise<{ text: string; steps: unknown[] }>;
  streamText(options: Record<string, unknown>): { textStream: AsyncIterable<string>; steps: Promise<unknown[]> };
  tool(definition: { description: string; inputSchema: unknown; execute(input: { city: string }): Promise<string> }): unknown;
  stepCountIs(count: number): unknown;
}
interface AiSdkGoogle { createGoogleGenerativeAI(options: { apiKey: string; baseURL: string }): (model: string) => unknown }
interface Zod { z: { object(shape: Record<string, unknown>): unknown; string(): unknown } }
interface GenAiChunk { text?: string; functionCalls?: Array<{ id?: string; name?: string; args?: Record<string, unknown> }> }
interface GenAiChat { sendMessageStream(params: { message: unknown }): Promise<AsyncIterable<GenAiChunk>>; getHistory(): unknown[] }
interface GenAi { GoogleGenAI: new (options: Record<string, unknown>) => { chats: { create(params: Record<string, unknown>): GenAiChat } } }

interface Sdks { folder: string; ai: AiSdk; google: AiSdkGoogle; zod: Zod; genai: GenAi }

const pinned = pinnedSdks((require, folder): Sdks => ({
  folder,
  ai: require('ai') as AiSdk,
  google: require('@ai-sdk/google') as AiSdkGoogle,
  zod: require('zod') as Zod,
  genai: require('@google/genai') as GenAi,
}));
const skip = pinned.skip;

function sdks(): Sdks {
  return pinned.get();
}

let gw: TestGateway;

before(async () => {
  gw = await startTestGateway({ config: (url) => threeFormatConfig(url) });
});
after(async () => {
  await gw?.close();
});
beforeEach(() => {
  gw.upstream.requests.length = 0;
});

function weatherTool(): unknown {
  const { ai, zod } = sdks();
  return ai.tool({ description: 'The weather in a city', inputSchema: zod.z.object({ city: zod.z.string() }), execute: async ({ city }) => `sunny in ${city}` });
}

function weatherTrip(): void {
  gw.upstream.fallback = toolRoundTrip({ calls: [{ id: 'call_weather_1', name: 'weather', input: { city: 'Paris' } }] }, (result) => ({ text: `The tool says: ${result}` }));
}

/** The 4xx answers in the log: none is expected. */
function clientErrors(): unknown[] {
  return gw.logs.filter((line) => isRecord(line) && typeof line['status'] === 'number' && line['status'] >= 400 && line['status'] < 500);
}

for (const upstream of [{ format: 'chat', model: 'gpt-test' }, { format: 'messages', model: 'claude-test' }, { format: 'gemini', model: 'gemini-test' }] as const) {
  describe(`@ai-sdk/google through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    const google = () => sdks().google.createGoogleGenerativeAI({ apiKey: gw.key, baseURL: `${gw.url}/v1beta` });

    test('generateText gets the text', async () => {
      gw.upstream.fallback = answer({ text: `Hello from ${upstream.model}.` });
      const result = await sdks().ai.generateText({ model: google()(upstream.model), prompt: 'Say hello.' });
      assert.equal(result.text, `Hello from ${upstream.model}.`);
      assert.equal(gw.upstream.requests.length, 1);
    });

    test('streamText with a tool runs it over two steps and streams the answer that quotes it', async () => {
      weatherTrip();
      const { ai } = sdks();
      const stream = ai.streamText({ model: google()(upstream.model), prompt: 'Weather in Paris?', tools: { weather: weatherTool() }, stopWhen: ai.stepCountIs(3) });
      let text = '';
      for await (const piece of stream.textStream) text += piece;
      assert.equal(text, 'The tool says: sunny in Paris');
      assert.equal((await stream.steps).length, 2);
      assert.equal(gw.upstream.requests.length, 2);
      if (upstream.format === 'gemini') {
        // The AI SDK keeps Gemini's signature in its provider metadata and sends it back: passed through.
        assert.ok(JSON.stringify(gw.upstream.requests[1]?.body['contents']).includes(SCRIPTED_THOUGHT_SIGNATURE));
      }
      assert.deepEqual(clientErrors(), []);
    });
  });

  describe(`a @google/genai chat session through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('sendMessageStream calls a function, and the next message sends its result back in the history the SDK kept', async () => {
      weatherTrip();
      const ai = new (sdks().genai.GoogleGenAI)({ apiKey: gw.key, httpOptions: { baseUrl: gw.url } });
      const chat = ai.chats.create({ model: upstream.model, config: { tools: [{ functionDeclarations: [{ name: 'weather', description: 'The weather in a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] }] } });
      const calls: NonNullable<GenAiChunk['functionCalls']> = [];
      for await (const chunk of await chat.sendMessageStream({ message: 'Weather in Paris?' })) calls.push(...(chunk.functionCalls ?? []));
      assert.deepEqual(calls.map((call) => [call.name, call.args]), [['weather', { city: 'Paris' }]]);
      let text = '';
      const response = { functionResponse: { ...(calls[0]?.id === undefined ? {} : { id: calls[0].id }), name: 'weather', response: { output: 'sunny in Paris' } } };
      for await (const chunk of await chat.sendMessageStream({ message: [response] })) text += chunk.text ?? '';
      assert.equal(text, 'The tool says: sunny in Paris');
      // The SDK kept each streamed chunk as its own model turn: llmux merged them (its request went through).
      assert.ok(chat.getHistory().length > 4);
      assert.deepEqual(clientErrors(), []);
    });
  });
}

/** The README's js code block under `heading`. */
function readmeSnippet(heading: string): string {
  const block = blockUnder('README.md', heading, 'js');
  assert.ok(block !== undefined, `a js snippet under ${heading}`);
  return block;
}

/** Runs a module in the SDKs' folder (so its imports resolve there), with `LLMUX_KEY` set; its stdout. */
function runModule(source: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = join(sdks().folder, `readme-${randomBytes(6).toString('hex')}.mjs`);
  writeFileSync(file, source);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { env: { PATH: process.env['PATH'] ?? '', LLMUX_KEY: gw.key, NO_PROXY: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (piece: Buffer) => (stdout += piece.toString()));
    child.stderr.on('data', (piece: Buffer) => (stderr += piece.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      rmSync(file, { force: true });
      resolve({ code, stdout, stderr });
    });
  });
}

describe("the README's Gemini snippets, run as written", { skip, timeout: TIMEOUT_MS }, () => {
  for (const heading of ['### Google Gen AI SDK (`@google/genai`)', "### AI SDK's Google provider (`@ai-sdk/google`)"]) {
    test(`${heading.slice(4)} answers through llmux`, async () => {
      const snippet = readmeSnippet(heading);
      assert.ok(snippet.includes('http://127.0.0.1:8686'), 'the snippet names the default address');
      const run = await runModule(snippet.replaceAll('http://127.0.0.1:8686', gw.url));
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout.trim(), 'Hello', 'the echo model answers with the prompt');
    });
  }
});

describe('a @google/genai chat keeps each streamed chunk as its own turn', { skip, timeout: TIMEOUT_MS }, () => {
  test('and llmux merges those model turns into one for a translated upstream', async () => {
    gw.upstream.fallback = answer({ text: 'One two three four.' });
    const ai = new (sdks().genai.GoogleGenAI)({ apiKey: gw.key, httpOptions: { baseUrl: gw.url } });
    const chat = ai.chats.create({ model: 'gpt-test' });
    for await (const chunk of await chat.sendMessageStream({ message: 'Count.' })) void chunk;
    gw.upstream.fallback = answer({ text: 'Five.' });
    for await (const chunk of await chat.sendMessageStream({ message: 'And then?' })) void chunk;
    const messages = records(gw.upstream.requests.at(-1)?.body['messages']);
    assert.deepEqual(messages.map((message) => message['role']), ['user', 'assistant', 'user']);
    assert.equal(messages[1]?.['content'], 'One two three four.');
  });
});
