/**
 * Writes the neutral answer events (./answer-events.ts) as a Responses answer: the event stream of
 * responses.md "Stream" (sequence numbers from 0), or, without `write`, the whole response object,
 * both through the emitter (./responses-events.ts), which holds the items' rules.
 *
 * - Text and refusal text go to a message's `output_text` and `refusal` parts, reasoning to a
 *   reasoning item (sealed with its opaque state, ./responses-output.ts `sealItem`), each call to
 *   a call item (flattened, custom and local shell calls restored as the client declared them),
 *   after a reasoning item sealing the call's own state (Gemini's thought signature) when it has any. A call item stays open after `callEnd`, until
 *   another item starts or the answer stops, so the item an output cap cut short is marked incomplete.
 * - `stop` settles the response (./stop-reasons.ts `toResponsesStop`): incomplete after the output
 *   cap, incomplete with a refusal part after a refusal or a content filter; `end` writes the
 *   terminal event with the usage (the upstream's, else the input estimate); `fail` writes
 *   `response.failed` with `error {code, message}` (./responses-output.ts `failureCode`).
 */
import type { ResponsesResponse } from '../formats/responses.ts';
import { type AnswerEncoder, type AnswerUsage, ignoreEvent } from './answer-events.ts';
import { createResponsesEmitter, type ResponsesEmitterOptions } from './responses-events.ts';
import { answerUsage, failureCode } from './responses-output.ts';
import { toResponsesStop } from './stop-reasons.ts';

/** Creates the Responses encoder; with `options.write`, every event is written as soon as it exists. */
export function createResponsesEncoder(options: ResponsesEmitterOptions): AnswerEncoder<ResponsesResponse> {
  const emitter = createResponsesEmitter(options);
  let reported: AnswerUsage | undefined;
  // Refusal text before the stop (after it, the emitter takes none) makes the answer a refusal.
  let refused = false;

  return {
    start: () => emitter.start(),
    text: emitter.text,
    refusal(delta) {
      if (delta !== '') refused = true;
      emitter.refusal(delta);
    },
    reasoning: emitter.reasoning,
    reasoningEnd: (state) => emitter.endReasoning(state),
    callStart: (call) => emitter.openCall(call.id, call.name, call.state),
    callArguments: emitter.callArguments,
    // The item stays open: see the file's notes.
    callEnd: ignoreEvent,
    // A message's text part has no place for opaque state.
    annotate: ignoreEvent,
    search: ignoreEvent,
    usage(usage) {
      reported = usage;
    },
    stop: (stop) => emitter.settle(toResponsesStop(stop, refused)),
    end: () => emitter.complete(answerUsage(reported, options)),
    fail: (message, type) => emitter.fail(failureCode(type), message, answerUsage(reported, options)),
    answer: () => emitter.response(),
  };
}
