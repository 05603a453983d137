/**
 * The gateway's own routes: the model operations of each format, the model list, count_tokens,
 * usage, health and metrics, under `/v1` and at the root for clients configured with the root address
 * (gateway-api.md "Versioning"). Pages and the device flow are features (src/features.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyRecord } from './auth/key-record.ts';
import { budgetFor, limitsFor } from './auth/key-record.ts';
import { authenticate, requireAdmin } from './auth/authenticate.ts';
import { toModelList, toModelRecord } from './catalog/catalog.ts';
import { validateMessagesRequest } from './formats/messages.ts';
import { estimateRequestTokens } from './formats/estimate.ts';
import { GatewayError, modelNotFound } from './errors.ts';
import { parseJsonBody, readBody } from './http/body.ts';
import { onClose, sendJson } from './http/respond.ts';
import { rateLimitError, setRateLimitHeaders } from './http/rate-limit.ts';
import type { Metrics } from './metrics.ts';
import { BUDGET_REMAINING_HEADER, budgetRemainingHeader, currentBudgetStatus } from './usage/budget.ts';
import { parseUsageParams } from './usage/usage-params.ts';
import { handleModelRequest } from './pipeline.ts';
import type { PipelineContext } from './pipeline.ts';
import type { RequestRecord } from './request-record.ts';
import type { RouteHandler, RouteRegistry } from './feature.ts';
import { VERSION } from './version.ts';

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
    if (budget !== undefined) res.setHeader(BUDGET_REMAINING_HEADER, budgetRemainingHeader(currentBudgetStatus(budget, key.id, ctx.usage, ctx.now())));
  };

  // Tools (Claude Code among them) probe the base URL at start-up: answer it instead of a 404.
  routes.add('GET', '/', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ name: 'llmux', version: VERSION, endpoints: ['/v1/chat/completions', '/v1/messages', '/v1/models', '/v1/usage', '/auth/device', '/dashboard', '/healthz'] }));
  });
  routes.add('GET', '/healthz', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ status: ctx.isClosing() ? 'shutting_down' : 'ok', version: VERSION, uptime_s: Math.floor((ctx.now() - ctx.startedAtMs) / 1000) }));
  });

  const listModels: RouteHandler = async (req, res, _params, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    const models = catalog.list().filter((m) => key.models === null || key.models.includes(m.id));
    sendJson(res, 200, JSON.stringify(toModelList(models)));
  };
  const getModel: RouteHandler = async (req, res, params, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    const id = params['id'] ?? '';
    const model = catalog.get(id);
    if (model === undefined || (key.models !== null && !key.models.includes(model.id))) throw modelNotFound(id);
    sendJson(res, 200, JSON.stringify(toModelRecord(model)));
  };
  const messages: RouteHandler = (req, res, _p, record) => handleModelRequest(ctx, 'messages', req, res, record);
  const chat: RouteHandler = (req, res, _p, record) => handleModelRequest(ctx, 'chat', req, res, record);
  const countTokens: RouteHandler = async (req, res, _p, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    // count_tokens is never admitted: it spends the key's budget for unadmitted work instead.
    const limits = limitsFor(key, config.tiers);
    const early = limiter.check(key.id, limits, 'unadmitted');
    if (early !== undefined) throw rateLimitError(early);
    const claim = ctx.bodies.claim(key.id);
    onClose(res, () => claim.release());
    const bytes = await readBody(req, config.limits.maxBodyBytes, { idleTimeoutMs: config.limits.bodyTimeoutMs, claim });
    limiter.chargeUnadmitted(key.id, limits, bytes.length);
    const body = validateMessagesRequest(parseJsonBody(bytes), { countTokens: true });
    record.model = body.model;
    if (catalog.get(body.model) === undefined) throw modelNotFound(body.model);
    sendJson(res, 200, JSON.stringify({ input_tokens: estimateRequestTokens(body) }));
  };

  routes.add('GET', '/v1/models', listModels);
  routes.add('GET', '/v1/models/:id*', getModel);
  routes.add('POST', '/v1/messages', messages);
  routes.add('POST', '/v1/messages/count_tokens', countTokens);
  routes.add('POST', '/v1/chat/completions', chat);
  // For clients configured with the root address that don't add /v1 themselves.
  routes.add('GET', '/models', listModels);
  routes.add('GET', '/models/:id*', getModel);
  routes.add('POST', '/messages', messages);
  routes.add('POST', '/chat/completions', chat);

  // A key sees its own usage; an admin key may ask for another key's, or every key's.
  routes.add('GET', '/v1/usage', async (req, res, _p, record) => {
    const key = authed(req, record);
    await peekHeaders(res, key);
    const params = parseUsageParams(req.url ?? '', ctx.now());
    const keyId = params.key ?? key.id;
    if (keyId !== key.id && !key.admin) {
      throw new GatewayError(403, 'permission_error', 'insufficient_permissions', 'This key may see only its own usage; leave out key=, or ask with an admin key for key=ID or key=all');
    }
    const rows = await ctx.usage.query({ since: params.since, until: params.until, keyId, groupBy: params.groupBy });
    sendJson(res, 200, JSON.stringify({ object: 'list', data: rows }));
  });

  routes.add('GET', '/metrics', (req, res, _p, record) => {
    const key = authed(req, record);
    requireAdmin(key, req.headers);
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(ctx.metrics.render({ openStreams: ctx.openRequests(), keysTracked: limiter.size(), stateDegraded: ctx.stateDegraded() }));
  });
}
