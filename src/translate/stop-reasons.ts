/**
 * Stop reasons of the messages format and finish reasons of the chat format, mapped per
 * translation.md ("Responses and stop reasons").
 */
import type { ChatFinishReason, MessagesStopReason } from '../formats/wire.ts';

/** messages `stop_reason` -> chat `finish_reason`. Unknown or null reasons become `stop`. */
export function stopReasonToFinishReason(reason: string | null | undefined): ChatFinishReason {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn, and anything newer the chat format has no word for.
      return 'stop';
  }
}

/**
 * chat `finish_reason` -> messages `stop_reason`. `stop` becomes `stop_sequence` only when the
 * upstream said which sequence matched (vLLM `stop_reason`, SGLang `matched_stop`).
 */
export function finishReasonToStopReason(
  reason: string | null | undefined,
  matchedStop?: string | null,
): { stopReason: MessagesStopReason; stopSequence: string | null } {
  switch (reason) {
    case 'length':
      return { stopReason: 'max_tokens', stopSequence: null };
    case 'tool_calls':
    case 'function_call':
      return { stopReason: 'tool_use', stopSequence: null };
    case 'content_filter':
      return { stopReason: 'refusal', stopSequence: null };
    default:
      if (typeof matchedStop === 'string' && matchedStop.length > 0) {
        return { stopReason: 'stop_sequence', stopSequence: matchedStop };
      }
      return { stopReason: 'end_turn', stopSequence: null };
  }
}
