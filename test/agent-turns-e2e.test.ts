/**
 * A coding agent's session through the gateway (issue 26): each key's turns, each its last with an
 * exchange more, are read from the key's last turn (src/common/json-recall.ts). What reaches the
 * provider must be byte for byte what a key sending the same turn for the first time gets it as:
 * passed through to a messages provider, and translated for a chat one; a refused turn in the
 * middle of the session is refused in the same words; and the answers are the provider's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { anthropicHeaders, startTestGateway, threeFormatConfig } from './helpers/gateway.ts';
import type { TestGateway } from './helpers/gateway.ts';
import { respond } from './helpers/fake-upstream.ts';
import { agentMessagesBody, agentTurns, inClaudeCodeOrder } from '../bench/agent-body.ts';

describe('a coding agent\'s session of 200 KB turns on one key', () => {
  let t: TestGateway;
  before(async () => {
    // Context lengths as the providers give them: a 200 KB turn is about 51,000 tokens.
    t = await startTestGateway({
      config: (url) => {
        const config = threeFormatConfig(url);
        return { ...config, models: (config['models'] as Array<Record<string, unknown>>).map((model) => ({ ...model, context_length: 200_000 })) };
      },
    });
  });
  after(() => t.close());

  const messagesAnswer = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-upstream', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } };
  const chatAnswer = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-upstream', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } };

  /** Sends `body` with `key`; returns the status, the answer and the body the provider was sent. */
  async function send(key: string, body: string): Promise<{ status: number; answer: string; upstream: string | undefined }> {
    const before = t.upstream.requests.length;
    t.upstream.fallback = JSON.parse(body).model === 'gpt-test' ? respond.json(200, chatAnswer) : respond.json(200, messagesAnswer);
    const res = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: anthropicHeaders(key), body });
    const answer = await res.text();
    return { status: res.status, answer, upstream: t.upstream.requests.length > before ? t.upstream.requests.at(-1)?.raw : undefined };
  }

  for (const model of ['claude-test', 'gpt-test']) {
    it(`sends the provider what a first turn would be sent (${model === 'gpt-test' ? 'translated for chat' : 'passed through'})`, async () => {
      const session = (await t.gateway.keys.create({ name: `session ${model}`, tier: 'enterprise' })).key;
      // In Claude Code's order: `messages` before `system` and `tools`, whose texts come after the ones that change.
      const turns = [agentMessagesBody(model, false), ...agentTurns(model, 3)].map(inClaudeCodeOrder);
      const last = turns.at(-1) as string;
      const refused = last.replace('"role":"assistant"', '"role":"robot"');
      for (const body of [...turns, last, turns[1] as string, refused, last]) {
        const fresh = (await t.gateway.keys.create({ name: 'fresh', tier: 'enterprise' })).key;
        const expected = await send(fresh, body);
        const actual = await send(session, body);
        assert.equal(actual.status, expected.status);
        // The same answer but for its ids (a translated answer's message id is made per answer).
        assert.equal(actual.answer.replace(/(req|msg)_[0-9A-Za-z]+/g, 'id'), expected.answer.replace(/(req|msg)_[0-9A-Za-z]+/g, 'id'));
        assert.equal(actual.upstream, expected.upstream, 'the same bytes upstream');
        if (body === refused) assert.match(actual.answer, /messages\.\d+\.role/);
        else assert.equal(actual.status, 200);
      }
    });
  }
});
