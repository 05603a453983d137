/**
 * The one choice of a chat-completions answer or chunk that another format has room for: the
 * messages and Responses translators read index 0 and drop the others (translation.md).
 */
import { isRecord } from '../common/json.ts';

/** The choice with index 0 (a missing index counts as 0). */
export function firstChoice(choices: unknown): Record<string, unknown> | undefined {
  if (!Array.isArray(choices)) return undefined;
  for (const choice of choices) if (isRecord(choice) && (choice['index'] ?? 0) === 0) return choice;
  return undefined;
}
