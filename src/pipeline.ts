/**
 * One model request, top to bottom:
 *
 *   authenticate -> version header -> body -> validate -> model -> permission -> limits
 *     -> echo | upstream (retries, fallbacks; same format passes bytes through, else translate)
 *     -> usage settled against tokens/min -> one log line
 *
 * Every stage is a plain function with explicit inputs. The route gives the client's format; the
 * provider's `format` gives the upstream's; when they differ the translators of src/translate/
 * sit in between.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config, ModelEntry, ProviderConfig, TierLimits } from './config-types.ts';
import type { Catalog } from './catalog/catalog.ts';
import { resolveApiKey } from './catalog/providers.ts';
import type { KeyRecord, KeyStore } from './auth/key-store.ts';
import { authenticate, checkModelAllowed } from './auth/authenticate.ts';
import type { Limiter, LimitSet } from './limits/limiter.ts';
import { rateLimitError } from './limits/limiter.ts';
import type { ChatRequest, MessagesRequest, TokenUsage, WireFormat } from './formats/wire.ts';
import { validateMessagesRequest } from './formats/messages.ts';
import { validateChatRequest } from './formats/chat.ts';
import { estimateRequestTokens } from './formats/estimate.ts';
import { GatewayError, chatStreamError, invalidParameters, messagesStreamError, modelNotFound } from './http/errors.ts';
import { parseJsonBody, readBody } from './http/body.ts';
import { onClose, sendJson, startEventStream } from './http/respond.ts';
import type { UpstreamClient } from './providers/upstream.ts';
import { UpstreamError, createCancellation, readUpstreamBody } from './providers/upstream.ts';
import type { Cancellation } from './providers/upstream.ts';
import { runEcho } from './providers/echo.ts';
import { messagesRequestToChat, messagesResponseToChat } from './translate/messages-to-chat.ts';
import type { UpstreamModel } from './translate/messages-to-chat.ts';
import { chatRequestToMessages, chatResponseToMessages } from './translate/chat-to-messages.ts';
import { createChatToMessagesStream } from './translate/stream-chat-to-messages.ts';
import type { StreamTranslator } from './translate/stream-chat-to-messages.ts';
import { createMessagesToChatStream } from './translate/stream-messages-to-chat.ts';
import { createSseParser } from './sse/parser.ts';
import { createUsageTap } from './sse/usage-tap.ts';
import { fromChatUsage, fromMessagesUsage, totalTokens } from './translate/usage.ts';
import { peekUsage } from './formats/usage-peek.ts';

/** What the pipeline needs from the gateway around it. */
export interface PipelineContext {
  config: Config;
  catalog: Catalog;
  keys: KeyStore;
  limiter: Limiter;
  upstream: UpstreamClient;
  now(): number;
  /** Random in [0, 1), injectable for retry jitter. */
  random(): number;
}

/** What one request leaves in the request log. */
export interface RequestRecord {
  /** The matched route's pattern, for metrics. */
  route?: string;
  keyId?: string;
  model?: string;
  provider?: string;
  ttfbMs?: number;
  usage?: TokenUsage;
  costUsd?: number;
  stream?: boolean;
  translated?: boolean;
  attempts: Array<{ model: string; provider: string; status?: number; error?: string; ms: number }>;
  /** Set when the answer failed after it started (in-stream error). */
  streamError?: string;
  /** The error code of a refused or failed request. */
  errorCode?: string;
}

const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';
const VERSION_FORMAT = /^\d{4}-\d{2}-\d{2}$/;
/** Upstream statuses worth another try before the client has a byte (llmux.md section 4). */
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504, 529]);
/** Upper bound on a non-streamed upstream answer we hold in memory. */
const MAX_UPSTREAM_BODY_BYTES = 64 * 1024 * 1024;

/** The limits that apply to a key: its tier's, overridden by its own. */
export function limitsFor(key: KeyRecord, tiers: Record<string, TierLimits>): LimitSet {
  const tier = tiers[key.tier] ?? tiers['basic'] as TierLimits;
  return {
    rpm: key.limits.rpm ?? tier.rpm,
    tpm: key.limits.tpm ?? tier.tpm,
    concurrency: key.limits.concurrency ?? tier.concurrency,
  };
}

/** Checks `alt-version` / `anthropic-version` on the messages operation; returns the value. */
export function checkVersionHeader(req: IncomingMessage): string {
  const raw = req.headers['anthropic-version'] ?? req.headers['alt-version'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === '') {
    throw invalidParameters('alt-version: header is required on /v1/messages (for example "alt-version: 2023-06-01"; "anthropic-version" is accepted too)');
  }
  if (!VERSION_FORMAT.test(value)) throw invalidParameters(`alt-version: "${value.slice(0, 40)}" must be a date like 2023-06-01`);
  return value;
}

function betaHeader(req: IncomingMessage): string | undefined {
  const raw = req.headers['anthropic-beta'] ?? req.headers['alt-beta'];
  const value = Array.isArray(raw) ? raw.join(',') : raw;
  return value === undefined || value === '' ? undefined : value;
}

/** Reads, parses and validates a model request body for the client's format. */
async function readRequest(ctx: PipelineContext, req: IncomingMessage, format: WireFormat, beta: string | undefined): Promise<MessagesRequest | ChatRequest> {
  const raw = parseJsonBody(await readBody(req, ctx.config.limits.maxBodyBytes));
  if (format === 'openai') return validateChatRequest(raw);
  // With Anthropic's interleaved-thinking beta the thinking budget may reach max_tokens.
  return validateMessagesRequest(raw, { interleavedThinking: beta?.includes('interleaved-thinking-2025-05-14') === true });
}

/**
 * Handles POST /v1/messages (format `anthropic`) and POST /v1/chat/completions (format `openai`).
 * Throws GatewayError for anything refused before the answer starts.
 */
export async function handleModelRequest(
  ctx: PipelineContext,
  clientFormat: WireFormat,
  req: IncomingMessage,
  res: ServerResponse,
  record: RequestRecord,
): Promise<void> {
  const key = authenticate(req.headers, ctx.keys, ctx.now());
  record.keyId = key.id;
  const version = clientFormat === 'anthropic' ? checkVersionHeader(req) : undefined;
  const beta = clientFormat === 'anthropic' ? betaHeader(req) : undefined;
  const body = await readRequest(ctx, req, clientFormat, beta);
  record.model = body.model;
  record.stream = body.stream === true;
  const model = ctx.catalog.get(body.model);
  if (model === undefined) throw modelNotFound(body.model);
  checkModelAllowed(key, model.id);

  const estimate = estimateRequestTokens(body as Record<string, unknown>);
  const admission = ctx.limiter.admit(key.id, limitsFor(key, ctx.config.tiers), estimate);
  if (!admission.ok) throw rateLimitError(admission);
  for (const name in admission.headers) res.setHeader(name, admission.headers[name] as string);
  // Released exactly once, whatever happens: the limiter ignores later calls.
  onClose(res, () => admission.release());

  let usage: TokenUsage | undefined;
  try {
    if (model.provider === 'llmux') {
      record.provider = 'llmux';
      const started = ctx.now();
      usage = await runEcho(clientFormat, body, res, {
        model: model.id,
        inputTokens: estimate,
        onFirstByte: () => { record.ttfbMs = ctx.now() - started; },
        isClosed: () => res.destroyed,
      });
    } else {
      usage = await forward(ctx, clientFormat, body, model, res, record, { version, beta, estimate });
    }
  } finally {
    if (usage !== undefined) {
      admission.settle(totalTokens(usage));
      record.usage = usage;
      const priced = ctx.catalog.get(record.model ?? '') ?? model;
      record.costUsd = (usage.inputTokens + usage.cacheReadTokens + usage.cacheCreationTokens) * priced.pricing.input_tokens_cost_per_million / 1e6
        + usage.outputTokens * priced.pricing.output_tokens_cost_per_million / 1e6;
    } else if (!res.headersSent) {
      // Refused before any upstream work: nothing was consumed.
      admission.settle(0);
    }
  }
}

interface ForwardOptions {
  version: string | undefined;
  beta: string | undefined;
  estimate: number;
}

/** The model a translator shapes a request for. */
export function upstreamModelOf(model: ModelEntry): UpstreamModel {
  return {
    upstreamId: model.upstream_id,
    reasoning: model.reasoning,
    maxTokensParam: model.max_tokens_param,
    replayReasoning: model.replay_reasoning,
    maxOutputTokens: model.max_output_tokens,
  };
}

/**
 * The upstream request body for this model, translated when the formats differ. A body nested so
 * deep that serialising it overflows the stack is the client's error, not ours.
 */
export function buildUpstreamBody(clientFormat: WireFormat, upstreamFormat: WireFormat, body: MessagesRequest | ChatRequest, model: ModelEntry): string {
  try {
    return serializeUpstreamBody(clientFormat, upstreamFormat, body, model);
  } catch (err) {
    if (err instanceof RangeError) throw invalidParameters('body: nests too deeply to be forwarded; flatten the request');
    throw err;
  }
}

function serializeUpstreamBody(clientFormat: WireFormat, upstreamFormat: WireFormat, body: MessagesRequest | ChatRequest, model: ModelEntry): string {
  if (clientFormat === upstreamFormat) {
    const copy: Record<string, unknown> = { ...body, model: model.upstream_id };
    if (upstreamFormat === 'openai' && body.stream === true) {
      // Ask for usage so tokens/min counts what was really used; the tap hides the extra
      // chunk from clients that did not ask for it.
      copy['stream_options'] = { ...((body as ChatRequest).stream_options ?? {}), include_usage: true };
    }
    return JSON.stringify(copy);
  }
  const translated = clientFormat === 'anthropic'
    ? messagesRequestToChat(body as MessagesRequest, upstreamModelOf(model))
    : chatRequestToMessages(body as ChatRequest, upstreamModelOf(model));
  return JSON.stringify(translated);
}

interface Attempted {
  response: IncomingMessage;
  model: ModelEntry;
  provider: ProviderConfig;
}

/** Sends the request upstream with retries and fallbacks, then answers the client. */
async function forward(
  ctx: PipelineContext,
  clientFormat: WireFormat,
  body: MessagesRequest | ChatRequest,
  model: ModelEntry,
  res: ServerResponse,
  record: RequestRecord,
  options: ForwardOptions,
): Promise<TokenUsage | undefined> {
  const cancellation = createCancellation();
  onClose(res, () => {
    if (!res.writableFinished) cancellation.cancel();
  });
  const started = ctx.now();
  const attempted = await sendWithFallbacks(ctx, clientFormat, body, model, cancellation, record, options);
  const { response, model: used, provider } = attempted;
  record.provider = provider.id;
  if (used.id !== model.id) record.model = used.id;
  const upstreamFormat = provider.format;
  record.translated = upstreamFormat !== clientFormat;

  if ((response.statusCode ?? 500) >= 400) {
    throw await upstreamErrorOf(response, provider, ctx.config.limits.streamIdleTimeoutMs);
  }
  if (body.stream === true) {
    const contentType = String(response.headers['content-type'] ?? '');
    if (!contentType.includes('text/event-stream')) {
      response.resume();
      throw new GatewayError(502, 'api_error', 'upstream_error', `Provider "${provider.id}" answered a streamed request without a stream (content-type "${contentType.slice(0, 60)}")`);
    }
    return streamAnswer(ctx, clientFormat, upstreamFormat, body, response, res, record, started, options.estimate);
  }

  // A client that leaves while a long answer is generated stops it.
  cancellation.listen(() => response.destroy());
  const bytes = await readUpstreamBody(response, MAX_UPSTREAM_BODY_BYTES, ctx.config.limits.streamIdleTimeoutMs);
  cancellation.unlisten();
  record.ttfbMs = ctx.now() - started;
  const readUsage = (usage: unknown): TokenUsage =>
    upstreamFormat === 'anthropic' ? fromMessagesUsage(usage as never) : fromChatUsage(usage as never);
  if (upstreamFormat === clientFormat) {
    // Same format: the upstream's bytes go out unchanged; only usage is read, without parsing
    // the whole answer when it can be found on its own.
    const usage = peekUsage(bytes) ?? parseAnswer(bytes, provider)['usage'];
    sendJson(res, 200, bytes);
    return readUsage(usage);
  }
  const parsed = parseAnswer(bytes, provider);
  let translated: unknown;
  try {
    translated = upstreamFormat === 'openai'
      ? chatResponseToMessages(parsed as never)
      : messagesResponseToChat(parsed as never);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw new GatewayError(502, 'api_error', 'upstream_error', `Provider "${provider.id}" sent an answer llmux could not translate`);
  }
  sendJson(res, 200, JSON.stringify(translated));
  return readUsage(parsed['usage']);
}

/** A whole upstream answer as an object, or a 502 naming the provider. */
function parseAnswer(bytes: Buffer, provider: ProviderConfig): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new GatewayError(502, 'api_error', 'upstream_error', `Provider "${provider.id}" sent an answer that is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new GatewayError(502, 'api_error', 'upstream_error', `Provider "${provider.id}" sent an answer that is not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Tries the model, then its fallbacks in order; each with up to `retry.attempts` attempts on
 * connect errors and retryable statuses, with exponential backoff and jitter, honouring the
 * upstream's `retry-after` up to a bound. Resolves with the first answer that is not retryable
 * (a success, or an error worth returning as it is).
 */
async function sendWithFallbacks(
  ctx: PipelineContext,
  clientFormat: WireFormat,
  body: MessagesRequest | ChatRequest,
  model: ModelEntry,
  cancellation: Cancellation,
  record: RequestRecord,
  options: ForwardOptions,
): Promise<Attempted> {
  const candidates: ModelEntry[] = [model];
  for (const id of model.fallbacks) {
    const fallback = ctx.catalog.get(id);
    if (fallback !== undefined && fallback.provider !== 'llmux' && !candidates.includes(fallback)) candidates.push(fallback);
  }
  const { retry, limits } = ctx.config;
  let lastError: GatewayError | undefined;
  for (const candidate of candidates) {
    const provider = ctx.catalog.provider(candidate.provider);
    if (provider === undefined) continue;
    let upstreamBody: string;
    try {
      upstreamBody = buildUpstreamBody(clientFormat, provider.format, body, candidate);
    } catch (err) {
      // A request this provider can't take (say n > 1 for a messages upstream): refuse it when it
      // is the model asked for, else try the next fallback.
      if (candidate === model) throw err;
      continue;
    }
    const headers: Record<string, string> = { accept: body.stream === true ? 'text/event-stream' : 'application/json' };
    if (provider.format === 'anthropic') {
      headers['anthropic-version'] = options.version ?? DEFAULT_ANTHROPIC_VERSION;
      if (options.beta !== undefined) headers['anthropic-beta'] = options.beta;
    }
    for (let attempt = 1; attempt <= retry.attempts; attempt++) {
      if (cancellation.cancelled) throw new GatewayError(499, 'api_error', 'client_closed', 'The client went away');
      const started = ctx.now();
      let response: IncomingMessage;
      try {
        response = await ctx.upstream.send({
          provider,
          apiKey: resolveApiKey(provider, ctx.config.env),
          path: provider.format === 'anthropic' ? '/messages' : '/chat/completions',
          body: upstreamBody,
          headers,
          cancellation,
          connectTimeoutMs: limits.connectTimeoutMs,
          firstByteTimeoutMs: limits.upstreamTimeoutMs,
        });
      } catch (err) {
        const error = err instanceof GatewayError ? err : new UpstreamError(502, 'upstream_error', `Provider "${provider.id}" failed`, true, err);
        record.attempts.push({ model: candidate.id, provider: provider.id, error: error.code, ms: ctx.now() - started });
        if (!(error instanceof UpstreamError) || !error.retryable) throw error;
        lastError = error;
        if (attempt < retry.attempts) await backoff(ctx, attempt, undefined, cancellation);
        continue;
      }
      const status = response.statusCode ?? 502;
      record.attempts.push({ model: candidate.id, provider: provider.id, status, ms: ctx.now() - started });
      if (!RETRYABLE_STATUS.has(status)) return { response, model: candidate, provider };
      const retryAfterMs = parseRetryAfter(response.headers['retry-after']);
      lastError = await upstreamErrorOf(response, provider, limits.streamIdleTimeoutMs);
      if (retryAfterMs !== undefined && retryAfterMs > retry.maxRetryAfterMs) break; // this provider asks for too long a wait
      if (attempt < retry.attempts) await backoff(ctx, attempt, retryAfterMs, cancellation);
    }
  }
  throw lastError ?? new GatewayError(502, 'api_error', 'upstream_error', `No provider could be reached for model "${model.id}"`);
}

/** How long a finished answer's leftover bytes may take to arrive before its socket is dropped. */
const DRAIN_FOR_REUSE_MS = 5_000;

/**
 * The client has its whole answer, but the upstream response may not have ended yet (bytes after
 * `[DONE]` / `message_stop`): read it to its end so the keep-alive socket goes back to the pool
 * instead of being closed, within a bound.
 */
function drainForReuse(upstream: IncomingMessage): void {
  if (upstream.complete) return;
  const timer = setTimeout(() => upstream.destroy(), DRAIN_FOR_REUSE_MS);
  timer.unref();
  upstream.once('end', () => clearTimeout(timer));
  upstream.once('close', () => clearTimeout(timer));
  upstream.resume();
}

function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text === '') return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

async function backoff(ctx: PipelineContext, attempt: number, retryAfterMs: number | undefined, cancellation: Cancellation): Promise<void> {
  const { baseDelayMs, maxDelayMs } = ctx.config.retry;
  // Full jitter on an exponential ceiling; an upstream retry-after is a floor.
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  const wait = Math.max(retryAfterMs ?? 0, Math.round(ceiling * (0.5 + ctx.random() / 2)));
  if (wait <= 0) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      cancellation.unlisten();
      resolve();
    }, wait);
    cancellation.listen(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  if (cancellation.cancelled) throw new GatewayError(499, 'api_error', 'client_closed', 'The client went away');
}

/**
 * An upstream error answer as our error: its status kept for 4xx (429 becomes our
 * rate_limit_exceeded), 5xx as 502 upstream_error, the upstream's message quoted.
 */
async function upstreamErrorOf(response: IncomingMessage, provider: ProviderConfig, idleTimeoutMs: number): Promise<GatewayError> {
  const status = response.statusCode ?? 502;
  let message = '';
  let upstreamType: string | undefined;
  let upstreamCode: string | undefined;
  try {
    const bytes = await readUpstreamBody(response, 1024 * 1024, idleTimeoutMs);
    const text = bytes.toString('utf8');
    try {
      const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown; code?: unknown } | string; message?: unknown };
      const e = parsed.error;
      if (typeof e === 'object' && e !== null) {
        if (typeof e.message === 'string') message = e.message;
        if (typeof e.type === 'string') upstreamType = e.type;
        if (typeof e.code === 'string') upstreamCode = e.code;
      } else if (typeof e === 'string') message = e;
      else if (typeof parsed.message === 'string') message = parsed.message;
    } catch {
      message = text.slice(0, 500);
    }
  } catch {
    message = '';
  }
  const said = message === '' ? `HTTP ${status}` : message.slice(0, 2000);
  const headers: Record<string, string> = {};
  const retryAfter = response.headers['retry-after'];
  if (typeof retryAfter === 'string' && /^\d+$/.test(retryAfter)) headers['retry-after'] = retryAfter;
  if (status === 429) {
    return new GatewayError(429, 'rate_limit_error', 'rate_limit_exceeded', `Provider "${provider.id}" is rate limiting llmux: ${said}`, { headers });
  }
  if (status >= 500) {
    return new UpstreamError(502, 'upstream_error', `Provider "${provider.id}" failed with HTTP ${status}: ${said}`, true);
  }
  const type = status === 401 || status === 403
    ? 'permission_error'
    : status === 404 ? 'not_found_error' : 'invalid_request_error';
  const code = status === 401 || status === 403 ? 'upstream_auth_error' : (upstreamCode ?? upstreamType ?? 'upstream_error');
  const prefix = status === 401 || status === 403
    ? `Provider "${provider.id}" refused llmux's credential for it (check its api_key in the llmux config): `
    : `Provider "${provider.id}" refused the request: `;
  return new GatewayError(status, type, code, prefix + said);
}

/**
 * Streams the upstream answer to the client: same format passes bytes through (usage read on the
 * side), else a stream translator turns each upstream event into client events. Backpressure: when
 * the client can't take more, the upstream read pauses until it drains. Keep-alive pings cover long
 * silences; an idle upstream past `stream_idle_timeout_ms` ends the stream with an in-stream error.
 */
function streamAnswer(
  ctx: PipelineContext,
  clientFormat: WireFormat,
  upstreamFormat: WireFormat,
  body: MessagesRequest | ChatRequest,
  upstream: IncomingMessage,
  res: ServerResponse,
  record: RequestRecord,
  started: number,
  estimate: number,
): Promise<TokenUsage | undefined> {
  const { pingIntervalMs, streamIdleTimeoutMs } = ctx.config.limits;
  const includeUsage = clientFormat === 'openai' && (body as ChatRequest).stream_options?.include_usage === true;
  startEventStream(res);
  record.ttfbMs = ctx.now() - started;

  return new Promise((resolve) => {
    let done = false;
    let lastActivity = ctx.now();
    let timer: NodeJS.Timeout | undefined;
    const ping = clientFormat === 'anthropic' ? 'event: ping\ndata: {"type": "ping"}\n\n' : ': ping\n\n';

    const write = (text: string | Buffer): void => {
      if (res.writableEnded) return;
      if (!res.write(text) && !upstream.isPaused()) {
        upstream.pause();
        res.once('drain', () => upstream.resume());
      }
    };

    let translator: StreamTranslator | undefined;
    let parser: ReturnType<typeof createSseParser> | undefined;
    const tap = clientFormat === upstreamFormat
      ? createUsageTap(upstreamFormat, { dropUsageChunk: clientFormat === 'openai' && !includeUsage })
      : undefined;
    if (tap === undefined) {
      translator = clientFormat === 'anthropic'
        ? createChatToMessagesStream({ write, estimatedInputTokens: estimate })
        : createMessagesToChatStream({ write, includeUsage });
      const t = translator;
      parser = createSseParser({
        onEvent: (event) => t.push(event),
        // Invalid UTF-8 is decoded with U+FFFD and the stream goes on; only an oversized event ends it.
        onError: (error) => {
          if (error.code === 'buffer_overflow') t.fail(`The provider's stream could not be read: ${error.message}`);
        },
      });
    }

    const streamError = (message: string): string =>
      clientFormat === 'anthropic' ? messagesStreamError(message) : chatStreamError(message, 'api_error', 'upstream_error');

    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      upstream.off('data', onData);
      if (!res.writableEnded) res.end();
      if (translator !== undefined) {
        if (translator.failed) record.streamError = 'translated stream failed';
        resolve(translator.usage());
      } else {
        resolve(tap?.usage());
      }
    };

    const fail = (message: string): void => {
      if (done) return;
      record.streamError = message;
      if (translator !== undefined) translator.fail(message);
      else if (!res.writableEnded) res.write(streamError(message));
      // finish() first: destroying the upstream can emit 'aborted' at once.
      finish();
      upstream.destroy();
    };

    const onData = (chunk: Buffer): void => {
      lastActivity = ctx.now();
      if (tap !== undefined) {
        const out = tap.feed(chunk);
        if (out !== undefined && out.length > 0) write(out);
        if (tap.stopped) {
          if (tap.overflowed) {
            fail(`The provider's stream could not be read: ${tap.upstreamError ?? 'event too large'}`);
            return;
          }
          // The upstream's error reached the client; nothing after it is forwarded.
          if (tap.upstreamError !== undefined) record.streamError = tap.upstreamError;
          finish();
          upstream.destroy();
        }
      } else {
        parser!.feed(chunk);
        if (translator!.finished) {
          finish();
          if (translator!.failed) upstream.destroy();
          else drainForReuse(upstream);
        }
      }
    };

    const onEnd = (): void => {
      if (done) return;
      if (tap !== undefined) {
        const rest = tap.end();
        if (rest !== undefined && rest.length > 0) write(rest);
        if (tap.upstreamError !== undefined) record.streamError = tap.upstreamError;
        else if (!tap.completed) {
          fail('The provider ended the stream before it was complete');
          return;
        }
      } else {
        parser!.end();
        translator!.end();
      }
      finish();
    };

    const tick = (): void => {
      if (done) return;
      // Paused for a slow client is not the upstream's silence.
      if (upstream.isPaused()) lastActivity = ctx.now();
      const idle = ctx.now() - lastActivity;
      if (idle >= streamIdleTimeoutMs) {
        fail(`The provider sent nothing for ${streamIdleTimeoutMs} ms (limits.stream_idle_timeout_ms)`);
        return;
      }
      if (idle >= pingIntervalMs && !res.writableNeedDrain) write(ping);
      timer = setTimeout(tick, Math.min(pingIntervalMs, streamIdleTimeoutMs - idle));
      timer.unref();
    };
    timer = setTimeout(tick, Math.min(pingIntervalMs, streamIdleTimeoutMs));
    timer.unref();

    upstream.on('data', onData);
    upstream.once('end', onEnd);
    upstream.once('error', () => fail('The connection to the provider was lost mid-stream'));
    upstream.once('aborted', () => fail('The connection to the provider was lost mid-stream'));
    onClose(res, () => {
      if (done) return;
      // The client went away: stop the generation at once.
      record.streamError = 'client closed the stream';
      finish();
      upstream.destroy();
    });
  });
}
