import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { GeminiRequest } from '../../src/formats/gemini-types.ts';
import type { MessagesRequest } from '../../src/formats/wire.ts';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import { validateMessagesRequest } from '../../src/formats/messages.ts';
import { geminiRequestToMessages, type GeminiToMessagesOptions } from '../../src/translate/gemini-to-messages.ts';
import type { UpstreamModel } from '../../src/translate/messages-to-chat.ts';
import type { CarriedItem } from '../../src/translate/carried.ts';
import { ANTHROPIC, GEMINI, KEY_A, KEY_B, reader, sealed as sealedBy } from '../helpers/carry.ts';

const FIXTURES = new URL('../fixtures/gemini/', import.meta.url);
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function fixture(name: string): GeminiRequest {
  return validateGeminiRequest(JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')));
}

const MODEL: UpstreamModel = { upstreamId: 'claude-up', reasoning: false, maxTokensParam: 'max_tokens', replayReasoning: false, maxOutputTokens: 8192 };
const REASONING: UpstreamModel = { ...MODEL, reasoning: true, maxOutputTokens: 64000 };

function translate(body: Record<string, unknown> | GeminiRequest, model = MODEL, options: GeminiToMessagesOptions = {}): { out: MessagesRequest; warnings: string[] } {
  const warnings: string[] = [];
  const out = geminiRequestToMessages(validateGeminiRequest(body), model, { ...options, onWarning: (message) => warnings.push(message) });
  // Whatever comes out is a body the messages format takes.
  validateMessagesRequest(JSON.parse(JSON.stringify(out)));
  return { out, warnings };
}

const user = (...parts: unknown[]) => ({ role: 'user', parts });
const model = (...parts: unknown[]) => ({ role: 'model', parts });

describe('geminiRequestToMessages: contents and roles', () => {
  it('merges consecutive contents of one role and makes the system instruction the system prompt', () => {
    const { out } = translate({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [user({ text: 'Hello' }), user({ text: 'Anyone?' }), model({ text: 'Yes, ' }), model({ text: 'here.  ' })],
    });
    assert.equal(out.system, 'Be brief.');
    assert.deepEqual(out.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Hello' }, { type: 'text', text: 'Anyone?' }] },
      { role: 'assistant', content: 'Yes, here.' },
    ]);
  });

  it('opens with a minimal user turn when the contents start with the model', () => {
    const { out } = translate({ contents: [model({ text: 'I start.' }), user({ text: 'Go on' })] });
    assert.deepEqual(out.messages[0], { role: 'user', content: '.' });
  });

  it('streams only when the client called streamGenerateContent', () => {
    assert.equal(translate({ contents: [user({ text: 'x' })] }).out.stream, undefined);
    assert.equal(translate({ contents: [user({ text: 'x' })] }, MODEL, { stream: true }).out.stream, true);
  });
});

describe('geminiRequestToMessages: media', () => {
  it('sends images by bytes or URL and PDFs as documents', () => {
    const { out } = translate({
      contents: [user(
        { inlineData: { mimeType: 'image/png', data: PNG } },
        { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/a.jpg' } },
        { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
        { fileData: { mimeType: 'application/pdf', fileUri: 'https://example.com/a.pdf' } },
      )],
    });
    assert.deepEqual(out.messages[0]?.content, [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
      { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
    ]);
  });

  it('drops what a messages upstream cannot read or fetch, with warnings and placeholders', () => {
    const { out, warnings } = translate({
      contents: [user({ inlineData: { mimeType: 'image/heic', data: 'AAAA' } }, { inlineData: { mimeType: 'audio/mp3', data: 'AAAA' } }, { fileData: { fileUri: 'gs://b/v.mp4', mimeType: 'video/mp4' } })],
    });
    assert.deepEqual(out.messages[0]?.content, [
      { type: 'text', text: '[image omitted: image/heic cannot be sent to this model]' },
      { type: 'text', text: '[audio omitted: audio/mp3 cannot be sent to this model]' },
      { type: 'text', text: '[file omitted: gs://b/v.mp4 cannot be fetched by this model]' },
    ]);
    assert.equal(warnings.length, 3);
  });
});

describe('geminiRequestToMessages: functions', () => {
  it('turns declarations into tools, calls into tool_use and responses into tool_result, ids kept', () => {
    const { out, warnings } = translate(fixture('request-gemini-cli.json'));
    assert.deepEqual(warnings, []);
    const id = 'read_file__read_file_1767225600000_0';
    assert.deepEqual(out.messages.slice(1), [
      { role: 'assistant', content: [{ type: 'tool_use', id, name: 'read_file', input: { file_path: 'notes.txt' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'Buy milk.\nCall the plumber on Friday.\n' }] },
    ]);
    assert.deepEqual(out.tools?.map((tool) => tool.name), ['activate_skill', 'enter_plan_mode', 'read_file']);
    assert.equal(out.tools?.[2]?.input_schema.type, 'object');
  });

  it('puts tool results first in their turn, marks errors, and carries images of a response', () => {
    const { out } = translate({
      contents: [
        user({ text: 'Go' }),
        model({ functionCall: { name: 'shot', args: {} } }, { functionCall: { name: 'rm', args: {} } }),
        user(
          { text: 'Both done.' },
          { functionResponse: { name: 'shot', response: {}, parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }] } },
          { functionResponse: { name: 'rm', response: { error: 'permission denied' } } },
        ),
      ],
    });
    const [first, second, third] = out.messages[2]?.content as unknown as Array<Record<string, unknown>>;
    assert.deepEqual(first, { type: 'tool_result', tool_use_id: (out.messages[1]?.content as Array<{ id: string }>)[0]?.id, content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] });
    assert.deepEqual({ ...second, tool_use_id: '' }, { type: 'tool_result', tool_use_id: '', content: 'permission denied', is_error: true });
    assert.deepEqual(third, { type: 'text', text: 'Both done.' });
  });

  it('maps function-calling modes to tool_choice', () => {
    const choice = (functionCallingConfig: Record<string, unknown>) =>
      translate({ contents: [user({ text: 'x' })], tools: [{ functionDeclarations: [{ name: 'a' }, { name: 'b' }] }], toolConfig: { functionCallingConfig } }).out.tool_choice;
    assert.deepEqual(choice({ mode: 'AUTO' }), { type: 'auto' });
    assert.deepEqual(choice({ mode: 'ANY' }), { type: 'any' });
    assert.deepEqual(choice({ mode: 'ANY', allowedFunctionNames: ['b'] }), { type: 'tool', name: 'b' });
    assert.deepEqual(choice({ mode: 'NONE' }), { type: 'none' });
    assert.deepEqual(choice({ mode: 'VALIDATED' }), { type: 'auto' });
  });
});

describe('geminiRequestToMessages: generation config', () => {
  it('maps sampling and stop sequences, clamps temperature to 0-1, and drops what has no equivalent', () => {
    const { out, warnings } = translate({
      contents: [user({ text: 'x' })],
      generationConfig: { temperature: 1.6, topP: 0.8, topK: 20, maxOutputTokens: 500, stopSequences: ['STOP'], seed: 3, presencePenalty: 1 },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
      cachedContent: 'cachedContents/x',
    });
    assert.deepEqual({ t: out.temperature, p: out.top_p, k: out.top_k, m: out.max_tokens, s: out.stop_sequences }, { t: 1, p: 0.8, k: 20, m: 500, s: ['STOP'] });
    assert.deepEqual(warnings, [
      'safetySettings: dropped, a messages upstream has no equivalent',
      'cachedContent: dropped, a messages upstream has no equivalent',
      'generationConfig.seed: dropped, a messages upstream has no equivalent',
      'generationConfig.presencePenalty: dropped, a messages upstream has no equivalent',
    ]);
  });

  it("uses the model's output limit, capped at 32000, when the client sets none", () => {
    assert.equal(translate({ contents: [user({ text: 'x' })] }).out.max_tokens, 8192);
    assert.equal(translate({ contents: [user({ text: 'x' })] }, REASONING).out.max_tokens, 32000);
  });

  it('refuses more than one candidate', () => {
    assert.throws(() => translate({ contents: [user({ text: 'x' })], generationConfig: { candidateCount: 3 } }), /candidateCount: must be 1/);
  });

  it('asks for JSON in the system prompt, the schema included', () => {
    const { out } = translate({ systemInstruction: { parts: [{ text: 'Sys' }] }, contents: [user({ text: 'x' })], generationConfig: { responseMimeType: 'application/json', responseSchema: { type: 'OBJECT', properties: { a: { type: 'INTEGER' } } } } });
    assert.match(out.system as string, /^Sys\n\nRespond with a single valid JSON value that conforms to the JSON schema "response".*\n\{"type":"object","properties":\{"a":\{"type":"integer"\}\}\}$/s);
  });
});

describe('geminiRequestToMessages: thinking', () => {
  const thinking = (generationConfig: Record<string, unknown>, target = REASONING, extra: Record<string, unknown> = {}) =>
    translate({ contents: [user({ text: 'x' })], generationConfig, ...extra }, target);

  it('turns levels and budgets into a thinking budget, raising the default cap above it', () => {
    assert.deepEqual(thinking({ thinkingConfig: { thinkingLevel: 'HIGH', includeThoughts: true } }).out.thinking, { type: 'enabled', budget_tokens: 16384 });
    assert.deepEqual(thinking({ thinkingConfig: { thinkingBudget: 300 } }).out.thinking, { type: 'enabled', budget_tokens: 1024 });
    assert.deepEqual(thinking({ thinkingConfig: { thinkingBudget: -1 } }).out.thinking, { type: 'enabled', budget_tokens: 4096 });
    assert.equal(thinking({ thinkingConfig: { thinkingBudget: 0 } }).out.thinking, undefined);
    const small = thinking({ thinkingConfig: { thinkingBudget: 30000 } }, { ...REASONING, maxOutputTokens: 8192 });
    assert.deepEqual({ max: small.out.max_tokens, budget: small.out.thinking }, { max: 8192, budget: { type: 'enabled', budget_tokens: 8191 } });
    assert.equal(thinking({ thinkingConfig: { thinkingLevel: 'HIGH' } }, MODEL).out.thinking, undefined);
  });

  it("keeps a client's cap and lowers the budget below it, or drops thinking when no budget fits", () => {
    assert.deepEqual(thinking({ maxOutputTokens: 5000, thinkingConfig: { thinkingBudget: 8000 } }).out.thinking, { type: 'enabled', budget_tokens: 4999 });
    const { out, warnings } = thinking({ maxOutputTokens: 500, thinkingConfig: { thinkingBudget: 8000 } });
    assert.equal(out.thinking, undefined);
    assert.match(warnings[0] ?? '', /leaves no room for the minimum thinking budget/);
  });

  it('drops temperature and topK while thinking, and keeps topP only from 0.95', () => {
    const { out } = thinking({ temperature: 1, topP: 0.95, topK: 64, thinkingConfig: { thinkingLevel: 'LOW' } });
    assert.deepEqual({ t: out.temperature, p: out.top_p, k: out.top_k }, { t: undefined, p: 0.95, k: undefined });
  });

  it('thinks neither with a forced function nor when continuing a tool loop without signed thinking', () => {
    const forced = thinking({ thinkingConfig: { thinkingLevel: 'HIGH' } }, REASONING, { tools: [{ functionDeclarations: [{ name: 'f' }] }], toolConfig: { functionCallingConfig: { mode: 'ANY' } } });
    assert.equal(forced.out.thinking, undefined);
    assert.match(forced.warnings[0] ?? '', /forced function call/);
    const loop = translate(fixture('request-gemini-cli.json'), REASONING);
    assert.equal(loop.out.thinking, undefined);
    assert.match(loop.warnings[0] ?? '', /signed thinking/);
  });

  it('drops thought parts, and replays a signature llmux sealed as the signed thinking it holds, first in its turn', () => {
    const withSignature = (thoughtSignature: string): Record<string, unknown> => ({
      contents: [
        user({ text: 'Weather?' }),
        model({ text: 'Thinking it over', thought: true }, { functionCall: { id: 'call_w', name: 'w', args: {} }, thoughtSignature }),
        user({ functionResponse: { id: 'call_w', name: 'w', response: { output: 'sun' } } }),
      ],
      generationConfig: { thinkingConfig: { thinkingBudget: 2048 } },
    });
    /** Translated for an Anthropic upstream with `keyId`'s seals; the warnings once the reader is done. */
    const carried = (body: Record<string, unknown>, keyId = KEY_A): { out: MessagesRequest; warnings: string[] } => {
      const warnings: string[] = [];
      const carry = reader(ANTHROPIC, warnings, keyId);
      const out = geminiRequestToMessages(validateGeminiRequest(body), REASONING, { carry, onWarning: (message) => warnings.push(message) });
      carry.finish();
      return { out, warnings };
    };
    const thinking: CarriedItem = { kind: 'bundle', items: [{ kind: 'thinking', thinking: 'sealed thought', signature: 'anthropic-sig' }] };

    const sealed = carried(withSignature(sealedBy(thinking, ANTHROPIC)));
    assert.deepEqual(sealed.out.messages[1]?.content, [{ type: 'thinking', thinking: 'sealed thought', signature: 'anthropic-sig' }, { type: 'tool_use', id: 'call_w', name: 'w', input: {} }]);
    // With its signed thinking replayed, the tool loop may think again.
    assert.deepEqual(sealed.out.thinking, { type: 'enabled', budget_tokens: 2048 });
    assert.deepEqual(sealed.warnings, []);

    // Google's own signature, another family's seal, another key's: nothing replayed, no thinking, each said.
    for (const [body, keyId, said] of [
      [withSignature('google-own'), KEY_A, /issued by provider "google \(a signature the Gemini client kept\)" \(family gemini\) stripped/],
      [withSignature(sealedBy(thinking, GEMINI)), KEY_A, /issued by provider "gemini-up" \(family gemini\) stripped/],
      [withSignature(sealedBy(thinking, ANTHROPIC)), KEY_B, /1 llmux seal issued to another key ignored/],
    ] as const) {
      const { out, warnings } = carried(body, keyId);
      assert.deepEqual(out.messages[1]?.content, [{ type: 'tool_use', id: 'call_w', name: 'w', input: {} }]);
      assert.equal(out.thinking, undefined);
      assert.match(warnings.join('\n'), said);
    }
  });
});

describe('geminiRequestToMessages: the clients', () => {
  it('translates what @ai-sdk/google and the @google/genai SDK send without warnings', () => {
    for (const name of ['request-ai-sdk.json', 'request-genai-sdk.json']) {
      const { warnings } = translate(fixture(name), MODEL);
      assert.deepEqual(warnings, [], name);
    }
    const { out } = translate(fixture('request-snake-case.json'), MODEL);
    assert.deepEqual(out.tool_choice, { type: 'tool', name: 'find_theaters' });
    assert.deepEqual(out.stop_sequences, ['END']);
  });
});
