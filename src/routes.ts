/**
 * The gateway's own routes: the model operations of each format, the model list, count_tokens,
 * health and metrics, under `/v1` and at the root for clients configured with the root address
 * (gateway-api.md "Versioning"). Pages and the device flow are features (src/features.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyRecord } from './auth/key-record.ts';
import { limitsFor } from './auth/key-record.ts';
import { authenticate, requireAdmin } from './auth/authenticate.ts';
import { toModelList, toModelRecord } from './catalog/catalog.ts';
import { validateMessagesRequest } from './formats/messages.ts';
import { estimateRequestTokens } from './formats/estimate.ts';
import { modelNotFound } from './errors.ts';
import { parseJsonBody, readBody } from './http/body.ts';
import { sendJson } from './http/respond.ts';
import { setRateLimitHeaders } from './http/rate-limit.ts';
import type { Metrics } from './metrics.ts';
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
}

/** The messages operations (with count_tokens), at `/v1` and at the root. */
const MESSAGES_PATHS: ReadonlySet<string> = new Set(['/v1/messages', '/messages', '/v1/messages/count_tokens', '/messages/count_tokens']);

/** Whether `path` is a messages operation, whose errors carry the top-level `"type": "error"` (llmux.md section 3). */
export function isMessagesOperation(path: string): boolean {
  return MESSAGES_PATHS.has(path);
}

export function mountCoreRoutes(routes: RouteRegistry, ctx: CoreRoutesContext): void {
  const { catalog, config, limiter } = ctx;

  const authed = (req: IncomingMessage, record: RequestRecord): KeyRecord => {
    const key = authenticate(req.headers, ctx.keys, ctx.now());
    record.keyId = key.id;
    return key;
  };
  /** Headers for operations that don't count against requests/min: the key's state, unchanged. */
  const peekHeaders = (res: ServerResponse, key: KeyRecord): void => {
    setRateLimitHeaders(res, limiter.peek(key.id, limitsFor(key, config.tiers)).state);
  };

  // Tools (Claude Code among them) probe the base URL at start-up: answer it instead of a 404.
  routes.add('GET', '/', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ name: 'llmux', version: VERSION, endpoints: ['/v1/chat/completions', '/v1/messages', '/v1/models', '/auth/device', '/dashboard', '/healthz'] }));
  });
  routes.add('GET', '/healthz', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ status: ctx.isClosing() ? 'shutting_down' : 'ok', version: VERSION, uptime_s: Math.floor((ctx.now() - ctx.startedAtMs) / 1000) }));
  });

  const listModels: RouteHandler = (req, res, _params, record) => {
    const key = authed(req, record);
    peekHeaders(res, key);
    const models = catalog.list().filter((m) => key.models === null || key.models.includes(m.id));
    sendJson(res, 200, JSON.stringify(toModelList(models)));
  };
  const getModel: RouteHandler = (req, res, params, record) => {
    const key = authed(req, record);
    peekHeaders(res, key);
    const id = params['id'] ?? '';
    const model = catalog.get(id);
    if (model === undefined || (key.models !== null && !key.models.includes(model.id))) throw modelNotFound(id);
    sendJson(res, 200, JSON.stringify(toModelRecord(model)));
  };
  const messages: RouteHandler = (req, res, _p, record) => handleModelRequest(ctx, 'messages', req, res, record);
  const chat: RouteHandler = (req, res, _p, record) => handleModelRequest(ctx, 'chat', req, res, record);
  const countTokens: RouteHandler = async (req, res, _p, record) => {
    const key = authed(req, record);
    peekHeaders(res, key);
    const body = validateMessagesRequest(parseJsonBody(await readBody(req, config.limits.maxBodyBytes)), { countTokens: true, strict: config.validation === 'strict' });
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
  routes.add('POST', '/messages/count_tokens', countTokens);
  routes.add('POST', '/chat/completions', chat);

  routes.add('GET', '/metrics', (req, res, _p, record) => {
    const key = authed(req, record);
    peekHeaders(res, key);
    requireAdmin(key, req.headers);
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(ctx.metrics.render({ openStreams: ctx.openRequests(), keysTracked: limiter.size() }));
  });
}
