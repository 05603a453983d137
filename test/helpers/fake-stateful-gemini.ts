/**
 * The native Gemini personality of ./fake-stateful.ts (`generateContent`, and
 * `streamGenerateContent?alt=sse`), with Gemini 3's rule as Google's thought-signatures guide
 * states it: the first `functionCall` part of each step of the current turn (the model contents
 * after the last user content that answers no call) must carry the `thoughtSignature` Gemini
 * issued with it, or Google's placeholder `skip_thought_signature_validator`; none is "Function
 * call is missing a thought_signature in functionCall parts…" (the words users report), a
 * signature Gemini did not issue anywhere in the history "Corrupted thought signature.". Errors
 * come as the native API sends them: `{"error": {code, message, status}}`.
 *
 * Consecutive contents of one role are read as one, as Google reads them (the SDK's chat keeps each
 * streamed chunk as its own content).
 *
 * Answers: two parallel calls (the first carrying a signature, the other none, as Google's
 * parallel calls), then one call, then `done` (a signature on its text part, as Gemini 3 sends);
 * thoughts first when asked for (`thinkingConfig.includeThoughts`). Calls carry no `id`, as the
 * Gemini API gives none. Streamed one part an event, usage on the last.
 */
import { type FakeAnswer, type FakeMemory, type StatefulFake, SKIP_SIGNATURE, callOf, field, frame, list, refuse, stepOf } from './fake-stateful.ts';

const MISSING = 'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance.';

interface Content { role: string; parts: Array<Record<string, unknown>> }

/** The contents with consecutive same-role ones merged. */
function merged(contents: Array<Record<string, unknown>>): Content[] {
  const out: Content[] = [];
  for (const content of contents) {
    const role = content['role'] === 'model' ? 'model' : 'user';
    const last = out.at(-1);
    if (last !== undefined && last.role === role) last.parts.push(...list(content['parts']));
    else out.push({ role, parts: [...list(content['parts'])] });
  }
  return out;
}

function geminiError(fake: StatefulFake, message: string): FakeAnswer {
  return refuse(fake, 400, message, { error: { code: 400, message, status: 'INVALID_ARGUMENT' } });
}

function check(contents: Content[], memory: FakeMemory, fake: StatefulFake): FakeAnswer | undefined {
  let start = 0;
  contents.forEach((content, index) => {
    if (content.role === 'user' && content.parts.every((part) => part['functionResponse'] === undefined)) start = index + 1;
  });
  for (const [index, content] of contents.entries()) {
    if (content.role !== 'model') continue;
    for (const part of content.parts) {
      const signature = part['thoughtSignature'];
      if (signature !== undefined && signature !== SKIP_SIGNATURE && !memory.issued.has(`gemini-native:${String(signature)}`)) return geminiError(fake, 'Corrupted thought signature.');
    }
    const first = content.parts.find((part) => part['functionCall'] !== undefined);
    if (index < start || first === undefined || first['thoughtSignature'] !== undefined) continue;
    const name = String(field(first, 'functionCall')?.['name']);
    return geminiError(fake, `${MISSING} Additional data, function call \`default_api:${name}\` , position ${index + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`);
  }
  return undefined;
}

function signature(memory: FakeMemory): string {
  const issued = memory.next('gemini-native-sig-');
  memory.issued.set(`gemini-native:${issued}`, true);
  return issued;
}

/** Answers a native Gemini request as Gemini 3 would, or refuses it as Google does. */
export function serveGemini(path: string, body: Record<string, unknown>, memory: FakeMemory, fake: StatefulFake): FakeAnswer {
  const contents = merged(list(body['contents']));
  const refused = check(contents, memory, fake);
  if (refused !== undefined) return refused;
  const step = stepOf(contents.filter((content) => content.role === 'model' && content.parts.some((part) => part['functionCall'] !== undefined)).length);
  const parts: Array<Record<string, unknown>> = [];
  if (field(field(body, 'generationConfig'), 'thinkingConfig')?.['includeThoughts'] === true) parts.push({ text: `Thinking at step ${step}.`, thought: true });
  const calls = step === 0 ? ['a', 'b'] : step === 1 ? ['c'] : [];
  calls.forEach((q, index) => {
    const { name, input } = callOf(memory, q);
    const part: Record<string, unknown> = { functionCall: { name, args: input } };
    if (index === 0) part['thoughtSignature'] = signature(memory);
    parts.push(part);
  });
  if (step === 2) parts.push({ text: 'done', thoughtSignature: signature(memory) });
  const usageMetadata = { promptTokenCount: Math.ceil(JSON.stringify(contents).length / 4), candidatesTokenCount: 10, thoughtsTokenCount: 5, totalTokenCount: Math.ceil(JSON.stringify(contents).length / 4) + 15 };
  const envelope = { modelVersion: 'gemini-3-pro-preview', responseId: memory.next('gemini-response-') };
  if (!path.includes(':streamGenerateContent')) {
    return { status: 200, json: { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata, ...envelope } };
  }
  const events = parts.map((part) => frame({ candidates: [{ content: { role: 'model', parts: [part] }, index: 0 }], ...envelope }));
  events.push(frame({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata, ...envelope }));
  return { status: 200, sse: events.join('') };
}
