/**
 * Stop reasons: each format's words to the neutral `StopReason` of ./answer-events.ts and back,
 * per translation.md ("Responses and stop reasons") and responses.md ("Stop reasons"). Reading a
 * format's reason is its decoder's; these tables are the one home of what each word means.
 */
import type { ChatFinishReason, MessagesStopReason } from '../formats/wire.ts';
import type { AnswerStop, StopReason } from './answer-events.ts';
import type { ResponsesStop } from './responses-output.ts';

/**
 * chat `finish_reason` -> neutral. `stop` (and a reason newer than this code) is `stop_sequence`
 * only when the upstream said which sequence matched (vLLM `stop_reason`, SGLang `matched_stop`).
 * Tool calls ending with `stop` are the chat decoder's to read (./chat-decoder.ts).
 */
export function fromFinishReason(reason: string | undefined, matchedStop: string | undefined): AnswerStop {
  switch (reason) {
    case 'length':
      return { reason: 'max_tokens' };
    case 'tool_calls':
    case 'function_call':
      return { reason: 'tool_use' };
    case 'content_filter':
      return { reason: 'content_filter' };
    default:
      return matchedStop === undefined ? { reason: 'end_turn' } : { reason: 'stop_sequence', sequence: matchedStop };
  }
}

const MESSAGES_REASONS: ReadonlyMap<string, StopReason> = new Map<string, StopReason>([
  ['end_turn', 'end_turn'],
  ['stop_sequence', 'stop_sequence'],
  ['max_tokens', 'max_tokens'],
  ['model_context_window_exceeded', 'context_window_exceeded'],
  ['tool_use', 'tool_use'],
  ['pause_turn', 'pause_turn'],
  ['refusal', 'refusal'],
]);

/**
 * messages `stop_reason` (with `stop_sequence` and `stop_details.explanation`) -> neutral. A missing
 * reason, or one newer than this code, is `end_turn`: every format reads it as a finished answer.
 */
export function fromMessagesStopReason(reason: unknown, sequence: unknown, explanation: unknown): AnswerStop {
  const neutral = typeof reason === 'string' ? (MESSAGES_REASONS.get(reason) ?? 'end_turn') : 'end_turn';
  if (neutral === 'stop_sequence' && typeof sequence === 'string') return { reason: neutral, sequence };
  if (neutral === 'refusal' && typeof explanation === 'string' && explanation !== '') return { reason: neutral, explanation };
  return { reason: neutral };
}

const CONVERSE_REASONS: ReadonlyMap<string, StopReason> = new Map<string, StopReason>([
  ['end_turn', 'end_turn'],
  ['stop_sequence', 'stop_sequence'],
  ['max_tokens', 'max_tokens'],
  ['model_context_window_exceeded', 'context_window_exceeded'],
  ['tool_use', 'tool_use'],
  // A guardrail of the account, or the model provider's own filter, stopped the answer.
  ['guardrail_intervened', 'content_filter'],
  ['content_filtered', 'content_filter'],
  ['malformed_tool_use', 'malformed_tool_call'],
]);

/**
 * Converse `stopReason` -> neutral. `malformed_model_output` (output Bedrock could not parse into
 * the format asked for), a missing reason and one newer than this code are `end_turn`: every format
 * reads it as a finished answer. Converse does not say which stop sequence matched.
 */
export function fromConverseStopReason(reason: unknown): AnswerStop {
  return { reason: typeof reason === 'string' ? (CONVERSE_REASONS.get(reason) ?? 'end_turn') : 'end_turn' };
}

/** neutral -> chat `finish_reason`. */
export function toFinishReason(reason: StopReason): ChatFinishReason {
  switch (reason) {
    case 'max_tokens':
    case 'context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
    case 'content_filter':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn, malformed_tool_call: the chat format has no other word.
      return 'stop';
  }
}

/** neutral -> messages `stop_reason` and `stop_sequence`. */
export function toMessagesStop(stop: AnswerStop): { stopReason: MessagesStopReason; stopSequence: string | null } {
  switch (stop.reason) {
    case 'stop_sequence':
      return { stopReason: 'stop_sequence', stopSequence: stop.sequence ?? null };
    case 'context_window_exceeded':
      return { stopReason: 'model_context_window_exceeded', stopSequence: null };
    case 'content_filter':
      return { stopReason: 'refusal', stopSequence: null };
    case 'malformed_tool_call':
      return { stopReason: 'end_turn', stopSequence: null };
    default:
      return { stopReason: stop.reason, stopSequence: null };
  }
}

/**
 * Gemini `finishReason` -> neutral (llmux.md section 9). A turn that ends in function calls says
 * `STOP`, as Google's do: the decoder reads it as `tool_use` (./gemini-decoder.ts). Google's filters
 * (safety, recitation, block lists, prohibited content, personal data, image safety, an unsupported
 * language) are `content_filter`; a call the model could not form, or formed for no declared tool,
 * or too many of, is `malformed_tool_call`. `OTHER`, `FINISH_REASON_UNSPECIFIED` and reasons newer
 * than this code are `end_turn`: every format reads that as a finished answer.
 */
const GEMINI_REASONS: ReadonlyMap<string, StopReason> = new Map<string, StopReason>([
  ['MAX_TOKENS', 'max_tokens'],
  ['SAFETY', 'content_filter'],
  ['RECITATION', 'content_filter'],
  ['LANGUAGE', 'content_filter'],
  ['BLOCKLIST', 'content_filter'],
  ['PROHIBITED_CONTENT', 'content_filter'],
  ['SPII', 'content_filter'],
  ['IMAGE_SAFETY', 'content_filter'],
  ['IMAGE_PROHIBITED_CONTENT', 'content_filter'],
  ['MALFORMED_FUNCTION_CALL', 'malformed_tool_call'],
  ['UNEXPECTED_TOOL_CALL', 'malformed_tool_call'],
  ['TOO_MANY_TOOL_CALLS', 'malformed_tool_call'],
]);

/** Gemini `finishReason` -> neutral; `calledTools`: the answer made function calls (then `STOP` is `tool_use`). */
export function fromGeminiFinishReason(reason: string | undefined, calledTools: boolean): AnswerStop {
  const neutral = reason === undefined ? undefined : GEMINI_REASONS.get(reason);
  if (neutral !== undefined) return { reason: neutral };
  return { reason: calledTools ? 'tool_use' : 'end_turn' };
}

/**
 * neutral -> Gemini `finishReason`. A turn that ends in calls is `STOP`, as Google's; a refusal is
 * `SAFETY` (Gemini's word for an answer its safety judgement stopped), a filter too.
 */
export function toGeminiFinishReason(reason: StopReason): string {
  switch (reason) {
    case 'max_tokens':
    case 'context_window_exceeded':
      return 'MAX_TOKENS';
    case 'refusal':
    case 'content_filter':
      return 'SAFETY';
    case 'malformed_tool_call':
      return 'MALFORMED_FUNCTION_CALL';
    default:
      // end_turn, stop_sequence, tool_use, pause_turn.
      return 'STOP';
  }
}

const REFUSAL_TEXT = 'The model declined to answer this request.';
const CONTENT_FILTER_TEXT = "The answer was stopped by the upstream's content filter.";

/**
 * neutral -> how a Responses answer ends. An answer that streamed refusal text (chat's `refusal`)
 * is a refusal whatever its finish reason, unless the output cap cut it. A refusal or content
 * filter stop with no refusal text from the upstream gets a refusal part saying so (the emitter
 * adds it): Anthropic's `stop_details.explanation` when given, else a fixed sentence.
 */
export function toResponsesStop(stop: AnswerStop, refused: boolean): ResponsesStop {
  if (stop.reason === 'max_tokens' || stop.reason === 'context_window_exceeded') return { status: 'incomplete', reason: 'max_output_tokens' };
  if (refused) return { status: 'incomplete', reason: 'content_filter', refusal: REFUSAL_TEXT };
  if (stop.reason === 'refusal') return { status: 'incomplete', reason: 'content_filter', refusal: stop.explanation ?? REFUSAL_TEXT };
  if (stop.reason === 'content_filter') return { status: 'incomplete', reason: 'content_filter', refusal: CONTENT_FILTER_TEXT };
  return { status: 'completed' };
}
