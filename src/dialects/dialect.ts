/**
 * A dialect is everything llmux knows about one wire format outside the translators: the routes
 * its clients call and where they put their key, how a request in it is read (its model, whether it
 * streams, its size in tokens, its output cap), what it sends upstream as the format's own (its
 * version headers, the client's bytes passed through), how usage is read from its answers, its
 * error body and the frames llmux writes into its streams itself, and the echo model's answers.
 * One entry per format in src/dialects/index.ts; the router, authentication, the pipeline, the
 * relays and the echo model look things up there instead of branching on the format or guessing
 * it from field names.
 *
 * How a request is carried (the URL on a provider, the credential, the body's envelope, a stream's
 * framing) is not the format's but the platform's (src/platforms/).
 *
 * Written with Gemini in mind (llmux.md section 9), the format whose request is not all in its
 * body: `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`. Its
 * routes use the router's method form (`/v1beta/models/:model*:method(generateContent|…)`), its
 * `readRequest` takes the model and the stream flag from `arrival.params`, its credentials are
 * `x-goog-api-key`, `?key=` and bearer, its estimate counts `systemInstruction`, `contents` and
 * `tools`, its usage key is `usageMetadata`, its error body `{"error": {code, message, status}}`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientRequestOf, RequestOf, TokenUsage, WireFormat } from '../formats/wire.ts';
import type { StreamErrorInfo } from '../formats/frames.ts';
import type { TurnOf, UpstreamModel } from '../translate/index.ts';
import type { ResponsesState } from '../responses/state.ts';
import type { CarriedStore } from '../carry/store.ts';
import type { CredentialSource } from '../common/credentials.ts';
import type { RequestTraits } from '../formats/traits.ts';
import type { ErrorContext, GatewayError } from '../common/errors.ts';
import { serializeJson, withMembers } from '../common/json-bytes.ts';
import type { JsonObjectBytes, LazyMembers } from '../common/json-bytes.ts';
import { withTextsIn } from '../common/json-lazy.ts';
import type { LazyTexts } from '../common/json-lazy.ts';
import { SEAL_START } from '../formats/text-members.ts';
import { changedObject, withChanges } from '../common/member-changes.ts';
import type { MemberChanges } from '../common/member-changes.ts';

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

/** What came with a request's body, for reading it: its headers as read, its route and its query. */
export interface Arrival {
  /** What `readHeaders` returned. */
  forwarded: ForwardedHeaders;
  /** Config `"validation": "strict"`. */
  strict: boolean;
  /** The route's parameters (Gemini: `model` and `method`). */
  params: Readonly<Record<string, string>>;
  /** The request target's query, without the `?` ('' when none). */
  query: string;
}

/**
 * What the pipeline and routing read of a request besides the request itself (issue 26), from the
 * body as it arrived (read lazily: src/dialects/read.ts), so nothing parses or walks it again; a
 * Responses turn's `previous_response_id`, say, is not in the resolved body sent on. Each is
 * computed when first asked, then kept; until then, or until `drop`, the facts hold the body.
 */
export interface RequestFacts {
  /** The output cap the request gives (`max_tokens`, `max_completion_tokens`, `max_output_tokens`), if any. */
  readonly maxTokens: number | undefined;
  /** llmux's estimate of the input tokens of the body as sent (src/formats/estimate.ts): `routes`' `input_tokens_over`, admission. */
  inputTokens(): number;
  /** What `routes` may ask of the body: thinking, images, tools (src/formats/traits.ts). */
  traits(): RequestTraits;
  /** The conversation the request belongs to, for `sticky` routing (src/formats/conversation-key.ts), not yet scoped by key. */
  conversation(): string | undefined;
  /** Lets the body go once no attempt can need it: the conversation is then undefined if not asked before; the others may not be asked. */
  drop(): void;
}

/** A request read from its bytes, and its facts. */
export interface ReadRequest<F extends WireFormat> {
  request: ClientRequestOf<F>;
  facts: RequestFacts;
}

/** The gateway's state a format's requests may build on: stored responses and the seal; a chat client's carried state. */
export interface DialectServices {
  responses: ResponsesState;
  /** The server-side store of chat clients' opaque state (llmux.md section 11). */
  carried: CarriedStore;
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
  /**
   * The request's conversation key (`conversationKey` of its body as it arrived), worked out when
   * first asked and then kept (the request's facts): a turn that may need it asks this instead of
   * hashing the conversation itself.
   */
  conversation?: (() => string | undefined) | undefined;
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
   * when there is none, say the client left). Called once the answer is written. Undefined when
   * there is nothing to wait for (most turns keep nothing): the answer's end then takes no turn
   * of the microtask queue for it.
   */
  keep(answer: unknown): Promise<void> | undefined;
}

/** What a same-format body needs to sort the conversation's carried state for one upstream. */
export interface PassThroughCarry<F extends WireFormat> {
  turn: TurnOf[F];
  /** The upstream the body is for: who it is (its family), and what it wants replayed. */
  model: UpstreamModel;
  onWarning(message: string): void;
}

export interface Dialect<F extends WireFormat> {
  readonly format: F;
  /**
   * The model operation's routes on llmux (router patterns, src/http/router.ts): under `/v1` and at
   * the root. Errors on them are answered in this format's shape ({@link errorBody}).
   */
  readonly routes: readonly string[];
  /** Where this format's clients send their llmux key, in the order it is looked for. */
  readonly credentials: readonly CredentialSource[];
  /** Event names its streams repeat, interned by the SSE parser. */
  readonly eventNames: readonly string[];

  /** Checks the format's own request headers before the body is read; returns what is forwarded upstream. */
  readHeaders(headers: IncomingHttpHeaders): ForwardedHeaders;
  /**
   * Validates a client's parsed body into the request the pipeline carries, with its `model` and
   * `stream` read from wherever the format puts them (the body; Gemini: the route). A 400 names the
   * field at fault.
   */
  readRequest(body: unknown, arrival: Arrival): ClientRequestOf<F>;
  /**
   * The members whose long string values this format's bodies may leave as bytes when read
   * (src/formats/text-members.ts): set only for a format whose validation, estimate, traits and
   * conversation key were read for what they do with such text (src/dialects/read.ts). Unset: the
   * body is parsed whole.
   */
  readonly lazyMembers?: LazyMembers;
  /** The request's output cap, if it gives one. */
  maxTokens(body: RequestOf[F]): number | undefined;
  /**
   * Input tokens estimated from what a model reads in this format's body (src/formats/estimate.ts:
   * never under a quarter of their compact JSON): the context check, the tokens/min reservation,
   * `count_tokens` and the echo model's usage. `texts`: those of a body read lazily.
   */
  estimate(body: RequestOf[F], texts?: LazyTexts): number;
  /** Whether a streamed answer should end with a usage report the client asked for. */
  wantsStreamUsage(body: RequestOf[F]): boolean;
  /** Begins the request's turn: resolves what it builds on (may refuse it: 400, 404). */
  beginTurn(request: ClientRequestOf<F>, scope: TurnScope): Turn<F> | Promise<Turn<F>>;
  /** What `routes` may ask of the body (src/formats/traits.ts): whether it thinks, carries images, offers tools. */
  traits(body: RequestOf[F]): RequestTraits;
  /**
   * Which conversation the request belongs to (src/formats/conversation-key.ts), for sticky routing;
   * undefined when nothing says. `texts`: those of a body read lazily.
   */
  conversationKey(body: RequestOf[F], texts?: LazyTexts): string | undefined;
  /**
   * The id a later request names to continue from this answer (Responses' response id, which a
   * `previous_response_id` names); undefined for formats without one, or an answer without it.
   */
  answerId(answer: unknown): string | undefined;

  /**
   * The format's own headers for an upstream of this format (`anthropic-version`, the client's
   * `anthropic-beta`). The provider's credential is not among them: the platform carries it.
   */
  formatHeaders(forwarded: ForwardedHeaders): Readonly<Record<string, string>>;
  /**
   * The body for an upstream of the same format: the client's, with the upstream's model id and the
   * platform's `envelope` (members it sets or takes out), and the conversation's carried state
   * sorted for this upstream (`carry`, llmux.md section 11: what it issued put back, what another
   * family issued taken out). Given the client's bytes of this very body (`raw.value === body`),
   * those bytes with the members that change spliced in; otherwise the body serialised.
   */
  passThroughBody(body: RequestOf[F], upstreamId: string, raw?: JsonObjectBytes, envelope?: MemberChanges, carry?: PassThroughCarry<F>): string | readonly Buffer[];
  /** The top-level key of a whole answer's usage (`usage`; Gemini's `usageMetadata`). */
  readonly usageKey: string;
  /** Usage out of a whole answer's usage value (any shape; unknown fields count 0). */
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
  /** The JSON body of an error answered before the response started, in this format's shape. */
  errorBody(error: GatewayError, context?: ErrorContext): string;

  /** The text of the request's last user turn, at most `limit` characters: what the echo model answers with. */
  userText(body: RequestOf[F], limit: number): string;
  /** A whole answer with one text block (the echo model). */
  textAnswer(answer: TextAnswer): string;
  /** The same answer as this format's stream events, one per word (made as they are read), each a complete SSE frame. */
  textStream(answer: TextAnswer & { words: Iterable<string>; includeUsage: boolean }): Iterable<string>;
}

/** The `keep` of a turn that keeps nothing of its answer: nothing to wait for. */
export function keepNothing(): undefined {
  return undefined;
}

/** The `answerId` of a format whose answers nothing continues from by id. */
export function noAnswerId(): undefined {
  return undefined;
}

/** The client's bytes of `body` when they can be passed on: parsed into this very object, no top-level key twice. */
export function bytesOf(body: object, raw: JsonObjectBytes | undefined): JsonObjectBytes | undefined {
  return raw !== undefined && raw.value === body && !raw.duplicateKeys ? raw : undefined;
}

/** What every llmux seal starts with, as JSON bytes. */
const SEAL_MARK = Buffer.from(`"${SEAL_START}`);

/**
 * Whether a same-format body may hold llmux seals: its client's bytes say when it cannot, without
 * a walk of the body. A body read lazily was told by its walk (`marked`): searching 200 KB again
 * cost as much as the walk itself.
 */
export function mayHoldSeals(body: object, raw: JsonObjectBytes | undefined): boolean {
  const bytes = bytesOf(body, raw);
  if (bytes === undefined) return true;
  return bytes.marked ?? bytes.bytes.includes(SEAL_MARK);
}

/**
 * A same-format upstream body: the client's bytes with `edits` (member -> JSON text) and the
 * platform's `envelope` spliced in when they can be passed on (see {@link bytesOf}), else `copy`
 * (the body with the same edits made) with the envelope, serialised (with the texts of a body read
 * lazily written from its bytes).
 */
export function passedOn(
  body: object,
  copy: Record<string, unknown>,
  raw: JsonObjectBytes | undefined,
  edits: Map<string, string | undefined>,
  envelope: MemberChanges | undefined,
): string | readonly Buffer[] {
  const bytes = bytesOf(body, raw);
  if (bytes !== undefined) {
    // An edit made of the body's own members (carried state put back) holds its texts' references.
    const texts = bytes.texts;
    if (texts !== undefined) for (const [key, json] of edits) if (json !== undefined) edits.set(key, withTextsIn(json, texts));
    return withMembers(bytes, envelope === undefined ? edits : withChanges(edits, envelope));
  }
  const changed = envelope === undefined ? copy : changedObject(copy, envelope);
  return raw?.texts === undefined ? JSON.stringify(changed) : serializeJson(changed, raw.texts);
}

/** The format's headers of a format that has none. */
export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
