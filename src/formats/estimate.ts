/**
 * Token estimates without a tokenizer: about four characters a token, the ratio the providers
 * themselves quote for English text. Used for `count_tokens`, for the input a request reserves
 * against tokens/min and checks against the model's context length, and for the echo model's usage.
 *
 * The count is the size of the compact JSON of what a model reads (`system`, `messages`, `tools`):
 * every string and key, the quotes, commas and brackets, and every number, so it is bounded below
 * by the body's size whatever its shape. Empty text parts, long keys, fields no model reads and
 * deep nesting all cost what they weigh; nothing stops counting early, since a walk that stopped
 * after a budget of nodes let a body of empty parts followed by megabytes of text cost 4 tokens.
 * Visiting every node costs about what `JSON.parse` already spent building them.
 *
 * Binary payloads are the exception, since providers price them by pixels or pages, not bytes: an
 * image costs a flat {@link IMAGE_TOKENS}; base64 data (`source: {type: "base64", data}`, a PDF
 * for instance) and `data:` URLs in `url` / `file_data` cost one token per
 * {@link BASE64_CHARS_PER_TOKEN} characters. None of these reach the echo model's answer.
 */

import { textUnits } from '../common/json-lazy.ts';
import type { LazyTexts } from '../common/json-lazy.ts';

const CHARS_PER_TOKEN = 4;
/** Anthropic prices a ~1000x1000 image at about (w*h)/750 = 1,334 tokens; we don't decode images. */
const IMAGE_TOKENS = 1_600;
/**
 * A page of PDF costs 1,500 to 3,000 tokens and weighs from about 20 KB (text) to a few hundred
 * (scans): one token per 32 base64 characters sits between, and errs high for text documents.
 */
const BASE64_CHARS_PER_TOKEN = 32;

/** Object types that carry a picture or a sound, not text: one flat price each. */
const FLAT_PRICED_TYPES: ReadonlySet<unknown> = new Set(['image', 'image_url', 'input_image', 'input_audio']);
/** Keys whose `data:` URL values are binary payloads. */
const URL_KEYS: ReadonlySet<string> = new Set(['url', 'file_data']);

interface Tally {
  /** Characters of compact JSON. */
  chars: number;
  flatPriced: number;
  binaryChars: number;
}

/**
 * Estimated input tokens of what a model reads of a request: `parts` are the body's members that
 * hold it, each format naming its own (src/dialects/: chat `messages` and `tools`, messages
 * `system` too, Responses `instructions`, `input` and `tools`). Never less than a quarter of their
 * compact JSON size, binary payloads aside (see the file header). Undefined parts count nothing.
 * `texts`: the texts of a body read lazily, which its references name (src/common/json-lazy.ts):
 * a reference counts as long as its text.
 */
export function estimateTokens(parts: readonly unknown[], texts?: LazyTexts): number {
  const tally: Tally = { chars: 0, flatPriced: 0, binaryChars: 0 };
  for (const part of parts) {
    if (part === undefined) continue;
    if (Array.isArray(part) && Object.isFrozen(part)) addItemsSize(part, tally, texts);
    else addJsonSize(part, tally, texts);
  }
  return Math.ceil(tally.chars / CHARS_PER_TOKEN) + tally.flatPriced * IMAGE_TOKENS + Math.ceil(tally.binaryChars / BASE64_CHARS_PER_TOKEN);
}

/**
 * Estimated input tokens of a chat, messages or Responses body, whichever it is: its `system`,
 * `instructions`, `messages`, `input` and `tools`, as the estimate counted before each format named
 * its own parts. The three dialects' estimates give the same numbers for their bodies.
 */
export function estimateRequestTokens(body: { messages?: unknown; system?: unknown; tools?: unknown; input?: unknown; instructions?: unknown }): number {
  return estimateTokens([body.system, body.instructions, body.messages, body.input, body.tools]);
}

/** An array's brackets and the commas between its items, as compact JSON has them (an empty one counts 2). */
function arrayChars(items: number): number {
  return 1 + Math.max(1, items);
}

/**
 * What each frozen item counted, by item. A body read again from a key's last turn
 * (src/common/json-recall.ts) shares the items that did not change, frozen, and their references
 * keep their texts' lengths: an item counts what it counted before.
 */
const itemTallies = new WeakMap<object, Tally>();

/** {@link addJsonSize} of a frozen array, item by item, each frozen item's tally kept. */
function addItemsSize(items: readonly unknown[], tally: Tally, texts: LazyTexts | undefined): void {
  tally.chars += arrayChars(items.length);
  for (const item of items) {
    if (typeof item !== 'object' || item === null || !Object.isFrozen(item)) {
      addJsonSize(item, tally, texts);
      continue;
    }
    let own = itemTallies.get(item);
    if (own === undefined) {
      own = { chars: 0, flatPriced: 0, binaryChars: 0 };
      addJsonSize(item, own, texts);
      itemTallies.set(item, own);
    }
    tally.chars += own.chars;
    tally.flatPriced += own.flatPriced;
    tally.binaryChars += own.binaryChars;
  }
}

/**
 * Adds the compact JSON size of `root` to the tally, with an explicit stack: a parsed body may be
 * nested as deeply as the body reader allows, and this must not depend on the call stack.
 */
function addJsonSize(root: unknown, tally: Tally, texts: LazyTexts | undefined): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      tally.chars += textUnits(value, texts) + 2;
    } else if (typeof value === 'number') {
      tally.chars += String(value).length;
    } else if (typeof value === 'boolean') {
      tally.chars += value ? 4 : 5;
    } else if (value === null) {
      tally.chars += 4;
    } else if (Array.isArray(value)) {
      tally.chars += arrayChars(value.length);
      for (let i = value.length - 1; i >= 0; i--) stack.push(value[i]);
    } else if (typeof value === 'object') {
      const obj = value as Record<string, unknown>;
      if (FLAT_PRICED_TYPES.has(obj['type'])) {
        tally.flatPriced++;
        continue;
      }
      const base64 = obj['type'] === 'base64';
      let fields = 0;
      for (const key in obj) {
        if (!Object.hasOwn(obj, key)) continue;
        const field = obj[key];
        fields++;
        // The key with its quotes and colon.
        tally.chars += key.length + 3;
        if (typeof field === 'string' && ((base64 && key === 'data') || key === 'encrypted_content' || (URL_KEYS.has(key) && field.startsWith('data:')))) {
          tally.binaryChars += field.length;
          continue;
        }
        stack.push(field);
      }
      tally.chars += 1 + Math.max(1, fields);
    }
  }
}
