/**
 * `createGateway(options)`: wiring only. Builds the config, catalog, key store, limiter and
 * upstream client, registers the routes, and returns `{ handler, listen, close }` so the gateway
 * can be mounted on an existing `node:http` server or run on its own.
 */
import http from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from './config-types.ts';
import { loadConfig } from './config.ts';
import type { ConfigInput } from './config.ts';
import { createCatalog, toModelList, toModelRecord } from './catalog/catalog.ts';
import type { Catalog } from './catalog/catalog.ts';
import { createKeyStore } from './auth/key-store.ts';
import type { KeyStore } from './auth/key-store.ts';
import { authenticate, requireAdmin } from './auth/authenticate.ts';
import { createLimiter } from './limits/limiter.ts';
import type { Limiter } from './limits/limiter.ts';
import { createUpstreamClient } from './providers/upstream.ts';
import type { UpstreamClient } from './providers/upstream.ts';
import { createRouter, pathOf } from './http/router.ts';
import { GatewayError, errorBody, modelNotFound, notFound } from './http/errors.ts';
import { parseJsonBody, readBody } from './http/body.ts';
import { pickRequestId, sendError, sendJson } from './http/respond.ts';
import { handleModelRequest, limitsFor } from './pipeline.ts';
import type { PipelineContext, RequestRecord } from './pipeline.ts';
import { validateMessagesRequest } from './formats/messages.ts';
import { estimateRequestTokens } from './formats/estimate.ts';
import { VERSION } from './version.ts';
import { createMetrics } from './metrics.ts';
import type { Metrics } from './metrics.ts';

/** One line of the request log. Never a key or a body. */
export interface LogRecord {
  time: string;
  request_id: string;
  key_id: string | null;
  method: string;
  path: string;
  model: string | null;
  provider: string | null;
  status: number;
  duration_ms: number;
  ttfb_ms: number | null;
  tokens_in: number | null;
  tokens_out: number | null;
  cost_usd: number | null;
  stream?: boolean;
  translated?: boolean;
  attempts?: RequestRecord['attempts'];
  stream_error?: string;
  error_code?: string;
}

export type Logger = (line: LogRecord | { time: string; level: 'warn' | 'error' | 'info'; message: string }) => void;

export interface GatewayOptions extends Omit<ConfigInput, 'file'> {
  /** A config object in the config file's shape; when absent, the file named by configPath/env/home is read. */
  config?: unknown;
  /** A key store to use instead of `$LLMUX_HOME/keys.json`. */
  keyStore?: KeyStore;
  /** Where request log lines go; default: one JSON line each on stderr. `null` silences it. */
  logger?: Logger | null;
  /** Injectable clock (ms). */
  now?: () => number;
  random?: () => number;
}

export interface Gateway {
  /** The request handler, to mount on any `node:http` server. */
  handler(req: IncomingMessage, res: ServerResponse): void;
  listen(port?: number, host?: string): Promise<{ port: number; host: string; url: string }>;
  /** Stops accepting, lets in-flight requests finish (bounded), then closes everything. */
  close(): Promise<void>;
  readonly config: Config;
  readonly catalog: Catalog;
  readonly keys: KeyStore;
  readonly limiter: Limiter;
  readonly server: Server | undefined;
}

type RouteHandler = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, record: RequestRecord) => Promise<void> | void;

/** Route registration for feature modules (device flow, dashboard). */
export interface RouteRegistry {
  add(method: string, path: string, handler: RouteHandler): void;
}

export interface GatewayInternals {
  ctx: PipelineContext;
  metrics: Metrics;
  log: Logger;
  routes: RouteRegistry;
}

/**
 * One JSON line per request on stderr. Lines are gathered and written once per event-loop turn,
 * so a busy gateway makes one write call for many requests rather than one each.
 */
function createStderrLogger(): Logger {
  let pending = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const text = pending;
    pending = '';
    process.stderr.write(text);
  };
  return (line) => {
    pending += `${JSON.stringify(line)}\n`;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

/** Feature modules that add routes; set by src/features.ts so the core does not import them. */
const features: Array<(internals: GatewayInternals) => void> = [];

/** Registers a feature (device flow, dashboard) to be mounted on every gateway created after. */
export function registerFeature(mount: (internals: GatewayInternals) => void): void {
  features.push(mount);
}

export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = loadConfig({ ...options, file: options.config });
  const now = options.now ?? Date.now;
  const catalog = createCatalog({ providers: config.providers, models: config.models, builtinCatalog: config.builtinCatalog, env: config.env });
  const keys = options.keyStore ?? createKeyStore(config.home, { now });
  const limiter = createLimiter({ now });
  const upstream: UpstreamClient = createUpstreamClient();
  const log: Logger = options.logger === null ? () => {} : (options.logger ?? createStderrLogger());
  const metrics = createMetrics();
  const ctx: PipelineContext = { config, catalog, keys, limiter, upstream, now, random: options.random ?? Math.random };
  const startedAt = now();
  const router = createRouter<RouteHandler>();
  const inFlight = new Set<ServerResponse>();
  let server: Server | undefined;
  let closing = false;

  const authed = (req: IncomingMessage, record: RequestRecord) => {
    const key = authenticate(req.headers, keys, now());
    record.keyId = key.id;
    return key;
  };

  /** Headers for operations that don't count against requests/min: the key's state, unchanged. */
  const peekHeaders = (res: ServerResponse, key: ReturnType<typeof authed>): void => {
    const { headers } = limiter.peek(key.id, limitsFor(key, config.tiers));
    for (const name in headers) res.setHeader(name, headers[name] as string);
  };

  // Tools (Claude Code among them) probe the base URL at start-up: answer it instead of a 404.
  router.add('GET', '/', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ name: 'llmux', version: VERSION, endpoints: ['/v1/chat/completions', '/v1/messages', '/v1/models', '/auth/device', '/dashboard', '/healthz'] }));
  });
  router.add('GET', '/healthz', (_req, res) => {
    sendJson(res, 200, JSON.stringify({ status: closing ? 'shutting_down' : 'ok', version: VERSION, uptime_s: Math.floor((now() - startedAt) / 1000) }));
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
  const messages: RouteHandler = (req, res, _p, record) => handleModelRequest(ctx, 'anthropic', req, res, record);
  const chat: RouteHandler = (req, res, _p, record) => handleModelRequest(ctx, 'openai', req, res, record);
  const countTokens: RouteHandler = async (req, res, _p, record) => {
    const key = authed(req, record);
    peekHeaders(res, key);
    const raw = parseJsonBody(await readBody(req, config.limits.maxBodyBytes));
    const body = validateMessagesRequest(raw, { countTokens: true });
    record.model = body.model;
    if (catalog.get(body.model) === undefined) throw modelNotFound(body.model);
    sendJson(res, 200, JSON.stringify({ input_tokens: estimateRequestTokens(body as Record<string, unknown>) }));
  };

  router.add('GET', '/v1/models', listModels);
  router.add('GET', '/v1/models/:id*', getModel);
  router.add('POST', '/v1/messages', messages);
  router.add('POST', '/v1/messages/count_tokens', countTokens);
  router.add('POST', '/v1/chat/completions', chat);
  // For clients configured with the root address that don't add /v1 themselves.
  router.add('GET', '/models', listModels);
  router.add('GET', '/models/:id*', getModel);
  router.add('POST', '/messages', messages);
  router.add('POST', '/chat/completions', chat);

  router.add('GET', '/metrics', (req, res, _p, record) => {
    const key = authed(req, record);
    requireAdmin(key, req.headers);
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(metrics.render({ openStreams: inFlight.size, keysTracked: limiter.size() }));
  });

  const internals: GatewayInternals = { ctx, metrics, log, routes: { add: (m, p, h) => router.add(m, p, h) } };
  for (const mount of features) mount(internals);

  function handler(req: IncomingMessage, res: ServerResponse): void {
    const started = now();
    const requestId = pickRequestId(req.headers);
    res.setHeader('x-request-id', requestId);
    const record: RequestRecord = { attempts: [] };
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    inFlight.add(res);
    let logged = false;
    const writeLog = (): void => {
      if (logged) return;
      logged = true;
      inFlight.delete(res);
      const status = res.headersSent ? res.statusCode : 499;
      metrics.observe(status, record);
      const line: LogRecord = {
        time: new Date(started).toISOString(),
        request_id: requestId,
        key_id: record.keyId ?? null,
        method,
        path: pathOf(url).slice(0, 200),
        model: record.model?.slice(0, 200) ?? null,
        provider: record.provider ?? null,
        status,
        duration_ms: now() - started,
        ttfb_ms: record.ttfbMs ?? null,
        tokens_in: record.usage === undefined ? null : record.usage.inputTokens + record.usage.cacheReadTokens + record.usage.cacheCreationTokens,
        tokens_out: record.usage?.outputTokens ?? null,
        cost_usd: record.costUsd === undefined ? null : Math.round(record.costUsd * 1e8) / 1e8,
      };
      if (record.stream !== undefined) line.stream = record.stream;
      if (record.translated !== undefined) line.translated = record.translated;
      if (record.attempts.length > 0) line.attempts = record.attempts;
      if (record.streamError !== undefined) line.stream_error = record.streamError;
      if (record.errorCode !== undefined) line.error_code = record.errorCode;
      log(line);
      // While shutting down, a connection whose last answer just ended has nothing left to do.
      if (closing) setImmediate(() => server?.closeIdleConnections());
    };
    // The line is written once the response is closed and the handler has settled usage, in
    // whichever order those happen ('close' can come before the handler's last await resumes).
    let closed = false;
    let handled = false;
    res.once('close', () => {
      closed = true;
      if (handled) writeLog();
    });
    const handlerDone = (): void => {
      handled = true;
      if (closed) writeLog();
    };

    const route = router.match(method, url);
    const run = async (): Promise<void> => {
      if (route.kind === 'not_found') throw notFound(`No route for ${method} ${pathOf(url).slice(0, 200)}; see the README for the operations llmux serves`);
      if (route.kind === 'method_not_allowed') {
        throw new GatewayError(405, 'invalid_request_error', 'method_not_allowed', `${method} is not allowed here; allowed: ${route.allow}`, { headers: { allow: route.allow } });
      }
      if (closing) res.setHeader('connection', 'close');
      record.route = route.match.pattern;
      await route.match.handler(req, res, route.match.params, record);
    };
    run().then(handlerDone, (err: unknown) => {
      record.errorCode = err instanceof GatewayError ? err.code : 'internal_error';
      handlerDone();
      if (err instanceof GatewayError && err.status === 499) {
        if (!res.writableEnded) res.destroy();
        return;
      }
      sendError(res, err, (bug) => {
        log({ time: new Date().toISOString(), level: 'error', message: `request ${requestId} failed: ${bug instanceof Error ? (bug.stack ?? bug.message) : String(bug)}` });
      });
      // Don't leave an unread request body on a keep-alive connection.
      if (!req.complete) req.resume();
    });
  }

  async function listen(port = config.port, host = config.host): Promise<{ port: number; host: string; url: string }> {
    const { headersTimeoutMs, requestTimeoutMs } = config.limits;
    const srv = http.createServer({
      // Slow or half-open clients can't hold sockets forever: headers and whole requests have
      // deadlines, checked often enough that a short deadline is kept.
      headersTimeout: headersTimeoutMs,
      requestTimeout: Math.max(requestTimeoutMs, headersTimeoutMs),
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(headersTimeoutMs / 4))),
      keepAliveTimeout: 5_000,
    }, handler);
    srv.timeout = 0;
    srv.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const message = status === 431
        ? 'Request headers are too large'
        : status === 408 ? 'The request took too long to arrive' : 'Malformed HTTP request';
      const code = status === 431 ? 'headers_too_large' : status === 408 ? 'request_timeout' : 'bad_request';
      const body = errorBody(new GatewayError(status, 'invalid_request_error', code, message));
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    });
    server = srv;
    keys.watch((message) => log({ time: new Date().toISOString(), level: 'warn', message }));
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, host, () => {
        srv.off('error', reject);
        resolve();
      });
    });
    const address = srv.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return { port: address.port, host: address.address, url: `http://${shownHost}:${address.port}` };
  }

  async function close(): Promise<void> {
    closing = true;
    keys.close();
    const srv = server;
    if (srv !== undefined) {
      const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
      srv.closeIdleConnections();
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, config.limits.shutdownTimeoutMs).unref());
      await Promise.race([closed, deadline]);
      srv.closeAllConnections();
    }
    upstream.close();
  }

  return {
    handler,
    listen,
    close,
    config,
    catalog,
    keys,
    limiter,
    get server() {
      return server;
    },
  };
}
