/**
 * The gateway's own routes: the model operations of each format (its dialect's routes, answering
 * errors in its shape), the model list, count_tokens, the stored Responses API answers (retrieve,
 * delete, input items, input_tokens), usage, health and metrics, under `/v1` and at the root for
 * clients configured with the root address (gateway-api.md "Versioning"). Pages and the device
 * flow are features (src/gateway/features.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyRecord } from '../auth/key-record.ts';
import { budgetFor, limitsFor } from '../auth/key-record.ts';
import { authenticate, authenticateFrom, requireAdmin } from '../auth/authenticate.ts';
import { toAnthropicModel, toAnthropicModelList, toModelList, toModelRecord } from '../catalog/catalog.ts';
import { withAliases } from '../catalog/aliases.ts';
import type { DeploymentSnapshot } from '../routing/index.ts';
import { geminiModelPage, toGeminiModel } from '../catalog/gemini-models.ts';
import { validateGeminiCountTokens } from '../formats/gemini.ts';
import { GEMINI_CREDENTIALS, GEMINI_PREFIXES, geminiModelId } from '../dialects/gemini.ts';
import type { CredentialSource } from '../common/credentials.ts';
import { validateMessagesRequest } from '../formats/messages.ts';
import { validateResponsesRequest } from '../formats/responses.ts';
import type { ResponsesInputItem, ResponsesResponse } from '../formats/responses.ts';
import { dialects } from '../dialects/index.ts';
import type { Dialect } from '../dialects/index.ts';
import type { RequestOf } from '../formats/wire.ts';
import { GatewayError, errorBody, insufficientPermissions, invalidParameters, modelNotFound, notFound, truncate, upstreamFailed } from '../common/errors.ts';
import { anthropicErrorBody, isAnthropicClient } from '../dialects/messages.ts';
import type { ErrorContext } from '../common/errors.ts';
import { resolveInput } from '../responses/resolve.ts';
import type { StoredResponse } from '../responses/store.ts';
import { isRecord } from '../common/json.ts';
import { parseJsonBody } from '../http/body.ts';
import { readKeyedBody } from '../http/admission.ts';
import { sendJson, setHeadHeader, writeHead } from '../http/respond.ts';
import { pathOf } from '../http/router.ts';
import { setRateLimitHeaders } from '../http/rate-limit.ts';
import type { Metrics } from './metrics.ts';
import { BUDGET_REMAINING_HEADER, budgetRemainingHeader, currentBudgetStatus } from '../usage/budget.ts';
import { parseUsageParams } from '../usage/usage-params.ts';
import { bodyAdmission, handleModelRequest } from './pipeline.ts';
import type { PipelineContext } from './pipeline.ts';
import type { RequestRecord } from './request-record.ts';
import type { RouteHandler, RouteRegistry } from './feature.ts';
import { estimateGeminiRequestTokens } from '../formats/gemini-estimate.ts';
import { VERSION } from '../common/version.ts';

export interface CoreRoutesContext extends PipelineContext {
  metrics: Metrics;
  /** When the gateway started (ms), for `uptime_s`. */
  startedAtMs: number;
  /** Whether the gateway is shutting down. */
  isClosing(): boolean;
  /** Requests being answered now, for `/metrics`. */
  openRequests(): number;
  /** Whether the shared-state server is away now; undefined without shared state. */
  stateDegraded(): boolean | undefined;
  /** A read or delete of what a Responses provider keeps, forwarded with its credential (src/providers/forward.ts). */
  forward(providerId: string, method: 'GET' | 'DELETE', path: string): Promise<Buffer>;
  /** Every deployment's counters and health (src/routing/router.ts `snapshot`), for `/metrics`. */
  deployments(): DeploymentSnapshot[];
}

export function mountCoreRoutes(routes: RouteRegistry, ctx: CoreRoutesContext): void {
  const { catalog, config, limiter } = ctx;

  const authed = (req: IncomingMessage, record: RequestRecord): KeyRecord => {
    const key = authenticate(req.headers, ctx.keys, ctx.now());
    record.keyId = key.id;
    return key;
  };
  /** Headers for operations that don't count against requests/min: the key's state, unchanged. */
  const peekHeaders = async (res: ServerResponse, key: KeyRecord): Promise<void> => {
    setRateLimitHeaders(res, (await limiter.peek(key.id, limitsFor(key, config.tiers))).state);
    const budget = budgetFor(key, config.tierBudgets);
    if (budget !== undefined) setHeadHeader(res, BUDGET_REMAINING_HEADER, budgetRemainingHeader(currentBudgetStatus(budget, key.id, ctx.usage, ctx.now())));
  };

  /** A counting route's body (count_tokens, input_tokens): never admitted, charged as unadmitted work (src/http/admission.ts). */
  const readCountedBody = (req: IncomingMessage, res: ServerResponse, key: KeyRecord) =>
    readKeyedBody(req, res, bodyAdmission(ctx), { id: key.id, limits: limitsFor(key, config.tiers) }, 'counted');

  // Tools (Claude Code among them) probe the base URL at start-up: answer it instead of a 404.
  routes.add('GET', '/', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ name: 'llmux', version: VERSION, endpoints: ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/models', '/v1/usage', '/auth/device', '/dashboard', '/healthz'] }));
  });
  // Claude Code checks the connection with HEAD {base URL}/api/hello at start-up (and before
  // subagents), whatever the base URL: a 200 instead of a 404 in every user's log.
  routes.add('GET', '/api/hello', (_req, res) => {
    sendJson(res, 200, '{"status":"ok"}');
  });
  routes.add('GET', '/healthz', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ status: ctx.isClosing() ? 'shutting_down' : 'ok', version: VERSION, uptime_s: Math.floor((ctx.now() - ctx.startedAtMs) / 1000) }));
  });

  /** The models a key may use now, and the literal aliases of those (llmux.md section 10): an alias shows as its target. */
  const listedFor = (key: KeyRecord): ReturnType<typeof catalog.list> => withAliases(catalog.list().filter((m) => key.models === null || key.models.includes(m.id)), ctx.resolver.literalAliases);
  /** Whether a model answers `body` asking for `model` (its aliases and routes followed), for the counting routes. */
  const served = <F extends 'messages' | 'responses' | 'gemini'>(key: KeyRecord, format: F, body: RequestOf[F], model: string): boolean => {
    const dialect: Dialect<F> = dialects[format];
    const resolution = ctx.resolver.resolve(model, { clientFormat: format, keyTier: key.tier, traits: () => dialect.traits(body), inputTokens: () => dialect.estimate(body) });
    return catalog.get(resolution.model) !== undefined;
  };
  /**
   * The model routes, shared with Gemini's clients under `/v1` (llmux.md section 9): a key sent as
   * Gemini's are (`x-goog-api-key`, `?key=`) gets Gemini `Model` records, an Anthropic client (it
   * sends `anthropic-version`) Anthropic's model objects, any other the OpenAI list.
   * Under `/v1beta` every key gets Gemini's.
   */
  const modelRoutes = (gemini: 'always' | 'by-key') => {
    const keyed = async (req: IncomingMessage, res: ServerResponse, record: RequestRecord): Promise<{ key: KeyRecord; gemini: boolean }> => {
      const { key, source } = authenticateFrom(req.headers, ctx.keys, ctx.now(), { sources: MODEL_ROUTE_CREDENTIALS, query: queryOf(req.url).toString() });
      record.keyId = key.id;
      await peekHeaders(res, key);
      return { key, gemini: gemini === 'always' || GEMINI_KEY_SOURCES.has(source) };
    };
    const list: RouteHandler = async (req, res, _params, record) => {
      const { key, gemini: asGemini } = await keyed(req, res, record);
      const models = listedFor(key);
      sendJson(res, 200, JSON.stringify(asGemini ? geminiModelPage(models, queryOf(req.url)) : isAnthropicClient(req.headers) ? toAnthropicModelList(models) : toModelList(models)));
    };
    const get: RouteHandler = async (req, res, params, record) => {
      const { key, gemini: asGemini } = await keyed(req, res, record);
      const id = asGemini ? geminiModelId(params['id'] ?? '') : (params['id'] ?? '');
      // What the list shows, one of it (not a hot path).
      const model = listedFor(key).find((m) => m.id === id);
      if (model === undefined) throw modelNotFound(id);
      sendJson(res, 200, JSON.stringify(asGemini ? toGeminiModel(model) : isAnthropicClient(req.headers) ? toAnthropicModel(model) : toModelRecord(model)));
    };
    return { list, get };
  };
  const { list: listModels, get: getModel } = modelRoutes('by-key');
  const countTokens: RouteHandler = async (req, res, _p, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    // count_tokens is never admitted: it spends the key's budget for unadmitted work instead.
    const { bytes } = await readCountedBody(req, res, key);
    const body = validateMessagesRequest(parseJsonBody(bytes), { countTokens: true, strict: config.validation === 'strict' });
    record.model = body.model;
    if (!served(key, 'messages', body, body.model)) throw modelNotFound(body.model);
    sendJson(res, 200, JSON.stringify({ input_tokens: dialects.messages.estimate(body) }));
  };

  const { store } = ctx.state.responses;
  /** The key's stored response `params.id`, or 404: another key's does not exist for this one. */
  const storedResponse = async (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, record: RequestRecord): Promise<StoredResponse> => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    const id = params['id'] ?? '';
    const stored = await store.get(key.id, id);
    if (stored === undefined) throw responseNotFound(id);
    return stored;
  };
  /** A response recorded as held by its provider (src/responses/passthrough.ts): read there, for this key only. */
  const forwarded = (stored: StoredResponse, method: 'GET' | 'DELETE', tail: string, url: string | undefined): Promise<Buffer> => {
    const query = queryOf(url).toString();
    return ctx.forward(stored.provider as string, method, `/responses/${encodeURIComponent(stored.id)}${tail}${query === '' ? '' : `?${query}`}`);
  };
  const getResponse: RouteHandler = async (req, res, params, record) => {
    const stored = await storedResponse(req, res, params, record);
    if (stored.provider !== undefined) {
      sendJson(res, 200, withModel(await forwarded(stored, 'GET', '', req.url), stored.response.model));
      return;
    }
    const withSeals = queryOf(req.url).getAll('include').concat(queryOf(req.url).getAll('include[]')).includes(ENCRYPTED_REASONING);
    // Kept as it was assembled: credentials an upstream echoed come out as they did of the answer.
    sendJson(res, 200, ctx.attempts.redact(JSON.stringify(withSeals ? stored.response : withoutSeals(stored.response))));
  };
  const deleteResponse: RouteHandler = async (req, res, params, record) => {
    const stored = await storedResponse(req, res, params, record);
    if (stored.provider !== undefined) await forwarded(stored, 'DELETE', '', undefined);
    if (!(await store.delete(stored.keyId, stored.id))) throw responseNotFound(stored.id);
    sendJson(res, 200, JSON.stringify({ id: stored.id, object: 'response', deleted: true }));
  };
  const inputItems: RouteHandler = async (req, res, params, record) => {
    const stored = await storedResponse(req, res, params, record);
    if (stored.provider !== undefined) {
      sendJson(res, 200, await forwarded(stored, 'GET', '/input_items', req.url));
      return;
    }
    sendJson(res, 200, ctx.attempts.redact(JSON.stringify(inputItemsPage(stored.input, queryOf(req.url)))));
  };
  // Like count_tokens: an estimate, after previous_response_id and item_reference are resolved.
  const inputTokens: RouteHandler = async (req, res, _p, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    const { bytes } = await readCountedBody(req, res, key);
    const body = validateResponsesRequest(parseJsonBody(bytes), { countTokens: true });
    if (typeof body.model === 'string') {
      record.model = body.model;
      if (!served(key, 'responses', body, body.model)) throw modelNotFound(body.model);
    }
    const input = await resolveInput(body, key.id, store);
    sendJson(res, 200, JSON.stringify({ object: 'response.input_tokens', input_tokens: dialects.responses.estimate({ ...body, input }) }));
  };

  // Each format's model operation, from its dialect: a new format brings its own routes.
  for (const dialect of Object.values(dialects)) {
    const operation: RouteHandler = (req, res, params, record) => handleModelRequest(ctx, dialect.format, req, res, record, params);
    for (const path of dialect.routes) routes.add('POST', path, operation, { errors: dialect.errorBody });
  }
  mountGeminiRoutes(routes, modelRoutes('always'), async (req, res, params, record) => {
    const key = authenticate(req.headers, ctx.keys, ctx.now(), { sources: GEMINI_CREDENTIALS, query: queryOf(req.url).toString() });
    record.keyId = key.id;
    await peekHeaders(res, key);
    const { bytes } = await readCountedBody(req, res, key);
    const body = validateGeminiCountTokens(parseJsonBody(bytes));
    const id = geminiModelId(params['model'] ?? '');
    record.model = id;
    const request = body.generateContentRequest ?? { contents: body.contents ?? [] };
    if (!served(key, 'gemini', request, id) || (key.models !== null && !key.models.includes(id))) throw modelNotFound(id);
    sendJson(res, 200, JSON.stringify({ totalTokens: estimateGeminiRequestTokens(body) }));
  });
  for (const root of ['/v1', '']) {
    routes.add('POST', `${root}/responses/input_tokens`, inputTokens);
    routes.add('GET', `${root}/responses/:id`, getResponse);
    routes.add('DELETE', `${root}/responses/:id`, deleteResponse);
    routes.add('GET', `${root}/responses/:id/input_items`, inputItems);
  }
  // Errors in the shape of the client the list would answer: Gemini's, Anthropic's, else OpenAI's.
  const sharedErrors = {
    errors: (error: GatewayError, context: ErrorContext) =>
      keyedLikeGemini(context) ? dialects.gemini.errorBody(error) : isAnthropicClient(context.headers ?? {}) ? anthropicErrorBody(error, context) : errorBody(error),
  };
  routes.add('GET', '/v1/models', listModels, sharedErrors);
  routes.add('GET', '/v1/models/:id*', getModel, sharedErrors);
  routes.add('POST', '/v1/messages/count_tokens', countTokens, { errors: dialects.messages.errorBody });
  // For clients configured with the root address that don't add /v1 themselves.
  routes.add('GET', '/models', listModels, sharedErrors);
  routes.add('GET', '/models/:id*', getModel, sharedErrors);
  routes.add('POST', '/messages/count_tokens', countTokens, { errors: dialects.messages.errorBody });

  // A key sees its own usage; an admin key may ask for another key's, or every key's.
  routes.add('GET', '/v1/usage', async (req, res, _p, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    const params = parseUsageParams(req.url ?? '', ctx.now());
    const keyId = params.key ?? key.id;
    if (keyId !== key.id && !key.admin) {
      throw insufficientPermissions('This key may see only its own usage; leave out key=, or ask with an admin key for key=ID or key=all');
    }
    const rows = await ctx.usage.query({ since: params.since, until: params.until, keyId, groupBy: params.groupBy });
    sendJson(res, 200, JSON.stringify({ object: 'list', data: rows }));
  });

  routes.add('GET', '/metrics', async (req, res, _p, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    requireAdmin(key, req.headers);
    writeHead(res, 200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(ctx.metrics.render({ openStreams: ctx.openRequests(), keysTracked: limiter.size(), stateDegraded: ctx.stateDegraded(), deployments: ctx.deployments() }));
  });
}

/** Where a key may come on the model routes: Gemini's places first (then they answer in Gemini's records), then the standard ones. */
const MODEL_ROUTE_CREDENTIALS: readonly CredentialSource[] = [{ header: 'x-goog-api-key' }, { query: 'key' }, { header: 'x-api-key' }, { header: 'authorization', scheme: 'bearer' }];
const GEMINI_KEY_SOURCES: ReadonlySet<string> = new Set(['x-goog-api-key', '?key']);

/** Whether a request carries a key where Gemini's clients put it: errors on a shared route are then in Gemini's shape. */
function keyedLikeGemini(context: ErrorContext): boolean {
  return typeof context.headers?.['x-goog-api-key'] === 'string' || queryOf(context.url).has('key');
}

/**
 * Gemini's routes besides its model operation (llmux.md section 9), under `/v1beta`, `/v1` and
 * the root, every error in Google's shape: `:countTokens`, the models list and records under
 * `/v1beta` (under `/v1` the shared routes answer by key), and 404 for the methods llmux does not
 * serve, embeddings named.
 */
function mountGeminiRoutes(routes: RouteRegistry, models: { list: RouteHandler; get: RouteHandler }, countTokens: RouteHandler): void {
  const errors = { errors: dialects.gemini.errorBody };
  routes.add('GET', '/v1beta/models', models.list, errors);
  routes.add('GET', '/v1beta/models/:id*', models.get, errors);
  const embeddings: RouteHandler = () => {
    throw notFound('embeddings are not served by llmux: it serves generateContent, streamGenerateContent and countTokens');
  };
  const unserved: RouteHandler = (req) => {
    throw notFound(`${truncate(pathOf(req.url ?? ''), 200)} is not an operation llmux serves: it serves generateContent, streamGenerateContent and countTokens`);
  };
  for (const prefix of GEMINI_PREFIXES) {
    for (const collection of ['models', 'tunedModels']) {
      routes.add('POST', `${prefix}/${collection}/:model*:method(countTokens)`, countTokens, errors);
      routes.add('POST', `${prefix}/${collection}/:model*:method(embedContent|batchEmbedContents)`, embeddings, errors);
      routes.add('POST', `${prefix}/${collection}/:rest*`, unserved, errors);
    }
  }
}

const ENCRYPTED_REASONING = 'reasoning.encrypted_content';
const DEFAULT_PAGE_ITEMS = 20;
const MAX_PAGE_ITEMS = 100;

function responseNotFound(id: string): GatewayError {
  return new GatewayError(404, 'not_found_error', 'response_not_found', `Response "${truncate(id, 200)}" was not found; it may have expired, been deleted, been created with store: false, or belong to another key`);
}

/** The query of a request target (these routes are not hot paths). */
function queryOf(url: string | undefined): URLSearchParams {
  const target = url ?? '';
  const q = target.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : target.slice(q + 1));
}

/** A provider's response object naming the llmux model that answered it (llmux.md section 3). */
function withModel(bytes: Buffer, model: string): string {
  let answer: unknown;
  try {
    answer = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw upstreamFailed('The provider that holds this response sent an answer llmux could not read');
  }
  return JSON.stringify(isRecord(answer) ? { ...answer, model } : answer);
}

/** Stored reasoning is always sealed; a reader that did not ask for `reasoning.encrypted_content` gets it without. */
function withoutSeals(response: ResponsesResponse): ResponsesResponse {
  return { ...response, output: response.output.map((item) => (item.type === 'reasoning' && item.encrypted_content !== undefined ? { type: item.type, id: item.id, summary: item.summary } : item)) };
}

/**
 * One page of a stored response's input items, as OpenAI lists them: `order` desc (the default)
 * or asc, `limit` 1-100 (default 20), `after` an item id of the previous page.
 */
function inputItemsPage(input: ResponsesInputItem[], query: URLSearchParams): Record<string, unknown> {
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidParameters(`order: "${truncate(order, 20)}" must be asc or desc`, 'order');
  const limitText = query.get('limit');
  const limit = limitText === null ? DEFAULT_PAGE_ITEMS : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_ITEMS) throw invalidParameters(`limit: must be a whole number from 1 to ${MAX_PAGE_ITEMS}`, 'limit');
  const withSeals = query.getAll('include').concat(query.getAll('include[]')).includes(ENCRYPTED_REASONING);
  const items = (order === 'desc' ? [...input].reverse() : input).map((item) => (withSeals || !isRecord(item) || item['encrypted_content'] === undefined ? item : { ...item, encrypted_content: undefined }));
  const after = query.get('after');
  let start = 0;
  if (after !== null) {
    const at = items.findIndex((item) => isRecord(item) && item['id'] === after);
    if (at === -1) throw invalidParameters(`after: "${truncate(after, 200)}" is not an input item of this response`, 'after');
    start = at + 1;
  }
  const data = items.slice(start, start + limit).map(asListed);
  const idOf = (item: ResponsesInputItem | undefined): string | null => (isRecord(item) && typeof item['id'] === 'string' ? item['id'] : null);
  return { object: 'list', data, first_id: idOf(data[0]), last_id: idOf(data[data.length - 1]), has_more: start + limit < items.length };
}

/** Item types OpenAI lists with a `status`. */
const STATUS_ITEMS = new Set(['message', 'function_call', 'function_call_output']);

/**
 * An input item as OpenAI lists it (its ItemResource): a message states its `type`, its content as
 * parts (a string is one `input_text`, or `output_text` for the assistant's) and a `status`, as
 * do calls and their outputs. The item is stored as the client sent it; this is only its listing.
 */
function asListed(item: ResponsesInputItem): ResponsesInputItem {
  if (!isRecord(item)) return item;
  const type = typeof item['type'] === 'string' ? item['type'] : 'message';
  if (!STATUS_ITEMS.has(type)) return item;
  const listed: Record<string, unknown> = { ...item, type };
  if (type === 'message' && typeof item['content'] === 'string') {
    const text = item['content'];
    listed['content'] = [item['role'] === 'assistant' ? { type: 'output_text', text, annotations: [], logprobs: [] } : { type: 'input_text', text }];
  }
  listed['status'] ??= 'completed';
  return listed as ResponsesInputItem;
}
