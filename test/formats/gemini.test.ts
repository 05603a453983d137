import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/common/errors.ts';
import { validateGeminiCountTokens, validateGeminiRequest } from '../../src/formats/gemini.ts';

const FIXTURES = new URL('../fixtures/gemini/', import.meta.url);

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as Record<string, unknown>;
}

function user(text = 'Hi'): Record<string, unknown> {
  return { role: 'user', parts: [{ text }] };
}

/** Asserts a 400 invalid_parameters whose message starts with `path:` (and holds `rule` when given). */
function refuses(body: unknown, path: string, rule?: RegExp, countTokens = false): void {
  assert.throws(
    () => (countTokens ? validateGeminiCountTokens(body) : validateGeminiRequest(body)),
    (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.status, 400);
      assert.equal(error.code, 'invalid_parameters');
      assert.ok(error.message.startsWith(`${path}: `), error.message);
      if (rule !== undefined) assert.match(error.message, rule);
      return true;
    },
  );
}

describe('validateGeminiRequest: what real clients send', () => {
  for (const name of ['request-gemini-cli.json', 'request-genai-sdk.json', 'request-ai-sdk.json']) {
    it(`accepts ${name} as it is, returning the same object`, () => {
      const body = fixture(name);
      assert.equal(validateGeminiRequest(body), body);
    });
  }

  it('accepts snake_case field names as Google does and returns them in camelCase', () => {
    const request = validateGeminiRequest(fixture('request-snake-case.json'));
    assert.deepEqual(request.systemInstruction, { parts: [{ text: 'You are a movie assistant.' }] });
    assert.deepEqual(request.contents[0]?.parts[1], { inlineData: { mimeType: 'image/png', data: (fixture('request-snake-case.json')['contents'] as Array<{ parts: Array<Record<string, { data: string }>> }>)[0]?.parts[1]?.['inline_data']?.data } });
    assert.deepEqual(request.toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['find_theaters'] } });
    assert.deepEqual(request.generationConfig, { maxOutputTokens: 200, stopSequences: ['END'], thinkingConfig: { thinkingBudget: 0 } });
    const declaration = request.tools?.[0]?.functionDeclarations?.[0];
    // A property's name is the client's, not a field of Google's: it keeps its underscore.
    assert.ok(declaration?.parameters?.properties !== undefined && 'movie_title' in declaration.parameters.properties);
    assert.equal('system_instruction' in request, false);
  });

  it('reads a null field as not set, as proto JSON does', () => {
    const request = validateGeminiRequest({ contents: [user()], generationConfig: { temperature: null, maxOutputTokens: 5 }, tools: null });
    assert.deepEqual(request.generationConfig, { maxOutputTokens: 5 });
    assert.equal('tools' in request, false);
  });

  it('leaves function arguments, responses and JSON schemas untouched, snake_case keys and nulls included', () => {
    const args = { file_path: 'a.txt', max_lines: null };
    const response = { output_text: 'x', error_code: null };
    const jsonSchema = { type: 'object', properties: { some_field: { type: ['string', 'null'] } } };
    const body = {
      contents: [
        user(),
        { role: 'model', parts: [{ function_call: { name: 'f', args } }] },
        { role: 'user', parts: [{ function_response: { name: 'f', response } }] },
      ],
      tools: [{ function_declarations: [{ name: 'f', parameters_json_schema: jsonSchema }] }],
    };
    const request = validateGeminiRequest(body);
    assert.equal(request.contents[1]?.parts[0]?.functionCall?.args, args);
    assert.equal(request.contents[2]?.parts[0]?.functionResponse?.response, response);
    assert.equal(request.tools?.[0]?.functionDeclarations?.[0]?.parametersJsonSchema, jsonSchema);
  });

  it('accepts consecutive same-role contents, a content without role, unknown fields and part kinds', () => {
    const body = {
      contents: [user('a'), user('b'), { parts: [{ text: 'c' }] }, { role: 'model', parts: [{ brandNewPart: { x: 1 } }] }],
      labels: { team: 'x' },
      serviceTier: 'flex',
      generationConfig: { responseModalities: ['TEXT'], mediaResolution: 'MEDIA_RESOLUTION_LOW', thinkingConfig: { thinkingLevel: 'ULTRA' } },
      toolConfig: { functionCallingConfig: { mode: 'SOME_NEW_MODE' } },
    };
    assert.equal(validateGeminiRequest(body), body);
  });

  it("accepts Google's own tools and server-side tool parts", () => {
    const body = {
      contents: [user(), { role: 'model', parts: [{ toolCall: { toolType: 'GOOGLE_SEARCH', args: {} } }, { executableCode: { language: 'PYTHON', code: 'print(1)' } }, { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '1' } }] }],
      tools: [{ googleSearch: {} }, { codeExecution: {} }, { urlContext: {} }],
    };
    assert.equal(validateGeminiRequest(body), body);
  });
});

describe('validateGeminiRequest: refused, naming the field', () => {
  it('refuses what is not a JSON object, and missing or empty contents', () => {
    refuses([], 'body');
    refuses({}, 'contents', /required/);
    refuses({ contents: [] }, 'contents', /at least 1/);
  });

  it('refuses a role other than user and model, and empty parts', () => {
    refuses({ contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }, 'contents.0.role', /user, model/);
    refuses({ contents: [{ role: 'user', parts: [] }] }, 'contents.0.parts', /at least 1/);
    refuses({ contents: [{ role: 'user' }] }, 'contents.0.parts');
  });

  it('refuses a part holding two kinds of data', () => {
    refuses({ contents: [{ role: 'user', parts: [{ text: 'a', inlineData: { mimeType: 'image/png', data: 'AAAA' } }] }] }, 'contents.0.parts.0.inlineData', /one kind of data/);
  });

  it('refuses bad inline data and file data', () => {
    refuses({ contents: [{ parts: [{ inlineData: { data: 'AAAA' } }] }] }, 'contents.0.parts.0.inlineData.mimeType');
    refuses({ contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: 'data:image/png;base64,AAAA' } }] }] }, 'contents.0.parts.0.inlineData.data', /without a "data:/);
    refuses({ contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: 'not base64!' } }] }] }, 'contents.0.parts.0.inlineData.data', /base64/);
    refuses({ contents: [{ parts: [{ fileData: { mimeType: 'image/png' } }] }] }, 'contents.0.parts.0.fileData.fileUri');
  });

  it('refuses function calls and responses without a name, or with arguments that are not an object', () => {
    refuses({ contents: [{ role: 'model', parts: [{ functionCall: { args: {} } }] }] }, 'contents.0.parts.0.functionCall.name');
    refuses({ contents: [{ role: 'model', parts: [{ functionCall: { name: 'f', args: '{}' } }] }] }, 'contents.0.parts.0.functionCall.args');
    refuses({ contents: [{ parts: [{ functionResponse: { name: 'f', response: 'done' } }] }] }, 'contents.0.parts.0.functionResponse.response', /output/);
    refuses({ contents: [{ parts: [{ functionResponse: { response: {} } }] }] }, 'contents.0.parts.0.functionResponse.name');
    refuses({ contents: [{ parts: [{ functionResponse: { name: 'f', response: {}, parts: [{ inlineData: { mimeType: 'image/png' } }] } }] }] }, 'contents.0.parts.0.functionResponse.parts.0.inlineData.data');
  });

  it('refuses a thought flag or signature of the wrong type', () => {
    refuses({ contents: [{ parts: [{ text: 'x', thought: 'yes' }] }] }, 'contents.0.parts.0.thought');
    refuses({ contents: [{ parts: [{ text: 'x', thoughtSignature: 5 }] }] }, 'contents.0.parts.0.thoughtSignature');
  });

  it('refuses function declarations Google refuses', () => {
    const tools = (declarations: unknown[]) => ({ contents: [user()], tools: [{ functionDeclarations: declarations }] });
    refuses(tools([{ name: '1abc' }]), 'tools.0.functionDeclarations.0.name', /starting with a letter/);
    refuses(tools([{ name: 'a'.repeat(129) }]), 'tools.0.functionDeclarations.0.name');
    refuses(tools([{ name: 'f' }, { name: 'f' }]), 'tools.0.functionDeclarations.1.name', /unique/);
    refuses(tools([{ name: 'f', parameters: { type: 'OBJECT' }, parametersJsonSchema: { type: 'object' } }]), 'tools.0.functionDeclarations.0.parametersJsonSchema', /one of them/);
    refuses(tools([{ name: 'f', parameters: 'OBJECT' }]), 'tools.0.functionDeclarations.0.parameters');
    refuses({ contents: [user()], tools: [{ googleSearch: true }] }, 'tools.0.googleSearch');
    // Dots, colons and dashes are Gemini names (MCP tools), even where chat upstreams refuse them.
    assert.ok(validateGeminiRequest(tools([{ name: 'server.tool:read-file' }])));
  });

  it('refuses generation config values outside what Google takes', () => {
    const config = (generationConfig: Record<string, unknown>) => ({ contents: [user()], generationConfig });
    refuses(config({ temperature: 2.5 }), 'generationConfig.temperature', /0 to 2/);
    refuses(config({ topP: 1.5 }), 'generationConfig.topP');
    refuses(config({ maxOutputTokens: 0 }), 'generationConfig.maxOutputTokens');
    refuses(config({ candidateCount: 1.5 }), 'generationConfig.candidateCount');
    refuses(config({ stopSequences: ['a', 'b', 'c', 'd', 'e', 'f'] }), 'generationConfig.stopSequences', /at most 5/);
    refuses(config({ stopSequences: [1] }), 'generationConfig.stopSequences.0');
    refuses(config({ responseSchema: { type: 'OBJECT' }, responseJsonSchema: { type: 'object' } }), 'generationConfig.responseJsonSchema');
    refuses(config({ thinkingConfig: { thinkingBudget: -2 } }), 'generationConfig.thinkingConfig.thinkingBudget');
    refuses(config({ thinkingConfig: { thinkingBudget: 100, thinkingLevel: 'LOW' } }), 'generationConfig.thinkingConfig.thinkingLevel', /one of them/);
    refuses(config({ thinkingConfig: { includeThoughts: 'true' } }), 'generationConfig.thinkingConfig.includeThoughts');
  });

  it('refuses a bad tool config, safety settings and cached content', () => {
    refuses({ contents: [user()], toolConfig: { functionCallingConfig: { mode: 1 } } }, 'toolConfig.functionCallingConfig.mode');
    refuses({ contents: [user()], toolConfig: { functionCallingConfig: { allowedFunctionNames: 'f' } } }, 'toolConfig.functionCallingConfig.allowedFunctionNames');
    refuses({ contents: [user()], safetySettings: [{ category: 'HARM_CATEGORY_HATE_SPEECH' }] }, 'safetySettings.0.threshold');
    refuses({ contents: [user()], cachedContent: '' }, 'cachedContent');
  });

  it('refuses a field given under both its names', () => {
    refuses({ contents: [user()], generationConfig: { maxOutputTokens: 5, max_output_tokens: 6 } }, 'generationConfig.maxOutputTokens', /given twice/);
  });

  it('names the path of a snake_case field by its camelCase name', () => {
    refuses({ contents: [user()], generation_config: { max_output_tokens: -1 } }, 'generationConfig.maxOutputTokens');
  });
});

describe('validateGeminiCountTokens', () => {
  it('accepts contents, or a generateContentRequest wrapper with its system instruction and tools', () => {
    const contents = { contents: [user()] };
    assert.equal(validateGeminiCountTokens(contents), contents);
    const wrapped = { generateContentRequest: { model: 'models/gemini-2.5-flash', ...fixture('request-genai-sdk.json') } };
    assert.equal(validateGeminiCountTokens(wrapped), wrapped);
    const snake = validateGeminiCountTokens({ generate_content_request: { contents: [user()], system_instruction: { parts: [{ text: 's' }] } } });
    assert.deepEqual(snake, { generateContentRequest: { contents: [user()], systemInstruction: { parts: [{ text: 's' }] } } });
  });

  it('refuses neither, both, or a bad wrapped request', () => {
    refuses({}, 'contents', /generateContentRequest/, true);
    refuses({ contents: [user()], generateContentRequest: { contents: [user()] } }, 'generateContentRequest', /one of them/, true);
    refuses({ generateContentRequest: { contents: [] } }, 'generateContentRequest.contents', undefined, true);
    refuses({ generateContentRequest: { model: 5, contents: [user()] } }, 'generateContentRequest.model', undefined, true);
    refuses({ contents: [{ role: 'bot', parts: [{ text: 'x' }] }] }, 'contents.0.role', undefined, true);
  });
});
