import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validateMessagesRequest } from '../../src/formats/messages.ts';
import { deepFreeze } from '../../src/common/json-recall.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { assertOnlyRefusals, createMutator } from '../helpers/mutate.ts';

// Bodies are arbitrary JSON; tests poke into them freely.
type Body = Record<string, any>;

const PNG_1PX =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A request that exercises every field the validator knows, in a valid shape. */
function fullRequest(): Body {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 8192,
    system: [
      { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Project notes.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>context</system-reminder>' },
          { type: 'text', text: 'Fix the bug in app.ts', cache_control: { type: 'ephemeral' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I should read the file.', signature: 'EqQBCkgIBxABGAIiQ' },
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
          { type: 'text', text: 'Reading the file.' },
          { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: '/app.ts' } },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01',
            content: [
              { type: 'text', text: 'export const x = 1;' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1PX } },
            ],
            is_error: false,
            cache_control: { type: 'ephemeral' },
          },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG_1PX } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } },
          { type: 'text', text: 'Here is the file.' },
        ],
      },
      { role: 'assistant', content: 'Done.' },
    ],
    temperature: 1,
    top_p: 0.9,
    top_k: 40,
    stream: true,
    stop_sequences: ['\n\nHuman:'],
    tools: [
      {
        name: 'Read',
        description: 'Reads a file',
        input_schema: {
          type: 'object',
          properties: { file_path: { type: 'string' } },
          required: ['file_path'],
        },
        cache_control: { type: 'ephemeral' },
      },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
    ],
    tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    thinking: { type: 'enabled', budget_tokens: 4096 },
    service_tier: 'auto',
    metadata: { user_id: 'user_abc' },
  };
}

function rejection(body: unknown, options: { strict?: boolean } = {}): GatewayError {
  try {
    validateMessagesRequest(body, options);
  } catch (err) {
    assert.ok(err instanceof GatewayError, `expected a GatewayError, got ${String(err)}`);
    return err;
  }
  return assert.fail('expected the request to be rejected');
}

interface BrokenRule {
  rule: string;
  path: string;
  /** Text the message must contain after the path. */
  says: string;
  breakIt(body: Body): void;
  /** One of the description's rules that only `strict` enforces (llmux.md section 5). */
  strictOnly?: true;
}

const brokenRules: BrokenRule[] = [
  // model
  { rule: 'model is required', path: 'model', says: 'is required', breakIt: (b) => delete b.model },
  { rule: 'model must not be empty', path: 'model', says: 'non-empty string', breakIt: (b) => (b.model = '') },
  { rule: 'model must be a string', path: 'model', says: 'non-empty string', breakIt: (b) => (b.model = 42) },
  // messages
  { rule: 'messages is required', path: 'messages', says: 'is required', breakIt: (b) => delete b.messages },
  { rule: 'messages must be an array', path: 'messages', says: 'array', breakIt: (b) => (b.messages = { role: 'user' }) },
  { rule: 'messages needs at least one item', path: 'messages', says: 'at least 1 item', breakIt: (b) => (b.messages = []) },
  { rule: 'a message must be an object', path: 'messages.1', says: 'an object', breakIt: (b) => (b.messages[1] = 'hi') },
  { rule: 'role must be user or assistant', path: 'messages.1.role', says: 'one of user, assistant', breakIt: (b) => (b.messages[1].role = 'moderator') },
  { rule: 'role is required', path: 'messages.1.role', says: 'is required', breakIt: (b) => delete b.messages[1].role },
  {
    rule: 'the first message must be from the user',
    path: 'messages.0.role',
    says: 'first message must have role "user"',
    breakIt: (b) => (b.messages = [{ role: 'assistant', content: 'Hello' }]),
  },
  {
    rule: 'roles must alternate',
    path: 'messages.3.role',
    says: 'must be "assistant": roles must alternate',
    breakIt: (b) => (b.messages[3].role = 'user'),
    strictOnly: true,
  },
  { rule: 'content is required', path: 'messages.1.content', says: 'is required', breakIt: (b) => delete b.messages[1].content },
  { rule: 'content must be a string or an array', path: 'messages.1.content', says: 'a string or an array', breakIt: (b) => (b.messages[1].content = 7) },
  {
    rule: 'the first message may only hold text blocks',
    path: 'messages.0.content.1.type',
    says: 'first message may only contain text',
    breakIt: (b) => (b.messages[0].content[1] = { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }),
    strictOnly: true,
  },
  // content blocks
  { rule: 'a block must be an object', path: 'messages.2.content.4', says: 'content block object', breakIt: (b) => (b.messages[2].content[4] = 'text') },
  { rule: 'a block needs a type', path: 'messages.2.content.4.type', says: 'is required', breakIt: (b) => delete b.messages[2].content[4].type },
  {
    rule: 'an unknown block type is refused with the allowed types named',
    path: 'messages.2.content.4.type',
    says: 'one of text, image, document, tool_use, tool_result, thinking, redacted_thinking',
    breakIt: (b) => (b.messages[2].content[4] = { type: 'video', url: 'x' }),
    strictOnly: true,
  },
  { rule: 'text needs a string text', path: 'messages.2.content.4.text', says: 'a string', breakIt: (b) => (b.messages[2].content[4].text = ['a']) },
  { rule: 'cache_control must be an object', path: 'messages.0.content.1.cache_control', says: 'an object', breakIt: (b) => (b.messages[0].content[1].cache_control = 'ephemeral') },
  { rule: 'cache_control type must be ephemeral', path: 'messages.0.content.1.cache_control.type', says: '"ephemeral"', breakIt: (b) => (b.messages[0].content[1].cache_control.type = 'persistent') },
  { rule: 'cache_control ttl must be 5m or 1h', path: 'system.1.cache_control.ttl', says: 'one of 5m, 1h', breakIt: (b) => (b.system[1].cache_control.ttl = '10m') },
  // image
  { rule: 'an image needs a source', path: 'messages.2.content.1.source', says: 'is required', breakIt: (b) => delete b.messages[2].content[1].source },
  { rule: 'image source type must be base64 or url', path: 'messages.2.content.1.source.type', says: 'one of base64, url', breakIt: (b) => (b.messages[2].content[1].source.type = 'file') },
  {
    rule: 'image media_type must be one of the four types',
    path: 'messages.2.content.1.source.media_type',
    says: 'must be one of image/jpeg, image/png, image/gif, image/webp',
    breakIt: (b) => (b.messages[2].content[1].source.media_type = 'image/bmp'),
  },
  { rule: 'image data is required', path: 'messages.2.content.1.source.data', says: 'is required', breakIt: (b) => delete b.messages[2].content[1].source.data },
  { rule: 'image data must not be empty', path: 'messages.2.content.1.source.data', says: 'non-empty base64', breakIt: (b) => (b.messages[2].content[1].source.data = '') },
  { rule: 'image data must be base64 characters', path: 'messages.2.content.1.source.data', says: 'base64', breakIt: (b) => (b.messages[2].content[1].source.data = 'iVBO*w0K') },
  { rule: 'image data must be padded base64', path: 'messages.2.content.1.source.data', says: 'base64', breakIt: (b) => (b.messages[2].content[1].source.data = 'iVBORw0') },
  {
    rule: 'image data must not carry a data URL prefix',
    path: 'messages.2.content.1.source.data',
    says: 'without a "data:',
    breakIt: (b) => (b.messages[2].content[1].source.data = `data:image/jpeg;base64,${PNG_1PX}`),
  },
  { rule: 'image url must be http(s)', path: 'messages.2.content.2.source.url', says: 'http:// or https://', breakIt: (b) => (b.messages[2].content[2].source.url = 'file:///etc/passwd') },
  { rule: 'image url is required for a url source', path: 'messages.2.content.2.source.url', says: 'is required', breakIt: (b) => delete b.messages[2].content[2].source.url },
  { rule: 'image cache_control is checked', path: 'messages.2.content.1.cache_control.type', says: '"ephemeral"', breakIt: (b) => (b.messages[2].content[1].cache_control = { type: 'forever' }) },
  // document
  { rule: 'a document needs a source object', path: 'messages.2.content.3.source', says: 'an object', breakIt: (b) => (b.messages[2].content[3].source = 'notes') },
  { rule: 'document cache_control is checked', path: 'messages.2.content.3.cache_control.type', says: '"ephemeral"', breakIt: (b) => (b.messages[2].content[3].cache_control = { type: 1 }) },
  // tool_use
  { rule: 'tool_use needs an id', path: 'messages.1.content.3.id', says: 'is required', breakIt: (b) => delete b.messages[1].content[3].id },
  { rule: 'tool_use needs a name', path: 'messages.1.content.3.name', says: 'non-empty string', breakIt: (b) => (b.messages[1].content[3].name = 3) },
  { rule: 'tool_use input must be an object', path: 'messages.1.content.3.input', says: 'an object', breakIt: (b) => (b.messages[1].content[3].input = '{"file_path":"/app.ts"}') },
  { rule: 'tool_use input is required', path: 'messages.1.content.3.input', says: 'is required', breakIt: (b) => delete b.messages[1].content[3].input },
  { rule: 'tool_use cache_control is checked', path: 'messages.1.content.3.cache_control', says: 'an object', breakIt: (b) => (b.messages[1].content[3].cache_control = 'ephemeral') },
  {
    rule: 'tool_use belongs to assistant messages',
    path: 'messages.2.content.4.type',
    says: 'tool_use blocks may only appear in assistant messages',
    breakIt: (b) => (b.messages[2].content[4] = { type: 'tool_use', id: 'toolu_02', name: 'Read', input: {} }),
  },
  // tool_result
  { rule: 'tool_result needs a tool_use_id', path: 'messages.2.content.0.tool_use_id', says: 'is required', breakIt: (b) => delete b.messages[2].content[0].tool_use_id },
  { rule: 'tool_result content is required', path: 'messages.2.content.0.content', says: 'is required', breakIt: (b) => delete b.messages[2].content[0].content, strictOnly: true },
  { rule: 'tool_result content must be a string or an array', path: 'messages.2.content.0.content', says: 'a string or an array', breakIt: (b) => (b.messages[2].content[0].content = { text: 'x' }) },
  { rule: 'tool_result content items must be objects', path: 'messages.2.content.0.content.0', says: 'an object', breakIt: (b) => (b.messages[2].content[0].content[0] = 'text') },
  { rule: 'tool_result content items need a type', path: 'messages.2.content.0.content.0.type', says: 'is required', breakIt: (b) => delete b.messages[2].content[0].content[0].type },
  { rule: 'tool_result text items need text', path: 'messages.2.content.0.content.0.text', says: 'a string', breakIt: (b) => (b.messages[2].content[0].content[0].text = null) },
  {
    rule: 'tool_result image items are checked like images',
    path: 'messages.2.content.0.content.1.source.media_type',
    says: 'one of image/jpeg',
    breakIt: (b) => (b.messages[2].content[0].content[1].source.media_type = 'image/tiff'),
  },
  { rule: 'is_error must be a boolean', path: 'messages.2.content.0.is_error', says: 'a boolean', breakIt: (b) => (b.messages[2].content[0].is_error = 'true') },
  { rule: 'tool_result cache_control is checked', path: 'messages.2.content.0.cache_control', says: 'an object', breakIt: (b) => (b.messages[2].content[0].cache_control = true) },
  {
    rule: 'tool_result belongs to user messages',
    path: 'messages.1.content.2.type',
    says: 'tool_result blocks may only appear in user messages',
    breakIt: (b) => (b.messages[1].content[2] = { type: 'tool_result', tool_use_id: 'toolu_01', content: 'x' }),
  },
  // thinking
  { rule: 'thinking text must be a string', path: 'messages.1.content.0.thinking', says: 'a string', breakIt: (b) => (b.messages[1].content[0].thinking = 1) },
  { rule: 'thinking signature must be a string', path: 'messages.1.content.0.signature', says: 'a string', breakIt: (b) => (b.messages[1].content[0].signature = { sig: 1 }) },
  {
    rule: 'thinking belongs to assistant messages',
    path: 'messages.2.content.4.type',
    says: 'thinking blocks may only appear in assistant messages',
    breakIt: (b) => (b.messages[2].content[4] = { type: 'thinking', thinking: 'hmm', signature: 's' }),
  },
  { rule: 'redacted_thinking needs data', path: 'messages.1.content.1.data', says: 'is required', breakIt: (b) => delete b.messages[1].content[1].data },
  {
    rule: 'redacted_thinking belongs to assistant messages',
    path: 'messages.2.content.4.type',
    says: 'redacted_thinking blocks may only appear in assistant messages',
    breakIt: (b) => (b.messages[2].content[4] = { type: 'redacted_thinking', data: 'abc' }),
  },
  // server tool history
  {
    rule: 'server tool results belong to assistant messages',
    path: 'messages.2.content.4.type',
    says: 'server tool result blocks may only appear in assistant messages',
    breakIt: (b) => (b.messages[2].content[4] = { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] }),
  },
  {
    rule: 'server tool results need a tool_use_id',
    path: 'messages.1.content.2.tool_use_id',
    says: 'is required',
    breakIt: (b) => (b.messages[1].content[2] = { type: 'web_search_tool_result', content: [] }),
  },
  // max_tokens
  { rule: 'max_tokens is required', path: 'max_tokens', says: 'is required and must be an integer >= 1', breakIt: (b) => delete b.max_tokens },
  { rule: 'max_tokens must be at least 1', path: 'max_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_tokens = 0) },
  { rule: 'max_tokens must be an integer', path: 'max_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_tokens = 100.5) },
  { rule: 'max_tokens must be a number, not a numeric string', path: 'max_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_tokens = '8192') },
  // system
  { rule: 'system must be a string or an array', path: 'system', says: 'a string or an array of text blocks', breakIt: (b) => (b.system = { text: 'x' }) },
  { rule: 'system blocks must be objects', path: 'system.0', says: 'a text block object', breakIt: (b) => (b.system[0] = 'You are') },
  { rule: 'system blocks must be text blocks', path: 'system.0.type', says: '"text"', breakIt: (b) => (b.system[0].type = 'image') },
  { rule: 'system blocks need text', path: 'system.0.text', says: 'is required', breakIt: (b) => delete b.system[0].text },
  { rule: 'system block cache_control is checked', path: 'system.0.cache_control.type', says: '"ephemeral"', breakIt: (b) => (b.system[0].cache_control.type = 'ephemeral ') },
  // sampling
  { rule: 'temperature must be at most 1', path: 'temperature', says: 'must be a number from 0 to 1', breakIt: (b) => (b.temperature = 1.5) },
  { rule: 'temperature must be at least 0', path: 'temperature', says: 'must be a number from 0 to 1', breakIt: (b) => (b.temperature = -0.1) },
  { rule: 'temperature must be a number', path: 'temperature', says: 'must be a number from 0 to 1', breakIt: (b) => (b.temperature = '0.5') },
  { rule: 'temperature may not be null', path: 'temperature', says: 'must be a number from 0 to 1', breakIt: (b) => (b.temperature = null) },
  { rule: 'top_p must be at most 1', path: 'top_p', says: 'must be a number from 0 to 1', breakIt: (b) => (b.top_p = 1.01) },
  { rule: 'top_p must be at least 0', path: 'top_p', says: 'must be a number from 0 to 1', breakIt: (b) => (b.top_p = -1) },
  { rule: 'top_k must be at least 0', path: 'top_k', says: 'an integer >= 0', breakIt: (b) => (b.top_k = -1) },
  { rule: 'top_k must be an integer', path: 'top_k', says: 'an integer >= 0', breakIt: (b) => (b.top_k = 2.5) },
  { rule: 'stream must be a boolean', path: 'stream', says: 'a boolean', breakIt: (b) => (b.stream = 'true') },
  { rule: 'stop_sequences must be an array', path: 'stop_sequences', says: 'an array of strings', breakIt: (b) => (b.stop_sequences = 'STOP') },
  { rule: 'stop_sequences items must be strings', path: 'stop_sequences.1', says: 'a string', breakIt: (b) => b.stop_sequences.push(42) },
  // tools
  { rule: 'tools must be an array', path: 'tools', says: 'an array', breakIt: (b) => (b.tools = { name: 'Read' }) },
  { rule: 'a tool must be an object', path: 'tools.0', says: 'an object', breakIt: (b) => (b.tools[0] = 'Read') },
  { rule: 'a tool needs a name', path: 'tools.0.name', says: 'is required', breakIt: (b) => delete b.tools[0].name },
  { rule: 'tool names use a-z, A-Z, 0-9, _ and -', path: 'tools.0.name', says: 'a-z, A-Z, 0-9, _ and -', breakIt: (b) => (b.tools[0].name = 'read file') },
  { rule: 'tool names are at most 64 characters', path: 'tools.0.name', says: '1 to 64 characters', breakIt: (b) => (b.tools[0].name = 'a'.repeat(65)) },
  { rule: 'tool names are not empty', path: 'tools.0.name', says: '1 to 64 characters', breakIt: (b) => (b.tools[0].name = '') },
  {
    rule: 'tool names are unique',
    path: 'tools.2.name',
    says: 'must be unique',
    breakIt: (b) => b.tools.push({ name: 'Read', input_schema: { type: 'object', properties: {} } }),
  },
  { rule: 'tool description must be a string', path: 'tools.0.description', says: 'a string', breakIt: (b) => (b.tools[0].description = ['Reads']) },
  { rule: 'input_schema is required', path: 'tools.0.input_schema', says: 'is required', breakIt: (b) => delete b.tools[0].input_schema },
  { rule: 'input_schema must be an object', path: 'tools.0.input_schema', says: 'a JSON schema object', breakIt: (b) => (b.tools[0].input_schema = 'object') },
  { rule: 'input_schema type must be object', path: 'tools.0.input_schema.type', says: '"object"', breakIt: (b) => (b.tools[0].input_schema.type = 'array') },
  { rule: 'input_schema type is required', path: 'tools.0.input_schema.type', says: 'is required', breakIt: (b) => delete b.tools[0].input_schema.type },
  { rule: 'input_schema properties is required', path: 'tools.0.input_schema.properties', says: 'is required', breakIt: (b) => delete b.tools[0].input_schema.properties },
  { rule: 'input_schema properties must be an object', path: 'tools.0.input_schema.properties', says: 'an object', breakIt: (b) => (b.tools[0].input_schema.properties = ['file_path']) },
  { rule: 'input_schema required must be an array', path: 'tools.0.input_schema.required', says: 'an array of strings', breakIt: (b) => (b.tools[0].input_schema.required = 'file_path') },
  { rule: 'input_schema required items must be strings', path: 'tools.0.input_schema.required.0', says: 'a string', breakIt: (b) => (b.tools[0].input_schema.required = [1]) },
  { rule: 'tool cache_control is checked', path: 'tools.0.cache_control.type', says: '"ephemeral"', breakIt: (b) => (b.tools[0].cache_control = {}) },
  { rule: 'a tool type must be a string', path: 'tools.0.type', says: 'a string', breakIt: (b) => (b.tools[0].type = 1) },
  { rule: 'server tool names are checked', path: 'tools.1.name', says: 'a-z, A-Z, 0-9, _ and -', breakIt: (b) => (b.tools[1].name = 'web search') },
  // tool_choice
  { rule: 'tool_choice must be an object', path: 'tool_choice', says: 'an object', breakIt: (b) => (b.tool_choice = 'auto') },
  { rule: 'tool_choice type is one of auto, any, tool, none', path: 'tool_choice.type', says: 'one of auto, any, tool, none', breakIt: (b) => (b.tool_choice.type = 'required') },
  { rule: 'tool_choice tool needs a name', path: 'tool_choice.name', says: 'is required', breakIt: (b) => (b.tool_choice = { type: 'tool' }) },
  { rule: 'disable_parallel_tool_use must be a boolean', path: 'tool_choice.disable_parallel_tool_use', says: 'a boolean', breakIt: (b) => (b.tool_choice.disable_parallel_tool_use = 1) },
  // thinking
  { rule: 'thinking must be an object', path: 'thinking', says: 'an object', breakIt: (b) => (b.thinking = true) },
  { rule: 'thinking needs a type', path: 'thinking.type', says: 'is required', breakIt: (b) => delete b.thinking.type },
  { rule: 'enabled thinking needs budget_tokens', path: 'thinking.budget_tokens', says: 'is required', breakIt: (b) => delete b.thinking.budget_tokens },
  { rule: 'budget_tokens is at least 1024', path: 'thinking.budget_tokens', says: 'an integer >= 1024', breakIt: (b) => (b.thinking.budget_tokens = 1023) },
  { rule: 'budget_tokens is an integer', path: 'thinking.budget_tokens', says: 'an integer >= 1024', breakIt: (b) => (b.thinking.budget_tokens = 2048.5) },
  { rule: 'budget_tokens is below max_tokens', path: 'thinking.budget_tokens', says: 'less than max_tokens', breakIt: (b) => (b.thinking.budget_tokens = 8192) },
  // service_tier, metadata
  { rule: 'service_tier is auto or standard_only', path: 'service_tier', says: 'one of auto, standard_only', breakIt: (b) => (b.service_tier = 'priority') },
  { rule: 'metadata must be an object', path: 'metadata', says: 'an object', breakIt: (b) => (b.metadata = 'user_abc') },
  { rule: 'metadata user_id must be a string', path: 'metadata.user_id', says: 'a string', breakIt: (b) => (b.metadata.user_id = 12345) },
];

describe('validateMessagesRequest', () => {
  it('accepts the full valid request the rule tests start from, returning the same object', () => {
    const body = fullRequest();
    assert.equal(validateMessagesRequest(body), body);
  });

  describe('refuses a request that breaks one rule, naming the path', () => {
    for (const { rule, path, says, breakIt, strictOnly } of brokenRules) {
      it(strictOnly ? `${rule} (strict validation)` : rule, () => {
        const body = fullRequest();
        breakIt(body);
        const err = rejection(body, { strict: true });
        assert.equal(err.status, 400);
        assert.equal(err.type, 'invalid_request_error');
        assert.equal(err.code, 'invalid_parameters');
        assert.ok(err.message.startsWith(`${path}: `), `"${err.message}" should start with "${path}: "`);
        assert.ok(err.message.includes(says), `"${err.message}" should say "${says}"`);
      });
    }
  });

  describe('accepts by default what the Anthropic API accepts and only strict validation refuses', () => {
    for (const { rule, breakIt } of brokenRules.filter((broken) => broken.strictOnly === true)) {
      it(`accepts a request that breaks "${rule}"`, () => {
        const body = fullRequest();
        breakIt(body);
        assert.equal(validateMessagesRequest(body), body);
      });
    }
  });

  describe('never refuses thinking types and display values the description does not rule on, in either mode', () => {
    for (const thinking of [{ type: 'adaptive', display: 'updates' }, { type: 'adaptive' }, { type: 'disabled', display: 'summarized' }, { type: 'on' }, { type: 'enabled', budget_tokens: 2048, display: 'full' }]) {
      it(`accepts thinking ${JSON.stringify(thinking)}`, () => {
        for (const strict of [false, true]) {
          const body = { ...fullRequest(), thinking };
          assert.equal(validateMessagesRequest(body, { strict }), body);
        }
      });
    }
  });

  it('words the media_type rule exactly as documented', () => {
    const body = fullRequest();
    body.messages[2].content[1].source.media_type = 'image/svg+xml';
    assert.equal(
      rejection(body).message,
      'messages.2.content.1.source.media_type: must be one of image/jpeg, image/png, image/gif, image/webp',
    );
  });

  it('words the temperature rule exactly as documented', () => {
    const body = fullRequest();
    body.temperature = 2;
    assert.equal(rejection(body).message, 'temperature: must be a number from 0 to 1');
  });

  it('reports the first bad field when several are bad', () => {
    const body = fullRequest();
    body.temperature = 5;
    body.top_p = 5;
    body.messages[2].content[1].source.media_type = 'image/bmp';
    assert.equal(rejection(body).message.split(':')[0], 'messages.2.content.1.source.media_type');
  });

  describe('accepts the shapes real clients send', () => {
    it('accepts a minimal request with string content', () => {
      const body = { model: 'claude-haiku-4-5', max_tokens: 1, messages: [{ role: 'user', content: 'Hello' }] };
      assert.equal(validateMessagesRequest(body), body);
    });

    it('accepts a Claude Code turn: cached system blocks, tools, tool history, thinking, metadata', () => {
      const body = {
        model: 'claude-sonnet-4-5-20250929',
        max_tokens: 32000,
        stream: true,
        system: [
          { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'Environment: linux', cache_control: { type: 'ephemeral' } },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>As you answer the user…</system-reminder>' },
              { type: 'text', text: 'list the files', cache_control: { type: 'ephemeral' } },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'Use Bash.', signature: 'ErUBCkYIAxgCIkD' },
              { type: 'tool_use', id: 'toolu_01A', name: 'Bash', input: { command: 'ls', description: 'List files' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_01A', content: 'a.ts\nb.ts', is_error: false },
              { type: 'text', text: 'thanks', cache_control: { type: 'ephemeral' } },
            ],
          },
        ],
        tools: [
          {
            name: 'Bash',
            description: 'Executes a bash command',
            input_schema: {
              type: 'object',
              properties: { command: { type: 'string' }, timeout: { type: 'number' } },
              required: ['command'],
              additionalProperties: false,
              $schema: 'http://json-schema.org/draft-07/schema#',
            },
          },
          { name: 'mcp__github__list_prs', input_schema: { type: 'object', properties: {} }, cache_control: { type: 'ephemeral' } },
        ],
        metadata: { user_id: 'user_2f8a_account__session_1c' },
        thinking: { type: 'enabled', budget_tokens: 31999 },
        temperature: 1,
      };
      assert.equal(validateMessagesRequest(body), body);
    });

    it('accepts images after the first message, base64 and url, and inside tool results', () => {
      const body = {
        model: 'm',
        max_tokens: 100,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'I will send images' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'OK' }] },
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: 'R0lGODlhAQABAAAAACw=' } },
              { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGRg==' }, cache_control: { type: 'ephemeral' } },
              { type: 'image', source: { type: 'url', url: 'http://example.com/cat.jpg' } },
              { type: 'text', text: 'What are these?' },
            ],
          },
        ],
      };
      assert.equal(validateMessagesRequest(body), body);
    });

    it('accepts server tools and their history blocks in assistant turns', () => {
      const body = {
        model: 'm',
        max_tokens: 1024,
        tools: [
          { type: 'web_search_20250305', name: 'web_search', max_uses: 3, allowed_domains: ['example.com'] },
          { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
          { type: 'custom', name: 'lookup', input_schema: { type: 'object', properties: {} } },
        ],
        messages: [
          { role: 'user', content: 'Search for llmux' },
          {
            role: 'assistant',
            content: [
              { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'llmux' } },
              { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [{ type: 'web_search_result', url: 'https://x' }] },
              { type: 'text', text: 'Found it.', citations: [{ type: 'web_search_result_location' }] },
            ],
          },
          { role: 'user', content: 'Thanks' },
        ],
      };
      assert.equal(validateMessagesRequest(body), body);
    });

    for (const toolChoice of [
      { type: 'auto' },
      { type: 'any', disable_parallel_tool_use: false },
      { type: 'tool', name: 'Read', disable_parallel_tool_use: true },
      { type: 'none' },
    ]) {
      it(`accepts tool_choice ${JSON.stringify(toolChoice)}`, () => {
        const body = fullRequest();
        body.tool_choice = toolChoice;
        assert.equal(validateMessagesRequest(body), body);
      });
    }

    for (const thinking of [
      { type: 'disabled' },
      { type: 'adaptive' },
      { type: 'adaptive', display: 'omitted' },
      { type: 'enabled', budget_tokens: 1024, display: 'summarized' },
      { type: 'enabled', budget_tokens: 8191 },
    ]) {
      it(`accepts thinking ${JSON.stringify(thinking)}`, () => {
        const body = fullRequest();
        body.thinking = thinking;
        assert.equal(validateMessagesRequest(body), body);
      });
    }

    it('lets budget_tokens reach max_tokens when the client uses interleaved thinking', () => {
      const body = fullRequest();
      body.thinking.budget_tokens = 16000;
      assert.equal(validateMessagesRequest(body, { interleavedThinking: true }), body);
      assert.match(rejection(body).message, /^thinking\.budget_tokens: must be less than max_tokens/);
    });

    it('accepts a thinking block without a signature, as translated reasoning history has none', () => {
      const body = fullRequest();
      delete body.messages[1].content[0].signature;
      assert.equal(validateMessagesRequest(body), body);
    });

    it('accepts an assistant prefill as the last message, a null user_id and a string system', () => {
      const body = fullRequest();
      body.system = 'Be brief.';
      body.metadata = { user_id: null };
      body.service_tier = 'standard_only';
      body.messages.push({ role: 'user', content: 'Answer in JSON' }, { role: 'assistant', content: '{' });
      assert.equal(validateMessagesRequest(body), body);
    });

    it('accepts boundary values of the sampling parameters', () => {
      const body = fullRequest();
      Object.assign(body, { temperature: 0, top_p: 1, top_k: 0, max_tokens: 4097, stop_sequences: [] });
      assert.equal(validateMessagesRequest(body), body);
    });

    it('passes unknown top-level and block fields through untouched', () => {
      const body = fullRequest();
      body.container = { id: 'c1' };
      body.context_management = { edits: [] };
      body.messages[0].content[0].citations = null;
      const result = validateMessagesRequest(body);
      assert.deepEqual(result.container, { id: 'c1' });
      assert.equal(result.messages[0], body.messages[0]);
    });
  });

  describe('on hostile input', () => {
    const notObjects: Array<[string, unknown]> = [
      ['null', null], ['undefined', undefined], ['a number', 0], ['a string', 'model'],
      ['a boolean', true], ['an empty array', []], ['an array holding a valid request', [fullRequest()]],
    ];
    for (const [label, body] of notObjects) {
      it(`refuses a body that is ${label} with a 400`, () => {
        assert.match(rejection(body).message, /^body: (is required and )?must be a JSON object$/);
      });
    }

    it('never reads fields inherited through a __proto__ key', () => {
      const body = JSON.parse(
        '{"__proto__": {"model": "m", "max_tokens": 5}, "messages": [{"role": "user", "content": "hi"}]}',
      );
      assert.equal(rejection(body).message, 'model: is required and must be a non-empty string');
      const message = JSON.parse('{"__proto__": {"role": "user"}, "content": "hi"}');
      assert.match(rejection({ model: 'm', max_tokens: 5, messages: [message] }).message, /^messages\.0\.role: is required/);
    });

    it('does not mistake Object.prototype members for fields', () => {
      const body = JSON.parse(
        '{"model":"m","max_tokens":5,"constructor":{"x":1},"toString":1,"messages":[{"role":"user","content":"hi","constructor":5}]}',
      );
      assert.equal(validateMessagesRequest(body), body);
      const tool = JSON.parse('{"name":"t","input_schema":{"type":"object","properties":{"__proto__":{"type":"string"}}}}');
      assert.equal(validateMessagesRequest({ ...fullRequest(), tools: [tool] }).tools?.[0], tool);
    });

    it('reads null-prototype objects', () => {
      const body = Object.assign(Object.create(null) as Body, {
        model: 'm',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(validateMessagesRequest(body), body);
    });

    it('handles 10,000-item arrays of messages, tools and stop sequences', () => {
      const messages = Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}` }));
      const tools = Array.from({ length: 10_000 }, (_, i) => ({ name: `tool_${i}`, input_schema: { type: 'object', properties: {} } }));
      const body = { model: 'm', max_tokens: 5, messages, tools, stop_sequences: Array.from({ length: 10_000 }, String) };
      assert.equal(validateMessagesRequest(body), body);
      messages[9_999] = { role: 'user', content: 'x' };
      assert.match(rejection(body, { strict: true }).message, /^messages\.9999\.role: must be "assistant"/);
    });

    it('treats deeply nested tool input and schemas as opaque', () => {
      let deep: Body = {};
      for (let i = 0; i < 100_000; i++) deep = { a: deep, b: [deep] };
      const body = fullRequest();
      body.messages[1].content[3].input = deep;
      body.tools[0].input_schema.properties = deep;
      assert.equal(validateMessagesRequest(body), body);
    });

    it('refuses deep nesting where a string is expected without descending into it', () => {
      let deep: unknown = 'x';
      for (let i = 0; i < 100_000; i++) deep = [deep];
      const body = fullRequest();
      body.messages[2].content[4].text = deep;
      assert.match(rejection(body).message, /^messages\.2\.content\.4\.text: must be a string/);
    });

    it('checks multi-megabyte base64 image data and finds one bad character at its end', () => {
      const data = 'QUJD'.repeat(2_000_000);
      const body = fullRequest();
      body.messages[2].content[1].source.data = data;
      assert.equal(validateMessagesRequest(body), body);
      body.messages[2].content[1].source.data = `${data.slice(0, -4)}QU\nD`;
      assert.match(rejection(body).message, /^messages\.2\.content\.1\.source\.data: must be a base64 string/);
    });

    it('never echoes request content in its messages', () => {
      const body = fullRequest();
      body.messages[2].content[4] = { type: 'secret-sk-llmux-AAAA', text: 'sk-llmux-AAAA' };
      assert.doesNotMatch(rejection(body, { strict: true }).message, /sk-llmux/);
    });
  });

  it('throws only GatewayError 400s for thousands of random mutations of valid bodies', () => {
    const seeds = [fullRequest(), { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }];
    assertOnlyRefusals({ validate: validateMessagesRequest, seeds, mutate, seed: 0x5eed, rounds: 4000 });
    assertOnlyRefusals({ validate: (body) => validateMessagesRequest(body, { strict: true }), seeds, mutate, seed: 0x5eee, rounds: 2000 });
  });
});

// ---------- random mutation ----------

const mutate = createMutator({
  words: ['image', 'tool_use', 'tool_result', 'thinking', 'object', 'enabled'],
  shapes: [{ type: 'image', source: {} }, { type: 'tool_result' }],
  keys: ['cache_control', 'type', 'source', 'content', 'input', 'name', 'thinking'],
});

describe('Claude Code mid-conversation system turns', () => {
  const base = {
    model: 'm',
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'system', content: [{ type: 'text', text: 'The date changed.' }] },
      { role: 'assistant', content: 'hello' },
      { role: 'system', content: 'Reminder.' },
      { role: 'user', content: 'go on' },
    ],
  };

  it('accepts text-only system turns after the first message, outside the alternation', () => {
    assert.doesNotThrow(() => validateMessagesRequest(structuredClone(base)));
  });

  it('refuses a system turn first, or one with non-text content', () => {
    const first = structuredClone(base);
    first.messages.unshift({ role: 'system', content: 'x' });
    assert.throws(() => validateMessagesRequest(first), /messages\.0\.role: must be one of user, assistant/);
    const image = structuredClone(base) as { messages: Array<{ role: string; content: unknown }> };
    image.messages[1] = { role: 'system', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] };
    assert.throws(() => validateMessagesRequest(image), /messages\.1\.content\.0\.type: must be "text": a system turn may only contain text/);
  });

  it('still refuses two user turns in a row around a system turn under strict validation, and accepts them by default', () => {
    const twice = structuredClone(base);
    twice.messages[2] = { role: 'user', content: 'again' };
    assert.throws(() => validateMessagesRequest(twice, { strict: true }), /messages\.2\.role: must be "assistant"/);
    assert.doesNotThrow(() => validateMessagesRequest(twice));
  });
});

describe('messages and tools found valid before (a key\'s turn read from its last, frozen)', () => {
  const frozen = <T>(value: T): T => {
    deepFreeze(value);
    return value;
  };
  const user = frozen({ role: 'user', content: [{ type: 'text', text: 'hi' }] });
  const assistant = frozen({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: {} }] });
  const tools = frozen([{ name: 'Bash', input_schema: { type: 'object', properties: {} } }]);
  const body = (messages: unknown[], extra: Record<string, unknown> = {}): unknown => ({ model: 'm', max_tokens: 10, messages, tools, ...extra });

  it('are accepted again, and a message valid after the first is still held to the first message\'s rules when it comes first', () => {
    validateMessagesRequest(body([user, assistant, user]));
    validateMessagesRequest(body([user, assistant, user]));
    assert.throws(() => validateMessagesRequest(body([assistant, user])), /messages\.0\.role: the first message must have role "user"/);
  });

  it('are checked again under strict rules, where a message\'s place decides (roles alternate)', () => {
    validateMessagesRequest(body([user, assistant, user]));
    assert.throws(() => validateMessagesRequest(body([user, assistant, assistant]), { strict: true }), /messages\.2\.role/);
  });

  it('are only the frozen ones: an object that may change is checked every time', () => {
    const open = { role: 'assistant', content: [{ type: 'text', text: 'ok' }] };
    validateMessagesRequest(body([user, open]));
    (open.content[0] as { type: string }).type = 'tool_result';
    assert.throws(() => validateMessagesRequest(body([user, open])), /tool_result blocks may only appear in user messages/);
  });
});
