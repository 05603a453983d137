import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResponsesRequest, ResponsesResponse } from '../../src/formats/responses.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { resolveInput } from '../../src/responses/resolve.ts';
import { createMemoryResponseStore, type StoredResponse } from '../../src/responses/store.ts';
import { responseEcho, responseObject } from '../../src/translate/responses-output.ts';
import { NO_TOOL_NAMES } from '../../src/translate/responses-tools.ts';

function stored(id: string, keyId = 'key_a'): StoredResponse {
  const response: ResponsesResponse = {
    ...responseObject({ model: 'm', echo: responseEcho({ model: 'm', instructions: 'Old instructions.' }), toolNames: NO_TOOL_NAMES }, id, 1),
    status: 'completed',
    output: [
      { type: 'reasoning', id: `rs_${id}`, summary: [], encrypted_content: 'llmux.v1.x' },
      { type: 'function_call', id: `fc_${id}`, call_id: 'call_1', name: 'shell', arguments: '{}', status: 'completed' },
    ],
  };
  return { id, keyId, created: 1, input: [{ type: 'message', id: `msg_in_${id}`, role: 'user', content: [{ type: 'input_text', text: 'List files' }] }], response };
}

async function storeWith(...records: StoredResponse[]): Promise<ReturnType<typeof createMemoryResponseStore>> {
  const store = createMemoryResponseStore();
  for (const item of records) await store.put(item);
  return store;
}

async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  assert.fail('expected a GatewayError');
}

describe('resolveInput', () => {
  it('makes a string input one user message with an input_text part', async () => {
    assert.deepEqual(await resolveInput({ model: 'm', input: 'Hi' }, 'key_a', await storeWith()), [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }]);
  });

  it('puts the previous response\'s input and output before this input, leaving its instructions behind', async () => {
    const request: ResponsesRequest = { model: 'm', previous_response_id: 'resp_1', input: [{ type: 'function_call_output', call_id: 'call_1', output: 'a.txt' }] };
    const items = await resolveInput(request, 'key_a', await storeWith(stored('resp_1')));
    assert.deepEqual(items, [...stored('resp_1').input, ...stored('resp_1').response.output, { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' }]);
    assert.ok(!JSON.stringify(items).includes('Old instructions.'));
  });

  it('answers 404 not_found_error naming an unknown, expired or another key\'s previous response', async () => {
    const store = await storeWith(stored('resp_1', 'key_b'));
    for (const id of ['resp_missing', 'resp_1']) {
      const err = await rejection(resolveInput({ model: 'm', previous_response_id: id, input: 'x' }, 'key_a', store));
      assert.equal(err.status, 404);
      assert.equal(err.type, 'not_found_error');
      assert.match(err.message, new RegExp(`^previous_response_id: response "${id}" was not found`));
    }
  });

  it('replaces each item_reference, typed or bare, by the stored item it names', async () => {
    const store = await storeWith(stored('resp_1'));
    const items = await resolveInput({ model: 'm', input: [{ type: 'item_reference', id: 'fc_resp_1' }, { id: 'msg_in_resp_1' }, { role: 'user', content: 'next' }] }, 'key_a', store);
    assert.deepEqual(items, [stored('resp_1').response.output[1], stored('resp_1').input[0], { role: 'user', content: 'next' }]);
  });

  it('answers 400 naming an item_reference no stored response of this key holds', async () => {
    const store = await storeWith(stored('resp_1', 'key_b'));
    const err = await rejection(resolveInput({ model: 'm', input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id: 'fc_resp_1' }] }, 'key_a', store));
    assert.equal(err.status, 400);
    assert.match(err.message, /^input\.1: item_reference "fc_resp_1" matches no item of a stored response of this key/);
  });
});
