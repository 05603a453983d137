/**
 * One model request, top to bottom:
 *
 *   authenticate -> budget -> format headers -> limits a body can't change -> body (held against
 *     the body budget until the provider answers) -> validate -> the model that answers (aliases,
 *     then routes over the request's traits: src/routing/resolve.ts) -> permission, on that model
 *     -> the turn begins (what the request builds on resolved: Responses' previous_response_id)
 *     -> context length -> limits with its reservation -> its worst case held against the budget
 *     -> attempts (the model's deployments, provider keys, retries, fallbacks:
 *        src/providers/attempts.ts over src/routing/; a same-format provider is sent the client's
 *        bytes with its model id spliced in) -> the request is let go
 *     -> answer (stream or whole; same format passes bytes through, else translated: src/relay/)
 *     -> the answering attempt ended (its deployment's in-flight lease freed, its tokens counted)
 *     -> usage, held to what the request could have used, settled against tokens/min and the
 *        budget and priced -> the answer kept (Responses' store) -> the
 *        log record (the gateway then writes the log line, the metrics and the usage ledger when
 *        the response closes)
 *
 * The route gives the client's format; the provider gives the upstream's. What differs between
 * formats is looked up in the dialect table (src/dialects/), never branched on here.
 *
 * A request whose body was read but that is refused before admission is charged to the key's
 * budget for unadmitted work (src/limits/limiter.ts), so refused bodies cannot cost the process
 * CPU without bound; a key out of that budget is refused before its next body is read.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config, ModelEntry } from '../config/types.ts';
import type { Catalog } from '../catalog/catalog.ts';
import type { KeyStore } from '../auth/key-store.ts';
import { authenticate, checkModelAllowed } from '../auth/authenticate.ts';
import type { KeyRecord } from '../auth/key-record.ts';
import { budgetFor, limitsFor } from '../auth/key-record.ts';
import type { Admission, Limiter } from '../limits/limiter.ts';
import type { ClientRequestOf, TokenUsage, WireFormat } from '../formats/wire.ts';
import { dialects } from '../dialects/index.ts';
import type { Dialect, DialectServices, RequestFacts, Turn } from '../dialects/index.ts';
import { readClientRequest } from '../dialects/read.ts';
import { boundUsage, totalTokens } from '../formats/usage.ts';
import { costOf } from '../usage/cost.ts';
import { BUDGET_REMAINING_HEADER, budgetExceededError, budgetRemainingHeader, currentBudgetStatus, worstCaseUsd } from '../usage/budget.ts';
import type { BudgetHolds } from '../usage/budget.ts';
import type { UsageLedger } from '../usage/ledger.ts';
import { GatewayError, modelNotFound, upstreamFailed } from '../common/errors.ts';
import { readJsonObject } from '../http/body.ts';
import type { JsonRecall } from '../common/json-recall.ts';
import { readKeyedBody } from '../http/admission.ts';
import type { BodyAdmission } from '../http/admission.ts';
import type { BodyBudget, BodyClaim } from '../http/body-budget.ts';
import { onClose, setHeadHeader } from '../http/respond.ts';
import { queryOf } from '../http/router.ts';
import { rateLimitError, setRateLimitHeaders } from '../http/rate-limit.ts';
import { createCancellation } from '../providers/upstream.ts';
import type { Cancellation } from '../providers/upstream.ts';
import { sendWithFallbacks } from '../providers/attempts.ts';
import type { Answered, AttemptContext, HeldRequest } from '../providers/attempts.ts';
import { upstreamFormatFor } from '../providers/upstream-body.ts';
import { upstreamErrorOf } from '../providers/upstream-errors.ts';
import { createPassThroughRelay, createTranslatedRelay } from '../relay/relays.ts';
import { relayStream } from '../relay/stream.ts';
import { relayWhole } from '../relay/whole.ts';
import { passThroughCarry } from '../relay/carry.ts';
import type { PassThroughCarry } from '../relay/carry.ts';
import type { Resolution, Resolver } from '../routing/index.ts';
import { jsonArrayFraming } from '../relay/json-array.ts';
import type { RequestRecord } from './request-record.ts';

/** What the pipeline needs from the gateway around it. */
export interface PipelineContext {
  config: Config;
  catalog: Catalog;
  keys: KeyStore;
  limiter: Limiter;
  /** Request bodies held at once, per key and in all (src/http/body-budget.ts). */
  bodies: BodyBudget;
  /** Registers an open stream to be cut with an in-stream error when the gateway stops; returns the unregistering function. */
  registerStream(cut: (message: string) => void): () => void;
  attempts: AttemptContext;
  /** The model that answers a requested id: config `aliases`, then `routes` (llmux.md section 10). */
  resolver: Resolver;
  /** Where answered requests' usage is kept; the budget check reads spend from it. */
  usage: UsageLedger;
  /** Each admitted request's worst case held against its key's budget (src/usage/budget.ts). */
  budgets: BudgetHolds;
  /** What formats keep between requests (stored responses, the reasoning seal). */
  state: DialectServices;
  /** Each key's last long body per format, so its next turn reads only what changed (src/common/json-recall.ts). */
  recall: JsonRecall;
  now(): number;
}

/**
 * What the answer needs to know of the request, read from it before it is sent: the request itself
 * (its parsed body, its bytes) is let go once the provider has answered, so a stream open for
 * minutes does not hold a 200 KB agent turn.
 */
interface Asked {
  format: WireFormat;
  stream: boolean;
  /** The client asked for a usage report at the end of its stream. */
  includeUsage: boolean;
  /** The client's output cap, if it gave one: with the model's limits, the most usage it can be charged. */
  maxTokens: number | undefined;
  /** How the client reads a stream that is not server-sent events (Gemini's JSON array). */
  framing: ClientRequestOf<WireFormat>['framing'];
}

/** The values that travel together from the provider's answer to the client's. */
interface Exchange<F extends WireFormat> {
  asked: Asked;
  answered: Answered<F>;
  res: ServerResponse;
  cancellation: Cancellation;
  /** Input tokens estimated before any upstream counted them. */
  estimate: number;
  /** When the request went upstream, for the time to first byte. */
  startedMs: number;
  /** The time to the answer's first byte, once it has come. */
  ttfbMs: number | undefined;
  onWarning(message: string): void;
  /** A chat client's passed-through answer: its carried state read for the next turn (src/relay/carry.ts). */
  carry: PassThroughCarry | undefined;
}

/** What answering taught us, for the log record: a relay's result as it is (src/relay/). */
interface Outcome {
  usage: TokenUsage | undefined;
  /** Why a stream did not complete. */
  error?: string | undefined;
  /** The answer as the client got it, when it was assembled (see Turn.keep). */
  answer: unknown;
}

/**
 * Handles a model operation of the client format `format` (one of its dialect's routes:
 * `POST /v1/chat/completions`, `POST /v1/messages`, `POST /v1/responses`; `params`: the route's).
 * Rejects with a GatewayError for anything refused before the answer starts.
 */
export function handleModelRequest<F extends WireFormat>(
  ctx: PipelineContext,
  format: F,
  req: IncomingMessage,
  res: ServerResponse,
  record: RequestRecord,
  params: Readonly<Record<string, string>> = {},
): Promise<void> {
  // Two frames: the first returns once the provider has answered, so what admission and the
  // attempts named (the request's facts, its turn, the route's params) is not held by a frame
  // suspended for as long as a stream stays open; the second holds only what the answer needs.
  return admitAndSend(ctx, format, req, res, record, params).then(answerAndSettle);
}

/** A request the provider has answered: what answering it and settling its usage need, and nothing more. */
interface Sent<F extends WireFormat> extends Exchange<F> {
  ctx: PipelineContext;
  record: RequestRecord;
  admission: Admission;
  /** Keeps the answer as the client got it, for a later request (see Turn.keep). */
  keep: Turn<F>['keep'];
}

/** Reads, admits and sends the request; resolves once a provider has answered it. */
async function admitAndSend<F extends WireFormat>(
  ctx: PipelineContext,
  format: F,
  req: IncomingMessage,
  res: ServerResponse,
  record: RequestRecord,
  params: Readonly<Record<string, string>>,
): Promise<Sent<F>> {
  record.format = format;
  const dialect = dialects[format];
  const query = queryOf(req.url ?? '');
  const key = authenticate(req.headers, ctx.keys, ctx.now(), { sources: dialect.credentials, query });
  record.keyId = key.id;
  // Awaited only when there is something to wait for: each await is a turn of the microtask queue.
  const overBudget = checkBudget(ctx, key, res);
  if (overBudget !== undefined) await overBudget;
  let admitted: Admitted<F> | undefined;
  try {
    admitted = await readAndAdmit(ctx, dialect, key, req, res, record, { params, query });
  } catch (err) {
    // An authenticated refusal carries the key's rate-limit headers too (llmux.md section 3); the
    // state is read only then, so an admitted request pays for it once, at admission.
    if (!res.headersSent) setRateLimitHeaders(res, (await ctx.limiter.peek(key.id, limitsFor(key, ctx.config.tiers))).state);
    throw err;
  }
  const { model, estimate, admission, claim, resolution, reservedTokens, conversation } = admitted;
  const { keep, translation } = admitted.turn;
  const asked: Asked = {
    format,
    stream: admitted.request.stream,
    includeUsage: dialect.wantsStreamUsage(admitted.request.body),
    maxTokens: dialect.maxTokens(admitted.request.body),
    framing: admitted.request.framing,
  };
  // From here the request is only held for building upstream bodies, and let go once the last is built.
  const held: HeldRequest<F> = { request: admitted.request };
  admitted = undefined;
  setRateLimitHeaders(res, admission.state);
  const cancellation = createCancellation();
  releaseAdmissionOnClose(res, admission, cancellation);
  const onWarning = (message: string): void => {
    (record.warnings ??= []).push(message);
  };
  let answered: Answered<F> | undefined;
  try {
    const startedMs = ctx.now();
    answered = await sendWithFallbacks(ctx.attempts, held, model, {
      turn: translation,
      cancellation,
      // The first attempt in an array of its own size: a push into the empty one (or a spread) gives
      // it room for 16 (~150 B), held by the record as long as the stream is open.
      onAttempt: (attempt) => {
        if (record.attempts.length === 0) record.attempts = [attempt];
        else record.attempts.push(attempt);
      },
      onWarning,
      keyId: key.id,
      answerAs: resolution.answerAs,
      conversation: conversation.conversation,
      reservedTokens,
    });
    // The provider has answered: no attempt sends the body again. Its bytes go, and so does their
    // hold on the body budget.
    claim.release();
    held.request = undefined;
    conversation.drop();
    record.provider = answered.provider.id;
    record.model = answered.model.id;
    record.deployment = answered.deployment.id;
    if (answered.key !== undefined) record.providerKey = answered.key.label;
    record.translated = answered.format !== format;
    const carry = answered.translated === undefined ? passThroughCarry(format, answered.format, translation, answered.provider, answered.model) : undefined;
    return { ctx, record, admission, keep, asked, answered, res, cancellation, estimate, startedMs, ttfbMs: undefined, onWarning, carry };
  } catch (err) {
    // Refused before any upstream work: nothing was consumed.
    answered?.end(undefined);
    if (!res.headersSent) admission.settle(0);
    throw err;
  }
}

/**
 * One listener, held as long as the response is open (made here, so its closure holds these three
 * and nothing else of the request). The admission is released exactly once, whatever happens: the
 * limiter ignores later calls.
 */
function releaseAdmissionOnClose(res: ServerResponse, admission: Admission, cancellation: Cancellation): void {
  onClose(res, () => {
    admission.release();
    if (!res.writableFinished) cancellation.cancel();
  });
}

/** Answers the client, then ends the answering attempt, settles the usage and keeps the answer. */
async function answerAndSettle<F extends WireFormat>(sent: Sent<F>): Promise<void> {
  const { res, record, admission, asked, answered, keep } = sent;
  let outcome: Outcome | undefined;
  try {
    outcome = await answer(sent.ctx, sent);
  } finally {
    // Once, however the answer ended: the deployment's lease goes, what it used replaces its reservation.
    answered.end(outcome === undefined ? undefined : {
      ...(outcome.usage === undefined ? {} : { tokens: totalTokens(outcome.usage) }),
      ...responseIdOf(dialects[asked.format].answerId(outcome.answer)),
    });
    if (outcome?.usage !== undefined) {
      outcome.usage = usageWithin(outcome.usage, answered.model, asked.maxTokens, sent.onWarning);
      admission.settle(totalTokens(outcome.usage));
      record.usage = outcome.usage;
      record.costUsd = costOf(outcome.usage, answered.model.pricing);
      record.budgetHold?.settle(record.costUsd);
    } else if (!res.headersSent) {
      // Refused before any upstream work: nothing was consumed.
      admission.settle(0);
    }
  }
  if (sent.ttfbMs !== undefined) record.ttfbMs = sent.ttfbMs;
  if (outcome.error !== undefined) record.streamError = outcome.error;
  // The client has its answer: a store that fails now costs the next request its history, not this one.
  try {
    // Awaited only when there is something to wait for: each await is a turn of the microtask queue.
    const kept = keep(outcome.answer);
    if (kept !== undefined) await kept;
  } catch (err) {
    sent.onWarning(`the answer could not be stored: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Refuses a key whose budget for the current UTC period is spent (403 budget_exceeded), and
 * otherwise tells the client what is left. Checked once, when the request arrives: a request in
 * flight when the budget runs out finishes (llmux.md section 7). Synchronous unless it refuses
 * (the refusal's rate-limit headers may need the state server): the refusal is the promise returned.
 */
function checkBudget(ctx: PipelineContext, key: KeyRecord, res: ServerResponse): Promise<never> | undefined {
  const budget = budgetFor(key, ctx.config.tierBudgets);
  if (budget === undefined) return undefined;
  const status = currentBudgetStatus(budget, key.id, ctx.usage, ctx.now());
  if (!status.exceeded) {
    setHeadHeader(res, BUDGET_REMAINING_HEADER, budgetRemainingHeader(status));
    return undefined;
  }
  return (async () => {
    // A refusal of an authenticated request carries the rate-limit headers too (llmux.md section 3).
    setRateLimitHeaders(res, (await ctx.limiter.peek(key.id, limitsFor(key, ctx.config.tiers))).state);
    throw budgetExceededError(status);
  })();
}

/** A request read, validated and admitted, with what its admission counted. */
interface Admitted<F extends WireFormat> {
  /** The request as it goes on: what it builds on resolved by its turn. */
  request: ClientRequestOf<F>;
  turn: Turn<F>;
  /** The model that answers, and how the requested id led to it. */
  model: ModelEntry;
  resolution: Resolution;
  /** Input tokens estimated before any upstream counted them. */
  estimate: number;
  admission: Admission;
  /** What the admission reserved against tokens/min: the deployment's window counts it too while the request runs. */
  reservedTokens: number;
  /** The request's conversation, for sticky routing: read at most once, then let go with the body (`drop`). */
  conversation: Pick<RequestFacts, 'conversation' | 'drop'>;
  /** The body's hold on the body budget. */
  claim: BodyClaim;
}

/** `{ responseId }` when there is one, for the answering attempt's end. */
function responseIdOf(id: string | undefined): { responseId?: string } {
  return id === undefined ? {} : { responseId: id };
}

/**
 * Reads the body (held against the body budget until the answer ends), validates it, finds the
 * model and admits the request with its reservation. A key at a limit no body can change is
 * refused before its body is read; a body read and then refused is charged as unadmitted work.
 */
async function readAndAdmit<F extends WireFormat>(
  ctx: PipelineContext,
  dialect: Dialect<F>,
  key: KeyRecord,
  req: IncomingMessage,
  res: ServerResponse,
  record: RequestRecord,
  target: { params: Readonly<Record<string, string>>; query: string },
): Promise<Admitted<F>> {
  const forwarded = dialect.readHeaders(req.headers);
  const limits = limitsFor(key, ctx.config.tiers);
  const { bytes, claim, refused } = await readKeyedBody(req, res, bodyAdmission(ctx), { id: key.id, limits }, 'model');
  try {
    // Its long texts stay bytes; what routing and admission read of it are its facts (src/dialects/read.ts).
    const { request: arrived, facts } = readClientRequest(dialect, (lazy) => readJsonObject(bytes, lazy, { memory: ctx.recall, scope: `${key.id}\u0000${dialect.format}` }), {
      forwarded,
      strict: ctx.config.validation === 'strict',
      params: target.params,
      query: target.query,
    });
    record.model = arrived.model;
    record.stream = arrived.stream;
    // The model that answers (aliases, then routes), over the facts of the body as it arrived.
    const resolution = ctx.resolver.resolve(arrived.model, {
      clientFormat: dialect.format,
      keyTier: key.tier,
      traits: facts.traits,
      inputTokens: facts.inputTokens,
    });
    const model = ctx.catalog.get(resolution.model);
    if (model === undefined) throw modelNotFound(arrived.model);
    record.requestedModel = arrived.model;
    // On the model that answers: neither an alias nor a route widens what a key reaches.
    checkModelAllowed(key, model.id, req.headers);
    const provider = ctx.attempts.provider(model.provider);
    const begun = dialect.beginTurn(arrived, {
      keyId: key.id,
      services: ctx.state,
      passThrough: provider !== undefined && upstreamFormatFor(provider, arrived.format) === arrived.format,
      providerId: provider?.id,
      conversation: facts.conversation,
      now: ctx.now,
    });
    // Most turns begin at once (src/responses/state.ts `withSealer`): no await, no microtask.
    const turn = begun instanceof Promise ? await begun : begun;
    const request = turn.request;
    // A turn that resolved what the request builds on (Responses) has more input than arrived.
    const estimate = request.body === arrived.body ? facts.inputTokens() : dialect.estimate(request.body, request.raw?.texts);
    if (estimate > model.context_length) throw contextTooLong(model, estimate);
    const reservedTokens = estimate + outputReservation(dialect.maxTokens(request.body), model);
    // One round trip to the state server when the limits are shared; immediate (and not awaited) otherwise.
    const admitting = ctx.limiter.admit(key.id, limits, reservedTokens);
    const admission = admitting instanceof Promise ? await admitting : admitting;
    if (!admission.ok) throw rateLimitError(admission);
    // Released by the usage recorder once the request's cost is in the ledger (src/usage/budget.ts).
    const budget = budgetFor(key, ctx.config.tierBudgets);
    if (budget !== undefined) {
      try {
        record.budgetHold = await ctx.budgets.reserve(key.id, budget, worstCaseUsd(model.pricing, estimate, reservedTokens - estimate));
      } catch (err) {
        admission.settle(0);
        admission.release();
        throw err;
      }
    }
    return { request, turn, model, resolution, estimate, admission, reservedTokens, conversation: facts, claim };
  } catch (err) {
    refused();
    throw err;
  }
}

/** What admitting a request body needs (src/http/admission.ts), from the pipeline's context. */
export function bodyAdmission(ctx: PipelineContext): BodyAdmission {
  return { limiter: ctx.limiter, bodies: ctx.bodies, maxBodyBytes: ctx.config.limits.maxBodyBytes, bodyTimeoutMs: ctx.config.limits.bodyTimeoutMs };
}

/** Usage held to what the request could have used of `model` (llmux.md section 7), with a warning when it was more. */
function usageWithin(usage: TokenUsage, model: ModelEntry, maxTokens: number | undefined, onWarning: (message: string) => void): TokenUsage {
  const bounded = boundUsage(usage, { inputTokens: model.context_length, outputTokens: maxTokens ?? model.max_output_tokens });
  if (bounded.clamped !== undefined) onWarning(bounded.clamped);
  return bounded.usage;
}

/**
 * The output a request reserves against tokens/min: its `max_tokens` (or `max_completion_tokens`),
 * else the model's output limit, which is all it may produce either way.
 */
function outputReservation(maxTokens: number | undefined, model: ModelEntry): number {
  return Math.min(maxTokens ?? model.max_output_tokens, model.max_output_tokens);
}

/** 400 context_length_exceeded: the estimated input alone is more than the model can take. */
function contextTooLong(model: ModelEntry, estimate: number): GatewayError {
  return new GatewayError(
    400,
    'invalid_request_error',
    'context_length_exceeded',
    `This request's input is about ${estimate} tokens (llmux's estimate, about 4 characters a token), more than the ${model.context_length}-token context length of model "${model.id}"; shorten the conversation or pick a model with a longer context`,
  );
}

/**
 * Answers the client from the provider's answer: an error, a whole answer, or a stream. Not async:
 * its promise is the relay's own, so a stream's life holds no suspended frame of it.
 */
function answer<F extends WireFormat>(ctx: PipelineContext, exchange: Exchange<F>): Promise<Outcome> {
  const { asked, answered, res } = exchange;
  const { response: upstream, provider, carrier } = answered;
  const { limits } = ctx.config;
  const { redact } = ctx.attempts;
  if ((upstream.statusCode ?? 500) >= 400) return upstreamErrorOf(upstream, carrier, limits.streamIdleTimeoutMs, redact).then(thrown);
  const onFirstByte = (): void => {
    exchange.ttfbMs = ctx.now() - exchange.startedMs;
  };
  if (!asked.stream) {
    return relayWhole(res, {
      upstream,
      provider,
      clientFormat: asked.format,
      upstreamFormat: answered.format,
      translated: answered.translated,
      modelId: answered.answerAs,
      estimatedInputTokens: exchange.estimate,
      cancellation: exchange.cancellation,
      idleTimeoutMs: limits.streamIdleTimeoutMs,
      onWarning: exchange.onWarning,
      onArrived: onFirstByte,
      redact,
      carry: exchange.carry,
    });
  }

  // The platform's framing as server-sent events (identity on http).
  const events = carrier.events(upstream);
  if (events === undefined) {
    upstream.resume();
    const contentType = String(upstream.headers['content-type'] ?? '');
    throw upstreamFailed(`Provider "${provider.id}" answered a streamed request without a stream (content-type "${redact(contentType).slice(0, 60)}")`);
  }
  const client = dialects[asked.format];
  const { includeUsage } = asked;
  const { translated } = answered;
  return relayStream(events, res, (write) => (translated === undefined
    ? createPassThroughRelay(asked.format, write, { dropUsageChunk: !includeUsage, model: answered.answerAs, redact, observe: exchange.carry?.stream() })
    : createTranslatedRelay(answered.format, translated.stream({ write, estimatedInputTokens: exchange.estimate, includeUsage, onWarning: exchange.onWarning }), redact)), {
    pingFrame: client.pingFrame,
    pingIntervalMs: limits.pingIntervalMs,
    idleTimeoutMs: limits.streamIdleTimeoutMs,
    now: ctx.now,
    onStart: onFirstByte,
    register: ctx.registerStream,
    redact,
    framing: asked.framing === 'json-array' ? jsonArrayFraming() : undefined,
  });
}

/** Throws what it is given: an upstream's error answer, once read, as the request's error. */
function thrown(error: unknown): never {
  throw error;
}
