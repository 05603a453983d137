import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import { addCacheBreakpoints } from '../../src/translate/cache-breakpoints.ts';

const EPHEMERAL = { type: 'ephemeral' as const };

function body(fields: Partial<MessagesRequest> = {}): MessagesRequest {
  return {
    model: 'm',
    max_tokens: 100,
    system: 'You are helpful.',
    tools: [{ name: 'a', input_schema: { type: 'object', properties: {} } }, { name: 'b', input_schema: { type: 'object', properties: {} } }],
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'c', name: 'a', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: 'r' }] },
    ],
    ...fields,
  };
}

describe('prompt-cache breakpoints', () => {
  it('go on the last tool, the system prompt and the last user turn\'s last block', () => {
    const request = body();
    addCacheBreakpoints(request);
    assert.deepEqual(request.tools?.map((tool) => tool.cache_control), [undefined, EPHEMERAL]);
    assert.deepEqual(request.system, [{ type: 'text', text: 'You are helpful.', cache_control: EPHEMERAL }]);
    assert.deepEqual(request.messages[2]?.content, [{ type: 'tool_result', tool_use_id: 'c', content: 'r', cache_control: EPHEMERAL }]);
    assert.equal(JSON.stringify(request.messages[1]).includes('cache_control'), false);
  });

  it('turn a user turn of text into a block to carry one, and leave out what is not there', () => {
    const request = body({ tools: [], messages: [{ role: 'user', content: 'hello' }] });
    delete request.system;
    addCacheBreakpoints(request);
    assert.deepEqual(request.messages[0]?.content, [{ type: 'text', text: 'hello', cache_control: EPHEMERAL }]);
    assert.equal(request.system, undefined);
  });

  it('never make more than four in all', () => {
    const request = body({ system: [{ type: 'text', text: 'x', cache_control: EPHEMERAL }, { type: 'text', text: 'y', cache_control: EPHEMERAL }, { type: 'text', text: 'z', cache_control: EPHEMERAL }] });
    addCacheBreakpoints(request);
    assert.equal(JSON.stringify(request).split('"cache_control"').length - 1, 4);
  });
});
