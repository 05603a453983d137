/**
 * Every request the pinned Codex CLI sent in the recorded fixtures (test/fixtures/clients/) is a
 * valid Responses request, and translates to both upstream formats with tools, the developer
 * messages as system text, and no warning but the hosted tools dropped.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateResponsesRequest } from '../../src/formats/responses.ts';
import { responsesRequestToChat } from '../../src/translate/responses-to-chat.ts';
import { responsesRequestToMessages } from '../../src/translate/responses-to-messages.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { DEEPSEEK, reader } from '../helpers/carry.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'clients');
const MODEL: UpstreamModel = { upstreamId: 'up', reasoning: true, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192 };
const HOSTED = /"(web_search|tool_search)" is a hosted or unknown tool/;

const requests = readdirSync(FIXTURES)
  .filter((name) => name.startsWith('codex-') && name.endsWith('.json'))
  .flatMap((name) => (JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as { requests: Array<{ path: string; body: unknown }> }).requests
    .filter((request) => request.path === '/v1/responses')
    .map((request, index) => ({ name: `${name} request ${index + 1}`, body: request.body })));

describe('the recorded Codex CLI requests', () => {
  it('are there to check', () => {
    assert.ok(requests.length >= 5);
  });

  for (const { name, body } of requests) {
    it(`${name} validates and translates to chat and messages with tools and only hosted-tool warnings`, () => {
      const request = validateResponsesRequest(body);
      for (const translate of [responsesRequestToChat, responsesRequestToMessages]) {
        const warnings: string[] = [];
        const translated = translate(request, { model: MODEL, carry: reader(DEEPSEEK), warn: (message) => warnings.push(message) });
        const tools = (translated.body as { tools?: unknown[] }).tools ?? [];
        assert.ok(tools.length > 0, `${translate.name}: the model gets tools`);
        assert.deepEqual(warnings.filter((warning) => !HOSTED.test(warning)), [], translate.name);
      }
      const messages = responsesRequestToMessages(request, { model: MODEL, carry: reader(DEEPSEEK), warn: () => {} }).body;
      assert.match(String(messages.system), /Codex/, 'the developer messages are the system text');
    });
  }
});
