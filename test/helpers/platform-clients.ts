/**
 * The clients every platform's end-to-end test drives through llmux (a messages client whole,
 * streamed, with thinking and a tool round trip; a chat client; a Responses client), the upstream
 * script they expect, and the check that no secret reached anything a test saw.
 *
 * Every answer's status line, headers and body is kept (`seen`), so a test can grep all of them,
 * and the gateway's log lines, for every credential in play.
 */
import assert from 'node:assert/strict';
import { anthropicHeaders, openaiHeaders } from './gateway.ts';
import type { TestGateway } from './gateway.ts';
import { assembleChatStream, assembleGeminiStream, assembleMessagesStream, sseEvents } from './assemble.ts';
import { assembleResponsesStream, parseResponsesEvents } from './responses-stream.ts';
import { lastToolResult } from './scripted-answers.ts';
import type { ScriptedAnswer } from './scripted-answers.ts';

type Json = Record<string, unknown>;

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export const READ_TOOL = { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };
export const THINKING = { text: 'The user wants the file read.', signature: 'EqQBCkYIBRgCKkDsig' };
export const FILE_TEXT = '# llmux, a gateway';

/**
 * What the fake upstreams answer: a tool call when the request offers tools and carries no tool
 * result yet; the tool result quoted once it does; else a greeting, with thinking when asked for.
 * Read from a messages or chat body, or a Converse one (tools in `toolConfig`, thinking among the
 * `additionalModelRequestFields`).
 */
export function platformScript(body: Json): ScriptedAnswer {
  const result = lastToolResult(body);
  if (result !== undefined) return { text: `The file says: ${result}` };
  const tools = (Array.isArray(body['tools']) && body['tools'].length > 0) || body['toolConfig'] !== undefined;
  if (tools) return { calls: [{ id: 'toolu_01Read', name: 'Read', input: { path: 'README.md' } }] };
  const fields = (body['additionalModelRequestFields'] ?? {}) as Json;
  const thinking = body['thinking'] !== undefined || fields['thinking'] !== undefined || fields['reasoningConfig'] !== undefined;
  return { text: 'Hello from the platform.', ...(thinking ? { thinking: THINKING } : {}) };
}

export interface PlatformClient {
  /** Everything the clients were answered: status, headers and bodies. */
  seen: string[];
  post(path: string, body: Json, headers: Record<string, string>): Promise<Answer>;
  messages(body: Json, extra?: Record<string, string>): Promise<Answer>;
  chat(body: Json): Promise<Answer>;
  responses(body: Json): Promise<Answer>;
  /** A messages tool round trip, streamed or whole: the tool call, then the answer quoting the result. */
  messagesToolRoundTrip(model: string, stream: boolean): Promise<void>;
  /** The same for a chat client. */
  chatToolRoundTrip(model: string, stream: boolean): Promise<void>;
  /** A Responses client's answer text, streamed or whole. */
  responsesText(model: string, stream: boolean): Promise<string>;
  /**
   * A streamed answer the upstream broke off, as each client format ends it: the in-stream error
   * (a messages `error` event without `message_stop`, a chat error chunk without `[DONE]`, a Responses
   * `response.failed`), after some content arrived; its type and message (Responses: its `error`).
   */
  streamError(format: 'messages' | 'chat' | 'responses', model: string): Promise<{ type?: string; code?: string; message: string }>;
  /** A Gemini tool round trip (`generateContent`, or `streamGenerateContent?alt=sse`), the call's parts sent back as they came. */
  geminiToolRoundTrip(model: string, stream: boolean): Promise<void>;
}

/** The headers `@google/genai` sends. */
export function geminiHeaders(key: string): Record<string, string> {
  return { 'content-type': 'application/json', 'x-goog-api-key': key };
}

export function createPlatformClient(gw: TestGateway): PlatformClient {
  const seen: string[] = [];
  const post = async (path: string, body: Json, headers: Record<string, string>): Promise<Answer> => {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    seen.push(`${res.status} ${JSON.stringify([...res.headers])}`, text);
    return { status: res.status, headers: res.headers, text };
  };
  const messages = (body: Json, extra: Record<string, string> = {}): Promise<Answer> => post('/v1/messages', body, anthropicHeaders(gw.key, extra));
  const chat = (body: Json): Promise<Answer> => post('/v1/chat/completions', body, openaiHeaders(gw.key));
  const responses = (body: Json): Promise<Answer> => post('/v1/responses', body, openaiHeaders(gw.key));

  const messagesAnswer = (answer: Answer, stream: boolean): Json => {
    assert.equal(answer.status, 200, answer.text);
    const message = stream ? assembleMessagesStream(answer.text) : (JSON.parse(answer.text) as Json);
    assert.ok(message !== undefined, `a whole answer, not an error: ${answer.text.slice(0, 300)}`);
    return message;
  };
  const chatAnswer = (answer: Answer, stream: boolean): Json => {
    assert.equal(answer.status, 200, answer.text);
    const completion = stream ? assembleChatStream(answer.text) : (JSON.parse(answer.text) as Json);
    assert.ok(completion !== undefined, `a whole answer, not an error: ${answer.text.slice(0, 300)}`);
    if (stream) assert.ok(answer.text.trimEnd().endsWith('data: [DONE]'), 'the chat stream completes');
    return completion;
  };

  return {
    seen,
    post,
    messages,
    chat,
    responses,
    async messagesToolRoundTrip(model, stream) {
      const ask = { role: 'user', content: 'Read README.md' };
      const first = messagesAnswer(await messages({ model, max_tokens: 1024, stream, tools: [READ_TOOL], messages: [ask] }), stream);
      assert.equal(first['model'], model, 'the answer names the llmux model');
      assert.equal(first['stop_reason'], 'tool_use');
      const call = (first['content'] as Json[]).find((block) => block['type'] === 'tool_use');
      assert.deepEqual({ name: call?.['name'], input: call?.['input'] }, { name: 'Read', input: { path: 'README.md' } });
      const second = messagesAnswer(await messages({
        model,
        max_tokens: 1024,
        stream,
        tools: [READ_TOOL],
        messages: [ask, { role: 'assistant', content: first['content'] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call?.['id'], content: FILE_TEXT }] }],
      }), stream);
      assert.equal(second['stop_reason'], 'end_turn');
      assert.deepEqual(second['content'], [{ type: 'text', text: `The file says: ${FILE_TEXT}` }]);
    },
    async chatToolRoundTrip(model, stream) {
      const tools = [{ type: 'function', function: { name: 'Read', description: 'Read a file', parameters: READ_TOOL.input_schema } }];
      const ask = { role: 'user', content: 'Read README.md' };
      const first = chatAnswer(await chat({ model, stream, tools, messages: [ask] }), stream);
      assert.equal(first['model'], model, 'the answer names the llmux model');
      const choice = (first['choices'] as Json[])[0] as Json;
      assert.equal(choice['finish_reason'], 'tool_calls');
      const message = choice['message'] as Json;
      const call = (message['tool_calls'] as Json[])[0] as Json;
      assert.deepEqual(JSON.parse(String((call['function'] as Json)['arguments'])), { path: 'README.md' });
      const second = chatAnswer(await chat({
        model,
        stream,
        tools,
        messages: [ask, { role: 'assistant', content: null, tool_calls: message['tool_calls'] }, { role: 'tool', tool_call_id: call['id'], content: FILE_TEXT }],
      }), stream);
      const final = (second['choices'] as Json[])[0] as Json;
      assert.equal(final['finish_reason'], 'stop');
      assert.equal((final['message'] as Json)['content'], `The file says: ${FILE_TEXT}`);
    },
    async geminiToolRoundTrip(model, stream) {
      const tools = [{ functionDeclarations: [{ name: 'Read', description: 'Read a file', parametersJsonSchema: READ_TOOL.input_schema }] }];
      const ask = { role: 'user', parts: [{ text: 'Read README.md' }] };
      const path = `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
      const geminiAnswer = (answer: Answer): Json => {
        assert.equal(answer.status, 200, answer.text);
        const response = stream ? assembleGeminiStream(answer.text) : (JSON.parse(answer.text) as Json);
        assert.ok(response !== undefined, `a whole answer, not an error: ${answer.text.slice(0, 300)}`);
        assert.equal(response['modelVersion'], model, 'the answer names the llmux model');
        return (response['candidates'] as Json[])[0] as Json;
      };
      const first = geminiAnswer(await post(path, { contents: [ask], tools }, geminiHeaders(gw.key)));
      assert.equal(first['finishReason'], 'STOP', 'a turn that ends in calls is STOP, as Google\'s');
      const parts = (first['content'] as Json)['parts'] as Json[];
      const call = parts.find((part) => part['functionCall'] !== undefined)?.['functionCall'] as Json | undefined;
      assert.deepEqual({ name: call?.['name'], args: call?.['args'] }, { name: 'Read', args: { path: 'README.md' } });
      const second = geminiAnswer(await post(path, {
        contents: [ask, { role: 'model', parts }, { role: 'user', parts: [{ functionResponse: { name: 'Read', ...(call?.['id'] === undefined ? {} : { id: call['id'] }), response: { output: FILE_TEXT } } }] }],
        tools,
      }, geminiHeaders(gw.key)));
      assert.equal(second['finishReason'], 'STOP');
      const text = ((second['content'] as Json)['parts'] as Json[]).map((part) => String(part['text'] ?? '')).join('');
      assert.equal(text, `The file says: ${FILE_TEXT}`);
    },
    async streamError(format, model) {
      const ask = { role: 'user', content: 'Hi' };
      if (format === 'responses') {
        const events = parseResponsesEvents((await responses({ model, input: 'Hi', stream: true, store: false })).text);
        assert.equal(events.at(-1)?.event, 'response.failed');
        return ((events.at(-1)?.data['response'] as Json)['error'] as { code: string; message: string });
      }
      const answer = format === 'messages' ? await messages({ model, max_tokens: 64, stream: true, messages: [ask] }) : await chat({ model, stream: true, messages: [ask] });
      assert.equal(answer.status, 200, 'the stream had begun');
      const events = sseEvents(answer.text);
      assert.ok(events.length > 1, 'the content before the error arrived');
      const last = events.at(-1);
      if (format === 'messages') {
        assert.equal(last?.event, 'error');
        assert.ok(!answer.text.includes('message_stop'));
      } else {
        assert.ok(!answer.text.includes('[DONE]'));
      }
      return (JSON.parse(last?.data ?? '{}') as { error: { type: string; message: string } }).error;
    },
    async responsesText(model, stream) {
      const answer = await responses({ model, input: 'Say hello', stream, store: false });
      assert.equal(answer.status, 200, answer.text);
      const response = stream ? (assembleResponsesStream(answer.text).final as unknown as Json) : (JSON.parse(answer.text) as Json);
      assert.equal(response['model'], model, 'the answer names the llmux model');
      assert.equal(response['status'], 'completed');
      const output = response['output'] as Json[];
      const message = output.find((item) => item['type'] === 'message') as Json;
      return (message['content'] as Json[]).map((part) => String(part['text'] ?? '')).join('');
    },
  };
}

/** `value` as it may appear in text llmux writes: itself, JSON-escaped, URL-encoded, base64. */
function encodings(value: string): string[] {
  return [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), Buffer.from(value).toString('base64')];
}

/** Asserts that no secret appears, in any of its common encodings, in any of `texts`. */
export function assertNoSecrets(texts: Iterable<string>, secrets: Iterable<string>): void {
  const all = [...texts].join('\n');
  for (const secret of secrets) {
    if (secret.length < 8) continue;
    for (const form of encodings(secret)) assert.ok(!all.includes(form), `a secret (${secret.slice(0, 4)}…) appears in what the test saw`);
  }
}

/** The gateway's log lines as text. */
export function logText(gw: TestGateway): string[] {
  return gw.logs.map((line) => JSON.stringify(line));
}
