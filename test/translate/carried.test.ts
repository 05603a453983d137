import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accepts, bundled, carriedItem, createCarryReader, parseRecord, recordItems, recordJson, unbundled } from '../../src/translate/carried.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI, KEY_B, carryTurn, reader, sealed } from '../helpers/carry.ts';

describe('carried state', () => {
  it('goes to an upstream of its issuer\'s family only, and nowhere when the target is unknown', () => {
    assert.equal(accepts({ provider: 'bedrock-us', family: 'anthropic' }, ANTHROPIC), true, 'Anthropic\'s signatures hold across its platforms');
    assert.equal(accepts(GEMINI, ANTHROPIC), false);
    assert.equal(accepts(undefined, ANTHROPIC), false);
  });

  it('reads back only items of a known kind with their fields, never throwing', () => {
    assert.deepEqual(carriedItem({ kind: 'thought-signature', signature: 's', callId: 'c', extra: 1 }), { kind: 'thought-signature', signature: 's', callId: 'c' });
    assert.deepEqual(carriedItem({ kind: 'reasoning' }), { kind: 'reasoning' });
    for (const bad of [null, 'x', { kind: 'thinking', thinking: 't' }, { kind: 'reasoning-details', details: 'no' }, { kind: 'other' }, { kind: 'bundle', items: 'no' }]) assert.equal(carriedItem(bad), undefined);
    // A bundle keeps the pieces it knows, one level deep: a bundle inside one is not a piece.
    assert.deepEqual(carriedItem({ kind: 'bundle', items: [{ kind: 'reasoning', text: 'r' }, { kind: 'bundle', items: [] }, { kind: 'other' }] }), { kind: 'bundle', items: [{ kind: 'reasoning', text: 'r' }] });
    assert.deepEqual(bundled([{ kind: 'reasoning' }]), { kind: 'reasoning' });
    assert.deepEqual(unbundled(bundled([{ kind: 'reasoning' }, { kind: 'bundle', items: [{ kind: 'redacted-thinking', data: 'd' }] }])), [{ kind: 'reasoning' }, { kind: 'redacted-thinking', data: 'd' }]);
  });

  it('stores a record as JSON and reads it back, dropping what is not a record', () => {
    const record = { issuer: GEMINI, message: [{ kind: 'reasoning' as const, text: 'r' }], call: { kind: 'thought-signature' as const, signature: 's', callId: 'c' } };
    assert.deepEqual(parseRecord(recordJson(record)), record);
    assert.deepEqual(recordItems(record), [{ kind: 'reasoning', text: 'r' }, { kind: 'thought-signature', signature: 's', callId: 'c' }]);
    for (const bad of ['', 'not json', '[]', '{"issuer":"x"}', '{"issuer":{"provider":1,"family":"f"}}']) assert.equal(parseRecord(bad), undefined, bad);
  });
});

describe('a carry reader', () => {
  it('opens this key\'s seals and tells one warning per kind of what it strips, ignores and fills, once', () => {
    const warnings: string[] = [];
    const carry = reader(ANTHROPIC, warnings);
    assert.deepEqual(carry.unseal(sealed({ kind: 'thinking', thinking: 't', signature: 's' })), { issuer: ANTHROPIC, item: { kind: 'thinking', thinking: 't', signature: 's' } });
    const gemini = carry.unseal(sealed({ kind: 'thought-signature', signature: 'g' }, GEMINI));
    assert.ok(gemini !== undefined, 'the Gemini seal opens for this key');
    assert.equal(carry.accept(gemini.issuer), false);
    assert.equal(carry.accept(gemini.issuer), false);
    assert.equal(carry.accept(DEEPSEEK), false);
    assert.equal(carry.unseal(sealed({ kind: 'reasoning' }, DEEPSEEK, KEY_B)), undefined);
    assert.equal(carry.unseal('llmux.v2.garbage'), undefined);
    carry.filled('a placeholder put somewhere');
    carry.stripped('a provider the client kept it from (extra_content.google on its calls)');
    carry.finish();
    carry.finish();
    assert.deepEqual(warnings, [
      '2 pieces of reasoning state issued by provider "gemini-up" (family gemini) stripped: the request goes to provider "anthropic-up" (family anthropic)',
      '1 piece of reasoning state issued by provider "deepseek-up" (family provider:deepseek-up) stripped: the request goes to provider "anthropic-up" (family anthropic)',
      '1 piece of reasoning state issued by a provider the client kept it from (extra_content.google on its calls) stripped: the request goes to provider "anthropic-up" (family anthropic)',
      '1 llmux seal issued to another key ignored',
      '1 llmux seal that does not open (another secret, altered, or an earlier llmux\'s) ignored',
      'a placeholder put somewhere, 1 time: the upstream needs it there, and the conversation carried none it issued',
    ]);
  });

  it('without a turn opens nothing, and says nothing when there was nothing', () => {
    const warnings: string[] = [];
    const carry = createCarryReader(undefined, ANTHROPIC, (message) => warnings.push(message));
    assert.equal(carry.unseal(carryTurn().seal(ANTHROPIC, { kind: 'reasoning' })), undefined);
    carry.finish();
    assert.equal(warnings.length, 1);
    const quiet: string[] = [];
    createCarryReader(undefined, ANTHROPIC, (message) => quiet.push(message)).finish();
    assert.deepEqual(quiet, []);
  });
});
