/**
 * The Anthropic personality of ./fake-stateful.ts: the messages API's rules about thinking and
 * prompt caching, with its own error texts.
 *
 * - With thinking on (`enabled` or `adaptive`), every `thinking` block must carry the signature
 *   this fake made for its text, and a `redacted_thinking` block data it issued: anything else is
 *   `messages.N.content.M: Invalid \`signature\` in \`thinking\` block`. A request continuing a tool
 *   loop (its last user turn holds tool results) must have that assistant turn start with one.
 * - At most four `cache_control` breakpoints (tools, system, messages). A prefix up to the last
 *   breakpoint seen before is reported as `cache_read_input_tokens`, a new one as
 *   `cache_creation_input_tokens` (tokens counted as characters / 4).
 * - Answers: thinking (when on) then two parallel `tool_use` blocks; then thinking, a redacted block
 *   and one call; then thinking and the text `done`.
 */
import { createHash } from 'node:crypto';
import { type FakeAnswer, type FakeMemory, type StatefulFake, callOf, field, frame, halves, list, refuse, stepOf } from './fake-stateful.ts';

const EXTENDED_THINKING = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';
/** A block the model made itself, as Anthropic's blocks say. */
const DIRECT = { type: 'direct' };

function invalid(fake: StatefulFake, message: string): FakeAnswer {
  return refuse(fake, 400, message, { type: 'error', error: { type: 'invalid_request_error', message }, request_id: 'req_fake' });
}

function tokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? '').length / 4);
}

/** The prefix up to the last cache breakpoint, as a digest and its tokens; undefined without one. */
function cachedPrefix(body: Record<string, unknown>): { key: string; tokens: number } | undefined {
  const parts: unknown[] = [];
  let upTo: unknown[] | undefined;
  const consider = (block: unknown, where: unknown): void => {
    parts.push(where);
    if (field(block, 'cache_control') !== undefined) upTo = [...parts];
  };
  for (const tool of list(body['tools'])) consider(tool, tool);
  for (const block of list(body['system'])) consider(block, block);
  for (const message of list(body['messages'])) {
    const content = message['content'];
    if (!Array.isArray(content)) {
      parts.push(message);
      continue;
    }
    for (const block of list(content)) consider(block, { role: message['role'], block });
  }
  if (upTo === undefined) return undefined;
  return { key: createHash('sha256').update(JSON.stringify(upTo)).digest('hex'), tokens: tokens(upTo) };
}

function breakpoints(body: Record<string, unknown>): number {
  let count = 0;
  const blocks = [...list(body['tools']), ...list(body['system']), ...list(body['messages']).flatMap((message) => list(message['content']))];
  for (const block of blocks) if (field(block, 'cache_control') !== undefined) count += 1;
  return count;
}

/** The refusal a request earns, if any. */
function check(body: Record<string, unknown>, memory: FakeMemory, fake: StatefulFake): FakeAnswer | undefined {
  const count = breakpoints(body);
  if (count > 4) return invalid(fake, `A maximum of 4 blocks with cache_control may be provided. Found ${count}.`);
  const thinking = field(body, 'thinking')?.['type'];
  if (thinking !== 'enabled' && thinking !== 'adaptive') return undefined;
  const messages = list(body['messages']);
  for (const [i, message] of messages.entries()) {
    if (message['role'] !== 'assistant') continue;
    for (const [j, block] of list(message['content']).entries()) {
      if (block['type'] === 'thinking' && (typeof block['signature'] !== 'string' || block['signature'] !== memory.sign(String(block['thinking'])))) {
        return invalid(fake, `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
      }
      if (block['type'] === 'redacted_thinking' && !memory.issued.has(`redacted:${String(block['data'])}`)) {
        return invalid(fake, `messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`);
      }
    }
  }
  const last = messages[messages.length - 1];
  const continued = messages[messages.length - 2];
  if (last?.['role'] === 'user' && list(last['content']).some((block) => block['type'] === 'tool_result') && continued?.['role'] === 'assistant') {
    const first = list(continued['content'])[0];
    const type = typeof continued['content'] === 'string' ? 'text' : String(first?.['type']);
    if (type !== 'thinking' && type !== 'redacted_thinking') {
      return invalid(fake, `messages.${messages.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at ${EXTENDED_THINKING}`);
    }
  }
  return undefined;
}

type Block = Record<string, unknown>;

function answerBlocks(step: 0 | 1 | 2, thinking: boolean, memory: FakeMemory): Block[] {
  const blocks: Block[] = [];
  if (thinking) {
    const text = `Thinking at step ${step}: ${memory.next('t')}.`;
    blocks.push({ type: 'thinking', thinking: text, signature: memory.sign(text) });
  }
  if (step === 1 && thinking) {
    const data = memory.next('redacted-');
    memory.issued.set(`redacted:${data}`, true);
    blocks.push({ type: 'redacted_thinking', data });
  }
  if (step === 0) {
    blocks.push({ type: 'tool_use', id: memory.next('toolu_a'), ...callOf(memory, 'a'), caller: DIRECT });
    blocks.push({ type: 'tool_use', id: memory.next('toolu_b'), ...callOf(memory, 'b'), caller: DIRECT });
  } else if (step === 1) {
    blocks.push({ type: 'tool_use', id: memory.next('toolu_c'), ...callOf(memory, 'c'), caller: DIRECT });
  } else {
    blocks.push({ type: 'text', text: 'done' });
  }
  return blocks;
}

function streamOf(message: Record<string, unknown>, blocks: Block[], usage: Record<string, number>): string {
  const out = [frame({ type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }, 'message_start')];
  blocks.forEach((block, index) => {
    const start = block['type'] === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : block['type'] === 'text' ? { type: 'text', text: '' } : block['type'] === 'tool_use' ? { ...block, input: {} } : block;
    out.push(frame({ type: 'content_block_start', index, content_block: start }, 'content_block_start'));
    if (block['type'] === 'thinking') {
      for (const piece of halves(String(block['thinking']))) out.push(frame({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } }, 'content_block_delta'));
      out.push(frame({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block['signature'] } }, 'content_block_delta'));
    } else if (block['type'] === 'text') {
      out.push(frame({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: block['text'] } }, 'content_block_delta'));
    } else if (block['type'] === 'tool_use') {
      for (const piece of halves(JSON.stringify(block['input']))) out.push(frame({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }, 'content_block_delta'));
    }
    out.push(frame({ type: 'content_block_stop', index }, 'content_block_stop'));
  });
  out.push(frame({ type: 'message_delta', delta: { stop_reason: message['stop_reason'], stop_sequence: null }, usage: { output_tokens: usage['output_tokens'] } }, 'message_delta'));
  out.push(frame({ type: 'message_stop' }, 'message_stop'));
  return out.join('');
}

/** Answers a messages request as Anthropic would, or refuses it as Anthropic does. */
export function serveMessages(body: Record<string, unknown>, memory: FakeMemory, fake: StatefulFake): FakeAnswer {
  const refused = check(body, memory, fake);
  if (refused !== undefined) return refused;
  const turns = list(body['messages']).filter((message) => message['role'] === 'assistant' && list(message['content']).some((block) => block['type'] === 'tool_use')).length;
  const step = stepOf(turns);
  const type = field(body, 'thinking')?.['type'];
  const blocks = answerBlocks(step, type === 'enabled' || type === 'adaptive', memory);
  const prefix = cachedPrefix(body);
  const total = tokens([body['tools'], body['system'], body['messages']]);
  const usage: Record<string, number> = { input_tokens: total, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (prefix !== undefined) {
    const hit = memory.cached.has(prefix.key);
    memory.cached.add(prefix.key);
    usage['input_tokens'] = Math.max(1, total - prefix.tokens);
    usage[hit ? 'cache_read_input_tokens' : 'cache_creation_input_tokens'] = prefix.tokens;
  }
  const message = { id: memory.next('msg_'), type: 'message', role: 'assistant', model: String(body['model']), stop_reason: step === 2 ? 'end_turn' : 'tool_use', stop_sequence: null };
  if (body['stream'] === true) return { status: 200, sse: streamOf(message, blocks, usage) };
  return { status: 200, json: { ...message, content: blocks, usage } };
}
