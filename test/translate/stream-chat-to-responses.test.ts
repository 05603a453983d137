import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createSseParser } from '../../src/sse/parser.ts';
import type { ResponsesStreamTranslator } from '../../src/translate/index.ts';
import { chatResponseToResponses, createChatToResponsesStream } from '../../src/translate/index.ts';
import { type AnswerOverrides, answerOptions, assembleResponsesStream, comparable, eventTypes, parseResponsesEvents } from '../helpers/responses-stream.ts';
import { everySplit, randomPieces } from '../helpers/split.ts';
import { chatAnswerFromStream } from '../helpers/upstream-answers.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const GOLDEN = new URL('./golden/chat-to-responses/', import.meta.url);
const UPDATE_GOLDEN = process.env['UPDATE_GOLDEN'] === '1';
/** As in stream-chat-to-messages.test.ts: every offset of small recordings, the ends of large ones. */
const WHOLE_FILE_SPLIT_BYTES = 10 * 1024;
const SPLIT_BUDGET_BYTES = 40 * 1024 * 1024;
const CHAT_FIXTURE = /^(openai|deepseek|xai|groq|azure)-.*\.sse$/;

function edgeSplitBytes(length: number): number {
  return length <= WHOLE_FILE_SPLIT_BYTES ? length : Math.max(64, Math.floor(SPLIT_BUDGET_BYTES / length / 2));
}

interface Run { output: string; translator: ResponsesStreamTranslator; warnings: string[] }

function translateBytes(pieces: Uint8Array[], overrides: AnswerOverrides = {}): Run {
  let output = '';
  const warnings: string[] = [];
  const translator = createChatToResponsesStream({ ...answerOptions(overrides), write: (text) => (output += text), onWarning: (message) => warnings.push(message) });
  const parser = createSseParser({ onEvent: (event) => translator.push(event) });
  for (const piece of pieces) parser.feed(piece);
  parser.end();
  translator.end();
  return { output, translator, warnings };
}

function upstream(...chunks: Array<Record<string, unknown> | string>): Buffer {
  return Buffer.from(chunks.map((chunk) => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`).join(''));
}

function translate(...chunks: Array<Record<string, unknown> | string>): Run {
  return translateBytes([upstream(...chunks)]);
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra };
}

function usageChunk(usage: Record<string, unknown>): Record<string, unknown> {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage };
}

function call(index: number, fields: { id?: string; name?: string; arguments?: string }): Record<string, unknown> {
  const fn: Record<string, unknown> = {};
  if (fields.name !== undefined) fn['name'] = fields.name;
  if (fields.arguments !== undefined) fn['arguments'] = fields.arguments;
  return { index, ...(fields.id === undefined ? {} : { id: fields.id, type: 'function' }), function: fn };
}

/** The stream is well formed, and assembled it equals the whole-answer translation of the same answer. */
function assertAgreesWithWhole(bytes: Buffer, run: Run): void {
  const assembled = assembleResponsesStream(run.output);
  if (run.translator.failed) return;
  const whole = chatResponseToResponses(chatAnswerFromStream(bytes), answerOptions());
  assert.deepEqual(comparable(assembled.final), comparable(whole));
  assert.deepEqual(run.translator.response(), assembled.final, 'response() is the object of the terminal event');
}

describe('createChatToResponsesStream on the recorded chat streams', () => {
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
      assert.equal(whole.translator.finished, true);
    });

    it(`writes ${name} as a well-formed stream that assembles to the whole-answer translation`, () => {
      assertAgreesWithWhole(bytes, whole);
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
      for (const seed of [31, 32, 33]) assert.equal(translateBytes(randomPieces(bytes, seed)).output, whole.output, `seed ${seed}`);
    });
  }
});

describe('createChatToResponsesStream framing', () => {
  it('opens with response.created and response.in_progress carrying the llmux model, never the upstream one', () => {
    const { output } = translate(chunk({ role: 'assistant', content: 'hi' }), chunk({}, 'stop'), '[DONE]');
    const events = parseResponsesEvents(output);
    for (const event of events.slice(0, 2)) {
      const response = event.data['response'] as Record<string, unknown>;
      assert.equal(response['model'], 'llmux-model');
      assert.equal(response['status'], 'in_progress');
      assert.deepEqual(response['output'], []);
      assert.equal(response['id'], 'resp_test');
      assert.equal(response['created_at'], 1_700_000_000);
    }
    assert.equal((events.at(-1)?.data['response'] as Record<string, unknown>)['model'], 'llmux-model');
  });

  it('writes each event as soon as the upstream chunk that causes it arrives', () => {
    const writes: string[] = [];
    const translator = createChatToResponsesStream({ ...answerOptions(), write: (text) => writes.push(text) });
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'a' })) });
    assert.deepEqual(writes.map((text) => text.slice(0, text.indexOf('\n'))), [
      'event: response.created',
      'event: response.in_progress',
      'event: response.output_item.added',
      'event: response.content_part.added',
      'event: response.output_text.delta',
    ]);
    translator.push({ event: undefined, data: JSON.stringify(chunk({ content: 'b' })) });
    assert.equal(writes.length, 6);
    assert.equal(
      writes[5],
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_test_0","output_index":0,"content_index":0,"delta":"b","logprobs":[],"sequence_number":5}\n\n',
    );
  });

  it('gives an answer with no content created, in_progress and completed with an empty output', () => {
    const { output } = translate(chunk({ role: 'assistant', content: '' }), chunk({}, 'stop'), usageChunk({ prompt_tokens: 5, completion_tokens: 0 }), '[DONE]');
    assert.deepEqual(eventTypes(output), ['response.created', 'response.in_progress', 'response.completed']);
    assert.deepEqual(assembleResponsesStream(output).final.output, []);
  });

  it('starts nothing on chunks with empty choices before content (Azure prompt filter)', () => {
    const azure = { id: '', choices: [], created: 0, model: '', object: '', prompt_filter_results: [] };
    const writes: string[] = [];
    const translator = createChatToResponsesStream({ ...answerOptions(), write: (text) => writes.push(text) });
    translator.push({ event: undefined, data: JSON.stringify(azure) });
    assert.equal(writes.length, 0);
  });

  it('finishes at [DONE] without a finish_reason, and on a clean end after finish_reason without [DONE]', () => {
    assert.equal(eventTypes(translate(chunk({ content: 'a' }), '[DONE]').output).at(-1), 'response.completed');
    const run = translate(chunk({ content: 'a' }), chunk({}, 'stop'));
    assert.equal(eventTypes(run.output).at(-1), 'response.completed');
    assert.equal(run.translator.failed, false);
  });

  it('ignores chunks of choices other than index 0 and everything after [DONE]', () => {
    const other = { ...chunk({}), choices: [{ index: 1, delta: { content: 'one' }, finish_reason: 'length' }] };
    const { output } = translate(chunk({ content: 'zero' }), other, chunk({}, 'stop'), '[DONE]', chunk({ content: 'late' }));
    const final = assembleResponsesStream(output).final;
    assert.deepEqual(final.output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'zero', annotations: [], logprobs: [] }] }]);
  });
});

describe('createChatToResponsesStream items', () => {
  it('streams reasoning_content (and Groq\'s reasoning) as a reasoning item with summary text, sealed when a seal is given', () => {
    for (const field of ['reasoning_content', 'reasoning']) {
      const { output } = translate(chunk({ [field]: 'think' }), chunk({ [field]: 'ing' }), chunk({ content: 'ok' }), chunk({}, 'stop'), '[DONE]');
      const final = assembleResponsesStream(output).final;
      assert.deepEqual(final.output[0], {
        type: 'reasoning',
        id: 'rs_test_0',
        summary: [{ type: 'summary_text', text: 'thinking' }],
        encrypted_content: 'sealed:{"type":"thinking","thinking":"thinking","signature":""}',
      });
      assert.equal(final.output[1]?.type, 'message');
    }
    const unsealed = translateBytes([upstream(chunk({ reasoning_content: 'x' }), chunk({}, 'stop'), '[DONE]')], { exposeSeals: undefined });
    assert.deepEqual(assembleResponsesStream(unsealed.output).final.output[0], { type: 'reasoning', id: 'rs_test_0', summary: [{ type: 'summary_text', text: 'x' }] });
  });

  it('puts a call\'s own state (a Gemini thought signature) in a reasoning item before the call, naming its call_id, made up or not; stored when only the store keeps seals', () => {
    const signed = { extra_content: { google: { thought_signature: 'g' } } };
    const { output } = translate(chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'shell', arguments: '{}' }, ...signed }] }), chunk({}, 'tool_calls'), '[DONE]');
    const final = assembleResponsesStream(output).final;
    assert.deepEqual(final.output.map((item) => item.type), ['reasoning', 'function_call']);
    assert.deepEqual(final.output[0], { type: 'reasoning', id: 'rs_test_0', summary: [], encrypted_content: 'sealed:{"kind":"thought-signature","signature":"g","callId":"call_1"}' });
    const madeUp = translate(chunk({ tool_calls: [{ index: 0, function: { name: 'shell', arguments: '{}' }, ...signed }] }), chunk({}, 'tool_calls'), '[DONE]');
    const items = assembleResponsesStream(madeUp.output).final.output;
    assert.equal((items[1] as { call_id: string }).call_id, 'call_test_1');
    assert.match(String((items[0] as { encrypted_content: string }).encrypted_content), /"callId":"call_test_1"/);
    const kept: Array<[string, string]> = [];
    const stored = translateBytes([upstream(chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'shell', arguments: '{}' }, ...signed }] }), chunk({}, 'tool_calls'), '[DONE]')], { exposeSeals: undefined, keepSealed: (id, seal) => kept.push([id, seal]) });
    assert.deepEqual(assembleResponsesStream(stored.output).final.output[0], { type: 'reasoning', id: 'rs_test_0', summary: [] });
    assert.deepEqual(kept, [['rs_test_0', 'sealed:{"kind":"thought-signature","signature":"g","callId":"call_1"}']]);
    const none = translateBytes([upstream(chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'shell', arguments: '{}' }, ...signed }] }), chunk({}, 'tool_calls'), '[DONE]')], { exposeSeals: undefined });
    assert.deepEqual(assembleResponsesStream(none.output).final.output.map((item) => item.type), ['function_call'], 'no item when no seal carries it anywhere');
  });

  it('writes text as a message with one output_text part and empty annotations', () => {
    const { output } = translate(chunk({ content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'), '[DONE]');
    assert.deepEqual(eventTypes(output).slice(2), [
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(assembleResponsesStream(output).final.output[0], { type: 'message', id: 'msg_test_0', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [], logprobs: [] }] });
  });

  it('gives each tool call a function_call item with an fc_ id, the upstream id as call_id, and its arguments as deltas', () => {
    const { output } = translate(
      chunk({ content: 'Let me look.' }),
      chunk({ tool_calls: [call(0, { id: 'call_a', name: 'shell', arguments: '' })] }),
      chunk({ tool_calls: [call(0, { arguments: '{"command":' })] }),
      chunk({ tool_calls: [call(0, { arguments: '["ls"]}' })] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    const assembled = assembleResponsesStream(output);
    assert.deepEqual(assembled.final.output[1], { type: 'function_call', id: 'fc_test_1', call_id: 'call_a', name: 'shell', arguments: '{"command":["ls"]}', status: 'completed' });
    const deltas = assembled.events.filter((event) => event.data['type'] === 'response.function_call_arguments.delta').map((event) => event.data['delta']);
    assert.deepEqual(deltas, ['{"command":', '["ls"]}']);
    assert.equal(assembled.final.status, 'completed');
  });

  it('holds tool calls whose fragments interleave and writes each whole, in index order, never interleaving items', () => {
    const { output, warnings } = translate(
      chunk({ tool_calls: [call(0, { id: 'call_0', name: 'shell', arguments: '{"comm' }), call(1, { id: 'call_1', name: 'shell', arguments: '{"comm' })] }),
      chunk({ tool_calls: [call(0, { arguments: 'and":["a"' }), call(1, { arguments: 'and":["b"]}' })] }),
      chunk({ tool_calls: [call(0, { arguments: ']}' })] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    const assembled = assembleResponsesStream(output);
    assert.deepEqual(assembled.final.output.map((item) => (item.type === 'function_call' ? [item.call_id, JSON.parse(item.arguments)] : [])), [
      ['call_0', { command: ['a'] }],
      ['call_1', { command: ['b'] }],
    ]);
    const call1Deltas = assembled.events.filter((event) => event.data['type'] === 'response.function_call_arguments.delta' && event.data['output_index'] === 1);
    assert.deepEqual(call1Deltas.map((event) => event.data['delta']), ['{"command":["b"]}'], 'the held call comes out whole');
    assert.deepEqual(warnings, []);
  });

  it('streams calls that follow each other live: the next call opens as soon as the one before is complete JSON', () => {
    const writes: string[] = [];
    const translator = createChatToResponsesStream({ ...answerOptions(), write: (text) => writes.push(text) });
    const push = (value: Record<string, unknown>): void => translator.push({ event: undefined, data: JSON.stringify(value) });
    push(chunk({ tool_calls: [call(0, { id: 'call_0', name: 'shell', arguments: '{"command":["a"]}' })] }));
    push(chunk({ tool_calls: [call(1, { id: 'call_1', name: 'shell', arguments: '{"comm' })] }));
    assert.ok(writes.some((text) => text.includes('"type":"response.output_item.added","output_index":1')), 'call 1 is open before the answer ends');
    assert.ok(writes.some((text) => text.includes('"type":"response.function_call_arguments.delta","item_id":"fc_test_1","output_index":1,"delta":"{\\"comm"')));
  });

  it('ignores whitespace for a call already done and drops other late fragments with a warning', () => {
    const { output, warnings } = translate(
      chunk({ tool_calls: [call(0, { id: 'call_0', name: 'shell', arguments: '{}' })] }),
      chunk({ tool_calls: [call(1, { id: 'call_1', name: 'shell', arguments: '{}' })] }),
      chunk({ tool_calls: [call(0, { arguments: ' ' })] }),
      chunk({ tool_calls: [call(0, { arguments: 'x' })] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    assembleResponsesStream(output);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /call_0 after it was complete; dropped/);
  });

  it('tells calls apart by id when the upstream omits the index or repeats index 0', () => {
    const { output } = translate(
      chunk({ tool_calls: [{ id: 'call_1', function: { name: 'shell', arguments: '{"command":' } }] }),
      chunk({ tool_calls: [{ function: { arguments: '["x"]}' } }] }),
      chunk({ tool_calls: [call(0, { id: 'call_2', name: 'shell', arguments: '{}' })] }),
      chunk({ tool_calls: [call(0, { id: 'call_3', name: 'shell', arguments: '{}' })] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    const final = assembleResponsesStream(output).final;
    assert.deepEqual(final.output.map((item) => (item.type === 'function_call' ? [item.call_id, item.arguments] : [])), [
      ['call_1', '{"command":["x"]}'],
      ['call_2', '{}'],
      ['call_3', '{}'],
    ]);
  });

  it('gives a call without an id a call_id made from the response id, and one without arguments "{}"', () => {
    const { output } = translate(chunk({ tool_calls: [{ index: 0, function: { name: 'shell' } }] }), chunk({}, 'tool_calls'), '[DONE]');
    assert.deepEqual(assembleResponsesStream(output).final.output[0], { type: 'function_call', id: 'fc_test_0', call_id: 'call_test_0', name: 'shell', arguments: '{}', status: 'completed' });
  });

  it('returns a custom tool call with the raw input, unwrapping {"input": …} as it streams', () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+say "hi" \\o/ \u00e9\u{1F600}\n*** End Patch';
    const args = JSON.stringify({ input: patch });
    const pieces = [args.slice(0, 3), args.slice(3, 14), args.slice(14, 40), args.slice(40, 41), args.slice(41)];
    const { output } = translate(
      chunk({ tool_calls: [call(0, { id: 'call_p', name: 'apply_patch', arguments: pieces[0] ?? '' })] }),
      ...pieces.slice(1).map((piece) => chunk({ tool_calls: [call(0, { arguments: piece })] })),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    const assembled = assembleResponsesStream(output);
    assert.deepEqual(assembled.final.output[0], { type: 'custom_tool_call', id: 'ctc_test_0', call_id: 'call_p', name: 'apply_patch', input: patch });
    const streamed = assembled.events.filter((event) => event.data['type'] === 'response.custom_tool_call_input.delta').map((event) => String(event.data['delta'])).join('');
    assert.equal(streamed, patch, 'the deltas are the raw input, never JSON');
  });

  it('returns a call of a flattened namespace tool as a function_call with its own name and namespace', () => {
    const { output } = translate(chunk({ tool_calls: [call(0, { id: 'call_g', name: 'github__create_issue', arguments: '{"title":"x"}' })] }), chunk({}, 'tool_calls'), '[DONE]');
    const assembled = assembleResponsesStream(output);
    assert.deepEqual(assembled.final.output[0], { type: 'function_call', id: 'fc_test_0', call_id: 'call_g', name: 'create_issue', arguments: '{"title":"x"}', status: 'completed', namespace: 'github' });
    const done = assembled.events.find((event) => event.data['type'] === 'response.function_call_arguments.done');
    assert.equal(done?.data['name'], 'create_issue');
  });

  it('returns a local_shell call as a local_shell_call item, added whole when its arguments are complete', () => {
    const { output } = translate(
      chunk({ tool_calls: [call(0, { id: 'call_s', name: 'local_shell', arguments: '{"command":["ls","-la"],' })] }),
      chunk({ tool_calls: [call(0, { arguments: '"working_directory":"/tmp","timeout_ms":1000}' })] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    );
    assert.deepEqual(eventTypes(output).slice(2), ['response.output_item.added', 'response.output_item.done', 'response.completed']);
    const final = assembleResponsesStream(output).final;
    assert.deepEqual(final.output[0], {
      type: 'local_shell_call',
      id: 'lsh_test_0',
      call_id: 'call_s',
      action: { type: 'exec', command: ['ls', '-la'], env: {}, timeout_ms: 1000, working_directory: '/tmp' },
      status: 'completed',
    });
  });
});

describe('createChatToResponsesStream stop reasons and usage', () => {
  it('keeps tool calls that end with finish_reason stop a completed answer with the calls', () => {
    const { output } = translate(chunk({ tool_calls: [call(0, { id: 'call_a', name: 'shell', arguments: '{}' })] }), chunk({}, 'stop'), '[DONE]');
    const final = assembleResponsesStream(output).final;
    assert.equal(final.status, 'completed');
    assert.equal(final.output[0]?.type, 'function_call');
  });

  it('makes a refusal incomplete (content_filter) with the refusal as a refusal part', () => {
    const { output } = translate(chunk({ role: 'assistant', content: null, refusal: '' }), chunk({ refusal: "I can't" }), chunk({ refusal: ' help.' }), chunk({}, 'stop'), '[DONE]');
    const final = assembleResponsesStream(output).final;
    assert.equal(final.status, 'incomplete');
    assert.deepEqual(final.incomplete_details, { reason: 'content_filter' });
    assert.deepEqual(final.output, [{ type: 'message', id: 'msg_test_0', role: 'assistant', status: 'incomplete', content: [{ type: 'refusal', refusal: "I can't help." }] }]);
  });

  it('adds a refusal part saying so when content_filter stops an answer without refusal text', () => {
    const { output } = translate(chunk({ content: 'partial' }), chunk({}, 'content_filter'), '[DONE]');
    const final = assembleResponsesStream(output).final;
    assert.deepEqual(final.incomplete_details, { reason: 'content_filter' });
    const message = final.output[0];
    assert.equal(message?.type, 'message');
    assert.deepEqual(message?.type === 'message' ? message.content.map((part) => part.type) : [], ['output_text', 'refusal']);
  });

  it('makes finish_reason length incomplete (max_output_tokens) with the cut item incomplete', () => {
    const { output } = translate(chunk({ content: 'a' }), chunk({ tool_calls: [call(0, { id: 'call_a', name: 'shell', arguments: '{"comm' })] }), chunk({}, 'length'), '[DONE]');
    const final = assembleResponsesStream(output).final;
    assert.equal(final.status, 'incomplete');
    assert.deepEqual(final.incomplete_details, { reason: 'max_output_tokens' });
    assert.deepEqual(final.output.map((item) => ('status' in item ? item.status : '')), ['completed', 'incomplete']);
  });

  it('waits for usage in a later chunk, counts cached tokens inside input_tokens and reports reasoning tokens', () => {
    const usage = { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 3 } };
    const { output, translator } = translate(chunk({ content: 'a' }), chunk({}, 'stop'), usageChunk(usage), '[DONE]');
    assert.deepEqual(assembleResponsesStream(output).final.usage, {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 3 },
      total_tokens: 17,
    });
    assert.deepEqual(translator.usage(), { inputTokens: 6, outputTokens: 7, cacheReadTokens: 4, cacheCreationTokens: 0 });
  });

  it('reports the input estimate and no output when the upstream reports no usage', () => {
    const run = translateBytes([upstream(chunk({ content: 'a' }), chunk({}, 'stop'), '[DONE]')], { estimatedInputTokens: 42 });
    assert.deepEqual(assembleResponsesStream(run.output).final.usage, {
      input_tokens: 42,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 42,
    });
    assert.deepEqual(run.translator.usage(), { inputTokens: 42, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 });
  });
});

describe('createChatToResponsesStream failures', () => {
  it('turns an upstream error chunk into response.failed with error {code, message}, closing the open item incomplete', () => {
    const { output, translator } = translate(chunk({ content: 'a' }), { error: { message: 'boom', type: 'server_error', code: null } }, '[DONE]');
    const final = assembleResponsesStream(output).final;
    assert.equal(final.status, 'failed');
    assert.deepEqual(final.error, { code: 'server_error', message: 'boom' });
    assert.equal(final.output[0]?.type === 'message' ? final.output[0].status : '', 'incomplete');
    assert.equal(translator.failed, true);
    assert.equal(translator.finished, true);
  });

  it('names a rate limit rate_limit_exceeded, which Codex retries', () => {
    const { output } = translate({ error: { message: 'slow down', type: 'rate_limit_error' } });
    assert.deepEqual(assembleResponsesStream(output).final.error, { code: 'rate_limit_exceeded', message: 'slow down' });
  });

  it('treats a clean end before finish_reason or [DONE] as a failed response, never a silent end', () => {
    const { output, translator } = translate(chunk({ content: 'a' }));
    assert.match(assembleResponsesStream(output).final.error?.message ?? '', /ended before the answer was complete/);
    assert.equal(translator.failed, true);
  });

  it('fails on an event that is not JSON and writes nothing after', () => {
    const { output } = translateBytes([Buffer.from(`${upstream(chunk({ content: 'a' })).toString()}data: {"choices":[\n\n${upstream(chunk({ content: 'b' }), '[DONE]').toString()}`)]);
    assert.match(assembleResponsesStream(output).final.error?.message ?? '', /not valid JSON/);
    assert.ok(!output.includes('"delta":"b"'));
  });

  it('fail() before any chunk still writes created and in_progress first, then response.failed; later calls write nothing', () => {
    const writes: string[] = [];
    const translator = createChatToResponsesStream({ ...answerOptions(), write: (text) => writes.push(text) });
    translator.fail('upstream timed out', 'overloaded_error');
    const output = writes.join('');
    assert.deepEqual(eventTypes(output), ['response.created', 'response.in_progress', 'response.failed']);
    assert.deepEqual(assembleResponsesStream(output).final.error, { code: 'server_error', message: 'upstream timed out' });
    const count = writes.length;
    translator.fail('again');
    translator.push({ event: undefined, data: '[DONE]' });
    translator.end();
    assert.equal(writes.length, count);
  });

  it('does nothing on fail() after a normal finish', () => {
    const writes: string[] = [];
    const translator = createChatToResponsesStream({ ...answerOptions(), write: (text) => writes.push(text) });
    translator.push({ event: undefined, data: '[DONE]' });
    const count = writes.length;
    translator.fail('too late');
    assert.equal(writes.length, count);
    assert.equal(translator.failed, false);
  });
});

describe('createChatToResponsesStream agrees with the whole-answer translator', () => {
  const usage = usageChunk({ prompt_tokens: 20, completion_tokens: 9, total_tokens: 29, prompt_tokens_details: { cached_tokens: 8 }, completion_tokens_details: { reasoning_tokens: 4 } });
  const cases: Record<string, Array<Record<string, unknown> | string>> = {
    'an empty answer': [chunk({ role: 'assistant', content: '' }), chunk({}, 'stop'), '[DONE]'],
    'reasoning, text and a tool call with usage': [chunk({ reasoning_content: 'hm' }), chunk({ content: 'Let me run it.' }), chunk({ tool_calls: [call(0, { id: 'c1', name: 'shell', arguments: '{"command":["ls"]}' })] }), chunk({}, 'tool_calls'), usage, '[DONE]'],
    'interleaved tool calls': [
      chunk({ tool_calls: [call(0, { id: 'c0', name: 'shell', arguments: '{"command":' }), call(1, { id: 'c1', name: 'github__create_issue', arguments: '{"title":' })] }),
      chunk({ tool_calls: [call(1, { arguments: '"t"}' }), call(0, { arguments: '["a"]}' })] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ],
    'a custom tool call': [chunk({ tool_calls: [call(0, { id: 'p', name: 'apply_patch', arguments: '{"input":"*** Begin' })] }), chunk({ tool_calls: [call(0, { arguments: ' Patch\\n"}' })] }), chunk({}, 'tool_calls'), '[DONE]'],
    'a local shell call': [chunk({ tool_calls: [call(0, { id: 's', name: 'local_shell', arguments: '{"command":["pwd"]}' })] }), chunk({}, 'tool_calls'), '[DONE]'],
    'tool calls ending with stop': [chunk({ tool_calls: [call(0, { id: 'c', name: 'shell', arguments: '{}' })] }), chunk({}, 'stop'), '[DONE]'],
    'a refusal': [chunk({ content: null, refusal: 'No.' }), chunk({}, 'stop'), '[DONE]'],
    'a content filter stop': [chunk({ content: 'par' }), chunk({}, 'content_filter'), '[DONE]'],
    'max tokens in a tool call': [chunk({ tool_calls: [call(0, { id: 'c', name: 'shell', arguments: '{"comm' })] }), chunk({}, 'length'), '[DONE]'],
  };
  for (const [name, chunks] of Object.entries(cases)) {
    it(`assembles ${name} to the whole-answer translation`, () => {
      const bytes = upstream(...chunks);
      assertAgreesWithWhole(bytes, translateBytes([bytes]));
    });
  }
});

describe('createChatToResponsesStream output encoding', () => {
  it('writes each event\'s data as JSON.stringify would, with awkward text kept whole', () => {
    const awkward = 'say "hi" \\ then\n\ttab \u2028 \u{1F600} \u0001 </script>';
    const bytes = upstream(chunk({ reasoning_content: awkward }), chunk({ content: awkward }), chunk({ tool_calls: [call(0, { id: `call "${awkward}"`, name: 'shell', arguments: JSON.stringify({ command: [awkward] }) })] }), chunk({}, 'tool_calls'), '[DONE]');
    const run = translateBytes([bytes]);
    for (const line of run.output.split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const data = line.slice(6);
      assert.equal(data, JSON.stringify(JSON.parse(data)));
    }
    assertAgreesWithWhole(bytes, run);
  });
});
