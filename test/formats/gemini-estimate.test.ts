import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimateGeminiRequestTokens } from '../../src/formats/gemini-estimate.ts';
import { estimateRequestTokens } from '../../src/formats/estimate.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** A quarter of the compact JSON of what the estimate reads. */
function quarterOfSize(...parts: unknown[]): number {
  return parts.reduce<number>((sum, part) => sum + (part === undefined ? 0 : JSON.stringify(part).length), 0) / 4;
}

describe('estimateGeminiRequestTokens', () => {
  it('estimates a Gemini body and the same conversation as messages alike', () => {
    const question = 'Summarise the plot of Hamlet in three sentences, please. '.repeat(40);
    const answer = 'Prince Hamlet seeks revenge on his uncle, who murdered his father and married his mother. '.repeat(40);
    const gemini = {
      systemInstruction: { parts: [{ text: 'You are a literature tutor.' }] },
      contents: [
        { role: 'user', parts: [{ text: question }, { inlineData: { mimeType: 'image/png', data: PNG.repeat(1000) } }] },
        { role: 'model', parts: [{ text: answer }] },
        { role: 'user', parts: [{ text: 'And Macbeth?' }] },
      ],
    };
    const messages = {
      system: 'You are a literature tutor.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: question }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.repeat(1000) } }] },
        { role: 'assistant', content: answer },
        { role: 'user', content: 'And Macbeth?' },
      ],
    };
    const geminiTokens = estimateGeminiRequestTokens(gemini);
    const messagesTokens = estimateRequestTokens(messages);
    assert.ok(Math.abs(geminiTokens - messagesTokens) / messagesTokens < 0.05, `${geminiTokens} vs ${messagesTokens}`);
  });

  it('prices an inline image or an image file at a flat 1,600 tokens, whatever its size', () => {
    const image = (data: string) => ({ contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/jpeg', data } }] }] });
    assert.equal(estimateGeminiRequestTokens(image('A'.repeat(4_000_000))), estimateGeminiRequestTokens(image('')));
    assert.ok(estimateGeminiRequestTokens(image('')) >= 1_600);
    const file = { contents: [{ role: 'user', parts: [{ fileData: { mimeType: 'image/png', fileUri: `https://example.com/${'x'.repeat(10_000)}.png` } }] }] };
    assert.ok(estimateGeminiRequestTokens(file) < 1_620);
  });

  it('prices other inline data, images inside function responses and thought signatures as binary', () => {
    const pdf = (data: string) => ({ contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data } }] }] });
    assert.equal(estimateGeminiRequestTokens(pdf('A'.repeat(3_200_000))) - estimateGeminiRequestTokens(pdf('')), 100_000);
    const response = (data: string) => ({
      contents: [{ role: 'user', parts: [{ functionResponse: { name: 'shot', response: {}, parts: [{ inlineData: { mimeType: 'image/png', data } }] } }] }],
    });
    assert.equal(estimateGeminiRequestTokens(response('A'.repeat(1_000_000))), estimateGeminiRequestTokens(response('')));
    const signed = (signature: string) => ({ contents: [{ role: 'model', parts: [{ text: 'ok', thoughtSignature: signature }] }] });
    assert.equal(estimateGeminiRequestTokens(signed('A'.repeat(32_000))) - estimateGeminiRequestTokens(signed('')), 1_000);
  });

  it('never goes under a quarter of the JSON of the text it reads', () => {
    const parts: unknown[] = Array.from({ length: 10_000 }, () => ({ text: '' }));
    parts.push({ text: 'word '.repeat(100_000) });
    const body = { contents: [{ role: 'user', parts }], tools: [{ functionDeclarations: [{ name: 'f', parametersJsonSchema: { type: 'object', description: 'd'.repeat(40_000) } }] }] };
    assert.ok(estimateGeminiRequestTokens(body) >= quarterOfSize(body.contents, body.tools));
  });

  it('reads the request inside a countTokens generateContentRequest, system instruction and tools included', () => {
    const request = { systemInstruction: { parts: [{ text: 's'.repeat(4000) }] }, contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], tools: [{ functionDeclarations: [{ name: 'f' }] }] };
    assert.equal(estimateGeminiRequestTokens({ generateContentRequest: { model: 'models/x', ...request } }), estimateGeminiRequestTokens(request));
    assert.ok(estimateGeminiRequestTokens(request) > 1000);
  });
});
