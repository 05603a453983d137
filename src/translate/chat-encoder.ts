/**
 * Writes the neutral answer events (./answer-events.ts) as a chat-completions answer: the chunk
 * stream of translation.md "Streams" (`data:` chunks, then `data: [DONE]`), or, without `write`,
 * the whole answer (`ChatResponse`) built by the same rules.
 *
 * - The first chunk is `delta: {role: "assistant", content: ""}`; every chunk repeats the id,
 *   `created` and the model (the llmux id; the upstream's without one). With `includeUsage`, every
 *   chunk but the usage chunk carries `"usage": null`, as OpenAI's API does when
 *   `stream_options.include_usage` is set.
 * - Text is `content`, reasoning `reasoning_content`, refusal text `refusal`; each call is
 *   `tool_calls[{index: k}]`, k counting calls: its first chunk has the id, type and name with
 *   `arguments: ""`, then one chunk per arguments fragment. A call that got no arguments at all
 *   (a tool without parameters) gets `"{}"` when it ends, as OpenAI sends it: chat clients
 *   JSON.parse the concatenated arguments, and "" does not parse. A call without an id gets a
 *   made-up `call_…` one.
 * - `stop` writes the finish chunk (`delta: {}` and the finish reason, ./stop-reasons.ts); `end`
 *   writes, with `includeUsage`, a chunk with empty `choices` and the usage (an upstream may report
 *   it after its stop: Converse's metadata follows messageStop), then `[DONE]`.
 * - `fail` writes an error chunk (the error's type, `api_error` without one, and the code a
 *   pass-through failure gets: formats/frames.ts) and no `[DONE]`.
 * - Reasoning's opaque state has no place in the format: with a `recorder` (./carry-recorder.ts)
 *   the reasoning, its state and each call (with the id the client sees) are told to it too, and
 *   the server-side store brings the state back when the calls come back (llmux.md section 11).
 * - The whole answer's message: its text pieces joined with "", exactly as the stream's deltas
 *   concatenate; `content` null only beside tool calls (as OpenAI answers; an answer
 *   with nothing at all is "", as the stream of it assembles), `reasoning_content` when there was
 *   reasoning, `tool_calls` when there were calls.
 *
 * Each chunk is one template string around the JSON of its variable parts, written at once; the
 * templates keep JSON.stringify's key order and spacing.
 */
import type { ChatResponse, ChatToolCall } from '../formats/wire.ts';
import { type AnswerEncoder, type AnswerEvents, type AnswerUsage, type CallStart, type StopReason, ignoreEvent } from './answer-events.ts';
import { chatErrorFrame } from '../formats/frames.ts';
import { toChatUsage, ZERO_USAGE } from '../formats/usage.ts';
import { newId } from '../common/ids.ts';
import { toFinishReason } from './stop-reasons.ts';

export interface ChatEncoderOptions {
  /** Where the chunks go; without it nothing is written and `answer()` is the whole answer. */
  write?: (text: string) => void;
  /** The client asked for `stream_options.include_usage`. */
  includeUsage?: boolean;
  /** Completion id (`chatcmpl-…`); random by default. Tests pin it. */
  completionId?: string;
  /** Clock for `created`, in milliseconds; `Date.now` by default. */
  now?: () => number;
  /** The llmux model id the answer names; the upstream's when absent. */
  model?: string;
  /** Told the reasoning, its state and each call, for the server-side store (./carry-recorder.ts). */
  recorder?: AnswerEvents | undefined;
}

/** Creates the chat encoder; with `options.write`, every chunk is written as soon as it exists. */
export function createChatEncoder(options: ChatEncoderOptions): AnswerEncoder<ChatResponse> {
  const write = options.write;
  const silent = write === undefined;
  const includeUsage = options.includeUsage === true;
  const completionId = options.completionId ?? newId('chatcmpl-');
  const now = options.now ?? Date.now;
  const recorder = options.recorder;

  let started = false;
  let finished = false;
  let created = 0;
  let model = '';
  let reported: AnswerUsage | undefined;
  let stopReason: StopReason | undefined;

  const usageTail = includeUsage ? ',"usage":null}' : '}';
  // Set by start: every chunk repeats the id, created and model.
  let chunkHead = '';
  let deltaChunkStart = '';
  const deltaChunkEnd = `,"logprobs":null,"finish_reason":null}]${usageTail}\n\n`;

  // Calls so far; the open one's number and whether it has had arguments.
  let calls = 0;
  let openCall: number | undefined;
  let openCallHasArguments = false;
  // The whole answer (silent only).
  let content = '';
  let hasText = false;
  let reasoning = '';
  let refusal: string | null = null;
  const toolCalls: ChatToolCall[] = [];

  function start(upstreamModel: string | undefined): void {
    if (started) return;
    started = true;
    created = Math.floor(now() / 1000);
    model = options.model ?? upstreamModel ?? '';
    if (silent) return;
    chunkHead = `{"id":${JSON.stringify(completionId)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)}`;
    deltaChunkStart = `data: ${chunkHead},"choices":[{"index":0,"delta":`;
    write(`${deltaChunkStart}{"role":"assistant","content":""}${deltaChunkEnd}`);
  }

  /** Writes a chunk whose choice carries `deltaJson` (the `delta` object as JSON). */
  function emitDelta(deltaJson: string): void {
    if (!started) start(undefined);
    (write as (text: string) => void)(`${deltaChunkStart}${deltaJson}${deltaChunkEnd}`);
  }

  function emitArguments(k: number, fragment: string): void {
    if (silent) (toolCalls[k] as ChatToolCall).function.arguments += fragment;
    else emitDelta(`{"tool_calls":[{"index":${k},"function":{"arguments":${JSON.stringify(fragment)}}}]}`);
  }

  /** Ends the open call: one that got no arguments gets "{}". */
  function endCall(): void {
    if (openCall === undefined) return;
    if (!openCallHasArguments) emitArguments(openCall, '{}');
    openCall = undefined;
  }

  return {
    start,
    text(delta) {
      if (silent) {
        content += delta;
        hasText = true;
      } else if (delta !== '') {
        emitDelta(`{"content":${JSON.stringify(delta)}}`);
      }
    },
    refusal(delta) {
      if (delta === '') return;
      if (silent) refusal = (refusal ?? '') + delta;
      else emitDelta(`{"refusal":${JSON.stringify(delta)}}`);
    },
    reasoning(delta) {
      if (delta === '') return;
      recorder?.reasoning(delta);
      if (silent) reasoning += delta;
      else emitDelta(`{"reasoning_content":${JSON.stringify(delta)}}`);
    },
    // The chat format has no place for reasoning's opaque state: only the recorder keeps it.
    reasoningEnd: recorder === undefined ? ignoreEvent : (state) => recorder.reasoningEnd(state),
    callStart(call: CallStart) {
      endCall();
      const k = calls;
      calls += 1;
      openCall = k;
      openCallHasArguments = false;
      const id = call.id ?? newId(call.madeUpIdPrefix ?? 'call_');
      recorder?.callStart({ ...call, id });
      if (silent) toolCalls.push({ id, type: 'function', function: { name: call.name, arguments: '' } });
      else emitDelta(`{"tool_calls":[{"index":${k},"id":${JSON.stringify(id)},"type":"function","function":{"name":${JSON.stringify(call.name)},"arguments":""}}]}`);
    },
    callArguments(fragment) {
      if (openCall === undefined || fragment === '') return;
      openCallHasArguments = true;
      emitArguments(openCall, fragment);
    },
    callEnd: endCall,
    // Nothing in chat content carries opaque state.
    annotate: ignoreEvent,
    search: ignoreEvent,
    usage(usage) {
      reported = usage;
    },
    stop(stop) {
      if (finished || stopReason !== undefined) return;
      if (!started) start(undefined);
      // A call the upstream never ended (cut by max_tokens) still needs parseable arguments.
      endCall();
      stopReason = stop.reason;
      if (silent) return;
      write(`data: ${chunkHead},"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"${toFinishReason(stop.reason)}"}]${usageTail}\n\n`);
    },
    end() {
      if (finished) return;
      finished = true;
      if (silent) return;
      if (!started) start(undefined);
      if (includeUsage) write(`data: ${chunkHead},"choices":[],"usage":${JSON.stringify(toChatUsage(reported ?? ZERO_USAGE))}}\n\n`);
      write('data: [DONE]\n\n');
    },
    fail(message, type) {
      if (finished) return;
      finished = true;
      write?.(chatErrorFrame({ message, type: type ?? 'api_error' }));
    },
    answer(): ChatResponse {
      if (!started) start(undefined);
      const message: ChatResponse['choices'][number]['message'] = {
        role: 'assistant',
        content: hasText || toolCalls.length === 0 ? content : null,
        refusal,
      };
      if (reasoning !== '') message.reasoning_content = reasoning;
      if (toolCalls.length > 0) message.tool_calls = toolCalls;
      return {
        id: completionId,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: toFinishReason(stopReason ?? 'end_turn') }],
        usage: toChatUsage(reported ?? ZERO_USAGE),
      };
    },
  };
}
