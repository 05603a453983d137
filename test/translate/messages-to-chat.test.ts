import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ChatResponse, MessagesRequest, MessagesResponse } from '../../src/formats/wire.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { messagesRequestToChat } from '../../src/translate/messages-to-chat.ts';
import { messagesResponseToChat } from '../../src/translate/index.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);

function fixture(name: string): MessagesResponse {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as MessagesResponse;
}

const MODEL: UpstreamModel = {
  upstreamId: 'upstream-model',
  reasoning: false,
  maxTokensParam: 'max_tokens',
  replayReasoning: false,
  maxOutputTokens: 16384,
};

function request(extra: Partial<MessagesRequest> = {}): MessagesRequest {
  return { model: 'client-model', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...extra };
}

/** A fixed clock: 2025-01-01T00:00:00.500Z. */
const NOW_MS = 1735689600500;
const clock = { now: () => NOW_MS };

/** Checks the fresh id, then returns the answer with a stable id so it can be compared whole. */
function withStableId(answer: ChatResponse): ChatResponse {
  assert.match(answer.id, /^chatcmpl-[A-Za-z0-9]{24}$/);
  return { ...answer, id: 'chatcmpl-ID' };
}

describe('messagesRequestToChat: system', () => {
  it('sends a system string as one leading system message', () => {
    const chat = messagesRequestToChat(request({ system: 'Be brief.' }), MODEL);
    assert.deepEqual(chat.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('joins system blocks with a blank line and drops their cache_control', () => {
    const chat = messagesRequestToChat(
      request({ system: [{ type: 'text', text: 'One.', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'Two.' }] }),
      MODEL,
    );
    assert.deepEqual(chat.messages[0], { role: 'system', content: 'One.\n\nTwo.' });
  });

  it('sends no system message when the system prompt is absent or empty', () => {
    assert.deepEqual(messagesRequestToChat(request(), MODEL).messages, [{ role: 'user', content: 'Hi' }]);
    assert.deepEqual(messagesRequestToChat(request({ system: '' }), MODEL).messages, [{ role: 'user', content: 'Hi' }]);
    assert.deepEqual(messagesRequestToChat(request({ system: [] }), MODEL).messages, [{ role: 'user', content: 'Hi' }]);
  });
});

describe('messagesRequestToChat: user turns', () => {
  it('keeps string content and joins text-only blocks into one string', () => {
    const chat = messagesRequestToChat(
      request({ messages: [{ role: 'user', content: [{ type: 'text', text: '<reminder>' }, { type: 'text', text: 'Question?', cache_control: { type: 'ephemeral' } }] }] }),
      MODEL,
    );
    assert.deepEqual(chat.messages, [{ role: 'user', content: '<reminder>\n\nQuestion?' }]);
  });

  it('turns image blocks into image_url parts: base64 as a data URL, url sources as the URL', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [{
          role: 'user',
          content: [
            { type: 'text', text: 'Compare these.' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          ],
        }],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages, [{
      role: 'user',
      content: [
        { type: 'text', text: 'Compare these.' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
      ],
    }]);
  });

  it('sends a base64 PDF document as a file part and a text document as text', () => {
    const content = [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' }, title: 'report.pdf' },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' } },
      { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
    ] as unknown as MessagesRequest['messages'][number]['content'];
    const chat = messagesRequestToChat(request({ messages: [{ role: 'user', content }] }), MODEL);
    assert.deepEqual(chat.messages, [{
      role: 'user',
      content: [
        { type: 'file', file: { filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
        { type: 'text', text: 'plain notes' },
        { type: 'text', text: '[document omitted: https://example.com/a.pdf]' },
      ],
    }]);
  });
});

describe('messagesRequestToChat: assistant turns', () => {
  it('makes text and tool_use blocks one assistant message with content and tool_calls', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [
          { role: 'user', content: 'Weather in Paris and Rome?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking both.' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome', units: 'c' } },
            ],
          },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages[1], {
      role: 'assistant',
      content: 'Checking both.',
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome","units":"c"}' } },
      ],
    });
  });

  it('sends content null beside tool_calls when the assistant wrote no text', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [
          { role: 'user', content: 'Go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'run', input: {} }] },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages[1], {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'run', arguments: '{}' } }],
    });
  });

  it('keeps an assistant string as it is', () => {
    const chat = messagesRequestToChat(request({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] }), MODEL);
    assert.deepEqual(chat.messages[1], { role: 'assistant', content: 'Hello' });
  });

  const thinkingHistory: MessagesRequest['messages'] = [
    { role: 'user', content: 'Sum 2 and 2' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Two plus two.', signature: 'sig' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: '4' },
      ],
    },
    { role: 'user', content: 'Thanks' },
  ];

  it('drops thinking blocks for upstreams that do not replay reasoning', () => {
    const chat = messagesRequestToChat(request({ messages: thinkingHistory }), MODEL);
    assert.deepEqual(chat.messages[1], { role: 'assistant', content: '4' });
  });

  it('replays thinking as reasoning_content for DeepSeek-style upstreams, never redacted thinking', () => {
    const chat = messagesRequestToChat(request({ messages: thinkingHistory }), { ...MODEL, replayReasoning: true });
    assert.deepEqual(chat.messages[1], { role: 'assistant', content: '4', reasoning_content: 'Two plus two.' });
  });
});

describe('messagesRequestToChat: tool results', () => {
  const history: MessagesRequest['messages'] = [
    { role: 'user', content: 'List files and read a.txt' },
    {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'toolu_ls', name: 'ls', input: {} },
        { type: 'tool_use', id: 'toolu_cat', name: 'cat', input: { path: 'a.txt' } },
      ],
    },
  ];

  it('places one tool message per result right after the assistant call, before the rest of the user turn', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [
          ...history,
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Here you go.' },
              { type: 'tool_result', tool_use_id: 'toolu_ls', content: 'a.txt b.txt' },
              { type: 'tool_result', tool_use_id: 'toolu_cat', content: [{ type: 'text', text: 'line 1' }, { type: 'text', text: 'line 2' }] },
            ],
          },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages.slice(2), [
      { role: 'tool', tool_call_id: 'toolu_ls', content: 'a.txt b.txt' },
      { role: 'tool', tool_call_id: 'toolu_cat', content: 'line 1\n\nline 2' },
      { role: 'user', content: 'Here you go.' },
    ]);
  });

  it('sends no user message when the turn holds only tool results', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [
          ...history,
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_ls', content: 'a.txt' },
              { type: 'tool_result', tool_use_id: 'toolu_cat' },
            ],
          },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages.slice(2), [
      { role: 'tool', tool_call_id: 'toolu_ls', content: 'a.txt' },
      { role: 'tool', tool_call_id: 'toolu_cat', content: '' },
    ]);
  });

  it('prefixes an is_error result with "Error: " so the model can tell it failed', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [
          ...history,
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_ls', content: 'permission denied', is_error: true },
              { type: 'tool_result', tool_use_id: 'toolu_cat', content: [{ type: 'text', text: 'no such file' }], is_error: true },
            ],
          },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages.slice(2), [
      { role: 'tool', tool_call_id: 'toolu_ls', content: 'Error: permission denied' },
      { role: 'tool', tool_call_id: 'toolu_cat', content: 'Error: no such file' },
    ]);
  });

  it('replaces an image inside a tool result with a placeholder, since tool messages carry text only', () => {
    const chat = messagesRequestToChat(
      request({
        messages: [
          ...history,
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_ls',
                content: [
                  { type: 'text', text: 'Screenshot:' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
                ],
              },
              { type: 'tool_result', tool_use_id: 'toolu_cat', content: 'x' },
            ],
          },
        ],
      }),
      MODEL,
    );
    assert.deepEqual(chat.messages[2], {
      role: 'tool',
      tool_call_id: 'toolu_ls',
      content: 'Screenshot:\n\n[image omitted: tool results sent to this model carry text only]',
    });
  });
});

describe('messagesRequestToChat: tools and tool_choice', () => {
  const tools: MessagesRequest['tools'] = [
    {
      name: 'get_weather',
      description: 'Current weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      cache_control: { type: 'ephemeral' },
    },
    { name: 'noop', input_schema: { type: 'object', properties: {} } },
  ];

  it('turns tools into functions with the input schema as parameters', () => {
    const chat = messagesRequestToChat(request({ tools }), MODEL);
    assert.deepEqual(chat.tools, [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
      { type: 'function', function: { name: 'noop', parameters: { type: 'object', properties: {} } } },
    ]);
  });

  it('refuses an Anthropic server tool (web search, web fetch, code execution) with a 400 naming it, never an answer that silently used none', () => {
    for (const type of ['web_search_20250305', 'web_fetch_20250910', 'code_execution_20250825']) {
      const serverTool = { type, name: type.split('_2')[0] } as unknown as NonNullable<MessagesRequest['tools']>[number];
      assert.throws(() => messagesRequestToChat(request({ tools: [...(tools ?? []), serverTool] }), MODEL), (err: unknown) => {
        assert.ok(err instanceof GatewayError);
        assert.equal(err.status, 400);
        assert.match(err.message, new RegExp(`^tools\\.2: "${type}" is an Anthropic server tool`));
        return true;
      });
    }
  });

  it('drops another Anthropic-defined tool (a schema-less client tool), and a tool_choice naming it, with a warning naming the field', () => {
    const bash = { type: 'bash_20250124', name: 'bash' } as unknown as NonNullable<MessagesRequest['tools']>[number];
    const warnings: string[] = [];
    const chat = messagesRequestToChat(request({ tools: [...(tools ?? []), bash], tool_choice: { type: 'tool', name: 'bash' } }), MODEL, { onWarning: (w) => warnings.push(w) });
    assert.deepEqual(chat.tools?.map((tool) => tool.function.name), ['get_weather', 'noop']);
    assert.equal(chat.tool_choice, undefined);
    assert.equal(warnings.length, 2);
    assert.match(warnings[0] ?? '', /^tools\.2: dropped, "bash_20250124" is an Anthropic-defined tool/);
    assert.match(warnings[1] ?? '', /^tool_choice: dropped/);
    assert.equal(messagesRequestToChat(request({ tools: [bash] }), MODEL).tools, undefined);
  });

  it('accepts a tool whose type is custom', () => {
    const custom = { type: 'custom', name: 'x', input_schema: { type: 'object', properties: {} } } as NonNullable<MessagesRequest['tools']>[number];
    assert.deepEqual(messagesRequestToChat(request({ tools: [custom] }), MODEL).tools, [
      { type: 'function', function: { name: 'x', parameters: { type: 'object', properties: {} } } },
    ]);
  });

  it('maps tool_choice auto, any, tool and none', () => {
    const cases: Array<[NonNullable<MessagesRequest['tool_choice']>, unknown]> = [
      [{ type: 'auto' }, 'auto'],
      [{ type: 'any' }, 'required'],
      [{ type: 'tool', name: 'get_weather' }, { type: 'function', function: { name: 'get_weather' } }],
      [{ type: 'none' }, 'none'],
    ];
    for (const [choice, expected] of cases) {
      const chat = messagesRequestToChat(request({ tools, tool_choice: choice }), MODEL);
      assert.deepEqual(chat.tool_choice, expected, choice.type);
      assert.equal('parallel_tool_calls' in chat, false, choice.type);
    }
  });

  it('turns disable_parallel_tool_use into parallel_tool_calls false', () => {
    const chat = messagesRequestToChat(request({ tools, tool_choice: { type: 'any', disable_parallel_tool_use: true } }), MODEL);
    assert.equal(chat.tool_choice, 'required');
    assert.equal(chat.parallel_tool_calls, false);
  });

  it('sends neither tools, tool_choice nor parallel_tool_calls when there are no tools', () => {
    const chat = messagesRequestToChat(request({ tools: [], tool_choice: { type: 'auto', disable_parallel_tool_use: true } }), MODEL);
    assert.equal('tools' in chat, false);
    assert.equal('tool_choice' in chat, false);
    assert.equal('parallel_tool_calls' in chat, false);
  });
});

describe('messagesRequestToChat: parameters', () => {
  it('sends the upstream model id and max_tokens under the model\'s parameter name', () => {
    const plain = messagesRequestToChat(request({ max_tokens: 321 }), MODEL);
    assert.equal(plain.model, 'upstream-model');
    assert.equal(plain.max_tokens, 321);
    assert.equal('max_completion_tokens' in plain, false);

    const reasoningModel = messagesRequestToChat(request({ max_tokens: 321 }), { ...MODEL, maxTokensParam: 'max_completion_tokens' });
    assert.equal(reasoningModel.max_completion_tokens, 321);
    assert.equal('max_tokens' in reasoningModel, false);
  });

  it('sends stop_sequences as stop', () => {
    assert.deepEqual(messagesRequestToChat(request({ stop_sequences: ['END', '###'] }), MODEL).stop, ['END', '###']);
    assert.equal('stop' in messagesRequestToChat(request({ stop_sequences: [] }), MODEL), false);
  });

  it('keeps temperature and top_p and drops top_k', () => {
    const chat = messagesRequestToChat(request({ temperature: 0.3, top_p: 0.9, top_k: 40 }), MODEL);
    assert.equal(chat.temperature, 0.3);
    assert.equal(chat.top_p, 0.9);
    assert.equal('top_k' in chat, false);
  });

  it('sends metadata.user_id as user', () => {
    assert.equal(messagesRequestToChat(request({ metadata: { user_id: 'user-7' } }), MODEL).user, 'user-7');
    assert.equal('user' in messagesRequestToChat(request({ metadata: {} }), MODEL), false);
  });

  it('maps the thinking budget to reasoning_effort for reasoning models: below 2048 low, below 8192 medium, else high', () => {
    const reasoning = { ...MODEL, reasoning: true };
    const cases: Array<[number, string]> = [[1024, 'low'], [2047, 'low'], [2048, 'medium'], [8191, 'medium'], [8192, 'high'], [31999, 'high']];
    for (const [budget, effort] of cases) {
      const chat = messagesRequestToChat(request({ max_tokens: 64000, thinking: { type: 'enabled', budget_tokens: budget } }), reasoning);
      assert.equal(chat.reasoning_effort, effort, String(budget));
      assert.equal('thinking' in chat, false);
    }
  });

  it('drops thinking for models not marked reasoning, and when thinking is disabled', () => {
    const notReasoning = messagesRequestToChat(request({ thinking: { type: 'enabled', budget_tokens: 4096 } }), MODEL);
    assert.equal('reasoning_effort' in notReasoning, false);
    const disabled = messagesRequestToChat(request({ thinking: { type: 'disabled' } }), { ...MODEL, reasoning: true });
    assert.equal('reasoning_effort' in disabled, false);
  });

  it('maps adaptive thinking by its output_config effort, max as high', () => {
    const reasoning = { ...MODEL, reasoning: true };
    const adaptive = { type: 'adaptive' } as unknown as NonNullable<MessagesRequest['thinking']>;
    assert.equal(messagesRequestToChat(request({ thinking: adaptive, output_config: { effort: 'low' } }), reasoning).reasoning_effort, 'low');
    assert.equal(messagesRequestToChat(request({ thinking: adaptive, output_config: { effort: 'max' } }), reasoning).reasoning_effort, 'high');
    assert.equal('reasoning_effort' in messagesRequestToChat(request({ thinking: adaptive }), reasoning), false);
  });

  it('asks for a stream with usage when the client streams, and for neither otherwise', () => {
    const streamed = messagesRequestToChat(request({ stream: true }), MODEL);
    assert.equal(streamed.stream, true);
    assert.deepEqual(streamed.stream_options, { include_usage: true });
    const whole = messagesRequestToChat(request({ stream: false }), MODEL);
    assert.equal('stream' in whole, false);
    assert.equal('stream_options' in whole, false);
  });

  it('drops fields the chat format has no word for', () => {
    const chat = messagesRequestToChat(request({ service_tier: 'auto', top_k: 5, mcp_servers: [] }), MODEL);
    assert.deepEqual(chat, { model: 'upstream-model', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 100 });
  });
});

describe('messagesRequestToChat: a Claude Code conversation end to end', () => {
  const conversation: MessagesRequest = {
    model: 'claude-sonnet-4-5',
    max_tokens: 32000,
    stream: true,
    temperature: 1,
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.', cache_control: { type: 'ephemeral' } },
    ],
    tools: [
      {
        name: 'Bash',
        description: 'Executes a given bash command',
        input_schema: {
          type: 'object',
          properties: { command: { type: 'string', description: 'The command to execute' } },
          required: ['command'],
          additionalProperties: false,
          $schema: 'http://json-schema.org/draft-07/schema#',
        },
      },
      {
        name: 'Read',
        description: 'Reads a file from the local filesystem.',
        input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
        cache_control: { type: 'ephemeral' },
      },
    ],
    metadata: { user_id: 'user_2f1a_account__session_9c7e' },
    thinking: { type: 'enabled', budget_tokens: 31999 },
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>Use the TodoWrite tool.</system-reminder>' },
          { type: 'text', text: 'Run the tests and fix what fails', cache_control: { type: 'ephemeral' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Run the suite first.', signature: 'EqQBCkgIAhABGAIiQL' },
          { type: 'text', text: "I'll run the tests." },
          { type: 'tool_use', id: 'toolu_01A', name: 'Bash', input: { command: 'npm test' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: '1 failing: expected 4, got 5', is_error: true }],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Read the code and the test.', signature: 'EqQBCkgIAhABGAIiQM' },
          { type: 'tool_use', id: 'toolu_01B', name: 'Read', input: { file_path: '/repo/src/sum.ts' } },
          { type: 'tool_use', id: 'toolu_01C', name: 'Read', input: { file_path: '/repo/test/sum.test.ts' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01B', content: [{ type: 'text', text: 'export const sum = (a, b) => a + b + 1;' }] },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01C',
            content: [{ type: 'text', text: "assert.equal(sum(2, 2), 4);" }],
            cache_control: { type: 'ephemeral' },
          },
          { type: 'text', text: '<system-reminder>sum.ts was opened in the IDE.</system-reminder>' },
        ],
      },
    ],
  };

  const model: UpstreamModel = {
    upstreamId: 'deepseek-reasoner',
    reasoning: true,
    maxTokensParam: 'max_tokens',
    replayReasoning: true,
    maxOutputTokens: 64000,
  };

  it('translates the whole request as a chat upstream expects it', () => {
    assert.deepEqual(messagesRequestToChat(conversation, model), {
      model: 'deepseek-reasoner',
      max_tokens: 32000,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 1,
      user: 'user_2f1a_account__session_9c7e',
      reasoning_effort: 'high',
      tools: [
        {
          type: 'function',
          function: {
            name: 'Bash',
            description: 'Executes a given bash command',
            parameters: {
              type: 'object',
              properties: { command: { type: 'string', description: 'The command to execute' } },
              required: ['command'],
              additionalProperties: false,
              $schema: 'http://json-schema.org/draft-07/schema#',
            },
          },
        },
        {
          type: 'function',
          function: {
            name: 'Read',
            description: 'Reads a file from the local filesystem.',
            parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
          },
        },
      ],
      messages: [
        {
          role: 'system',
          content: "You are Claude Code, Anthropic's official CLI for Claude.\n\nYou are an interactive CLI tool that helps users with software engineering tasks.",
        },
        { role: 'user', content: '<system-reminder>Use the TodoWrite tool.</system-reminder>\n\nRun the tests and fix what fails' },
        {
          role: 'assistant',
          content: "I'll run the tests.",
          reasoning_content: 'Run the suite first.',
          tool_calls: [{ id: 'toolu_01A', type: 'function', function: { name: 'Bash', arguments: '{"command":"npm test"}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_01A', content: 'Error: 1 failing: expected 4, got 5' },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'Read the code and the test.',
          tool_calls: [
            { id: 'toolu_01B', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/repo/src/sum.ts"}' } },
            { id: 'toolu_01C', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/repo/test/sum.test.ts"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01B', content: 'export const sum = (a, b) => a + b + 1;' },
        { role: 'tool', tool_call_id: 'toolu_01C', content: 'assert.equal(sum(2, 2), 4);' },
        { role: 'user', content: '<system-reminder>sum.ts was opened in the IDE.</system-reminder>' },
      ],
    });
  });

  it('leaves the client request untouched', () => {
    const before = JSON.stringify(conversation);
    messagesRequestToChat(conversation, model);
    assert.equal(JSON.stringify(conversation), before);
  });
});

describe('messagesRequestToChat: what the description does not rule on (llmux.md section 5)', () => {
  function translateWarned(extra: Record<string, unknown>): { chat: ReturnType<typeof messagesRequestToChat>; warnings: string[] } {
    const warnings: string[] = [];
    const chat = messagesRequestToChat({ ...request(), ...extra } as MessagesRequest, MODEL, { onWarning: (w) => warnings.push(w) });
    return { chat, warnings };
  }

  it('drops fields it has no chat equivalent for, naming each in a warning, and keeps the rest of the request', () => {
    const { chat, warnings } = translateWarned({
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      container: 'c1',
      output_config: { effort: 'high', format: { type: 'json_schema', schema: {} } },
      thinking: { type: 'adaptive', display: 'updates' },
    });
    assert.deepEqual(warnings, [
      'context_management: dropped, a chat-completions upstream has no equivalent',
      'container: dropped, a chat-completions upstream has no equivalent',
      'output_config.format: dropped, a chat-completions upstream has no equivalent',
    ]);
    assert.deepEqual(chat.messages, [{ role: 'user', content: 'Hi' }]);
    assert.equal(Object.hasOwn(chat, 'context_management'), false);
  });

  it('drops a thinking type newer than it knows with a warning', () => {
    const { chat, warnings } = translateWarned({ thinking: { type: 'deliberate', budget_tokens: 4000 } });
    assert.equal(chat.reasoning_effort, undefined);
    assert.deepEqual(warnings, ['thinking.type "deliberate": dropped, a chat-completions upstream has no equivalent']);
  });

  it('drops a thread create with a warning, and refuses a thread continue with the code the Anthropic SDK recovers from', () => {
    const { warnings } = translateWarned({ thread: { type: 'create' } });
    assert.match(warnings[0] ?? '', /^thread: dropped/);
    assert.throws(
      () => translateWarned({ thread: { type: 'continue', previous_message_id: 'msg_1' } }),
      (err: unknown) => err instanceof GatewayError && err.status === 400 && err.code === 'thread_unsupported_request'
        && (err.extra?.['details'] as Record<string, unknown>)['error_code'] === 'thread_unsupported_request',
    );
  });

  it('drops block types newer than it knows, naming them, and keeps the text of those that carry some', () => {
    const { chat, warnings } = translateWarned({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'container_upload', file_id: 'f' }, { type: 'new_text_kind', text: 'b' }] }],
    });
    assert.deepEqual(chat.messages, [{ role: 'user', content: 'a\n\nb' }]);
    assert.deepEqual(warnings, ['messages.0.content.1: dropped, a chat-completions upstream has nothing for a "container_upload" block']);
  });

  it('merges consecutive turns of one role, as the Anthropic API does', () => {
    const { chat } = translateWarned({
      messages: [
        { role: 'user', content: 'first' },
        { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }, { type: 'text', text: 'second' }] },
        { role: 'assistant', content: 'one' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1' }] },
      ],
    });
    assert.deepEqual(chat.messages, [
      { role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }, { type: 'text', text: 'second' }] },
      { role: 'assistant', content: 'one', tool_calls: [{ id: 't1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: '' },
    ]);
  });

  it('sends a metadata.user_id longer than 64 characters as a stable 64-character hash, and a shorter one as it is', () => {
    const long = `user_${'a'.repeat(64)}_account_${'b'.repeat(36)}_session_${'c'.repeat(36)}`;
    const first = translateWarned({ metadata: { user_id: long } }).chat.user ?? '';
    assert.equal(first.length, 64);
    assert.notEqual(first, long.slice(0, 64));
    assert.equal(translateWarned({ metadata: { user_id: long } }).chat.user, first);
    assert.notEqual(translateWarned({ metadata: { user_id: `${long}x` } }).chat.user, first);
    assert.equal(translateWarned({ metadata: { user_id: 'u'.repeat(64) } }).chat.user, 'u'.repeat(64));
  });
});

describe('messagesResponseToChat', () => {
  it('translates the recorded Anthropic text answer exactly', () => {
    const answer = messagesResponseToChat(fixture('anthropic-nonstream-text.json'), clock);
    assert.deepEqual(withStableId(answer), {
      id: 'chatcmpl-ID',
      object: 'chat.completion',
      created: 1735689600,
      model: 'claude-sonnet-4-5-20250929',
      choices: [{
        index: 0,
        message: { role: 'assistant', content: '{"product_name": "Green Tea", "price": 5.50, "quantity": 2}', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      }],
      usage: { prompt_tokens: 249, completion_tokens: 26, total_tokens: 275, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });

  it('translates the recorded Anthropic tool_use answer exactly, keeping the tool call id', () => {
    const answer = messagesResponseToChat(fixture('anthropic-nonstream-tool-use.json'), clock);
    assert.deepEqual(withStableId(answer), {
      id: 'chatcmpl-ID',
      object: 'chat.completion',
      created: 1735689600,
      model: 'claude-haiku-4-5-20251001',
      choices: [{
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [{
            id: 'toolu_01Q9ExVZnzZj7E2QQYHYtNUa',
            type: 'function',
            function: {
              name: 'json',
              arguments:
                '{"elements":[{"location":"San Francisco","temperature":-5,"condition":"snowy"},' +
                '{"location":"London","temperature":0,"condition":"snowy"},' +
                '{"location":"Paris","temperature":23,"condition":"cloudy"},' +
                '{"location":"Berlin","temperature":-9,"condition":"snowy"}]}',
            },
          }],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      }],
      usage: { prompt_tokens: 1151, completion_tokens: 87, total_tokens: 1238, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });

  it('translates the recorded Anthropic refusal with no content as content_filter with empty content, as its stream assembles', () => {
    const answer = messagesResponseToChat(fixture('anthropic-nonstream-refusal.json'), clock);
    assert.deepEqual(withStableId(answer), {
      id: 'chatcmpl-ID',
      object: 'chat.completion',
      created: 1735689600,
      model: 'claude-fable-5',
      choices: [{ index: 0, message: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: 'content_filter' }],
      usage: { prompt_tokens: 18, completion_tokens: 5, total_tokens: 23, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });

  it('gives thinking as reasoning_content and joins text blocks the way the stream would', () => {
    const answer = messagesResponseToChat({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'thinking', thinking: 'Let me think.', signature: 'sig' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'The answer', citations: null },
        { type: 'text', text: ' is 4.' },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 20 },
    }, clock);
    assert.deepEqual(answer.choices[0]?.message, {
      role: 'assistant',
      content: 'The answer is 4.',
      reasoning_content: 'Let me think.',
      refusal: null,
    });
  });

  it('counts cached input tokens inside prompt_tokens once', () => {
    const answer = messagesResponseToChat({
      id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }],
      stop_reason: 'end_turn', stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 7, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 },
    }, clock);
    assert.deepEqual(answer.usage, {
      prompt_tokens: 1205,
      completion_tokens: 7,
      total_tokens: 1212,
      prompt_tokens_details: { cached_tokens: 1000 },
    });
  });

  it('maps every stop reason to its finish reason', () => {
    const cases: Array<[MessagesResponse['stop_reason'], string]> = [
      ['end_turn', 'stop'],
      ['stop_sequence', 'stop'],
      ['pause_turn', 'stop'],
      ['max_tokens', 'length'],
      ['model_context_window_exceeded', 'length'],
      ['tool_use', 'tool_calls'],
      ['refusal', 'content_filter'],
    ];
    for (const [stopReason, finishReason] of cases) {
      const answer = messagesResponseToChat({
        id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [],
        stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 },
      });
      assert.equal(answer.choices[0]?.finish_reason, finishReason, String(stopReason));
    }
  });

  it('reads an odd upstream answer leniently instead of throwing', () => {
    const odd = { content: [null, { type: 'text' }, { type: 'text', text: 'ok' }, { type: 'tool_use', id: 't', name: 'f', input: 'x' }], stop_reason: 5, usage: null };
    const answer = messagesResponseToChat(odd as unknown as MessagesResponse, clock);
    assert.deepEqual(answer.choices[0], {
      index: 0,
      message: { role: 'assistant', content: 'ok', refusal: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      logprobs: null,
      finish_reason: 'stop',
    });
    assert.equal(answer.model, '');
    assert.deepEqual(answer.usage, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0 } });
    assert.equal(messagesResponseToChat(null as unknown as MessagesResponse, clock).choices[0]?.message.content, '');
  });

  it('names the llmux model it is given instead of the upstream\'s', () => {
    assert.equal(messagesResponseToChat(fixture('anthropic-nonstream-text.json'), { ...clock, model: 'llmux-id' }).model, 'llmux-id');
  });

  it('gives every answer a fresh id and the current time by default', (t) => {
    const resp = fixture('anthropic-nonstream-text.json');
    // The system clock, held still: `created` is its second, whatever second this test runs in.
    t.mock.method(Date, 'now', () => 1_773_482_405_999);
    const first = messagesResponseToChat(resp);
    const second = messagesResponseToChat(resp);
    assert.notEqual(first.id, second.id);
    assert.equal(first.created, 1_773_482_405);
  });
});

describe('mid-conversation system turns', () => {
  it('become chat system messages where they stand', () => {
    const out = messagesRequestToChat({
      model: 'm', max_tokens: 10,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'text', text: 'Note.' }] },
        { role: 'assistant', content: 'ok' },
      ],
    } as unknown as MessagesRequest, { upstreamId: 'u', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 0 });
    assert.deepEqual(out.messages.map((m) => [m.role, m.content]), [['user', 'hi'], ['system', 'Note.'], ['assistant', 'ok']]);
  });
});
