import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { SseEvent } from '../../src/sse/parser.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import type { StreamTranslator } from '../../src/translate/index.ts';
import { createMessagesToChatStream } from '../../src/translate/index.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const GOLDEN = new URL('./golden/messages-to-chat/', import.meta.url);
const UPDATE_GOLDEN = process.env['UPDATE_GOLDEN'] === '1';
const NOW_MS = 1_700_000_000_000;

interface Translation { output: string; translator: StreamTranslator }

/** Upstream bytes, in the pieces given, through the parser and the translator, as the pipeline will run them. */
function translateBytes(pieces: Uint8Array[], includeUsage = true): Translation {
  let output = '';
  const translator = createMessagesToChatStream({
    write: (text) => {
      output += text;
    },
    includeUsage,
    completionId: 'chatcmpl-test',
    now: () => NOW_MS,
  });
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  translator.end();
  return { output, translator };
}

/** Messages-format events as upstream SSE text: `event: <type>` then the data. */
function upstream(...events: Array<Record<string, unknown>>): Buffer {
  return Buffer.from(events.map((event) => `event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
}

function translate(...events: Array<Record<string, unknown>>): Translation {
  return translateBytes([upstream(...events)]);
}

const messageStart = (usage: Record<string, unknown> = { input_tokens: 10, output_tokens: 1 }): Record<string, unknown> => ({
  type: 'message_start',
  message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', stop_reason: null, stop_sequence: null, usage },
});
const blockStart = (index: number, block: Record<string, unknown>): Record<string, unknown> => ({ type: 'content_block_start', index, content_block: block });
const blockDelta = (index: number, delta: Record<string, unknown>): Record<string, unknown> => ({ type: 'content_block_delta', index, delta });
const blockStop = (index: number): Record<string, unknown> => ({ type: 'content_block_stop', index });
const messageDelta = (stopReason: string, usage: Record<string, unknown> = { output_tokens: 7 }): Record<string, unknown> => ({
  type: 'message_delta',
  delta: { stop_reason: stopReason, stop_sequence: null },
  usage,
});
const messageStop = { type: 'message_stop' };
const ping = { type: 'ping' };

/** Client output as a list of chunks; `[DONE]` stays a string. */
function clientChunks(output: string): Array<Record<string, unknown> | '[DONE]'> {
  const events: SseEvent[] = [];
  const parser = createSseParser({ onEvent: (event) => events.push(event) });
  parser.feed(Buffer.from(output));
  parser.end();
  return events.map((event) => {
    assert.equal(event.event, undefined, 'chat chunks have no event name');
    return event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as Record<string, unknown>);
  });
}

type Choice = { index: number; delta: Record<string, unknown>; finish_reason: string | null; logprobs: null };

function choiceOf(chunk: Record<string, unknown> | '[DONE]' | undefined): Choice | undefined {
  if (chunk === undefined || chunk === '[DONE]') return undefined;
  return (chunk['choices'] as Choice[] | undefined)?.[0];
}

/** The rules every chat stream we write must keep, whatever the upstream sent. */
function assertWellFormed(output: string, failed: boolean, includeUsage = true): Array<Record<string, unknown> | '[DONE]'> {
  assert.ok(output.endsWith('\n\n'), 'output ends with a blank line');
  const chunks = clientChunks(output);
  assert.ok(chunks.length > 0, 'something was written');
  const dones = chunks.filter((chunk) => chunk === '[DONE]').length;
  const errors = chunks.filter((chunk) => chunk !== '[DONE]' && chunk['error'] !== undefined);
  if (failed) {
    assert.equal(dones, 0, 'never [DONE] after an error');
    assert.equal(errors.length, 1, 'one error chunk');
    assert.equal(chunks.at(-1), errors[0], 'the error chunk is last');
  } else {
    assert.equal(errors.length, 0, 'no error chunk in a completed stream');
    assert.equal(dones, 1, '[DONE] exactly once');
    assert.equal(chunks.at(-1), '[DONE]', '[DONE] last');
  }

  const content = chunks.filter((chunk): chunk is Record<string, unknown> => chunk !== '[DONE]' && chunk['error'] === undefined);
  if (content.length === 0) return chunks;
  assert.deepEqual(choiceOf(content[0])?.delta, { role: 'assistant', content: '' }, 'the first chunk gives the role');
  const finishes = content.filter((chunk) => choiceOf(chunk)?.finish_reason !== null && choiceOf(chunk) !== undefined);
  const usageChunks = content.filter((chunk) => (chunk['choices'] as unknown[]).length === 0);
  if (!failed) {
    assert.equal(finishes.length, 1, 'one finish chunk');
    assert.equal(usageChunks.length, includeUsage ? 1 : 0, 'one usage chunk only with include_usage');
    assert.equal(content.at(-1), includeUsage ? usageChunks[0] : finishes[0], 'the finish (and usage) chunk come last');
  }
  let toolCalls = 0;
  for (const chunk of content) {
    assert.equal(chunk['id'], content[0]?.['id'], 'one id for every chunk');
    assert.equal(chunk['object'], 'chat.completion.chunk');
    assert.equal(chunk['model'], content[0]?.['model'], 'one model for every chunk');
    assert.equal(chunk['created'], content[0]?.['created']);
    if ((chunk['choices'] as unknown[]).length > 0) assert.equal(chunk['usage'], includeUsage ? null : undefined, 'usage: null only with include_usage');
    for (const call of (choiceOf(chunk)?.delta['tool_calls'] ?? []) as Array<Record<string, unknown>>) {
      if (call['id'] !== undefined) {
        assert.equal(call['index'], toolCalls, 'tool call indices start at 0 and are contiguous');
        toolCalls += 1;
      } else {
        assert.ok(typeof call['index'] === 'number' && call['index'] < toolCalls, 'arguments go to a started call');
      }
    }
  }
  return chunks;
}

describe('createMessagesToChatStream on the recorded messages streams', () => {
  const names = readdirSync(FIXTURES).filter((name) => name.startsWith('anthropic-') && name.endsWith('.sse')).sort();
  if (UPDATE_GOLDEN) mkdirSync(GOLDEN, { recursive: true });

  it('has a golden output for every recorded messages stream and no other', () => {
    assert.ok(names.length >= 15);
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

    it(`keeps every piece of text, thinking and tool input of ${name}, in order`, () => {
      const upstreamParts = { text: '', thinking: '', tools: [] as string[] };
      const blockKinds = new Map<number, string>();
      const parser = createSseParser({
        onEvent: (event) => {
          const data = JSON.parse(event.data) as Record<string, unknown>;
          if (data['type'] === 'content_block_start') {
            const kind = String((data['content_block'] as Record<string, unknown>)['type']);
            blockKinds.set(Number(data['index']), kind);
            if (kind === 'tool_use') upstreamParts.tools.push('');
          }
          if (data['type'] !== 'content_block_delta') return;
          const delta = data['delta'] as Record<string, string>;
          if (delta['type'] === 'text_delta') upstreamParts.text += delta['text'];
          if (delta['type'] === 'thinking_delta') upstreamParts.thinking += delta['thinking'];
          if (delta['type'] === 'input_json_delta') upstreamParts.tools[upstreamParts.tools.length - 1] += delta['partial_json'] ?? '';
        },
      });
      parser.feed(bytes);
      parser.end();
      // A call without arguments reaches chat clients as "{}", which they can parse.
      upstreamParts.tools = upstreamParts.tools.map((input) => (input === '' ? '{}' : input));
      const clientParts = { text: '', thinking: '', tools: [] as string[] };
      for (const chunk of clientChunks(whole.output)) {
        const delta = choiceOf(chunk)?.delta ?? {};
        clientParts.text += String(delta['content'] ?? '');
        clientParts.thinking += String(delta['reasoning_content'] ?? '');
        for (const call of (delta['tool_calls'] ?? []) as Array<{ index: number; function: { arguments: string } }>) {
          clientParts.tools[call.index] = (clientParts.tools[call.index] ?? '') + call.function.arguments;
        }
      }
      assert.deepEqual(clientParts, upstreamParts);
    });

    it(`translates ${name} the same when split at every byte offset`, () => {
      for (const { offset, pieces } of everySplit(bytes)) {
        const { output } = translateBytes(pieces);
        if (output !== whole.output) assert.equal(output, whole.output, `split at byte ${offset}`);
      }
    });

    it(`translates ${name} the same when fed in seeded random small pieces`, () => {
      for (const seed of [21, 22, 23]) assert.equal(translateBytes(randomPieces(bytes, seed)).output, whole.output, `seed ${seed}`);
    });
  }
});

describe('createMessagesToChatStream chunks', () => {
  it('opens with a role chunk carrying the id, created time and upstream model', () => {
    const chunks = clientChunks(translate(messageStart()).output);
    assert.deepEqual(chunks[0], {
      id: 'chatcmpl-test',
      object: 'chat.completion.chunk',
      created: NOW_MS / 1000,
      model: 'claude-x',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      usage: null,
    });
  });

  it('names the llmux model it is given in every chunk instead of the upstream\'s', () => {
    let output = '';
    const translator = createMessagesToChatStream({ write: (text) => (output += text), includeUsage: true, model: 'llmux-id' });
    for (const name of ['anthropic-stream-text-then-tool-use-haiku.sse']) {
      const parser = createSseParser({ onEvent: (event) => translator.push(event) });
      parser.feed(readFileSync(new URL(name, FIXTURES)));
      parser.end();
    }
    const chunks = clientChunks(output);
    assert.equal(chunks.pop(), '[DONE]');
    assert.ok(chunks.length > 3);
    for (const chunk of chunks) assert.equal((chunk as Record<string, unknown>)['model'], 'llmux-id');
  });

  it('gives a random chatcmpl- id and the current time when none are pinned', (t) => {
    let output = '';
    // The system clock, held still: `created` is its second, whatever second this test runs in.
    t.mock.method(Date, 'now', () => 1_773_482_405_999);
    const translator = createMessagesToChatStream({ write: (text) => (output += text), includeUsage: false });
    translator.push({ event: 'message_start', data: JSON.stringify(messageStart()) });
    const [first] = clientChunks(output) as Array<Record<string, unknown>>;
    assert.match(String(first?.['id']), /^chatcmpl-[0-9a-f]{24}$/);
    assert.equal(first?.['created'], 1_773_482_405);
  });

  it('writes each chunk as soon as its upstream event arrives', () => {
    const writes: string[] = [];
    const translator = createMessagesToChatStream({ write: (text) => writes.push(text), includeUsage: false, completionId: 'chatcmpl-test', now: () => NOW_MS });
    translator.push({ event: 'message_start', data: JSON.stringify(messageStart()) });
    translator.push({ event: 'content_block_start', data: JSON.stringify(blockStart(0, { type: 'text', text: '' })) });
    assert.equal(writes.length, 1);
    translator.push({ event: 'content_block_delta', data: JSON.stringify(blockDelta(0, { type: 'text_delta', text: 'Hi' })) });
    assert.equal(
      writes[1],
      'data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"claude-x","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}\n\n',
    );
  });

  it('maps text_delta to content and thinking_delta to reasoning_content', () => {
    const chunks = assertWellFormed(
      translate(
        messageStart(),
        blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
        blockDelta(0, { type: 'thinking_delta', thinking: 'hmm' }),
        blockDelta(0, { type: 'signature_delta', signature: 'sig' }),
        blockStop(0),
        blockStart(1, { type: 'text', text: '' }),
        blockDelta(1, { type: 'text_delta', text: 'answer' }),
        blockStop(1),
        messageDelta('end_turn'),
        messageStop,
      ).output,
      false,
    );
    assert.deepEqual(chunks.slice(1, 3).map((chunk) => choiceOf(chunk)?.delta), [{ reasoning_content: 'hmm' }, { content: 'answer' }]);
  });

  it('counts tool calls among tool_use blocks only, not among all content blocks', () => {
    const chunks = assertWellFormed(
      translate(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Let me look.' }),
        blockStop(0),
        blockStart(1, { type: 'tool_use', id: 'toolu_a', name: 'search', input: {} }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '' }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '{"q":1}' }),
        blockStop(1),
        blockStart(2, { type: 'tool_use', id: 'toolu_b', name: 'fetch', input: {} }),
        blockDelta(2, { type: 'input_json_delta', partial_json: '{}' }),
        blockStop(2),
        messageDelta('tool_use'),
        messageStop,
      ).output,
      false,
    );
    assert.deepEqual(
      chunks.slice(2, 6).map((chunk) => choiceOf(chunk)?.delta),
      [
        { tool_calls: [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'search', arguments: '' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '{"q":1}' } }] },
        { tool_calls: [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'fetch', arguments: '' } }] },
        { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
      ],
    );
    assert.equal(choiceOf(chunks.at(-3))?.finish_reason, 'tool_calls');
  });

  it('gives a tool call without arguments "{}" when its block stops, so chat clients can parse it', () => {
    const chunks = assertWellFormed(
      translate(
        messageStart(),
        blockStart(0, { type: 'tool_use', id: 'toolu_a', name: 'refresh', input: {} }),
        blockDelta(0, { type: 'input_json_delta', partial_json: '' }),
        blockStop(0),
        blockStart(1, { type: 'tool_use', id: 'toolu_b', name: 'refresh', input: {} }),
        messageDelta('max_tokens'),
        messageStop,
      ).output,
      false,
    );
    const args = chunks.flatMap((chunk) => ((choiceOf(chunk)?.delta['tool_calls'] ?? []) as Array<{ index: number; function: { arguments: string } }>).map((call) => [call.index, call.function.arguments]));
    assert.deepEqual(args, [[0, ''], [0, '{}'], [1, ''], [1, '{}']]);
  });

  it('writes nothing for ping, signature_delta, content_block_stop and unknown events', () => {
    const writes: string[] = [];
    const translator = createMessagesToChatStream({ write: (text) => writes.push(text), includeUsage: true, completionId: 'chatcmpl-test', now: () => NOW_MS });
    translator.push({ event: 'message_start', data: JSON.stringify(messageStart()) });
    const count = writes.length;
    for (const event of [ping, blockStart(0, { type: 'thinking', thinking: '' }), blockDelta(0, { type: 'signature_delta', signature: 's' }), blockStop(0), { type: 'brand_new_event', x: 1 }, blockStart(1, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }), blockDelta(1, { type: 'citations_delta', citation: {} })]) {
      translator.push({ event: String(event['type']), data: JSON.stringify(event) });
    }
    assert.equal(writes.length, count);
  });

  it('reads JSON padded with whitespace', () => {
    const bytes = Buffer.from(`event: message_start\ndata: ${JSON.stringify(messageStart())}   \n\nevent: content_block_delta\ndata:   {"type" : "content_block_delta", "index":0, "delta": {"type":"text_delta","text":"x"}}     \n\n`);
    const chunks = clientChunks(translateBytes([bytes]).output);
    assert.deepEqual(choiceOf(chunks[1])?.delta, { content: 'x' });
  });

  it('maps stop reasons through the stop-reason table', () => {
    const cases: Array<[string, string]> = [
      ['end_turn', 'stop'],
      ['stop_sequence', 'stop'],
      ['pause_turn', 'stop'],
      ['max_tokens', 'length'],
      ['model_context_window_exceeded', 'length'],
      ['tool_use', 'tool_calls'],
      ['refusal', 'content_filter'],
    ];
    for (const [stop, finish] of cases) {
      const chunks = clientChunks(translate(messageStart(), messageDelta(stop), messageStop).output);
      assert.equal(choiceOf(chunks.at(-3))?.finish_reason, finish, stop);
    }
  });
});

describe('createMessagesToChatStream usage and completion', () => {
  it('sends the finish chunk, then a usage chunk with empty choices, then [DONE]', () => {
    const chunks = assertWellFormed(
      translate(messageStart({ input_tokens: 10, cache_read_input_tokens: 30, cache_creation_input_tokens: 5, output_tokens: 1 }), messageDelta('end_turn', { output_tokens: 7 }), messageStop).output,
      false,
    );
    assert.deepEqual(chunks.slice(-3), [
      { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: NOW_MS / 1000, model: 'claude-x', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], usage: null },
      {
        id: 'chatcmpl-test',
        object: 'chat.completion.chunk',
        created: NOW_MS / 1000,
        model: 'claude-x',
        choices: [],
        usage: { prompt_tokens: 45, completion_tokens: 7, total_tokens: 52, prompt_tokens_details: { cached_tokens: 30 } },
      },
      '[DONE]',
    ]);
  });

  it('sends no usage chunk and no usage fields without include_usage', () => {
    const { output } = translateBytes([upstream(messageStart(), messageDelta('end_turn'), messageStop)], false);
    const chunks = assertWellFormed(output, false, false);
    assert.equal(chunks.length, 3);
    assert.ok(!output.includes('usage'));
  });

  it('takes the latest non-zero input counts when message_delta repeats them, and message_delta output even when 0', () => {
    const { translator } = translate(
      messageStart({ input_tokens: 10, cache_read_input_tokens: 30, output_tokens: 1 }),
      messageDelta('refusal', { input_tokens: 12, cache_read_input_tokens: 0, output_tokens: 0 }),
      messageStop,
    );
    assert.deepEqual(translator.usage(), { inputTokens: 12, outputTokens: 0, cacheReadTokens: 30, cacheCreationTokens: 0 });
  });

  it('keeps message_start counts when message_delta has no usage', () => {
    const { translator } = translate(messageStart({ input_tokens: 10, output_tokens: 3 }), { type: 'message_delta', delta: { stop_reason: 'end_turn' } }, messageStop);
    assert.deepEqual(translator.usage(), { inputTokens: 10, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 });
  });

  it('finishes with [DONE] on a clean end after message_delta when message_stop never comes', () => {
    const { output, translator } = translate(messageStart(), messageDelta('end_turn'));
    assertWellFormed(output, false);
    assert.equal(translator.failed, false);
  });

  it('gives message_stop without message_delta a stop finish chunk before [DONE]', () => {
    const chunks = assertWellFormed(translate(messageStart(), messageStop).output, false);
    assert.equal(choiceOf(chunks.at(-3))?.finish_reason, 'stop');
  });

  it('ignores a second message_delta and everything after message_stop', () => {
    const { output } = translate(messageStart(), messageDelta('max_tokens'), messageDelta('end_turn'), messageStop, blockDelta(0, { type: 'text_delta', text: 'late' }), messageStop);
    const chunks = assertWellFormed(output, false);
    assert.equal(choiceOf(chunks.at(-3))?.finish_reason, 'length');
    assert.ok(!output.includes('late'));
  });
});

describe('createMessagesToChatStream output encoding', () => {
  // Quotes, backslashes, line ends, U+2028, an emoji, a control character and a lone surrogate.
  const awkward = 'say "hi" \\ then\n\ttab \u2028 \u{1F600} \u0001 \ud800 </script>';

  it('writes each chunk as its data exactly as JSON.stringify would, with awkward text kept whole', () => {
    const start = messageStart();
    (start['message'] as Record<string, unknown>)['model'] = `model ${awkward}`;
    const { output } = translate(
      start,
      blockStart(0, { type: 'thinking', thinking: awkward, signature: '' }),
      blockDelta(0, { type: 'thinking_delta', thinking: awkward }),
      blockStop(0),
      blockStart(1, { type: 'text', text: awkward }),
      blockDelta(1, { type: 'text_delta', text: awkward }),
      blockStop(1),
      blockStart(2, { type: 'tool_use', id: `toolu "${awkward}"`, name: `tool ${awkward}`, input: {} }),
      blockDelta(2, { type: 'input_json_delta', partial_json: `{"q":${JSON.stringify(awkward)}}` }),
      blockStop(2),
      blockStart(3, { type: 'tool_use', id: 'toolu_2', name: 'no_arguments', input: {} }),
      blockStop(3),
      messageDelta('tool_use'),
      messageStop,
    );
    const raw: SseEvent[] = [];
    const parser = createSseParser({ onEvent: (event) => raw.push(event) });
    parser.feed(Buffer.from(output));
    parser.end();
    assert.equal(raw.length, 12);
    for (const event of raw.slice(0, -1)) assert.equal(event.data, JSON.stringify(JSON.parse(event.data)), 'written as JSON.stringify writes it');
    assert.equal(raw.at(-1)?.data, '[DONE]');

    const chunks = clientChunks(output).filter((chunk): chunk is Record<string, unknown> => chunk !== '[DONE]');
    assert.ok(chunks.every((chunk) => chunk['model'] === `model ${awkward}`));
    const deltas = chunks.map((chunk) => choiceOf(chunk)?.delta).filter((delta) => delta !== undefined);
    assert.deepEqual(deltas, [
      { role: 'assistant', content: '' },
      { reasoning_content: awkward },
      { reasoning_content: awkward },
      { content: awkward },
      { content: awkward },
      { tool_calls: [{ index: 0, id: `toolu "${awkward}"`, type: 'function', function: { name: `tool ${awkward}`, arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: `{"q":${JSON.stringify(awkward)}}` } }] },
      { tool_calls: [{ index: 1, id: 'toolu_2', type: 'function', function: { name: 'no_arguments', arguments: '' } }] },
      { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
      {},
    ]);
  });
});

describe('createMessagesToChatStream errors', () => {
  it('turns an upstream error event into an error chunk and no [DONE]', () => {
    const { output, translator } = translate(
      messageStart(),
      blockStart(0, { type: 'text', text: '' }),
      blockDelta(0, { type: 'text_delta', text: 'Hello' }),
      { type: 'error', error: { details: null, type: 'overloaded_error', message: 'Overloaded' } },
      messageStop,
    );
    const chunks = assertWellFormed(output, true);
    assert.deepEqual(chunks.at(-1), { error: { message: 'Overloaded', type: 'overloaded_error', param: null, code: 'upstream_overloaded' } });
    assert.equal(translator.failed, true);
    assert.equal(translator.finished, true);
  });

  it('treats a clean end before message_delta as a dropped stream', () => {
    const { output, translator } = translate(messageStart(), blockStart(0, { type: 'text', text: '' }), blockDelta(0, { type: 'text_delta', text: 'Hel' }));
    const chunks = assertWellFormed(output, true);
    assert.match(String(((chunks.at(-1) as Record<string, unknown>)['error'] as Record<string, unknown>)['message']), /ended before the answer was complete/);
    assert.equal(translator.failed, true);
  });

  it('fails with a clear message on an event that is not JSON, and writes nothing after', () => {
    const bytes = Buffer.from(`${upstream(messageStart()).toString()}event: content_block_delta\ndata: {"type":"content_block_delta",\n\n${upstream(messageDelta('end_turn'), messageStop).toString()}`);
    const { output } = translateBytes([bytes]);
    const chunks = assertWellFormed(output, true);
    assert.match(String(((chunks.at(-1) as Record<string, unknown>)['error'] as Record<string, unknown>)['message']), /not valid JSON/);
  });

  it('fails on JSON that is not an object', () => {
    assertWellFormed(translateBytes([Buffer.from('event: ping\ndata: [1]\n\n')]).output, true);
  });

  it('fail() writes one error chunk with the given type and later calls write nothing', () => {
    const writes: string[] = [];
    const translator = createMessagesToChatStream({ write: (text) => writes.push(text), includeUsage: true, completionId: 'chatcmpl-test', now: () => NOW_MS });
    translator.push({ event: 'message_start', data: JSON.stringify(messageStart()) });
    translator.fail('upstream timed out');
    assert.equal(writes.at(-1), 'data: {"error":{"message":"upstream timed out","type":"api_error","param":null,"code":"upstream_error"}}\n\n');
    const count = writes.length;
    translator.fail('again');
    translator.push({ event: 'message_stop', data: JSON.stringify(messageStop) });
    translator.end();
    assert.equal(writes.length, count);
  });

  it('does nothing on fail() after [DONE]', () => {
    const writes: string[] = [];
    const translator = createMessagesToChatStream({ write: (text) => writes.push(text), includeUsage: false, completionId: 'chatcmpl-test', now: () => NOW_MS });
    translator.push({ event: 'message_stop', data: JSON.stringify(messageStop) });
    assert.equal(writes.at(-1), 'data: [DONE]\n\n');
    translator.fail('too late');
    assert.equal(writes.at(-1), 'data: [DONE]\n\n');
    assert.equal(translator.failed, false);
  });
});
