/**
 * Token estimates without a tokenizer: about four characters of text per token, the ratio the
 * providers themselves quote for English text, and a flat cost per image. Used for
 * `count_tokens`, for the input tokens a request in flight holds against tokens/min, and for the
 * echo model's usage.
 */

const CHARS_PER_TOKEN = 4;
/** Anthropic prices a ~1000x1000 image at about (w*h)/750 = 1,334 tokens; we don't decode images. */
const IMAGE_TOKENS = 1_600;
/** Per-message framing overhead (role markers), as both providers add a few tokens per turn. */
const MESSAGE_OVERHEAD = 4;

/**
 * Estimated input tokens of a request in any format: every string in messages, system and tools
 * (a Responses request's input items and instructions) counted as text, images at a flat rate.
 * Walks at most `budget` nodes so a hostile body can't make it slow.
 */
export function estimateRequestTokens(body: { messages?: unknown; system?: unknown; tools?: unknown; input?: unknown; instructions?: unknown }): number {
  let chars = 0;
  let images = 0;
  let nodes = 0;
  const budget = 200_000;
  const walk = (value: unknown, depth: number): void => {
    if (++nodes > budget || depth > 64) return;
    if (typeof value === 'string') {
      chars += value.length;
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1);
    } else if (typeof value === 'object' && value !== null) {
      const obj = value as Record<string, unknown>;
      if (obj['type'] === 'image' || obj['type'] === 'image_url' || obj['type'] === 'input_image') {
        images++;
        return;
      }
      for (const key in obj) {
        if (!Object.hasOwn(obj, key)) continue;
        // Structure, not content: these don't reach the model as text.
        if (key === 'type' || key === 'cache_control' || key === 'role' || key === 'id' || key === 'tool_use_id' || key === 'tool_call_id' || key === 'call_id' || key === 'status' || key === 'signature' || key === 'encrypted_content') continue;
        if (typeof obj[key] === 'string' || typeof obj[key] === 'object') walk(obj[key], depth + 1);
      }
    }
  };
  walk(body['system'], 0);
  walk(body['instructions'], 0);
  walk(body['messages'], 0);
  walk(body['input'], 0);
  walk(body['tools'], 0);
  const messages = (Array.isArray(body['messages']) ? body['messages'].length : 0) + (Array.isArray(body['input']) ? body['input'].length : typeof body['input'] === 'string' ? 1 : 0);
  return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS + messages * MESSAGE_OVERHEAD;
}
