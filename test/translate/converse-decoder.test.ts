/**
 * The Converse decoder (src/translate/converse-decoder.ts): how it reads ConverseStream events and
 * whole Converse answers into the neutral answer events, over a recording sink; and every hand-made
 * recording of test/fixtures/converse/ translated for each client format, checked against its
 * golden output (test/translate/golden/converse-to-*), whole and at every byte offset.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createConverseStreamDecoder, decodeConverseAnswer } from '../../src/translate/converse-decoder.ts';
import { DECODERS, translateStream } from '../../src/translate/index.ts';
import type { AnswerEncoder } from '../../src/translate/answer-events.ts';
import { createChatEncoder } from '../../src/translate/chat-encoder.ts';
import { createMessagesEncoder } from '../../src/translate/messages-encoder.ts';
import { createResponsesEncoder } from '../../src/translate/responses-encoder.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import { decodeStream, recordingSink } from '../helpers/answer-events.ts';
import { answerOptions } from '../helpers/responses-stream.ts';
import { everySplit } from '../helpers/split.ts';

type Json = Record<string, unknown>;

const FIXTURES = new URL('../fixtures/converse/', import.meta.url);
const UPDATE_GOLDEN = process.env['UPDATE_GOLDEN'] === '1';

function sse(...events: Array<[string, Json]>): string {
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');
}

function decode(...events: Array<[string, Json]>): unknown[] {
  const warnings: string[] = [];
  const told = decodeStream((sink) => createConverseStreamDecoder(sink, { onWarning: (message) => warnings.push(message) }), sse(...events));
  return warnings.length === 0 ? told : [...told, ['warnings', warnings]];
}

const START: [string, Json] = ['messageStart', { role: 'assistant' }];
const text = (index: number, value: string): [string, Json] => ['contentBlockDelta', { contentBlockIndex: index, delta: { text: value } }];
const stop = (index: number): [string, Json] => ['contentBlockStop', { contentBlockIndex: index }];
const toolStart = (index: number, id: string, name: string): [string, Json] => ['contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: id, name } } }];
const toolInput = (index: number, input: string): [string, Json] => ['contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input } } }];
const thought = (index: number, delta: Json): [string, Json] => ['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: delta } }];
const messageStop = (reason: string): [string, Json] => ['messageStop', { stopReason: reason }];
const metadata = (usage: Json = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }): [string, Json] => ['metadata', { usage, metrics: { latencyMs: 100 } }];
const USAGE = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 };

describe('createConverseStreamDecoder', () => {
  it('tells text deltas, the stop, then the usage metadata brings, then the end', () => {
    assert.deepEqual(decode(START, text(0, 'Hel'), text(0, 'lo'), stop(0), messageStop('end_turn'), metadata()), [
      ['start'],
      ['text', 'Hel'],
      ['text', 'lo'],
      ['stop', { reason: 'end_turn' }],
      ['usage', USAGE],
      ['end'],
    ]);
  });

  it('tells a tool use block as a call whose input strings are its arguments, ended at its block stop', () => {
    assert.deepEqual(decode(START, toolStart(0, 'tooluse_1', 'get_weather'), toolInput(0, ''), toolInput(0, '{"city":'), toolInput(0, '"Oslo"}'), stop(0), messageStop('tool_use'), metadata()).slice(1, -2), [
      ['callStart', { id: 'tooluse_1', name: 'get_weather' }],
      ['callArguments', '{"city":'],
      ['callArguments', '"Oslo"}'],
      ['callEnd'],
      ['stop', { reason: 'tool_use' }],
    ]);
  });

  it('ends reasoning with its signature as Anthropic thinking state, and tells redacted content as a reasoning item of state only', () => {
    assert.deepEqual(decode(START, thought(0, { text: 'hm' }), thought(0, { signature: 'c2' }), thought(0, { signature: 'ln' }), stop(0), thought(1, { redactedContent: 'b3BhcXVl' }), stop(1), text(2, 'ok'), messageStop('end_turn'), metadata()).slice(1, -3), [
      ['reasoning', 'hm'],
      ['reasoningEnd', { kind: 'thinking-signature', signature: 'c2ln' }],
      ['reasoningEnd', { kind: 'redacted-thinking', data: 'b3BhcXVl' }],
      ['text', 'ok'],
    ]);
  });

  it('ends unsigned reasoning (DeepSeek, gpt-oss) with no state, and before content of another block', () => {
    assert.deepEqual(decode(START, thought(0, { text: 'think' }), text(1, 'answer'), messageStop('end_turn'), metadata()).slice(1, -3), [
      ['reasoning', 'think'],
      ['reasoningEnd'],
      ['text', 'answer'],
    ]);
  });

  it('reads usage as Bedrock reports it: inputTokens is the uncached input, cache reads and writes apart, nothing subtracted', () => {
    const events = decode(START, text(0, 'x'), messageStop('end_turn'), metadata({ inputTokens: 14, outputTokens: 96, totalTokens: 3182, cacheReadInputTokens: 2048, cacheWriteInputTokens: 1024 }));
    assert.deepEqual(events.find((event) => (event as unknown[])[0] === 'usage'), ['usage', { inputTokens: 14, outputTokens: 96, cacheReadTokens: 2048, cacheCreationTokens: 1024, reasoningTokens: 0 }]);
  });

  it('maps each stop reason to the neutral one', () => {
    const cases: Array<[string, Json]> = [
      ['end_turn', { reason: 'end_turn' }],
      ['tool_use', { reason: 'tool_use' }],
      ['max_tokens', { reason: 'max_tokens' }],
      ['stop_sequence', { reason: 'stop_sequence' }],
      ['guardrail_intervened', { reason: 'content_filter' }],
      ['content_filtered', { reason: 'content_filter' }],
      ['model_context_window_exceeded', { reason: 'context_window_exceeded' }],
      ['malformed_tool_use', { reason: 'malformed_tool_call' }],
      ['malformed_model_output', { reason: 'end_turn' }],
      ['a_reason_from_the_future', { reason: 'end_turn' }],
    ];
    for (const [reason, neutral] of cases) {
      assert.deepEqual(decode(START, messageStop(reason), metadata()).find((event) => (event as unknown[])[0] === 'stop'), ['stop', neutral], reason);
    }
  });

  it('closes a call the output cap cut before the stop', () => {
    assert.deepEqual(decode(START, toolStart(0, 'tooluse_1', 'f'), toolInput(0, '{"a":'), messageStop('max_tokens'), metadata()).slice(1, -2), [
      ['callStart', { id: 'tooluse_1', name: 'f' }],
      ['callArguments', '{"a":'],
      ['callEnd'],
      ['stop', { reason: 'max_tokens' }],
    ]);
  });

  it('drops tool input for a block that is not the open call, with a warning', () => {
    const events = decode(START, toolInput(3, '{"a":1}'), messageStop('end_turn'), metadata());
    assert.deepEqual(events.at(-1), ['warnings', ['upstream sent tool input for a block that is not the open tool call; dropped']]);
    assert.ok(!events.some((event) => (event as unknown[])[0] === 'callArguments'));
  });

  it('fails with the exception the Bedrock platform wrote in the stream, with its type', () => {
    const error: [string, Json] = ['error', { type: 'error', error: { type: 'rate_limit_error', message: 'Amazon Bedrock ThrottlingException: slow down' } }];
    assert.deepEqual(decode(START, text(0, 'a'), error, text(0, 'ignored')).slice(-1), [['fail', 'Amazon Bedrock ThrottlingException: slow down', 'rate_limit_error']]);
  });

  it('fails with an exception event as Converse names it (from a gateway in front of Bedrock that speaks SSE)', () => {
    assert.deepEqual(decode(START, ['serviceUnavailableException', { message: 'busy' }]).slice(-1), [['fail', 'Amazon Bedrock serviceUnavailableException: busy', 'overloaded_error']]);
    assert.deepEqual(decode(START, ['modelStreamErrorException', { message: 'oops', originalStatusCode: 500 }]).slice(-1), [['fail', 'Amazon Bedrock modelStreamErrorException: oops', 'api_error']]);
  });

  it('ends without usage when the body ends after messageStop without metadata, and fails when it ends before messageStop', () => {
    assert.deepEqual(decode(START, text(0, 'a'), messageStop('end_turn')).slice(-2), [['stop', { reason: 'end_turn' }], ['end']]);
    assert.deepEqual(decode(START, text(0, 'a')).slice(-1), [['fail', 'upstream stream ended before the answer was complete']]);
  });

  it('fails on data that is not a JSON object, and reads nothing after the end', () => {
    const sink = recordingSink();
    const decoder = createConverseStreamDecoder(sink);
    decoder.push({ event: 'messageStart', data: '{"role":"assistant"}' });
    decoder.push({ event: 'contentBlockDelta', data: '[1]' });
    decoder.push({ event: 'contentBlockDelta', data: '{"contentBlockIndex":0,"delta":{"text":"late"}}' });
    assert.deepEqual(sink.events, [['start'], ['fail', 'upstream stream event is not a JSON object; the answer is incomplete']]);
    assert.equal(decoder.reported(), undefined);
  });

  it('reports the usage it has read', () => {
    const sink = recordingSink();
    const decoder = createConverseStreamDecoder(sink);
    const parser = createSseParser({ onEvent: (event) => decoder.push(event) });
    parser.feed(Buffer.from(sse(START, messageStop('end_turn'), metadata())));
    assert.deepEqual(decoder.reported(), USAGE);
  });
});

describe('decodeConverseAnswer', () => {
  it('tells a whole answer: reasoning, redacted reasoning, text, a call, usage, the stop, the end', () => {
    const sink = recordingSink();
    decodeConverseAnswer({
      output: { message: { role: 'assistant', content: [
        { reasoningContent: { reasoningText: { text: 'hm', signature: 'sig' } } },
        { reasoningContent: { redactedContent: 'b3BhcXVl' } },
        { text: 'Hi' },
        { toolUse: { toolUseId: 'tooluse_1', name: 'f', input: { a: 1 } } },
      ] } },
      stopReason: 'tool_use',
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      metrics: { latencyMs: 10 },
    }, sink);
    assert.deepEqual(sink.events, [
      ['start'],
      ['reasoning', 'hm'],
      ['reasoningEnd', { kind: 'thinking-signature', signature: 'sig' }],
      ['reasoningEnd', { kind: 'redacted-thinking', data: 'b3BhcXVl' }],
      ['text', 'Hi'],
      ['callStart', { id: 'tooluse_1', name: 'f' }],
      ['callArguments', '{"a":1}'],
      ['callEnd'],
      ['usage', USAGE],
      ['stop', { reason: 'tool_use' }],
      ['end'],
    ]);
  });

  it('reads anything leniently: no output, no usage, odd blocks', () => {
    const sink = recordingSink();
    decodeConverseAnswer({ output: { message: { content: [{ image: {} }, 'x', { toolUse: { name: 'g', input: [1] } }] } } }, sink);
    assert.deepEqual(sink.events, [['start'], ['callStart', { id: undefined, name: 'g' }], ['callArguments', '{}'], ['callEnd'], ['stop', { reason: 'end_turn' }], ['end']]);
    const empty = recordingSink();
    decodeConverseAnswer(null, empty);
    assert.deepEqual(empty.events, [['start'], ['stop', { reason: 'end_turn' }], ['end']]);
  });

  it('gives a whole answer\'s usage to the relays through its row in DECODERS', () => {
    assert.deepEqual(DECODERS.converse.usage({ usage: { inputTokens: 3, outputTokens: 2, cacheReadInputTokens: 1 } }), { inputTokens: 3, outputTokens: 2, cacheReadTokens: 1, cacheCreationTokens: 0 });
    assert.deepEqual(DECODERS.converse.usage({}), { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 });
  });
});

// ---------- every recording, for every client format, against its golden output ----------

const CLIENTS: ReadonlyArray<{ name: string; encoder(write: (text: string) => void): AnswerEncoder<unknown> }> = [
  { name: 'messages', encoder: (write) => createMessagesEncoder({ write, messageId: 'msg_test', model: 'llmux-model', estimatedInputTokens: 7 }) },
  { name: 'chat', encoder: (write) => createChatEncoder({ write, includeUsage: true, completionId: 'chatcmpl-test', now: () => 1_700_000_000_000, model: 'llmux-model' }) },
  { name: 'responses', encoder: (write) => createResponsesEncoder({ ...answerOptions(), write }) },
];

function translated(client: (typeof CLIENTS)[number], pieces: Uint8Array[]): string {
  let output = '';
  const translator = translateStream(client.encoder((text) => (output += text)), DECODERS.converse, {}, 7);
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  translator.end();
  assert.equal(translator.finished, true);
  return output;
}

const names = readdirSync(FIXTURES).filter((name) => name.endsWith('.sse')).sort();

for (const client of CLIENTS) {
  describe(`every Converse recording for a ${client.name} client`, () => {
    const golden = new URL(`./golden/converse-to-${client.name}/`, import.meta.url);
    if (UPDATE_GOLDEN) mkdirSync(golden, { recursive: true });

    it('has a golden output for every recording and no other', () => {
      assert.ok(names.length >= 7);
      if (!UPDATE_GOLDEN) assert.deepEqual(readdirSync(golden).sort(), names);
    });

    for (const name of names) {
      const bytes = readFileSync(new URL(name, FIXTURES));
      const whole = translated(client, [bytes]);

      it(`translates ${name} to its golden output`, () => {
        const file = new URL(name, golden);
        if (UPDATE_GOLDEN) writeFileSync(file, whole);
        assert.equal(whole, readFileSync(file, 'utf8'));
      });

      it(`translates ${name} the same when split at every byte offset`, () => {
        for (const { offset, pieces } of everySplit(bytes)) {
          const output = translated(client, pieces);
          if (output !== whole) assert.equal(output, whole, `split at byte ${offset}`);
        }
      });
    }
  });
}
