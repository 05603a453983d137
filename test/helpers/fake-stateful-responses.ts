/**
 * The OpenAI Responses personality of ./fake-stateful.ts: a reasoning item before its calls, and a
 * later request that gives back a call it issued must give back that call's reasoning item before
 * it, by its `encrypted_content` (a stateless client asks for it with
 * `include: ["reasoning.encrypted_content"]`) or by its id when the answer was stored. Otherwise
 * OpenAI's "Item 'fc_…' of type 'function_call' was provided without its required 'reasoning'
 * item: 'rs_…'."
 *
 * Answers: two parallel calls, then one, then `done`, each after a reasoning item.
 */
import { type FakeAnswer, type FakeMemory, type StatefulFake, callOf, frame, list, refuse, stepOf } from './fake-stateful.ts';

interface Issued { reasoningId: string; encrypted: string; stored: boolean }

function check(input: Array<Record<string, unknown>>, memory: FakeMemory, fake: StatefulFake): FakeAnswer | undefined {
  for (const [index, item] of input.entries()) {
    if (item['type'] !== 'function_call') continue;
    const issued = memory.issued.get(`responses:${String(item['call_id'])}`) as Issued | undefined;
    if (issued === undefined) continue;
    const before = input.slice(0, index).filter((candidate) => candidate['type'] === 'reasoning');
    const found = before.some((reasoning) => reasoning['encrypted_content'] === issued.encrypted || (issued.stored && reasoning['id'] === issued.reasoningId));
    if (found) continue;
    const message = `Item '${String(item['id'] ?? item['call_id'])}' of type 'function_call' was provided without its required 'reasoning' item: '${issued.reasoningId}'.`;
    return refuse(fake, 400, message, { error: { message, type: 'invalid_request_error', param: 'input', code: null } });
  }
  return undefined;
}

function groups(input: Array<Record<string, unknown>>): number {
  let count = 0;
  let previous: string | undefined;
  for (const item of input) {
    const type = String(item['type'] ?? 'message');
    if (type === 'reasoning') continue;
    if (type === 'function_call' && previous !== 'function_call') count += 1;
    previous = type;
  }
  return count;
}

/** Answers a Responses request as OpenAI would, or refuses it as OpenAI does. */
export function serveResponses(body: Record<string, unknown>, memory: FakeMemory, fake: StatefulFake): FakeAnswer {
  const input = typeof body['input'] === 'string' ? [] : list(body['input']);
  const refused = check(input, memory, fake);
  if (refused !== undefined) return refused;
  const step = stepOf(groups(input));
  const include = Array.isArray(body['include']) && body['include'].includes('reasoning.encrypted_content');
  const stored = body['store'] !== false;
  const reasoningId = memory.next('rs_');
  const encrypted = memory.next('gAAAA-encrypted-');
  const reasoning: Record<string, unknown> = { type: 'reasoning', id: reasoningId, summary: [{ type: 'summary_text', text: `Reasoning at step ${step}.` }] };
  if (include) reasoning['encrypted_content'] = encrypted;
  const output: Array<Record<string, unknown>> = [reasoning];
  const calls = step === 0 ? ['a', 'b'] : step === 1 ? ['c'] : [];
  for (const q of calls) {
    const callId = memory.next('call_');
    memory.issued.set(`responses:${callId}`, { reasoningId, encrypted, stored } satisfies Issued);
    const { name, input } = callOf(memory, q);
    output.push({ type: 'function_call', id: memory.next('fc_'), call_id: callId, name, arguments: JSON.stringify(input), status: 'completed' });
  }
  if (step === 2) output.push({ type: 'message', id: memory.next('msg_'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done', annotations: [] }] });
  const response = {
    id: memory.next('resp_'), object: 'response', created_at: 1, status: 'completed', model: String(body['model']), output,
    usage: { input_tokens: 20, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 30 },
    error: null, incomplete_details: null, parallel_tool_calls: true, tools: body['tools'] ?? [], store: stored,
  };
  if (body['stream'] !== true) return { status: 200, json: response };
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>): string => frame({ type, ...data, sequence_number: sequence++ }, type);
  const out = [event('response.created', { response: { ...response, status: 'in_progress', output: [] } }), event('response.in_progress', { response: { ...response, status: 'in_progress', output: [] } })];
  output.forEach((item, index) => {
    if (item['type'] === 'function_call') {
      out.push(event('response.output_item.added', { output_index: index, item: { ...item, arguments: '', status: 'in_progress' } }));
      out.push(event('response.function_call_arguments.delta', { item_id: item['id'], output_index: index, delta: item['arguments'] }));
      out.push(event('response.function_call_arguments.done', { item_id: item['id'], output_index: index, arguments: item['arguments'] }));
    } else if (item['type'] === 'message') {
      out.push(event('response.output_item.added', { output_index: index, item: { ...item, content: [], status: 'in_progress' } }));
      const part = { type: 'output_text', text: '', annotations: [] };
      out.push(event('response.content_part.added', { item_id: item['id'], output_index: index, content_index: 0, part }));
      out.push(event('response.output_text.delta', { item_id: item['id'], output_index: index, content_index: 0, delta: 'done', logprobs: [] }));
      out.push(event('response.output_text.done', { item_id: item['id'], output_index: index, content_index: 0, text: 'done', logprobs: [] }));
      out.push(event('response.content_part.done', { item_id: item['id'], output_index: index, content_index: 0, part: { ...part, text: 'done' } }));
    } else {
      out.push(event('response.output_item.added', { output_index: index, item: { ...item, summary: [] } }));
    }
    out.push(event('response.output_item.done', { output_index: index, item }));
  });
  out.push(event('response.completed', { response }));
  return { status: 200, sse: out.join('') };
}
