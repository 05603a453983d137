import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { estimateRequestTokens } from '../../src/formats/estimate.ts';

describe('estimateRequestTokens on Responses bodies', () => {
  it('counts instructions and input like system and messages: the same text costs the same in either shape', () => {
    const text = 'x'.repeat(400);
    const chat = estimateRequestTokens({ messages: [{ role: 'system', content: text }, { role: 'user', content: text }] });
    const responses = estimateRequestTokens({ instructions: text, input: [{ role: 'user', content: [{ type: 'input_text', text }] }, { role: 'user', content: '' }] });
    assert.equal(responses, chat);
    assert.equal(estimateRequestTokens({ input: text }), 100 + 4);
  });

  it('counts tool calls, outputs and images, and not the ids, statuses or sealed reasoning', () => {
    const base = estimateRequestTokens({ input: [{ type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{"a":1}' }] });
    const noisier = estimateRequestTokens({ input: [{ type: 'function_call', id: 'fc_'.padEnd(400, '0'), call_id: 'call_'.padEnd(400, '1'), status: 'completed', name: 'f', arguments: '{"a":1}' }] });
    assert.equal(noisier, base);
    const sealed = estimateRequestTokens({ input: [{ type: 'reasoning', summary: [], encrypted_content: 'llmux.v1.'.padEnd(4000, 'A') }] });
    assert.equal(sealed, 4);
    const image = estimateRequestTokens({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,'.padEnd(40_000, 'A') }] }] });
    assert.equal(image, 1_600 + 4);
  });
});
