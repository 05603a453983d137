import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ChatRequest, ChatResponse, MessagesResponse } from '../../src/formats/wire.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { chatRequestToMessages } from '../../src/translate/chat-to-messages.ts';
import { chatResponseToMessages } from '../../src/translate/index.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);

function fixture(name: string): ChatResponse {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as ChatResponse;
}

const MODEL: UpstreamModel = {
  upstreamId: 'claude-up',
  reasoning: false,
  maxTokensParam: 'max_tokens',
  replayReasoning: false,
  maxOutputTokens: 8192,
};
const REASONING: UpstreamModel = { ...MODEL, reasoning: true, maxOutputTokens: 64000 };

function request(extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'client-model', messages: [{ role: 'user', content: 'Hi' }], ...extra };
}

/** Checks the fresh id, then returns the answer with a stable id so it can be compared whole. */
function withStableId(answer: MessagesResponse): MessagesResponse {
  assert.match(answer.id, /^msg_[A-Za-z0-9]{24}$/);
  return { ...answer, id: 'msg_ID' };
}

function answer(message: Record<string, unknown>, extra: Record<string, unknown> = {}, usage?: ChatResponse['usage']): ChatResponse {
  const resp: ChatResponse = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: 'stop', ...extra }],
  };
  if (usage !== undefined) resp.usage = usage;
  return resp;
}

describe('chatRequestToMessages: system messages', () => {
  it('joins leading system and developer messages into system', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'system', content: 'You are helpful.' },
          { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
          { role: 'user', content: 'Hi' },
        ],
      }),
      MODEL,
    );
    assert.equal(out.system, 'You are helpful.\n\nBe brief.');
    assert.deepEqual(out.messages, [{ role: 'user', content: 'Hi' }]);
  });

  it('turns a later system message into a user text block', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello' },
          { role: 'system', content: 'Now answer in French.' },
          { role: 'user', content: 'How are you?' },
        ],
      }),
      MODEL,
    );
    assert.equal('system' in out, false);
    assert.deepEqual(out.messages, [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
      { role: 'user', content: [{ type: 'text', text: 'Now answer in French.' }, { type: 'text', text: 'How are you?' }] },
    ]);
  });
});

describe('chatRequestToMessages: tool calls and tool messages', () => {
  const calling: ChatRequest['messages'] = [
    { role: 'user', content: 'Weather in Paris and Rome?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ],
    },
  ];

  it('turns assistant tool_calls into tool_use blocks with parsed input and the same ids', () => {
    const out = chatRequestToMessages(request({ messages: calling }), MODEL);
    assert.deepEqual(out.messages[1], {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
      ],
    });
  });

  it('keeps assistant text before its tool_use blocks', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'user', content: 'Go' },
          { role: 'assistant', content: 'Running it.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'run', arguments: '{}' } }] },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(out.messages[1], {
      role: 'assistant',
      content: [{ type: 'text', text: 'Running it.' }, { type: 'tool_use', id: 'call_1', name: 'run', input: {} }],
    });
  });

  it('sends unparsable or non-object arguments as {} and says so', () => {
    const warnings: string[] = [];
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'user', content: 'Go' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'a', arguments: '{"city": "Par' } },
              { id: 'call_2', type: 'function', function: { name: 'b', arguments: '[1, 2]' } },
              { id: 'call_3', type: 'function', function: { name: 'c', arguments: '' } },
            ],
          },
        ],
      }),
      MODEL,
      { onWarning: (message) => warnings.push(message) },
    );
    assert.deepEqual(out.messages[1], {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'call_1', name: 'a', input: {} },
        { type: 'tool_use', id: 'call_2', name: 'b', input: {} },
        { type: 'tool_use', id: 'call_3', name: 'c', input: {} },
      ],
    });
    assert.deepEqual(warnings, [
      'messages.1.tool_calls.0.function.arguments: not valid JSON; sent upstream as {}',
      'messages.1.tool_calls.1.function.arguments: JSON but not an object; sent upstream as {}',
    ]);
  });

  it('merges consecutive tool messages into tool_result blocks of one user turn', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          ...calling,
          { role: 'tool', tool_call_id: 'call_1', content: '18C' },
          { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '25C' }] },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(out.messages.slice(2), [{
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
        { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '25C' }] },
      ],
    }]);
  });

  it('puts tool results before user text in the merged user turn', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          ...calling,
          { role: 'user', content: 'Hurry.' },
          { role: 'tool', tool_call_id: 'call_1', content: '18C' },
          { role: 'tool', tool_call_id: 'call_2', content: '25C' },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(out.messages.slice(2), [{
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
        { type: 'tool_result', tool_use_id: 'call_2', content: '25C' },
        { type: 'text', text: 'Hurry.' },
      ],
    }]);
  });

  it('pairs legacy function_call and function messages with a made-up id', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'user', content: 'Go' },
          { role: 'assistant', content: null, function_call: { name: 'run', arguments: '{"x":1}' } },
          { role: 'function', name: 'run', content: 'done' },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(out.messages.slice(1), [
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_legacy_1', name: 'run', input: { x: 1 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_legacy_1', content: 'done' }] },
    ]);
  });
});

describe('chatRequestToMessages: content parts', () => {
  function userParts(parts: unknown[]): ChatRequest {
    return request({ messages: [{ role: 'user', content: parts as NonNullable<ChatRequest['messages'][number]['content']> }] });
  }

  it('turns an image data URL into a base64 image block and an http(s) URL into a url source', () => {
    const out = chatRequestToMessages(
      userParts([
        { type: 'text', text: 'Compare:' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
      ]),
      MODEL,
    );
    assert.deepEqual(out.messages, [{
      role: 'user',
      content: [
        { type: 'text', text: 'Compare:' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ],
    }]);
  });

  it('re-encodes a data URL that is not base64', () => {
    const out = chatRequestToMessages(userParts([{ type: 'image_url', image_url: { url: 'data:image/svg+xml,%3Csvg%2F%3E' } }]), MODEL);
    assert.deepEqual(out.messages[0]?.content, [
      { type: 'image', source: { type: 'base64', media_type: 'image/svg+xml', data: Buffer.from('<svg/>').toString('base64') } },
    ]);
  });

  it('leaves a placeholder for what cannot be sent: other URL schemes, audio, uploaded files', () => {
    const out = chatRequestToMessages(
      userParts([
        { type: 'image_url', image_url: { url: 'ftp://example.com/cat.jpg' } },
        { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
        { type: 'file', file: { file_id: 'file-123' } },
      ]),
      MODEL,
    );
    assert.deepEqual(out.messages[0]?.content, [
      { type: 'text', text: '[image omitted: only http(s) and data URLs can be sent to this model]' },
      { type: 'text', text: '[audio omitted: this model does not take audio input]' },
      { type: 'text', text: '[file omitted: only PDF file_data can be sent to this model]' },
    ]);
  });

  it('sends a PDF file part as a document block', () => {
    const out = chatRequestToMessages(
      userParts([{ type: 'file', file: { filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } }]),
      MODEL,
    );
    assert.deepEqual(out.messages[0]?.content, [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' }, title: 'report.pdf' },
    ]);
  });
});

describe('chatRequestToMessages: turn order', () => {
  it('merges consecutive same-role turns', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'user', content: 'One' },
          { role: 'user', content: 'Two' },
          { role: 'assistant', content: 'A' },
          { role: 'assistant', content: 'B' },
          { role: 'user', content: 'Three' },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ type: 'text', text: 'One' }, { type: 'text', text: 'Two' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B' }] },
      { role: 'user', content: 'Three' },
    ]);
  });

  it('puts a minimal user turn first when the conversation starts with the assistant', () => {
    const out = chatRequestToMessages(
      request({ messages: [{ role: 'system', content: 'S' }, { role: 'assistant', content: 'Welcome!' }, { role: 'user', content: 'Hi' }] }),
      MODEL,
    );
    assert.deepEqual(out.messages, [
      { role: 'user', content: '.' },
      { role: 'assistant', content: 'Welcome!' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('sends a minimal user turn when there are only system messages', () => {
    const out = chatRequestToMessages(request({ messages: [{ role: 'system', content: 'Say hello.' }] }), MODEL);
    assert.equal(out.system, 'Say hello.');
    assert.deepEqual(out.messages, [{ role: 'user', content: '.' }]);
  });

  it('drops empty turns and the assistant reasoning_content history', () => {
    const out = chatRequestToMessages(
      request({
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: '', reasoning_content: 'hmm' },
          { role: 'user', content: 'Hello?' },
          { role: 'assistant', content: 'Yes.', reasoning_content: 'They repeat.' },
          { role: 'user', content: 'Bye' },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: 'Hello?' }] },
      { role: 'assistant', content: 'Yes.' },
      { role: 'user', content: 'Bye' },
    ]);
  });

  it('trims the trailing whitespace of a final assistant prefill', () => {
    const out = chatRequestToMessages(request({ messages: [{ role: 'user', content: 'JSON please' }, { role: 'assistant', content: '{\n  ' }] }), MODEL);
    assert.deepEqual(out.messages[1], { role: 'assistant', content: '{' });
  });
});

describe('chatRequestToMessages: parameters', () => {
  it('sends the upstream model id', () => {
    assert.equal(chatRequestToMessages(request(), MODEL).model, 'claude-up');
  });

  it('takes max_completion_tokens, else max_tokens, as max_tokens', () => {
    assert.equal(chatRequestToMessages(request({ max_tokens: 300 }), MODEL).max_tokens, 300);
    assert.equal(chatRequestToMessages(request({ max_completion_tokens: 200 }), MODEL).max_tokens, 200);
    assert.equal(chatRequestToMessages(request({ max_tokens: 300, max_completion_tokens: 200 }), MODEL).max_tokens, 200);
  });

  it('defaults max_tokens to the model maximum, capped at 32000, or 4096 when unknown', () => {
    assert.equal(chatRequestToMessages(request(), MODEL).max_tokens, 8192);
    assert.equal(chatRequestToMessages(request(), { ...MODEL, maxOutputTokens: 128000 }).max_tokens, 32000);
    assert.equal(chatRequestToMessages(request(), { ...MODEL, maxOutputTokens: 0 }).max_tokens, 4096);
  });

  it('sends stop as a stop_sequences array', () => {
    assert.deepEqual(chatRequestToMessages(request({ stop: 'END' }), MODEL).stop_sequences, ['END']);
    assert.deepEqual(chatRequestToMessages(request({ stop: ['a', 'b'] }), MODEL).stop_sequences, ['a', 'b']);
    assert.equal('stop_sequences' in chatRequestToMessages(request({ stop: null }), MODEL), false);
  });

  it('clamps temperature to 0..1 and keeps top_p', () => {
    assert.equal(chatRequestToMessages(request({ temperature: 1.7 }), MODEL).temperature, 1);
    assert.equal(chatRequestToMessages(request({ temperature: 0.4 }), MODEL).temperature, 0.4);
    assert.equal(chatRequestToMessages(request({ temperature: 0 }), MODEL).temperature, 0);
    assert.equal(chatRequestToMessages(request({ top_p: 0.8 }), MODEL).top_p, 0.8);
  });

  it('sends user as metadata.user_id', () => {
    assert.deepEqual(chatRequestToMessages(request({ user: 'user-42' }), MODEL).metadata, { user_id: 'user-42' });
  });

  it('streams when asked and drops what the messages format has no word for', () => {
    const out = chatRequestToMessages(
      request({
        stream: true,
        stream_options: { include_usage: true },
        frequency_penalty: 0.5,
        presence_penalty: 0.5,
        seed: 7,
        logprobs: true,
        n: 1,
      }),
      MODEL,
    );
    assert.deepEqual(out, { model: 'claude-up', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8192, stream: true });
  });

  it('refuses n > 1 with a 400 naming n', () => {
    assert.throws(
      () => chatRequestToMessages(request({ n: 3 }), MODEL),
      (err: unknown) => err instanceof GatewayError && err.status === 400 && err.code === 'invalid_parameters' && err.message.startsWith('n: '),
    );
  });
});

describe('chatRequestToMessages: tools and tool_choice', () => {
  const tools: ChatRequest['tools'] = [
    {
      type: 'function',
      function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true },
    },
    { type: 'function', function: { name: 'noop' } },
  ];

  it('turns functions into tools with parameters as input_schema, an object schema when absent', () => {
    assert.deepEqual(chatRequestToMessages(request({ tools }), MODEL).tools, [
      { name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      { name: 'noop', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  it('maps tool_choice auto, required, none and a named function', () => {
    const cases: Array<[NonNullable<ChatRequest['tool_choice']>, unknown]> = [
      ['auto', { type: 'auto' }],
      ['required', { type: 'any' }],
      ['none', { type: 'none' }],
      [{ type: 'function', function: { name: 'get_weather' } }, { type: 'tool', name: 'get_weather' }],
    ];
    for (const [choice, expected] of cases) {
      assert.deepEqual(chatRequestToMessages(request({ tools, tool_choice: choice }), MODEL).tool_choice, expected, JSON.stringify(choice));
    }
  });

  it('turns parallel_tool_calls false into disable_parallel_tool_use', () => {
    assert.deepEqual(chatRequestToMessages(request({ tools, parallel_tool_calls: false }), MODEL).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    assert.deepEqual(
      chatRequestToMessages(request({ tools, tool_choice: 'required', parallel_tool_calls: false }), MODEL).tool_choice,
      { type: 'any', disable_parallel_tool_use: true },
    );
    assert.deepEqual(chatRequestToMessages(request({ tools, tool_choice: 'none', parallel_tool_calls: false }), MODEL).tool_choice, { type: 'none' });
    assert.equal('tool_choice' in chatRequestToMessages(request({ tools, parallel_tool_calls: true }), MODEL), false);
  });

  it('sends no tool_choice without tools', () => {
    const out = chatRequestToMessages(request({ tools: [], tool_choice: 'required', parallel_tool_calls: false }), MODEL);
    assert.equal('tools' in out, false);
    assert.equal('tool_choice' in out, false);
  });
});

describe('chatRequestToMessages: reasoning_effort', () => {
  it('maps low, medium and high to thinking budgets 1024, 4096 and 16384 for reasoning models', () => {
    const cases: Array<[string, number]> = [['low', 1024], ['medium', 4096], ['high', 16384]];
    for (const [effort, budget] of cases) {
      const out = chatRequestToMessages(request({ reasoning_effort: effort, max_tokens: 24000 }), REASONING);
      assert.deepEqual(out.thinking, { type: 'enabled', budget_tokens: budget }, effort);
      assert.equal(out.max_tokens, 24000, effort);
    }
  });

  it('drops reasoning_effort for models not marked reasoning, and for none or unknown values', () => {
    assert.equal('thinking' in chatRequestToMessages(request({ reasoning_effort: 'high' }), MODEL), false);
    assert.equal('thinking' in chatRequestToMessages(request({ reasoning_effort: 'none' }), REASONING), false);
    assert.equal('thinking' in chatRequestToMessages(request({ reasoning_effort: 'constructor' }), REASONING), false);
  });

  it('leaves the answer a quarter of max_tokens: max_tokens 16384 with high effort thinks with 12288, not 16383', () => {
    // Issue 25: the budget was max_tokens - 1, one token left for the answer.
    const out = chatRequestToMessages(request({ reasoning_effort: 'high', max_tokens: 16384 }), REASONING);
    assert.equal(out.max_tokens, 16384);
    assert.deepEqual(out.thinking, { type: 'enabled', budget_tokens: 12288 });
  });

  it('keeps the budget within three quarters of a client max_tokens, and drops thinking when it cannot reach 1024', () => {
    const lowered = chatRequestToMessages(request({ reasoning_effort: 'high', max_tokens: 5000 }), REASONING);
    assert.deepEqual(lowered.thinking, { type: 'enabled', budget_tokens: 3750 });
    assert.equal(lowered.max_tokens, 5000);
    assert.equal('thinking' in chatRequestToMessages(request({ reasoning_effort: 'low', max_tokens: 1365 }), REASONING), false, 'three quarters of 1365 is under 1024');
    assert.deepEqual(chatRequestToMessages(request({ reasoning_effort: 'low', max_tokens: 1366 }), REASONING).thinking, { type: 'enabled', budget_tokens: 1024 });

    const warnings: string[] = [];
    const tooSmall = chatRequestToMessages(request({ reasoning_effort: 'low', max_tokens: 1024 }), REASONING, { onWarning: (m) => warnings.push(m) });
    assert.equal('thinking' in tooSmall, false);
    assert.equal(tooSmall.max_tokens, 1024);
    assert.equal(warnings.length, 1);
  });

  it('raises a defaulted max_tokens above the budget, within the model maximum', () => {
    const unknown = chatRequestToMessages(request({ reasoning_effort: 'high' }), { ...REASONING, maxOutputTokens: 0 });
    assert.equal(unknown.max_tokens, 21846, 'the budget and a third of it');
    assert.deepEqual(unknown.thinking, { type: 'enabled', budget_tokens: 16384 });

    const small = chatRequestToMessages(request({ reasoning_effort: 'high' }), { ...REASONING, maxOutputTokens: 8192 });
    assert.equal(small.max_tokens, 8192);
    assert.deepEqual(small.thinking, { type: 'enabled', budget_tokens: 6144 });

    const roomy = chatRequestToMessages(request({ reasoning_effort: 'high' }), REASONING);
    assert.equal(roomy.max_tokens, 32000);
    assert.deepEqual(roomy.thinking, { type: 'enabled', budget_tokens: 16384 });
  });

  it('drops temperature, and top_p below 0.95, when thinking is on', () => {
    const out = chatRequestToMessages(request({ reasoning_effort: 'low', temperature: 0.2, top_p: 0.5 }), REASONING);
    assert.deepEqual(out.thinking, { type: 'enabled', budget_tokens: 1024 });
    assert.equal('temperature' in out, false);
    assert.equal('top_p' in out, false);
    assert.equal(chatRequestToMessages(request({ reasoning_effort: 'low', top_p: 0.97 }), REASONING).top_p, 0.97);
  });

  it('gives up thinking for a forced tool choice', () => {
    const tools: ChatRequest['tools'] = [{ type: 'function', function: { name: 'f' } }];
    const out = chatRequestToMessages(request({ reasoning_effort: 'high', tools, tool_choice: 'required', temperature: 0.2 }), REASONING);
    assert.equal('thinking' in out, false);
    assert.equal(out.temperature, 0.2);
  });

  it('gives up thinking when the request answers tool calls, whose signed thinking a chat client cannot send back', () => {
    const out = chatRequestToMessages(
      request({
        reasoning_effort: 'high',
        messages: [
          { role: 'user', content: 'Go' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
        ],
      }),
      REASONING,
    );
    assert.equal('thinking' in out, false);
  });
});

describe('chatRequestToMessages: fields newer than the translation', () => {
  it('drops top-level fields a messages upstream has no equivalent for, naming each in a warning', () => {
    const warnings: string[] = [];
    const out = chatRequestToMessages(request({ store: true, prediction: { type: 'content', content: 'x' }, seed: 3 }), MODEL, { onWarning: (w) => warnings.push(w) });
    assert.deepEqual(warnings, ['store: dropped, a messages upstream has no equivalent', 'prediction: dropped, a messages upstream has no equivalent']);
    assert.equal(Object.hasOwn(out, 'store'), false);
    assert.equal(Object.hasOwn(out, 'prediction'), false);
  });
});

describe('chatRequestToMessages: response_format', () => {
  it('asks for a JSON object in the system text', () => {
    const out = chatRequestToMessages(request({ messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'Hi' }], response_format: { type: 'json_object' } }), MODEL);
    assert.equal(out.system, 'S\n\nRespond with a single valid JSON object and nothing else: no prose and no code fences.');
  });

  it('gives the JSON schema in the system text', () => {
    const out = chatRequestToMessages(
      request({ response_format: { type: 'json_schema', json_schema: { name: 'person', description: 'A person', schema: { type: 'object', properties: { name: { type: 'string' } } } } } }),
      MODEL,
    );
    assert.equal(
      out.system,
      'Respond with a single valid JSON value that conforms to the JSON schema "person" (A person), and nothing else: no prose and no code fences.\n' +
        '{"type":"object","properties":{"name":{"type":"string"}}}',
    );
  });

  it('adds nothing for a text response_format', () => {
    assert.equal('system' in chatRequestToMessages(request({ response_format: { type: 'text' } }), MODEL), false);
  });
});

describe('chatRequestToMessages: an OpenAI SDK conversation end to end', () => {
  const conversation: ChatRequest = {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer briefly.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Where is this, and what is the weather there?' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQSkZJRg==', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'https://example.com/paris.jpg' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [
          { id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "units": "c"}' } },
          { id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', type: 'function', function: { name: 'get_time', arguments: '{"tz": "Europe/Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', content: '18C, cloudy' },
      { role: 'tool', tool_call_id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', content: [{ type: 'text', text: '14:05' }] },
      { role: 'assistant', content: 'It is Paris: 18C and cloudy at 14:05.' },
      { role: 'user', content: 'Thanks! And tomorrow?' },
    ],
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'] } }, required: ['city'], additionalProperties: false },
          strict: true,
        },
      },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: false,
    stream: true,
    stream_options: { include_usage: true },
    temperature: 1.5,
    max_completion_tokens: 1000,
    stop: 'END',
    user: 'user-42',
    seed: 7,
  };

  it('translates the whole request as a messages upstream expects it', () => {
    assert.deepEqual(chatRequestToMessages(conversation, MODEL), {
      model: 'claude-up',
      system: 'You are a helpful assistant.\n\nAnswer briefly.',
      max_tokens: 1000,
      stream: true,
      temperature: 1,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
      tools: [
        {
          name: 'get_weather',
          description: 'Weather for a city',
          input_schema: { type: 'object', properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'] } }, required: ['city'], additionalProperties: false },
        },
        { name: 'get_time', input_schema: { type: 'object', properties: { tz: { type: 'string' } } } },
      ],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Where is this, and what is the weather there?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQSkZJRg==' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/paris.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', name: 'get_weather', input: { city: 'Paris', units: 'c' } },
            { type: 'tool_use', id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', name: 'get_time', input: { tz: 'Europe/Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', content: '18C, cloudy' },
            { type: 'tool_result', tool_use_id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', content: [{ type: 'text', text: '14:05' }] },
          ],
        },
        { role: 'assistant', content: 'It is Paris: 18C and cloudy at 14:05.' },
        { role: 'user', content: 'Thanks! And tomorrow?' },
      ],
    });
  });

  it('leaves the client request untouched', () => {
    const before = JSON.stringify(conversation);
    chatRequestToMessages(conversation, REASONING);
    assert.equal(JSON.stringify(conversation), before);
  });
});

describe('chatResponseToMessages: recorded answers', () => {
  it('translates the recorded OpenAI text answer exactly', () => {
    assert.deepEqual(withStableId(chatResponseToMessages(fixture('openai-nonstream-text.json'))), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o-2024-08-06',
      content: [{
        type: 'text',
        text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or app like the Weather Channel or a local news station.",
      }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 14, output_tokens: 37, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('translates the recorded OpenAI docs text answer exactly', () => {
    assert.deepEqual(withStableId(chatResponseToMessages(fixture('openai-docs-nonstream-text.json'))), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'gpt-5.4',
      content: [{ type: 'text', text: 'Hello! How can I assist you today?' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 19, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('translates the recorded OpenAI parallel tool calls exactly, ids unchanged', () => {
    assert.deepEqual(withStableId(chatResponseToMessages(fixture('openai-nonstream-parallel-tool-calls.json'))), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o-2024-08-06',
      content: [
        { type: 'tool_use', id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', name: 'GetWeatherArgs', caller: { type: 'direct' }, input: { city: 'Edinburgh', country: 'GB', units: 'c' } },
        { type: 'tool_use', id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', name: 'get_stock_price', caller: { type: 'direct' }, input: { ticker: 'AAPL', exchange: 'NASDAQ' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 149, output_tokens: 60, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('translates the recorded OpenAI docs tool call exactly', () => {
    assert.deepEqual(withStableId(chatResponseToMessages(fixture('openai-docs-nonstream-tool-calls.json'))), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o-mini',
      content: [{ type: 'tool_use', id: 'call_abc123', name: 'get_current_weather', caller: { type: 'direct' }, input: { location: 'Boston, MA' } }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 82, output_tokens: 17, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('translates the recorded OpenAI length stop exactly', () => {
    assert.deepEqual(withStableId(chatResponseToMessages(fixture('openai-nonstream-finish-length.json'))), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o-2024-08-06',
      content: [{ type: 'text', text: '{"' }],
      stop_reason: 'max_tokens',
      stop_sequence: null,
      usage: { input_tokens: 79, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('translates the recorded DeepSeek reasoning answer exactly, reasoning_content as a thinking block', () => {
    const resp = fixture('deepseek-nonstream-reasoning-content.json');
    const reasoning = resp.choices[0]?.message.reasoning_content;
    assert.equal(typeof reasoning, 'string');
    assert.ok((reasoning ?? '').startsWith('We are asked: "How many \'r\'s are in the word \'strawberry\'?"'));
    assert.deepEqual(withStableId(chatResponseToMessages(resp)), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'deepseek-reasoner',
      content: [
        { type: 'thinking', thinking: reasoning, signature: '' },
        { type: 'text', text: 'The word "strawberry" contains three instances of the letter "r": one after the "t" and two before the "y".' },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 18, output_tokens: 345, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });
});

describe('chatResponseToMessages: rules', () => {
  it('reads reasoning as Groq and OpenRouter send it', () => {
    const out = chatResponseToMessages(answer({ content: 'Hi', reasoning: 'Greet back.' }));
    assert.deepEqual(out.content, [{ type: 'thinking', thinking: 'Greet back.', signature: '' }, { type: 'text', text: 'Hi' }]);
  });

  it('gives an OpenAI refusal as text with stop reason refusal', () => {
    const out = chatResponseToMessages(answer({ content: null, refusal: "I'm sorry, I can't help with that." }));
    assert.deepEqual(out.content, [{ type: 'text', text: "I'm sorry, I can't help with that." }]);
    assert.equal(out.stop_reason, 'refusal');
    assert.equal(out.stop_sequence, null);
  });

  it('reports the matched stop sequence from vLLM stop_reason and SGLang matched_stop', () => {
    const vllm = chatResponseToMessages(answer({ content: 'a' }, { stop_reason: 'END' }));
    assert.equal(vllm.stop_reason, 'stop_sequence');
    assert.equal(vllm.stop_sequence, 'END');
    const sglang = chatResponseToMessages(answer({ content: 'a' }, { matched_stop: '###' }));
    assert.equal(sglang.stop_reason, 'stop_sequence');
    assert.equal(sglang.stop_sequence, '###');
    const tokenId = chatResponseToMessages(answer({ content: 'a' }, { stop_reason: 128009 }));
    assert.equal(tokenId.stop_reason, 'end_turn');
    assert.equal(tokenId.stop_sequence, null);
  });

  it('maps content_filter to refusal and function_call to tool_use', () => {
    assert.equal(chatResponseToMessages(answer({ content: 'partial' }, { finish_reason: 'content_filter' })).stop_reason, 'refusal');
    const legacy = chatResponseToMessages(answer({ function_call: { name: 'run', arguments: '{"x":1}' } }, { finish_reason: 'function_call' }));
    assert.equal(legacy.stop_reason, 'tool_use');
    assert.equal(legacy.content[0]?.type, 'tool_use');
    assert.deepEqual((legacy.content[0] as { input: unknown }).input, { x: 1 });
  });

  it('reads tool calls under finish_reason stop as tool_use, so the client runs them', () => {
    const out = chatResponseToMessages(answer({ tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }));
    assert.equal(out.stop_reason, 'tool_use');
  });

  it('takes cached tokens out of input_tokens once, from cached_tokens or DeepSeek prompt_cache_hit_tokens', () => {
    const openai = chatResponseToMessages(answer({ content: 'x' }, {}, {
      prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010, prompt_tokens_details: { cached_tokens: 800 },
    }));
    assert.deepEqual(openai.usage, { input_tokens: 200, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 800 });
    const deepseek = chatResponseToMessages(answer({ content: 'x' }, {}, {
      prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010, prompt_cache_hit_tokens: 640, prompt_cache_miss_tokens: 360,
    }));
    assert.deepEqual(deepseek.usage, { input_tokens: 360, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 640 });
  });

  it('uses choice 0 when there are several', () => {
    const resp = answer({ content: 'first' });
    resp.choices.push({ index: 1, message: { role: 'assistant', content: 'second' }, finish_reason: 'length' });
    const out = chatResponseToMessages(resp);
    assert.deepEqual(out.content, [{ type: 'text', text: 'first' }]);
    assert.equal(out.stop_reason, 'end_turn');
  });

  it('answers with empty content and zero usage when the upstream sent no choice and no usage', () => {
    const out = chatResponseToMessages({ id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [] });
    assert.deepEqual(withStableId(out), {
      id: 'msg_ID',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('names the llmux model it is given instead of the upstream\'s', () => {
    assert.equal(chatResponseToMessages({ id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [] }, { model: 'llmux-id' }).model, 'llmux-id');
  });

  it('warns about unparsable tool arguments in an answer and sends {}', () => {
    const warnings: string[] = [];
    const out = chatResponseToMessages(
      answer({ tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":' } }] }, { finish_reason: 'tool_calls' }),
      { onWarning: (m) => warnings.push(m) },
    );
    assert.deepEqual(out.content, [{ type: 'tool_use', id: 'call_1', name: 'f', caller: { type: 'direct' }, input: {} }]);
    assert.deepEqual(warnings, ['choices.0.message.tool_calls.0.function.arguments: not valid JSON; sent upstream as {}']);
  });

  it('reads an odd upstream answer leniently instead of throwing', () => {
    const odd = { choices: [{ message: { content: [{ type: 'text', text: 'part' }, null], tool_calls: [null, { id: 'c', function: null }] }, finish_reason: 7 }], usage: 'n/a' };
    const out = chatResponseToMessages(odd as unknown as ChatResponse);
    assert.deepEqual(out.content, [{ type: 'text', text: 'part' }, { type: 'tool_use', id: 'c', name: '', caller: { type: 'direct' }, input: {} }]);
    assert.equal(out.stop_reason, 'tool_use');
    assert.equal(out.model, '');
    assert.deepEqual(chatResponseToMessages(null as unknown as ChatResponse).content, []);
  });

  it('gives every answer a fresh msg_ id', () => {
    const resp = fixture('openai-nonstream-text.json');
    assert.notEqual(chatResponseToMessages(resp).id, chatResponseToMessages(resp).id);
  });
});
