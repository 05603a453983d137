/**
 * The attempts of one request before the client has a byte (llmux.md sections 4 and 10), in the
 * order the routing unit's attempt sequence gives them (src/routing/sequence.ts): the model's
 * deployments in its strategy's order (a conversation's own first), each with a provider key from
 * its pool, then its fallbacks; a retryable failure moves to the next deployment at once, and
 * repeats wait a backoff (exponential, full jitter, the upstream's `retry-after` as a floor) only
 * where the sequence says. `retry.attempts` counts them all. A key answering 401/403 rests and the
 * request goes on with another key. Resolves with the first answer that is not retryable: a
 * success, or an error worth returning as it is. Every attempt begun is ended exactly once: a
 * failed one here, the answer's by the caller when it has been relayed (`Answered.end`), so a long
 * stream keeps its deployment's in-flight lease.
 *
 * Every deployment resting or at its limits before anything was tried: our 429
 * `rate_limit_exceeded`, with the earliest `retry-after`.
 */
import type { ModelEntry, ProviderConfig, RetryConfig } from '../config/types.ts';
import type { ClientRequestOf, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { Carrier, Carriers, OutgoingRequest, UpstreamCall } from '../platforms/index.ts';
import { apiKeySetting } from '../platforms/http.ts';
import { createAttemptSequence, writtenKey } from '../routing/index.ts';
import type { Deployment, ProviderKey, Refusal, Router, SequenceOptions, Step } from '../routing/index.ts';
import { ClientClosedError, GatewayError, UpstreamError, rateLimited, truncate, upstreamAuthFailed, upstreamFailed } from '../common/errors.ts';
import type { Attempt } from '../gateway/request-record.ts';
import type { AnswerTranslation, TurnOf } from '../translate/index.ts';
import { IN_PROCESS_SCHEME } from './upstream.ts';
import type { Cancellation, Transport, UpstreamResponse } from './upstream.ts';
import { buildUpstreamBody, formatHeadersFor, upstreamFormatFor } from './upstream-body.ts';
import type { UpstreamBody } from './upstream-body.ts';
import { upstreamErrorOf } from './upstream-errors.ts';
import type { Redact } from './redact.ts';

/** Upstream statuses worth another try before the client has a byte. */
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504, 529]);
/** Upstream statuses that refuse the provider key, not the request: another key may do. */
const KEY_REFUSED_STATUS = new Set([401, 403]);

/** What the attempts need from the gateway. */
export interface AttemptContext {
  /** A usable model by id (fallbacks are looked up here). */
  model(id: string): ModelEntry | undefined;
  /** The provider a model names, or undefined when it is not configured. */
  provider(id: string): ProviderConfig | undefined;
  /** How each provider's requests are carried: URL, envelope, authorisation, stream framing (src/platforms/). */
  carriers: Carriers;
  /** Which deployment and provider key each attempt goes to, and what it learns from their answers (src/routing/). */
  router: Router;
  transport: Transport;
  retry: RetryConfig;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  /** Idle bound while reading an error answer's body. */
  idleTimeoutMs: number;
  /** Takes every configured credential out of upstream text (./redact.ts). */
  redact: Redact;
  now(): number;
  /** Random in [0, 1), for the jitter. */
  random(): number;
  /**
   * The backoff's clock: resolves after `ms`, or at once when `cancellation` is cancelled (the
   * client went away). {@link sleepUnlessCancelled} with a real timer; tests pass one that does not wait.
   */
  sleep(ms: number, cancellation: Cancellation): Promise<void>;
}

/** What the answer's attempt learns when it is over. */
export interface AnswerUsage {
  /** Tokens used (input + output): they replace the deployment's reservation in its tokens/min window. */
  tokens?: number;
  /** The answer's own id, when a later request may name it (Responses): the conversation follows it. */
  responseId?: string;
}

/** The answer that ended the attempts, and who gave it. */
export interface Answered<F extends WireFormat = WireFormat> {
  response: UpstreamResponse;
  model: ModelEntry;
  /** The model id the answer names: the id asked for through an alias, else the answering model's. */
  answerAs: string;
  provider: ProviderConfig;
  /** The deployment that answered, and the provider key it was sent with (undefined: a provider without keys). */
  deployment: Deployment;
  key: ProviderKey | undefined;
  /** How the provider was reached: its stream framing and error shape are the answer's. */
  carrier: Carrier;
  /** The format the provider answered in. */
  format: UpstreamFormat;
  /** How the answer is translated back to the client's format; undefined when it passes through. */
  translated: AnswerTranslation<F> | undefined;
  /**
   * The answer has been relayed (or failed, or the client left): frees the deployment's in-flight
   * lease. Call it exactly once; later calls do nothing.
   */
  end(usage?: AnswerUsage): void;
}

export interface AttemptOptions<F extends WireFormat> {
  /** What the request's translations need (src/dialects/: the request's turn). */
  turn: TurnOf[F];
  cancellation: Cancellation;
  onAttempt(attempt: Attempt): void;
  onWarning(message: string): void;
  /** The llmux key that asked: conversations are scoped by it. */
  keyId: string;
  /** The id answers of the model asked for name (an alias's requested id); default: the model's own. */
  answerAs?: string;
  /** The request's conversation key (src/formats/conversation-key.ts), read only when a model is sticky. */
  conversation?: () => string | undefined;
  /** Tokens the request may use (its limiter reservation), counted against deployments' tpm while it runs. */
  reservedTokens?: number;
}

/** The model asked for, then its usable fallbacks (never the echo model), each once. */
function chainOf(ctx: AttemptContext, model: ModelEntry): ModelEntry[] {
  const chain: ModelEntry[] = [model];
  for (const id of model.fallbacks) {
    const fallback = ctx.model(id);
    if (fallback !== undefined && fallback.provider !== 'llmux' && !chain.includes(fallback)) chain.push(fallback);
  }
  return chain;
}

/**
 * The request, held for as long as an attempt may still build a body from it. When only one
 * upstream body can ever be needed (a model with one deployment and no fallbacks, the common case)
 * it is let go once that body is built (`request` becomes undefined): an upstream that takes its
 * time to answer then holds only the bytes being sent, not a 200 KB agent turn's parsed objects,
 * which every garbage collection in the meantime would otherwise have to copy. Otherwise the caller
 * lets it go once the provider has answered.
 */
export interface HeldRequest<F extends WireFormat> {
  request: ClientRequestOf<F> | undefined;
}

/** One deployment's upstream request, built from the held request. */
interface Prepared<F extends WireFormat> {
  format: UpstreamFormat;
  call: UpstreamCall;
  /** The path and query under the carrier's endpoint. */
  target: string;
  body: string | readonly Buffer[];
  translated: AnswerTranslation<F> | undefined;
  /** The request itself, for a provider answered in-process (the echo model reads it). */
  client: ClientRequestOf<WireFormat> | undefined;
}

/**
 * Builds the call, body and headers of `model` on `deployment`, answering as `answerAs`; `last`:
 * no later attempt needs the request, which is let go. A function of its own, so nothing of the
 * request stays in the attempts' frame while they wait on the upstream.
 */
function prepare<F extends WireFormat>(held: HeldRequest<F>, model: ModelEntry, deployment: Deployment, answerAs: string, carrier: Carrier, last: boolean, options: AttemptOptions<F>): Prepared<F> {
  const request = held.request;
  if (request === undefined) throw new Error('the request was let go before its last attempt was built');
  if (last) held.request = undefined;
  // The translators read the upstream id and the answer's model id from the entry: a deployment
  // of its own, or an alias's name, is a view of it (the common case needs none).
  const shaped = model.upstream_id === deployment.upstreamId && model.id === answerAs ? model : { ...model, id: answerAs, upstream_id: deployment.upstreamId };
  const format = upstreamFormatFor(carrier.provider, request.format);
  const call: UpstreamCall = { upstreamId: deployment.upstreamId, format, stream: request.stream, formatHeaders: formatHeadersFor(format, request) };
  const { body, translated }: UpstreamBody<F> = buildUpstreamBody(request, format, shaped, options.turn, options.onWarning, carrier.envelope(call), carrier.provider);
  return {
    format,
    call,
    target: carrier.target(call),
    body,
    translated,
    client: carrier.endpoint.startsWith(IN_PROCESS_SCHEME) ? request : undefined,
  };
}

/**
 * Authorises an attempt (src/platforms/platform.ts): nothing to wait for when the platform's
 * credential is at hand. A platform that cannot make its credential is 502 upstream_auth_failed,
 * in words with no secret (its message is redacted all the same).
 */
function authorise(ctx: AttemptContext, carrier: Carrier, outgoing: OutgoingRequest): Promise<void> | undefined {
  let pending: Promise<void> | undefined;
  try {
    pending = carrier.authorise(outgoing);
  } catch (err) {
    throw authorisationFailed(ctx, carrier, err);
  }
  return pending?.catch((err: unknown) => {
    throw authorisationFailed(ctx, carrier, err);
  });
}

function authorisationFailed(ctx: AttemptContext, carrier: Carrier, err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const why = err instanceof Error ? truncate(ctx.redact(err.message), 300) : 'no credential';
  return upstreamAuthFailed(
    `Provider "${carrier.provider.id}" could not be authorised (${why}): your key for llmux is fine; the llmux operator should check ${carrier.credentialSetting}`,
    err,
  );
}

/** Our 429 when every deployment is resting or at its limits: the earliest moment one is back. */
function refusalError(model: ModelEntry, refusal: Refusal): GatewayError {
  const seconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
  const why = refusal.reason === 'resting' ? 'resting after failures' : 'at its own rate limits';
  return rateLimited(`Every deployment of model "${truncate(model.id, 200)}" (and of its fallbacks) is ${why}; try again in ${seconds} s`, { 'retry-after': String(seconds) });
}

/** The 401/403 of a key from a pool names that key's setting; otherwise the provider's. */
function credentialSettingOf(carrier: Carrier, key: ProviderKey | undefined): string {
  return key !== undefined && carrier.provider.apiKeys !== undefined ? apiKeySetting(carrier.provider, key.index) : carrier.credentialSetting;
}

/** What the attempts learned so far about how the request fails. */
interface Failures {
  /** The last upstream failure, returned when nothing answers. */
  last: GatewayError | undefined;
  /** Why the model asked for cannot take this request (a 400), when none of its deployments can. */
  refused: unknown;
}

export async function sendWithFallbacks<F extends WireFormat>(
  ctx: AttemptContext,
  held: HeldRequest<F>,
  model: ModelEntry,
  options: AttemptOptions<F>,
): Promise<Answered<F>> {
  const { cancellation } = options;
  const chain = chainOf(ctx, model);
  const answerAs = options.answerAs ?? model.id;
  const sequenceOptions: SequenceOptions = { keyId: options.keyId, attempts: ctx.retry.attempts, maxRetryAfterMs: ctx.retry.maxRetryAfterMs };
  if (options.conversation !== undefined) sequenceOptions.conversation = options.conversation;
  if (options.reservedTokens !== undefined) sequenceOptions.reservedTokens = options.reservedTokens;
  const sequence = createAttemptSequence(ctx.router, chain, sequenceOptions);
  // Only one body can ever be needed: the request is let go once it is built.
  const single = chain.length === 1 && ctx.router.deployments.of(model).length === 1;
  // Bodies built, by model and deployment (most requests build one).
  const prepared: Array<{ model: ModelEntry; deployment: Deployment; prepared: Prepared<F> }> = [];
  const failures: Failures = { last: undefined, refused: undefined };
  let sent = 0;
  let backoffs = 0;
  for (;;) {
    if (cancellation.cancelled) throw new ClientClosedError();
    const next = sequence.next();
    const step = next instanceof Promise ? await next : next;
    if (step === undefined) break;
    let answered: Answered<F> | undefined;
    try {
      const provider = ctx.provider(step.deployment.provider);
      if (provider === undefined) continue;
      const carrier = ctx.carriers.of(provider);
      // The model asked for could not take the request on any of its deployments: refused, no fallback tried.
      if (failures.refused !== undefined && sent === 0 && step.model !== model) throw failures.refused;
      // A fallback that answers names itself.
      const names = step.model === model ? answerAs : step.model.id;
      let ready = prepared.find((p) => p.model === step.model && p.deployment === step.deployment)?.prepared;
      if (ready === undefined) {
        try {
          ready = prepare(held, step.model, step.deployment, names, carrier, single, options);
        } catch (err) {
          // A request this deployment's provider can't take (say n > 1 for a messages upstream):
          // another deployment of the model asked for may; when none can, it is refused, and
          // fallbacks are not tried for it.
          if (step.model === model) failures.refused ??= err;
          continue;
        }
        prepared.push({ model: step.model, deployment: step.deployment, prepared: ready });
      }
      if (step.backoff) await backoff(ctx, ++backoffs, step.retryAfterMs, cancellation);
      sent++;
      answered = await attempt(ctx, step, provider, carrier, ready, names, options, failures);
      if (answered !== undefined) return answered;
    } finally {
      // A failed attempt (or one never sent) frees its lease now; the answer's, once relayed.
      if (answered === undefined) step.end();
    }
  }
  const refusal = sequence.refusal();
  if (refusal !== undefined) throw refusalError(model, refusal);
  if (sent === 0 && failures.refused !== undefined) throw failures.refused;
  throw failures.last ?? upstreamFailed(`No provider could be reached for model "${model.id}"`);
}

/**
 * One attempt: authorised, sent, its outcome told to the router. Resolves with the answer when it
 * ends the attempts, undefined when the sequence goes on (the failure kept in `failures`); throws
 * what ends the request at once (the client left, a failure no other attempt would change). Not
 * async: the transport's promise, continued once, since an async frame and its await are garbage
 * on every request (with `keep` not awaited, 0.5 KB of a 1 KB request's 39.9: bench/gc.ts).
 */
function attempt<F extends WireFormat>(
  ctx: AttemptContext,
  step: Step,
  provider: ProviderConfig,
  carrier: Carrier,
  ready: Prepared<F>,
  answerAs: string,
  options: AttemptOptions<F>,
  failures: Failures,
): Promise<Answered<F> | undefined> {
  const { format, call, target, body, translated, client } = ready;
  const { cancellation } = options;
  const { deployment, key } = step;
  const started = ctx.now();
  const record = (status: number | undefined, error: string | undefined): void => {
    const attempt: Attempt = { model: step.model.id, provider: provider.id, deployment: deployment.id, ms: ctx.now() - started };
    if (key !== undefined) attempt.key = key.label;
    if (status !== undefined) attempt.status = status;
    if (error !== undefined) attempt.error = error;
    options.onAttempt(attempt);
  };
  // Each attempt is authorised afresh (a signature carries its time; a token may have been renewed).
  const outgoing: OutgoingRequest = { call, target, body, headers: carrier.headers(call), apiKey: key === undefined ? undefined : writtenKey(provider, key.index) };
  // The transport's own promise, after the credential's when there is one to wait for.
  const send = (): Promise<UpstreamResponse> => {
    const pending = authorise(ctx, carrier, outgoing);
    return pending === undefined ? sendNow() : pending.then(sendNow);
  };
  const sendNow = (): Promise<UpstreamResponse> =>
    ctx.transport.send({
      provider,
      endpoint: carrier.endpoint,
      format,
      path: outgoing.target,
      body: outgoing.body,
      headers: outgoing.headers,
      client,
      cancellation,
      connectTimeoutMs: ctx.connectTimeoutMs,
      firstByteTimeoutMs: ctx.firstByteTimeoutMs,
    });
  // The send failed (no answer at all): the request ends, or the sequence goes on.
  const unsent = (err: unknown): undefined => {
    if (err instanceof ClientClosedError) {
      record(undefined, 'client_closed');
      throw err;
    }
    const error = err instanceof GatewayError ? err : upstreamFailed(`Provider "${provider.id}" failed`, { retryable: true, cause: err });
    record(undefined, error.code);
    if (!(error instanceof UpstreamError) || !error.retryable) throw error;
    step.outcome({ failure: error.code === 'upstream_timeout' ? 'timeout' : 'unreachable' });
    failures.last = error;
    return undefined;
  };
  const answeredWith = (response: UpstreamResponse): Answered<F> | Promise<undefined> => {
    const status = response.statusCode ?? 502;
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], ctx.now());
    record(status, undefined);
    step.outcome({ status, ttfbMs: ctx.now() - started, retryAfterMs });
    if (!RETRYABLE_STATUS.has(status) && !KEY_REFUSED_STATUS.has(status)) {
      return { response, model: step.model, answerAs, provider, deployment, key, carrier, format, translated, end: step.end };
    }
    return upstreamErrorOf(response, carrier, ctx.idleTimeoutMs, ctx.redact, credentialSettingOf(carrier, key)).then((error) => {
      failures.last = error;
      return undefined;
    });
  };
  let sent: Promise<UpstreamResponse>;
  try {
    sent = send();
  } catch (err) {
    sent = Promise.reject(err);
  }
  return sent.then((response) => {
    // A stale credential (src/platforms/platform.ts `renew`: a refused token, dropped) earns this
    // attempt one more try with a fresh one, not counted against retry.attempts.
    const first = response.statusCode ?? 502;
    if (first < 400) return answeredWith(response);
    let again: Promise<UpstreamResponse>;
    try {
      if (carrier.renew?.(first, outgoing) !== true) return answeredWith(response);
      record(first, undefined);
      response.resume();
      outgoing.headers = carrier.headers(call);
      again = send();
    } catch (err) {
      return unsent(err);
    }
    return again.then(answeredWith, unsent);
  }, unsent);
}

/** `retry-after` in milliseconds from `nowMs`: whole seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text === '') return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

async function backoff(ctx: AttemptContext, attempt: number, retryAfterMs: number | undefined, cancellation: Cancellation): Promise<void> {
  const { baseDelayMs, maxDelayMs } = ctx.retry;
  // Full jitter on an exponential ceiling; an upstream retry-after is a floor.
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  const wait = Math.max(retryAfterMs ?? 0, Math.round(ceiling * (0.5 + ctx.random() / 2)));
  if (wait <= 0) return;
  await ctx.sleep(wait, cancellation);
  if (cancellation.cancelled) throw new ClientClosedError();
}

/** Resolves after `ms` on a real timer, or at once when the client goes away. */
export function sleepUnlessCancelled(ms: number, cancellation: Cancellation): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      cancellation.unlisten();
      resolve();
    }, ms);
    cancellation.listen(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
