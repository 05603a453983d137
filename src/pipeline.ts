/**
 * One model request, top to bottom:
 *
 *   authenticate -> format headers -> body -> validate -> model -> permission -> limits
 *     -> provider (retries, fallbacks: src/providers/attempts.ts)
 *     -> answer (stream or whole; same format passes bytes through, else translated: src/relay/)
 *     -> usage settled against tokens/min -> the log record
 *
 * The route gives the client's format; the provider gives the upstream's. What differs between
 * formats is looked up in the dialect table (src/dialects/), never branched on here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config, ModelEntry } from './config-types.ts';
import type { Catalog } from './catalog/catalog.ts';
import type { KeyStore } from './auth/key-store.ts';
import { authenticate, checkModelAllowed } from './auth/authenticate.ts';
import { limitsFor } from './auth/key-record.ts';
import type { Limiter } from './limits/limiter.ts';
import type { ClientRequestOf, TokenUsage, WireFormat } from './formats/wire.ts';
import { estimateRequestTokens } from './formats/estimate.ts';
import { dialects } from './dialects/index.ts';
import { translationFor } from './translate/index.ts';
import { totalTokens } from './translate/usage.ts';
import { costOf } from './usage/cost.ts';
import { modelNotFound, upstreamFailed } from './errors.ts';
import { parseJsonBody, readBody } from './http/body.ts';
import { onClose } from './http/respond.ts';
import { rateLimitError, setRateLimitHeaders } from './http/rate-limit.ts';
import { createCancellation } from './providers/upstream.ts';
import type { Cancellation } from './providers/upstream.ts';
import { sendWithFallbacks } from './providers/attempts.ts';
import type { Answered, AttemptContext } from './providers/attempts.ts';
import { upstreamErrorOf } from './providers/upstream-errors.ts';
import { createPassThroughRelay, createTranslatedRelay } from './relay/relays.ts';
import { relayStream } from './relay/stream.ts';
import { relayWhole } from './relay/whole.ts';
import type { RequestRecord } from './request-record.ts';

/** What the pipeline needs from the gateway around it. */
export interface PipelineContext {
  config: Config;
  catalog: Catalog;
  keys: KeyStore;
  limiter: Limiter;
  attempts: AttemptContext;
  now(): number;
}

/** The values that travel together from the provider's answer to the client's. */
interface Exchange<F extends WireFormat> {
  request: ClientRequestOf<F>;
  answered: Answered;
  res: ServerResponse;
  cancellation: Cancellation;
  /** Input tokens estimated before any upstream counted them. */
  estimate: number;
  /** When the request went upstream, for the time to first byte. */
  startedMs: number;
  onWarning(message: string): void;
}

/** What answering taught us, for the log record. */
interface Outcome {
  usage: TokenUsage | undefined;
  ttfbMs: number | undefined;
  /** Why a stream did not complete. */
  streamError: string | undefined;
}

/**
 * Handles a model operation of the client format `format` (`POST /v1/chat/completions`,
 * `POST /v1/messages`). Throws GatewayError for anything refused before the answer starts.
 */
export async function handleModelRequest<F extends WireFormat>(
  ctx: PipelineContext,
  format: F,
  req: IncomingMessage,
  res: ServerResponse,
  record: RequestRecord,
): Promise<void> {
  const key = authenticate(req.headers, ctx.keys, ctx.now());
  record.keyId = key.id;
  const limits = limitsFor(key, ctx.config.tiers);
  const dialect = dialects[format];
  let request: ClientRequestOf<F>;
  let model: ModelEntry;
  try {
    const forwarded = dialect.readHeaders(req.headers);
    request = dialect.readRequest(parseJsonBody(await readBody(req, ctx.config.limits.maxBodyBytes)), forwarded, ctx.config.validation === 'strict');
    record.model = request.body.model;
    record.stream = request.body.stream === true;
    const found = ctx.catalog.get(request.body.model);
    if (found === undefined) throw modelNotFound(request.body.model);
    checkModelAllowed(key, found.id, req.headers);
    model = found;
  } catch (err) {
    // An authenticated refusal carries the key's rate-limit headers too (llmux.md section 3); the
    // state is read only then, so an admitted request pays for it once, at admission.
    if (!res.headersSent) setRateLimitHeaders(res, ctx.limiter.peek(key.id, limits).state);
    throw err;
  }

  const estimate = estimateRequestTokens(request.body);
  const admission = ctx.limiter.admit(key.id, limits, estimate);
  if (!admission.ok) throw rateLimitError(admission);
  setRateLimitHeaders(res, admission.state);
  // Released exactly once, whatever happens: the limiter ignores later calls.
  onClose(res, () => admission.release());

  const cancellation = createCancellation();
  onClose(res, () => {
    if (!res.writableFinished) cancellation.cancel();
  });
  const onWarning = (message: string): void => {
    (record.warnings ??= []).push(message);
  };
  let outcome: Outcome | undefined;
  let answeredBy = model;
  try {
    const startedMs = ctx.now();
    const answered = await sendWithFallbacks(ctx.attempts, request, model, {
      cancellation,
      onAttempt: (attempt) => record.attempts.push(attempt),
      onWarning,
    });
    answeredBy = answered.model;
    record.provider = answered.provider.id;
    if (answered.model.id !== model.id) record.model = answered.model.id;
    record.translated = answered.format !== request.format;
    outcome = await answer(ctx, { request, answered, res, cancellation, estimate, startedMs, onWarning });
  } finally {
    if (outcome?.usage !== undefined) {
      admission.settle(totalTokens(outcome.usage));
      record.usage = outcome.usage;
      record.costUsd = costOf(outcome.usage, answeredBy.pricing);
    } else if (!res.headersSent) {
      // Refused before any upstream work: nothing was consumed.
      admission.settle(0);
    }
  }
  if (outcome.ttfbMs !== undefined) record.ttfbMs = outcome.ttfbMs;
  if (outcome.streamError !== undefined) record.streamError = outcome.streamError;
}

/** Answers the client from the provider's answer: an error, a whole answer, or a stream. */
async function answer<F extends WireFormat>(ctx: PipelineContext, exchange: Exchange<F>): Promise<Outcome> {
  const { request, answered, res } = exchange;
  const { response: upstream, provider } = answered;
  const { limits } = ctx.config;
  if ((upstream.statusCode ?? 500) >= 400) throw await upstreamErrorOf(upstream, provider, limits.streamIdleTimeoutMs);
  let ttfbMs: number | undefined;
  const onFirstByte = (): void => {
    ttfbMs = ctx.now() - exchange.startedMs;
  };
  if (request.body.stream !== true) {
    const usage = await relayWhole(res, {
      upstream,
      provider,
      clientFormat: request.format,
      upstreamFormat: answered.format,
      model: answered.model.id,
      cancellation: exchange.cancellation,
      idleTimeoutMs: limits.streamIdleTimeoutMs,
      onWarning: exchange.onWarning,
      onArrived: onFirstByte,
    });
    return { usage, ttfbMs, streamError: undefined };
  }

  const contentType = String(upstream.headers['content-type'] ?? '');
  if (!contentType.includes('text/event-stream')) {
    upstream.resume();
    throw upstreamFailed(`Provider "${provider.id}" answered a streamed request without a stream (content-type "${contentType.slice(0, 60)}")`);
  }
  const client = dialects[request.format];
  const includeUsage = client.wantsStreamUsage(request.body);
  const translation = translationFor(request.format, answered.format);
  const model = answered.model.id;
  const result = await relayStream(upstream, res, (write) => (translation === undefined
    ? createPassThroughRelay(answered.format, write, { dropUsageChunk: !includeUsage, model })
    : createTranslatedRelay(answered.format, translation.stream({ write, estimatedInputTokens: exchange.estimate, includeUsage, onWarning: exchange.onWarning, model }))), {
    pingFrame: client.pingFrame,
    pingIntervalMs: limits.pingIntervalMs,
    idleTimeoutMs: limits.streamIdleTimeoutMs,
    now: ctx.now,
    onStart: onFirstByte,
  });
  return { usage: result.usage, ttfbMs, streamError: result.error };
}
