import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { geminiRequestToChat } from '../../src/translate/gemini-to-chat.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import { ANTHROPIC, DEEPSEEK, GEMINI, reader, sealed } from '../helpers/carry.ts';

const FIXTURES = new URL('../fixtures/gemini/', import.meta.url);
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function fixture(name: string): GeminiRequest {
  return validateGeminiRequest(JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')));
}

const MODEL: UpstreamModel = { upstreamId: 'gpt-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 16384 };
const REASONING: UpstreamModel = { ...MODEL, reasoning: true, maxTokensParam: 'max_completion_tokens' };

function translate(body: Record<string, unknown>, model = MODEL, stream = false): { out: ReturnType<typeof geminiRequestToChat>; warnings: string[] } {
  const warnings: string[] = [];
  const out = geminiRequestToChat(validateGeminiRequest(body), model, { onWarning: (message) => warnings.push(message), stream });
  return { out, warnings };
}

const user = (...parts: unknown[]) => ({ role: 'user', parts });
const model = (...parts: unknown[]) => ({ role: 'model', parts });

describe('geminiRequestToChat: contents and roles', () => {
  it('makes model turns assistant messages and merges consecutive contents of one role', () => {
    const { out } = translate({
      contents: [user({ text: 'Hello' }), user({ text: 'Are you there?' }), model({ text: 'Yes, ' }), model({ text: 'I am.' }), user({ text: 'Good.' })],
    });
    assert.deepEqual(out.messages, [
      { role: 'user', content: 'Hello\n\nAre you there?' },
      { role: 'assistant', content: 'Yes, I am.' },
      { role: 'user', content: 'Good.' },
    ]);
    assert.equal(out.model, 'gpt-up');
  });

  it('puts the system instruction first, as a system message', () => {
    const { out } = translate({ systemInstruction: { role: 'user', parts: [{ text: 'Be brief.' }, { text: 'Be kind.' }] }, contents: [user({ text: 'Hi' })] });
    assert.deepEqual(out.messages[0], { role: 'system', content: 'Be brief.\n\nBe kind.' });
  });

  it('asks for a stream with usage only when the client called streamGenerateContent', () => {
    assert.equal(translate({ contents: [user({ text: 'Hi' })] }).out.stream, undefined);
    const { out } = translate({ contents: [user({ text: 'Hi' })] }, MODEL, true);
    assert.equal(out.stream, true);
    assert.deepEqual(out.stream_options, { include_usage: true });
  });
});

describe('geminiRequestToChat: media', () => {
  it('sends inline images as data URLs and public image files by URL, in order', () => {
    const { out } = translate({
      contents: [user({ text: 'Compare' }, { inlineData: { mimeType: 'image/png', data: PNG } }, { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.jpg' } })],
    });
    assert.deepEqual(out.messages[0], {
      role: 'user',
      content: [
        { type: 'text', text: 'Compare' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
      ],
    });
  });

  it('drops a file the upstream cannot fetch, with a warning and a placeholder', () => {
    const { out, warnings } = translate({
      contents: [user({ fileData: { mimeType: 'video/mp4', fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc' } }, { fileData: { mimeType: 'image/png', fileUri: 'gs://bucket/a.png' } })],
    });
    assert.deepEqual(out.messages[0], {
      role: 'user',
      content: '[file omitted: https://generativelanguage.googleapis.com/v1beta/files/abc cannot be fetched by this model]\n\n[file omitted: gs://bucket/a.png cannot be fetched by this model]',
    });
    assert.equal(warnings.length, 2);
    assert.match(warnings[0] ?? '', /^contents\.0\.parts\.0\.fileData: dropped/);
    assert.ok(warnings.every((warning) => !warning.includes('gs://') && !warning.includes('files/abc')), 'the URI stays out of the log');
  });

  it('sends a PDF as a file part, WAV audio as input_audio, text data as text', () => {
    const { out } = translate({
      contents: [user({ inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } }, { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } }, { inlineData: { mimeType: 'text/plain', data: Buffer.from('notes').toString('base64') } })],
    });
    assert.deepEqual(out.messages[0], {
      role: 'user',
      content: [
        { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
        { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        { type: 'text', text: 'notes' },
      ],
    });
  });
});

describe('geminiRequestToChat: function declarations', () => {
  it("turns Google's upper-case schema into JSON Schema and takes parametersJsonSchema as it is", () => {
    const { out } = translate({
      contents: [user({ text: 'Hi' })],
      tools: [{ functionDeclarations: [
        { name: 'get_weather', description: 'Weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING', nullable: true } }, required: ['city'] } },
        { name: 'read_file', parametersJsonSchema: { type: 'object', properties: { file_path: { type: 'string' } }, additionalProperties: false } },
        { name: 'ping' },
      ] }],
    });
    assert.deepEqual(out.tools, [
      { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: ['string', 'null'] } }, required: ['city'] } } },
      { type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: { file_path: { type: 'string' } }, additionalProperties: false } } },
      { type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: {} } } },
    ]);
  });

  it('renames a function chat upstreams refuse, the same way in history and declarations', () => {
    const { out } = translate({
      contents: [user({ text: 'Hi' }), model({ functionCall: { name: 'fs.read:file', args: {} } }), user({ functionResponse: { name: 'fs.read:file', response: { output: 'x' } } })],
      tools: [{ functionDeclarations: [{ name: 'fs.read:file' }] }],
    });
    const name = out.tools?.[0]?.function.name ?? '';
    assert.match(name, /^fs_read_file_[0-9a-f]{8}$/);
    assert.equal(out.messages[1]?.tool_calls?.[0]?.function.name, name);
  });

  it("refuses Google's own tools with a 400 naming them, and drops unknown tool kinds with a warning", () => {
    assert.throws(() => translate({ contents: [user({ text: 'Hi' })], tools: [{ googleSearch: {} }] }), (error: unknown) => {
      assert.ok(error instanceof GatewayError && error.status === 400);
      assert.match(error.message, /^tools\.0\.googleSearch: Google Search runs only on Google's side/);
      return true;
    });
    const { out, warnings } = translate({ contents: [user({ text: 'Hi' })], tools: [{ someFutureTool: {} }, { functionDeclarations: [{ name: 'f' }] }] });
    assert.equal(out.tools?.length, 1);
    assert.deepEqual(warnings, ['tools.0.someFutureTool: dropped, a chat-completions upstream cannot run this kind of tool']);
  });
});

describe('geminiRequestToChat: function calls and responses', () => {
  it("keeps the client's call ids and answers each call by id", () => {
    const { out } = translate(fixture('request-gemini-cli.json') as unknown as Record<string, unknown>);
    const call = out.messages.find((message) => message.tool_calls !== undefined);
    const id = call?.tool_calls?.[0]?.id ?? '';
    assert.equal(id, 'read_file__read_file_1767225600000_0');
    assert.deepEqual(call?.tool_calls?.[0]?.function, { name: 'read_file', arguments: '{"file_path":"notes.txt"}' });
    assert.deepEqual(out.messages[out.messages.length - 1], { role: 'tool', tool_call_id: id, content: 'Buy milk.\nCall the plumber on Friday.\n' });
  });

  it('sends an id upstreams refuse (over 40 characters, or with dots) as the same stable hash for the call and its response', () => {
    const id = 'mcp.server__fetch_url__fetch_url_1767225600000_12';
    const body = { contents: [user({ text: 'Go' }), model({ functionCall: { id, name: 'fetch_url', args: {} } }), user({ functionResponse: { id, name: 'fetch_url', response: { output: 'ok' } } })] };
    const { out } = translate(body);
    const upstreamId = out.messages[1]?.tool_calls?.[0]?.id ?? '';
    assert.match(upstreamId, /^call_[0-9a-f]{24}$/);
    assert.equal(out.messages[2]?.tool_call_id, upstreamId);
    assert.equal(translate(body).out.messages[1]?.tool_calls?.[0]?.id, upstreamId);
  });

  it('makes ids for calls without one, the same on every turn, and matches responses by name and order', () => {
    const body = {
      contents: [
        user({ text: 'Weather in Paris and London?' }),
        model({ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'London' } } }),
        user({ functionResponse: { name: 'get_weather', response: { output: 'rain' } } }, { functionResponse: { name: 'get_weather', response: { output: 'fog' } } }),
      ],
    };
    const first = translate(body).out;
    const ids = first.messages[1]?.tool_calls?.map((call) => call.id) ?? [];
    assert.equal(ids.length, 2);
    assert.notEqual(ids[0], ids[1]);
    assert.deepEqual(first.messages.slice(2), [
      { role: 'tool', tool_call_id: ids[0], content: 'rain' },
      { role: 'tool', tool_call_id: ids[1], content: 'fog' },
    ]);
    // The next turn, with more history, gives the earlier calls the same ids.
    const next = translate({ contents: [...body.contents, model({ text: 'Rain in Paris, fog in London.' }), user({ text: 'Thanks' })] }).out;
    assert.deepEqual(next.messages[1]?.tool_calls?.map((call) => call.id), ids);
  });

  it('matches a response whose id names no call by name (Gemini CLI invents ids for calls that had none)', () => {
    const { out } = translate({
      contents: [user({ text: 'List' }), model({ functionCall: { name: 'ls', args: {} } }), user({ functionResponse: { id: 'ls__ls_1_0', name: 'ls', response: { output: 'a b' } } })],
    });
    assert.equal(out.messages[2]?.tool_call_id, out.messages[1]?.tool_calls?.[0]?.id);
  });

  it('sends a response that answers no call as user text, with a warning', () => {
    const { out, warnings } = translate({ contents: [user({ functionResponse: { name: 'lost', response: { output: 'x' } } })] });
    assert.deepEqual(out.messages, [{ role: 'user', content: 'Output of function lost:\nx' }]);
    assert.match(warnings[0] ?? '', /contents\.0\.parts\.0: answers a call of "lost" that is not in the contents/);
  });

  it('writes responses as text: output as it is, an error as Error:, anything else as JSON', () => {
    const { out } = translate({
      contents: [
        user({ text: 'Go' }),
        model({ functionCall: { name: 'a', args: {} } }, { functionCall: { name: 'b', args: {} } }, { functionCall: { name: 'c', args: {} } }, { functionCall: { name: 'd', args: {} } }),
        user(
          { functionResponse: { name: 'a', response: { output: 'done' } } },
          { functionResponse: { name: 'b', response: { error: 'no such file' } } },
          { functionResponse: { name: 'c', response: { temperature: 21 } } },
          { functionResponse: { name: 'd', response: { name: 'd', content: 'ai-sdk style' }, parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }] } },
        ),
      ],
    });
    assert.deepEqual(out.messages.slice(2).map((message) => message.content), [
      'done',
      'Error: no such file',
      '{"temperature":21}',
      'ai-sdk style\n\n[image omitted: tool results sent to this model carry text only]',
    ]);
  });

  it('puts tool messages before the rest of the user turn', () => {
    const { out } = translate({
      contents: [user({ text: 'Go' }), model({ functionCall: { name: 'a', args: {} } }), user({ text: 'Here it is:' }, { functionResponse: { name: 'a', response: { output: '1' } } })],
    });
    assert.deepEqual(out.messages.slice(2).map((message) => message.role), ['tool', 'user']);
  });
});

describe('geminiRequestToChat: function-calling modes', () => {
  const tools = [{ functionDeclarations: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] }];
  const modeOf = (functionCallingConfig: Record<string, unknown>) => translate({ contents: [user({ text: 'x' })], tools, toolConfig: { functionCallingConfig } }).out;

  it('maps AUTO, ANY, NONE and VALIDATED', () => {
    assert.equal(modeOf({ mode: 'AUTO' }).tool_choice, 'auto');
    assert.equal(modeOf({ mode: 'ANY' }).tool_choice, 'required');
    assert.equal(modeOf({ mode: 'NONE' }).tool_choice, 'none');
    assert.equal(modeOf({ mode: 'VALIDATED' }).tool_choice, 'auto');
    assert.equal(modeOf({}).tool_choice, undefined);
  });

  it('forces the one allowed function, and offers only the allowed ones when there are several', () => {
    assert.deepEqual(modeOf({ mode: 'ANY', allowedFunctionNames: ['b'] }).tool_choice, { type: 'function', function: { name: 'b' } });
    const several = modeOf({ mode: 'ANY', allowedFunctionNames: ['a', 'c'] });
    assert.equal(several.tool_choice, 'required');
    assert.deepEqual(several.tools?.map((tool) => tool.function.name), ['a', 'c']);
  });

  it('drops an unknown mode with a warning', () => {
    const { out, warnings } = translate({ contents: [user({ text: 'x' })], tools, toolConfig: { functionCallingConfig: { mode: 'PSYCHIC' } } });
    assert.equal(out.tool_choice, undefined);
    assert.equal(warnings.length, 1);
  });
});

describe('geminiRequestToChat: generation config', () => {
  it('maps sampling, length, stop sequences, seed and penalties; drops topK with a warning', () => {
    const { out, warnings } = translate({
      contents: [user({ text: 'x' })],
      generationConfig: { temperature: 1.5, topP: 0.9, topK: 40, maxOutputTokens: 300, stopSequences: ['END'], seed: 7, presencePenalty: 0.5, frequencyPenalty: -0.5, candidateCount: 1 },
    });
    assert.deepEqual(
      { temperature: out.temperature, top_p: out.top_p, max_tokens: out.max_tokens, stop: out.stop, seed: out.seed, presence_penalty: out.presence_penalty, frequency_penalty: out.frequency_penalty },
      { temperature: 1.5, top_p: 0.9, max_tokens: 300, stop: ['END'], seed: 7, presence_penalty: 0.5, frequency_penalty: -0.5 },
    );
    assert.deepEqual(warnings, ['generationConfig.topK: dropped, a chat-completions upstream has no equivalent']);
  });

  it("puts the output cap in the model's own parameter", () => {
    assert.equal(translate({ contents: [user({ text: 'x' })], generationConfig: { maxOutputTokens: 50 } }, REASONING).out.max_completion_tokens, 50);
  });

  it('refuses more than one candidate', () => {
    assert.throws(() => translate({ contents: [user({ text: 'x' })], generationConfig: { candidateCount: 2 } }), /candidateCount: must be 1 for model "gpt-up"/);
  });

  it('turns a JSON MIME type and its schema into response_format', () => {
    const json = (generationConfig: Record<string, unknown>) => translate({ contents: [user({ text: 'x' })], generationConfig }).out.response_format;
    assert.deepEqual(json({ responseMimeType: 'application/json' }), { type: 'json_object' });
    assert.deepEqual(json({ responseMimeType: 'application/json', responseJsonSchema: { type: 'object' } }), { type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' } } });
    assert.deepEqual(json({ responseMimeType: 'application/json', responseSchema: { type: 'ARRAY', items: { type: 'STRING' } } }), {
      type: 'json_schema',
      json_schema: { name: 'response', schema: { type: 'array', items: { type: 'string' } } },
    });
    assert.equal(json({ responseMimeType: 'text/plain' }), undefined);
    const { out, warnings } = translate({ contents: [user({ text: 'x' })], generationConfig: { responseMimeType: 'text/x.enum', responseSchema: { type: 'STRING', enum: ['a'] } } });
    assert.equal(out.response_format, undefined);
    assert.match(warnings[0] ?? '', /responseMimeType "text\/x.enum": dropped/);
  });

  it('drops safetySettings, cachedContent and unknown fields with warnings', () => {
    const { warnings } = translate({
      contents: [user({ text: 'x' })],
      safetySettings: [{ category: 'HARM_CATEGORY_HATE_SPEECH', threshold: 'BLOCK_NONE' }],
      cachedContent: 'cachedContents/abc',
      labels: { a: 'b' },
      generationConfig: { responseModalities: ['TEXT'], mediaResolution: 'MEDIA_RESOLUTION_LOW' },
    });
    assert.deepEqual(warnings, [
      'safetySettings: dropped, a chat-completions upstream has no equivalent',
      'cachedContent: dropped, a chat-completions upstream has no equivalent',
      'labels: dropped, a chat-completions upstream has no equivalent',
      'generationConfig.mediaResolution: dropped, a chat-completions upstream has no equivalent',
    ]);
  });
});

describe('geminiRequestToChat: thinking', () => {
  const thinking = (thinkingConfig: Record<string, unknown>, target = REASONING) => translate({ contents: [user({ text: 'x' })], generationConfig: { thinkingConfig } }, target).out.reasoning_effort;

  it('maps levels as they are and budgets by size, for reasoning models only', () => {
    assert.equal(thinking({ thinkingLevel: 'HIGH', includeThoughts: true }), 'high');
    assert.equal(thinking({ thinkingLevel: 'MINIMAL' }), 'minimal');
    assert.equal(thinking({ thinkingBudget: 1024 }), 'low');
    assert.equal(thinking({ thinkingBudget: 4096 }), 'medium');
    assert.equal(thinking({ thinkingBudget: 24576 }), 'high');
    assert.equal(thinking({ thinkingLevel: 'HIGH' }, MODEL), undefined);
  });

  it("leaves the upstream's default for thinking off and for the model deciding", () => {
    assert.equal(thinking({ thinkingBudget: 0 }), undefined);
    assert.equal(thinking({ thinkingBudget: -1 }), undefined);
  });

  it('drops thought parts, and replays them as reasoning_content to replay_reasoning models', () => {
    const body = { contents: [user({ text: 'x' }), model({ text: 'Let me think.', thought: true }, { text: 'Answer.', thoughtSignature: 'c2ln' }), user({ text: 'y' })] };
    assert.deepEqual(translate(body).out.messages[1], { role: 'assistant', content: 'Answer.' });
    assert.deepEqual(translate(body, { ...MODEL, replayReasoning: true }).out.messages[1], { role: 'assistant', content: 'Answer.', reasoning_content: 'Let me think.' });
  });
});

describe('geminiRequestToChat: the clients', () => {
  it('translates what @ai-sdk/google sends, image and tool round trip included, without warnings', () => {
    const warnings: string[] = [];
    const out = geminiRequestToChat(fixture('request-ai-sdk.json'), REASONING, { onWarning: (message) => warnings.push(message) });
    assert.deepEqual(warnings, []);
    assert.deepEqual(out.messages.map((message) => message.role), ['system', 'user', 'assistant', 'tool']);
    assert.equal(out.messages[2]?.tool_calls?.[0]?.id, 'aitxt-tool-0');
    assert.equal(out.messages[3]?.content, '{"temperature":24,"conditions":"sunny"}');
    assert.equal(out.tool_choice, 'auto');
    assert.equal(out.reasoning_effort, 'medium');
  });

  it('translates what the @google/genai SDK sends', () => {
    const out = geminiRequestToChat(fixture('request-genai-sdk.json'), MODEL);
    assert.deepEqual(out.tool_choice, { type: 'function', function: { name: 'get_weather' } });
    assert.deepEqual(out.tools?.[0]?.function.parameters, {
      type: 'object',
      properties: { location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' }, unit: { type: ['string', 'null'], enum: ['celsius', 'fahrenheit', null] } },
      required: ['location'],
    });
    assert.equal(out.messages[3]?.content, '{"temperature":21,"unit":"celsius","sky":"clear"}');
  });
});

describe('geminiRequestToChat: carried state (llmux.md section 11)', () => {
  const GEMINI_COMPAT: UpstreamModel = { ...MODEL, issuer: GEMINI };
  const DEEPSEEK_MODEL: UpstreamModel = { ...MODEL, replayReasoning: true, issuer: DEEPSEEK };
  const loop = (signature: string): Record<string, unknown> => ({
    contents: [user({ text: 'go' }), model({ functionCall: { id: 'call_a', name: 'f', args: {} }, thoughtSignature: signature }), user({ functionResponse: { id: 'call_a', name: 'f', response: { output: 'x' } } })],
  });
  const carried = (body: Record<string, unknown>, target: UpstreamModel): { out: ReturnType<typeof geminiRequestToChat>; warnings: string[] } => {
    const warnings: string[] = [];
    const carry = reader(target.issuer, warnings);
    const out = geminiRequestToChat(validateGeminiRequest(body), target, { onWarning: (message) => warnings.push(message), carry });
    carry.finish();
    return { out, warnings };
  };
  const assistant = (out: ReturnType<typeof geminiRequestToChat>): Record<string, unknown> => out.messages.find((message) => message.role === 'assistant') as unknown as Record<string, unknown>;

  it('puts a sealed Gemini signature, and Google\'s own, on the call for Google\'s OpenAI-compatible surface', () => {
    for (const signature of [sealed({ kind: 'bundle', items: [{ kind: 'thought-signature', signature: 'google-sig', callId: 'call_a' }] }, GEMINI), 'google-sig']) {
      const { out, warnings } = carried(loop(signature), GEMINI_COMPAT);
      assert.deepEqual((assistant(out)['tool_calls'] as Array<Record<string, unknown>>)[0]?.['extra_content'], { google: { thought_signature: 'google-sig' } });
      assert.deepEqual(warnings, []);
    }
  });

  it('replays a DeepSeek-style model\'s own reasoning from the seal, and gives another family\'s call the placeholder it needs', () => {
    const deepseek = carried(loop(sealed({ kind: 'bundle', items: [{ kind: 'reasoning', text: 'I reasoned.' }] }, DEEPSEEK)), DEEPSEEK_MODEL);
    assert.equal(assistant(deepseek.out)['reasoning_content'], 'I reasoned.');
    const stripped = carried(loop(sealed({ kind: 'bundle', items: [{ kind: 'thinking', thinking: 't', signature: 's' }] }, ANTHROPIC)), GEMINI_COMPAT);
    assert.deepEqual((assistant(stripped.out)['tool_calls'] as Array<Record<string, unknown>>)[0]?.['extra_content'], { google: { thought_signature: 'skip_thought_signature_validator' } });
    assert.match(stripped.warnings.join('\n'), /issued by provider "anthropic-up" \(family anthropic\) stripped/);
  });
});
