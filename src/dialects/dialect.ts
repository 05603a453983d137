/**
 * A dialect is everything llmux knows about one wire format outside the translators: where its
 * operation lives under a provider's base URL, how a request in it is read and sent upstream, how
 * usage is read from its answers, and the frames llmux writes into its streams itself. One entry
 * per format in src/dialects/index.ts; the pipeline, the relay and the echo model look things up
 * there instead of branching on the format.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientRequestOf, RequestOf, TokenUsage, WireFormat } from '../formats/wire.ts';
import type { StreamErrorInfo } from '../formats/frames.ts';

/** The messages format's version and beta headers, as a client sent them. */
export interface ForwardedHeaders {
  version?: string | undefined;
  beta?: string | undefined;
}

/** A text answer, as the built-in echo model gives it. */
export interface TextAnswer {
  model: string;
  text: string;
  /** The answer was cut at the request's output cap. */
  cut: boolean;
  usage: TokenUsage;
}

export interface Dialect<F extends WireFormat> {
  readonly format: F;
  /** The model operation's path under a provider's base URL (`/chat/completions`, `/messages`). */
  readonly path: string;
  /** Event names its streams repeat, interned by the SSE parser. */
  readonly eventNames: readonly string[];

  /** Checks the format's own request headers before the body is read; returns what is forwarded upstream. */
  readHeaders(headers: IncomingHttpHeaders): ForwardedHeaders;
  /** Validates a client's parsed body into the request the pipeline carries; `strict`: config `"validation": "strict"`. */
  readRequest(body: unknown, forwarded: ForwardedHeaders, strict: boolean): ClientRequestOf<F>;
  /** The request's output cap, if it gives one. */
  maxTokens(body: RequestOf[F]): number | undefined;
  /** Whether a streamed answer should end with a usage report the client asked for. */
  wantsStreamUsage(body: RequestOf[F]): boolean;

  /** Headers for an upstream of this format: the provider's credential, and the format's version headers. */
  upstreamHeaders(apiKey: string | undefined, forwarded: ForwardedHeaders): Record<string, string>;
  /** The body for an upstream of the same format: the client's, with the upstream's model id. */
  passThroughBody(body: RequestOf[F], upstreamId: string): string;
  /** Usage out of a whole answer's `usage` value (any shape; unknown fields count 0). */
  readUsage(usage: unknown): TokenUsage;

  /** Written during a long upstream silence so clients and proxies keep the stream open. */
  readonly pingFrame: string;
  /** An error after the stream has started. */
  errorFrame(error: StreamErrorInfo): string;

  /** A whole answer with one text block (the echo model). */
  textAnswer(answer: TextAnswer): string;
  /** The same answer as this format's stream events, one per word, each a complete SSE frame. */
  textStream(answer: TextAnswer & { words: readonly string[]; includeUsage: boolean }): Iterable<string>;
}
