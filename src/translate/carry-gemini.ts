/**
 * Carried state into a Gemini request (llmux.md section 11), on every path that builds one: a chat,
 * messages or Responses history translated (./chat-to-gemini.ts, ./messages-to-gemini.ts,
 * ./responses-to-gemini.ts), and a Gemini client's own contents passed through
 * (src/dialects/gemini.ts).
 *
 * - A Gemini thought signature goes on its call as the part's `thoughtSignature`: the call the
 *   state names, else the turn's first call without one (a thought part's signature, or a call's
 *   state that came in a reasoning item before it).
 * - A Gemini client's contents hold Google's own signatures (passed through as they are) and llmux
 *   seals (state a translated answer carried, ./gemini-encoder.ts): a seal goes back as the Gemini
 *   signature it holds when a Gemini upstream issued it; anything else is taken out, counted by the
 *   reader. A body with no seal is not touched.
 * - What is still missing where Gemini 3 checks it (the first call of each step of the current
 *   turn) gets Google's placeholder (./gemini-build.ts `signCurrentTurn`), counted by the reader.
 */
import type { GeminiContent, GeminiPart } from '../formats/gemini-types.ts';
import { isLlmuxSeal } from '../formats/responses.ts';
import { type CarriedItem, type CarryReader, PLACEHOLDER_FILLED, unbundled } from './carried.ts';
import { signCurrentTurn } from './gemini-build.ts';

/** Puts the Gemini thought signatures among `items` on a model turn's calls (see the file's notes). */
export function signCalls(parts: readonly GeminiPart[], items: readonly CarriedItem[]): void {
  for (const item of items.flatMap(unbundled)) {
    if (item.kind !== 'thought-signature') continue;
    const part = item.callId === undefined
      ? parts.find((candidate) => candidate.functionCall !== undefined && candidate.thoughtSignature === undefined)
      : parts.find((candidate) => candidate.functionCall?.id === item.callId);
    if (part !== undefined && part.thoughtSignature === undefined) part.thoughtSignature = item.signature;
  }
}

/** What a contents builder tells of each placeholder it puts (./gemini-build.ts): counted by `reader`, for the log. */
export function countPlaceholders(reader: CarryReader): () => void {
  return () => reader.filled(PLACEHOLDER_FILLED);
}

function holdsSeal(part: GeminiPart): boolean {
  return typeof part.thoughtSignature === 'string' && isLlmuxSeal(part.thoughtSignature);
}

/**
 * A Gemini client's contents on their way to a Gemini upstream: its seals opened and sorted, the
 * gaps they leave filled. The client's contents are never changed (a fallback builds its own body
 * from them): the model turns it touches are copies. Undefined when the contents hold no seal.
 */
export function carryGeminiContents(contents: readonly GeminiContent[], reader: CarryReader): GeminiContent[] | undefined {
  if (!contents.some((content) => Array.isArray(content.parts) && content.parts.some(holdsSeal))) return undefined;
  const copy = contents.map((content): GeminiContent => (content.role === 'model' && Array.isArray(content.parts) ? { ...content, parts: content.parts.map((part) => ({ ...part })) } : content));
  for (const content of copy) {
    if (content.role !== 'model' || !Array.isArray(content.parts)) continue;
    const restored: CarriedItem[] = [];
    for (const part of content.parts) {
      if (!holdsSeal(part)) continue;
      const sealed = part.thoughtSignature as string;
      delete part.thoughtSignature;
      const carried = reader.unseal(sealed);
      // A seal that holds nothing says only who answered: nothing to put back or strip.
      if (carried !== undefined && unbundled(carried.item).length > 0 && reader.accept(carried.issuer)) restored.push(carried.item);
    }
    signCalls(content.parts, restored);
  }
  signCurrentTurn(copy, countPlaceholders(reader));
  return copy;
}
