import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createGeminiEncoder, type GeminiEncoderOptions } from '../../src/translate/gemini-encoder.ts';
import type { AnswerEvents, AnswerUsage } from '../../src/translate/answer-events.ts';
import { sseEvents } from '../helpers/assemble.ts';
import type { CarriedItem } from '../../src/translate/carried.ts';
import { ANTHROPIC, carryTurn, sealed } from '../helpers/carry.ts';

type Json = Record<string, unknown>;

const USAGE: AnswerUsage = { inputTokens: 10, outputTokens: 30, cacheReadTokens: 4, cacheCreationTokens: 0, reasoningTokens: 20 };

/** The events `tell` gives, written as a stream: each response's JSON. */
function streamed(tell: (encoder: AnswerEvents) => void, options: GeminiEncoderOptions = {}): Json[] {
  let output = '';
  const encoder = createGeminiEncoder({ model: 'llmux-id', responseId: 'r-1', ...options, write: (text) => (output += text) });
  tell(encoder);
  assert.ok(output.endsWith('\n\n'));
  return sseEvents(output).map((event) => JSON.parse(event.data) as Json);
}

function assembled(tell: (encoder: AnswerEvents) => void, options: GeminiEncoderOptions = {}): Json {
  const encoder = createGeminiEncoder({ model: 'llmux-id', responseId: 'r-1', ...options });
  tell(encoder);
  return encoder.answer() as unknown as Json;
}

const partsOf = (response: Json | undefined): Json[] => (((response?.['candidates'] as Json[])[0]?.['content'] as Json)['parts'] as Json[]);
const candidateOf = (response: Json | undefined): Json => (response?.['candidates'] as Json[])[0] as Json;

function textAnswer(encoder: AnswerEvents): void {
  encoder.start('upstream-model');
  encoder.reasoning('Let me think.');
  encoder.text('Hello');
  encoder.text(', world');
  encoder.usage(USAGE);
  encoder.stop({ reason: 'end_turn' });
  encoder.end();
}

describe('the Gemini encoder, streamed', () => {
  it('writes each piece as one whole response naming the llmux model, and the finish with usage last', () => {
    const responses = streamed(textAnswer, { includeThoughts: true });
    assert.deepEqual(responses.map(partsOf), [[{ text: 'Let me think.', thought: true }], [{ text: 'Hello' }], [{ text: ', world' }], [{ text: '' }]]);
    for (const response of responses) assert.deepEqual([response['modelVersion'], response['responseId']], ['llmux-id', 'r-1']);
    assert.deepEqual(responses.slice(0, -1).map((response) => [candidateOf(response)['finishReason'], response['usageMetadata']]), [[undefined, undefined], [undefined, undefined], [undefined, undefined]]);
    const last = responses.at(-1);
    assert.equal(candidateOf(last)['finishReason'], 'STOP');
    assert.deepEqual(last?.['usageMetadata'], { promptTokenCount: 14, candidatesTokenCount: 10, thoughtsTokenCount: 20, cachedContentTokenCount: 4, totalTokenCount: 44 });
  });

  it('leaves thoughts out unless the client asked for them', () => {
    assert.deepEqual(streamed(textAnswer).map(partsOf).flat().filter((part) => part['thought'] === true), []);
  });

  it('counts all output as candidates when the upstream reports no reasoning apart (a messages upstream)', () => {
    const [last] = streamed((encoder) => {
      encoder.usage({ ...USAGE, reasoningTokens: 0 });
      encoder.end();
    });
    assert.deepEqual(last?.['usageMetadata'], { promptTokenCount: 14, candidatesTokenCount: 30, cachedContentTokenCount: 4, totalTokenCount: 44 });
  });

  it('reports the input estimate when the upstream reports no usage', () => {
    const [last] = streamed((encoder) => encoder.end(), { estimatedInputTokens: 42 });
    assert.deepEqual(last?.['usageMetadata'], { promptTokenCount: 42, candidatesTokenCount: 0, totalTokenCount: 42 });
  });

  it('writes a call once whole, named as the client declared it, with its id, and a turn ending in calls as STOP', () => {
    const responses = streamed((encoder) => {
      encoder.callStart({ id: 'toolu_1', name: 'read_file_3a1b2c4d' });
      encoder.callArguments('{"path":');
      encoder.callArguments('"notes.txt"}');
      encoder.callEnd();
      encoder.callStart({ id: undefined, name: 'ls' });
      encoder.callEnd();
      encoder.stop({ reason: 'tool_use' });
      encoder.end();
    }, { toolNames: new Map([['read_file_3a1b2c4d', 'fs.read_file']]) });
    const calls = responses.flatMap(partsOf).filter((part) => part['functionCall'] !== undefined).map((part) => part['functionCall'] as Json);
    assert.deepEqual(calls[0], { name: 'fs.read_file', args: { path: 'notes.txt' }, id: 'toolu_1' });
    assert.deepEqual([calls[1]?.['name'], calls[1]?.['args']], ['ls', {}]);
    assert.match(String(calls[1]?.['id']), /^call_[0-9a-f]{24}$/);
    assert.equal(candidateOf(responses.at(-1))['finishReason'], 'STOP');
  });

  it('sends arguments that are not a JSON object as {}, with a warning naming where they were', () => {
    const warnings: string[] = [];
    const responses = streamed((encoder) => {
      encoder.callStart({ id: 'c', name: 'f', path: 'choices.0.message.tool_calls.0.function.arguments' });
      encoder.callArguments('{"cut": "sho');
      encoder.stop({ reason: 'max_tokens' });
      encoder.end();
    }, { onWarning: (message) => warnings.push(message) });
    assert.deepEqual(responses.flatMap(partsOf)[0], { functionCall: { name: 'f', args: {}, id: 'c' } });
    assert.equal(candidateOf(responses.at(-1))['finishReason'], 'MAX_TOKENS');
    assert.deepEqual(warnings, ['choices.0.message.tool_calls.0.function.arguments: not valid JSON; sent to the client as {}']);
  });

  it('says why it stopped in Gemini\'s words', () => {
    const reasonOf = (reason: Parameters<AnswerEvents['stop']>[0]['reason']): unknown => candidateOf(streamed((encoder) => {
      encoder.stop({ reason });
      encoder.end();
    }).at(-1))['finishReason'];
    assert.deepEqual(
      (['end_turn', 'stop_sequence', 'max_tokens', 'context_window_exceeded', 'tool_use', 'pause_turn', 'refusal', 'content_filter', 'malformed_tool_call'] as const).map(reasonOf),
      ['STOP', 'STOP', 'MAX_TOKENS', 'MAX_TOKENS', 'STOP', 'STOP', 'SAFETY', 'SAFETY', 'MALFORMED_FUNCTION_CALL'],
    );
  });

  it("ends a failed answer with one more event holding Google's error object, and writes nothing after", () => {
    const responses = streamed((encoder) => {
      encoder.text('Hel');
      encoder.fail('The provider is overloaded', 'overloaded_error');
      encoder.text('lo');
      encoder.end();
    });
    assert.deepEqual(responses.at(-1), { error: { code: 503, message: 'The provider is overloaded', status: 'UNAVAILABLE' } });
    assert.equal(responses.length, 2);
    assert.deepEqual(streamed((encoder) => encoder.fail('cut off')).at(-1), { error: { code: 500, message: 'cut off', status: 'INTERNAL' } });
  });

  it('writes refusal text as text: Gemini has no refusal part', () => {
    assert.deepEqual(streamed((encoder) => {
      encoder.refusal('I cannot help with that.');
      encoder.end();
    }).map(partsOf)[0], [{ text: 'I cannot help with that.' }]);
  });
});

describe('the Gemini encoder, whole', () => {
  it('merges the pieces as they came: text into one part, thoughts into one thought part, a call its own part', () => {
    const answer = assembled((encoder) => {
      encoder.reasoning('a');
      encoder.reasoning('b');
      encoder.text('Hi');
      encoder.text(' there');
      encoder.callStart({ id: 'c1', name: 'f' });
      encoder.callArguments('{"x":1}');
      encoder.callEnd();
      encoder.text('after');
      encoder.usage(USAGE);
      encoder.stop({ reason: 'tool_use' });
      encoder.end();
    }, { includeThoughts: true });
    assert.deepEqual(answer, {
      candidates: [{
        content: { parts: [{ text: 'ab', thought: true }, { text: 'Hi there' }, { functionCall: { name: 'f', args: { x: 1 }, id: 'c1' } }, { text: 'after' }], role: 'model' },
        finishReason: 'STOP',
        index: 0,
      }],
      usageMetadata: { promptTokenCount: 14, candidatesTokenCount: 10, thoughtsTokenCount: 20, cachedContentTokenCount: 4, totalTokenCount: 44 },
      modelVersion: 'llmux-id',
      responseId: 'r-1',
    });
  });

  it('gives an answer with nothing in it one empty text part, and names the upstream model without a llmux id', () => {
    const encoder = createGeminiEncoder({ responseId: 'r' });
    encoder.start('upstream-model');
    encoder.stop({ reason: 'content_filter' });
    encoder.end();
    const answer = encoder.answer() as unknown as Json;
    assert.deepEqual(candidateOf(answer), { content: { parts: [{ text: '' }], role: 'model' }, finishReason: 'SAFETY', index: 0 });
    assert.equal(answer['modelVersion'], 'upstream-model');
  });
});

describe('the Gemini encoder\'s seals (llmux.md section 11)', () => {
  const sealItem = (item: CarriedItem): string => sealed(item, ANTHROPIC);
  /** Signed thinking, then two parallel calls (the second with no state), as a messages upstream answers. */
  function thinkingThenCalls(encoder: AnswerEvents): void {
    encoder.start(undefined);
    encoder.reasoning('Think');
    encoder.reasoning('ing.');
    encoder.reasoningEnd({ kind: 'thinking-signature', signature: 'anthropic-sig' });
    encoder.callStart({ id: 'toolu_1', name: 'f' });
    encoder.callArguments('{}');
    encoder.callEnd();
    encoder.callStart({ id: 'toolu_2', name: 'f' });
    encoder.callArguments('{}');
    encoder.callEnd();
    encoder.stop({ reason: 'tool_use' });
    encoder.end();
  }
  const opened = (signature: unknown): unknown => carryTurn().open(String(signature));

  it('seals a step\'s state as one thoughtSignature on its first call, streamed and whole alike; the next call has none', () => {
    const whole = partsOf(assembled(thinkingThenCalls, { sealItem }));
    const stream = streamed(thinkingThenCalls, { sealItem }).flatMap((response) => partsOf(response)).filter((part) => part['functionCall'] !== undefined);
    for (const parts of [whole, stream]) {
      const calls = parts.filter((part) => part['functionCall'] !== undefined);
      assert.equal(calls.length, 2);
      assert.deepEqual(opened(calls[0]?.['thoughtSignature']), { state: 'open', carried: { issuer: ANTHROPIC, item: { kind: 'thinking', thinking: 'Thinking.', signature: 'anthropic-sig' } } });
      assert.equal(calls[1]?.['thoughtSignature'], undefined);
    }
  });

  it('bundles reasoning with the call\'s own signature, and seals an empty bundle on a first call with no state; nothing without sealItem', () => {
    const tell = (state: boolean) => (encoder: AnswerEvents): void => {
      encoder.start(undefined);
      if (state) encoder.reasoning('plain');
      encoder.callStart({ id: 'c1', name: 'f', ...(state ? { state: { kind: 'thought-signature', signature: 'g-sig' } } : {}) });
      encoder.callEnd();
      encoder.stop({ reason: 'tool_use' });
      encoder.end();
    };
    const [withState] = partsOf(assembled(tell(true), { sealItem }));
    assert.deepEqual(opened(withState?.['thoughtSignature']), { state: 'open', carried: { issuer: ANTHROPIC, item: { kind: 'bundle', items: [{ kind: 'reasoning', text: 'plain' }, { kind: 'thought-signature', signature: 'g-sig', callId: 'c1' }] } } });
    const [bare] = partsOf(assembled(tell(false), { sealItem }));
    assert.deepEqual(opened(bare?.['thoughtSignature']), { state: 'open', carried: { issuer: ANTHROPIC, item: { kind: 'bundle', items: [] } } });
    const [unsealed] = partsOf(assembled(tell(true)));
    assert.equal(unsealed?.['thoughtSignature'], undefined);
  });
});
