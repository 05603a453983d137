import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMessagesStreamDecoder, decodeMessagesAnswer } from '../../src/translate/messages-decoder.ts';
import { decodeStream, recordingSink } from '../helpers/answer-events.ts';

type Json = Record<string, unknown>;

function sse(...events: Json[]): string {
  return events.map((event) => `event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`).join('');
}

function decode(...events: Json[]): unknown[] {
  const warnings: string[] = [];
  const told = decodeStream((sink) => createMessagesStreamDecoder(sink, { onWarning: (message) => warnings.push(message) }), sse(...events));
  return warnings.length === 0 ? told : [...told, ['warnings', warnings]];
}

const start = (usage: Json = { input_tokens: 10, output_tokens: 1 }): Json => ({ type: 'message_start', message: { id: 'msg_1', model: 'claude-up', content: [], usage } });
const blockStart = (index: number, block: Json): Json => ({ type: 'content_block_start', index, content_block: block });
const blockDelta = (index: number, delta: Json): Json => ({ type: 'content_block_delta', index, delta });
const blockStop = (index: number): Json => ({ type: 'content_block_stop', index });
const messageDelta = (delta: Json, usage: Json = { output_tokens: 5 }): Json => ({ type: 'message_delta', delta, usage });
const STOP: Json = { type: 'message_stop' };

describe('createMessagesStreamDecoder', () => {
  it('ends a thinking block with its signature, and a redacted block as a reasoning item of state only', () => {
    assert.deepEqual(
      decode(
        start(),
        blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
        blockDelta(0, { type: 'thinking_delta', thinking: 'hm' }),
        blockDelta(0, { type: 'signature_delta', signature: 'c2' }),
        blockDelta(0, { type: 'signature_delta', signature: 'ln' }),
        blockStop(0),
        blockStart(1, { type: 'redacted_thinking', data: 'opaque' }),
        blockStop(1),
        messageDelta({ stop_reason: 'end_turn' }),
        STOP,
      ).slice(2, -3),
      [
        ['reasoning', 'hm'],
        ['reasoningEnd', { kind: 'thinking-signature', signature: 'c2ln' }],
        ['reasoningEnd', { kind: 'redacted-thinking', data: 'opaque' }],
      ],
    );
  });

  it('tells a tool_use block as a call whose input fragments are its arguments, ended at its block stop', () => {
    assert.deepEqual(
      decode(start(), blockStart(0, { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }), blockDelta(0, { type: 'input_json_delta', partial_json: '{"a":' }), blockDelta(0, { type: 'input_json_delta', partial_json: '1}' }), blockStop(0), messageDelta({ stop_reason: 'tool_use' }), STOP).slice(2, -3),
      [['callStart', { id: 'toolu_1', name: 'f' }], ['callArguments', '{"a":'], ['callArguments', '1}'], ['callEnd']],
    );
  });

  it('folds usage: input from message_start unless message_delta repeats it, output from message_delta even when 0, thinking tokens as reasoning tokens', () => {
    const events = decode(start({ input_tokens: 10, cache_read_input_tokens: 4, output_tokens: 1 }), messageDelta({ stop_reason: 'end_turn' }, { output_tokens: 0, output_tokens_details: { thinking_tokens: 3 } }), STOP);
    assert.deepEqual(events.filter((event) => (event as unknown[])[0] === 'usage'), [
      ['usage', { inputTokens: 10, outputTokens: 1, cacheReadTokens: 4, cacheCreationTokens: 0, reasoningTokens: 0 }],
      ['usage', { inputTokens: 10, outputTokens: 0, cacheReadTokens: 4, cacheCreationTokens: 0, reasoningTokens: 3 }],
    ]);
  });

  it('stops with the stop sequence and a refusal\'s explanation; message_stop without message_delta is end_turn', () => {
    assert.deepEqual(decode(start(), messageDelta({ stop_reason: 'stop_sequence', stop_sequence: 'END' }), STOP).at(-2), ['stop', { reason: 'stop_sequence', sequence: 'END' }]);
    assert.deepEqual(decode(start(), messageDelta({ stop_reason: 'refusal', stop_details: { explanation: 'Not allowed.' } }), STOP).at(-2), ['stop', { reason: 'refusal', explanation: 'Not allowed.' }]);
    assert.deepEqual(decode(start(), messageDelta({ stop_reason: 'model_context_window_exceeded' }), STOP).at(-2), ['stop', { reason: 'context_window_exceeded' }]);
    assert.deepEqual(decode(start(), STOP).slice(-2), [['stop', { reason: 'end_turn' }], ['end']]);
  });

  it('drops tool input for a block that is not the open call, with a warning', () => {
    const events = decode(start(), blockStart(0, { type: 'tool_use', id: 't', name: 'f', input: {} }), blockStop(0), blockDelta(0, { type: 'input_json_delta', partial_json: '{}' }), messageDelta({ stop_reason: 'end_turn' }), STOP);
    assert.deepEqual(events.at(-1), ['warnings', ['upstream sent tool input for a block that is not the open tool call; dropped']]);
  });

  it('fails on an error event with its message and type, and on a body that ends before message_delta', () => {
    assert.deepEqual(decode(start(), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }).at(-1), ['fail', 'Overloaded', 'overloaded_error']);
    assert.deepEqual(decode(start()).at(-1), ['fail', 'upstream stream ended before the answer was complete']);
  });
});

describe('decodeMessagesAnswer', () => {
  it('tells the blocks in order, then usage and the stop', () => {
    const sink = recordingSink();
    decodeMessagesAnswer({
      model: 'claude-up',
      content: [{ type: 'thinking', thinking: 'hm', signature: 'sig' }, { type: 'text', text: '' }, { type: 'tool_use', id: 't', name: 'f', input: { a: 1 } }, { type: 'server_tool_use', id: 's' }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 3, output_tokens: 2 },
    }, sink);
    assert.deepEqual(sink.events, [
      ['start', 'claude-up'],
      ['reasoning', 'hm'],
      ['reasoningEnd', { kind: 'thinking-signature', signature: 'sig' }],
      ['text', ''],
      ['callStart', { id: 't', name: 'f' }],
      ['callArguments', '{"a":1}'],
      ['callEnd'],
      ['usage', { inputTokens: 3, outputTokens: 2, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 }],
      ['stop', { reason: 'tool_use' }],
      ['end'],
    ]);
  });
});
