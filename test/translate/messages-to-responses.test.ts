import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { MessagesResponse } from '../../src/formats/wire.ts';
import { messagesResponseToResponses } from '../../src/translate/index.ts';
import { answerOptions } from '../helpers/responses-stream.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);

function fixture(name: string): MessagesResponse {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as MessagesResponse;
}

function answer(content: unknown[], stopReason: string | null = 'end_turn', usage: Record<string, unknown> = { input_tokens: 10, output_tokens: 5 }, extra: Record<string, unknown> = {}): MessagesResponse {
  return { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-upstream', content, stop_reason: stopReason, stop_sequence: null, usage, ...extra } as unknown as MessagesResponse;
}

describe('messagesResponseToResponses on the recorded messages answers', () => {
  it('turns a text answer into one message, reporting the llmux model and the usage', () => {
    const response = messagesResponseToResponses(fixture('anthropic-nonstream-text.json'), answerOptions());
    assert.equal(response.model, 'llmux-model');
    assert.equal(response.status, 'completed');
    assert.deepEqual(response.output.map((item) => item.type), ['message']);
    assert.ok(response.usage !== null && response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
  });

  it('turns a tool_use answer into a function_call whose arguments are the input as JSON', () => {
    const recorded = fixture('anthropic-nonstream-tool-use.json');
    const response = messagesResponseToResponses(recorded, answerOptions());
    const call = response.output[0];
    assert.equal(call?.type, 'function_call');
    if (call?.type !== 'function_call') return;
    assert.equal(call.call_id, 'toolu_01Q9ExVZnzZj7E2QQYHYtNUa');
    assert.equal(call.name, 'json');
    assert.deepEqual(JSON.parse(call.arguments), (recorded.content[0] as { input: unknown }).input);
    assert.deepEqual(response.usage, { input_tokens: 1151, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 87, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1238 });
  });

  it('turns a refusal with no content into an incomplete response with the explanation as a refusal part', () => {
    const response = messagesResponseToResponses(fixture('anthropic-nonstream-refusal.json'), answerOptions());
    assert.deepEqual(response.incomplete_details, { reason: 'content_filter' });
    assert.deepEqual(response.output, [
      {
        type: 'message',
        id: 'msg_test_0',
        role: 'assistant',
        status: 'incomplete',
        content: [{ type: 'refusal', refusal: "This request triggered restrictions on violative cyber content and was blocked under Anthropic's Usage Policy." }],
      },
    ]);
  });
});

describe('messagesResponseToResponses rules', () => {
  it('gives thinking a reasoning item whose encrypted_content seals the block with its signature, before the message', () => {
    const response = messagesResponseToResponses(answer([{ type: 'thinking', thinking: 'Hmm.', signature: 'sig' }, { type: 'text', text: 'Yes.' }]), answerOptions());
    assert.deepEqual(response.output, [
      { type: 'reasoning', id: 'rs_test_0', summary: [{ type: 'summary_text', text: 'Hmm.' }], encrypted_content: 'sealed:{"type":"thinking","thinking":"Hmm.","signature":"sig"}' },
      { type: 'message', id: 'msg_test_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Yes.', annotations: [], logprobs: [] }] },
    ]);
    const unsealed = messagesResponseToResponses(answer([{ type: 'thinking', thinking: 'Hmm.', signature: 'sig' }]), answerOptions({ exposeSeals: undefined }));
    assert.deepEqual(unsealed.output, [{ type: 'reasoning', id: 'rs_test_0', summary: [{ type: 'summary_text', text: 'Hmm.' }] }]);
  });

  it('gives redacted thinking a summary-less reasoning item only when it can be sealed', () => {
    const blocks = [{ type: 'redacted_thinking', data: 'opaque' }, { type: 'text', text: 'ok' }];
    assert.deepEqual(messagesResponseToResponses(answer(blocks), answerOptions()).output[0], { type: 'reasoning', id: 'rs_test_0', summary: [], encrypted_content: 'sealed:{"type":"redacted_thinking","data":"opaque"}' });
    assert.deepEqual(messagesResponseToResponses(answer(blocks), answerOptions({ exposeSeals: undefined })).output.map((item) => item.type), ['message']);
  });

  it('joins consecutive text blocks into one output_text part', () => {
    const response = messagesResponseToResponses(answer([{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }, { type: 'tool_use', id: 't1', name: 'shell', input: {} }, { type: 'text', text: 'c' }], 'tool_use'), answerOptions());
    assert.deepEqual(response.output.map((item) => (item.type === 'message' ? item.content.map((part) => (part.type === 'output_text' ? part.text : '')) : item.type)), [['ab'], 'function_call', ['c']]);
  });

  it('restores custom (raw input), namespaced and local shell calls', () => {
    const response = messagesResponseToResponses(
      answer([
        { type: 'tool_use', id: 't_p', name: 'apply_patch', input: { input: 'patch text' } },
        { type: 'tool_use', id: 't_g', name: 'github__create_issue', input: { title: 'x' } },
        { type: 'tool_use', id: 't_s', name: 'local_shell', input: { command: ['ls'], working_directory: '/w' } },
      ], 'tool_use'),
      answerOptions(),
    );
    assert.deepEqual(response.output, [
      { type: 'custom_tool_call', id: 'ctc_test_0', call_id: 't_p', name: 'apply_patch', input: 'patch text' },
      { type: 'function_call', id: 'fc_test_1', call_id: 't_g', name: 'create_issue', arguments: '{"title":"x"}', status: 'completed', namespace: 'github' },
      { type: 'local_shell_call', id: 'lsh_test_2', call_id: 't_s', action: { type: 'exec', command: ['ls'], env: {}, working_directory: '/w' }, status: 'completed' },
    ]);
  });

  it('makes max_tokens and model_context_window_exceeded incomplete (max_output_tokens) with the last item incomplete', () => {
    for (const reason of ['max_tokens', 'model_context_window_exceeded']) {
      const response = messagesResponseToResponses(answer([{ type: 'text', text: 'cut' }], reason), answerOptions());
      assert.deepEqual([response.status, response.incomplete_details], ['incomplete', { reason: 'max_output_tokens' }], reason);
      assert.equal(response.output[0]?.type === 'message' ? response.output[0].status : '', 'incomplete');
    }
  });

  it('completes end_turn, stop_sequence, tool_use, pause_turn and a missing stop reason', () => {
    for (const reason of ['end_turn', 'stop_sequence', 'tool_use', 'pause_turn', null]) {
      assert.equal(messagesResponseToResponses(answer([{ type: 'text', text: 'a' }], reason), answerOptions()).status, 'completed', String(reason));
    }
  });

  it('counts cache reads and writes inside input_tokens, cache reads as cached_tokens, and thinking tokens as reasoning tokens', () => {
    const response = messagesResponseToResponses(
      answer([{ type: 'text', text: 'a' }], 'end_turn', { input_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 30, output_tokens_details: { thinking_tokens: 12 } }),
      answerOptions(),
    );
    assert.deepEqual(response.usage, { input_tokens: 125, input_tokens_details: { cached_tokens: 100, cache_write_tokens: 20 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 12 }, total_tokens: 155 });
  });

  it('leaves server tool blocks out and reads a malformed answer leniently', () => {
    const response = messagesResponseToResponses(answer([{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }, { type: 'text', text: 'ok' }]), answerOptions());
    assert.deepEqual(response.output.map((item) => item.type), ['message']);
    for (const body of [null, {}, { content: 'x' }, { content: [null, 1, { type: 'text' }] }]) {
      const lenient = messagesResponseToResponses(body as unknown as MessagesResponse, answerOptions());
      assert.deepEqual([lenient.status, lenient.output], ['completed', []]);
    }
  });
});

describe('messagesResponseToResponses keeping reasoning for the store', () => {
  it('tells keepSealed each thinking block sealed by its item id, without sealing the client copy; a redacted block gets its item too', () => {
    const kept: Array<[string, unknown]> = [];
    const response = messagesResponseToResponses(
      answer([
        { type: 'thinking', thinking: 'Plan it.', signature: 'sig-a' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'Done.' },
      ]),
      answerOptions({ exposeSeals: undefined, keepSealed: (itemId, sealed) => kept.push([itemId, sealed]) }),
    );
    assert.deepEqual(response.output.map((item) => item.type), ['reasoning', 'reasoning', 'message']);
    for (const item of response.output) assert.equal((item as { encrypted_content?: string }).encrypted_content, undefined);
    assert.deepEqual(kept, [
      [response.output[0]?.id, 'sealed:{"type":"thinking","thinking":"Plan it.","signature":"sig-a"}'],
      [response.output[1]?.id, 'sealed:{"type":"redacted_thinking","data":"opaque"}'],
    ]);
  });

  it('leaves a redacted block out when nothing seals or keeps it, as before', () => {
    const response = messagesResponseToResponses(answer([{ type: 'redacted_thinking', data: 'opaque' }, { type: 'text', text: 'Done.' }]), answerOptions({ exposeSeals: undefined }));
    assert.deepEqual(response.output.map((item) => item.type), ['message']);
  });
});
