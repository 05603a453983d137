import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { SseEvent } from '../../src/sse/parser.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import { createChatToMessagesStream, type StreamTranslator } from '../../src/translate/index.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const GOLDEN = new URL('./golden/chat-to-messages/', import.meta.url);
const UPDATE_GOLDEN = process.env['UPDATE_GOLDEN'] === '1';
/**
 * Recordings up to this size are translated once per byte offset. A larger one is cut at every
 * offset near both ends (as many as SPLIT_BUDGET_BYTES of translated input allows) and in random
 * pieces: the translator is a function of the parsed events, and test/sse/parser.test.ts shows
 * the parser gives the same events for every offset of every recording.
 */
const WHOLE_FILE_SPLIT_BYTES = 10 * 1024;
const SPLIT_BUDGET_BYTES = 40 * 1024 * 1024;

function edgeSplitBytes(length: number): number {
  return length <= WHOLE_FILE_SPLIT_BYTES ? length : Math.max(64, Math.floor(SPLIT_BUDGET_BYTES / length / 2));
}

const CHAT_FIXTURE = /^(openai|deepseek|xai|groq|azure)-.*\.sse$/;

interface Translation { output: string; translator: StreamTranslator }

/** Upstream bytes, in the pieces given, through the parser and the translator, as the pipeline will run them. */
function translateBytes(pieces: Uint8Array[], estimatedInputTokens?: number): Translation {
  let output = '';
  const translator = createChatToMessagesStream({
    write: (text) => {
      output += text;
    },
    messageId: 'msg_test',
    ...(estimatedInputTokens === undefined ? {} : { estimatedInputTokens }),
  });
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  translator.end();
  return { output, translator };
}

/** Chat chunks (objects, or raw data strings such as `[DONE]`) as upstream SSE text. */
function upstream(...chunks: Array<Record<string, unknown> | string>): Buffer {
  return Buffer.from(chunks.map((chunk) => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`).join(''));
}

function translate(...chunks: Array<Record<string, unknown> | string>): Translation {
  return translateBytes([upstream(...chunks)]);
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm-1', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra };
}

function usageChunk(usage: Record<string, unknown>): Record<string, unknown> {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm-1', choices: [], usage };
}

interface ClientEvent { event: string | undefined; data: Record<string, unknown> }

function clientEvents(output: string): ClientEvent[] {
  const events: SseEvent[] = [];
  const parser = createSseParser({ onEvent: (event) => events.push(event) });
  parser.feed(Buffer.from(output));
  parser.end();
  return events.map((event) => ({ event: event.event, data: JSON.parse(event.data) as Record<string, unknown> }));
}

/** The rules every messages-format stream we write must keep, whatever the upstream sent. */
function assertWellFormed(output: string, failed: boolean): ClientEvent[] {
  assert.ok(output.endsWith('\n\n'), 'output ends with a blank line');
  const events = clientEvents(output);
  assert.ok(events.length > 0, 'something was written');
  for (const { event, data } of events) assert.equal(event, data['type'], 'event name matches data.type');

  const names = events.map((event) => event.event);
  const stops = names.filter((name) => name === 'message_stop').length;
  const errors = names.filter((name) => name === 'error').length;
  if (failed) {
    assert.equal(names.at(-1), 'error', 'a failed stream ends with its error');
    assert.equal(errors, 1, 'one error');
    assert.equal(stops, 0, 'no message_stop after an error');
  } else {
    assert.equal(errors, 0, 'no error in a completed stream');
    assert.equal(stops, 1, 'message_stop exactly once');
    assert.equal(names.at(-1), 'message_stop', 'message_stop last');
    assert.equal(names.at(-2), 'message_delta', 'message_delta right before message_stop');
    assert.equal(names.filter((name) => name === 'message_delta').length, 1, 'message_delta exactly once');
  }
  if (names.includes('message_start')) assert.equal(names[0], 'message_start', 'message_start first');
  assert.ok(names.filter((name) => name === 'message_start').length <= 1, 'message_start at most once');

  let open: number | undefined;
  let nextIndex = 0;
  for (const { event, data } of events) {
    if (event === 'content_block_start') {
      assert.equal(open, undefined, 'at most one block open');
      assert.equal(data['index'], nextIndex, 'block indices start at 0 and are contiguous');
      open = nextIndex;
      nextIndex += 1;
    } else if (event === 'content_block_delta') {
      assert.equal(data['index'], open, 'deltas go to the open block');
    } else if (event === 'content_block_stop') {
      assert.equal(data['index'], open, 'stop closes the open block');
      open = undefined;
    } else if (event === 'message_delta') {
      assert.equal(open, undefined, 'every block is closed before message_delta');
    }
  }
  return events;
}

describe('createChatToMessagesStream on the recorded chat streams', () => {
  const names = readdirSync(FIXTURES).filter((name) => CHAT_FIXTURE.test(name)).sort();
  if (UPDATE_GOLDEN) mkdirSync(GOLDEN, { recursive: true });

  it('has a golden output for every recorded chat stream and no other', () => {
    assert.ok(names.length >= 14);
    if (!UPDATE_GOLDEN) assert.deepEqual(readdirSync(GOLDEN).sort(), names);
  });

  for (const name of names) {
    const bytes = readFileSync(new URL(name, FIXTURES));
    const whole = translateBytes([bytes]);

    it(`translates ${name} to its golden output`, () => {
      const goldenUrl = new URL(name, GOLDEN);
      if (UPDATE_GOLDEN) writeFileSync(goldenUrl, whole.output);
      assert.equal(whole.output, readFileSync(goldenUrl, 'utf8'));
      assertWellFormed(whole.output, whole.translator.failed);
      assert.equal(whole.translator.finished, true);
    });

    it(`keeps every piece of text, reasoning and tool arguments of ${name}, in order`, () => {
      const upstreamParts = { text: '', thinking: '', tools: [] as string[] };
      const parser = createSseParser({
        onEvent: (event) => {
          if (event.data === '[DONE]') return;
          const data = JSON.parse(event.data) as { choices?: Array<{ index: number; delta?: Record<string, unknown> }> };
          const delta = data.choices?.find((choice) => choice.index === 0)?.delta ?? {};
          upstreamParts.text += String(delta['content'] ?? '') + String(delta['refusal'] ?? '');
          upstreamParts.thinking += String(delta['reasoning_content'] ?? delta['reasoning'] ?? '');
          for (const call of (delta['tool_calls'] ?? []) as Array<{ index: number; function?: { arguments?: string } }>) {
            upstreamParts.tools[call.index] = (upstreamParts.tools[call.index] ?? '') + (call.function?.arguments ?? '');
          }
        },
      });
      parser.feed(bytes);
      parser.end();
      const clientParts = { text: '', thinking: '', tools: [] as string[] };
      for (const { event, data } of clientEvents(whole.output)) {
        if (event === 'content_block_start' && (data['content_block'] as Record<string, unknown>)['type'] === 'tool_use') clientParts.tools.push('');
        if (event !== 'content_block_delta') continue;
        const delta = data['delta'] as Record<string, string>;
        if (delta['type'] === 'text_delta') clientParts.text += delta['text'];
        if (delta['type'] === 'thinking_delta') clientParts.thinking += delta['thinking'];
        if (delta['type'] === 'input_json_delta') clientParts.tools[clientParts.tools.length - 1] += delta['partial_json'] ?? '';
      }
      if (whole.translator.failed) {
        assert.ok(upstreamParts.text.startsWith(clientParts.text));
      } else {
        assert.deepEqual(clientParts, upstreamParts);
      }
    });

    const edge = edgeSplitBytes(bytes.length);
    const splitTitle = bytes.length <= WHOLE_FILE_SPLIT_BYTES ? 'at every byte offset' : `at every byte offset of its first and last ${edge} bytes`;
    it(`translates ${name} the same when split ${splitTitle}`, () => {
      for (const { offset, pieces } of everySplit(bytes)) {
        if (offset > edge && offset < bytes.length - edge) continue;
        const { output } = translateBytes(pieces);
        if (output !== whole.output) assert.equal(output, whole.output, `split at byte ${offset}`);
      }
    });

    it(`translates ${name} the same when fed in seeded random small pieces`, () => {
      for (const seed of [11, 12, 13]) assert.equal(translateBytes(randomPieces(bytes, seed)).output, whole.output, `seed ${seed}`);
    });
  }
});

describe('createChatToMessagesStream message framing', () => {
  it('opens with message_start carrying the upstream model, the estimate and zeroed cache counts', () => {
    const { output } = translateBytes([upstream(chunk({ role: 'assistant', content: 'hi' }), chunk({}, 'stop'), '[DONE]')], 123);
    const [start] = clientEvents(output);
    assert.deepEqual(start?.data, {
      type: 'message_start',
      message: {
        id: 'msg_test',
        type: 'message',
        role: 'assistant',
        content: [],
        model: 'm-1',
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 123, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    });
  });

  it('names the llmux model it is given instead of the upstream\'s', () => {
    let output = '';
    const translator = createChatToMessagesStream({ write: (text) => (output += text), messageId: 'msg_test', model: 'llmux-id' });
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'hi' })) });
    translator.end();
    assert.equal((clientEvents(output)[0]?.data['message'] as Record<string, unknown>)['model'], 'llmux-id');
  });

  it('gives a random msg_ id when none is pinned', () => {
    let output = '';
    const translator = createChatToMessagesStream({ write: (text) => (output += text) });
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'x' })) });
    const message = clientEvents(output)[0]?.data['message'] as Record<string, unknown>;
    assert.match(String(message['id']), /^msg_[0-9a-f]{24}$/);
  });

  it('writes each client event as soon as its upstream chunk arrives', () => {
    const writes: string[] = [];
    const translator = createChatToMessagesStream({ write: (text) => writes.push(text), messageId: 'msg_test' });
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'a' })) });
    assert.deepEqual(
      writes.map((text) => text.slice(0, text.indexOf('\n'))),
      ['event: message_start', 'event: content_block_start', 'event: content_block_delta'],
    );
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'b' })) });
    assert.equal(writes.length, 4);
    assert.equal(writes[3], 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}\n\n');
  });

  it('gives an answer with no content message_start, message_delta and message_stop and no block', () => {
    const { output, translator } = translate(chunk({ role: 'assistant', content: '' }), chunk({}, 'stop'), usageChunk({ prompt_tokens: 5, completion_tokens: 0 }), '[DONE]');
    const events = assertWellFormed(output, false);
    assert.deepEqual(events.map((event) => event.event), ['message_start', 'message_delta', 'message_stop']);
    assert.equal(translator.failed, false);
  });

  it('skips chunks with empty choices before content (Azure prompt filter) and starts on the first real chunk', () => {
    const azure = { id: '', choices: [], created: 0, model: '', object: '', prompt_filter_results: [] };
    const events = assertWellFormed(translate(azure, chunk({ role: 'assistant', content: 'ok' }), chunk({}, 'stop'), '[DONE]').output, false);
    assert.deepEqual((events[0]?.data['message'] as Record<string, unknown>)['model'], 'm-1');
    assert.deepEqual(events.map((event) => event.event), ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  });

  it('ignores comment lines in the upstream stream (OpenRouter keep-alives)', () => {
    const bytes = Buffer.from(`: OPENROUTER PROCESSING\n\n${upstream(chunk({ content: 'a' })).toString()}: OPENROUTER PROCESSING\n\n${upstream(chunk({}, 'stop'), '[DONE]').toString()}`);
    const events = assertWellFormed(translateBytes([bytes]).output, false);
    assert.equal(events.length, 6);
  });

  it('ignores chunks for choices other than index 0', () => {
    const events = assertWellFormed(
      translate(chunk({ content: 'zero' }), { ...chunk({}), choices: [{ index: 1, delta: { content: 'one' }, finish_reason: 'length' }] }, chunk({}, 'stop'), '[DONE]').output,
      false,
    );
    const texts = events.filter((event) => event.event === 'content_block_delta').map((event) => (event.data['delta'] as Record<string, unknown>)['text']);
    assert.deepEqual(texts, ['zero']);
    assert.equal((events.at(-2)?.data['delta'] as Record<string, unknown>)['stop_reason'], 'end_turn');
  });
});

describe('createChatToMessagesStream content blocks', () => {
  it('maps reasoning_content and reasoning to a thinking block with an empty signature', () => {
    for (const field of ['reasoning_content', 'reasoning']) {
      const events = assertWellFormed(translate(chunk({ [field]: 'hmm' }), chunk({}, 'stop'), '[DONE]').output, false);
      assert.deepEqual(events[1]?.data, { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
      assert.deepEqual(events[2]?.data, { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } });
    }
  });

  it('closes the open block and opens the next index whenever the kind switches', () => {
    const events = assertWellFormed(
      translate(
        chunk({ reasoning_content: 'think' }),
        chunk({ content: 'say' }),
        chunk({ reasoning_content: 'again' }),
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }),
        chunk({ content: 'after' }),
        chunk({}, 'tool_calls'),
        '[DONE]',
      ).output,
      false,
    );
    const starts = events.filter((event) => event.event === 'content_block_start').map((event) => (event.data['content_block'] as Record<string, unknown>)['type']);
    assert.deepEqual(starts, ['thinking', 'text', 'thinking', 'tool_use', 'text']);
    assert.equal(events.filter((event) => event.event === 'content_block_stop').length, 5);
  });

  it('does not open a block for empty strings sent as placeholders', () => {
    const events = assertWellFormed(
      translate(chunk({ role: 'assistant', content: '', reasoning_content: '', refusal: null }), chunk({ content: null, tool_calls: [] }), chunk({ content: '' }, 'stop'), '[DONE]').output,
      false,
    );
    assert.deepEqual(events.map((event) => event.event), ['message_start', 'message_delta', 'message_stop']);
  });

  it('streams OpenAI refusal text as text and ends it with stop_reason refusal, as the whole answer does', () => {
    const events = assertWellFormed(translate(chunk({ role: 'assistant', content: null, refusal: '' }), chunk({ refusal: "I can't" }), chunk({}, 'stop'), '[DONE]').output, false);
    assert.deepEqual(events[2]?.data['delta'], { type: 'text_delta', text: "I can't" });
    assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'refusal', stop_sequence: null });
  });

  it('keeps stop_reason end_turn when the refusal field only ever came empty', () => {
    const events = clientEvents(translate(chunk({ role: 'assistant', content: 'fine', refusal: '' }), chunk({ refusal: null }, 'stop'), '[DONE]').output);
    assert.equal((events.at(-2)?.data['delta'] as Record<string, unknown>)['stop_reason'], 'end_turn');
  });

  it('turns content_filter into stop_reason refusal and keeps the text already streamed', () => {
    const events = assertWellFormed(translate(chunk({ content: 'partial' }), chunk({}, 'content_filter'), '[DONE]').output, false);
    assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'refusal', stop_sequence: null });
    assert.equal(events.filter((event) => event.event === 'content_block_delta').length, 1);
  });

  it('opens a tool_use block per new tool call index and streams its arguments as they come', () => {
    const events = assertWellFormed(
      translate(
        chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'put', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk({ prompt_tokens: 10, completion_tokens: 4 }),
        '[DONE]',
      ).output,
      false,
    );
    assert.deepEqual(
      events.slice(1, -2).map((event) => event.data),
      [
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'call_a', name: 'get', caller: { type: 'direct' }, input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a"' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ':1}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_b', name: 'put', caller: { type: 'direct' }, input: {} } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{}' } },
        { type: 'content_block_stop', index: 1 },
      ],
    );
    assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'tool_use', stop_sequence: null });
  });

  it('gives a whole tool call in one chunk (xAI) one start and one delta', () => {
    const events = assertWellFormed(
      translate(chunk({ tool_calls: [{ id: 'call_x', function: { name: 'weather', arguments: '{"city":"Oslo"}' }, index: 0, type: 'function' }] }), chunk({}, 'tool_calls'), '[DONE]').output,
      false,
    );
    assert.deepEqual(events.slice(1, 4).map((event) => event.event), ['content_block_start', 'content_block_delta', 'content_block_stop']);
    assert.deepEqual(events[2]?.data['delta'], { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' });
  });

  it('tells tool calls apart by id when the upstream omits the index or repeats index 0', () => {
    const events = assertWellFormed(
      translate(
        chunk({ tool_calls: [{ id: 'call_1', function: { name: 'a', arguments: '{"x":' } }] }),
        chunk({ tool_calls: [{ function: { arguments: '1}' } }] }),
        chunk({ tool_calls: [{ index: 0, id: 'call_2', function: { name: 'b', arguments: '{}' } }] }),
        chunk({ tool_calls: [{ index: 0, id: 'call_3', function: { name: 'c', arguments: '{}' } }] }),
        chunk({}, 'tool_calls'),
        '[DONE]',
      ).output,
      false,
    );
    const tools = events.filter((event) => event.event === 'content_block_start').map((event) => (event.data['content_block'] as Record<string, unknown>)['id']);
    assert.deepEqual(tools, ['call_1', 'call_2', 'call_3']);
    const args = events.filter((event) => event.event === 'content_block_delta').map((event) => [event.data['index'], (event.data['delta'] as Record<string, unknown>)['partial_json']]);
    assert.deepEqual(args, [[0, '{"x":'], [0, '1}'], [1, '{}'], [2, '{}']]);
  });

  it('streams the lowest tool call live and holds an interleaved later one until the earlier is complete (vLLM)', () => {
    const writes: string[] = [];
    const translator = createChatToMessagesStream({ write: (text) => writes.push(text), messageId: 'msg_test' });
    const push = (value: Record<string, unknown>): void => translator.push({ event: undefined, data: JSON.stringify(value) });
    push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'a', arguments: '{"x":' } }] }));
    push(chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'b', arguments: '{"y":' } }] }));
    // Call 1 is held: nothing of it is written while call 0 is still open.
    assert.ok(!writes.join('').includes('call_2'));
    push(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }));
    // Call 0 is complete: its block closes and call 1 comes out with what it had so far.
    assert.ok(writes.join('').includes('call_2'));
    push(chunk({ tool_calls: [{ index: 1, function: { arguments: '2}' } }] }, 'tool_calls'));
    translator.push({ event: undefined, data: '[DONE]' });
    const events = assertWellFormed(writes.join(''), false);
    assert.deepEqual(
      events.slice(1, -2).map((event) => event.data),
      [
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'call_1', name: 'a', caller: { type: 'direct' }, input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"x":' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '1}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_2', name: 'b', caller: { type: 'direct' }, input: {} } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"y":' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '2}' } },
        { type: 'content_block_stop', index: 1 },
      ],
    );
  });

  it('never drops a fragment of interleaved tool calls: each block\'s partial_json parses to the call\'s whole arguments', () => {
    const { output } = translate(
      chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'a', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_2', function: { name: 'b', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 2, id: 'call_3', function: { name: 'c', arguments: '{"z"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"y":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '[1,' } }] }),
      chunk({ tool_calls: [{ index: 2, function: { arguments: ':3}' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '"}"}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '2]}' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    const events = assertWellFormed(output, false);
    const inputs = new Map<string, string>();
    let open = '';
    for (const { event, data } of events) {
      if (event === 'content_block_start') {
        open = String((data['content_block'] as Record<string, unknown>)['id']);
        inputs.set(open, '');
      } else if (event === 'content_block_delta') {
        inputs.set(open, (inputs.get(open) ?? '') + String((data['delta'] as Record<string, unknown>)['partial_json']));
      }
    }
    assert.deepEqual([...inputs.keys()], ['call_1', 'call_2', 'call_3']);
    assert.deepEqual(JSON.parse(inputs.get('call_1') ?? ''), { x: [1, 2] });
    assert.deepEqual(JSON.parse(inputs.get('call_2') ?? ''), { y: '}' });
    assert.deepEqual(JSON.parse(inputs.get('call_3') ?? ''), { z: 3 });
    assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'tool_use', stop_sequence: null });
  });

  it('writes text that arrives while a tool call is still open after that call, so the call keeps every fragment', () => {
    const events = assertWellFormed(
      translate(
        chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'a', arguments: '{"x":' } }] }),
        chunk({ content: 'meanwhile' }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
        chunk({}, 'tool_calls'),
        '[DONE]',
      ).output,
      false,
    );
    assert.deepEqual(
      events.slice(1, -2).map((event) => [event.event, event.data['index']]),
      [
        ['content_block_start', 0], ['content_block_delta', 0], ['content_block_delta', 0], ['content_block_stop', 0],
        ['content_block_start', 1], ['content_block_delta', 1], ['content_block_stop', 1],
      ],
    );
    assert.deepEqual(events[5]?.data['content_block'], { type: 'text', text: '' });
  });

  it('gives tool calls that end with finish_reason stop (Gemini, forced tool_choice, older Ollama) stop_reason tool_use', () => {
    for (const finish of ['stop', undefined]) {
      const chunks: Array<Record<string, unknown> | string> = [
        chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] }),
      ];
      if (finish !== undefined) chunks.push(chunk({}, finish));
      chunks.push('[DONE]');
      const events = assertWellFormed(translate(...chunks).output, false);
      assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'tool_use', stop_sequence: null }, String(finish));
    }
  });

  it('streams a legacy function_call as a tool_use block', () => {
    const events = assertWellFormed(
      translate(
        chunk({ role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '' } }),
        chunk({ function_call: { arguments: '{"q":' } }),
        chunk({ function_call: { arguments: '"x"}' } }),
        chunk({}, 'function_call'),
        '[DONE]',
      ).output,
      false,
    );
    const start = events[1]?.data['content_block'] as Record<string, unknown>;
    assert.equal(start['type'], 'tool_use');
    assert.equal(start['name'], 'lookup');
    assert.match(String(start['id']), /^call_[0-9a-f]{24}$/);
    const json = events.filter((event) => event.event === 'content_block_delta').map((event) => (event.data['delta'] as Record<string, unknown>)['partial_json']).join('');
    assert.deepEqual(JSON.parse(json), { q: 'x' });
    assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'tool_use', stop_sequence: null });
  });

  it('gives a tool call without an id a generated toolu_ id', () => {
    const events = assertWellFormed(translate(chunk({ tool_calls: [{ index: 0, function: { name: 'a', arguments: '{}' } }] }), chunk({}, 'tool_calls'), '[DONE]').output, false);
    assert.match(String((events[1]?.data['content_block'] as Record<string, unknown>)['id']), /^toolu_[0-9a-f]{24}$/);
  });
});

describe('createChatToMessagesStream stop reasons and usage', () => {
  const expectedUsage = { input_tokens: 6, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 4 };
  const chatUsage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 4 } };

  it('waits for usage in a later chunk with empty choices (OpenAI) before message_delta', () => {
    const { output, translator } = translate(chunk({ content: 'a' }), chunk({}, 'stop'), usageChunk(chatUsage), '[DONE]');
    const events = assertWellFormed(output, false);
    assert.deepEqual(events.at(-2)?.data, { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: expectedUsage });
    assert.deepEqual(translator.usage(), { inputTokens: 6, outputTokens: 5, cacheReadTokens: 4, cacheCreationTokens: 0 });
  });

  it('reads usage on the finish chunk itself (DeepSeek, Groq) the same way', () => {
    const { output } = translate(chunk({ content: 'a' }), chunk({}, 'stop', { usage: chatUsage }), '[DONE]');
    assert.deepEqual(clientEvents(output).at(-2)?.data['usage'], expectedUsage);
  });

  it('closes the open block at finish_reason, before usage arrives', () => {
    const writes: string[] = [];
    const translator = createChatToMessagesStream({ write: (text) => writes.push(text), messageId: 'msg_test' });
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'a' })) });
    translator.push({ event: undefined, data: JSON.stringify(chunk({}, 'stop')) });
    assert.match(writes.at(-1) ?? '', /^event: content_block_stop\n/);
    translator.push({ event: undefined, data: JSON.stringify(usageChunk(chatUsage)) });
    assert.match(writes.at(-1) ?? '', /^event: content_block_stop\n/);
    translator.push({ event: undefined, data: '[DONE]' });
    assert.match(writes.at(-2) ?? '', /^event: message_delta\n/);
    assert.equal(writes.at(-1), 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it('sends only output_tokens in message_delta when the upstream never reports usage, and counts the estimate', () => {
    const { output, translator } = translateBytes([upstream(chunk({ content: 'a' }), chunk({}, 'stop'), '[DONE]')], 50);
    assert.deepEqual(clientEvents(output).at(-2)?.data['usage'], { output_tokens: 0 });
    assert.deepEqual(translator.usage(), { inputTokens: 50, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 });
  });

  it('maps finish reasons through the stop-reason table', () => {
    const cases: Array<[string, string]> = [
      ['stop', 'end_turn'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
      ['function_call', 'tool_use'],
      ['content_filter', 'refusal'],
    ];
    for (const [finish, stop] of cases) {
      const events = clientEvents(translate(chunk({ content: 'a' }), chunk({}, finish), '[DONE]').output);
      assert.equal((events.at(-2)?.data['delta'] as Record<string, unknown>)['stop_reason'], stop, finish);
    }
  });

  it('reports the matched stop sequence when the upstream names it (vLLM stop_reason, SGLang matched_stop)', () => {
    for (const field of ['stop_reason', 'matched_stop']) {
      const finish = { ...chunk({}), choices: [{ index: 0, delta: {}, finish_reason: 'stop', [field]: 'END' }] };
      const events = clientEvents(translate(chunk({ content: 'a' }), finish, '[DONE]').output);
      assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'stop_sequence', stop_sequence: 'END' }, field);
    }
  });

  it('finishes normally on a clean end after finish_reason without [DONE]', () => {
    const { output, translator } = translate(chunk({ content: 'a' }), chunk({}, 'stop'));
    assertWellFormed(output, false);
    assert.equal(translator.failed, false);
  });

  it('finishes normally at [DONE] even without a finish_reason', () => {
    const events = assertWellFormed(translate(chunk({ content: 'a' }), '[DONE]').output, false);
    assert.deepEqual(events.at(-2)?.data['delta'], { stop_reason: 'end_turn', stop_sequence: null });
  });

  it('starts the message at [DONE] when the upstream sent no choices at all', () => {
    const events = assertWellFormed(translate(usageChunk({ prompt_tokens: 3, completion_tokens: 0 }), '[DONE]').output, false);
    assert.deepEqual(events.map((event) => event.event), ['message_start', 'message_delta', 'message_stop']);
  });

  it('ignores everything after [DONE]', () => {
    const { output } = translate(chunk({ content: 'a' }), chunk({}, 'stop'), '[DONE]', chunk({ content: 'late' }), '[DONE]');
    assertWellFormed(output, false);
    assert.ok(!output.includes('late'));
  });
});

describe('createChatToMessagesStream output encoding', () => {
  // Quotes, backslashes, line ends, U+2028, an emoji, a control character and a lone surrogate.
  const awkward = 'say "hi" \\ then\n\ttab \u2028 \u{1F600} \u0001 \ud800 </script>';

  it('writes each event as its data exactly as JSON.stringify would, with awkward text kept whole', () => {
    const { output } = translateBytes([
      upstream(
        { ...chunk({ role: 'assistant', reasoning_content: awkward }), model: `model ${awkward}` },
        chunk({ content: awkward }),
        chunk({ tool_calls: [{ index: 0, id: `call "${awkward}"`, type: 'function', function: { name: `tool ${awkward}`, arguments: `{"q":${JSON.stringify(awkward)}` } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '}' } }] }, 'tool_calls'),
        usageChunk({ prompt_tokens: 3, completion_tokens: 4 }),
        '[DONE]',
      ),
    ]);
    const raw: SseEvent[] = [];
    const parser = createSseParser({ onEvent: (event) => raw.push(event) });
    parser.feed(Buffer.from(output));
    parser.end();
    assert.equal(raw.length, 13);
    for (const event of raw) assert.equal(event.data, JSON.stringify(JSON.parse(event.data)), `${event.event ?? ''} is written as JSON.stringify writes it`);

    const events = clientEvents(output);
    const message = events[0]?.data['message'] as Record<string, unknown>;
    assert.equal(message['model'], `model ${awkward}`);
    const deltas = events.filter((event) => event.event === 'content_block_delta').map((event) => event.data['delta'] as Record<string, unknown>);
    assert.deepEqual(deltas, [
      { type: 'thinking_delta', thinking: awkward },
      { type: 'text_delta', text: awkward },
      { type: 'input_json_delta', partial_json: `{"q":${JSON.stringify(awkward)}` },
      { type: 'input_json_delta', partial_json: '}' },
    ]);
    const toolStart = events.find((event) => (event.data['content_block'] as Record<string, unknown> | undefined)?.['type'] === 'tool_use');
    assert.deepEqual(toolStart?.data['content_block'], { type: 'tool_use', id: `call "${awkward}"`, name: `tool ${awkward}`, caller: { type: 'direct' }, input: {} });
  });
});

describe('createChatToMessagesStream errors', () => {
  it('turns an upstream error chunk into event: error and no message_stop', () => {
    const { output, translator } = translate(chunk({ content: 'a' }), { error: { message: 'boom', type: 'server_error', code: null } }, '[DONE]');
    const events = assertWellFormed(output, true);
    assert.deepEqual(events.at(-1)?.data, { type: 'error', error: { type: 'api_error', message: 'boom' } });
    assert.equal(translator.failed, true);
    assert.equal(translator.finished, true);
  });

  it('keeps the error type when it is one of the messages format', () => {
    const events = clientEvents(translate({ error: { message: 'slow down', type: 'rate_limit_error' } }).output);
    assert.deepEqual(events, [{ event: 'error', data: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } }]);
  });

  it('reads an error given as a bare string', () => {
    const events = clientEvents(translate(chunk({ content: 'a' }), { error: 'quota exceeded' }).output);
    assert.deepEqual(events.at(-1)?.data, { type: 'error', error: { type: 'api_error', message: 'quota exceeded' } });
  });

  it('treats a clean end before any finish_reason or [DONE] as a dropped stream', () => {
    const { output, translator } = translate(chunk({ content: 'a' }));
    const events = assertWellFormed(output, true);
    assert.match(String((events.at(-1)?.data['error'] as Record<string, unknown>)['message']), /ended before the answer was complete/);
    assert.equal(translator.failed, true);
  });

  it('fails with a clear message on an event that is not JSON, and writes nothing after', () => {
    const { output, translator } = translateBytes([Buffer.from(`${upstream(chunk({ content: 'a' })).toString()}data: {"choices":[\n\n${upstream(chunk({ content: 'b' }), '[DONE]').toString()}`)]);
    const events = assertWellFormed(output, true);
    assert.match(String((events.at(-1)?.data['error'] as Record<string, unknown>)['message']), /not valid JSON/);
    assert.ok(!output.includes('"b"'));
    assert.equal(translator.failed, true);
  });

  it('fails on JSON that is not an object', () => {
    assertWellFormed(translate('42').output, true);
  });

  it('fail() writes one error with the given type and later calls write nothing', () => {
    const writes: string[] = [];
    const translator = createChatToMessagesStream({ write: (text) => writes.push(text), messageId: 'msg_test' });
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'a' })) });
    translator.fail('upstream timed out', 'overloaded_error');
    const count = writes.length;
    assert.equal(writes.at(-1), 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"upstream timed out"}}\n\n');
    translator.fail('again');
    translator.push({ event: undefined, data: '[DONE]' });
    translator.end();
    assert.equal(writes.length, count);
    assert.equal(translator.failed, true);
  });

  it('does nothing on fail() after a normal finish', () => {
    const writes: string[] = [];
    const translator = createChatToMessagesStream({ write: (text) => writes.push(text), messageId: 'msg_test' });
    translator.push({ event: undefined, data: '[DONE]' });
    const count = writes.length;
    translator.fail('too late');
    assert.equal(writes.length, count);
    assert.equal(translator.failed, false);
    assert.equal(translator.finished, true);
  });
});
