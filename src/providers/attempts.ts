/**
 * Retries and fallbacks before the client has a byte (llmux.md section 4): the model, then its
 * fallbacks in order, each with up to `retry.attempts` attempts on connect errors and retryable
 * statuses, with exponential backoff and full jitter, honouring the upstream's `retry-after` up to
 * a bound. Resolves with the first answer that is not retryable: a success, or an error worth
 * returning as it is.
 */
import type { ModelEntry, ProviderConfig, RetryConfig } from '../config/types.ts';
import type { ClientRequestOf, WireFormat } from '../formats/wire.ts';
import { dialects } from '../dialects/index.ts';
import type { Carrier, Carriers, OutgoingRequest, UpstreamCall } from '../platforms/index.ts';
import { ClientClosedError, GatewayError, UpstreamError, truncate, upstreamAuthFailed, upstreamFailed } from '../common/errors.ts';
import type { Attempt } from '../gateway/request-record.ts';
import type { AnswerTranslation, TurnOf } from '../translate/index.ts';
import { IN_PROCESS_SCHEME } from './upstream.ts';
import type { Cancellation, Transport, UpstreamResponse } from './upstream.ts';
import { buildUpstreamBody, upstreamFormatFor } from './upstream-body.ts';
import type { UpstreamBody } from './upstream-body.ts';
import { upstreamErrorOf } from './upstream-errors.ts';
import type { Redact } from './redact.ts';

/** Upstream statuses worth another try before the client has a byte. */
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504, 529]);


/** What the attempts need from the gateway. */
export interface AttemptContext {
  /** A usable model by id (fallbacks are looked up here). */
  model(id: string): ModelEntry | undefined;
  /** The provider a model names, or undefined when it is not configured. */
  provider(id: string): ProviderConfig | undefined;
  /** How each provider's requests are carried: URL, envelope, authorisation, stream framing (src/platforms/). */
  carriers: Carriers;
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

/** The answer that ended the attempts, and who gave it. */
export interface Answered<F extends WireFormat = WireFormat> {
  response: UpstreamResponse;
  model: ModelEntry;
  provider: ProviderConfig;
  /** How the provider was reached: its stream framing and error shape are the answer's. */
  carrier: Carrier;
  /** The format the provider answered in. */
  format: WireFormat;
  /** How the answer is translated back to the client's format; undefined when it passes through. */
  translated: AnswerTranslation<F> | undefined;
}

export interface AttemptOptions<F extends WireFormat> {
  /** What the request's translations need (src/dialects/: the request's turn). */
  turn: TurnOf[F];
  cancellation: Cancellation;
  onAttempt(attempt: Attempt): void;
  onWarning(message: string): void;
}

/** The model asked for, then its usable fallbacks (never the echo model), each once. */
function candidatesFor(ctx: AttemptContext, model: ModelEntry): ModelEntry[] {
  const candidates: ModelEntry[] = [model];
  for (const id of model.fallbacks) {
    const fallback = ctx.model(id);
    if (fallback !== undefined && fallback.provider !== 'llmux' && !candidates.includes(fallback)) candidates.push(fallback);
  }
  return candidates;
}

/**
 * The request, held for as long as an attempt may still build a body from it. Once the last
 * candidate's body is built it is let go (`request` becomes undefined): an upstream that takes its
 * time to answer then holds only the bytes being sent, not a 200 KB agent turn's parsed objects,
 * which every garbage collection in the meantime would otherwise have to copy.
 */
export interface HeldRequest<F extends WireFormat> {
  request: ClientRequestOf<F> | undefined;
}

/** One candidate's upstream request, built from the held request. */
interface Prepared<F extends WireFormat> {
  format: WireFormat;
  call: UpstreamCall;
  /** The path and query under the carrier's endpoint. */
  target: string;
  body: string | readonly Buffer[];
  translated: AnswerTranslation<F> | undefined;
  /** The request itself, for a provider answered in-process (the echo model reads it). */
  client: ClientRequestOf<WireFormat> | undefined;
}

/**
 * Builds `candidate`'s call, body and headers; `last`: no later candidate needs the request, which
 * is let go. A function of its own, so nothing of the request stays in the attempts' frame while
 * they wait on the upstream.
 */
function prepare<F extends WireFormat>(held: HeldRequest<F>, candidate: ModelEntry, carrier: Carrier, last: boolean, options: AttemptOptions<F>): Prepared<F> {
  const request = held.request;
  if (request === undefined) throw new Error('the request was let go before its last attempt was built');
  if (last) held.request = undefined;
  const format = upstreamFormatFor(carrier.provider, request.format);
  const call: UpstreamCall = { upstreamId: candidate.upstream_id, format, stream: request.stream, formatHeaders: dialects[format].formatHeaders(request) };
  const { body, translated }: UpstreamBody<F> = buildUpstreamBody(request, format, candidate, options.turn, options.onWarning, carrier.envelope(call), carrier.provider);
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

export async function sendWithFallbacks<F extends WireFormat>(
  ctx: AttemptContext,
  held: HeldRequest<F>,
  model: ModelEntry,
  options: AttemptOptions<F>,
): Promise<Answered<F>> {
  const { cancellation } = options;
  const { retry } = ctx;
  let lastError: GatewayError | undefined;
  const candidates = candidatesFor(ctx, model).filter((candidate) => ctx.provider(candidate.provider) !== undefined);
  for (const [index, candidate] of candidates.entries()) {
    const provider = ctx.provider(candidate.provider) as ProviderConfig;
    const carrier = ctx.carriers.of(provider);
    let prepared: Prepared<F>;
    try {
      prepared = prepare(held, candidate, carrier, index === candidates.length - 1, options);
    } catch (err) {
      // A request this provider can't take (say n > 1 for a messages upstream): refuse it when it
      // is the model asked for, else try the next fallback.
      if (candidate === model) throw err;
      continue;
    }
    const { format, call, target, body, translated, client } = prepared;
    // A stale credential (src/platforms/platform.ts `renew`) earns one more attempt per candidate.
    let renewed = false;
    for (let attempt = 1; attempt <= retry.attempts; attempt++) {
      if (cancellation.cancelled) throw new ClientClosedError();
      const started = ctx.now();
      let response: UpstreamResponse;
      // Each attempt is authorised afresh (a signature carries its time; a token may have been renewed).
      const outgoing: OutgoingRequest = { call, target, body, headers: carrier.headers(call) };
      try {
        const pending = authorise(ctx, carrier, outgoing);
        if (pending !== undefined) await pending;
        response = await ctx.transport.send({
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
      } catch (err) {
        if (err instanceof ClientClosedError) {
          options.onAttempt({ model: candidate.id, provider: provider.id, error: 'client_closed', ms: ctx.now() - started });
          throw err;
        }
        const error = err instanceof GatewayError ? err : upstreamFailed(`Provider "${provider.id}" failed`, { retryable: true, cause: err });
        options.onAttempt({ model: candidate.id, provider: provider.id, error: error.code, ms: ctx.now() - started });
        if (!(error instanceof UpstreamError) || !error.retryable) throw error;
        lastError = error;
        if (attempt < retry.attempts) await backoff(ctx, attempt, undefined, cancellation);
        continue;
      }
      const status = response.statusCode ?? 502;
      options.onAttempt({ model: candidate.id, provider: provider.id, status, ms: ctx.now() - started });
      if (status >= 400 && !renewed && carrier.renew?.(status, outgoing) === true) {
        renewed = true;
        response.resume();
        attempt -= 1;
        continue;
      }
      if (!RETRYABLE_STATUS.has(status)) return { response, model: candidate, provider, carrier, format, translated };
      const retryAfterMs = parseRetryAfter(response.headers['retry-after'], ctx.now());
      lastError = await upstreamErrorOf(response, carrier, ctx.idleTimeoutMs, ctx.redact);
      if (retryAfterMs !== undefined && retryAfterMs > retry.maxRetryAfterMs) break; // this provider asks for too long a wait
      if (attempt < retry.attempts) await backoff(ctx, attempt, retryAfterMs, cancellation);
    }
  }
  throw lastError ?? upstreamFailed(`No provider could be reached for model "${model.id}"`);
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
