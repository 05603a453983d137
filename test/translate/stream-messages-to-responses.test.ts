import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createSseParser } from '../../src/sse/parser.ts';
import type { ResponsesStreamTranslator } from '../../src/translate/index.ts';
import { createMessagesToResponsesStream, messagesResponseToResponses } from '../../src/translate/index.ts';
import { type AnswerOverrides, answerOptions, assembleResponsesStream, comparable, eventTypes, parseResponsesEvents } from '../helpers/responses-stream.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';
import { messagesAnswerFromStream } from '../helpers/upstream-answers.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const GOLDEN = new URL('./golden/messages-to-responses/', import.meta.url);
const UPDATE_GOLDEN = process.env['UPDATE_GOLDEN'] === '1';
const MESSAGES_FIXTURE = /^anthropic-.*\.sse$/;

interface Run { output: string; translator: ResponsesStreamTranslator; warnings: string[] }

function translateBytes(pieces: Uint8Array[], overrides: AnswerOverrides = {}): Run {
  let output = '';
  const warnings: string[] = [];
  const translator = createMessagesToResponsesStream({ ...answerOptions(overrides), write: (text) => (output += text), onWarning: (message) => warnings.push(message) });
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  translator.end();
  return { output, translator, warnings };
}

type Json = Record<string, unknown>;

function upstream(...events: Json[]): Buffer {
  return Buffer.from(events.map((event) => `event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
}

function translate(...events: Json[]): Run {
  return translateBytes([upstream(...events)]);
}

const start = (usage: Json = { input_tokens: 10, output_tokens: 1 }): Json => ({
  type: 'message_start',
  message: { id: 'msg_up', type: 'message', role: 'assistant', content: [], model: 'claude-upstream', stop_reason: null, stop_sequence: null, usage },
});
const blockStart = (index: number, block: Json): Json => ({ type: 'content_block_start', index, content_block: block });
const delta = (index: number, value: Json): Json => ({ type: 'content_block_delta', index, delta: value });
const blockStop = (index: number): Json => ({ type: 'content_block_stop', index });
const messageDelta = (stopReason: string, usage: Json = { output_tokens: 5 }, extra: Json = {}): Json => ({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null, ...extra }, usage });
const stop: Json = { type: 'message_stop' };

function textBlock(index: number, text: string): Json[] {
  return [blockStart(index, { type: 'text', text: '' }), delta(index, { type: 'text_delta', text }), blockStop(index)];
}

function toolBlock(index: number, id: string, name: string, ...fragments: string[]): Json[] {
  return [blockStart(index, { type: 'tool_use', id, name, input: {} }), ...fragments.map((partial) => delta(index, { type: 'input_json_delta', partial_json: partial })), blockStop(index)];
}

function assertAgreesWithWhole(bytes: Buffer, run: Run): void {
  const assembled = assembleResponsesStream(run.output);
  if (run.translator.failed) return;
  const whole = messagesResponseToResponses(messagesAnswerFromStream(bytes), answerOptions());
  assert.deepEqual(comparable(assembled.final), comparable(whole));
  assert.deepEqual(run.translator.response(), assembled.final, 'response() is the object of the terminal event');
}

describe('createMessagesToResponsesStream on the recorded messages streams', () => {
  const names = readdirSync(FIXTURES).filter((name) => MESSAGES_FIXTURE.test(name)).sort();
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
      assert.equal(whole.translator.finished, true);
    });

    it(`writes ${name} as a well-formed stream that assembles to the whole-answer translation`, () => {
      assertAgreesWithWhole(bytes, whole);
    });

    it(`translates ${name} the same when split at every byte offset`, () => {
      for (const { offset, pieces } of everySplit(bytes)) {
        const { output } = translateBytes(pieces);
        if (output !== whole.output) assert.equal(output, whole.output, `split at byte ${offset}`);
      }
    });

    it(`translates ${name} the same when fed in seeded random small pieces`, () => {
      for (const seed of [41, 42, 43]) assert.equal(translateBytes(randomPieces(bytes, seed)).output, whole.output, `seed ${seed}`);
    });
  }
});

describe('createMessagesToResponsesStream items', () => {
  it('starts at message_start with the llmux model, never the upstream one', () => {
    const { output } = translate(start(), ...textBlock(0, 'hi'), messageDelta('end_turn'), stop);
    const events = parseResponsesEvents(output);
    assert.deepEqual(eventTypes(output).slice(0, 2), ['response.created', 'response.in_progress']);
    for (const event of [events[0], events.at(-1)]) assert.equal((event?.data['response'] as Json)['model'], 'llmux-model');
  });

  it('makes consecutive text blocks one message with one output_text part, as the whole answer does', () => {
    const bytes = upstream(start(), ...textBlock(0, 'Hello, '), ...textBlock(1, 'world'), messageDelta('end_turn'), stop);
    const run = translateBytes([bytes]);
    assert.deepEqual(run.translator.response().output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello, world', annotations: [], logprobs: [] }] }]);
    assertAgreesWithWhole(bytes, run);
  });

  it('keeps a message open after its block stops, until another item starts', () => {
    const writes: string[] = [];
    const translator = createMessagesToResponsesStream({ ...answerOptions(), write: (text) => writes.push(text) });
    for (const event of [start(), ...textBlock(0, 'a')]) translator.push({ event: String(event['type']), data: JSON.stringify(event) });
    assert.ok(!writes.some((text) => text.startsWith('event: response.output_item.done')));
    for (const event of toolBlock(1, 'toolu_1', 'shell', '{}')) translator.push({ event: String(event['type']), data: JSON.stringify(event) });
    assert.ok(writes.some((text) => text.startsWith('event: response.output_item.done')), 'the tool block closed the message');
  });

  it('turns a thinking block into a reasoning item whose encrypted_content seals the thinking and its signature', () => {
    const bytes = upstream(
      start(),
      blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
      delta(0, { type: 'thinking_delta', thinking: 'Let me ' }),
      delta(0, { type: 'thinking_delta', thinking: 'think.' }),
      delta(0, { type: 'signature_delta', signature: 'c2ln' }),
      blockStop(0),
      ...textBlock(1, 'Done.'),
      messageDelta('end_turn'),
      stop,
    );
    const run = translateBytes([bytes]);
    assert.deepEqual(run.translator.response().output[0], {
      type: 'reasoning',
      id: 'rs_test_0',
      summary: [{ type: 'summary_text', text: 'Let me think.' }],
      encrypted_content: 'sealed:{"type":"thinking","thinking":"Let me think.","signature":"c2ln"}',
    });
    assertAgreesWithWhole(bytes, run);
    const unsealed = translateBytes([bytes], { exposeSeals: undefined });
    assert.equal('encrypted_content' in (unsealed.translator.response().output[0] ?? {}), false);
  });

  it('gives redacted and text-less thinking a summary-less reasoning item only when it can be sealed', () => {
    const bytes = upstream(
      start(),
      blockStart(0, { type: 'redacted_thinking', data: 'opaque' }),
      blockStop(0),
      blockStart(1, { type: 'thinking', thinking: '', signature: '' }),
      delta(1, { type: 'signature_delta', signature: 'sig' }),
      blockStop(1),
      ...textBlock(2, 'ok'),
      messageDelta('end_turn'),
      stop,
    );
    const run = translateBytes([bytes]);
    assert.deepEqual(run.translator.response().output.slice(0, 2), [
      { type: 'reasoning', id: 'rs_test_0', summary: [], encrypted_content: 'sealed:{"type":"redacted_thinking","data":"opaque"}' },
      { type: 'reasoning', id: 'rs_test_1', summary: [], encrypted_content: 'sealed:{"type":"thinking","thinking":"","signature":"sig"}' },
    ]);
    assertAgreesWithWhole(bytes, run);
    assert.deepEqual(translateBytes([bytes], { exposeSeals: undefined }).translator.response().output.map((item) => item.type), ['message']);
  });

  it('streams tool input as argument deltas and gives a call without input "{}"', () => {
    const bytes = upstream(start(), ...toolBlock(0, 'toolu_a', 'shell', '{"command": ', '["ls"]}'), ...toolBlock(1, 'toolu_b', 'shell', ''), messageDelta('tool_use'), stop);
    const run = translateBytes([bytes]);
    const assembled = assembleResponsesStream(run.output);
    assert.deepEqual(assembled.final.output.map((item) => (item.type === 'function_call' ? [item.call_id, item.arguments] : [])), [
      ['toolu_a', '{"command": ["ls"]}'],
      ['toolu_b', '{}'],
    ]);
    assert.equal(assembled.final.status, 'completed');
    assertAgreesWithWhole(bytes, run);
  });

  it('returns custom, namespaced and local shell tools as the client declared them', () => {
    const patch = '*** Begin Patch\n*** End Patch\n';
    const bytes = upstream(
      start(),
      ...toolBlock(0, 'toolu_p', 'apply_patch', '{"input": "', JSON.stringify(patch).slice(1, 20), JSON.stringify(patch).slice(20), '}'),
      ...toolBlock(1, 'toolu_g', 'github__create_issue', '{"title":"t"}'),
      ...toolBlock(2, 'toolu_s', 'local_shell', '{"command":["pwd"]}'),
      messageDelta('tool_use'),
      stop,
    );
    const run = translateBytes([bytes]);
    const assembled = assembleResponsesStream(run.output);
    assert.deepEqual(assembled.final.output, [
      { type: 'custom_tool_call', id: 'ctc_test_0', call_id: 'toolu_p', name: 'apply_patch', input: patch },
      { type: 'function_call', id: 'fc_test_1', call_id: 'toolu_g', name: 'create_issue', arguments: '{"title":"t"}', status: 'completed', namespace: 'github' },
      { type: 'local_shell_call', id: 'lsh_test_2', call_id: 'toolu_s', action: { type: 'exec', command: ['pwd'], env: {} }, status: 'completed' },
    ]);
    const streamed = assembled.events.filter((event) => event.data['type'] === 'response.custom_tool_call_input.delta').map((event) => event.data['delta']).join('');
    assert.equal(streamed, patch);
    assertAgreesWithWhole(bytes, run);
  });

  it('leaves server tool blocks out', () => {
    const { translator } = translate(
      start(),
      blockStart(0, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
      delta(0, { type: 'input_json_delta', partial_json: '{"query":"x"}' }),
      blockStop(0),
      blockStart(1, { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] }),
      blockStop(1),
      ...textBlock(2, 'Found it.'),
      messageDelta('end_turn'),
      stop,
    );
    assert.deepEqual(translator.response().output.map((item) => item.type), ['message']);
  });
});

describe('createMessagesToResponsesStream agrees with the whole-answer translator', () => {
  const thinking = [blockStart(0, { type: 'thinking', thinking: '', signature: '' }), delta(0, { type: 'thinking_delta', thinking: 'Plan.' }), delta(0, { type: 'signature_delta', signature: 's' }), blockStop(0)];
  const cases: Record<string, Json[]> = {
    'an empty answer': [start(), messageDelta('end_turn'), stop],
    'thinking, text and a tool call with cache usage': [start({ input_tokens: 3, cache_read_input_tokens: 50, output_tokens: 1 }), ...thinking, ...textBlock(1, 'Running.'), ...toolBlock(2, 't1', 'shell', '{"command":["ls"]}'), messageDelta('tool_use', { output_tokens: 30, output_tokens_details: { thinking_tokens: 10 } }), stop],
    'a custom tool call': [start(), ...toolBlock(0, 'p', 'apply_patch', '{"input": "*** Begin', ' Patch\\n"}'), messageDelta('tool_use'), stop],
    'a namespaced and a local shell call': [start(), ...toolBlock(0, 'g', 'github__create_issue', '{"title":"t"}'), ...toolBlock(1, 's', 'local_shell', '{"command":["pwd"]}'), messageDelta('tool_use'), stop],
    'a refusal after text': [start(), ...textBlock(0, 'Well'), messageDelta('refusal', { output_tokens: 2 }, { stop_details: { explanation: 'No.' } }), stop],
    'a refusal after a tool call': [start(), ...toolBlock(0, 't', 'shell', '{}'), messageDelta('refusal'), stop],
    'max tokens in text': [start(), ...textBlock(0, 'cut'), messageDelta('max_tokens'), stop],
  };
  for (const [name, events] of Object.entries(cases)) {
    it(`assembles ${name} to the whole-answer translation`, () => {
      const bytes = upstream(...events);
      assertAgreesWithWhole(bytes, translateBytes([bytes]));
    });
  }
});

describe('createMessagesToResponsesStream stop reasons and usage', () => {
  it('makes max_tokens incomplete (max_output_tokens) with the cut call incomplete', () => {
    const { output } = translate(start(), ...textBlock(0, 'a'), blockStart(1, { type: 'tool_use', id: 'toolu_1', name: 'shell', input: {} }), delta(1, { type: 'input_json_delta', partial_json: '{"comm' }), messageDelta('max_tokens'), stop);
    const final = assembleResponsesStream(output).final;
    assert.deepEqual([final.status, final.incomplete_details], ['incomplete', { reason: 'max_output_tokens' }]);
    assert.deepEqual(final.output.map((item) => ('status' in item ? item.status : '')), ['completed', 'incomplete']);
  });

  it('makes a refusal incomplete (content_filter) with a refusal part: the explanation when given, else a fixed sentence', () => {
    const explained = translate(start(), ...textBlock(0, 'Hi'), messageDelta('refusal', { output_tokens: 1 }, { stop_details: { type: 'refusal', explanation: 'Not allowed.' } }), stop);
    const final = assembleResponsesStream(explained.output).final;
    assert.deepEqual(final.incomplete_details, { reason: 'content_filter' });
    assert.deepEqual(final.output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'Hi', annotations: [], logprobs: [] }, { type: 'refusal', refusal: 'Not allowed.' }] }]);
    const bare = assembleResponsesStream(translate(start(), messageDelta('refusal'), stop).output).final;
    assert.deepEqual(bare.output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'incomplete', content: [{ type: 'refusal', refusal: 'The model declined to answer this request.' }] }]);
  });

  it('completes end_turn, stop_sequence, tool_use and pause_turn', () => {
    for (const reason of ['end_turn', 'stop_sequence', 'tool_use', 'pause_turn']) {
      assert.equal(assembleResponsesStream(translate(start(), ...textBlock(0, 'a'), messageDelta(reason), stop).output).final.status, 'completed', reason);
    }
  });

  it('reports usage with cached tokens inside input_tokens and thinking tokens as reasoning tokens', () => {
    const { output, translator } = translate(
      start({ input_tokens: 6, output_tokens: 1, cache_read_input_tokens: 4, cache_creation_input_tokens: 2 }),
      ...textBlock(0, 'a'),
      messageDelta('end_turn', { output_tokens: 9, output_tokens_details: { thinking_tokens: 5 } }),
      stop,
    );
    assert.deepEqual(assembleResponsesStream(output).final.usage, {
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 2 },
      output_tokens: 9,
      output_tokens_details: { reasoning_tokens: 5 },
      total_tokens: 21,
    });
    assert.deepEqual(translator.usage(), { inputTokens: 6, outputTokens: 9, cacheReadTokens: 4, cacheCreationTokens: 2 });
  });

  it('completes on message_stop without message_delta, and on a clean end after message_delta', () => {
    assert.equal(eventTypes(translate(start(), ...textBlock(0, 'a'), stop).output).at(-1), 'response.completed');
    assert.equal(eventTypes(translate(start(), ...textBlock(0, 'a'), messageDelta('end_turn')).output).at(-1), 'response.completed');
  });
});

describe('createMessagesToResponsesStream failures', () => {
  it('turns an error event into response.failed, naming overload a server_error and a rate limit rate_limit_exceeded', () => {
    const cases: Array<[string, string]> = [['overloaded_error', 'server_error'], ['rate_limit_error', 'rate_limit_exceeded'], ['api_error', 'server_error']];
    for (const [type, code] of cases) {
      const run = translate(start(), ...textBlock(0, 'partial'), { type: 'error', error: { type, message: 'nope' } });
      const final = assembleResponsesStream(run.output).final;
      assert.deepEqual(final.error, { code, message: 'nope' });
      assert.equal(final.output[0]?.type === 'message' ? final.output[0].status : '', 'incomplete');
      assert.equal(run.translator.failed, true);
    }
  });

  it('treats a body that ends before message_delta as a failed response', () => {
    const { output, translator } = translate(start(), ...textBlock(0, 'a'));
    assert.match(assembleResponsesStream(output).final.error?.message ?? '', /ended before the answer was complete/);
    assert.equal(translator.failed, true);
  });

  it('fails on data that is not JSON and writes nothing after; fail() later writes nothing', () => {
    const bytes = Buffer.concat([upstream(start()), Buffer.from('event: content_block_start\ndata: {"type":\n\n'), upstream(...textBlock(0, 'late'))]);
    const run = translateBytes([bytes]);
    assert.match(assembleResponsesStream(run.output).final.error?.message ?? '', /not valid JSON/);
    assert.ok(!run.output.includes('late'));
    const length = run.output.length;
    run.translator.fail('again');
    assert.equal(run.output.length, length);
  });

  it('drops tool input for a block that is not the open call, with a warning', () => {
    const { warnings, translator } = translate(start(), ...toolBlock(0, 'toolu_1', 'shell', '{}'), ...textBlock(1, 'x'), delta(0, { type: 'input_json_delta', partial_json: '{"late":1}' }), messageDelta('end_turn'), stop);
    assert.equal(warnings.length, 1);
    assert.equal(translator.response().output[0]?.type === 'function_call' ? translator.response().output[0]?.type : '', 'function_call');
  });
});
