/**
 * Which conversation a request belongs to, so `sticky` routing (llmux.md section 10) sends its
 * turns to the deployment that answered the last one. First found:
 *
 * 1. a Responses `previous_response_id`: `response:ID`, the key the previous answer was bound
 *    under (the router binds each Responses answer's own id too, so a chain follows its answers);
 * 2. `prompt_cache_key` (chat and Responses): `cache:VALUE`;
 * 3. a messages `metadata.user_id` (Claude Code's carries its session): `user:VALUE`;
 * 4. else a hash of the system prompt and the first user message: `prompt:DIGEST` — the same for
 *    every turn of a conversation, since later turns only append.
 *
 * One pure reader per client format over the validated body; Gemini's comes with the Gemini format
 * in the same shape (from `systemInstruction` and the first `user` content). The caller scopes the key by the llmux key id
 * (src/routing/sticky.ts), so two keys never share a conversation.
 *
 * The hash reads text parts as they are and other parts by their type only, so a large image does
 * not cost a hash of its bytes (two conversations differing only in a picture share a key, which
 * costs nothing but their spread). Each reader takes the texts of a body read lazily
 * (src/common/json-lazy.ts): a text left as bytes is hashed from its bytes, not decoded, when its
 * JSON has no escapes (they are then its UTF-8).
 */
import { createHash } from 'node:crypto';
import type { Hash } from 'node:crypto';
import { realText, textBytes } from '../common/json-lazy.ts';
import type { LazyTexts } from '../common/json-lazy.ts';
import type { ChatRequest, MessagesRequest } from './wire.ts';
import type { ResponsesRequest } from './responses-types.ts';
import type { GeminiRequest } from './gemini-types.ts';

/** Characters of base64url SHA-256 kept: 132 bits. */
const DIGEST_CHARS = 22;
const PART_SEPARATOR = '\u0001';
const SECTION_SEPARATOR = '\u0000';

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

/** Feeds text into the hash as its UTF-8. */
function feedText(hash: Hash, text: string, texts: LazyTexts | undefined): void {
  hash.update(textBytes(text, texts) ?? realText(text, texts));
}

/** Feeds a message content (a string, or parts with `text`) into the hash. */
function feed(hash: Hash, content: unknown, texts: LazyTexts | undefined): void {
  if (typeof content === 'string') {
    feedText(hash, content, texts);
    return;
  }
  if (!Array.isArray(content)) return;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const record = part as Record<string, unknown>;
    hash.update(PART_SEPARATOR);
    if (typeof record['type'] === 'string') hash.update(record['type']);
    if (typeof record['text'] === 'string') feedText(hash, record['text'], texts);
  }
}

/** `prompt:DIGEST` of the system parts and the first user message, or undefined with neither. */
function promptKey(system: readonly unknown[], firstUser: unknown, texts: LazyTexts | undefined): string | undefined {
  if (system.length === 0 && firstUser === undefined) return undefined;
  const hash = createHash('sha256');
  for (const content of system) {
    feed(hash, content, texts);
    hash.update(SECTION_SEPARATOR);
  }
  hash.update(SECTION_SEPARATOR);
  feed(hash, firstUser, texts);
  return `prompt:${hash.digest('base64url').slice(0, DIGEST_CHARS)}`;
}

/** Roles whose messages make up the system prompt in the chat and Responses formats. */
function isSystemRole(role: unknown): boolean {
  return role === 'system' || role === 'developer';
}

export function chatConversationKey(body: ChatRequest, texts?: LazyTexts): string | undefined {
  if (nonEmpty(body['prompt_cache_key'])) return `cache:${body['prompt_cache_key']}`;
  const system: unknown[] = [];
  for (const message of body.messages) {
    if (message.role === 'user') return promptKey(system, message.content, texts);
    if (isSystemRole(message.role)) system.push(message.content);
  }
  return promptKey(system, undefined, texts);
}

export function messagesConversationKey(body: MessagesRequest, texts?: LazyTexts): string | undefined {
  const userId = body.metadata?.user_id;
  if (nonEmpty(userId)) return `user:${userId}`;
  const first = body.messages.find((message) => message.role === 'user');
  return promptKey(body.system === undefined ? [] : [body.system], first?.content, texts);
}

export function responsesConversationKey(body: ResponsesRequest, texts?: LazyTexts): string | undefined {
  if (nonEmpty(body.previous_response_id)) return `response:${body.previous_response_id}`;
  if (nonEmpty(body.prompt_cache_key)) return `cache:${body.prompt_cache_key}`;
  const system: unknown[] = nonEmpty(body.instructions) ? [body.instructions] : [];
  const input = body.input;
  if (typeof input === 'string') return promptKey(system, input, texts);
  for (const item of input ?? []) {
    const record = item as Record<string, unknown>;
    if (record['type'] !== undefined && record['type'] !== 'message') continue;
    if (record['role'] === 'user') return promptKey(system, record['content'], texts);
    if (isSystemRole(record['role'])) system.push(record['content']);
  }
  return promptKey(system, undefined, texts);
}

export function geminiConversationKey(body: GeminiRequest): string | undefined {
  const first = body.contents.find((content) => content.role === 'user' || content.role === undefined);
  // Gemini bodies are read whole (src/dialects/gemini.ts sets no lazy members): no texts.
  return promptKey(body.systemInstruction === undefined ? [] : [body.systemInstruction.parts], first?.parts, undefined);
}

/** The key a Responses answer's own id is bound under, so the next turn (`previous_response_id`) finds it. */
export function responseConversationKey(responseId: string): string {
  return `response:${responseId}`;
}
