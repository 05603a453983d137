/**
 * The chat-completions personalities of ./fake-stateful.ts, each with its provider's rule and error:
 *
 * - `gemini`, Google's OpenAI-compatible surface for Gemini 3: the first call of each step carries
 *   `extra_content.google.thought_signature` (the other calls of a parallel step none). In the
 *   current turn (the messages after the last user message) the first call of every step must
 *   carry one it issued, or Google's placeholder `skip_thought_signature_validator`: none is
 *   "Function call is missing a thought_signature in functionCall parts…", a signature it did not
 *   issue "Corrupted thought signature.". Errors come as Google's layer sends them: a JSON array.
 * - `deepseek`, thinking mode: `reasoning_content` before every answer; every assistant message with
 *   tool calls must carry `reasoning_content` back, or "The `reasoning_content` in the thinking mode
 *   must be passed back to the API." (it cannot tell its own text from another's, and does not try).
 * - `openrouter`: `reasoning` text and `reasoning_details` (a signed `reasoning.text`, streamed in
 *   pieces merged by `index`, and a `reasoning.encrypted` entry); an assistant message with the calls
 *   it issued must carry those details back, all of them as issued, or OpenRouter's error.
 *
 * Answers: two parallel calls, then one, then `done`; streamed as Google, DeepSeek and OpenRouter
 * stream (Google sends each call whole in one chunk).
 */
import { isDeepStrictEqual } from 'node:util';
import { type FakeAnswer, type FakeMemory, type Personality, type StatefulFake, SKIP_SIGNATURE, callOf, field, frame, halves, list, refuse, stepOf } from './fake-stateful.ts';
const MISSING = 'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance.';

interface Call { id: string; name: string; arguments: string; extra_content?: unknown }
interface ChatAnswer { reasoning?: string; details?: Array<Record<string, unknown>>; calls: Call[]; text?: string }

function signature(call: Record<string, unknown>): unknown {
  return field(field(call, 'extra_content'), 'google')?.['thought_signature'];
}

function geminiError(fake: StatefulFake, message: string): FakeAnswer {
  return refuse(fake, 400, message, [{ error: { code: 400, message, status: 'INVALID_ARGUMENT' } }]);
}

function checkGemini(messages: Array<Record<string, unknown>>, memory: FakeMemory, fake: StatefulFake): FakeAnswer | undefined {
  let lastUser = -1;
  messages.forEach((message, index) => {
    if (message['role'] === 'user') lastUser = index;
  });
  for (const [index, message] of messages.entries()) {
    if (message['role'] !== 'assistant') continue;
    for (const [k, call] of list(message['tool_calls']).entries()) {
      const sig = signature(call);
      if (sig !== undefined && sig !== SKIP_SIGNATURE && !memory.issued.has(`gemini:${String(sig)}`)) return geminiError(fake, 'Corrupted thought signature.');
      const name = String(field(call, 'function')?.['name']);
      if (index > lastUser && k === 0 && sig === undefined) return geminiError(fake, `${MISSING} Additional data, function call \`default_api:${name}\` , position ${index + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`);
    }
  }
  return undefined;
}

function checkDeepseek(messages: Array<Record<string, unknown>>, fake: StatefulFake): FakeAnswer | undefined {
  for (const message of messages) {
    if (message['role'] !== 'assistant' || list(message['tool_calls']).length === 0 || typeof message['reasoning_content'] === 'string') continue;
    const text = 'The `reasoning_content` in the thinking mode must be passed back to the API.';
    return refuse(fake, 400, text, { error: { message: text, type: 'invalid_request_error', param: null, code: 'invalid_request_error' } });
  }
  return undefined;
}

function checkOpenrouter(messages: Array<Record<string, unknown>>, memory: FakeMemory, fake: StatefulFake): FakeAnswer | undefined {
  for (const message of messages) {
    const first = list(message['tool_calls'])[0];
    const issued = first === undefined ? undefined : memory.issued.get(`openrouter:${String(first['id'])}`);
    if (message['role'] !== 'assistant' || issued === undefined || isDeepStrictEqual(message['reasoning_details'], issued)) continue;
    const raw = 'Gemini models require OpenRouter reasoning details to be preserved in each request. Please refer to our docs: https://openrouter.ai/docs/guides/best-practices/reasoning-tokens#preserving-reasoning-blocks.';
    return refuse(fake, 400, raw, { error: { message: 'Provider returned error', code: 400, metadata: { raw, provider_name: 'Google AI Studio' } } });
  }
  return undefined;
}

function answerOf(personality: Personality, step: 0 | 1 | 2, memory: FakeMemory): ChatAnswer {
  const call = (q: string): Call => {
    const { name, input } = callOf(memory, q);
    return { id: memory.next(`call_${q}`), name, arguments: JSON.stringify(input) };
  };
  const calls: Call[] = step === 0 ? [call('a'), call('b')] : step === 1 ? [call('c')] : [];
  const answer: ChatAnswer = { calls };
  if (step === 2) answer.text = 'done';
  const first = calls[0];
  if (personality === 'gemini' && first !== undefined) {
    const sig = memory.next('gemini-sig-');
    memory.issued.set(`gemini:${sig}`, first.id);
    first.extra_content = { google: { thought_signature: sig } };
  }
  if (personality === 'deepseek' || personality === 'openrouter') answer.reasoning = `Reasoning at step ${step}: ${memory.next('r')}.`;
  if (personality === 'openrouter') {
    answer.details = [
      { type: 'reasoning.text', text: answer.reasoning, signature: memory.sign(answer.reasoning ?? ''), format: 'anthropic-claude-v1', index: 0 },
      { type: 'reasoning.encrypted', data: memory.next('encrypted-'), format: 'anthropic-claude-v1', index: 1 },
    ];
    if (first !== undefined) memory.issued.set(`openrouter:${first.id}`, answer.details);
  }
  return answer;
}

function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return frame({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: 'fake', choices: [{ index: 0, delta, finish_reason: finish }] });
}

function streamOf(personality: Personality, answer: ChatAnswer, usage: Record<string, unknown>): string {
  const out = [chunk({ role: 'assistant', content: '' })];
  const reasoningKey = personality === 'openrouter' ? 'reasoning' : 'reasoning_content';
  if (answer.reasoning !== undefined) {
    const [a, b] = halves(answer.reasoning);
    const text = answer.details?.[0];
    out.push(chunk({ [reasoningKey]: a, ...(text === undefined ? {} : { reasoning_details: [{ type: text['type'], text: a, format: text['format'], index: 0 }] }) }));
    out.push(chunk({ [reasoningKey]: b, ...(text === undefined ? {} : { reasoning_details: [{ type: text['type'], text: b, index: 0 }] }) }));
    if (answer.details !== undefined) out.push(chunk({ reasoning_details: [{ type: 'reasoning.text', signature: text?.['signature'], index: 0 }, answer.details[1]] }));
  }
  answer.calls.forEach((call, index) => {
    const start: Record<string, unknown> = { index, id: call.id, type: 'function', function: { name: call.name, arguments: personality === 'gemini' ? call.arguments : '' } };
    if (call.extra_content !== undefined) start['extra_content'] = call.extra_content;
    out.push(chunk({ tool_calls: [start] }));
    if (personality !== 'gemini') for (const piece of halves(call.arguments)) out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  if (answer.text !== undefined) out.push(chunk({ content: answer.text }));
  out.push(chunk({}, answer.calls.length > 0 ? 'tool_calls' : 'stop'));
  out.push(frame({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: 'fake', choices: [], usage }));
  out.push('data: [DONE]\n\n');
  return out.join('');
}

function wholeOf(personality: Personality, answer: ChatAnswer, usage: Record<string, unknown>): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: answer.text ?? null };
  if (answer.reasoning !== undefined) message[personality === 'openrouter' ? 'reasoning' : 'reasoning_content'] = answer.reasoning;
  if (answer.details !== undefined) message['reasoning_details'] = answer.details;
  if (answer.calls.length > 0) {
    message['tool_calls'] = answer.calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments }, ...(call.extra_content === undefined ? {} : { extra_content: call.extra_content }) }));
  }
  return { id: 'chatcmpl-fake', object: 'chat.completion', created: 1, model: 'fake', choices: [{ index: 0, message, finish_reason: answer.calls.length > 0 ? 'tool_calls' : 'stop' }], usage };
}

/** Answers a chat request as the provider of `personality` would, or refuses it as it does. */
export function serveChat(personality: Personality, body: Record<string, unknown>, memory: FakeMemory, fake: StatefulFake): FakeAnswer {
  const messages = list(body['messages']);
  const refused = personality === 'gemini' ? checkGemini(messages, memory, fake)
    : personality === 'deepseek' ? checkDeepseek(messages, fake)
    : checkOpenrouter(messages, memory, fake);
  if (refused !== undefined) return refused;
  const turns = messages.filter((message) => message['role'] === 'assistant' && list(message['tool_calls']).length > 0).length;
  const answer = answerOf(personality, stepOf(turns), memory);
  const usage = { prompt_tokens: Math.ceil(JSON.stringify(messages).length / 4), completion_tokens: 20, total_tokens: Math.ceil(JSON.stringify(messages).length / 4) + 20 };
  if (body['stream'] === true) return { status: 200, sse: streamOf(personality, answer, usage) };
  return { status: 200, json: wholeOf(personality, answer, usage) };
}
