/**
 * What a chat client's answer leaves for its next turn (llmux.md section 11): the chat format has
 * no place for opaque state, so the answer's events are also told to a recorder, which hands each
 * tool call's state to the server-side store (src/carry/store.ts, through the turn's `remember`)
 * as the call starts. Told by the chat encoder for translated answers (with the call ids the client
 * sees, made-up ones included) and, for chat upstreams passed through, by a chat decoder reading
 * the same stream (src/relay/).
 *
 * - The reasoning before a call, with its state (an Anthropic thinking signature, a redacted block,
 *   `reasoning_details`, or none: the text alone, DeepSeek's `reasoning_content`), is the message's
 *   state, kept with the first call after it; the call's own state (Gemini's thought signature) with
 *   the call. A call with neither leaves nothing.
 * - Reasoning after the last call belongs to no call: nothing asks for it back.
 */
import type { AnswerEvents, CallStart, OpaqueState } from './answer-events.ts';
import { ignoreEvent } from './answer-events.ts';
import { type CarriedItem, type CarriedRecord, type Issuer, reasoningItems } from './carried.ts';

/** A recorder of `issuer`'s state, handing each call's to `remember`. */
export function createCarryRecorder(issuer: Issuer, remember: (callId: string, record: CarriedRecord) => void): AnswerEvents {
  let text = '';
  let pending: CarriedItem[] = [];

  function endReasoning(state: OpaqueState | undefined): void {
    pending.push(...reasoningItems(state, text));
    text = '';
  }

  return {
    start: ignoreEvent,
    text: ignoreEvent,
    refusal: ignoreEvent,
    reasoning(delta) {
      text += delta;
    },
    reasoningEnd: endReasoning,
    callStart(call: CallStart) {
      if (text !== '') endReasoning(undefined);
      const id = call.id;
      const record: CarriedRecord = { issuer };
      if (pending.length > 0) record.message = pending;
      if (call.state?.kind === 'thought-signature' && id !== undefined) record.call = { kind: 'thought-signature', signature: call.state.signature, callId: id };
      pending = [];
      if (id !== undefined && id !== '' && (record.message !== undefined || record.call !== undefined)) remember(id, record);
    },
    callArguments: ignoreEvent,
    callEnd: ignoreEvent,
    annotate: ignoreEvent,
    search: ignoreEvent,
    usage: ignoreEvent,
    stop: ignoreEvent,
    end: ignoreEvent,
    fail: ignoreEvent,
  };
}
