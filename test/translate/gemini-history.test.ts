import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateGeminiRequest } from '../../src/formats/gemini.ts';
import { continuesToolLoop, functionResponseText, geminiToolNames, readGeminiHistory, upstreamCallId, upstreamToolName } from '../../src/translate/gemini-history.ts';

function read(body: Record<string, unknown>): { history: ReturnType<typeof readGeminiHistory>; warnings: string[] } {
  const warnings: string[] = [];
  const history = readGeminiHistory(validateGeminiRequest(body), { warn: (message) => warnings.push(message) });
  return { history, warnings };
}

describe('upstream names and ids', () => {
  it('keeps names and ids chat and messages upstreams take, and hashes the rest the same way every time', () => {
    assert.equal(upstreamToolName('read_file'), 'read_file');
    const long = `mcp.${'x'.repeat(100)}`;
    assert.match(upstreamToolName(long), /^mcp_x+_[0-9a-f]{8}$/);
    assert.equal(upstreamToolName(long).length, 64);
    assert.equal(upstreamToolName(long), upstreamToolName(long));
    assert.notEqual(upstreamToolName('a.b'), upstreamToolName('a:b'));
    assert.equal(upstreamCallId('call_abc-1'), 'call_abc-1');
    assert.match(upstreamCallId('has.dot'), /^call_[0-9a-f]{24}$/);
  });

  it('maps renamed functions back to the names the client declared', () => {
    const request = validateGeminiRequest({ contents: [{ parts: [{ text: 'x' }] }], tools: [{ functionDeclarations: [{ name: 'plain' }, { name: 'fs.read' }] }] });
    assert.deepEqual([...geminiToolNames(request)], [[upstreamToolName('fs.read'), 'fs.read']]);
  });
});

describe('functionResponseText', () => {
  it('reads output, content, result and error, and JSON otherwise', () => {
    assert.deepEqual(functionResponseText({ output: 'a' }), { text: 'a', isError: false });
    assert.deepEqual(functionResponseText({ name: 'f', content: 'b' }), { text: 'b', isError: false });
    assert.deepEqual(functionResponseText({ result: { n: 1 } }), { text: '{"n":1}', isError: false });
    assert.deepEqual(functionResponseText({ error: { code: 5 } }), { text: '{"code":5}', isError: true });
    assert.deepEqual(functionResponseText({ a: 1, b: 2 }), { text: '{"a":1,"b":2}', isError: false });
    assert.deepEqual(functionResponseText({}), { text: '', isError: false });
  });
});

describe('readGeminiHistory', () => {
  it('replays code execution as model text, and drops server-side tool parts and unknown kinds with warnings', () => {
    const { history, warnings } = read({
      systemInstruction: { parts: [{ text: 'S' }, { inlineData: { mimeType: 'image/png', data: '' } }] },
      contents: [
        { role: 'user', parts: [{ text: 'Compute' }, { functionCall: { name: 'f' } }] },
        { role: 'model', parts: [{ executableCode: { language: 'PYTHON', code: 'print(2+2)' } }, { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '4\n' } }, { toolCall: { toolType: 'GOOGLE_SEARCH' } }, { futurePart: {} }] },
      ],
    });
    assert.equal(history.system, 'S');
    assert.deepEqual(history.turns[1], { role: 'model', items: [{ kind: 'text', text: '```python\nprint(2+2)\n```\n\nCode execution result (OUTCOME_OK):\n4\n' }] });
    assert.deepEqual(warnings, [
      "systemInstruction.parts.1: dropped, only text can be a system prompt for this model's upstream",
      'contents.0.parts.1: dropped, a function call belongs in a model turn',
      "contents.1.parts.2: dropped, this model's upstream has nothing for a toolCall part",
      "contents.1.parts.3: dropped, this model's upstream has nothing for a futurePart part",
    ]);
  });

  it('leaves out a turn that is left with nothing, and tells a tool loop from a new question', () => {
    const { history } = read({ contents: [{ role: 'user', parts: [{ text: 'Go' }] }, { role: 'model', parts: [{ text: '', thoughtSignature: 'c2ln' }] }, { role: 'user', parts: [{ text: 'Again' }] }] });
    assert.deepEqual(history.turns.map((turn) => turn.role), ['user']);
    assert.equal(continuesToolLoop(history), false);
    const loop = read({ contents: [{ role: 'user', parts: [{ text: 'Go' }] }, { role: 'model', parts: [{ functionCall: { name: 'f' } }] }, { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] }] });
    assert.equal(continuesToolLoop(loop.history), true);
  });
});
