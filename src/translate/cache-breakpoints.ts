/**
 * Prompt-cache breakpoints llmux adds to a messages request it translated from a chat, Responses
 * or Gemini client (llmux.md section 11): those formats have no `cache_control`, and a messages
 * upstream caches nothing it is not told to. Three breakpoints, within the upstream's limit of
 * four: the last tool (the tools), the system prompt's last block (tools and system), and the last
 * block of the last user turn (everything so far, which the next turn of the conversation repeats
 * and reads back). Translation is deterministic (the same history gives the same prefix), so the
 * prefix a turn writes is the one the next turn reads. A prefix shorter than the model's minimum is
 * not cached by the upstream, and costs nothing.
 */
import type { CacheControl, MessagesContentBlock, MessagesRequest } from '../formats/wire.ts';

/** The most breakpoints a messages upstream takes. */
export const MAX_CACHE_BREAKPOINTS = 4;

const EPHEMERAL: CacheControl = { type: 'ephemeral' };

/** Block types that take `cache_control`: not thinking. */
const CACHEABLE: ReadonlySet<string> = new Set(['text', 'image', 'document', 'tool_use', 'tool_result', 'search_result']);

function counted(body: MessagesRequest): number {
  let count = 0;
  const blocks: unknown[] = [...(body.tools ?? []), ...(Array.isArray(body.system) ? body.system : [])];
  for (const message of body.messages) if (Array.isArray(message.content)) blocks.push(...message.content);
  for (const block of blocks) if ((block as { cache_control?: unknown }).cache_control !== undefined) count += 1;
  return count;
}

/** Adds the breakpoints to `body` (its own objects, made by the translation), never more than four in all. */
export function addCacheBreakpoints(body: MessagesRequest): void {
  let room = MAX_CACHE_BREAKPOINTS - counted(body);
  const lastTool = body.tools?.[body.tools.length - 1];
  if (room > 0 && lastTool !== undefined && lastTool.cache_control === undefined) {
    lastTool.cache_control = EPHEMERAL;
    room -= 1;
  }
  if (room > 0 && typeof body.system === 'string' && body.system !== '') {
    body.system = [{ type: 'text', text: body.system, cache_control: EPHEMERAL }];
    room -= 1;
  }
  const lastUser = [...body.messages].reverse().find((message) => message.role === 'user');
  if (room <= 0 || lastUser === undefined) return;
  if (typeof lastUser.content === 'string') {
    if (lastUser.content !== '') lastUser.content = [{ type: 'text', text: lastUser.content, cache_control: EPHEMERAL }];
    return;
  }
  const block = [...lastUser.content].reverse().find((candidate) => CACHEABLE.has(candidate.type)) as (MessagesContentBlock & { cache_control?: CacheControl }) | undefined;
  if (block !== undefined && block.cache_control === undefined) block.cache_control = EPHEMERAL;
}
