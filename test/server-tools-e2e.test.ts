/**
 * Anthropic's server tools through llmux (llmux.md section 11), with the Anthropic SDK over real
 * sockets: a web search offered to a Gemini upstream becomes Google Search, and what Google found
 * comes back as Anthropic writes its own search (server_tool_use, web_search_tool_result, cited
 * text, usage.server_tool_use), streamed and whole; offered to a chat upstream, which has nothing
 * like it, it is a 400 naming the tool, never an answer that searched nothing.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startTestGateway, threeFormatConfig } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { geminiFixture, respond } from './helpers/fake-upstream.ts';

type Json = Record<string, unknown>;

const WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search', max_uses: 5 } as const;

let t: TestGateway;

before(async () => {
  t = await startTestGateway({ configFor: (url) => threeFormatConfig(url) });
});
after(async () => {
  await t.close();
});
beforeEach(() => {
  t.upstream.requests.length = 0;
  t.upstream.queue.length = 0;
});

function client(): Anthropic {
  return new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
}

describe('a messages client\'s web search', () => {
  for (const stream of [false, true]) {
    it(`to a Gemini upstream is Google Search, and its finds come back as Anthropic's search blocks and citations (${stream ? 'streamed' : 'whole'})`, async () => {
      t.upstream.queue.push(stream ? respond.sse(geminiFixture('grounding.sse')) : respond.json(200, geminiFixture('grounding.json').toString()));
      const params = { model: 'gemini-test', max_tokens: 1024, messages: [{ role: 'user' as const, content: 'Who won Euro 2024?' }], tools: [WEB_SEARCH] };
      const message = stream ? await client().messages.stream(params).finalMessage() : await client().messages.create(params);

      const sent = t.upstream.requests.at(-1)?.body as Json;
      assert.deepEqual(sent['tools'], [{ googleSearch: {} }]);
      const types = message.content.map((block) => block.type);
      assert.deepEqual(types, ['text', 'server_tool_use', 'web_search_tool_result', 'server_tool_use', 'web_search_tool_result']);
      const [text, use, result] = message.content;
      assert.ok(use?.type === 'server_tool_use' && result?.type === 'web_search_tool_result');
      assert.deepEqual(use.input, { query: 'UEFA Euro 2024 winner' });
      assert.equal(result.tool_use_id, use.id);
      assert.ok(Array.isArray(result.content));
      assert.deepEqual(result.content.map((page) => page.title), ['aljazeera.com', 'uefa.com']);
      assert.ok(text?.type === 'text');
      assert.deepEqual(text.citations?.map((citation) => (citation.type === 'web_search_result_location' ? citation.title : '')), ['aljazeera.com', 'aljazeera.com', 'uefa.com']);
      assert.equal(message.usage.server_tool_use?.web_search_requests, 2);
      await t.allLogged();
      const line = t.logs.at(-1) as Json;
      assert.match(JSON.stringify(line['warnings'] ?? []), /tools\.0\.max_uses: dropped, Gemini's googleSearch takes no such setting/);
    });
  }

  it('to a chat upstream is a 400 naming the tool, and nothing goes upstream', async () => {
    const refused = await client().messages.create({ model: 'gpt-test', max_tokens: 64, messages: [{ role: 'user', content: 'Search.' }], tools: [WEB_SEARCH] }).then(
      () => assert.fail('a request offering a server tool the upstream lacks must not be answered'),
      (err: unknown) => err,
    );
    assert.ok(refused instanceof Anthropic.BadRequestError);
    assert.match(String((refused.error as { error?: { message?: string } }).error?.message), /^tools\.0: "web_search_20250305" is an Anthropic server tool/);
    assert.equal(t.upstream.requests.length, 0);
  });
});
