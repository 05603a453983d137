/**
 * translation.md Streams point 6, as a rule over everything: for every recorded upstream stream
 * and every hand-made case, in both directions, the client's stream assembled the way its official
 * SDK assembles it agrees with the whole answer the same content gets, on text, reasoning, tool
 * calls (ids, names, inputs) and the stop reason.
 *
 * A recorded stream has no whole twin, so its whole upstream answer is derived from it (the upstream
 * stream assembled the same way) and run through the whole-answer translator.
 *
 * One kind of answer cannot agree and is left out: tool arguments from a chat upstream that are not
 * JSON. The stream passes argument fragments on as they come (Streams: no waiting for tool
 * arguments to complete), so the client sees them as sent; the whole answer can only give `{}`.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createSseParser } from '../../src/sse/parser.ts';
import { chatResponseToMessages, createChatToMessagesStream, createMessagesToChatStream, messagesResponseToChat } from '../../src/translate/index.ts';
import type { StreamTranslator } from '../../src/translate/index.ts';
import { FAILING_RECORDINGS, assembleChatStream, assembleMessagesStream, chatGist, messagesGist, withoutGeneratedIds } from '../helpers/assemble.ts';
import { FIXTURES } from '../helpers/fake-upstream.ts';

function run(bytes: Buffer, create: (write: (text: string) => void) => StreamTranslator): { output: string; failed: boolean } {
  let output = '';
  const translator = create((text) => {
    output += text;
  });
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  parser.feed(bytes);
  parser.end();
  translator.end();
  return { output, failed: translator.failed };
}

/** Chat upstream -> messages client: the streamed answer and the whole one, as gists. */
function chatUpstreamBothWays(bytes: Buffer): { streamed: unknown; whole: unknown } | undefined {
  const { output, failed } = run(bytes, (write) => createChatToMessagesStream({ write }));
  const upstreamWhole = assembleChatStream(bytes);
  if (failed || upstreamWhole === undefined) return undefined;
  const streamed = assembleMessagesStream(output);
  assert.ok(streamed !== undefined, 'the translated stream assembles');
  return {
    streamed: withoutGeneratedIds(messagesGist(streamed)),
    whole: withoutGeneratedIds(messagesGist(chatResponseToMessages(upstreamWhole) as unknown as Record<string, unknown>)),
  };
}

/** Messages upstream -> chat client: the streamed answer and the whole one, as gists. */
function messagesUpstreamBothWays(bytes: Buffer): { streamed: unknown; whole: unknown } | undefined {
  const { output, failed } = run(bytes, (write) => createMessagesToChatStream({ write, includeUsage: true }));
  const upstreamWhole = assembleMessagesStream(bytes);
  if (failed || upstreamWhole === undefined) return undefined;
  const streamed = assembleChatStream(output);
  assert.ok(streamed !== undefined, 'the translated stream assembles');
  return {
    streamed: withoutGeneratedIds(chatGist(streamed)),
    whole: withoutGeneratedIds(chatGist(messagesResponseToChat(upstreamWhole) as unknown as Record<string, unknown>)),
  };
}

function chatSse(...chunks: Array<Record<string, unknown> | string>): Buffer {
  return Buffer.from(chunks.map((chunk) => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`).join(''));
}

function delta(value: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'up-1', choices: [{ index: 0, delta: value, finish_reason: finishReason, ...extra }] };
}

function call(index: number, fields: { id?: string; name?: string; args?: string }): Record<string, unknown> {
  const fn: Record<string, unknown> = {};
  if (fields.name !== undefined) fn['name'] = fields.name;
  if (fields.args !== undefined) fn['arguments'] = fields.args;
  return { index, ...(fields.id === undefined ? {} : { id: fields.id, type: 'function' }), function: fn };
}

const CHAT_CASES: Record<string, Buffer> = {
  'text': chatSse(delta({ role: 'assistant', content: '' }), delta({ content: 'Hello' }), delta({ content: ' there' }), delta({}, 'stop'), '[DONE]'),
  'reasoning_content then text (DeepSeek)': chatSse(delta({ reasoning_content: 'think' }), delta({ reasoning_content: ' more' }), delta({ content: 'answer' }), delta({}, 'stop'), '[DONE]'),
  'reasoning then text (Groq, OpenRouter)': chatSse(delta({ reasoning: 'think' }), delta({ reasoning: ' more' }), delta({ content: 'answer' }), delta({}, 'stop'), '[DONE]'),
  'tool calls ending with finish_reason stop (Gemini)': chatSse(delta({ role: 'assistant', tool_calls: [call(0, { id: 'call_g', name: 'get', args: '{"a":1}' })] }), delta({}, 'stop'), '[DONE]'),
  'tool calls with no finish_reason at all': chatSse(delta({ tool_calls: [call(0, { id: 'call_n', name: 'get', args: '{"a":1}' })] }), '[DONE]'),
  'interleaved tool calls (vLLM)': chatSse(
    delta({ tool_calls: [call(0, { id: 'call_0', name: 'a', args: '' })] }),
    delta({ tool_calls: [call(1, { id: 'call_1', name: 'b', args: '{"y"' })] }),
    delta({ tool_calls: [call(0, { args: '{"x":' })] }),
    delta({ tool_calls: [call(1, { args: ':2}' })] }),
    delta({ tool_calls: [call(0, { args: '1}' })] }),
    delta({}, 'tool_calls'),
    '[DONE]',
  ),
  'text, then tool calls': chatSse(delta({ content: 'Let me look.' }), delta({ tool_calls: [call(0, { id: 'call_t', name: 'look', args: '{}' })] }), delta({}, 'tool_calls'), '[DONE]'),
  'text arriving while a tool call is open': chatSse(delta({ tool_calls: [call(0, { id: 'call_o', name: 'a', args: '{"q":' })] }), delta({ content: 'hm' }), delta({ tool_calls: [call(0, { args: '"z"}' })] }), delta({}, 'tool_calls'), '[DONE]'),
  'a refusal (OpenAI delta.refusal)': chatSse(delta({ role: 'assistant', content: null, refusal: '' }), delta({ refusal: 'I cannot help' }), delta({}, 'stop'), '[DONE]'),
  'content_filter': chatSse(delta({ content: 'partial' }), delta({}, 'content_filter'), '[DONE]'),
  'length': chatSse(delta({ content: 'cut' }), delta({}, 'length'), '[DONE]'),
  'a matched stop sequence (vLLM)': chatSse(delta({ content: 'a' }), delta({}, 'stop', { stop_reason: 'END' }), '[DONE]'),
  'a legacy function_call': chatSse(delta({ function_call: { name: 'lookup', arguments: '' } }), delta({ function_call: { arguments: '{"q":"x"}' } }), delta({}, 'function_call'), '[DONE]'),
  'an empty answer': chatSse(delta({ role: 'assistant', content: '' }), delta({}, 'stop'), '[DONE]'),
};

function messagesSse(...events: Array<Record<string, unknown>>): Buffer {
  return Buffer.from(events.map((event) => `event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
}

const START = { type: 'message_start', message: { id: 'msg_up', type: 'message', role: 'assistant', model: 'up-1', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } };
const STOP = { type: 'message_stop' };
const end = (stopReason: string, stopSequence: string | null = null): Record<string, unknown> => ({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: stopSequence }, usage: { output_tokens: 3 } });
const blockStart = (index: number, block: Record<string, unknown>): Record<string, unknown> => ({ type: 'content_block_start', index, content_block: block });
const blockDelta = (index: number, value: Record<string, unknown>): Record<string, unknown> => ({ type: 'content_block_delta', index, delta: value });
const blockStop = (index: number): Record<string, unknown> => ({ type: 'content_block_stop', index });

const MESSAGES_CASES: Record<string, Buffer> = {
  'text': messagesSse(START, blockStart(0, { type: 'text', text: '' }), blockDelta(0, { type: 'text_delta', text: 'Hi' }), blockStop(0), end('end_turn'), STOP),
  'thinking, text and two tools': messagesSse(
    START,
    blockStart(0, { type: 'thinking', thinking: '', signature: '' }), blockDelta(0, { type: 'thinking_delta', thinking: 'hmm' }), blockDelta(0, { type: 'signature_delta', signature: 'sig' }), blockStop(0),
    blockStart(1, { type: 'text', text: '' }), blockDelta(1, { type: 'text_delta', text: 'Checking.' }), blockStop(1),
    blockStart(2, { type: 'tool_use', id: 'toolu_a', name: 'a', input: {} }), blockDelta(2, { type: 'input_json_delta', partial_json: '{"x":' }), blockDelta(2, { type: 'input_json_delta', partial_json: '1}' }), blockStop(2),
    blockStart(3, { type: 'tool_use', id: 'toolu_b', name: 'b', input: {} }), blockDelta(3, { type: 'input_json_delta', partial_json: '' }), blockStop(3),
    end('tool_use'), STOP,
  ),
  'a refusal with no content': messagesSse(START, end('refusal'), STOP),
  'an empty answer': messagesSse(START, end('end_turn'), STOP),
  'max_tokens': messagesSse(START, blockStart(0, { type: 'text', text: '' }), blockDelta(0, { type: 'text_delta', text: 'cut' }), blockStop(0), end('max_tokens'), STOP),
  'a stop sequence': messagesSse(START, blockStart(0, { type: 'text', text: '' }), blockDelta(0, { type: 'text_delta', text: 'a' }), blockStop(0), end('stop_sequence', 'END'), STOP),
  'pause_turn': messagesSse(START, blockStart(0, { type: 'text', text: '' }), blockDelta(0, { type: 'text_delta', text: 'a' }), blockStop(0), end('pause_turn'), STOP),
};

describe('streamed and whole answers agree: chat upstream -> messages client', () => {
  for (const name of readdirSync(FIXTURES).filter((file) => /^(openai|deepseek|xai|groq|azure)-.*\.sse$/.test(file)).sort()) {
    it(`agrees on ${name}`, () => {
      const both = chatUpstreamBothWays(readFileSync(`${FIXTURES}${name}`));
      if (both === undefined) {
        assert.ok(FAILING_RECORDINGS.has(name), `${name} fails mid-answer but is not listed as a failing recording`);
        return;
      }
      assert.deepEqual(both.streamed, both.whole);
    });
  }
  for (const [name, bytes] of Object.entries(CHAT_CASES)) {
    it(`agrees on ${name}`, () => {
      const both = chatUpstreamBothWays(bytes);
      assert.ok(both !== undefined);
      assert.deepEqual(both.streamed, both.whole);
    });
  }
});

describe('streamed and whole answers agree: messages upstream -> chat client', () => {
  for (const name of readdirSync(FIXTURES).filter((file) => /^anthropic-.*\.sse$/.test(file)).sort()) {
    it(`agrees on ${name}`, () => {
      const both = messagesUpstreamBothWays(readFileSync(`${FIXTURES}${name}`));
      if (both === undefined) {
        assert.ok(FAILING_RECORDINGS.has(name), `${name} fails mid-answer but is not listed as a failing recording`);
        return;
      }
      assert.deepEqual(both.streamed, both.whole);
    });
  }
  for (const [name, bytes] of Object.entries(MESSAGES_CASES)) {
    it(`agrees on ${name}`, () => {
      const both = messagesUpstreamBothWays(bytes);
      assert.ok(both !== undefined);
      assert.deepEqual(both.streamed, both.whole);
    });
  }
});
