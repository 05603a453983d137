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
import type { TurnOf } from '../translate/index.ts';
import type { ResponsesState } from '../responses/state.ts';
import type { JsonObjectBytes } from '../common/json-bytes.ts';

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

/** The gateway's state a format's requests may build on (only Responses keeps any). */
export interface DialectServices {
  responses: ResponsesState;
}

/** Who asks, and where the request may go, when a request begins. */
export interface TurnScope {
  /** The key that asked: stored answers are its own. */
  keyId: string;
  services: DialectServices;
  /**
   * The model's provider answers this format as it is, so what llmux does not know (a response id
   * it never stored) may be the provider's to resolve.
   */
  passThrough: boolean;
  /** The id of the provider the request goes to, when it is known. */
  providerId?: string | undefined;
  /** Milliseconds since the epoch, like `Date.now`. */
  now(): number;
}

/**
 * One request of a format, between its arrival and its answer: the request as it is answered (with
 * what it builds on resolved), what its translations need, and what is kept once it is answered.
 * Stateless formats hand the request back as it came.
 */
export interface Turn<F extends WireFormat> {
  request: ClientRequestOf<F>;
  translation: TurnOf[F];
  /**
   * Keeps the answer the client got (a whole answer, or the one its stream assembled; undefined
   * when there is none, say the client left). Called once the answer is written.
   */
  keep(answer: unknown): Promise<void>;
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
  /** Begins the request's turn: resolves what it builds on (may refuse it: 400, 404). */
  beginTurn(request: ClientRequestOf<F>, scope: TurnScope): Turn<F> | Promise<Turn<F>>;

  /** Headers for an upstream of this format: the provider's credential, and the format's version headers. */
  upstreamHeaders(apiKey: string | undefined, forwarded: ForwardedHeaders): Record<string, string>;
  /**
   * The body for an upstream of the same format: the client's, with the upstream's model id. Given
   * the client's bytes of this very body (`raw.value === body`), those bytes with the members that
   * change spliced in; otherwise the body serialised.
   */
  passThroughBody(body: RequestOf[F], upstreamId: string, raw?: JsonObjectBytes): string | readonly Buffer[];
  /** Usage out of a whole answer's `usage` value (any shape; unknown fields count 0). */
  readUsage(usage: unknown): TokenUsage;
  /**
   * A same-format whole answer as the client gets it: the upstream's bytes, with the answering
   * model's llmux id where the format names it; and the answer itself when the turn keeps it.
   */
  passThroughAnswer(bytes: Buffer, modelId: string): { bytes: Buffer; answer: unknown };

  /** Written during a long upstream silence so clients and proxies keep the stream open. */
  readonly pingFrame: string;
  /** An error after the stream has started. */
  errorFrame(error: StreamErrorInfo): string;

  /** A whole answer with one text block (the echo model). */
  textAnswer(answer: TextAnswer): string;
  /** The same answer as this format's stream events, one per word (made as they are read), each a complete SSE frame. */
  textStream(answer: TextAnswer & { words: Iterable<string>; includeUsage: boolean }): Iterable<string>;
}

/** The turn of a format that keeps nothing between requests: the request as it came. */
export function statelessTurn<F extends 'chat' | 'messages'>(request: ClientRequestOf<F>): Turn<F> {
  return { request, translation: undefined, keep: keepNothing };
}

function keepNothing(): Promise<void> {
  return Promise.resolve();
}

/** The client's bytes of `body` when they can be passed on: parsed into this very object, no top-level key twice. */
export function bytesOf(body: object, raw: JsonObjectBytes | undefined): JsonObjectBytes | undefined {
  return raw !== undefined && raw.value === body && !raw.duplicateKeys ? raw : undefined;
}
