/**
 * What `routes` (llmux.md section 10) may ask of a request's body: whether it thinks, carries
 * images, offers tools. One pure reader per client format over the validated body.
 *
 * - thinking: messages `thinking` of any type but `disabled` (`enabled`, and `adaptive` as newer
 *   models take it); chat `reasoning_effort` other than `none`; Responses `reasoning.effort`
 *   other than `none`.
 * - images: an image part anywhere a model reads one: a message's content, and a tool result's
 *   (messages `tool_result.content`, Responses `function_call_output.output`).
 * - tools: a non-empty `tools` array.
 * - Gemini: thinking when `generationConfig.thinkingConfig` asks for it (a budget other than 0, a
 *   level, or thoughts included); images in an `inlineData` or `fileData` part whose type is an image
 *   (a function response's parts too); tools as the others.
 */
import type { ChatRequest, MessagesRequest } from './wire.ts';
import type { ResponsesRequest } from './responses-types.ts';
import type { GeminiPart, GeminiRequest } from './gemini-types.ts';

export interface RequestTraits {
  thinking: boolean;
  hasImages: boolean;
  hasTools: boolean;
}

function hasTools(tools: unknown): boolean {
  return Array.isArray(tools) && tools.length > 0;
}

/** Whether an array of content parts holds one whose `type` is in `imageTypes`, looking into nested `content` arrays once. */
function partsHaveImage(parts: unknown, imageTypes: ReadonlySet<unknown>, nestedKey: string | undefined): boolean {
  if (!Array.isArray(parts)) return false;
  for (const part of parts) {
    if (typeof part !== 'object' || part === null) continue;
    const record = part as Record<string, unknown>;
    if (imageTypes.has(record['type'])) return true;
    if (nestedKey !== undefined && partsHaveImage(record[nestedKey], imageTypes, undefined)) return true;
  }
  return false;
}

const CHAT_IMAGE = new Set<unknown>(['image_url']);
const MESSAGES_IMAGE = new Set<unknown>(['image']);
const RESPONSES_IMAGE = new Set<unknown>(['input_image']);

export function chatTraits(body: ChatRequest): RequestTraits {
  const effort = body.reasoning_effort;
  return {
    thinking: typeof effort === 'string' && effort !== 'none',
    hasImages: body.messages.some((message) => partsHaveImage(message.content, CHAT_IMAGE, undefined)),
    hasTools: hasTools(body.tools),
  };
}

export function messagesTraits(body: MessagesRequest): RequestTraits {
  const thinking = body.thinking as { type?: unknown } | undefined;
  return {
    thinking: thinking !== undefined && thinking !== null && thinking.type !== 'disabled',
    // A tool result may carry the screenshot a tool took.
    hasImages: body.messages.some((message) => partsHaveImage(message.content, MESSAGES_IMAGE, 'content')),
    hasTools: hasTools(body.tools),
  };
}

export function responsesTraits(body: ResponsesRequest): RequestTraits {
  const effort = body.reasoning?.effort;
  const input = body.input;
  let hasImages = false;
  if (Array.isArray(input)) {
    for (const item of input) {
      const record = item as Record<string, unknown>;
      if (partsHaveImage(record['content'], RESPONSES_IMAGE, undefined) || partsHaveImage(record['output'], RESPONSES_IMAGE, undefined)) {
        hasImages = true;
        break;
      }
    }
  }
  return {
    thinking: typeof effort === 'string' && effort !== 'none',
    hasImages,
    hasTools: hasTools(body.tools),
  };
}

function geminiPartIsImage(part: GeminiPart): boolean {
  const type = part.inlineData?.mimeType ?? part.fileData?.mimeType;
  if (typeof type === 'string' && type.startsWith('image/')) return true;
  const nested = (part.functionResponse as { parts?: unknown } | undefined)?.parts;
  return Array.isArray(nested) && nested.some((inner) => typeof inner === 'object' && inner !== null && geminiPartIsImage(inner as GeminiPart));
}

export function geminiTraits(body: GeminiRequest): RequestTraits {
  const thinking = body.generationConfig?.thinkingConfig as { thinkingBudget?: unknown; thinkingLevel?: unknown; includeThoughts?: unknown } | undefined;
  return {
    thinking: thinking !== undefined && (thinking.includeThoughts === true || thinking.thinkingLevel !== undefined || (typeof thinking.thinkingBudget === 'number' && thinking.thinkingBudget !== 0)),
    hasImages: body.contents.some((content) => content.parts.some(geminiPartIsImage)),
    hasTools: hasTools(body.tools),
  };
}
