// One SDK call against llmux, run by the pinned Node 24 for test/clients/sdks-node24.test.ts:
//   node run.mjs SCENARIO MODEL      (LLMUX_URL: the gateway's address; LLMUX_KEY: an llmux key)
// The last line of stdout is one JSON object: what the SDK returned, and for the AI SDK's
// providers and LangChain the request bodies they sent. The test copies this file into a
// temporary folder whose node_modules links to the pinned install, so the bare imports below
// resolve there as in a user's project (in place, they would find the repository's own packages).
// Each scenario imports only the SDKs it needs: loading all of them takes most of a second.

const [scenario, model] = process.argv.slice(2);
const url = process.env.LLMUX_URL;
const key = process.env.LLMUX_KEY;
if (scenario === undefined || model === undefined || url === undefined || key === undefined) {
  throw new Error('usage: LLMUX_URL=… LLMUX_KEY=… node run.mjs SCENARIO MODEL');
}

/** The JSON request bodies the SDK sent, in order. */
const sent = [];

/** A fetch that keeps each request body it sends: the SDKs take one in their options. */
async function keepingFetch(input, init) {
  if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
  return fetch(input, init);
}

async function weatherTool() {
  const { tool } = await import('ai');
  const { z } = await import('zod');
  return tool({ description: 'The weather in a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `sunny in ${city}` });
}

/** The AI SDK provider of a scenario, pointed at llmux as its README shows. */
async function aiProvider(name) {
  if (name === 'openai') {
    const { createOpenAI } = await import('@ai-sdk/openai');
    return createOpenAI({ apiKey: key, baseURL: `${url}/v1`, fetch: keepingFetch });
  }
  if (name === 'anthropic') {
    const { createAnthropic } = await import('@ai-sdk/anthropic');
    return createAnthropic({ apiKey: key, baseURL: `${url}/v1`, fetch: keepingFetch });
  }
  const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
  return createGoogleGenerativeAI({ apiKey: key, baseURL: `${url}/v1beta`, fetch: keepingFetch });
}

async function generate(provider) {
  const { generateText } = await import('ai');
  const result = await generateText({ model: (await aiProvider(provider))(model), prompt: 'Say hello.', maxRetries: 0 });
  return { text: result.text };
}

async function streamWithTool(provider) {
  const { streamText, stepCountIs } = await import('ai');
  let failure;
  const stream = streamText({
    model: (await aiProvider(provider))(model),
    prompt: 'Weather in Paris?',
    tools: { weather: await weatherTool() },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    // streamText reports a failed request here, and its textStream just ends: keep it to throw.
    onError: ({ error }) => {
      failure = error;
    },
  });
  let text = '';
  for await (const piece of stream.textStream) text += piece;
  if (failure !== undefined) throw failure;
  return { text, steps: (await stream.steps).length };
}

/** The genai chat session of gemini-sdks.test.ts: a function call streamed, its result sent back. */
async function genaiChat() {
  const { GoogleGenAI } = await import('@google/genai');
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: url } });
  const declaration = { name: 'weather', description: 'The weather in a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
  const chat = ai.chats.create({ model, config: { tools: [{ functionDeclarations: [declaration] }] } });
  const calls = [];
  for await (const chunk of await chat.sendMessageStream({ message: 'Weather in Paris?' })) calls.push(...(chunk.functionCalls ?? []));
  const response = { functionResponse: { ...(calls[0]?.id === undefined ? {} : { id: calls[0].id }), name: 'weather', response: { output: 'sunny in Paris' } } };
  let text = '';
  for await (const chunk of await chat.sendMessageStream({ message: [response] })) text += chunk.text ?? '';
  return { calls: calls.map((call) => ({ name: call.name, args: call.args })), text, historyLength: chat.getHistory().length };
}

/** A genai chat of two text turns: the SDK keeps each streamed chunk of the first as its own turn. */
async function genaiTurns() {
  const { GoogleGenAI } = await import('@google/genai');
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: url } });
  const chat = ai.chats.create({ model });
  const texts = [];
  for (const message of ['Count.', 'And then?']) {
    let text = '';
    for await (const chunk of await chat.sendMessageStream({ message })) text += chunk.text ?? '';
    texts.push(text);
  }
  return { texts };
}

/** The text of LangChain message content: a string, or text blocks. */
function langChainText(content) {
  if (typeof content === 'string') return content;
  return content.map((block) => (typeof block.text === 'string' ? block.text : '')).join('');
}

async function langchain() {
  const { ChatOpenAI } = await import('@langchain/openai');
  const chat = new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${url}/v1`, fetch: keepingFetch }, useResponsesApi: true, maxRetries: 0 });
  const invoked = langChainText((await chat.invoke('Say hello.')).content);
  let streamed = '';
  for await (const chunk of await chat.stream('Say hello.')) streamed += langChainText(chunk.content);
  return { invoked, streamed };
}

const SCENARIOS = {
  'openai-generate': () => generate('openai'),
  'openai-stream-tool': () => streamWithTool('openai'),
  'anthropic-generate': () => generate('anthropic'),
  'anthropic-stream-tool': () => streamWithTool('anthropic'),
  'google-generate': () => generate('google'),
  'google-stream-tool': () => streamWithTool('google'),
  'genai-chat-tool': genaiChat,
  'genai-chat-turns': genaiTurns,
  langchain,
};

const run = SCENARIOS[scenario];
if (run === undefined) throw new Error(`unknown scenario ${scenario}; known: ${Object.keys(SCENARIOS).join(', ')}`);
const result = await run();
process.stdout.write(`\n${JSON.stringify({ ...result, sent, node: process.version })}\n`);
