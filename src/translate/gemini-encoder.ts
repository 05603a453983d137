/**
 * Writes the neutral answer events (./answer-events.ts) as a Gemini answer (llmux.md section 9):
 * a stream of `data:` events, each one whole `GenerateContentResponse` and no `[DONE]` (what
 * `streamGenerateContent?alt=sse` writes; src/relay/json-array.ts reframes the same events as one
 * JSON array for a client that did not ask for SSE), or, without `write`, the whole answer.
 *
 * Decisions where the spec is silent (Google's API reference and the `@google/genai` SDK decide):
 * - Every response names the llmux model (`modelVersion`) and one `responseId` made per answer.
 *   Each piece is its own event as it comes: text a `{text}` part, reasoning a `{text, thought:
 *   true}` part (only when the client asked for thoughts, `thinkingConfig.includeThoughts`, as
 *   Google gives them), refusal text a text part (Gemini has no refusal part). A call is one
 *   `functionCall` part once its arguments are complete (Gemini's calls come whole), named as the
 *   client declared it (the request translation's names, ./gemini-history.ts `geminiToolNames`),
 *   with the upstream's id (a made-up `call_…` one when it gave none): Gemini CLI and the SDKs send
 *   a call's id back with its response, and an upstream then gets the id it gave. Arguments that
 *   are not a JSON object are `{}`, with a warning.
 * - The last event, written when the answer ends (usage may come after the stop), carries the
 *   `finishReason` (./stop-reasons.ts: a turn that ends in calls is `STOP`, as Google's) and
 *   `usageMetadata`, with an empty text part as Google's last event has. Only that event carries
 *   usage: the other formats report it at the end, and Gemini's clients read the last report.
 * - Usage (formats/usage.ts `toGeminiUsage`): `candidatesTokenCount` excludes thinking and
 *   `thoughtsTokenCount` holds it when the upstream reported its reasoning tokens apart; a
 *   messages upstream reports none, so all its output is candidates. Without any report, the input
 *   estimate and no output.
 * - Opaque state (llmux.md section 11) goes where Gemini keeps it, a part's `thoughtSignature`: with
 *   `sealItem`, the state of a step (the reasoning before a call, signed or not, and the call's own
 *   state) is sealed as one on the step's first call, the part every Gemini client keeps whole and
 *   sends back (Gemini 3 refuses a call without its signature); with no state, the seal holds none
 *   and only names who answered, so a Gemini upstream the conversation goes to later gets Google's
 *   placeholder there, not a refusal. A later call with no state of its own has none, as Google's
 *   parallel calls. State after the last call belongs to no call: nothing asks for it back.
 * - `fail` writes one more `data:` event with Google's error object (formats/frames.ts); nothing
 *   is written after it.
 * - The whole answer is the same pieces, merged as they arrived: adjacent text into one part,
 *   adjacent reasoning into one thought part, each call its own part; an answer with nothing in it
 *   has one empty text part.
 *
 * Every event is one template string around the JSON of its variable part, written at once.
 */
import { randomBytes } from 'node:crypto';
import type { GeminiPart, GeminiResponse } from '../formats/gemini-types.ts';
import { type AnswerEncoder, type AnswerStop, type AnswerUsage, type CallStart, type OpaqueState, ignoreEvent } from './answer-events.ts';
import { type CarriedItem, bundled, reasoningItems } from './carried.ts';
import { geminiErrorFrame } from '../formats/frames.ts';
import { ZERO_USAGE, toGeminiUsage } from '../formats/usage.ts';
import { asRecord } from '../common/json.ts';
import { newId } from '../common/ids.ts';
import { toGeminiFinishReason } from './stop-reasons.ts';

export interface GeminiEncoderOptions {
  /** Where the events go; without it nothing is written and `answer()` is the whole answer. */
  write?: (text: string) => void;
  /** The llmux model id the answer names (`modelVersion`); the upstream's when absent. */
  model?: string;
  /** The answer's `responseId`; random by default. Tests pin it. */
  responseId?: string;
  /** Upstream function name -> the client's, for names the request translation changed. */
  toolNames?: ReadonlyMap<string, string>;
  /** The client asked for thought parts (`thinkingConfig.includeThoughts`). */
  includeThoughts?: boolean;
  /** Input tokens reported when the upstream reports none. */
  estimatedInputTokens?: number;
  /** Told about output that was repaired (unparsable call arguments; for the request log). */
  onWarning?: (message: string) => void;
  /** Seals opaque state for the key that asked, naming the provider that answered (./carried.ts). */
  sealItem?: ((item: CarriedItem) => string) | undefined;
}

/** A call being read: its start, and its arguments so far. */
interface OpenCall {
  start: CallStart;
  args: string;
}

/** A call's arguments as the `args` object: a JSON object, else `{}` and a warning naming where they were. */
function argsOf(call: OpenCall, warn: ((message: string) => void) | undefined): Record<string, unknown> {
  if (call.args.trim() === '') return {};
  const where = call.start.path ?? `arguments of tool call ${call.start.name}`;
  try {
    const record = asRecord(JSON.parse(call.args));
    if (record !== undefined) return record;
    warn?.(`${where}: JSON but not an object; sent to the client as {}`);
  } catch {
    warn?.(`${where}: not valid JSON; sent to the client as {}`);
  }
  return {};
}

/** Creates the Gemini encoder; with `options.write`, every event is written as soon as it exists. */
export function createGeminiEncoder(options: GeminiEncoderOptions): AnswerEncoder<GeminiResponse> {
  const write = options.write;
  const silent = write === undefined;
  const includeThoughts = options.includeThoughts === true;
  const responseId = options.responseId ?? randomBytes(12).toString('base64url');
  const estimatedInputTokens = Math.max(0, Math.floor(options.estimatedInputTokens ?? 0));

  let model = '';
  let started = false;
  let finished = false;
  let stop: AnswerStop | undefined;
  let reported: AnswerUsage | undefined;
  let openCall: OpenCall | undefined;
  // The step's state so far, sealed on its next call: reasoning ended, and the reasoning still open.
  const sealItem = options.sealItem;
  let pending: CarriedItem[] = [];
  let reasoningText: string | undefined;
  let calls = 0;

  // Set by start: every event ends with the model and the response id.
  let partsHead = '';
  let eventTail = '';
  // The whole answer's parts (silent only): text and reasoning pieces merged as they come.
  const parts: GeminiPart[] = [];
  let lastPart: GeminiPart | undefined;

  function start(upstreamModel: string | undefined): void {
    if (started) return;
    started = true;
    model = options.model ?? upstreamModel ?? '';
    partsHead = 'data: {"candidates":[{"content":{"parts":[';
    eventTail = `],"role":"model"},"index":0}],"modelVersion":${JSON.stringify(model)},"responseId":${JSON.stringify(responseId)}}\n\n`;
  }

  /** One event with one part (its JSON). */
  function emit(partJson: string): void {
    if (finished) return;
    if (!started) start(undefined);
    (write as (text: string) => void)(`${partsHead}${partJson}${eventTail}`);
  }

  /** A text or thought piece: its own event, or merged into the whole answer's last part of its kind. */
  function piece(delta: string, thought: boolean): void {
    if (delta === '') return;
    if (!silent) {
      emit(thought ? `{"text":${JSON.stringify(delta)},"thought":true}` : `{"text":${JSON.stringify(delta)}}`);
      return;
    }
    if (lastPart !== undefined && typeof lastPart.text === 'string' && (lastPart.thought === true) === thought) {
      lastPart.text += delta;
      return;
    }
    lastPart = thought ? { text: delta, thought: true } : { text: delta };
    parts.push(lastPart);
  }

  /** Ends the open reasoning (if any) with `state`, keeping its state for the step's call. */
  function endReasoning(state: OpaqueState | undefined): void {
    if (sealItem === undefined) return;
    pending.push(...reasoningItems(state, reasoningText ?? ''));
    reasoningText = undefined;
  }

  /** The step's state sealed, with the call's own; undefined when there is none (or nothing seals). */
  function signatureFor(call: CallStart, id: string): string | undefined {
    if (sealItem === undefined) return undefined;
    if (reasoningText !== undefined) endReasoning(undefined);
    const items = pending;
    pending = [];
    if (call.state?.kind === 'thought-signature') items.push({ kind: 'thought-signature', signature: call.state.signature, callId: id });
    else if (call.state !== undefined) items.push(...reasoningItems(call.state, ''));
    calls += 1;
    return items.length === 0 && calls > 1 ? undefined : sealItem(bundled(items));
  }

  function endCall(): void {
    if (openCall === undefined) return;
    const call = openCall;
    openCall = undefined;
    const { start: begun } = call;
    const id = begun.id ?? newId('call_');
    const functionCall = { name: options.toolNames?.get(begun.name) ?? begun.name, args: argsOf(call, options.onWarning), id };
    const thoughtSignature = signatureFor(begun, id);
    lastPart = undefined;
    if (silent) parts.push(thoughtSignature === undefined ? { functionCall } : { functionCall, thoughtSignature });
    else emit(thoughtSignature === undefined ? `{"functionCall":${JSON.stringify(functionCall)}}` : `{"functionCall":${JSON.stringify(functionCall)},"thoughtSignature":${JSON.stringify(thoughtSignature)}}`);
  }

  function usageMetadata(): Record<string, number> {
    return reported === undefined
      ? toGeminiUsage({ ...ZERO_USAGE, inputTokens: estimatedInputTokens }, 0)
      : toGeminiUsage(reported, reported.reasoningTokens);
  }

  return {
    start,
    text(delta) {
      if (reasoningText !== undefined) endReasoning(undefined);
      piece(delta, false);
    },
    refusal(delta) {
      if (reasoningText !== undefined) endReasoning(undefined);
      piece(delta, false);
    },
    reasoning(delta) {
      if (sealItem !== undefined) reasoningText = (reasoningText ?? '') + delta;
      if (includeThoughts) piece(delta, true);
    },
    reasoningEnd: endReasoning,
    callStart(call) {
      endCall();
      openCall = { start: call, args: '' };
    },
    callArguments(fragment) {
      if (openCall !== undefined) openCall.args += fragment;
    },
    callEnd: endCall,
    annotate: ignoreEvent,
    // A Gemini upstream's own grounding passes through untranslated; nothing else feeds this encoder one.
    search: ignoreEvent,
    usage(usage) {
      reported = usage;
    },
    stop(told) {
      if (finished || stop !== undefined) return;
      // A call the upstream never ended (cut by the output cap) still goes out whole.
      endCall();
      stop = told;
    },
    end() {
      if (finished) return;
      finished = true;
      endCall();
      if (!started) start(undefined);
      if (silent) return;
      write(
        `data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"${toGeminiFinishReason(stop?.reason ?? 'end_turn')}","index":0}],` +
          `"usageMetadata":${JSON.stringify(usageMetadata())},"modelVersion":${JSON.stringify(model)},"responseId":${JSON.stringify(responseId)}}\n\n`,
      );
    },
    fail(message, type) {
      if (finished) return;
      finished = true;
      write?.(geminiErrorFrame({ message, type: type ?? 'api_error' }));
    },
    answer(): GeminiResponse {
      if (!started) start(undefined);
      return {
        candidates: [{ content: { parts: parts.length === 0 ? [{ text: '' }] : parts, role: 'model' }, finishReason: toGeminiFinishReason(stop?.reason ?? 'end_turn'), index: 0 }],
        usageMetadata: usageMetadata(),
        modelVersion: model,
        responseId,
      };
    },
  };
}
