/**
 * Every recorded upstream answer through every translation pair, as one suite over a table (the way
 * Hono runs one case file over every router): each upstream format is a row (its decoder, its
 * fixture prefix, how its SDK assembles a stream into a whole answer), each client format a row
 * (its encoder, how its stream is checked and assembled, what two answers must agree on). A new
 * format (Gemini, Converse) joins by adding its row.
 *
 * For every recorded stream and every pair whose upstream format it is in:
 * - the translated stream is the same whatever way the upstream bytes are cut (every offset of a
 *   small recording; for a large one both ends and seeded random pieces, as the per-pair tests do);
 * - every event is well formed for the client format and the stream ends properly, or with the
 *   format's in-stream error when the upstream failed;
 * - assembled the way the client's SDK assembles it, it agrees with the whole-answer translation of
 *   the same content.
 * For every recorded whole answer: the translation is a well-formed answer of the client format,
 * and the same events written as a stream assemble to it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ProviderFormat, WireFormat } from '../../src/formats/wire.ts';
import type { ResponsesResponse } from '../../src/formats/responses.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import type { AnswerEncoder } from '../../src/translate/answer-events.ts';
import { createChatEncoder } from '../../src/translate/chat-encoder.ts';
import { createMessagesEncoder } from '../../src/translate/messages-encoder.ts';
import { createResponsesEncoder } from '../../src/translate/responses-encoder.ts';
import { createGeminiEncoder } from '../../src/translate/gemini-encoder.ts';
import { DECODERS, type Decoder, type StreamTranslator, translateStream, translateWhole } from '../../src/translate/index.ts';
import { FAILING_RECORDINGS, assembleChatStream, assembleConverseStream, assembleGeminiStream, assembleMessagesStream, chatGist, geminiGist, messagesGist, sseEvents, withoutGeneratedIds } from '../helpers/assemble.ts';
import { answerOptions, assembleResponsesStream, comparable } from '../helpers/responses-stream.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';
import { FIXTURES, GEMINI_FIXTURES } from '../helpers/fake-upstream.ts';
import { fileURLToPath } from 'node:url';

const CONVERSE_FIXTURES = fileURLToPath(new URL('../fixtures/converse/', import.meta.url));

type Json = Record<string, unknown>;

const NOW_MS = 1_700_000_000_000;
const ESTIMATE = 7;
/** Recordings up to this size are cut at every offset; larger ones at both ends and in random pieces. */
const WHOLE_FILE_SPLIT_BYTES = 10 * 1024;
/** Offsets cut near the ends of a large recording: fewer than the per-pair tests sweep, which run the full budget. */
const EDGE_SPLIT_BYTES = 256;

// ---------- client formats ----------

interface ClientFormat {
  name: WireFormat;
  /** The encoder, writing to `write`; without it, assembling the whole answer. */
  encoder(write?: (text: string) => void): AnswerEncoder<unknown>;
  /**
   * Asserts that `output` is a well-formed stream of the format that ends properly, or with the
   * format's in-stream error when `failed`; returns the answer it assembles to (undefined when failed).
   */
  assemble(output: string, failed: boolean): unknown;
  /** Asserts that a whole answer is well formed. */
  checkWhole(answer: unknown): void;
  /** What a streamed answer and the whole answer of the same content must agree on. */
  gist(answer: unknown): unknown;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

const MESSAGES_STOP_REASONS = new Set(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded']);

function assembleMessages(output: string, failed: boolean): unknown {
  assert.ok(output.endsWith('\n\n'), 'output ends with a blank line');
  const events = sseEvents(output).map((event) => ({ event: event.event, data: JSON.parse(event.data) as Json }));
  assert.ok(events.length > 0, 'something was written');
  for (const { event, data } of events) assert.equal(event, data['type'], 'event name matches data.type');
  const names = events.map((event) => event.event);
  if (failed) {
    assert.equal(names.at(-1), 'error', 'a failed stream ends with its error');
    assert.equal(names.filter((name) => name === 'error').length, 1, 'one error');
    assert.ok(!names.includes('message_stop'), 'no message_stop after an error');
  } else {
    assert.ok(!names.includes('error'), 'no error in a completed stream');
    assert.equal(names[0], 'message_start', 'message_start first');
    assert.deepEqual(names.slice(-2), ['message_delta', 'message_stop'], 'message_delta then message_stop, last');
    assert.equal(names.filter((name) => name === 'message_delta').length, 1, 'message_delta exactly once');
  }
  assert.ok(names.filter((name) => name === 'message_start').length <= 1, 'message_start at most once');
  let open: number | undefined;
  let next = 0;
  for (const { event, data } of events) {
    if (event === 'content_block_start') {
      assert.equal(open, undefined, 'at most one block open');
      assert.equal(data['index'], next, 'block indices start at 0 and are contiguous');
      open = next;
      next += 1;
    } else if (event === 'content_block_delta') {
      assert.equal(data['index'], open, 'deltas go to the open block');
    } else if (event === 'content_block_stop') {
      assert.equal(data['index'], open, 'stop closes the open block');
      open = undefined;
    } else if (event === 'message_delta') {
      assert.equal(open, undefined, 'every block is closed before message_delta');
      const delta = data['delta'] as Json;
      assert.ok(MESSAGES_STOP_REASONS.has(String(delta['stop_reason'])), `stop_reason ${String(delta['stop_reason'])} is one of the format's`);
      assert.ok(isCount((data['usage'] as Json)['output_tokens']), 'message_delta carries output_tokens');
    }
  }
  if (failed) return undefined;
  const assembled = assembleMessagesStream(output);
  assert.ok(assembled !== undefined, 'the stream assembles');
  return assembled;
}

function checkMessagesAnswer(answer: unknown): void {
  const message = answer as Json;
  assert.match(String(message['id']), /^msg_/);
  assert.equal(message['type'], 'message');
  assert.equal(message['role'], 'assistant');
  assert.equal(typeof message['model'], 'string');
  assert.ok(MESSAGES_STOP_REASONS.has(String(message['stop_reason'])));
  assert.ok(message['stop_sequence'] === null || typeof message['stop_sequence'] === 'string');
  for (const block of message['content'] as Json[]) {
    if (block['type'] === 'text') assert.equal(typeof block['text'], 'string');
    else if (block['type'] === 'thinking') assert.deepEqual([typeof block['thinking'], typeof block['signature']], ['string', 'string']);
    else if (block['type'] === 'redacted_thinking') assert.equal(typeof block['data'], 'string');
    else if (block['type'] === 'tool_use') assert.ok(typeof block['id'] === 'string' && typeof block['name'] === 'string' && typeof block['input'] === 'object' && block['input'] !== null);
    else if (block['type'] === 'server_tool_use') assert.ok(/^srvtoolu_/.test(String(block['id'])) && block['name'] === 'web_search' && typeof (block['input'] as Json)['query'] === 'string');
    else if (block['type'] === 'web_search_tool_result') assert.ok(typeof block['tool_use_id'] === 'string' && Array.isArray(block['content']));
    else assert.fail(`unexpected block ${String(block['type'])}`);
  }
  const usage = message['usage'] as Json;
  for (const key of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens']) assert.ok(isCount(usage[key]), `usage.${key}`);
}

const CHAT_FINISH_REASONS = new Set(['stop', 'length', 'tool_calls', 'content_filter']);

function assembleChat(output: string, failed: boolean): unknown {
  assert.ok(output.endsWith('\n\n'), 'output ends with a blank line');
  const events = sseEvents(output);
  assert.ok(events.length > 0, 'something was written');
  for (const event of events) assert.equal(event.event, undefined, 'chat chunks have no event name');
  const chunks = events.map((event) => (event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as Json)));
  if (failed) {
    const last = chunks.at(-1);
    assert.ok(last !== '[DONE]' && last !== undefined && typeof last['error'] === 'object', 'a failed stream ends with an error chunk');
    const error = (last as Json)['error'] as Json;
    assert.deepEqual([typeof error['message'], typeof error['type'], typeof error['code']], ['string', 'string', 'string']);
    assert.ok(!chunks.includes('[DONE]'), 'no [DONE] after an error');
    return undefined;
  }
  assert.equal(chunks.at(-1), '[DONE]', '[DONE] last');
  assert.equal(chunks.filter((chunk) => chunk === '[DONE]').length, 1, '[DONE] once');
  const data = chunks.slice(0, -1) as Json[];
  const first = data[0];
  assert.ok(first !== undefined, 'a chunk before [DONE]');
  assert.deepEqual((first['choices'] as Json[])[0]?.['delta'], { role: 'assistant', content: '' }, 'the first chunk names the role');
  let finishes = 0;
  for (const chunk of data) {
    assert.equal(chunk['object'], 'chat.completion.chunk');
    assert.deepEqual([chunk['id'], chunk['model'], chunk['created']], [first['id'], first['model'], first['created']], 'every chunk repeats the id, model and created');
    const choices = chunk['choices'] as Json[];
    if (choices.length === 0) {
      assert.equal(finishes, 1, 'the usage chunk comes after the finish chunk');
      const usage = chunk['usage'] as Json;
      assert.equal(usage['total_tokens'], Number(usage['prompt_tokens']) + Number(usage['completion_tokens']));
      continue;
    }
    const reason = choices[0]?.['finish_reason'];
    if (reason !== null) {
      assert.ok(CHAT_FINISH_REASONS.has(String(reason)), `finish_reason ${String(reason)} is one of the format's`);
      finishes += 1;
    }
  }
  assert.equal(finishes, 1, 'exactly one finish chunk');
  const assembled = assembleChatStream(output);
  assert.ok(assembled !== undefined, 'the stream assembles');
  for (const call of (((assembled['choices'] as Json[])[0]?.['message'] as Json)['tool_calls'] as Json[] | undefined) ?? []) {
    assert.match(String(call['id']), /./, 'every call has an id');
  }
  return assembled;
}

function checkChatAnswer(answer: unknown): void {
  const completion = answer as Json;
  assert.match(String(completion['id']), /^chatcmpl-/);
  assert.equal(completion['object'], 'chat.completion');
  assert.ok(isCount(completion['created']));
  const choices = completion['choices'] as Json[];
  assert.equal(choices.length, 1);
  const choice = choices[0] as Json;
  assert.equal(choice['index'], 0);
  assert.ok(CHAT_FINISH_REASONS.has(String(choice['finish_reason'])));
  const message = choice['message'] as Json;
  assert.equal(message['role'], 'assistant');
  assert.ok(message['content'] === null || typeof message['content'] === 'string');
  for (const call of (message['tool_calls'] as Json[] | undefined) ?? []) {
    const fn = call['function'] as Json;
    assert.equal(call['type'], 'function');
    assert.ok(typeof call['id'] === 'string' && typeof fn['name'] === 'string');
    JSON.parse(String(fn['arguments']));
  }
  const usage = completion['usage'] as Json;
  assert.equal(usage['total_tokens'], Number(usage['prompt_tokens']) + Number(usage['completion_tokens']));
}

function checkResponsesAnswer(answer: unknown): void {
  const response = answer as ResponsesResponse;
  assert.equal(response.object, 'response');
  assert.ok(response.status === 'completed' || response.status === 'incomplete', `status ${response.status}`);
  assert.equal(response.error, null);
  for (const item of response.output) {
    if (item.type === 'function_call') JSON.parse(item.arguments);
    if (item.type === 'message') for (const part of item.content) assert.ok(part.type === 'output_text' || part.type === 'refusal');
  }
  assert.ok(response.usage !== null && response.usage.total_tokens === response.usage.input_tokens + response.usage.output_tokens);
}

const GEMINI_FINISH_REASONS = new Set(['STOP', 'MAX_TOKENS', 'SAFETY', 'MALFORMED_FUNCTION_CALL']);

function checkGeminiResponse(response: Json, last: boolean): void {
  assert.equal(response['modelVersion'], 'llmux-model', 'every response names the llmux model');
  assert.equal(response['responseId'], 'resp-suite');
  const candidates = response['candidates'] as Json[];
  assert.equal(candidates.length, 1, 'one candidate');
  const candidate = candidates[0] as Json;
  assert.equal(candidate['index'], 0);
  const content = candidate['content'] as Json;
  assert.equal(content['role'], 'model');
  const parts = content['parts'] as Json[];
  assert.ok(parts.length > 0, 'every response has a part');
  for (const part of parts) {
    const kinds = ['text', 'functionCall'].filter((key) => part[key] !== undefined);
    assert.equal(kinds.length, 1, 'a part holds one kind of data');
    if (part['functionCall'] !== undefined) {
      const call = part['functionCall'] as Json;
      assert.ok(typeof call['name'] === 'string' && typeof call['id'] === 'string' && typeof call['args'] === 'object' && call['args'] !== null && !Array.isArray(call['args']));
    }
  }
  if (last) {
    assert.ok(GEMINI_FINISH_REASONS.has(String(candidate['finishReason'])), `finishReason ${String(candidate['finishReason'])} is one of the format's`);
    const usage = response['usageMetadata'] as Json;
    for (const key of ['promptTokenCount', 'candidatesTokenCount', 'totalTokenCount']) assert.ok(isCount(usage[key]), `usageMetadata.${key}`);
    assert.equal(usage['totalTokenCount'], Number(usage['promptTokenCount']) + Number(usage['candidatesTokenCount']) + Number(usage['thoughtsTokenCount'] ?? 0));
  } else {
    assert.equal(candidate['finishReason'], undefined, 'only the last response says why it stopped');
    assert.equal(response['usageMetadata'], undefined, 'only the last response carries usage');
  }
}

function assembleGemini(output: string, failed: boolean): unknown {
  assert.ok(output.endsWith('\n\n'), 'output ends with a blank line');
  const events = sseEvents(output);
  assert.ok(events.length > 0, 'something was written');
  const responses = events.map((event) => {
    assert.equal(event.event, undefined, 'Gemini events have no name');
    return JSON.parse(event.data) as Json;
  });
  if (failed) {
    const error = responses.at(-1)?.['error'] as Json | undefined;
    assert.ok(error !== undefined, 'a failed stream ends with its error');
    assert.deepEqual([typeof error['code'], typeof error['message'], typeof error['status']], ['number', 'string', 'string']);
    assert.equal(responses.filter((response) => response['error'] !== undefined).length, 1, 'one error');
    return undefined;
  }
  responses.forEach((response, k) => checkGeminiResponse(response, k === responses.length - 1));
  const assembled = assembleGeminiStream(output);
  assert.ok(assembled !== undefined, 'the stream assembles');
  return assembled;
}

const CLIENTS: readonly ClientFormat[] = [
  {
    name: 'messages',
    encoder: (write) => createMessagesEncoder({ ...(write === undefined ? {} : { write }), messageId: 'msg_suite', model: 'llmux-model', estimatedInputTokens: ESTIMATE }),
    assemble: assembleMessages,
    checkWhole: checkMessagesAnswer,
    gist: (answer) => withoutGeneratedIds(messagesGist(answer as Json)),
  },
  {
    name: 'chat',
    encoder: (write) => createChatEncoder({ ...(write === undefined ? {} : { write }), includeUsage: true, completionId: 'chatcmpl-suite', now: () => NOW_MS, model: 'llmux-model' }),
    assemble: assembleChat,
    checkWhole: checkChatAnswer,
    gist: (answer) => withoutGeneratedIds(chatGist(answer as Json)),
  },
  {
    name: 'responses',
    // No input estimate: a recorded stream without usage assembles to a whole answer with empty usage.
    encoder: (write) => createResponsesEncoder({ ...answerOptions(), ...(write === undefined ? {} : { write }) }),
    assemble(output, failed) {
      const { final } = assembleResponsesStream(output);
      assert.equal(final.status === 'failed', failed, 'the stream fails exactly when the translation did');
      return failed ? undefined : final;
    },
    checkWhole: checkResponsesAnswer,
    gist: (answer) => comparable(answer as ResponsesResponse),
  },
  {
    name: 'gemini',
    encoder: (write) => createGeminiEncoder({ ...(write === undefined ? {} : { write }), model: 'llmux-model', responseId: 'resp-suite', includeThoughts: true, estimatedInputTokens: ESTIMATE }),
    assemble: assembleGemini,
    checkWhole: (answer) => checkGeminiResponse(answer as Json, true),
    // A call the output cap cut short (assembled upstream as `{incomplete}`) has no arguments a Gemini part can hold: `{}`.
    gist: (answer) => {
      const gist = withoutGeneratedIds(geminiGist(answer as Json));
      return { ...gist, tools: gist.tools.map((tool) => (isRecord(tool.input) && Object.keys(tool.input).join() === 'incomplete' ? { ...tool, input: {} } : tool)) };
    },
  },
];

// ---------- upstream formats ----------

interface UpstreamFormat {
  name: ProviderFormat;
  /** Where its recorded (or hand-made) answers are. */
  dir: string;
  /** Its answers in `dir`: `.sse` streams and `.json` whole answers. */
  fixtures: RegExp;
  /** How many streams it has at least. */
  minStreams: number;
  decoder: Decoder;
  /** The whole answer a recorded stream stands for, assembled as the provider's SDK would. */
  wholeOf(stream: Buffer): unknown;
}

const UPSTREAMS: readonly UpstreamFormat[] = [
  { name: 'chat', dir: FIXTURES, fixtures: /^(openai|deepseek|xai|groq|azure)-/, minStreams: 10, decoder: DECODERS.chat, wholeOf: assembleChatStream },
  { name: 'messages', dir: FIXTURES, fixtures: /^anthropic-/, minStreams: 10, decoder: DECODERS.messages, wholeOf: assembleMessagesStream },
  // Hand-made after Google's API reference and recordings (test/fixtures/gemini/README.md); its request bodies and error bodies are not answers.
  { name: 'gemini', dir: GEMINI_FIXTURES, fixtures: /^(?!request-|error-)/, minStreams: 4, decoder: DECODERS.gemini, wholeOf: assembleGeminiStream },
  // Hand-made to the Bedrock Runtime API reference (test/fixtures/converse/README.md).
  { name: 'converse', dir: CONVERSE_FIXTURES, fixtures: /^converse-/, minStreams: 7, decoder: DECODERS.converse, wholeOf: assembleConverseStream },
];

// ---------- running a pair ----------

interface Run { output: string; translator: StreamTranslator }

function translateBytes(client: ClientFormat, upstream: UpstreamFormat, pieces: Uint8Array[]): Run {
  let output = '';
  const translator = translateStream(client.encoder((text) => (output += text)), upstream.decoder, {}, ESTIMATE);
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  translator.end();
  return { output, translator };
}

function fixtureNames(upstream: UpstreamFormat, extension: string): string[] {
  return readdirSync(upstream.dir).filter((name) => upstream.fixtures.test(name) && name.endsWith(extension)).sort();
}

for (const upstream of UPSTREAMS) {
  for (const client of CLIENTS) {
    if (client.name === upstream.name) continue;
    describe(`${upstream.name} upstream -> ${client.name} client: every recorded stream`, () => {
      const names = fixtureNames(upstream, '.sse');
      it('has recordings to run', () => assert.ok(names.length >= upstream.minStreams));
      for (const name of names) {
        const bytes = readFileSync(`${upstream.dir}${name}`);
        const whole = translateBytes(client, upstream, [bytes]);

        it(`writes ${name} as a well-formed stream that ends properly or with the format's error`, () => {
          assert.equal(whole.translator.finished, true);
          client.assemble(whole.output, whole.translator.failed);
        });

        it(`translates ${name} the same however its bytes are cut`, () => {
          const edge = bytes.length <= WHOLE_FILE_SPLIT_BYTES ? bytes.length : EDGE_SPLIT_BYTES;
          for (const { offset, pieces } of everySplit(bytes)) {
            if (offset > edge && offset < bytes.length - edge) continue;
            const { output } = translateBytes(client, upstream, pieces);
            if (output !== whole.output) assert.equal(output, whole.output, `split at byte ${offset}`);
          }
          for (const seed of [41, 42, 43]) assert.equal(translateBytes(client, upstream, randomPieces(bytes, seed)).output, whole.output, `seed ${seed}`);
        });

        it(`assembles ${name} to the whole-answer translation of the same content`, () => {
          if (whole.translator.failed) {
            assert.ok(FAILING_RECORDINGS.has(name), `${name} fails mid-answer but is not listed as a failing recording`);
            return;
          }
          const streamed = client.assemble(whole.output, false);
          const answer = translateWhole(client.encoder(), upstream.decoder, upstream.wholeOf(bytes));
          client.checkWhole(answer);
          assert.deepEqual(client.gist(streamed), client.gist(answer));
        });
      }
    });

    describe(`${upstream.name} upstream -> ${client.name} client: every recorded whole answer`, () => {
      for (const name of fixtureNames(upstream, '.json')) {
        const answer = JSON.parse(readFileSync(`${upstream.dir}${name}`, 'utf8')) as Json;
        // Error bodies are answered before any translation (src/providers/upstream-errors.ts).
        if (answer['error'] !== undefined || answer['type'] === 'error') continue;
        it(`translates ${name} to a well-formed answer, and its events written as a stream assemble to it`, () => {
          const translated = translateWhole(client.encoder(), upstream.decoder, answer);
          client.checkWhole(translated);
          let output = '';
          const encoder = client.encoder((text) => (output += text));
          upstream.decoder.whole(answer, encoder);
          assert.deepEqual(client.gist(client.assemble(output, false)), client.gist(translated));
        });
      }
    });
  }
}

// ---------- the legacy function_call ----------

function chatStream(...chunks: Array<Json | string>): Buffer {
  return Buffer.from(chunks.map((chunk) => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`).join(''));
}

function delta(value: Json, finishReason: string | null = null): Json {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'up-1', choices: [{ index: 0, delta: value, finish_reason: finishReason }] };
}

const LEGACY_STREAM = chatStream(
  delta({ role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '' } }),
  delta({ function_call: { arguments: '{"q":' } }),
  delta({ function_call: { arguments: '"x"}' } }),
  delta({}, 'function_call'),
  '[DONE]',
);
const LEGACY_ANSWER: Json = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'up-1',
  choices: [{ index: 0, message: { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{"q":"x"}' } }, finish_reason: 'function_call' }],
};

/** The tool calls of a client answer, as name and parsed arguments. */
const CALLS_OF: { readonly [C in WireFormat]: (answer: unknown) => Array<[string, unknown]> } = {
  messages: (answer) => ((answer as Json)['content'] as Json[]).filter((block) => block['type'] === 'tool_use').map((block) => [String(block['name']), block['input']]),
  chat: (answer) => {
    const message = ((answer as Json)['choices'] as Json[])[0]?.['message'] as Json;
    return ((message['tool_calls'] as Json[] | undefined) ?? []).map((call) => {
      const fn = call['function'] as Json;
      return [String(fn['name']), JSON.parse(String(fn['arguments']))];
    });
  },
  responses: (answer) => (answer as ResponsesResponse).output.flatMap((item): Array<[string, unknown]> => (item.type === 'function_call' ? [[item.name, JSON.parse(item.arguments)]] : [])),
  gemini: (answer) => geminiGist(answer as Json).tools.map((tool): [string, unknown] => [tool.name, tool.input]),
};

describe('a legacy function_call from a chat upstream', () => {
  for (const client of CLIENTS) {
    it(`reaches a ${client.name} client as a tool call, streamed`, () => {
      const run = translateBytes(client, UPSTREAMS[0] as UpstreamFormat, [LEGACY_STREAM]);
      assert.equal(run.translator.failed, false);
      const assembled = client.assemble(run.output, false);
      assert.deepEqual(CALLS_OF[client.name](assembled), [['lookup', { q: 'x' }]]);
      if (client.name === 'responses') assert.equal((assembled as ResponsesResponse).status, 'completed');
    });

    it(`reaches a ${client.name} client as a tool call, whole`, () => {
      const answer = translateWhole(client.encoder(), DECODERS.chat, LEGACY_ANSWER);
      client.checkWhole(answer);
      assert.deepEqual(CALLS_OF[client.name](answer), [['lookup', { q: 'x' }]]);
    });
  }
});
