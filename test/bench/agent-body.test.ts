import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_BODY_BYTES, agentMessagesBody } from '../../bench/agent-body.ts';
import { validateMessagesRequest } from '../../src/formats/messages.ts';

test('the agent turn is a valid messages request of about 200 KB, shaped like a coding agent\'s', () => {
  const text = agentMessagesBody('bench-messages', false);
  const size = Buffer.byteLength(text);
  assert.ok(size >= AGENT_BODY_BYTES && size < AGENT_BODY_BYTES + 16 * 1024, `${size} bytes`);
  const body = validateMessagesRequest(JSON.parse(text));
  assert.equal(body.model, 'bench-messages');
  assert.equal(body.stream, false);
  assert.equal(body.tools?.length, 12);
  assert.ok(Array.isArray(body.system) && body.system.length === 2);
  const blocks = body.messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
  const count = (type: string): number => blocks.filter((b) => b.type === type).length;
  assert.ok(count('tool_use') >= 10, 'a long history of tool calls');
  assert.equal(count('tool_use'), count('tool_result'), 'every call has its result');
  assert.ok(count('thinking') >= 10, 'signed thinking in the history');
  // Claude Code's Read tool numbers lines with an arrow: the text is not Latin-1.
  assert.ok(text.includes('\u2192'));
});

test('the agent turn is the same every time, and differs between models only in its model id', () => {
  assert.equal(agentMessagesBody('bench-messages', true), agentMessagesBody('bench-messages', true));
  const a = JSON.parse(agentMessagesBody('bench-messages', true)) as Record<string, unknown>;
  const b = JSON.parse(agentMessagesBody('bench-chat', true)) as Record<string, unknown>;
  assert.equal(a['stream'], true);
  assert.deepEqual({ ...a, model: '' }, { ...b, model: '' });
});
