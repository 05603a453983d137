import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validateChatRequest } from '../../src/formats/chat.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { assertOnlyRefusals, createMutator } from '../helpers/mutate.ts';

// Bodies are arbitrary JSON; tests poke into them freely.
type Body = Record<string, any>;

/** A request that exercises every field the validator knows, in a valid shape. */
function fullRequest(): Body {
  return {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'developer', content: [{ type: 'text', text: 'Prefer tools.' }] },
      {
        role: 'user',
        name: 'alice',
        content: [
          { type: 'text', text: 'What is in this image, and what is the weather?' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'high' } },
          { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } },
          { type: 'file', file: { file_id: 'file-abc123', filename: 'report.pdf' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":20}' },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 20 °C in Paris.' }], refusal: null, reasoning_content: 'Read the tool result.' },
      { role: 'function', name: 'legacy_lookup', content: 'ok' },
      { role: 'user', content: 'Thanks' },
    ],
    stream: true,
    stream_options: { include_usage: true },
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          strict: true,
        },
      },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    temperature: 0.7,
    top_p: 0.9,
    max_tokens: 1000,
    max_completion_tokens: 1000,
    frequency_penalty: 0.5,
    presence_penalty: -0.5,
    n: 1,
    stop: ['END'],
    user: 'user-123',
    response_format: { type: 'json_schema', json_schema: { name: 'weather_answer', schema: { type: 'object' }, strict: true } },
    seed: 42,
    reasoning_effort: 'medium',
  };
}

function rejection(body: unknown): GatewayError {
  try {
    validateChatRequest(body);
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
}

const brokenRules: BrokenRule[] = [
  // model, messages
  { rule: 'model is required', path: 'model', says: 'is required', breakIt: (b) => delete b.model },
  { rule: 'model must not be empty', path: 'model', says: 'non-empty string', breakIt: (b) => (b.model = '') },
  { rule: 'model must be a string', path: 'model', says: 'non-empty string', breakIt: (b) => (b.model = ['gpt-4o']) },
  { rule: 'messages is required', path: 'messages', says: 'is required', breakIt: (b) => delete b.messages },
  { rule: 'messages must be an array', path: 'messages', says: 'array', breakIt: (b) => (b.messages = 'hi') },
  { rule: 'messages must not be empty', path: 'messages', says: 'at least 1 item', breakIt: (b) => (b.messages = []) },
  { rule: 'a message must be an object', path: 'messages.7', says: 'an object', breakIt: (b) => (b.messages[7] = 'Thanks') },
  { rule: 'role is required', path: 'messages.7.role', says: 'is required', breakIt: (b) => delete b.messages[7].role },
  {
    rule: 'role is one of the six roles',
    path: 'messages.7.role',
    says: 'one of system, developer, user, assistant, tool, function',
    breakIt: (b) => (b.messages[7].role = 'bot'),
  },
  { rule: 'name must be a string', path: 'messages.2.name', says: 'a string', breakIt: (b) => (b.messages[2].name = 7) },
  // system / developer
  { rule: 'system content is required', path: 'messages.0.content', says: 'is required', breakIt: (b) => delete b.messages[0].content },
  { rule: 'system content must be text', path: 'messages.0.content', says: 'a string or an array of text parts', breakIt: (b) => (b.messages[0].content = 12) },
  {
    rule: 'developer content parts must be text',
    path: 'messages.1.content.0.type',
    says: '"text"',
    breakIt: (b) => (b.messages[1].content[0] = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }),
  },
  // user parts
  { rule: 'user content is required', path: 'messages.7.content', says: 'is required', breakIt: (b) => delete b.messages[7].content },
  { rule: 'user content may not be null', path: 'messages.7.content', says: 'a string or an array of content parts', breakIt: (b) => (b.messages[7].content = null) },
  { rule: 'a part must be an object', path: 'messages.2.content.0', says: 'content part object', breakIt: (b) => (b.messages[2].content[0] = 'text') },
  { rule: 'a part needs a type', path: 'messages.2.content.0.type', says: 'is required', breakIt: (b) => delete b.messages[2].content[0].type },
  {
    rule: 'an unknown user part type is refused with the allowed types named',
    path: 'messages.2.content.0.type',
    says: 'one of text, image_url, input_audio, file',
    breakIt: (b) => (b.messages[2].content[0].type = 'video'),
  },
  { rule: 'a text part needs text', path: 'messages.2.content.0.text', says: 'a string', breakIt: (b) => (b.messages[2].content[0].text = { value: 'x' }) },
  { rule: 'an image_url part needs image_url', path: 'messages.2.content.1.image_url', says: 'is required', breakIt: (b) => delete b.messages[2].content[1].image_url },
  { rule: 'an image_url must be an object', path: 'messages.2.content.1.image_url', says: 'an object', breakIt: (b) => (b.messages[2].content[1].image_url = 'https://example.com/a.png') },
  { rule: 'an image url is required', path: 'messages.2.content.1.image_url.url', says: 'is required', breakIt: (b) => delete b.messages[2].content[1].image_url.url },
  { rule: 'an image url is http(s) or data', path: 'messages.2.content.1.image_url.url', says: 'an http(s) URL or a data: URL', breakIt: (b) => (b.messages[2].content[1].image_url.url = 'ftp://example.com/a.png') },
  { rule: 'image detail is auto, low or high', path: 'messages.2.content.1.image_url.detail', says: 'one of auto, low, high', breakIt: (b) => (b.messages[2].content[1].image_url.detail = 'ultra') },
  { rule: 'input_audio must be an object', path: 'messages.2.content.2.input_audio', says: 'an object', breakIt: (b) => (b.messages[2].content[2].input_audio = 'UklG') },
  { rule: 'input_audio needs data', path: 'messages.2.content.2.input_audio.data', says: 'is required', breakIt: (b) => delete b.messages[2].content[2].input_audio.data },
  { rule: 'input_audio format must be a string', path: 'messages.2.content.2.input_audio.format', says: 'a string', breakIt: (b) => (b.messages[2].content[2].input_audio.format = 1) },
  { rule: 'file must be an object', path: 'messages.2.content.3.file', says: 'an object', breakIt: (b) => (b.messages[2].content[3].file = 'file-abc123') },
  { rule: 'file fields must be strings', path: 'messages.2.content.3.file.file_id', says: 'a string', breakIt: (b) => (b.messages[2].content[3].file.file_id = 123) },
  // assistant
  { rule: 'assistant content is required without tool calls', path: 'messages.5.content', says: 'is required', breakIt: (b) => delete b.messages[5].content },
  { rule: 'assistant content may be null only with tool calls', path: 'messages.5.content', says: 'a string or an array', breakIt: (b) => (b.messages[5].content = null) },
  {
    rule: 'assistant parts are text or refusal',
    path: 'messages.5.content.0.type',
    says: 'one of text, refusal',
    breakIt: (b) => (b.messages[5].content[0] = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }),
  },
  { rule: 'a refusal part needs refusal text', path: 'messages.5.content.0.refusal', says: 'is required', breakIt: (b) => (b.messages[5].content[0] = { type: 'refusal' }) },
  { rule: 'assistant refusal must be a string or null', path: 'messages.5.refusal', says: 'a string or null', breakIt: (b) => (b.messages[5].refusal = false) },
  { rule: 'assistant reasoning_content must be a string or null', path: 'messages.5.reasoning_content', says: 'a string or null', breakIt: (b) => (b.messages[5].reasoning_content = ['x']) },
  { rule: 'tool_calls must be an array', path: 'messages.3.tool_calls', says: 'an array', breakIt: (b) => (b.messages[3].tool_calls = b.messages[3].tool_calls[0]) },
  { rule: 'a tool call must be an object', path: 'messages.3.tool_calls.0', says: 'an object', breakIt: (b) => (b.messages[3].tool_calls[0] = 'call_1') },
  { rule: 'a tool call needs an id', path: 'messages.3.tool_calls.0.id', says: 'is required', breakIt: (b) => delete b.messages[3].tool_calls[0].id },
  { rule: 'a tool call type is function', path: 'messages.3.tool_calls.0.type', says: '"function"', breakIt: (b) => (b.messages[3].tool_calls[0].type = 'tool') },
  { rule: 'a tool call needs a function', path: 'messages.3.tool_calls.0.function', says: 'is required', breakIt: (b) => delete b.messages[3].tool_calls[0].function },
  { rule: 'a tool call function needs a name', path: 'messages.3.tool_calls.0.function.name', says: 'is required', breakIt: (b) => delete b.messages[3].tool_calls[0].function.name },
  {
    rule: 'tool call arguments are a JSON string, not an object',
    path: 'messages.3.tool_calls.0.function.arguments',
    says: 'a string',
    breakIt: (b) => (b.messages[3].tool_calls[0].function.arguments = { city: 'Paris' }),
  },
  {
    rule: 'a legacy function_call needs arguments',
    path: 'messages.3.function_call.arguments',
    says: 'is required',
    breakIt: (b) => (b.messages[3].function_call = { name: 'get_weather' }),
  },
  // tool, function
  { rule: 'a tool message needs tool_call_id', path: 'messages.4.tool_call_id', says: 'is required', breakIt: (b) => delete b.messages[4].tool_call_id },
  { rule: 'tool_call_id must be a string', path: 'messages.4.tool_call_id', says: 'a string', breakIt: (b) => (b.messages[4].tool_call_id = 1) },
  { rule: 'a tool message needs content', path: 'messages.4.content', says: 'is required', breakIt: (b) => delete b.messages[4].content },
  {
    rule: 'tool message parts must be text',
    path: 'messages.4.content.0.type',
    says: '"text"',
    breakIt: (b) => (b.messages[4].content = [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }]),
  },
  { rule: 'a function message needs a name', path: 'messages.6.name', says: 'is required', breakIt: (b) => delete b.messages[6].name },
  { rule: 'function message content is a string or null', path: 'messages.6.content', says: 'a string or null', breakIt: (b) => (b.messages[6].content = { ok: true }) },
  // streaming
  { rule: 'stream must be a boolean', path: 'stream', says: 'a boolean', breakIt: (b) => (b.stream = 'true') },
  { rule: 'stream_options must be an object', path: 'stream_options', says: 'an object or null', breakIt: (b) => (b.stream_options = true) },
  { rule: 'include_usage must be a boolean', path: 'stream_options.include_usage', says: 'a boolean', breakIt: (b) => (b.stream_options.include_usage = 'yes') },
  // tools
  { rule: 'tools must be an array', path: 'tools', says: 'an array', breakIt: (b) => (b.tools = b.tools[0]) },
  { rule: 'a tool must be an object', path: 'tools.0', says: 'an object', breakIt: (b) => (b.tools[0] = 'get_weather') },
  { rule: 'a tool type is function', path: 'tools.0.type', says: '"function"', breakIt: (b) => (b.tools[0].type = 'custom') },
  { rule: 'a tool type is required', path: 'tools.0.type', says: 'is required', breakIt: (b) => delete b.tools[0].type },
  { rule: 'a tool needs a function', path: 'tools.0.function', says: 'is required', breakIt: (b) => delete b.tools[0].function },
  { rule: 'a tool function needs a name', path: 'tools.0.function.name', says: 'is required', breakIt: (b) => delete b.tools[0].function.name },
  { rule: 'tool names use a-z, A-Z, 0-9, _ and -', path: 'tools.0.function.name', says: 'a-z, A-Z, 0-9, _ and -', breakIt: (b) => (b.tools[0].function.name = 'get.weather') },
  { rule: 'tool names are at most 64 characters', path: 'tools.0.function.name', says: '1 to 64 characters', breakIt: (b) => (b.tools[0].function.name = 'f'.repeat(65)) },
  { rule: 'tool description must be a string', path: 'tools.0.function.description', says: 'a string', breakIt: (b) => (b.tools[0].function.description = 5) },
  { rule: 'tool parameters must be an object', path: 'tools.0.function.parameters', says: 'a JSON schema object', breakIt: (b) => (b.tools[0].function.parameters = []) },
  { rule: 'tool strict must be a boolean', path: 'tools.0.function.strict', says: 'a boolean', breakIt: (b) => (b.tools[0].function.strict = 'yes') },
  // tool_choice
  { rule: 'tool_choice strings are auto, required or none', path: 'tool_choice', says: 'one of auto, required, none', breakIt: (b) => (b.tool_choice = 'any') },
  { rule: 'tool_choice must be a string or an object', path: 'tool_choice', says: 'one of auto, required, none', breakIt: (b) => (b.tool_choice = 1) },
  { rule: 'a tool_choice object has type function', path: 'tool_choice.type', says: '"function"', breakIt: (b) => (b.tool_choice = { type: 'tool', function: { name: 'get_weather' } }) },
  { rule: 'a tool_choice object needs a function', path: 'tool_choice.function', says: 'is required', breakIt: (b) => (b.tool_choice = { type: 'function', name: 'get_weather' }) },
  { rule: 'a tool_choice function needs a name', path: 'tool_choice.function.name', says: 'is required', breakIt: (b) => (b.tool_choice = { type: 'function', function: {} }) },
  { rule: 'parallel_tool_calls must be a boolean', path: 'parallel_tool_calls', says: 'a boolean', breakIt: (b) => (b.parallel_tool_calls = 'false') },
  // sampling and limits
  { rule: 'temperature is at most 2', path: 'temperature', says: 'must be a number from 0 to 2', breakIt: (b) => (b.temperature = 2.1) },
  { rule: 'temperature is at least 0', path: 'temperature', says: 'must be a number from 0 to 2', breakIt: (b) => (b.temperature = -0.5) },
  { rule: 'temperature is a number', path: 'temperature', says: 'must be a number from 0 to 2', breakIt: (b) => (b.temperature = '1') },
  { rule: 'top_p is at most 1', path: 'top_p', says: 'must be a number from 0 to 1', breakIt: (b) => (b.top_p = 1.1) },
  { rule: 'top_p is at least 0', path: 'top_p', says: 'must be a number from 0 to 1', breakIt: (b) => (b.top_p = -0.1) },
  { rule: 'max_tokens is at least 1', path: 'max_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_tokens = 0) },
  { rule: 'max_tokens is an integer', path: 'max_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_tokens = 10.5) },
  { rule: 'max_completion_tokens is at least 1', path: 'max_completion_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_completion_tokens = -5) },
  { rule: 'max_completion_tokens is an integer', path: 'max_completion_tokens', says: 'an integer >= 1', breakIt: (b) => (b.max_completion_tokens = '1000') },
  { rule: 'frequency_penalty is at most 2', path: 'frequency_penalty', says: 'must be a number from -2 to 2', breakIt: (b) => (b.frequency_penalty = 2.5) },
  { rule: 'frequency_penalty is at least -2', path: 'frequency_penalty', says: 'must be a number from -2 to 2', breakIt: (b) => (b.frequency_penalty = -2.5) },
  { rule: 'presence_penalty is at most 2', path: 'presence_penalty', says: 'must be a number from -2 to 2', breakIt: (b) => (b.presence_penalty = 3) },
  { rule: 'presence_penalty is at least -2', path: 'presence_penalty', says: 'must be a number from -2 to 2', breakIt: (b) => (b.presence_penalty = -3) },
  { rule: 'n is at least 1', path: 'n', says: 'an integer from 1 to 128', breakIt: (b) => (b.n = 0) },
  { rule: 'n is at most 128', path: 'n', says: 'an integer from 1 to 128', breakIt: (b) => (b.n = 129) },
  { rule: 'n is an integer', path: 'n', says: 'an integer from 1 to 128', breakIt: (b) => (b.n = 1.5) },
  { rule: 'stop is a string or an array', path: 'stop', says: 'a string or an array of strings', breakIt: (b) => (b.stop = 5) },
  { rule: 'stop has at most 4 items', path: 'stop', says: 'at most 4 items', breakIt: (b) => (b.stop = ['a', 'b', 'c', 'd', 'e']) },
  { rule: 'stop items are strings', path: 'stop.1', says: 'a string', breakIt: (b) => b.stop.push(null) },
  { rule: 'user is a string', path: 'user', says: 'a string', breakIt: (b) => (b.user = 123) },
  { rule: 'user may not be null', path: 'user', says: 'a string', breakIt: (b) => (b.user = null) },
  // response_format
  { rule: 'response_format is an object', path: 'response_format', says: 'an object', breakIt: (b) => (b.response_format = 'json') },
  { rule: 'response_format type is text, json_object or json_schema', path: 'response_format.type', says: 'one of text, json_object, json_schema', breakIt: (b) => (b.response_format.type = 'xml') },
  { rule: 'json_schema is required for that type', path: 'response_format.json_schema', says: 'is required', breakIt: (b) => delete b.response_format.json_schema },
  { rule: 'json_schema needs a name', path: 'response_format.json_schema.name', says: 'is required', breakIt: (b) => delete b.response_format.json_schema.name },
  { rule: 'json_schema name uses the tool name charset', path: 'response_format.json_schema.name', says: 'a-z, A-Z, 0-9, _ and -', breakIt: (b) => (b.response_format.json_schema.name = 'weather answer') },
  { rule: 'json_schema schema is an object', path: 'response_format.json_schema.schema', says: 'a JSON schema object', breakIt: (b) => (b.response_format.json_schema.schema = '{"type":"object"}') },
  { rule: 'json_schema strict is a boolean', path: 'response_format.json_schema.strict', says: 'a boolean', breakIt: (b) => (b.response_format.json_schema.strict = 1) },
  { rule: 'json_schema description is a string', path: 'response_format.json_schema.description', says: 'a string', breakIt: (b) => (b.response_format.json_schema.description = {}) },
  // seed, reasoning_effort
  { rule: 'seed is an integer', path: 'seed', says: 'an integer', breakIt: (b) => (b.seed = 4.2) },
  { rule: 'seed is a number, not a string', path: 'seed', says: 'an integer', breakIt: (b) => (b.seed = '42') },
  {
    rule: 'reasoning_effort is one of the documented levels',
    path: 'reasoning_effort',
    says: 'one of none, minimal, low, medium, high, xhigh',
    breakIt: (b) => (b.reasoning_effort = 'extreme'),
  },
];

describe('validateChatRequest', () => {
  it('accepts the full valid request the rule tests start from, returning the same object', () => {
    const body = fullRequest();
    assert.equal(validateChatRequest(body), body);
  });

  describe('refuses a request that breaks one rule, naming the path', () => {
    for (const { rule, path, says, breakIt } of brokenRules) {
      it(rule, () => {
        const body = fullRequest();
        breakIt(body);
        const err = rejection(body);
        assert.equal(err.status, 400);
        assert.equal(err.type, 'invalid_request_error');
        assert.equal(err.code, 'invalid_parameters');
        assert.ok(err.message.startsWith(`${path}: `), `"${err.message}" should start with "${path}: "`);
        assert.ok(err.message.includes(says), `"${err.message}" should say "${says}"`);
      });
    }
  });

  it('words the temperature rule with the chat range', () => {
    const body = fullRequest();
    body.temperature = 3;
    assert.equal(rejection(body).message, 'temperature: must be a number from 0 to 2');
  });

  it('reports the first bad field when several are bad', () => {
    const body = fullRequest();
    body.seed = 'x';
    body.temperature = 9;
    body.messages[4].tool_call_id = 5;
    assert.equal(rejection(body).message.split(':')[0], 'messages.4.tool_call_id');
  });

  describe('accepts the shapes real clients send', () => {
    it('accepts a minimal request', () => {
      const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] };
      assert.equal(validateChatRequest(body), body);
    });

    it('accepts an OpenAI SDK tool loop with parallel calls, string tool content and a data URL image', () => {
      const body = {
        model: 'gpt-4.1',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'text', text: 'Weather here and in Rome?' }] },
          {
            role: 'assistant',
            content: 'Checking both.',
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_a', content: [{ type: 'text', text: '20C' }] },
          { role: 'tool', tool_call_id: 'call_b', content: '18C' },
        ],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        parallel_tool_calls: false,
        stream: true,
        stream_options: { include_usage: true },
      };
      assert.equal(validateChatRequest(body), body);
    });

    it('accepts a legacy function_call turn with null content', () => {
      const body = fullRequest();
      body.messages[3] = { role: 'assistant', content: null, function_call: { name: 'legacy_lookup', arguments: '{}' } };
      assert.equal(validateChatRequest(body), body);
    });

    it('accepts an assistant refusal part', () => {
      const body = fullRequest();
      body.messages[5].content = [{ type: 'refusal', refusal: 'I cannot help with that.' }];
      assert.equal(validateChatRequest(body), body);
    });

    for (const toolChoice of ['auto', 'required', 'none']) {
      it(`accepts tool_choice "${toolChoice}"`, () => {
        const body = fullRequest();
        body.tool_choice = toolChoice;
        assert.equal(validateChatRequest(body), body);
      });
    }

    for (const effort of ['none', 'minimal', 'low', 'medium', 'high', 'xhigh']) {
      it(`accepts reasoning_effort "${effort}"`, () => {
        const body = fullRequest();
        body.reasoning_effort = effort;
        assert.equal(validateChatRequest(body), body);
      });
    }

    for (const format of [{ type: 'text' }, { type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'x' } }]) {
      it(`accepts response_format ${JSON.stringify(format)}`, () => {
        const body = fullRequest();
        body.response_format = format;
        assert.equal(validateChatRequest(body), body);
      });
    }

    it('accepts boundary values', () => {
      const body = fullRequest();
      Object.assign(body, {
        temperature: 2,
        top_p: 0,
        frequency_penalty: -2,
        presence_penalty: 2,
        n: 128,
        stop: ['a', 'b', 'c', 'd'],
        max_tokens: 1,
        seed: -9007199254740991,
      });
      assert.equal(validateChatRequest(body), body);
      body.stop = 'END';
      body.temperature = 0;
      assert.equal(validateChatRequest(body), body);
    });

    it('treats nullable parameters sent as null as absent, leaving the client body untouched', () => {
      const body = fullRequest();
      const nullable = [
        'stream', 'stream_options', 'temperature', 'top_p', 'max_tokens', 'max_completion_tokens',
        'frequency_penalty', 'presence_penalty', 'n', 'stop', 'seed', 'reasoning_effort',
      ];
      for (const key of nullable) body[key] = null;
      const result = validateChatRequest(body);
      for (const key of nullable) {
        assert.equal(Object.hasOwn(result, key), false, `${key} should be dropped`);
        assert.equal(body[key], null, `${key} should stay in the client's object`);
      }
      assert.equal(result.model, 'gpt-4o');
      assert.equal(result.messages, body.messages);
      assert.equal(result.tool_choice, 'auto');
    });

    it('passes unknown fields through untouched', () => {
      const body = fullRequest();
      Object.assign(body, { logprobs: true, top_logprobs: 3, store: false, metadata: { a: 'b' }, web_search_options: {} });
      body.messages[2].content[0].cache_control = { type: 'ephemeral' };
      const result = validateChatRequest(body);
      assert.equal(result, body);
      assert.equal(result.top_logprobs, 3);
    });
  });

  describe('on hostile input', () => {
    const notObjects: Array<[string, unknown]> = [
      ['null', null], ['undefined', undefined], ['a number', 0], ['a string', 'model'],
      ['a boolean', false], ['an empty array', []], ['an array holding a valid request', [fullRequest()]],
    ];
    for (const [label, body] of notObjects) {
      it(`refuses a body that is ${label} with a 400`, () => {
        assert.match(rejection(body).message, /^body: (is required and )?must be a JSON object$/);
      });
    }

    it('never reads fields inherited through a __proto__ key', () => {
      const body = JSON.parse('{"__proto__": {"model": "gpt-4o"}, "messages": [{"role": "user", "content": "hi"}]}');
      assert.equal(rejection(body).message, 'model: is required and must be a non-empty string');
      const message = JSON.parse('{"__proto__": {"role": "user"}, "content": "hi"}');
      assert.match(rejection({ model: 'm', messages: [message] }).message, /^messages\.0\.role: is required/);
    });

    it('keeps a __proto__ key as plain data when it drops nulls', () => {
      const body = JSON.parse('{"__proto__": {"polluted": 1}, "model": "m", "messages": [{"role": "user", "content": "hi"}], "n": null}');
      const result = validateChatRequest(body);
      assert.notEqual(result, body);
      assert.equal(Object.getPrototypeOf(result), Object.prototype);
      assert.ok(Object.hasOwn(result, '__proto__'));
      assert.equal((result as Body).polluted, undefined);
      assert.equal(({} as Body).polluted, undefined);
    });

    it('does not mistake Object.prototype members for fields', () => {
      const body = JSON.parse('{"model":"m","constructor":1,"valueOf":2,"messages":[{"role":"user","content":"hi","toString":3}]}');
      assert.equal(validateChatRequest(body), body);
    });

    it('handles 10,000-item arrays of messages, parts and tools', () => {
      const messages = Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}` }));
      messages.push({ role: 'user', content: Array.from({ length: 10_000 }, () => ({ type: 'text', text: 'x' })) } as never);
      const tools = Array.from({ length: 10_000 }, (_, i) => ({ type: 'function', function: { name: `tool_${i}` } }));
      const body = { model: 'm', messages, tools };
      assert.equal(validateChatRequest(body), body);
      (messages[10_000] as Body).content[9_999] = { type: 'text' };
      assert.match(rejection(body).message, /^messages\.10000\.content\.9999\.text: is required/);
    });

    it('treats deeply nested parameters and schemas as opaque', () => {
      let deep: Body = {};
      for (let i = 0; i < 100_000; i++) deep = { properties: deep, items: [deep] };
      const body = fullRequest();
      body.tools[0].function.parameters = deep;
      body.response_format.json_schema.schema = deep;
      body.metadata = deep;
      assert.equal(validateChatRequest(body), body);
    });

    it('refuses deep nesting where a string is expected without descending into it', () => {
      let deep: unknown = 'x';
      for (let i = 0; i < 100_000; i++) deep = { text: deep };
      const body = fullRequest();
      body.messages[2].content[0].text = deep;
      assert.match(rejection(body).message, /^messages\.2\.content\.0\.text: must be a string/);
    });
  });

  it('throws only GatewayError 400s for thousands of random mutations of valid bodies', () => {
    assertOnlyRefusals({ validate: validateChatRequest, seeds: [fullRequest(), { model: 'm', messages: [{ role: 'user', content: 'hi' }] }], mutate, seed: 0xc4a7, rounds: 4000 });
  });
});

// ---------- random mutation ----------

const mutate = createMutator({
  words: ['tool', 'function', 'system', 'image_url', 'auto', 'required', 'json_schema'],
  shapes: [{ type: 'function', function: {} }, { type: 'image_url', image_url: {} }],
  keys: ['content', 'type', 'role', 'function', 'tool_calls', 'image_url', 'name'],
});

describe('messages and tools found valid before', () => {
  it('are checked again when they may have changed (not frozen), and a frozen list is accepted again', () => {
    const message = { role: 'user', content: 'hi' };
    const tools = Object.freeze([Object.freeze({ type: 'function', function: Object.freeze({ name: 'Bash' }) })]);
    validateChatRequest({ model: 'm', messages: [message], tools });
    validateChatRequest({ model: 'm', messages: [message], tools });
    message.role = 'robot';
    assert.throws(() => validateChatRequest({ model: 'm', messages: [message], tools }), /messages\.0\.role/);
  });
});
