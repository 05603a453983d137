/**
 * Building the turns of a messages request from another format's history (chat messages,
 * Responses input items): consecutive same-role blocks merge into one turn, and the finished list
 * is one the messages API takes — no trailing whitespace or empty last assistant turn, and a user
 * turn first (translation.md).
 */
import type { MessagesContentBlock, MessagesMessage } from '../formats/wire.ts';

export interface Turn<B> { role: 'user' | 'assistant'; blocks: B[] }

/** What opens a conversation that would otherwise start with the assistant. */
const FIRST_TURN_FILLER = '.';

/** Adds blocks to the last turn when it has this role, else as a new turn; no blocks, no turn. */
export function addTurn<B>(turns: Array<Turn<B>>, role: Turn<B>['role'], blocks: B[]): void {
  // An empty turn carries nothing, and the messages API refuses one anywhere but at the end.
  if (blocks.length === 0) return;
  const last = turns[turns.length - 1];
  if (last !== undefined && last.role === role) last.blocks.push(...blocks);
  else turns.push({ role, blocks });
}

/** Blocks of `first` kinds moved to the front of the turn, the order within each group kept. */
export function frontFirst<B>(turn: Turn<B>, isFirst: (block: B) => boolean): void {
  const first = turn.blocks.filter(isFirst);
  if (first.length > 0 && first.length < turn.blocks.length) turn.blocks = [...first, ...turn.blocks.filter((block) => !isFirst(block))];
}

type TextBlock = { type: 'text'; text: string };

function isText(block: { type: string }): block is TextBlock {
  return block.type === 'text';
}

/**
 * The last assistant turn's closing text without trailing whitespace (the API refuses it) and
 * dropped when that empties it; a user turn first.
 */
export function closeTurns<B extends { type: string }>(turns: Array<Turn<B | TextBlock>>): void {
  const last = turns[turns.length - 1];
  if (last?.role === 'assistant') {
    const final = last.blocks[last.blocks.length - 1];
    if (final !== undefined && isText(final)) {
      final.text = final.text.trimEnd();
      if (final.text === '') last.blocks.pop();
    }
    if (last.blocks.length === 0) turns.pop();
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', blocks: [{ type: 'text', text: FIRST_TURN_FILLER }] });
}

/** A finished turn as a messages message: a lone text block as string content, else the blocks. */
export function turnToMessage(turn: Turn<MessagesContentBlock>): MessagesMessage {
  const only = turn.blocks.length === 1 ? turn.blocks[0] : undefined;
  if (only?.type === 'text') return { role: turn.role, content: only.text };
  return { role: turn.role, content: turn.blocks };
}

/**
 * Whether the turns end answering tool calls of an assistant turn that does not start with
 * thinking: a messages upstream with thinking on refuses such a request (translation.md).
 */
export function continuesUnsignedToolLoop(turns: Array<Turn<MessagesContentBlock>>): boolean {
  const last = turns[turns.length - 1];
  if (last?.role !== 'user' || !last.blocks.some((block) => block.type === 'tool_result')) return false;
  const first = turns[turns.length - 2]?.blocks[0];
  return first?.type !== 'thinking' && first?.type !== 'redacted_thinking';
}
