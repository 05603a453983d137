/**
 * Streams a chat-completions upstream answer to a Responses client (responses.md "Stream"). A small
 * state machine fed one parsed upstream event at a time; every client event is written as soon as
 * the upstream event that causes it arrives (responses-events.ts writes them).
 *
 * - The first chunk with a choice starts the response; chunks with empty `choices` before it
 *   (Azure's prompt filter) and `: comment` lines (OpenRouter) start nothing.
 * - `reasoning_content` / `reasoning` deltas go to a reasoning item, `content` to a message's
 *   `output_text` part, `refusal` to its `refusal` part, each tool call to its own call item.
 * - Tool calls (translation.md Streams point 5): one call streams live. A fragment of another call
 *   closes the live one when its arguments are already complete JSON (a complete JSON value cannot
 *   grow, so the call is done; sequential upstreams stream every call live this way); otherwise the
 *   other call is held, and held calls come out whole, in index order, as soon as the calls before
 *   them are done, at the latest at `finish_reason`. A new id on a known index (or no index) is a
 *   new call. A fragment for a call already closed cannot be expressed: whitespace is ignored,
 *   anything else is dropped with a warning.
 * - `finish_reason` settles the answer (items closed, the last one incomplete after `length`, a
 *   refusal part after `content_filter`); the terminal event waits for usage, which may come on the
 *   same chunk (DeepSeek, Groq) or a later `choices: []` chunk (OpenAI), and is written at `[DONE]`
 *   or at a clean end after `finish_reason`. Tool calls ending with `stop` are still `completed`.
 * - An error chunk, `fail()`, unparsable data, or a body that ends before `finish_reason` / `[DONE]`
 *   is `response.failed` with `error {code, message}`.
 */
import type { TokenUsage } from '../formats/wire.ts';
import type { SseEvent } from '../sse/parser.ts';
import type { ResponsesStreamOptions, ResponsesStreamTranslator } from './responses-events.ts';
import { createResponsesEmitter, responsesStreamTranslator } from './responses-events.ts';
import { answerUsage, chatStop, failureCode } from './responses-output.ts';
import { chatUsage } from './chat-to-responses.ts';
import { isRecord, nonEmptyString } from '../common/json.ts';
import { firstChoice } from './chat-choice.ts';
import { eventObject } from './stream-event.ts';

/** Calls without a usable index are ordered after every indexed one, by arrival. */
const UNINDEXED_BASE = 1_000_000;

interface Call { order: number; id: string | undefined; name: string; args: string; state: 'live' | 'held' | 'done' }

/** Whether `text` is one complete JSON value (a live call whose arguments are complete is done). */
function isCompleteJson(text: string): boolean {
  if (text.trim() === '') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Creates the chat -> Responses stream translator; output goes to `options.write`, one event per call. */
export function createChatToResponsesStream(options: ResponsesStreamOptions): ResponsesStreamTranslator {
  const emitter = createResponsesEmitter(options);
  const warn = options.onWarning ?? (() => {});
  let sawDone = false;
  let finishReason: string | undefined;
  let refused = false;
  let reported: TokenUsage | undefined;
  let reasoningTokens = 0;

  // Upstream tool_calls[].index (or a made-up key) -> call; the live one; held ones by order.
  const calls = new Map<number, Call>();
  let live: Call | undefined;
  const held: Call[] = [];
  let unindexed = 0;

  /** A done call keeps only its state: its arguments are in the response object now. */
  function done(call: Call): void {
    call.state = 'done';
    call.args = '';
  }

  function makeLive(call: Call): void {
    if (live !== undefined) done(live);
    call.state = 'live';
    live = call;
    emitter.openCall(call.id, call.name);
    emitter.callArguments(call.args);
  }

  function closeLive(): void {
    if (live === undefined) return;
    done(live);
    live = undefined;
    emitter.closeItem();
  }

  /** Held calls out, in order, for as long as the call before each is done. */
  function promote(): void {
    held.sort((a, b) => a.order - b.order);
    while (held.length > 0 && (live === undefined || isCompleteJson(live.args))) {
      const next = held.shift();
      if (next !== undefined) makeLive(next);
    }
  }

  /** Every held call out, in order (the last left open for `settle`): before text or reasoning, and at the end. */
  function flushCalls(): void {
    held.sort((a, b) => a.order - b.order);
    for (const call of held.splice(0)) makeLive(call);
  }

  function toolCall(fragment: Record<string, unknown>): void {
    const fn = isRecord(fragment['function']) ? fragment['function'] : {};
    const id = nonEmptyString(fragment['id']);
    let key = typeof fragment['index'] === 'number' ? fragment['index'] : undefined;
    // Some compatible servers omit `index`, or repeat index 0 for every call: a new id is a new call.
    if (key === undefined && live !== undefined && (id === undefined || id === live.id)) key = live.order;
    const known = key === undefined ? undefined : calls.get(key);
    if (key === undefined || (known !== undefined && id !== undefined && known.id !== undefined && known.id !== id)) {
      key = UNINDEXED_BASE + unindexed;
      unindexed += 1;
    }
    const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
    const call = calls.get(key);
    if (call === undefined) {
      const fresh: Call = { order: key, id, name: typeof fn['name'] === 'string' ? fn['name'] : '', args, state: 'held' };
      calls.set(key, fresh);
      held.push(fresh);
      promote();
      return;
    }
    if (args === '') return;
    if (call.state === 'live') {
      call.args += args;
      emitter.callArguments(args);
    } else if (call.state === 'held') {
      call.args += args;
      promote();
    } else if (args.trim() !== '') {
      warn(`upstream sent more arguments for tool call ${call.id ?? key} after it was complete; dropped`);
    }
  }

  function readChoice(choice: Record<string, unknown>): void {
    const delta = isRecord(choice['delta']) ? choice['delta'] : undefined;
    if (delta !== undefined) {
      const reasoning = nonEmptyString(delta['reasoning_content']) ?? nonEmptyString(delta['reasoning']);
      const content = nonEmptyString(delta['content']);
      const refusal = nonEmptyString(delta['refusal']);
      if (reasoning !== undefined || content !== undefined || refusal !== undefined) {
        flushCalls();
        closeLive();
      }
      if (reasoning !== undefined) emitter.reasoning(reasoning);
      if (content !== undefined) emitter.text(content);
      if (refusal !== undefined) {
        refused = true;
        emitter.refusal(refusal);
      }
      const toolCalls = delta['tool_calls'];
      if (Array.isArray(toolCalls)) for (const fragment of toolCalls) if (isRecord(fragment)) toolCall(fragment);
    }
    const reason = nonEmptyString(choice['finish_reason']);
    if (reason !== undefined && finishReason === undefined) {
      finishReason = reason;
      settle();
    }
  }

  function settle(): void {
    flushCalls();
    if (live !== undefined) done(live);
    live = undefined;
    emitter.settle(chatStop(finishReason, refused));
  }

  function complete(): void {
    settle();
    emitter.complete(answerUsage(reported, reasoningTokens, options));
  }

  function push(event: SseEvent): void {
    if (emitter.finished) return;
    if (event.data === '[DONE]') {
      sawDone = true;
      complete();
      return;
    }
    const chunk = eventObject(event.data);
    if (typeof chunk === 'string') {
      fail(chunk);
      return;
    }
    const error = chunk['error'];
    if (error !== undefined && error !== null) {
      const record = isRecord(error) ? error : {};
      const message = typeof error === 'string' && error !== '' ? error : nonEmptyString(record['message']) ?? 'upstream reported an error';
      fail(message, nonEmptyString(record['type']));
      return;
    }
    if (isRecord(chunk['usage'])) {
      const read = chatUsage(chunk['usage']);
      reported = read.usage;
      reasoningTokens = read.reasoningTokens;
    }
    const choice = firstChoice(chunk['choices']);
    // Azure's prompt-filter chunk (and any other choice-less chunk) starts nothing.
    if (choice === undefined) return;
    emitter.start();
    readChoice(choice);
  }

  function end(): void {
    if (emitter.finished) return;
    if (sawDone || finishReason !== undefined) complete();
    else fail('upstream stream ended before the answer was complete');
  }

  function fail(message: string, type?: string): void {
    if (emitter.finished) return;
    emitter.fail(failureCode(type), message, answerUsage(reported, reasoningTokens, options));
  }

  return responsesStreamTranslator(emitter, { push, end, fail, reported: () => reported }, options.estimatedInputTokens);
}
