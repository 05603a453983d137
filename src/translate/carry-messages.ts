/**
 * A messages client's own history on its way to a messages upstream, passed through (llmux.md
 * section 11). A thinking block whose `signature` is a llmux seal came from another upstream
 * (./messages-encoder.ts sealed it): it goes back as the block the seal holds when an upstream of
 * the target's family issued it, and is taken out otherwise (another family's state, another key's
 * seal, one that does not open): a messages upstream refuses a signature it did not make
 * ("Invalid `signature` in `thinking` block"). Anthropic's own signatures are not llmux's and go
 * on byte for byte.
 *
 * A messages upstream with thinking on also refuses a request that continues a tool loop whose
 * assistant turn does not start with a signed thinking block: when taking blocks out leaves that
 * turn without one, thinking is turned off for the request, and the log says so.
 */
import type { MessagesContentBlock, MessagesMessage, MessagesRequest } from '../formats/wire.ts';
import { isLlmuxSeal } from '../formats/responses.ts';
import { asRecord, records } from '../common/json.ts';
import type { CarryReader } from './carried.ts';

/** Whether any thinking block of the history claims a llmux seal for its signature. */
function hasSeals(messages: readonly MessagesMessage[]): boolean {
  return messages.some((message) => message.role === 'assistant' && Array.isArray(message.content) && message.content.some(isSealedThinking));
}

function isSealedThinking(block: MessagesContentBlock): boolean {
  const signature = (block as { signature?: unknown }).signature;
  return block.type === 'thinking' && typeof signature === 'string' && isLlmuxSeal(signature);
}

/** The block a sealed thinking block goes back as, or undefined when it is taken out. */
function unsealed(block: MessagesContentBlock, reader: CarryReader): MessagesContentBlock | undefined {
  const carried = reader.unseal((block as { signature: string }).signature);
  if (carried === undefined || !reader.accept(carried.issuer)) return undefined;
  const { item } = carried;
  if (item.kind === 'thinking') return { type: 'thinking', thinking: item.thinking, signature: item.signature };
  if (item.kind === 'redacted-thinking') return { type: 'redacted_thinking', data: item.data };
  return undefined;
}

/**
 * The body with its sealed thinking blocks put back or taken out (and thinking turned off when
 * that leaves the continued turn unsigned); undefined when it has none, so the client's bytes can go
 * on as they are. `mayHaveSeals` false skips the look (the client's bytes hold no `llmux.v`).
 */
export function carryMessagesHistory(body: MessagesRequest, reader: CarryReader, warn: (message: string) => void, mayHaveSeals = true): MessagesRequest | undefined {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  if (!mayHaveSeals || !hasSeals(messages)) return undefined;
  let stripped = false;
  const carried = messages.map((message): MessagesMessage => {
    if (message.role !== 'assistant' || !Array.isArray(message.content) || !message.content.some(isSealedThinking)) return message;
    const content: MessagesContentBlock[] = [];
    for (const block of message.content) {
      if (!isSealedThinking(block)) {
        content.push(block);
        continue;
      }
      const back = unsealed(block, reader);
      if (back === undefined) stripped = true;
      else content.push(back);
    }
    // An assistant turn left empty says nothing: a text block keeps its place in the alternation.
    return { role: 'assistant', content: content.length > 0 ? content : [{ type: 'text', text: '.' }] };
  });
  const out: MessagesRequest = { ...body, messages: carried };
  if (stripped && thinkingOn(body) && continuesUnsignedTurn(carried)) {
    delete out.thinking;
    warn('thinking turned off for this request: the upstream wants the assistant turn it continues to start with its own signed thinking, and what that turn carried was issued elsewhere');
  }
  return out;
}

function thinkingOn(body: MessagesRequest): boolean {
  const type = asRecord(body.thinking)?.['type'];
  return type === 'enabled' || type === 'adaptive';
}

/** Whether the history ends answering tool calls of an assistant turn that does not start with thinking. */
function continuesUnsignedTurn(messages: readonly MessagesMessage[]): boolean {
  const last = messages[messages.length - 1];
  if (last?.role !== 'user' || !records(last.content).some((block) => block['type'] === 'tool_result')) return false;
  const turn = messages[messages.length - 2];
  const first = turn?.role === 'assistant' ? records(turn.content)[0] : undefined;
  return first?.['type'] !== 'thinking' && first?.['type'] !== 'redacted_thinking';
}
