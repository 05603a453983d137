/**
 * Every request the pinned Gemini CLI sent in the recorded fixtures (test/fixtures/clients/) is a
 * valid Gemini request, and translates to both other upstream formats with its tools, its system
 * instruction as system text, the `read_file` call answered by id, and no warning but `topK`
 * dropped for a chat upstream (which has no such parameter).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import { geminiRequestToChat } from '../../src/translate/gemini-to-chat.ts';
import { geminiRequestToMessages } from '../../src/translate/gemini-to-messages.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'clients');
const MODEL: UpstreamModel = { upstreamId: 'up', reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192 };

const requests = readdirSync(FIXTURES)
  .filter((name) => name.startsWith('gemini-') && name.endsWith('.json'))
  .flatMap((name) => (JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as { requests: Array<{ path: string; body: unknown }> }).requests
    .filter((request) => request.path.includes(':streamGenerateContent'))
    .map((request, index) => ({ name: `${name} request ${index + 1}`, body: request.body })));

describe('the recorded Gemini CLI requests', () => {
  it('are there to check', () => {
    assert.ok(requests.length >= 3);
  });

  for (const { name, body } of requests) {
    it(`${name} validates and translates to chat and messages with its tools and only the expected warnings`, () => {
      const request = validateGeminiRequest(body);
      const chatWarnings: string[] = [];
      const chat = geminiRequestToChat(request, MODEL, { stream: true, onWarning: (message) => chatWarnings.push(message) });
      assert.deepEqual(chatWarnings, ['generationConfig.topK: dropped, a chat-completions upstream has no equivalent']);
      assert.ok((chat.tools ?? []).some((tool) => tool.function.name === 'read_file'));
      assert.equal(chat.messages[0]?.role, 'system');
      assert.match(String(chat.messages[0]?.content), /Gemini CLI/);
      const messagesWarnings: string[] = [];
      const messages = geminiRequestToMessages(request, MODEL, { stream: true, onWarning: (message) => messagesWarnings.push(message) });
      assert.deepEqual(messagesWarnings, []);
      assert.match(JSON.stringify(messages.system), /Gemini CLI/);
      assert.ok((messages.tools ?? []).some((tool) => tool.name === 'read_file'));
      const toolMessage = chat.messages.find((message) => message.role === 'tool');
      if (toolMessage !== undefined) {
        const call = chat.messages.flatMap((message) => message.tool_calls ?? []).find((c) => c.function.name === 'read_file');
        assert.equal(toolMessage.tool_call_id, call?.id, 'the result answers the call by id');
        assert.match(String(toolMessage.content), /Buy milk/);
      }
    });
  }
});
