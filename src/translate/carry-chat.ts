/**
 * Carried state into a chat-completions request (llmux.md section 11), on every path that builds
 * one: a messages or Responses client's history translated, and a chat client's own passed through
 * with what the server-side store recalled (src/dialects/chat.ts).
 *
 * - A Gemini thought signature goes on its call as `extra_content.google.thought_signature` (the
 *   call the state names, else the message's first call without one).
 * - `reasoning_details` go on the assistant message, all entries, as issued.
 * - What the upstream issued replaces a chat client's own copy of it (see `carryIntoChatMessage`).
 * - Reasoning text goes as `reasoning_content` to a `replay_reasoning` model whoever issued it: it is
 *   the text the client was shown, not opaque state, and the upstream only needs it present.
 * - What the upstream needs and the conversation lacks is filled in ({@link fillChatGaps}): for a
 *   Gemini upstream the first call of each step of the current turn (the assistant messages since
 *   the last user message) carries Google's placeholder when it has no signature of Gemini's; for a
 *   `replay_reasoning` upstream every assistant message with tool calls carries `reasoning_content`
 *   ("" when no text is known). Each is counted for the request log.
 * - The client's own copy of another family's state (a chat client that kept `extra_content` or
 *   `reasoning_details` whole) is taken out before a request to an upstream that cannot read it
 *   ({@link stripForeign}).
 */
import { isDeepStrictEqual } from 'node:util';
import type { ChatMessage, ChatToolCall } from '../formats/wire.ts';
import { asRecord, nonEmptyString } from '../common/json.ts';
import { type CarriedItem, type CarriedRecord, type CarryReader, GEMINI_FAMILY, PLACEHOLDER_FILLED, SKIP_THOUGHT_SIGNATURE, recordItems } from './carried.ts';
import type { UpstreamModel } from './messages-to-chat.ts';

/** Families whose upstreams read `reasoning_details` (OpenRouter's). */
const REASONING_DETAILS_FAMILY = 'openrouter';

/** The thought signature on a chat tool call, if it carries one. */
export function callSignature(call: ChatToolCall | Record<string, unknown>): string | undefined {
  const google = asRecord(asRecord((call as Record<string, unknown>)['extra_content'])?.['google']);
  return nonEmptyString(google?.['thought_signature']);
}

function setSignature(call: ChatToolCall, signature: string): void {
  const extra = { ...(call.extra_content ?? {}) };
  extra['google'] = { ...(asRecord(extra['google']) ?? {}), thought_signature: signature };
  call.extra_content = extra;
}

/**
 * Puts `items` (state the target accepts) on the assistant `message`; true when it changed. What
 * the upstream issued wins over a client's own copy of it: an SDK that keeps unknown fields of a
 * stream keeps the last delta's, not the whole (`reasoning_content` and `reasoning_details` cut to
 * their last piece).
 */
export function carryIntoChatMessage(message: ChatMessage, items: readonly CarriedItem[], model: UpstreamModel): boolean {
  const calls = message.tool_calls ?? [];
  let changed = false;
  let details: unknown[] | undefined;
  for (const item of items) {
    switch (item.kind) {
      case 'thought-signature': {
        const call = item.callId === undefined ? calls.find((candidate) => callSignature(candidate) === undefined) : calls.find((candidate) => candidate.id === item.callId);
        if (call === undefined || callSignature(call) === item.signature) break;
        setSignature(call, item.signature);
        changed = true;
        break;
      }
      case 'reasoning-details':
        details = [...(details ?? []), ...item.details];
        break;
      case 'reasoning':
        if (!model.replayReasoning || item.text === undefined || item.text === '' || message.reasoning_content === item.text) break;
        message.reasoning_content = item.text;
        changed = true;
        break;
      default:
        // Signed thinking is the messages format's: no chat upstream reads it.
        break;
    }
  }
  if (details !== undefined && !isDeepStrictEqual(message['reasoning_details'], details)) {
    message['reasoning_details'] = details;
    changed = true;
  }
  return changed;
}

/**
 * Takes out of the assistant messages the state the target cannot read: Gemini's `extra_content`
 * on calls unless it is a Gemini upstream, `reasoning_details` unless it reads them. Changes the
 * messages in place; true when something was taken out.
 */
export function stripForeign(messages: ChatMessage[], reader: CarryReader): boolean {
  const family = reader.target?.family;
  let changed = false;
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    if (family !== GEMINI_FAMILY) {
      for (const call of message.tool_calls ?? []) {
        if (call.extra_content === undefined || asRecord(call.extra_content)?.['google'] === undefined) continue;
        const { google: _google, ...rest } = call.extra_content;
        if (Object.keys(rest).length === 0) delete call.extra_content;
        else call.extra_content = rest;
        reader.stripped('a provider the client kept it from (extra_content.google on its calls)');
        changed = true;
      }
    }
    if (family !== REASONING_DETAILS_FAMILY && message['reasoning_details'] !== undefined) {
      delete message['reasoning_details'];
      reader.stripped('a provider the client kept it from (reasoning_details on its messages)');
      changed = true;
    }
  }
  return changed;
}

/**
 * Fills what the target needs and the conversation lacks (see the file's notes). Changes the
 * messages in place; true when something was filled.
 */
export function fillChatGaps(messages: ChatMessage[], model: UpstreamModel, reader: CarryReader): boolean {
  let changed = false;
  if (reader.target?.family === GEMINI_FAMILY) {
    let lastUser = -1;
    messages.forEach((message, index) => {
      if (message.role === 'user') lastUser = index;
    });
    for (const message of messages.slice(lastUser + 1)) {
      const first = message.role === 'assistant' ? message.tool_calls?.[0] : undefined;
      if (first === undefined || callSignature(first) !== undefined) continue;
      setSignature(first, SKIP_THOUGHT_SIGNATURE);
      reader.filled(PLACEHOLDER_FILLED);
      changed = true;
    }
  }
  if (model.replayReasoning) {
    for (const message of messages) {
      if (message.role !== 'assistant' || (message.tool_calls?.length ?? 0) === 0 || typeof message.reasoning_content === 'string') continue;
      message.reasoning_content = '';
      reader.filled('an empty reasoning_content put on an assistant message with tool calls');
      changed = true;
    }
  }
  return changed;
}

/**
 * A chat client's own history on its way to a chat upstream (passed through): what the store
 * recalled for its calls put back where the target reads it, the client's copy of another family's
 * state taken out, and the gaps filled. The client's messages are never changed (a fallback builds
 * its own body from them): the assistant messages it touches are copies. Undefined when nothing
 * changes, so the client's bytes can go on as they are.
 */
export function carryChatHistory(
  messages: readonly ChatMessage[],
  recalled: ReadonlyMap<string, CarriedRecord>,
  model: UpstreamModel,
  reader: CarryReader,
): ChatMessage[] | undefined {
  if (!needsCarry(messages, recalled, model, reader)) return undefined;
  const copy = messages.map((message) => (message.role === 'assistant' ? copyAssistant(message) : message));
  let changed = false;
  for (const message of copy) {
    if (message.role !== 'assistant') continue;
    const items: CarriedItem[] = [];
    for (const call of message.tool_calls ?? []) {
      const record = recalled.get(call.id);
      if (record === undefined || !reader.accept(record.issuer)) continue;
      items.push(...recordItems(record));
    }
    if (carryIntoChatMessage(message, items, model)) changed = true;
  }
  if (stripForeign(copy, reader)) changed = true;
  if (fillChatGaps(copy, model, reader)) changed = true;
  return changed ? copy : undefined;
}

/** Whether anything could change: recalled state, state of the client's own, or gaps the target needs filled. */
function needsCarry(messages: readonly ChatMessage[], recalled: ReadonlyMap<string, CarriedRecord>, model: UpstreamModel, reader: CarryReader): boolean {
  if (recalled.size > 0 || model.replayReasoning || reader.target?.family === GEMINI_FAMILY) {
    return messages.some((message) => message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0);
  }
  return messages.some((message) => message.role === 'assistant' && (message['reasoning_details'] !== undefined || (message.tool_calls ?? []).some((call) => call.extra_content !== undefined)));
}

function copyAssistant(message: ChatMessage): ChatMessage {
  const copy: ChatMessage = { ...message };
  if (Array.isArray(message.tool_calls)) copy.tool_calls = message.tool_calls.map((call) => ({ ...call, ...(call.extra_content === undefined ? {} : { extra_content: { ...call.extra_content } }) }));
  return copy;
}
