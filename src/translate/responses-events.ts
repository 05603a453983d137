/**
 * Writes a Responses answer as the event stream of responses.md "Stream", and keeps the response
 * object the terminal event carries. The Responses encoder (./responses-encoder.ts) feeds it the
 * neutral answer events of any upstream, streamed or (without `write`) whole, so a streamed answer
 * and a whole one are built by the same rules; the echo model's answers (src/dialects/responses.ts)
 * are written by it directly.
 *
 * - `event: TYPE` + `data: JSON` whose `type` is TYPE and whose `sequence_number` counts from 0;
 *   each event one template string around the JSON of its variable parts, written at once.
 * - One item open at a time: text and refusal go to a message item (its content parts switch
 *   between `output_text` and `refusal`), reasoning to a reasoning item, each call to its own item.
 *   Feeding another kind closes the open item first, so items never interleave.
 * - `output_item.added` carries the item empty (`content: []`, `arguments: ""`, `input: ""`); a local
 *   shell call has no delta events, so its item is added whole when it closes.
 * - Exactly one terminal event: `complete()` writes `response.completed` or `response.incomplete`,
 *   `fail()` writes `response.failed`; anything after it is ignored.
 *
 * State: the response object (its output grows item by item) and the one open item.
 */
import type { ResponsesItemStatus, ResponsesOutputItem, ResponsesRefusal, ResponsesOutputText, ResponsesResponse, ResponsesUsage } from '../formats/responses.ts';
import type { OpaqueState } from './answer-events.ts';
import type { CarriedItem } from './carried.ts';
import {
  type InputUnwrapper,
  type ResponsesAnswerOptions,
  type ResponsesStop,
  callItem,
  callItemPrefix,
  createInputUnwrapper,
  newResponseId,
  outputItemId,
  responseObject,
} from './responses-output.ts';
import { type RestoredTool, restoreTool } from './responses-tools.ts';

export interface ResponsesEmitterOptions extends ResponsesAnswerOptions {
  /** Where the events go; without it nothing is written. */
  write?: (text: string) => void;
}

export interface ResponsesEmitter {
  /** Writes `response.created` and `response.in_progress` (once). */
  start(): void;
  /** Text of the answer, into the open message (a new one when another item is open). */
  text(delta: string): void;
  /** Refusal text, into the open message's refusal part. */
  refusal(delta: string): void;
  /** Reasoning summary text, into the open reasoning item. */
  reasoning(delta: string): void;
  /**
   * Ends the open reasoning item with its opaque state, sealed into its `encrypted_content` with
   * the item's text (./carried.ts: an Anthropic thinking signature with its thinking, reasoning
   * details, or the text alone as the provider's reasoning). With no reasoning open, state that
   * seals still gets an item of its own (a redacted thinking block, details without text).
   */
  endReasoning(state?: OpaqueState): void;
  /**
   * Opens the item of a call of `upstreamName` (flattened, custom and local shell names restored);
   * the call's own state (Gemini's thought signature) goes first, sealed in a reasoning item.
   */
  openCall(callId: string | undefined, upstreamName: string, state?: OpaqueState): void;
  /** The next fragment of the open call's arguments. */
  callArguments(fragment: string): void;
  /** Closes the open item, if any, as completed. */
  closeItem(): void;
  /** Ends the output as `stop` says (last item incomplete, refusal part); `complete` follows. */
  settle(stop: ResponsesStop): void;
  /** Writes the terminal `response.completed` / `response.incomplete` with the whole response. */
  complete(usage: ResponsesUsage | null): void;
  /** Writes the terminal `response.failed` with `error {code, message}`, after closing the open item. */
  fail(code: string, message: string, usage: ResponsesUsage | null): void;
  /** The response object: in progress until the terminal event, then final (what to store). */
  response(): ResponsesResponse;
}

interface MessageItem { kind: 'message'; id: string; idJson: string; index: number; parts: Array<ResponsesOutputText | ResponsesRefusal>; part: { refusal: boolean; text: string } | undefined }
interface ReasoningItem { kind: 'reasoning'; id: string; idJson: string; index: number; text: string }
interface CallItem { kind: 'call'; id: string; idJson: string; index: number; callId: string; restored: RestoredTool; args: string; unwrapper: InputUnwrapper | undefined }
type OpenItem = MessageItem | ReasoningItem | CallItem;

const TEXT_PART_JSON = '{"type":"output_text","text":"","annotations":[],"logprobs":[]}';
const REFUSAL_PART_JSON = '{"type":"refusal","refusal":""}';
const SUMMARY_PART_JSON = '{"type":"summary_text","text":""}';

/** Creates the emitter; with `options.write`, every event is written as soon as it exists. */
export function createResponsesEmitter(options: ResponsesEmitterOptions): ResponsesEmitter {
  const write = options.write;
  const silent = write === undefined;
  const responseId = options.responseId ?? newResponseId();
  const now = options.now ?? Date.now;
  const response = responseObject(options, responseId, Math.floor(now() / 1000));
  let sequence = 0;
  let started = false;
  let settled = false;
  let finished = false;
  let refused = false;
  let open: OpenItem | undefined;

  function emit(type: string, body: string): void {
    const number = sequence;
    sequence += 1;
    write?.(`event: ${type}\ndata: {"type":"${type}",${body},"sequence_number":${number}}\n\n`);
  }

  function itemEvent(type: 'added' | 'done', index: number, item: ResponsesOutputItem): void {
    if (!silent) emit(`response.output_item.${type}`, `"output_index":${index},"item":${JSON.stringify(item)}`);
  }

  function start(): void {
    if (started) return;
    started = true;
    if (silent) return;
    const json = JSON.stringify(response);
    emit('response.created', `"response":${json}`);
    emit('response.in_progress', `"response":${json}`);
  }

  function newItem(prefix: string): { id: string; idJson: string; index: number } {
    start();
    // Callers close the open item first, so the new one goes right after the last closed.
    const index = response.output.length;
    const id = outputItemId(prefix, responseId, index);
    return { id, idJson: JSON.stringify(id), index };
  }

  function at(item: OpenItem): string {
    return `"item_id":${item.idJson},"output_index":${item.index}`;
  }

  // ---------- messages ----------

  function message(): MessageItem {
    if (open?.kind === 'message') return open;
    closeItem();
    const item: MessageItem = { kind: 'message', ...newItem('msg_'), parts: [], part: undefined };
    open = item;
    itemEvent('added', item.index, { type: 'message', id: item.id, role: 'assistant', status: 'in_progress', content: [] });
    return item;
  }

  function part(item: MessageItem, refusal: boolean): { refusal: boolean; text: string } {
    if (item.part?.refusal === refusal) return item.part;
    closePart(item);
    item.part = { refusal, text: '' };
    if (refusal) refused = true;
    if (!silent) emit('response.content_part.added', `${at(item)},"content_index":${item.parts.length},"part":${refusal ? REFUSAL_PART_JSON : TEXT_PART_JSON}`);
    return item.part;
  }

  function closePart(item: MessageItem): void {
    const current = item.part;
    if (current === undefined) return;
    item.part = undefined;
    const done: ResponsesOutputText | ResponsesRefusal = current.refusal
      ? { type: 'refusal', refusal: current.text }
      : { type: 'output_text', text: current.text, annotations: [], logprobs: [] };
    if (!silent) {
      const where = `${at(item)},"content_index":${item.parts.length}`;
      const textJson = JSON.stringify(current.text);
      if (current.refusal) emit('response.refusal.done', `${where},"refusal":${textJson}`);
      else emit('response.output_text.done', `${where},"text":${textJson},"logprobs":[]`);
      emit('response.content_part.done', `${where},"part":${JSON.stringify(done)}`);
    }
    item.parts.push(done);
  }

  function addText(delta: string, refusal: boolean): void {
    if (delta === '' || settled) return;
    const item = message();
    const current = part(item, refusal);
    current.text += delta;
    if (silent) return;
    const where = `${at(item)},"content_index":${item.parts.length},"delta":${JSON.stringify(delta)}`;
    if (refusal) emit('response.refusal.delta', where);
    else emit('response.output_text.delta', `${where},"logprobs":[]`);
  }

  // ---------- reasoning ----------

  function reasoning(delta: string): void {
    if (delta === '' || settled) return;
    let item: ReasoningItem;
    if (open?.kind === 'reasoning') {
      item = open;
    } else {
      closeItem();
      item = { kind: 'reasoning', ...newItem('rs_'), text: '' };
      open = item;
      itemEvent('added', item.index, { type: 'reasoning', id: item.id, summary: [] });
      if (!silent) emit('response.reasoning_summary_part.added', `${at(item)},"summary_index":0,"part":${SUMMARY_PART_JSON}`);
    }
    item.text += delta;
    if (!silent) emit('response.reasoning_summary_text.delta', `${at(item)},"summary_index":0,"delta":${JSON.stringify(delta)}`);
  }

  /** The carried item `state` stands for, with `text` as its reasoning. */
  function carriedOf(state: OpaqueState | undefined, text: string): CarriedItem {
    switch (state?.kind) {
      case 'thinking-signature':
        return { kind: 'thinking', thinking: text, signature: state.signature };
      case 'redacted-thinking':
        return { kind: 'redacted-thinking', data: state.data };
      case 'reasoning-details':
        return { kind: 'reasoning-details', details: state.details };
      case 'thought-signature':
        return { kind: 'thought-signature', signature: state.signature };
      default:
        return { kind: 'reasoning', text };
    }
  }

  /** `item` sealed, when the client's copy or the stored one carries seals; kept for the stored copy under `itemId`. */
  function sealFor(itemId: string, item: CarriedItem): string | undefined {
    if (options.sealItem === undefined || (options.exposeSeals !== true && options.keepSealed === undefined)) return undefined;
    const sealed = options.sealItem(item);
    options.keepSealed?.(itemId, sealed);
    return options.exposeSeals === true ? sealed : undefined;
  }

  /** Whether state without text gets an item of its own: only when a seal will carry it somewhere. */
  function sealsSomewhere(): boolean {
    return options.sealItem !== undefined && (options.exposeSeals === true || options.keepSealed !== undefined);
  }

  function endReasoning(state?: OpaqueState): void {
    if (settled) return;
    if (open?.kind === 'reasoning') {
      closeReasoning(open, state);
      return;
    }
    if (state === undefined || !sealsSomewhere()) return;
    stateItem(carriedOf(state, ''));
  }

  /** A reasoning item with no text, carrying `item` sealed. */
  function stateItem(item: CarriedItem): void {
    closeItem();
    const base = newItem('rs_');
    const done: ResponsesOutputItem = { type: 'reasoning', id: base.id, summary: [] };
    itemEvent('added', base.index, { type: 'reasoning', id: base.id, summary: [] });
    const encrypted = sealFor(base.id, item);
    if (encrypted !== undefined) done.encrypted_content = encrypted;
    itemEvent('done', base.index, done);
    response.output.push(done);
  }

  function closeReasoning(item: ReasoningItem, state: OpaqueState | undefined): void {
    open = undefined;
    if (!silent) {
      const textJson = JSON.stringify(item.text);
      emit('response.reasoning_summary_text.done', `${at(item)},"summary_index":0,"text":${textJson}`);
      emit('response.reasoning_summary_part.done', `${at(item)},"summary_index":0,"part":{"type":"summary_text","text":${textJson}}`);
    }
    const done: ResponsesOutputItem = { type: 'reasoning', id: item.id, summary: [{ type: 'summary_text', text: item.text }] };
    const encrypted = sealFor(item.id, carriedOf(state, item.text));
    if (encrypted !== undefined) done.encrypted_content = encrypted;
    itemEvent('done', item.index, done);
    response.output.push(done);
  }

  // ---------- calls ----------

  function openCall(callId: string | undefined, upstreamName: string, state?: OpaqueState): void {
    if (settled) return;
    closeItem();
    const restored = restoreTool(upstreamName, options.toolNames);
    let id = callId !== undefined && callId !== '' ? callId : undefined;
    if (state !== undefined && sealsSomewhere()) {
      // The call's state goes first, in a reasoning item: the call is the item after it.
      id ??= outputItemId('call_', responseId, response.output.length + 1);
      const carried = carriedOf(state, '');
      stateItem(carried.kind === 'thought-signature' ? { ...carried, callId: id } : carried);
    }
    const base = newItem(callItemPrefix(restored));
    const item: CallItem = {
      kind: 'call',
      ...base,
      callId: id ?? outputItemId('call_', responseId, base.index),
      restored,
      args: '',
      unwrapper: restored.kind === 'custom' ? createInputUnwrapper() : undefined,
    };
    open = item;
    // A local shell call has no delta events: its item is added whole when it closes.
    if (restored.kind === 'local_shell' || silent) return;
    const added = callItem(restored, item.id, item.callId, '', 'in_progress');
    // callItem gives empty arguments as "{}"; the added item starts empty, as OpenAI's does.
    if (added.type === 'function_call') added.arguments = '';
    itemEvent('added', item.index, added);
  }

  function callArguments(fragment: string): void {
    if (fragment === '' || open?.kind !== 'call') return;
    const item = open;
    item.args += fragment;
    if (silent) return;
    if (item.restored.kind === 'function') {
      emit('response.function_call_arguments.delta', `${at(item)},"delta":${JSON.stringify(fragment)}`);
    } else if (item.unwrapper !== undefined) {
      const decoded = item.unwrapper.push(fragment);
      if (decoded !== '') emit('response.custom_tool_call_input.delta', `${at(item)},"delta":${JSON.stringify(decoded)}`);
    }
  }

  function closeCall(item: CallItem, status: ResponsesItemStatus): void {
    open = undefined;
    const done = callItem(item.restored, item.id, item.callId, item.args, status);
    if (!silent) {
      if (done.type === 'function_call') {
        if (item.args === '') emit('response.function_call_arguments.delta', `${at(item)},"delta":"{}"`);
        emit('response.function_call_arguments.done', `${at(item)},"name":${JSON.stringify(done.name)},"arguments":${JSON.stringify(done.arguments)}`);
      } else if (done.type === 'custom_tool_call') {
        emit('response.custom_tool_call_input.done', `${at(item)},"input":${JSON.stringify(done.input)}`);
      } else if (done.type === 'local_shell_call') {
        itemEvent('added', item.index, { ...done, status: 'in_progress' });
      }
    }
    itemEvent('done', item.index, done);
    response.output.push(done);
  }

  // ---------- items and the end ----------

  function closeItem(status: ResponsesItemStatus = 'completed'): void {
    const item = open;
    if (item === undefined) return;
    if (item.kind === 'reasoning') {
      closeReasoning(item, undefined);
    } else if (item.kind === 'call') {
      closeCall(item, status);
    } else {
      closePart(item);
      open = undefined;
      const done: ResponsesOutputItem = { type: 'message', id: item.id, role: 'assistant', status, content: item.parts };
      itemEvent('done', item.index, done);
      response.output.push(done);
    }
  }

  function settle(stop: ResponsesStop): void {
    if (settled || finished) return;
    start();
    if (stop.status === 'incomplete' && stop.reason === 'content_filter' && !refused) {
      addText(stop.refusal, true);
    }
    closeItem(stop.status === 'incomplete' ? 'incomplete' : 'completed');
    settled = true;
    response.status = stop.status;
    response.incomplete_details = stop.status === 'incomplete' ? { reason: stop.reason } : null;
  }

  function complete(usage: ResponsesUsage | null): void {
    if (finished) return;
    if (!settled) settle({ status: 'completed' });
    finished = true;
    response.usage = usage;
    if (!silent) emit(`response.${response.status}`, `"response":${JSON.stringify(response)}`);
  }

  function fail(code: string, messageText: string, usage: ResponsesUsage | null): void {
    if (finished) return;
    start();
    closeItem('incomplete');
    settled = true;
    finished = true;
    response.status = 'failed';
    response.incomplete_details = null;
    response.error = { code, message: messageText };
    response.usage = usage;
    if (!silent) emit('response.failed', `"response":${JSON.stringify(response)}`);
  }

  return {
    start,
    text: (delta) => addText(delta, false),
    refusal: (delta) => addText(delta, true),
    reasoning,
    endReasoning,
    openCall,
    callArguments,
    closeItem: () => closeItem(),
    settle,
    complete,
    fail,
    response: () => response,
  };
}
