import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { estimateRequestTokens } from '../../src/formats/estimate.ts';

/** A quarter of the compact JSON of what the estimate reads: the floor no shape may go under. */
function quarterOfSize(body: { system?: unknown; messages?: unknown; tools?: unknown }): number {
  let chars = 0;
  for (const part of [body.system, body.messages, body.tools]) if (part !== undefined) chars += JSON.stringify(part).length;
  return chars / 4;
}

describe('estimateRequestTokens', () => {
  it('counts an ordinary request at about four characters of its JSON a token', () => {
    assert.equal(estimateRequestTokens({ messages: [{ role: 'user', content: 'Hello, llmux' }] }), 11);
    const body = { system: 'You are terse.', messages: [{ role: 'user', content: 'a'.repeat(400) }] };
    assert.equal(estimateRequestTokens(body), Math.ceil(quarterOfSize(body)));
  });

  it('cannot be made small by 100,000 empty text parts before a large text (the echo bomb)', () => {
    // Issue 14: the walk stopped after 200,000 nodes, so 100,000 empty parts before 28 MB of text cost 4 tokens.
    const parts: unknown[] = Array.from({ length: 100_000 }, () => ({ type: 'text', text: '' }));
    parts.push({ type: 'text', text: 'word '.repeat(200_000) });
    const body = { messages: [{ role: 'user', content: parts }] };
    const estimate = estimateRequestTokens(body);
    assert.ok(estimate >= quarterOfSize(body), `${estimate} tokens for ${JSON.stringify(body).length} bytes`);
    assert.ok(estimate >= 250_000 + 100_000 * 25 / 4);
  });

  it('counts long keys, fields no model reads and deep nesting at their size', () => {
    const megabyte = 'k'.repeat(1_000_000);
    const shapes = [
      { tools: [{ name: 't', input_schema: { type: 'object', properties: { [megabyte]: {} } } }], messages: [] },
      { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: megabyte, content: '' }] }] },
      { messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: '', signature: megabyte }] }] },
      { messages: [{ role: megabyte, content: '' }] },
      { messages: [{ role: 'user', content: [JSON.parse(`${'['.repeat(150)}"${megabyte}"${']'.repeat(150)}`) as unknown] }] },
    ];
    for (const body of shapes) {
      const estimate = estimateRequestTokens(body);
      assert.ok(estimate >= 250_000 && estimate >= Math.floor(quarterOfSize(body)), `${estimate} for ${JSON.stringify(body).slice(0, 80)}`);
    }
  });

  it('prices an image at a flat 1,600 tokens and base64 data at a token per 32 characters, whatever their size', () => {
    const image = (data: string) => ({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }] });
    assert.equal(estimateRequestTokens(image('A'.repeat(4_000_000))) - estimateRequestTokens(image('')), 0);
    assert.ok(estimateRequestTokens(image('')) >= 1_600);
    const chatImage = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(1_000_000)}` } }] }] };
    assert.ok(estimateRequestTokens(chatImage) < 1_700);
    const pdf = (data: string) => ({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }] }] });
    assert.equal(estimateRequestTokens(pdf('A'.repeat(3_200_000))) - estimateRequestTokens(pdf('')), 100_000);
    // Text documents are text: counted at four characters a token.
    const textDocument = { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x'.repeat(400_000) } }] }] };
    assert.ok(estimateRequestTokens(textDocument) >= 100_000);
  });
});

describe('estimateRequestTokens on Responses bodies', () => {
  it('counts instructions and input like system and messages, at a quarter of their JSON', () => {
    const text = 'x'.repeat(400);
    assert.equal(estimateRequestTokens({ input: text }), Math.ceil((400 + 2) / 4));
    const body = { instructions: text, input: [{ role: 'user', content: [{ type: 'input_text', text }] }] };
    assert.equal(estimateRequestTokens(body), Math.ceil((JSON.stringify(body.instructions).length + JSON.stringify(body.input).length) / 4));
  });

  it('prices sealed reasoning like base64 data and an input image at the flat image price', () => {
    const sealed = estimateRequestTokens({ input: [{ type: 'reasoning', summary: [], encrypted_content: 'llmux.v1.'.padEnd(4000, 'A') }] });
    assert.ok(sealed >= 125 && sealed < 200, `${sealed}: 4,000 sealed characters at a token per 32, plus the item's structure`);
    const image = estimateRequestTokens({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,'.padEnd(40_000, 'A') }] }] });
    assert.ok(image >= 1_600 && image < 1_620, `${image}: one image, whatever its size`);
  });
});
