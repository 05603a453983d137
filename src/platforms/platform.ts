/**
 * A platform is how a provider's requests are carried, apart from the wire format they are in
 * (llmux.md section 8; the formats are src/dialects/): the URL (endpoint, path and query), the
 * body's envelope, how a request is authorised, how a streamed answer is framed, and how the
 * platform words its errors. Today's providers are all `http` (./http.ts): the base URL, the
 * format's path, its credential header. Bedrock (the messages format with the model in the path, an
 * envelope without `model` and `stream`, SigV4 over the final bytes, a binary event-stream), Vertex
 * (an OAuth token) and Azure (`api-key`, `?api-version=`) are each one file beside it and one entry
 * in ./index.ts.
 *
 * A platform is bound to a provider once (`bind`): what can be worked out once (the endpoint,
 * where the credential comes from, a token cache) is, there; the per-request methods do only what
 * each request needs. On `http` they cost a property read, a small object and no promise.
 *
 * Everything past the carrier sees what it always saw: the relays and the usage tap read SSE bytes
 * (`events`), src/providers/upstream-errors.ts reads `{message, type, code}` (`readError`), and the
 * transport (src/providers/upstream.ts) sends `endpoint` + `target` with the authorised headers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { PlatformName, ProviderConfig } from '../config/types.ts';
import type { UpstreamFormat } from '../formats/wire.ts';
import type { MemberChanges } from '../common/member-changes.ts';

/**
 * An upstream's answer as it arrives: its status and headers, and its body as a byte stream (an
 * `IncomingMessage` from the network, a decoder of one, or the echo model's stream).
 */
export type UpstreamAnswer = Readable & {
  statusCode?: number | undefined;
  headers: IncomingHttpHeaders;
  /** Whether the whole body has arrived (an `IncomingMessage`'s). */
  complete?: boolean;
};

/** One upstream request as a platform sees it, decided before its body is built. */
export interface UpstreamCall {
  /** The model id the provider knows (`upstream_id`): Bedrock and Vertex put it in the path, Gemini on `http` too. */
  upstreamId: string;
  /** The wire format the body is in (the provider's, or the client's when the provider serves it). */
  format: UpstreamFormat;
  /** The answer is asked for as a stream (a platform may have another path for it, or a query: Gemini's `?alt=sse`). */
  stream: boolean;
  /**
   * The format's own headers as its dialect made them (`anthropic-version`, `anthropic-beta`). A
   * platform sends them, or carries them elsewhere (Bedrock: the betas in the body's `anthropic_beta`).
   */
  formatHeaders: Readonly<Record<string, string>>;
}

/** Whether a provider's credentials can be had now: where they come from, or why not (never a value). */
export type CredentialState = { ok: true; detail: string } | { ok: false; reason: string };

/** A request ready to go but for its authorisation: what a signature covers. */
export interface OutgoingRequest {
  call: UpstreamCall;
  /** The path and query under the endpoint's base path, as sent. */
  target: string;
  /** The body's bytes as sent: a string, or parts written in order. */
  body: string | readonly Buffer[];
  /**
   * The headers sent, besides the transport's own (`host`, `content-type: application/json`,
   * `content-length`, `accept-encoding`) and the provider's configured `headers`. Authorising adds to them.
   */
  headers: Record<string, string>;
  /**
   * The provider key chosen for this attempt from its pool (config `api_keys`, llmux.md section
   * 10), as written in the config (a literal or `env:NAME`): a platform that sends a key sends this
   * one. Undefined: the provider's own credential (`api_key`, or what the platform finds itself).
   */
  apiKey?: string | undefined;
}

/** An upstream's error answer, in the words llmux reads from it. */
export interface UpstreamErrorWords {
  /** The HTTP status llmux treats it as: the answer's own on `http`. */
  status: number;
  /** What the upstream said ('' when it said nothing readable). */
  message: string;
  /** Its error type (`overloaded_error`, `invalid_request_error`, a platform's exception name), if any. */
  type: string | undefined;
  /** Its error code, if any. */
  code: string | undefined;
}

/**
 * A platform bound to one provider. Every method is given what differs per request; the rest was
 * read from the provider's config when it was bound.
 */
export interface Carrier {
  readonly provider: ProviderConfig;
  /**
   * The base URL the transport connects to: scheme, host, port and base path (Bedrock's is made
   * from the region, Vertex's from the location). The same for every request of the provider, so
   * the transport parses it once. `llmux:` is answered in-process (the echo model).
   */
  readonly endpoint: string;
  /**
   * Where the provider's credential is set, in words that never include it (`the environment
   * variable OPENAI_API_KEY (providers.openai.api_key)`): what an `upstream_auth_failed` names.
   */
  readonly credentialSetting: string;

  /** The path and query of a call under the endpoint's base path (`/chat/completions`, `/model/{id}/invoke`, `…?alt=sse`). */
  target(call: UpstreamCall): string;
  /**
   * The body's envelope: top-level members the platform sets (a value) or takes out (undefined),
   * spliced into the client's bytes on a same-format call or set on a translated body before it is
   * serialised. Undefined when the body goes as the format has it (`http`).
   */
  envelope(call: UpstreamCall): MemberChanges | undefined;
  /** A fresh headers object for a call, before authorisation: `accept` and the format's headers as this platform carries them. */
  headers(call: UpstreamCall): Record<string, string>;
  /**
   * Authorises a request over its final target, body and headers, adding its own headers
   * (`authorization`, `x-api-key`, a signature, a token). Called before every attempt (a signature
   * carries its time). Returns undefined when done at once (a key from the config), so nothing is
   * awaited; a promise when it must wait (a token being refreshed). Throws, or rejects, when no
   * credential can be made: src/providers/attempts.ts answers 502 `upstream_auth_failed` naming the
   * provider and {@link credentialSetting}, so the thrown message must hold no secret.
   */
  authorise(request: OutgoingRequest): Promise<void> | undefined;
  /**
   * A streamed success answer as server-sent-event bytes for the relays and the usage tap: the
   * answer itself on `http`, a decoder of the platform's framing otherwise (Bedrock's binary
   * event-stream). Undefined when the answer is not a stream in this platform's framing (an
   * upstream that answered a streamed request with JSON).
   */
  events(answer: UpstreamAnswer): UpstreamAnswer | undefined;
  /**
   * The platform's words for an error answer: from its status, its headers (Bedrock names its
   * exception in `x-amzn-errortype`) and its body's text (already redacted; '' when unreadable).
   */
  readError(status: number, headers: IncomingHttpHeaders, text: string): UpstreamErrorWords;
  /**
   * Whether the provider's credentials can be had now, and where from: resolves them if need be
   * (an AWS credential chain, a token endpoint) and never rejects. Absent on `http`, whose key the
   * catalog reads from the config at once.
   */
  credentials?(): Promise<CredentialState>;
  /**
   * The secret values in play now (a secret access key, a session token, an access token, a
   * private key, an assertion), for the redactor: none of them may reach an answer or a log line.
   */
  secrets?(): readonly string[];
  /**
   * Called with an error answer's status: true when it says the credential sent went stale (Vertex:
   * a 401 on an access token). The carrier has then dropped it, and one more attempt, authorised
   * afresh, is worth making. Asked at most once per request and candidate.
   */
  renew?(status: number, request: OutgoingRequest): boolean;
}

/** What a platform may use when it is bound. */
export interface PlatformServices {
  /**
   * A secret as written in the config: a literal, or `env:NAME` read from the environment now;
   * undefined when unset or empty. Read per request, so a changed environment takes effect.
   */
  secret(written: string | undefined): string | undefined;
  /** The environment llmux was started with (`AWS_*`, `GOOGLE_APPLICATION_CREDENTIALS`, …). */
  env: Readonly<Record<string, string | undefined>>;
  /** Milliseconds since the epoch, like `Date.now` (signatures, token expiry). */
  now(): number;
  /**
   * Tells the redactor a secret a carrier came to hold at run time (an access token, temporary AWS
   * credentials, an assertion): from then on it is kept out of answers and the log. ./index.ts
   * hands it each carrier's `secrets` once they are in play.
   */
  learn?(secret: string): void;
}

/** One platform: binds a provider of its kind to a {@link Carrier}. */
export interface Platform {
  readonly name: PlatformName;
  bind(provider: ProviderConfig, services: PlatformServices): Carrier;
}
