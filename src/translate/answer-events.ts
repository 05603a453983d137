/**
 * The neutral answer-event form: every translated answer, streamed or whole, is told by a decoder
 * of its upstream's format to an encoder of the client's format through these calls, composed per
 * (client, upstream) pair in ./index.ts. A decoder knows one format's wire and its providers'
 * quirks and knows nothing of clients; an encoder knows one client format and nothing of upstreams.
 * A whole answer is the same events without writing, so a streamed answer assembled and the whole
 * answer of the same content agree by construction.
 *
 * Decoders: ./chat-decoder.ts (chat-completions chunks and answers), ./messages-decoder.ts
 * (messages events and answers). Encoders: ./chat-encoder.ts, ./messages-encoder.ts,
 * ./responses-encoder.ts (over the emitter of ./responses-events.ts).
 *
 * The form is a protocol of calls rather than event objects: an event is one call, so the hot path
 * (a text delta) allocates nothing between the upstream's parsed JSON and the client's template
 * string. In order:
 *
 * 1. `start` at most once, when the upstream's answer begins (an encoder starts on its own before
 *    the first thing it writes if no `start` came, e.g. an upstream that sent nothing but `[DONE]`).
 * 2. Content, in the order the client should see it. `text` and `refusal` go to the answer's
 *    message (its text and refusal parts), `reasoning` to a reasoning item that `reasoningEnd` ends
 *    (anything else arriving ends it too), each call to its own item: `callStart`, `callArguments`*,
 *    `callEnd`. Calls never interleave: a decoder whose upstream interleaves them (chat's held
 *    calls) serialises them first. A delta may be '' only in a whole answer (an empty block);
 *    encoders skip it.
 * 3. `usage` whenever the upstream reports it (each report replaces the one before), `stop` once
 *    (content an upstream still sends after its stop is passed on as it comes), then `end`: the
 *    answer is complete. Or, at any point, `fail`: the answer ends here with the format's in-stream
 *    error, and nothing after it counts.
 *
 * Opaque state (issue 23): what an upstream attaches to a piece of its answer and needs back
 * unread on a later turn travels with the event of that piece (`reasoningEnd`, `callStart`, or
 * `annotate` for the open item), so an encoder whose format has a place for it can carry it.
 * Encoders that have none ignore it (today only the Responses encoder seals Anthropic's thinking).
 */
import type { TokenUsage } from '../formats/wire.ts';
import type { SseEvent } from '../sse/parser.ts';

/**
 * Opaque per-item state: llmux never reads inside it, only hands it back to where it came from.
 * `kind` says whose it is, since only its own format (or provider) can use it.
 */
export type OpaqueState =
  /** An Anthropic thinking block's `signature` ('' when the stream gave none): the block replays only with it. */
  | { kind: 'thinking-signature'; signature: string }
  /** An Anthropic `redacted_thinking` block's `data`: a reasoning item with no text. */
  | { kind: 'redacted-thinking'; data: string }
  /** Gemini's `thoughtSignature` on a part (text, thought or functionCall), or a chat tool call's `extra_content.google.thought_signature`. */
  | { kind: 'thought-signature'; signature: string }
  /** OpenRouter's `reasoning_details` entries, as the upstream sent them. */
  | { kind: 'reasoning-details'; details: unknown[] }
  /** A Responses reasoning item's `encrypted_content`. */
  | { kind: 'encrypted-content'; data: string };

/**
 * Why an answer stopped, one word for what every format says, so each format's reason maps to one
 * of these and back to itself (translation.md, responses.md; Gemini's and Converse's in their issues).
 *
 * - `end_turn`: the model finished (chat `stop`, messages `end_turn`, Responses `completed`, Gemini `STOP`).
 * - `stop_sequence`: a stop sequence matched; `AnswerStop.sequence` names it when the upstream said.
 * - `max_tokens`: the output cap (chat `length`, Responses `incomplete: max_output_tokens`, Gemini `MAX_TOKENS`).
 * - `context_window_exceeded`: the context window filled (messages `model_context_window_exceeded`).
 * - `tool_use`: the model called tools and waits for their results (chat `tool_calls` / `function_call`).
 * - `pause_turn`: a long server-tool turn paused, to be continued (messages).
 * - `refusal`: the model declined (messages `refusal`; `AnswerStop.explanation` when the upstream said why).
 * - `content_filter`: a filter outside the model stopped it (chat `content_filter`, Gemini `SAFETY`, `RECITATION`, …).
 * - `malformed_tool_call`: the model's call could not be parsed upstream (Gemini `MALFORMED_FUNCTION_CALL`).
 */
export type StopReason =
  | 'end_turn'
  | 'stop_sequence'
  | 'max_tokens'
  | 'context_window_exceeded'
  | 'tool_use'
  | 'pause_turn'
  | 'refusal'
  | 'content_filter'
  | 'malformed_tool_call';

export interface AnswerStop {
  reason: StopReason;
  /** `stop_sequence`: the sequence that matched, when the upstream said. */
  sequence?: string;
  /** `refusal`: why, when the upstream said (Anthropic's `stop_details.explanation`). */
  explanation?: string;
}

/**
 * Usage as the upstream reported it, in the neutral counts of formats/usage.ts (`inputTokens`
 * never includes cached tokens: cache reads and cache writes are counted apart), plus the output
 * tokens spent reasoning where the upstream reports them (0 otherwise; part of `outputTokens`).
 */
export interface AnswerUsage extends TokenUsage {
  reasoningTokens: number;
}

/**
 * Neutral usage with its reasoning tokens. Built field by field: spreading the fresh usage object
 * into a new one was a tenth of a short stream's time (a clone per report).
 */
export function toAnswerUsage(usage: TokenUsage, reasoningTokens: number): AnswerUsage {
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cacheReadTokens: usage.cacheReadTokens,
    cacheCreationTokens: usage.cacheCreationTokens,
    reasoningTokens,
  };
}

/** A tool call as it begins. */
export interface CallStart {
  /** The upstream's id for the call; undefined when it gave none, and an encoder makes one up. */
  id: string | undefined;
  /** The tool's name as the upstream wrote it (encoders restore names the request translation changed). */
  name: string;
  /**
   * The prefix of an id an encoder makes up without a rule of its own (a messages answer's random
   * id): chat's legacy `function_call` has always been named `call_…`, other calls `toolu_…`.
   */
  madeUpIdPrefix?: string;
  /** Where the upstream put the call's arguments (a JSON path), for warnings about them. */
  path?: string;
  /** Opaque state that came with the call (Gemini's `thoughtSignature`). */
  state?: OpaqueState;
}

/** A page a search on the upstream's side found. */
export interface SearchSource {
  url: string;
  title: string;
}

/**
 * A web search the upstream ran on its own side (Gemini's grounding with Google Search, which an
 * Anthropic `web_search` tool becomes: llmux.md section 11), told once, after the text it backs
 * and before the stop: what it searched for, what it found, and which spans of the text told so
 * far each source backs (`sources`: indexes into `sources` of the search).
 */
export interface ServerSearch {
  queries: string[];
  sources: SearchSource[];
  citations: Array<{ text: string; sources: number[] }>;
}

/** What a decoder tells an encoder; see the file's notes for the order. */
export interface AnswerEvents {
  /** The answer begins; `model` is the upstream's model name when it gave one. */
  start(model: string | undefined): void;
  text(delta: string): void;
  refusal(delta: string): void;
  reasoning(delta: string): void;
  /** Ends the open reasoning item with its state; with none open, a stated item with no text (redacted thinking). */
  reasoningEnd(state?: OpaqueState): void;
  callStart(call: CallStart): void;
  /** The next fragment of the open call's arguments (JSON text, as the upstream wrote it). */
  callArguments(fragment: string): void;
  /** The open call's arguments are complete. */
  callEnd(): void;
  /** Opaque state for the open item that came apart from the event opening it (Gemini's `thoughtSignature` on a text part). */
  annotate(state: OpaqueState): void;
  /** The upstream searched the web on its side (see {@link ServerSearch}); encoders with no place for it ignore it. */
  search(search: ServerSearch): void;
  usage(usage: AnswerUsage): void;
  stop(stop: AnswerStop): void;
  end(): void;
  /** The answer failed: `message` says why, `type` is the upstream's error type when it named one. */
  fail(message: string, type?: string): void;
}

/**
 * An encoder: the events written in a client format (or, without `write`, assembled into its whole
 * answer). After `end` or `fail` it writes nothing more.
 */
export interface AnswerEncoder<Answer> extends AnswerEvents {
  /** The client's whole answer as assembled so far: final once the answer has ended. */
  answer(): Answer;
}

/**
 * A stream decoder: one upstream format's events, read into `AnswerEvents` as they come. Once it has
 * told the answer's `end` or `fail`, it reads nothing more.
 */
export interface StreamDecoder {
  /** One parsed upstream event. */
  push(event: SseEvent): void;
  /** The upstream body ended: the answer ends, or fails when the upstream had not finished it. */
  end(): void;
  /** The upstream failed outside its events (cut off, silent too long, unreadable): the answer fails. */
  fail(message: string, type?: string): void;
  /** What the upstream reported so far, if anything. */
  reported(): AnswerUsage | undefined;
}

/** What a stream decoder is given besides its sink. */
export interface DecoderOptions {
  /** Told about upstream output that cannot be passed on (for the request log). */
  onWarning?: ((message: string) => void) | undefined;
  /** Told once the decoder has told the answer's end (`failed` false) or its failure. */
  onEnded?: ((failed: boolean) => void) | undefined;
}

/** For the events an encoder has no place for: one function for all, made once. */
export function ignoreEvent(): void {
  // Nothing to write.
}

/** How far a decoder has told the answer: still reading, or told its end, or its failure (once). */
export interface AnswerEnding {
  state: 'reading' | 'ended' | 'failed';
  /** Tells `sink` the answer's end. */
  end(): void;
  /** Tells `sink` the answer's failure, unless it has ended already. */
  fail(message: string, type?: string): void;
}

/**
 * The ending of the answer a stream decoder tells `sink`, told on to `onEnded` too; decoders read
 * nothing once it is not `reading`.
 */
export function answerEnding(sink: AnswerEvents, onEnded: DecoderOptions['onEnded']): AnswerEnding {
  const ending: AnswerEnding = {
    state: 'reading',
    end() {
      ending.state = 'ended';
      sink.end();
      onEnded?.(false);
    },
    fail(message, type) {
      if (ending.state !== 'reading') return;
      ending.state = 'failed';
      sink.fail(message, type);
      onEnded?.(true);
    },
  };
  return ending;
}
