import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createChatStreamDecoder, decodeChatAnswer } from '../../src/translate/chat-decoder.ts';
import { decodeStream, recordingSink } from '../helpers/answer-events.ts';

type Json = Record<string, unknown>;

function sse(...chunks: Array<Json | string>): string {
  return chunks.map((chunk) => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`).join('');
}

function chunk(delta: Json, finishReason: string | null = null, extra: Json = {}): Json {
  return { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up-1', choices: [{ index: 0, delta, finish_reason: finishReason, ...extra }] };
}

function decode(...chunks: Array<Json | string>): unknown[] {
  const warnings: string[] = [];
  const events = decodeStream((sink) => createChatStreamDecoder(sink, { onWarning: (message) => warnings.push(message) }), sse(...chunks));
  return warnings.length === 0 ? events : [...events, ['warnings', warnings]];
}

describe('createChatStreamDecoder', () => {
  it('tells reasoning, text and refusal as they come, starting at the first choice and stopping at finish_reason', () => {
    assert.deepEqual(decode({ choices: [], prompt_filter_results: [] }, chunk({ role: 'assistant', content: '', reasoning_content: 'hm' }), chunk({ reasoning: '!' }), chunk({ content: 'Hi' }), chunk({ refusal: 'No.' }), chunk({}, 'stop'), '[DONE]'), [
      ['start', 'up-1'],
      ['reasoning', 'hm'],
      ['reasoning', '!'],
      ['text', 'Hi'],
      ['refusal', 'No.'],
      ['stop', { reason: 'end_turn' }],
      ['end'],
    ]);
  });

  it('reads usage on any chunk, Groq\'s under x_groq too, with reasoning tokens and xAI\'s reasoning left out of completion_tokens', () => {
    const events = decode(chunk({ content: 'a' }), { ...chunk({}, 'stop'), x_groq: { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 20, completion_tokens_details: { reasoning_tokens: 6 } } } }, '[DONE]');
    assert.deepEqual(events[2], ['usage', { inputTokens: 10, outputTokens: 10, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 6 }]);
  });

  it('stops with the stop sequence vLLM or SGLang names, never a token id', () => {
    for (const [extra, stop] of [
      [{ stop_reason: 'END' }, { reason: 'stop_sequence', sequence: 'END' }],
      [{ matched_stop: '###' }, { reason: 'stop_sequence', sequence: '###' }],
      [{ stop_reason: 128009 }, { reason: 'end_turn' }],
    ] as const) {
      assert.deepEqual(decode(chunk({ content: 'a' }), chunk({}, 'stop', extra), '[DONE]').at(-2), ['stop', stop]);
    }
  });

  it('stops tool calls that end with stop, or with no finish_reason at all, as tool_use', () => {
    const call = { index: 0, id: 'call_1', function: { name: 'f', arguments: '{}' } };
    assert.deepEqual(decode(chunk({ tool_calls: [call] }), chunk({}, 'stop'), '[DONE]').at(-2), ['stop', { reason: 'tool_use' }]);
    assert.deepEqual(decode(chunk({ tool_calls: [call] }), '[DONE]').at(-2), ['stop', { reason: 'tool_use' }]);
  });

  it('serialises interleaved calls: a call that starts while the live one is incomplete comes out whole after it, and text waits for both', () => {
    assert.deepEqual(
      decode(
        chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'f', arguments: '{"x":' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'b', function: { name: 'g', arguments: '{"y":' } }] }),
        chunk({ content: 'meanwhile' }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '2}' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
        chunk({}, 'tool_calls'),
        '[DONE]',
      ).slice(1),
      [
        ['callStart', { id: 'a', name: 'f' }],
        ['callArguments', '{"x":'],
        ['callArguments', '1}'],
        ['callEnd'],
        ['callStart', { id: 'b', name: 'g' }],
        ['callArguments', '{"y":2}'],
        ['callEnd'],
        ['text', 'meanwhile'],
        ['stop', { reason: 'tool_use' }],
        ['end'],
      ],
    );
  });

  it('ignores whitespace for a call already ended and drops anything else with a warning', () => {
    const events = decode(
      chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'f', arguments: '{}' } }] }),
      chunk({ content: 'then' }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ' ' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'x' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    assert.deepEqual(events.at(-1), ['warnings', ['upstream sent more arguments for tool call a after it was complete; dropped']]);
  });

  it('reads the legacy function_call as a call without an id, whose made-up id is call_…', () => {
    assert.deepEqual(decode(chunk({ function_call: { name: 'lookup', arguments: '' } }), chunk({ function_call: { arguments: '{"q":1}' } }), chunk({}, 'function_call'), '[DONE]').slice(1, -2), [
      ['callStart', { id: undefined, name: 'lookup', madeUpIdPrefix: 'call_' }],
      ['callArguments', '{"q":1}'],
      ['callEnd'],
    ]);
  });

  it('passes Gemini\'s thought signature on a tool call as the call\'s opaque state, streamed and whole', () => {
    const call = { index: 0, id: 'call_g', function: { name: 'f', arguments: '{}' }, extra_content: { google: { thought_signature: 'c2ln' } } };
    assert.deepEqual(decode(chunk({ tool_calls: [call] }), chunk({}, 'tool_calls'), '[DONE]')[1], ['callStart', { id: 'call_g', name: 'f', state: { kind: 'thought-signature', signature: 'c2ln' } }]);
    const sink = recordingSink();
    decodeChatAnswer({ choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }] }, sink);
    assert.deepEqual((sink.events[1]?.[1] as Json)['state'], { kind: 'thought-signature', signature: 'c2ln' });
  });

  it('reads OpenRouter\'s reasoning_details as the reasoning\'s state: streamed pieces merged by index, all entries told before the first call', () => {
    const events = decode(
      chunk({ reasoning: 'Thi', reasoning_details: [{ type: 'reasoning.text', text: 'Thi', format: 'anthropic-claude-v1', index: 0 }] }),
      chunk({ reasoning: 'nk.', reasoning_details: [{ type: 'reasoning.text', text: 'nk.', index: 0 }] }),
      chunk({ reasoning_details: [{ type: 'reasoning.text', signature: 'sig', index: 0 }, { type: 'reasoning.encrypted', data: 'enc', index: 1 }] }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{}' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    assert.deepEqual(events.slice(1, 5), [
      ['reasoning', 'Thi'],
      ['reasoning', 'nk.'],
      ['reasoningEnd', { kind: 'reasoning-details', details: [{ type: 'reasoning.text', text: 'Think.', format: 'anthropic-claude-v1', index: 0, signature: 'sig' }, { type: 'reasoning.encrypted', data: 'enc', index: 1 }] }],
      ['callStart', { id: 'call_1', name: 'f' }],
    ]);
    const sink = recordingSink();
    const details = [{ type: 'reasoning.encrypted', data: 'enc', index: 0 }];
    decodeChatAnswer({ choices: [{ index: 0, message: { role: 'assistant', content: 'ok', reasoning_details: details }, finish_reason: 'stop' }] }, sink);
    assert.deepEqual(sink.events.slice(1, 3), [['reasoningEnd', { kind: 'reasoning-details', details }], ['text', 'ok']]);
  });

  it('tells reasoning details with nothing after them at the stop', () => {
    const events = decode(chunk({ reasoning_details: [{ type: 'reasoning.encrypted', data: 'e' }] }), chunk({}, 'stop'), '[DONE]');
    assert.deepEqual(events.slice(1, 3), [['reasoningEnd', { kind: 'reasoning-details', details: [{ type: 'reasoning.encrypted', data: 'e' }] }], ['stop', { reason: 'end_turn' }]]);
  });

  it('fails on an error chunk with its message and type, once, and reads nothing after', () => {
    assert.deepEqual(decode(chunk({ content: 'a' }), { error: { message: 'boom', type: 'rate_limit_error' } }, chunk({ content: 'late' }), '[DONE]'), [
      ['start', 'up-1'],
      ['text', 'a'],
      ['fail', 'boom', 'rate_limit_error'],
    ]);
  });

  it('fails a stream that ends before finish_reason or [DONE]', () => {
    assert.deepEqual(decode(chunk({ content: 'a' })).at(-1), ['fail', 'upstream stream ended before the answer was complete']);
  });
});

describe('decodeChatAnswer', () => {
  it('tells choice 0 whole: reasoning, content (parts joined), refusal, calls with the ids they have, usage, stop', () => {
    const sink = recordingSink();
    decodeChatAnswer({
      model: 'up-1',
      choices: [
        { index: 1, message: { content: 'other' } },
        {
          index: 0,
          message: { reasoning_content: 'hm', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], refusal: 'No.', tool_calls: [{ function: { name: 'f', arguments: '{"x":1}' } }] },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_cache_hit_tokens: 3 },
    }, sink);
    assert.deepEqual(sink.events, [
      ['start', 'up-1'],
      ['reasoning', 'hm'],
      ['text', 'a\n\nb'],
      ['refusal', 'No.'],
      ['callStart', { id: '', name: 'f', path: 'choices.0.message.tool_calls.0.function.arguments' }],
      ['callArguments', '{"x":1}'],
      ['callEnd'],
      ['usage', { inputTokens: 2, outputTokens: 2, cacheReadTokens: 3, cacheCreationTokens: 0, reasoningTokens: 0 }],
      ['stop', { reason: 'tool_use' }],
      ['end'],
    ]);
  });
});
