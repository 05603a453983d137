/**
 * What real clients send is not refused (llmux.md section 5), over sockets: fields and values the
 * description does not rule on pass through to a same-format upstream untouched and are dropped,
 * named in the log, when translating; the description's three stricter rules hold only under
 * `"validation": "strict"`; a long end-user id reaches a chat upstream within OpenAI's limit.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, anthropicHeaders, logLineOf, openaiHeaders } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';

/** What Claude Code sends with `--include-partial-messages` and in interactive sessions. */
function claudeCodeBody(model: string): Record<string, unknown> {
  return {
    model,
    max_tokens: 32000,
    stream: true,
    thinking: { type: 'adaptive', display: 'updates' },
    output_config: { effort: 'medium' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    metadata: { user_id: `user_${'0123456789abcdef'.repeat(4)}_account_${'a'.repeat(36)}_session_${'b'.repeat(36)}` },
    system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
    tools: [{ name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'say hi' }] }],
  };
}

const CLAUDE_CODE_BETA = 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,thinking-updates-2026-05-01';

describe('fields the description does not rule on', () => {
  let t: TestGateway;
  before(async () => { t = await startTestGateway(); });
  after(async () => { await t.close(); });

  it('passes Claude Code\'s thinking display, output_config, context_management and betas through to a messages upstream untouched', async () => {
    const body = claudeCodeBody('claude-test');
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key, { 'anthropic-beta': CLAUDE_CODE_BETA }), body: JSON.stringify(body) });
    assert.equal(res.status, 200);
    await res.text();
    const seen = t.upstream.requests.at(-1);
    assert.deepEqual(seen?.body, { ...body, model: 'claude-upstream' });
    assert.equal(seen?.headers['anthropic-beta'], CLAUDE_CODE_BETA);
  });

  it('drops them for a chat upstream, naming each in the log line\'s warnings', async () => {
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key, { 'anthropic-beta': CLAUDE_CODE_BETA }), body: JSON.stringify(claudeCodeBody('gpt-test')) });
    assert.equal(res.status, 200);
    await res.text();
    const seen = t.upstream.requests.at(-1)?.body ?? {};
    for (const key of ['thinking', 'output_config', 'context_management', 'metadata', 'system']) assert.equal(Object.hasOwn(seen, key), false, key);
    assert.equal(seen['reasoning_effort'], 'medium');
    const line = await logLineOf(t, res);
    assert.equal(line['status'], 200);
    assert.deepEqual(line['warnings'], ['context_management: dropped, a chat-completions upstream has no equivalent']);
  });

  it('gives a chat upstream a metadata.user_id longer than 64 characters as a stable hash of 64', async () => {
    const body = { ...claudeCodeBody('gpt-test'), stream: false };
    for (let i = 0; i < 2; i += 1) {
      await (await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(t.key), body: JSON.stringify(body) })).text();
    }
    const [first, second] = t.upstream.requests.slice(-2).map((seen) => seen.body['user']);
    assert.equal(typeof first, 'string');
    assert.equal((first as string).length, 64);
    assert.equal(first, second);
    assert.ok(!JSON.stringify(t.upstream.requests.slice(-2).map((seen) => seen.body)).includes('session_bbbb'));
  });

  it('gives a chat upstream a chat client\'s user longer than 64 characters as the same kind of hash, and a short one as it is', async () => {
    const long = 'x'.repeat(150);
    await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', user: long, messages: [{ role: 'user', content: 'hi' }] }) })).text();
    assert.match(String(t.upstream.requests.at(-1)?.body['user']), /^[0-9a-f]{64}$/);
    await (await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: openaiHeaders(t.key), body: JSON.stringify({ model: 'gpt-test', user: 'u-1', messages: [{ role: 'user', content: 'hi' }] }) })).text();
    assert.equal(t.upstream.requests.at(-1)?.body['user'], 'u-1');
  });
});

/** Three requests the official API takes and the description refuses. */
const STRICTER_RULES: Record<string, Record<string, unknown>> = {
  'an image in the first message': {
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }, { type: 'text', text: 'what is this?' }] }],
  },
  'two user turns in a row': {
    messages: [{ role: 'user', content: 'one' }, { role: 'user', content: 'two' }],
  },
  'a tool_result without content': {
    messages: [
      { role: 'user', content: 'run it' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Run', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1' }] },
    ],
  },
};

describe('the description\'s stricter rules', () => {
  let compatible: TestGateway;
  let strict: TestGateway;
  before(async () => {
    compatible = await startTestGateway();
    strict = await startTestGateway({ config: { validation: 'strict' } });
  });
  after(async () => {
    await compatible.close();
    await strict.close();
  });

  for (const [name, extra] of Object.entries(STRICTER_RULES)) {
    it(`accepts ${name} by default, translated and passed through, and refuses it under "validation": "strict"`, async () => {
      for (const model of ['gpt-test', 'claude-test']) {
        const body = JSON.stringify({ model, max_tokens: 50, ...extra });
        const accepted = await fetch(`${compatible.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(compatible.key), body });
        assert.equal(accepted.status, 200, `${model}: ${await accepted.text()}`);
        const refused = await fetch(`${strict.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(strict.key), body });
        assert.equal(refused.status, 400, model);
        assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'invalid_parameters');
      }
    });
  }

  it('sends consecutive user turns to a chat upstream merged into one', async () => {
    await (await fetch(`${compatible.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(compatible.key), body: JSON.stringify({ model: 'gpt-test', max_tokens: 50, ...STRICTER_RULES['two user turns in a row'] }) })).text();
    assert.deepEqual(compatible.upstream.requests.at(-1)?.body['messages'], [{ role: 'user', content: 'one\n\ntwo' }]);
  });
});
