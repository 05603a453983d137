/**
 * Reading a Responses event stream the way the openai SDK's ResponseStream does
 * (src/internal/responses/response-accumulator.ts in openai/openai-node): the snapshot starts at
 * `response.created`, items are appended at their `output_index`, deltas go to the part they name,
 * `.done` events set the whole value, and a malformed sequence is an error. On top of the SDK's
 * checks, the rules of responses.md "Stream": sequence numbers from 0 by one, created and
 * in_progress first, one item open at a time, exactly one terminal event, last, whose response
 * output equals what the events built.
 */
import assert from 'node:assert/strict';
import type { ResponsesRequest, ResponsesResponse } from '../../src/formats/responses.ts';
import type { SseEvent } from '../../src/sse/parser.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import type { CarriedItem } from '../../src/translate/carried.ts';
import { type ResponsesAnswerOptions, responseEcho } from '../../src/translate/responses-output.ts';
import { prepareTools, type ToolNames } from '../../src/translate/responses-tools.ts';

export interface ResponsesEventRecord { event: string | undefined; data: Record<string, unknown> }

export interface AssembledStream {
  events: ResponsesEventRecord[];
  /** The response of the terminal event. */
  final: ResponsesResponse;
  /** The output the events built, item by item. */
  output: Array<Record<string, unknown>>;
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Item type each item-scoped event must target (the SDK's `expectedOutputItemTypes`). */
const ITEM_TYPE_OF_EVENT: Readonly<Record<string, string>> = {
  'response.content_part.added': 'message',
  'response.content_part.done': 'message',
  'response.output_text.delta': 'message',
  'response.output_text.done': 'message',
  'response.refusal.delta': 'message',
  'response.refusal.done': 'message',
  'response.function_call_arguments.delta': 'function_call',
  'response.function_call_arguments.done': 'function_call',
  'response.custom_tool_call_input.delta': 'custom_tool_call',
  'response.custom_tool_call_input.done': 'custom_tool_call',
  'response.reasoning_summary_part.added': 'reasoning',
  'response.reasoning_summary_part.done': 'reasoning',
  'response.reasoning_summary_text.delta': 'reasoning',
  'response.reasoning_summary_text.done': 'reasoning',
};

export function parseResponsesEvents(output: string): ResponsesEventRecord[] {
  const events: SseEvent[] = [];
  const parser = createSseParser({ onEvent: (event) => events.push(event) });
  parser.feed(Buffer.from(output));
  parser.end();
  return events.map((event) => ({ event: event.event, data: JSON.parse(event.data) as Record<string, unknown> }));
}

type Part = Record<string, unknown> & { text?: string; refusal?: string };

/** Assembles the stream, asserting every rule on the way; returns the terminal response and the built output. */
export function assembleResponsesStream(output: string): AssembledStream {
  assert.ok(output.endsWith('\n\n'), 'the output ends with a blank line');
  assert.ok(!output.includes('[DONE]'), 'no [DONE] in a Responses stream');
  const events = parseResponsesEvents(output);
  assert.ok(events.length >= 3, 'created, in_progress and a terminal event at least');
  let snapshot: ResponsesResponse | undefined;
  const built: Array<Record<string, unknown>> = [];
  const ids = new Set<string>();
  const callIds = new Set<string>();
  let openIndex: number | undefined;
  let final: ResponsesResponse | undefined;

  events.forEach(({ event, data }, position) => {
    const type = data['type'];
    assert.equal(event, type, `event ${position}: the event name is data.type`);
    assert.equal(data['sequence_number'], position, `event ${position}: sequence numbers count from 0 by one`);
    assert.equal(final, undefined, `event ${position} (${String(type)}) comes after the terminal event`);
    if (position === 0) assert.equal(type, 'response.created', 'the first event is response.created');
    if (position === 1) assert.equal(type, 'response.in_progress', 'the second event is response.in_progress');

    if (type === 'response.created' || type === 'response.in_progress') {
      const response = data['response'] as ResponsesResponse;
      assert.equal(response.status, 'in_progress');
      assert.deepEqual(response.output, []);
      snapshot = response;
      return;
    }
    assert.ok(snapshot !== undefined, 'response.created comes before anything else');

    if (TERMINAL.has(String(type))) {
      assert.equal(openIndex, undefined, 'every item is done before the terminal event');
      const response = data['response'] as ResponsesResponse;
      assert.equal(`response.${response.status}`, type, 'the terminal event names the response status');
      assert.deepEqual(response.output, built, 'the terminal response holds the output the events built');
      assert.equal(response.id, snapshot.id);
      assert.ok(response.usage !== null && typeof response.usage === 'object', 'the terminal response carries usage');
      if (type === 'response.failed') assert.ok(response.error !== null && typeof response.error.message === 'string' && typeof response.error.code === 'string');
      else assert.equal(response.error, null);
      final = response;
      return;
    }

    if (type === 'response.output_item.added') {
      assert.equal(openIndex, undefined, `event ${position}: an item is added while another is open (items interleave)`);
      assert.equal(data['output_index'], built.length, 'items are appended in order');
      const item = structuredClone(data['item']) as Record<string, unknown>;
      assert.equal(typeof item['id'], 'string');
      assert.ok(!ids.has(String(item['id'])), `item id ${String(item['id'])} is unique`);
      ids.add(String(item['id']));
      if (item['type'] === 'function_call' || item['type'] === 'custom_tool_call' || item['type'] === 'local_shell_call') {
        const key = `${String(item['type'])}:${String(item['call_id'])}`;
        assert.ok(typeof item['call_id'] === 'string' && item['call_id'] !== '', 'a call has a call_id');
        assert.ok(!callIds.has(key), `call_id ${key} is unique`);
        callIds.add(key);
      }
      if (item['type'] === 'message') assert.deepEqual(item['content'], [], 'a message is added with empty content');
      if (item['type'] === 'function_call') assert.equal(item['arguments'], '', 'a function call is added with empty arguments');
      if (item['type'] === 'custom_tool_call') assert.equal(item['input'], '', 'a custom tool call is added with empty input');
      if (item['type'] === 'reasoning') assert.deepEqual(item['summary'], [], 'a reasoning item is added with an empty summary');
      built.push(item);
      openIndex = built.length - 1;
      return;
    }

    assert.equal(data['output_index'], openIndex, `event ${position} (${String(type)}) targets the open item`);
    const item = built[openIndex ?? -1] as Record<string, unknown>;
    if (type === 'response.output_item.done') {
      const done = data['item'] as Record<string, unknown>;
      assert.equal(done['type'], item['type'], 'the done item has the added item\'s type');
      assert.equal(done['id'], item['id'], 'the done item has the added item\'s id');
      assert.equal(done['call_id'], item['call_id'], 'the done item has the added item\'s call_id');
      if (item['type'] === 'message') assert.deepEqual(done['content'], item['content'], 'the done message holds the parts the events built');
      if (item['type'] === 'reasoning') assert.deepEqual(done['summary'], item['summary'], 'the done reasoning holds the summary the events built');
      if (item['type'] === 'function_call') assert.equal(done['arguments'], item['arguments'], 'the done call holds the arguments the deltas built');
      built[openIndex ?? -1] = structuredClone(done);
      openIndex = undefined;
      return;
    }

    assert.equal(data['item_id'], item['id'], `event ${position} (${String(type)}) names the open item`);
    const expected = ITEM_TYPE_OF_EVENT[String(type)];
    assert.ok(expected !== undefined, `event ${position}: "${String(type)}" is a known event type`);
    assert.equal(item['type'], expected, `event ${position} (${String(type)}) targets a ${expected}`);
    const content = item['content'] as Part[] | undefined;
    const summary = item['summary'] as Part[] | undefined;
    switch (type) {
      case 'response.content_part.added':
        assert.equal(data['content_index'], content?.length, 'content parts are appended in order');
        content?.push(structuredClone(data['part']) as Part);
        break;
      case 'response.content_part.done':
        assert.deepEqual(data['part'], content?.[Number(data['content_index'])], 'content_part.done holds the part the deltas built');
        break;
      case 'response.output_text.delta':
      case 'response.output_text.done': {
        const part = content?.[Number(data['content_index'])];
        assert.equal(part?.['type'], 'output_text');
        assert.ok(Array.isArray(data['logprobs']), 'text events carry logprobs');
        if (type === 'response.output_text.delta') (part as Part).text += String(data['delta']);
        else assert.equal(data['text'], part?.text, 'output_text.done holds the text the deltas built');
        break;
      }
      case 'response.refusal.delta':
      case 'response.refusal.done': {
        const part = content?.[Number(data['content_index'])];
        assert.equal(part?.['type'], 'refusal');
        if (type === 'response.refusal.delta') (part as Part).refusal += String(data['delta']);
        else assert.equal(data['refusal'], part?.refusal, 'refusal.done holds the refusal the deltas built');
        break;
      }
      case 'response.function_call_arguments.delta':
        item['arguments'] = String(item['arguments']) + String(data['delta']);
        break;
      case 'response.function_call_arguments.done':
        assert.equal(data['arguments'], item['arguments'], 'function_call_arguments.done holds the arguments the deltas built');
        assert.equal(data['name'], item['name']);
        break;
      case 'response.custom_tool_call_input.delta':
        item['input'] = String(item['input']) + String(data['delta']);
        break;
      case 'response.custom_tool_call_input.done':
        // The SDK takes the done input as the whole input (the deltas can be a best-effort decode).
        item['input'] = data['input'];
        break;
      case 'response.reasoning_summary_part.added':
        assert.equal(data['summary_index'], summary?.length, 'summary parts are appended in order');
        summary?.push(structuredClone(data['part']) as Part);
        break;
      case 'response.reasoning_summary_part.done':
        assert.deepEqual(data['part'], summary?.[Number(data['summary_index'])]);
        break;
      case 'response.reasoning_summary_text.delta': {
        const part = summary?.[Number(data['summary_index'])];
        assert.ok(part !== undefined, 'summary text goes to an added summary part');
        part.text += String(data['delta']);
        break;
      }
      case 'response.reasoning_summary_text.done':
        assert.equal(data['text'], summary?.[Number(data['summary_index'])]?.text);
        break;
    }
  });

  assert.ok(final !== undefined, 'the stream ends with exactly one terminal event');
  return { events, final, output: built };
}

/** Event types in order, for compact assertions. */
export function eventTypes(output: string): string[] {
  return parseResponsesEvents(output).map((event) => String(event.data['type']));
}

/**
 * A deterministic stand-in for the AES seal, so answers can be compared whole: the item as the
 * thinking block it stands for (reasoning text as an unsigned one), other state as it is.
 */
export const FAKE_SEAL = (item: CarriedItem): string => `sealed:${JSON.stringify(fakeSealed(item))}`;

function fakeSealed(item: CarriedItem): unknown {
  if (item.kind === 'thinking') return { type: 'thinking', thinking: item.thinking, signature: item.signature };
  if (item.kind === 'reasoning') return { type: 'thinking', thinking: item.text ?? '', signature: '' };
  if (item.kind === 'redacted-thinking') return { type: 'redacted_thinking', data: item.data };
  return item;
}

/** The tools of a Codex-like request: a function, the freeform apply_patch, an MCP namespace, local_shell. */
export const CODEX_TOOLS: NonNullable<ResponsesRequest['tools']> = [
  { type: 'function', name: 'shell', description: 'Runs a shell command.', parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'] }, strict: false },
  { type: 'custom', name: 'apply_patch', description: 'Edit files with a patch.', format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch' } },
  { type: 'namespace', name: 'github', description: 'The GitHub MCP server.', tools: [{ type: 'function', name: 'create_issue', description: 'Opens an issue.', parameters: { type: 'object', properties: { title: { type: 'string' } } } }] },
  { type: 'local_shell' },
  { type: 'web_search' },
];

/** The tool names the request translators give for CODEX_TOOLS. */
export function codexToolNames(): ToolNames {
  return prepareTools({ model: 'm', tools: CODEX_TOOLS }, () => {}).toolNames;
}

/** Overrides of answer options; an option given as undefined is left out (no seal, a fresh id). */
export type AnswerOverrides = { [K in keyof ResponsesAnswerOptions]?: ResponsesAnswerOptions[K] | undefined };

/** Answer options with a pinned id, clock and seal. */
export function answerOptions(overrides: AnswerOverrides = {}): ResponsesAnswerOptions {
  const options: Record<string, unknown> = {
    model: 'llmux-model',
    echo: responseEcho({ model: 'llmux-model', tools: CODEX_TOOLS }),
    toolNames: codexToolNames(),
    responseId: 'resp_test',
    now: () => 1_700_000_000_000,
    sealItem: FAKE_SEAL,
    exposeSeals: true,
    ...overrides,
  };
  for (const key of Object.keys(options)) if (options[key] === undefined) delete options[key];
  return options as unknown as ResponsesAnswerOptions;
}

/**
 * A response with function arguments compared as JSON (a whole messages answer has its tool input
 * as an object, re-serialized; the stream has the upstream's own spacing). The arguments of a call
 * cut short (status incomplete) are compared as "<cut>": a whole answer cannot carry partial JSON.
 */
export function comparable(response: ResponsesResponse): ResponsesResponse {
  const copy = structuredClone(response);
  for (const item of copy.output) {
    if (item.type !== 'function_call') continue;
    item.arguments = item.status === 'incomplete' ? '<cut>' : JSON.stringify(JSON.parse(item.arguments));
  }
  return copy;
}
