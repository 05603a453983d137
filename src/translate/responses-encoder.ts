/**
 * Writes the neutral answer events (./answer-events.ts) as a Responses answer: the event stream of
 * responses.md "Stream" (sequence numbers from 0), or, without `write`, the whole response object,
 * both through the emitter (./responses-events.ts), which holds the items' rules.
 *
 * - Text and refusal text go to a message's `output_text` and `refusal` parts, reasoning to a
 *   reasoning item (sealed with its thinking block's signature, ./responses-output.ts
 *   `ResponsesAnswerOptions.seal`), each call to a call item (flattened, custom and local shell
 *   calls restored as the client declared them). A call item stays open after `callEnd`, until
 *   another item starts or the answer stops, so the item an output cap cut short is marked incomplete.
 * - `stop` settles the response (./stop-reasons.ts `toResponsesStop`): incomplete after the output
 *   cap, incomplete with a refusal part after a refusal or a content filter; `end` writes the
 *   terminal event with the usage (the upstream's, else the input estimate); `fail` writes
 *   `response.failed` with `error {code, message}` (./responses-output.ts `failureCode`).
 */
import type { ResponsesResponse } from '../formats/responses.ts';
import type { AnswerEncoder, AnswerUsage } from './answer-events.ts';
import { createResponsesEmitter, type ResponsesEmitterOptions } from './responses-events.ts';
import { answerUsage, failureCode } from './responses-output.ts';
import { toResponsesStop } from './stop-reasons.ts';

/** Creates the Responses encoder; with `options.write`, every event is written as soon as it exists. */
export function createResponsesEncoder(options: ResponsesEmitterOptions): AnswerEncoder<ResponsesResponse> {
  const emitter = createResponsesEmitter(options);
  let reported: AnswerUsage | undefined;

  return {
    start: () => emitter.start(),
    text: emitter.text,
    refusal: emitter.refusal,
    reasoning: emitter.reasoning,
    reasoningEnd: (state) => emitter.endReasoning(state),
    callStart: (call) => emitter.openCall(call.id, call.name),
    callArguments: emitter.callArguments,
    callEnd() {
      // The item stays open: see the file's notes.
    },
    annotate() {
      // A message's text part has no place for opaque state.
    },
    usage(usage) {
      reported = usage;
    },
    stop: (stop) => emitter.settle(toResponsesStop(stop, emitter.refused)),
    end: () => emitter.complete(answerUsage(reported, options)),
    fail: (message, type) => emitter.fail(failureCode(type), message, answerUsage(reported, options)),
    get finished() {
      return emitter.finished;
    },
    get failed() {
      return emitter.failed;
    },
    answer: () => emitter.response(),
  };
}
