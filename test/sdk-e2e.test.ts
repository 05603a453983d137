/**
 * llmux driven over sockets by the official SDKs' own helpers, as real clients drive it
 * (issue 13): `messages.stream().finalMessage()`, the tool runner with `stream: true`,
 * `chat.completions.stream().finalChatCompletion()`, and the errors the SDKs raise.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startTestGateway, anthropicHeaders, openaiHeaders } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { fixture, respond } from './helpers/fake-upstream.ts';
import { sseEvents } from './helpers/assemble.ts';

function anthropicClient(t: TestGateway): Anthropic {
  return new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
}

function openaiClient(t: TestGateway): OpenAI {
  return new OpenAI({ apiKey: t.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
}

const ask = [{ role: 'user' as const, content: 'Hello' }];

/** Every event's JSON in a stream of either format (the chat `[DONE]` left out). */
function eventData(text: string): Array<Record<string, unknown>> {
  return sseEvents(text).filter((event) => event.data !== '[DONE]').map((event) => JSON.parse(event.data) as Record<string, unknown>);
}

describe('every answer names the llmux model that answered', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({
      config: {
        retry: { attempts: 1, base_delay_ms: 1, max_delay_ms: 1 },
        models: [
          { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', max_output_tokens: 16384 },
          { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', max_output_tokens: 8192 },
          { id: 'gpt-flaky', provider: 'fake-openai', upstream_id: 'gpt-flaky-upstream', fallbacks: ['claude-test'] },
        ],
      },
    });
  });
  after(async () => { await t.close(); });

  it('in a messages stream and its final message, translated and passed through (messages.stream().finalMessage())', async () => {
    for (const [model, recording] of [['gpt-test', 'openai-stream-text-include-usage.sse'], ['claude-test', 'anthropic-stream-text-then-tool-use-haiku.sse']] as const) {
      t.upstream.queue.push(respond.sse(fixture(recording)));
      const message = await anthropicClient(t).messages.stream({ model, max_tokens: 100, messages: ask }).finalMessage();
      assert.equal(message.model, model);
      t.upstream.queue.push(respond.sse(fixture(recording)));
      const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify({ model, max_tokens: 100, stream: true, messages: ask }) });
      const start = eventData(await res.text()).find((data) => data['type'] === 'message_start');
      assert.equal((start?.['message'] as Record<string, unknown>)['model'], model);
    }
  });

  it('in every chat chunk and the final completion, translated and passed through (chat.completions.stream().finalChatCompletion())', async () => {
    for (const [model, recording] of [['claude-test', 'anthropic-stream-tool-use.sse'], ['gpt-test', 'openai-stream-text-include-usage.sse']] as const) {
      t.upstream.queue.push(respond.sse(fixture(recording)));
      const completion = await openaiClient(t).chat.completions.stream({ model, messages: ask, stream_options: { include_usage: true } }).finalChatCompletion();
      assert.equal(completion.model, model);
      t.upstream.queue.push(respond.sse(fixture(recording)));
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, messages: ask }) });
      const chunks = eventData(await res.text());
      assert.ok(chunks.length > 2);
      for (const chunk of chunks) assert.equal(chunk['model'], model);
    }
  });

  it('in whole answers of both formats, translated and passed through', async () => {
    const cases = [
      ['messages', 'claude-test', 'anthropic-nonstream-tool-use.json'],
      ['messages', 'gpt-test', 'openai-nonstream-text.json'],
      ['chat', 'gpt-test', 'openai-nonstream-parallel-tool-calls.json'],
      ['chat', 'claude-test', 'anthropic-nonstream-text.json'],
    ] as const;
    for (const [format, model, recording] of cases) {
      t.upstream.queue.push(respond.fixtureJson(recording));
      const answer = format === 'messages'
        ? await anthropicClient(t).messages.create({ model, max_tokens: 100, messages: ask })
        : await openaiClient(t).chat.completions.create({ model, messages: ask });
      assert.equal(answer.model, model, `${format} ${model}`);
    }
  });

  it('names the fallback when a fallback answered', async () => {
    t.upstream.queue.push(respond.json(503, { error: { message: 'down', type: 'server_error' } }), respond.sse(fixture('anthropic-stream-tool-use.sse')));
    const completion = await openaiClient(t).chat.completions.stream({ model: 'gpt-flaky', messages: ask }).finalChatCompletion();
    assert.equal(completion.model, 'claude-test');
    t.upstream.queue.push(respond.json(503, { error: { message: 'down', type: 'server_error' } }), respond.fixtureJson('anthropic-nonstream-text.json'));
    const message = await openaiClient(t).chat.completions.create({ model: 'gpt-flaky', messages: ask });
    assert.equal(message.model, 'claude-test');
  });
});
