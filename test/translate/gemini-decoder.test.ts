import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createGeminiStreamDecoder, decodeGeminiAnswer } from '../../src/translate/gemini-decoder.ts';
import { decodeStream, recordingSink } from '../helpers/answer-events.ts';
import type { RecordedEvent } from '../helpers/answer-events.ts';
import { geminiFixture } from '../helpers/fake-upstream.ts';

type Json = Record<string, unknown>;

function stream(...responses: Array<Json | string>): string {
  return responses.map((response) => `data: ${typeof response === 'string' ? response : JSON.stringify(response)}\r\n\r\n`).join('');
}

function response(parts: Json[] | undefined, extra: Json = {}, candidate: Json = {}): Json {
  return { candidates: [{ ...(parts === undefined ? {} : { content: { parts, role: 'model' } }), index: 0, ...candidate }], modelVersion: 'gemini-up', responseId: 'resp-1', ...extra };
}

function whole(answer: unknown, warnings: string[] = []): RecordedEvent[] {
  const sink = recordingSink();
  decodeGeminiAnswer(answer, sink, { onWarning: (message) => warnings.push(message) });
  return sink.events;
}

function decode(sse: string, warnings: string[] = []): RecordedEvent[] {
  return decodeStream((sink) => createGeminiStreamDecoder(sink, { onWarning: (message) => warnings.push(message) }), sse);
}

const without = (events: RecordedEvent[], ...names: string[]): RecordedEvent[] => events.filter(([name]) => !names.includes(name));

describe('the Gemini decoder, on the hand-made fixtures', () => {
  it('reads a streamed text answer: its model, each piece, the usage of every event, and STOP as end_turn', () => {
    const events = decode(geminiFixture('text.sse').toString());
    assert.deepEqual(events[0], ['start', 'gemini-2.5-flash-lite']);
    assert.deepEqual(without(events, 'usage', 'start'), [
      ['text', 'The sky looks blue because air'],
      ['text', ' scatters the short, blue wavelengths of sunlight much more than'],
      ['text', ' the long, red ones (Rayleigh scattering).'],
      ['stop', { reason: 'end_turn' }],
      ['end'],
    ]);
    assert.deepEqual(events.filter(([name]) => name === 'usage').at(-1), ['usage', { inputTokens: 8, outputTokens: 29, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 }]);
  });

  it('reads a function call whole, with its thought signature as the call\'s state, and a turn ending in calls (STOP) as tool_use', () => {
    const events = without(decode(geminiFixture('function-call.sse').toString()), 'usage', 'start');
    const start = events[0] as [string, Json];
    assert.equal(start[0], 'callStart');
    assert.equal(start[1]['name'], 'get_weather');
    assert.match(String(start[1]['id']), /^call_[0-9a-f]{24}$/);
    assert.deepEqual(start[1]['state'], { kind: 'thought-signature', signature: JSON.parse(geminiFixture('function-call.json').toString()).candidates[0].content.parts[0].thoughtSignature });
    assert.deepEqual(events.slice(1), [['callArguments', '{"location":"Boston, MA","unit":"celsius"}'], ['callEnd'], ['stop', { reason: 'tool_use' }], ['end']]);
  });

  it('makes the same id for a call without one, streamed or whole, and another for another answer', () => {
    const idOf = (events: RecordedEvent[]): unknown => (events.find(([name]) => name === 'callStart')?.[1] as Json)['id'];
    const streamed = idOf(decode(geminiFixture('function-call.sse').toString()));
    const answer = JSON.parse(geminiFixture('function-call.json').toString()) as Json;
    assert.equal(idOf(whole({ ...answer, responseId: 'b36LacjwM668nsEP2tbsgQQ' })), streamed);
    assert.notEqual(idOf(whole(answer)), streamed, 'the whole fixture is another answer (another responseId)');
    assert.equal(idOf(whole(answer)), idOf(whole(answer)));
  });

  it('keeps an id the upstream gave (Vertex)', () => {
    const events = whole(response([{ functionCall: { id: 'fc-7', name: 'f', args: {} } }], {}, { finishReason: 'STOP' }));
    assert.equal((events[1]?.[1] as Json)['id'], 'fc-7');
  });

  it('reads two calls of one step, only the first signed', () => {
    const starts = decode(geminiFixture('parallel-calls.sse').toString()).filter(([name]) => name === 'callStart').map(([, call]) => call as Json);
    assert.deepEqual(starts.map((call) => [call['name'], call['state'] === undefined]), [['get_weather', false], ['get_weather', true]]);
    assert.notEqual(starts[0]?.['id'], starts[1]?.['id']);
  });

  it('reads thought parts as reasoning, and the signature on the answer\'s text as an annotation of it', () => {
    const events = without(decode(geminiFixture('thinking.sse').toString()), 'usage', 'start');
    assert.deepEqual(events.map(([name]) => name), ['reasoning', 'reasoning', 'text', 'text', 'annotate', 'stop', 'end']);
    assert.equal((events[4]?.[1] as Json)['kind'], 'thought-signature');
  });

  it('counts thinking as reasoning inside the output, and cached prompt tokens apart from the input', () => {
    const usage = whole(response([{ text: 'hi' }], { usageMetadata: { promptTokenCount: 100, cachedContentTokenCount: 60, candidatesTokenCount: 5, thoughtsTokenCount: 20, totalTokenCount: 125 } }, { finishReason: 'STOP' }))
      .find(([name]) => name === 'usage');
    assert.deepEqual(usage?.[1], { inputTokens: 40, outputTokens: 25, cacheReadTokens: 60, cacheCreationTokens: 0, reasoningTokens: 20 });
  });

  it('reads SAFETY with no content as a content filter, MAX_TOKENS as the output cap', () => {
    assert.deepEqual(without(whole(JSON.parse(geminiFixture('safety.json').toString())), 'usage'), [['start', 'gemini-2.5-flash'], ['stop', { reason: 'content_filter' }], ['end']]);
    assert.deepEqual(whole(JSON.parse(geminiFixture('max-tokens.json').toString())).at(-2), ['stop', { reason: 'max_tokens' }]);
  });

  it('tells grounding with Google Search once, after the text it backs and before the stop, streamed and whole alike', () => {
    const search = {
      queries: ['UEFA Euro 2024 winner', 'who won euro 2024'],
      sources: [
        { url: 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQFq1aljazeera', title: 'aljazeera.com' },
        { url: 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQHm2uefa', title: 'uefa.com' },
      ],
      citations: [
        { text: 'Spain won Euro 2024, defeating England 2-1 in the final.', sources: [0] },
        { text: 'This victory marks Spain\'s record fourth European Championship title.', sources: [0, 1] },
      ],
    };
    for (const events of [decode(geminiFixture('grounding.sse').toString()), whole(JSON.parse(geminiFixture('grounding.json').toString()))]) {
      const names = without(events, 'usage', 'start', 'text').map(([name]) => name);
      assert.deepEqual(names, ['search', 'stop', 'end']);
      assert.deepEqual(events.find(([name]) => name === 'search')?.[1], search);
    }
    // Metadata without queries or pages is no search.
    assert.deepEqual(without(whole(response([{ text: 'x' }], {}, { groundingMetadata: { searchEntryPoint: {} }, finishReason: 'STOP' })), 'usage', 'start', 'text').map(([name]) => name), ['stop', 'end']);
  });
});

describe('the Gemini decoder, on what the fixtures do not show', () => {
  it('reads the finish reasons of Google\'s filters and of calls it could not form', () => {
    const stopOf = (finishReason: string): unknown => whole(response([{ text: 'x' }], {}, { finishReason })).at(-2)?.[1];
    for (const reason of ['RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'LANGUAGE']) assert.deepEqual(stopOf(reason), { reason: 'content_filter' }, reason);
    for (const reason of ['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS']) assert.deepEqual(stopOf(reason), { reason: 'malformed_tool_call' }, reason);
    for (const reason of ['OTHER', 'FINISH_REASON_UNSPECIFIED', 'A_REASON_FROM_THE_FUTURE']) assert.deepEqual(stopOf(reason), { reason: 'end_turn' }, reason);
  });

  it('stops a prompt blocked before any candidate as a content filter, streamed and whole', () => {
    const blocked = { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, modelVersion: 'g' };
    assert.deepEqual(without(decode(stream(blocked)), 'usage', 'start'), [['stop', { reason: 'content_filter' }], ['end']]);
    assert.deepEqual(without(whole(blocked), 'usage', 'start'), [['stop', { reason: 'content_filter' }], ['end']]);
  });

  it('fails the answer on an error event, with its message and its status as the type', () => {
    const events = decode(stream(response([{ text: 'Hel' }]), { error: { code: 429, message: 'Resource has been exhausted', status: 'RESOURCE_EXHAUSTED' } }));
    assert.deepEqual(events.at(-1), ['fail', 'Resource has been exhausted', 'rate_limit_error']);
    assert.deepEqual(decode(stream({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })).at(-1), ['fail', 'The model is overloaded.', 'overloaded_error']);
    assert.deepEqual(decode(stream({ error: { code: 500, message: 'Internal error', status: 'INTERNAL' } })).at(-1), ['fail', 'Internal error']);
  });

  it('fails an answer whose stream ends before a finish reason, or holds what is not a JSON object', () => {
    assert.deepEqual(decode(stream(response([{ text: 'Hel' }]))).at(-1), ['fail', 'upstream stream ended before the answer was complete']);
    assert.equal(decode(stream('[1, 2]')).at(-1)?.[0], 'fail');
    assert.equal(decode(stream('{"candidates": [')).at(-1)?.[0], 'fail');
  });

  it('passes on a usage report that comes after the finish, and reads nothing after a failure', () => {
    const events = decode(stream(response([{ text: 'Hi' }], {}, { finishReason: 'STOP' }), { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 }, modelVersion: 'gemini-up' }));
    assert.deepEqual(events.slice(-3), [['stop', { reason: 'end_turn' }], ['usage', { inputTokens: 3, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 }], ['end']]);
    const failed = decode(stream({ error: { message: 'x' } }, response([{ text: 'after' }], {}, { finishReason: 'STOP' })));
    assert.deepEqual(without(failed, 'start'), [['fail', 'x']]);
  });

  it('writes Google\'s code execution as fenced text, and drops generated media with one warning', () => {
    const warnings: string[] = [];
    const events = whole(response([
      { executableCode: { language: 'PYTHON', code: 'print(1 + 1)' } },
      { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '2\n' } },
      { inlineData: { mimeType: 'image/png', data: 'iVBO' } },
      { inlineData: { mimeType: 'image/png', data: 'iVBO' } },
      { text: 'Two.' },
    ], {}, { finishReason: 'STOP' }), warnings);
    assert.deepEqual(events.filter(([name]) => name === 'text'), [['text', '\n```python\nprint(1 + 1)\n```\n'], ['text', '\n```\n2\n\n```\n'], ['text', 'Two.']]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /inlineData/);
  });

  it('ends a thought part that carries a signature with that state, and reads an empty signed text part as an annotation', () => {
    const events = without(whole(response([{ text: 'hmm', thought: true, thoughtSignature: 'c2ln' }, { text: '', thoughtSignature: 'c2ln2' }], {}, { finishReason: 'STOP' })), 'start', 'stop', 'end');
    assert.deepEqual(events, [['reasoning', 'hmm'], ['reasoningEnd', { kind: 'thought-signature', signature: 'c2ln' }], ['annotate', { kind: 'thought-signature', signature: 'c2ln2' }]]);
  });

  it('reads a whole answer leniently: nothing in it is still an answer that ends', () => {
    assert.deepEqual(whole('not an answer'), [['start'], ['stop', { reason: 'end_turn' }], ['end']]);
  });
});
