/**
 * Three-turn tool loops driven through llmux by the official SDKs, one per client format and way
 * of keeping history (llmux.md section 11): the fakes of ./fake-stateful.ts answer two parallel
 * calls, then one, then `done`; the client answers every call and sends its history back as a
 * client of that kind does.
 *
 * - `chat-whole`: the openai SDK's assistant message, kept as the SDK gave it (unknown fields too).
 * - `chat-standard`: only the standard fields (role, content, tool calls' id, type and function).
 * - `messages`: the Anthropic SDK with thinking on, the assistant content kept whole.
 * - `responses-stateless`: `store: false` with `include: ["reasoning.encrypted_content"]`, every
 *   output item sent back.
 * - `responses-previous`: `previous_response_id`, only the call outputs sent.
 * - `gemini`: the `@google/genai` SDK with thoughts asked for, every part of the model's answer
 *   kept (a stream's parts gathered into one content, as Gemini CLI keeps a streamed turn).
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import type { Content, GenerateContentConfig, Part } from '@google/genai';

export type LoopClient = 'chat-whole' | 'chat-standard' | 'messages' | 'responses-stateless' | 'responses-previous' | 'gemini';
export const LOOP_CLIENTS: readonly LoopClient[] = ['chat-whole', 'chat-standard', 'messages', 'responses-stateless', 'responses-previous', 'gemini'];

/** What one turn of a loop gave the client. */
export interface LoopTurn {
  calls: Array<{ id: string; name: string }>;
  text: string;
}

/** A conversation in one client format; each `turn` answers the calls of the one before. */
export interface Loop {
  turn(): Promise<LoopTurn>;
}

export interface LoopOptions {
  baseUrl: string;
  key: string;
  model: string;
  stream: boolean;
}

const PROMPT = 'Look things up, then say done.';
const CHAT_TOOLS: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', description: 'Looks a thing up.', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
const MESSAGES_TOOLS: Anthropic.Tool[] = [{ name: 'lookup', description: 'Looks a thing up.', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }];
const RESPONSES_TOOLS: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'lookup', description: 'Looks a thing up.', parameters: { type: 'object', properties: { q: { type: 'string' } } }, strict: false }];

function result(id: string): string {
  return `result of ${id}`;
}

function chatLoop(options: LoopOptions, standard: boolean): Loop {
  const client = new OpenAI({ apiKey: options.key, baseURL: `${options.baseUrl}/v1`, maxRetries: 0, timeout: 20_000 });
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You look things up.' }, { role: 'user', content: PROMPT }];
  return {
    async turn() {
      const params = { model: options.model, messages, tools: CHAT_TOOLS, reasoning_effort: 'low' as const };
      const completion = options.stream ? await client.chat.completions.stream(params).finalChatCompletion() : await client.chat.completions.create(params);
      const message = completion.choices[0]?.message;
      if (message === undefined) throw new Error('no choice');
      const calls = (message.tool_calls ?? []).flatMap((call) => (call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : []));
      if (standard) {
        const kept: OpenAI.Chat.ChatCompletionAssistantMessageParam = { role: 'assistant', content: message.content };
        if (calls.length > 0) kept.tool_calls = calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
        messages.push(kept);
      } else {
        messages.push(message as OpenAI.Chat.ChatCompletionAssistantMessageParam);
      }
      for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: result(call.id) });
      return { calls: calls.map(({ id, name }) => ({ id, name })), text: message.content ?? '' };
    },
  };
}

function messagesLoop(options: LoopOptions): Loop {
  const client = new Anthropic({ apiKey: options.key, baseURL: options.baseUrl, maxRetries: 0, timeout: 20_000 });
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: PROMPT }];
  return {
    async turn() {
      const params = { model: options.model, max_tokens: 4096, system: 'You look things up.', messages, tools: MESSAGES_TOOLS, thinking: { type: 'enabled' as const, budget_tokens: 1024 } };
      const message = options.stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
      messages.push({ role: 'assistant', content: message.content as Anthropic.ContentBlockParam[] });
      const calls = message.content.flatMap((block) => (block.type === 'tool_use' ? [{ id: block.id, name: block.name }] : []));
      if (calls.length > 0) messages.push({ role: 'user', content: calls.map((call) => ({ type: 'tool_result' as const, tool_use_id: call.id, content: result(call.id) })) });
      const text = message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
      return { calls, text };
    },
  };
}

function responsesLoop(options: LoopOptions, previous: boolean): Loop {
  const client = new OpenAI({ apiKey: options.key, baseURL: `${options.baseUrl}/v1`, maxRetries: 0, timeout: 20_000 });
  let input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: PROMPT }];
  let previousId: string | undefined;
  return {
    async turn() {
      const params = {
        model: options.model, instructions: 'You look things up.', input, tools: RESPONSES_TOOLS, reasoning: { effort: 'low' as const },
        ...(previous ? (previousId === undefined ? {} : { previous_response_id: previousId }) : { store: false, include: ['reasoning.encrypted_content' as const] }),
      };
      const response = options.stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
      const calls = response.output.flatMap((item) => (item.type === 'function_call' ? [{ id: item.call_id, name: item.name }] : []));
      const outputs: OpenAI.Responses.ResponseInputItem[] = calls.map((call) => ({ type: 'function_call_output', call_id: call.id, output: result(call.id) }));
      if (previous) {
        previousId = response.id;
        input = outputs;
      } else {
        input = [...input, ...(response.output as OpenAI.Responses.ResponseInputItem[]), ...outputs];
      }
      return { calls, text: response.output_text };
    },
  };
}

const GEMINI_CONFIG: GenerateContentConfig = {
  systemInstruction: 'You look things up.',
  tools: [{ functionDeclarations: [{ name: 'lookup', description: 'Looks a thing up.', parametersJsonSchema: { type: 'object', properties: { q: { type: 'string' } } } }] }],
  thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 },
};

function geminiLoop(options: LoopOptions): Loop {
  const ai = new GoogleGenAI({ apiKey: options.key, httpOptions: { baseUrl: options.baseUrl, timeout: 20_000 } });
  const contents: Content[] = [{ role: 'user', parts: [{ text: PROMPT }] }];
  return {
    async turn() {
      const parts: Part[] = [];
      const request = { model: options.model, contents, config: GEMINI_CONFIG };
      if (options.stream) {
        // A stream's last event has an empty text part: nothing to keep.
        for await (const chunk of await ai.models.generateContentStream(request)) parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []).filter((part) => part.text !== '' || part.thoughtSignature !== undefined));
      } else {
        parts.push(...((await ai.models.generateContent(request)).candidates?.[0]?.content?.parts ?? []));
      }
      contents.push({ role: 'model', parts });
      const calls = parts.flatMap((part) => (part.functionCall === undefined ? [] : [{ id: part.functionCall.id ?? '', name: part.functionCall.name ?? '' }]));
      if (calls.length > 0) {
        contents.push({ role: 'user', parts: calls.map((call) => ({ functionResponse: { ...(call.id === '' ? {} : { id: call.id }), name: call.name, response: { output: result(call.id) } } })) });
      }
      const text = parts.filter((part) => part.thought !== true && typeof part.text === 'string').map((part) => part.text).join('');
      return { calls, text };
    },
  };
}

/** A loop of `client` through llmux. */
export function toolLoop(client: LoopClient, options: LoopOptions): Loop {
  switch (client) {
    case 'chat-whole':
      return chatLoop(options, false);
    case 'chat-standard':
      return chatLoop(options, true);
    case 'messages':
      return messagesLoop(options);
    case 'responses-stateless':
      return responsesLoop(options, false);
    case 'responses-previous':
      return responsesLoop(options, true);
    case 'gemini':
      return geminiLoop(options);
  }
}

/** Runs the three turns; the calls of each and the final text. */
export async function runLoop(loop: Loop): Promise<LoopTurn[]> {
  const turns: LoopTurn[] = [];
  for (let i = 0; i < 3; i++) turns.push(await loop.turn());
  return turns;
}
