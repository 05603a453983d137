import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { budgetEffort, continuesUnsignedToolLoop, converseFamily, effortFields } from '../../src/translate/converse-reasoning.ts';
import { createConverseTurns, toolResultBlock, toolUseBlock } from '../../src/translate/converse-build.ts';

const LLAMA = 'us.meta.llama3-3-70b-instruct-v1:0';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

describe('converseFamily', () => {
  it('reads the family from a model id, a cross-region profile id or an ARN', () => {
    const cases: Array<[string, string]> = [
      ['anthropic.claude-3-5-haiku-20241022-v1:0', 'anthropic'],
      [CLAUDE, 'anthropic'],
      ['global.anthropic.claude-opus-4-5-20251101-v1:0', 'anthropic'],
      ['arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0', 'anthropic'],
      ['arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0', 'nova'],
      ['us.amazon.nova-2-lite-v1:0', 'nova'],
      ['amazon.titan-text-express-v1', 'other'],
      ['openai.gpt-oss-120b-1:0', 'gpt-oss'],
      ['us.openai.gpt-5.6-luna', 'openai'],
      ['moonshot.kimi-k2-thinking', 'moonshot'],
      ['mistral.mistral-large-2407-v1:0', 'mistral'],
      [LLAMA, 'other'],
      ['us.deepseek.r1-v1:0', 'other'],
      ['arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3', 'other'],
    ];
    for (const [id, family] of cases) assert.equal(converseFamily(id), family, id);
  });
});

describe('reasoning', () => {
  it('writes an effort in the shape of each family that takes one, and drops it with a warning for the rest', () => {
    const warnings: string[] = [];
    const warn = (message: string): void => {
      warnings.push(message);
    };
    assert.deepEqual(effortFields('nova', 'xhigh', 'f', warn), { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'high' } });
    assert.deepEqual(effortFields('nova', 'minimal', 'f', warn), { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'low' } });
    assert.equal(effortFields('nova', 'none', 'f', warn), undefined);
    assert.deepEqual(effortFields('gpt-oss', 'medium', 'f', warn), { reasoning_effort: 'medium' });
    assert.deepEqual(effortFields('moonshot', 'high', 'f', warn), { reasoning_effort: 'high' });
    assert.deepEqual(effortFields('openai', 'xhigh', 'f', warn), { reasoning: { effort: 'xhigh' } });
    assert.deepEqual(effortFields('openai', 'minimal', 'f', warn), { reasoning: { effort: 'low' } });
    assert.deepEqual(warnings, []);
    assert.equal(effortFields('other', 'high', 'reasoning_effort', warn), undefined);
    assert.deepEqual(warnings, ['reasoning_effort: dropped, this model on Converse takes no reasoning setting']);
  });

  it('reads a thinking budget as an effort', () => {
    assert.deepEqual([1024, 4095, 4096, 16383, 16384, 60000].map(budgetEffort), ['low', 'low', 'medium', 'medium', 'high', 'high']);
  });

  it('sees a request continuing a tool loop without the signed reasoning of its turn', () => {
    const turns = createConverseTurns();
    turns.add('user', [{ text: 'go' }]);
    turns.add('assistant', [toolUseBlock('t', 'f', {})]);
    turns.add('user', [toolResultBlock('anthropic', 't', { texts: ['x'], images: [] }, false)]);
    assert.equal(continuesUnsignedToolLoop(turns.turns), true);
    const signed = createConverseTurns();
    signed.add('assistant', [{ reasoningContent: { reasoningText: { text: 'hm', signature: 's' } } }, toolUseBlock('t', 'f', {})]);
    signed.add('user', [toolResultBlock('anthropic', 't', { texts: ['x'], images: [] }, false)]);
    assert.equal(continuesUnsignedToolLoop(signed.turns), false);
  });
});
