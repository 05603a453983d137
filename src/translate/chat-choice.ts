/**
 * Reading a chat-completions answer's choice: the one choice another format has room for (the
 * messages and Responses formats carry one answer: index 0 is read, the others dropped,
 * translation.md), and the text of chat content, in requests and answers alike.
 */
import { isRecord } from '../common/json.ts';

const PARAGRAPH = '\n\n';

/** The choice with index 0 (a missing index counts as 0). */
export function firstChoice(choices: unknown): Record<string, unknown> | undefined {
  if (!Array.isArray(choices)) return undefined;
  for (const choice of choices) if (isRecord(choice) && (choice['index'] ?? 0) === 0) return choice;
  return undefined;
}

/**
 * The text of chat content: a string, or parts (some compatible servers answer with parts too) of
 * which `text` and `refusal` ones carry text, separately written pieces joined with a blank line.
 */
export function chatContentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (typeof part['text'] === 'string' && part['text'] !== '') texts.push(part['text']);
    else if (part['type'] === 'refusal' && typeof part['refusal'] === 'string' && part['refusal'] !== '') texts.push(part['refusal']);
  }
  return texts.join(PARAGRAPH);
}
