import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GeminiContent, GeminiPart } from '../../src/formats/gemini-types.ts';
import { carryGeminiContents, signCalls } from '../../src/translate/carry-gemini.ts';
import { SKIP_THOUGHT_SIGNATURE } from '../../src/translate/carried.ts';
import { ANTHROPIC, GEMINI, KEY_B, reader, sealed } from '../helpers/carry.ts';

const call = (id: string, thoughtSignature?: string): GeminiPart => ({ functionCall: { id, name: 'f', args: {} }, ...(thoughtSignature === undefined ? {} : { thoughtSignature }) });
const user = (...parts: GeminiPart[]): GeminiContent => ({ role: 'user', parts });
const model = (...parts: GeminiPart[]): GeminiContent => ({ role: 'model', parts });
const answers = (...ids: string[]): GeminiContent => user(...ids.map((id) => ({ functionResponse: { id, name: 'f', response: { output: 'x' } } })));

describe('signCalls', () => {
  it('puts a signature on the call it names, else on the first call without one, never over one', () => {
    const parts = [{ text: 'hm' }, call('a'), call('b'), call('c', 'own')];
    signCalls(parts, [{ kind: 'thought-signature', signature: 'for-b', callId: 'b' }, { kind: 'bundle', items: [{ kind: 'thought-signature', signature: 'first' }, { kind: 'reasoning', text: 'r' }] }, { kind: 'thought-signature', signature: 'late', callId: 'c' }]);
    assert.deepEqual(parts.map((part) => part.thoughtSignature), [undefined, 'first', 'for-b', 'own']);
  });
});

describe('a Gemini client\'s contents passed through to a Gemini upstream', () => {
  it('are left as they are when they hold no llmux seal, Google\'s own signatures included', () => {
    assert.equal(carryGeminiContents([user({ text: 'go' }), model(call('a', 'google-sig')), answers('a')], reader(GEMINI)), undefined);
  });

  it('get back the Gemini signature a seal holds; another family\'s seal is taken out and the step gets Google\'s placeholder, both said once', () => {
    const warnings: string[] = [];
    const carry = reader(GEMINI, warnings);
    const contents = [
      user({ text: 'go' }),
      model(call('a', sealed({ kind: 'bundle', items: [{ kind: 'thought-signature', signature: 'google-sig', callId: 'a' }] }, GEMINI)), call('b')),
      answers('a', 'b'),
      model(call('c', sealed({ kind: 'bundle', items: [{ kind: 'thinking', thinking: 't', signature: 's' }] }, ANTHROPIC))),
      answers('c'),
    ];
    const before = JSON.stringify(contents);
    const out = carryGeminiContents(contents, carry);
    carry.finish();
    assert.deepEqual(out?.map((content) => content.parts.map((part) => part.thoughtSignature)), [[undefined], ['google-sig', undefined], [undefined, undefined], [SKIP_THOUGHT_SIGNATURE], [undefined]]);
    assert.equal(JSON.stringify(contents), before, 'the client\'s contents are not changed');
    assert.equal(warnings.length, 2);
    assert.match(warnings[0] ?? '', /1 piece of reasoning state issued by provider "anthropic-up" \(family anthropic\) stripped/);
    assert.match(warnings[1] ?? '', /placeholder thought signature skip_thought_signature_validator .*, 1 time/);
  });

  it('ignore another key\'s seal, and say nothing of an empty one but give its step the placeholder', () => {
    const warnings: string[] = [];
    const carry = reader(GEMINI, warnings, KEY_B);
    const out = carryGeminiContents([user({ text: 'go' }), model(call('a', sealed({ kind: 'thought-signature', signature: 'google-sig', callId: 'a' }, GEMINI))), answers('a')], carry);
    carry.finish();
    assert.equal(out?.[1]?.parts[0]?.thoughtSignature, SKIP_THOUGHT_SIGNATURE);
    assert.match(warnings.join('\n'), /1 llmux seal issued to another key ignored/);

    const quiet: string[] = [];
    const own = reader(GEMINI, quiet);
    const empty = carryGeminiContents([user({ text: 'go' }), model(call('a', sealed({ kind: 'bundle', items: [] }, ANTHROPIC))), answers('a')], own);
    own.finish();
    assert.equal(empty?.[1]?.parts[0]?.thoughtSignature, SKIP_THOUGHT_SIGNATURE);
    assert.doesNotMatch(quiet.join('\n'), /stripped/);
  });

  it('leave an earlier turn\'s calls unsigned: Gemini checks the current turn only', () => {
    const out = carryGeminiContents([user({ text: 'go' }), model(call('a', sealed({ kind: 'bundle', items: [] }, ANTHROPIC))), answers('a'), model({ text: 'done' }), user({ text: 'again' })], reader(GEMINI));
    assert.equal(out?.[1]?.parts[0]?.thoughtSignature, undefined);
  });
});
