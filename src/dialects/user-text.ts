/**
 * The text of a request's last user turn, as the echo model answers it: shared by the formats
 * whose turns are `{role, content}` items (chat and messages `messages`, Responses `input`).
 */

/** What the echo model answers when a request has no user text. */
export const NO_USER_TEXT = '(no text to echo)';

/**
 * The last `role: "user"` item's text in `turns` (a list of any shape), at most `limit` characters;
 * {@link NO_USER_TEXT} when there is none.
 */
export function lastUserText(turns: unknown, limit: number): string {
  if (!Array.isArray(turns)) return NO_USER_TEXT;
  for (let i = turns.length - 1; i >= 0; i--) {
    const m: unknown = turns[i];
    if (m === null || typeof m !== 'object' || (m as Record<string, unknown>)['role'] !== 'user') continue;
    const text = textOf((m as Record<string, unknown>)['content'], limit);
    if (text !== '') return text;
  }
  return NO_USER_TEXT;
}

/** Text parts of any format (`text`, the Responses `input_text`) joined by newlines, stopping once `limit` characters are gathered. */
function textOf(content: unknown, limit: number): string {
  if (typeof content === 'string') return content.slice(0, limit);
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  let length = 0;
  for (const part of content as unknown[]) {
    if (length >= limit) break;
    if (part === null || typeof part !== 'object') continue;
    const { type, text } = part as Record<string, unknown>;
    // Empty parts add nothing, not even a newline: a body of many empty parts stays an empty text.
    if ((type !== 'text' && type !== 'input_text') || typeof text !== 'string' || text === '') continue;
    const piece = text.slice(0, limit - length);
    parts.push(piece);
    length += piece.length + 1;
  }
  return parts.join('\n').slice(0, limit);
}
