/**
 * The token estimate of a Gemini body, by the rules of ./estimate.ts (one home for them): about
 * four characters of compact JSON a token, never under a quarter of the JSON size of what the model
 * reads (`systemInstruction`, `contents`, `tools`), an image at a flat 1,600 tokens, other binary
 * payloads and opaque state at a token per 32 base64 characters.
 *
 * Gemini spells media its own way (`inlineData: {mimeType, data}`, `fileData: {mimeType, fileUri}`,
 * `thoughtSignature`), so the parts carrying them are shown to ./estimate.ts in the shapes it
 * prices (an `image` block, a `base64` source); every other value is counted as it is, by
 * reference. A remote file other than an image is counted by its URI: what it holds is unknown.
 */
import { estimateRequestTokens } from './estimate.ts';

type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const IMAGE: Json = { type: 'image' };

function isImage(media: unknown): boolean {
  return isJson(media) && typeof media['mimeType'] === 'string' && media['mimeType'].toLowerCase().startsWith('image/');
}

/** A blob as ./estimate.ts prices base64 data. */
function binary(blob: Json): Json {
  return { mimeType: blob['mimeType'], type: 'base64', data: blob['data'] };
}

/** A part (or a function response's media part) in the shapes the estimate prices; the same object when it holds no media. */
function pricedPart(part: unknown): unknown {
  if (!isJson(part)) return part;
  let out: Json | undefined;
  const inline = part['inlineData'];
  if (isJson(inline)) {
    if (isImage(inline)) return IMAGE;
    out = { ...part, inlineData: binary(inline) };
  }
  if (isJson(part['fileData']) && isImage(part['fileData'])) return IMAGE;
  const response = part['functionResponse'];
  if (isJson(response) && Array.isArray(response['parts'])) {
    out = { ...(out ?? part), functionResponse: { ...response, parts: response['parts'].map(pricedPart) } };
  }
  const signature = part['thoughtSignature'];
  if (typeof signature === 'string') {
    out = { ...(out ?? part), thoughtSignature: { type: 'base64', data: signature } };
  }
  return out ?? part;
}

function pricedContent(content: unknown): unknown {
  if (!isJson(content) || !Array.isArray(content['parts'])) return content;
  const parts = content['parts'];
  const priced = parts.map(pricedPart);
  return priced.some((part, index) => part !== parts[index]) ? { ...content, parts: priced } : content;
}

/**
 * Estimated input tokens of a generateContent body, or of a countTokens body (its `contents`, or
 * the request inside `generateContentRequest`).
 */
export function estimateGeminiRequestTokens(body: { contents?: unknown; systemInstruction?: unknown; tools?: unknown; generateContentRequest?: unknown }): number {
  const request = isJson(body.generateContentRequest) ? body.generateContentRequest : body;
  const contents = request['contents'];
  return estimateRequestTokens({
    system: request['systemInstruction'] === undefined ? undefined : pricedContent(request['systemInstruction']),
    messages: Array.isArray(contents) ? contents.map(pricedContent) : contents,
    tools: request['tools'],
  });
}
