/**
 * The AI SDK's default `openai(model)` (the Responses API) and LangChain's
 * `ChatOpenAI({ useResponsesApi: true })` against llmux, as their users call them, with fake
 * upstreams of both native formats behind it: `generateText`, `streamText` with a tool over two
 * steps (the AI SDK's second step sends `item_reference`s to the first step's stored items), and
 * LangChain's invoke and stream.
 *
 * The SDKs are pinned in test/clients/sdks/ and installed on first use into the clients cache
 * (test/helpers/clients.ts), not into node_modules: together with zod they are about 80 MB, more
 * than the rest of the dev dependencies. So this file is in the slow suite (`npm run test:clients`)
 * and loads them through `require` from that folder, typed by the small interfaces below.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pinnedSdks } from '../helpers/clients.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { answer, toolRoundTrip } from '../helpers/scripted-answers.ts';
import { isRecord, records } from '../../src/common/json.ts';

const TIMEOUT_MS = 30_000;
const SIGNATURE = 'EqQBCgIYAhIM-signature-the-ai-sdk-step-two-must-replay';

interface AiSdk {
  generateText(options: Record<string, unknown>): Promise<{ text: string; steps: unknown[] }>;
  streamText(options: Record<string, unknown>): { textStream: AsyncIterable<string>; steps: Promise<unknown[]> };
  tool(definition: { description: string; inputSchema: unknown; execute(input: { city: string }): Promise<string> }): unknown;
  stepCountIs(count: number): unknown;
}
type OpenAIProvider = (model: string) => unknown;
interface AiSdkOpenAI { createOpenAI(options: { apiKey: string; baseURL: string; fetch?: typeof fetch }): OpenAIProvider }
interface Zod { z: { object(shape: Record<string, unknown>): unknown; string(): unknown } }
interface LangChainMessage { content: unknown }
interface LangChainChat {
  invoke(input: string): Promise<LangChainMessage>;
  stream(input: string): Promise<AsyncIterable<LangChainMessage>>;
}
interface LangChainOpenAI { ChatOpenAI: new (options: Record<string, unknown>) => LangChainChat }

interface Sdks { ai: AiSdk; aiOpenAI: AiSdkOpenAI; zod: Zod; langchain: LangChainOpenAI }

// Outside CI a machine without the registry skips; in CI a failed install fails.
const pinned = pinnedSdks((require): Sdks => ({
  ai: require('ai') as AiSdk,
  aiOpenAI: require('@ai-sdk/openai') as AiSdkOpenAI,
  zod: require('zod') as Zod,
  langchain: require('@langchain/openai') as LangChainOpenAI,
}));
const skip = pinned.skip;

function sdks(): Sdks {
  return pinned.get();
}

let gw: TestGateway;
let sent: Array<Record<string, unknown>>;

before(async () => {
  gw = await startTestGateway();
});
after(async () => {
  await gw.close();
});
beforeEach(() => {
  gw.upstream.requests.length = 0;
  sent = [];
});

/** The AI SDK's OpenAI provider on llmux, keeping each request body it sends. */
function aiProvider(): OpenAIProvider {
  return sdks().aiOpenAI.createOpenAI({
    apiKey: gw.key,
    baseURL: `${gw.url}/v1`,
    fetch: async (input, init) => {
      if (typeof init?.body === 'string') sent.push(JSON.parse(init.body) as Record<string, unknown>);
      return fetch(input, init);
    },
  });
}

function weatherTool(): unknown {
  const { ai, zod } = sdks();
  return ai.tool({ description: 'The weather in a city', inputSchema: zod.z.object({ city: zod.z.string() }), execute: async ({ city }) => `sunny in ${city}` });
}

/** The text of LangChain message content: a string, or text blocks. */
function langChainText(content: unknown): string {
  if (typeof content === 'string') return content;
  return records(content).map((block) => (typeof block['text'] === 'string' ? block['text'] : '')).join('');
}

for (const upstream of [{ format: 'chat', model: 'gpt-test' }, { format: 'messages', model: 'claude-test' }] as const) {
  describe(`the AI SDK's openai(model) through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('generateText gets the text, over POST /v1/responses', async () => {
      gw.upstream.fallback = answer({ text: `Hello from ${upstream.model}.` });
      const result = await sdks().ai.generateText({ model: aiProvider()(upstream.model), prompt: 'Say hello.' });
      assert.equal(result.text, `Hello from ${upstream.model}.`);
      assert.equal(sent.length, 1);
      assert.equal(sent[0]?.['model'], upstream.model);
      assert.ok(Array.isArray(sent[0]?.['input']), 'a Responses body');
    });

    test('streamText with a tool runs it and streams the answer that quotes it; step two refers to step one by item_reference', async () => {
      gw.upstream.fallback = toolRoundTrip(
        {
          ...(upstream.format === 'messages' ? { thinking: { text: 'I need the weather tool.', signature: SIGNATURE } } : {}),
          calls: [{ id: 'call_weather_1', name: 'weather', input: { city: 'Paris' } }],
        },
        (result) => ({ text: `The tool says: ${result}` }),
      );
      const { ai } = sdks();
      const stream = ai.streamText({ model: aiProvider()(upstream.model), prompt: 'Weather in Paris?', tools: { weather: weatherTool() }, stopWhen: ai.stepCountIs(3) });
      let text = '';
      for await (const piece of stream.textStream) text += piece;

      assert.equal(text, 'The tool says: sunny in Paris');
      assert.equal((await stream.steps).length, 2);
      assert.equal(gw.upstream.requests.length, 2);
      const referenced = records(sent[1]?.['input']).filter((item) => item['type'] === 'item_reference');
      if (upstream.format === 'messages') {
        // The reasoning item of step one, stored by llmux, comes back as the original signed thinking.
        assert.ok(referenced.length > 0, 'step two refers to the stored reasoning item');
        const assistant = records(gw.upstream.requests[1]?.body['messages']).find((message) => message['role'] === 'assistant');
        assert.deepEqual(records(assistant?.['content'])[0], { type: 'thinking', thinking: 'I need the weather tool.', signature: SIGNATURE });
      }
    });
  });

  describe(`LangChain ChatOpenAI({ useResponsesApi: true }) through llmux to a ${upstream.format} upstream`, { skip, timeout: TIMEOUT_MS }, () => {
    test('invoke and stream get the text', async () => {
      gw.upstream.fallback = answer({ text: `LangChain hello from ${upstream.model}.` });
      const chat = new (sdks().langchain.ChatOpenAI)({ model: upstream.model, apiKey: gw.key, configuration: { baseURL: `${gw.url}/v1` }, useResponsesApi: true, maxRetries: 0 });
      const invoked = await chat.invoke('Say hello.');
      assert.equal(langChainText(invoked.content), `LangChain hello from ${upstream.model}.`);
      let streamed = '';
      for await (const chunk of await chat.stream('Say hello.')) streamed += langChainText(chunk.content);
      assert.equal(streamed, `LangChain hello from ${upstream.model}.`);
      const paths = gw.logs.map((entry) => (isRecord(entry) ? entry['path'] : undefined)).filter((path) => path === '/v1/responses');
      assert.ok(paths.length >= 2, 'both went to /v1/responses');
    });
  });
}
