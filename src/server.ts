/**
 * `createGateway(options)`: wiring only. Builds the config, catalog, key store, limiter and
 * upstream client, mounts the core routes and the features it is given, and returns
 * `{ handler, listen, close }` so the gateway can be mounted on an existing `node:http` server or
 * run on its own.
 */
import http from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from './config-types.ts';
import { loadConfig } from './config.ts';
import type { ConfigInput } from './config.ts';
import { createCatalog } from './catalog/catalog.ts';
import type { Catalog } from './catalog/catalog.ts';
import { resolveApiKey } from './catalog/providers.ts';
import { createKeyStore } from './auth/key-store.ts';
import type { KeyStore } from './auth/key-store.ts';
import { createLimiter } from './limits/limiter.ts';
import type { Limiter } from './limits/limiter.ts';
import { createUpstreamClient } from './providers/upstream.ts';
import { ECHO_PROVIDER, createEchoTransport } from './providers/echo.ts';
import { createRouter, pathOf } from './http/router.ts';
import { ClientClosedError, GatewayError, notFound } from './errors.ts';
import { errorBody, pickRequestId, sendError } from './http/respond.ts';
import type { PipelineContext } from './pipeline.ts';
import { isMessagesOperation, mountCoreRoutes } from './routes.ts';
import { createMetrics } from './metrics.ts';
import { createStderrLogger, logLine, logMessage } from './request-log.ts';
import type { Logger } from './request-log.ts';
import type { RequestRecord } from './request-record.ts';
import type { Feature, GatewayInternals, RouteHandler } from './feature.ts';

export type { LogRecord, Logger } from './request-log.ts';
export type { Feature, GatewayInternals, RouteRegistry } from './feature.ts';

/** The log's status for a request whose client left before any answer (nginx's convention). */
const CLIENT_CLOSED_STATUS = 499;

export interface GatewayOptions extends Omit<ConfigInput, 'file'> {
  /** A config object in the config file's shape; when absent, the file named by configPath/env/home is read. */
  config?: unknown;
  /** A key store to use instead of `$LLMUX_HOME/keys.json`. */
  keyStore?: KeyStore;
  /** Where request log lines go; default: one JSON line each on stderr. `null` silences it. */
  logger?: Logger | null;
  /** Features to mount (the device flow and pages: `standardFeatures` from the package entry). */
  features?: readonly Feature[];
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

export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = loadConfig({ ...options, file: options.config });
  const now = options.now ?? Date.now;
  const catalog = createCatalog({ providers: config.providers, models: config.models, builtinCatalog: config.builtinCatalog, env: config.env });
  const keys = options.keyStore ?? createKeyStore(config.home, { now });
  const limiter = createLimiter({ now });
  const upstream = createUpstreamClient(createEchoTransport());
  const log: Logger = options.logger === null ? () => {} : (options.logger ?? createStderrLogger());
  const metrics = createMetrics();
  const ctx: PipelineContext = {
    config,
    catalog,
    keys,
    limiter,
    now,
    attempts: {
      model: (id) => catalog.get(id),
      provider: (id) => catalog.provider(id) ?? (id === ECHO_PROVIDER.id ? ECHO_PROVIDER : undefined),
      apiKey: (provider) => resolveApiKey(provider, config.env),
      transport: upstream,
      retry: config.retry,
      connectTimeoutMs: config.limits.connectTimeoutMs,
      firstByteTimeoutMs: config.limits.upstreamTimeoutMs,
      idleTimeoutMs: config.limits.streamIdleTimeoutMs,
      now,
      random: options.random ?? Math.random,
    },
  };
  const router = createRouter<RouteHandler>();
  const routes = { add: (method: string, path: string, handler: RouteHandler) => router.add(method, path, handler) };
  const inFlight = new Set<ServerResponse>();
  let server: Server | undefined;
  let closing = false;

  mountCoreRoutes(routes, { ...ctx, metrics, startedAtMs: now(), isClosing: () => closing, openRequests: () => inFlight.size });
  const internals: GatewayInternals = { ctx, metrics, log, routes };
  for (const mount of options.features ?? []) mount(internals);

  function handler(req: IncomingMessage, res: ServerResponse): void {
    const startedMs = now();
    const requestId = pickRequestId(req.headers);
    res.setHeader('x-request-id', requestId);
    // The Anthropic SDKs read `request-id` (llmux.md section 3).
    res.setHeader('request-id', requestId);
    const record: RequestRecord = { attempts: [] };
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    inFlight.add(res);
    let logged = false;
    const writeLog = (): void => {
      if (logged) return;
      logged = true;
      inFlight.delete(res);
      const status = res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
      metrics.observe(status, record);
      log(logLine({ id: requestId, method, path: pathOf(url), startedMs, nowMs: now(), status }, record));
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
      if (err instanceof ClientClosedError) {
        record.errorCode = 'client_closed';
        handlerDone();
        if (!res.writableEnded) res.destroy();
        return;
      }
      record.errorCode = err instanceof GatewayError ? err.code : 'internal_error';
      handlerDone();
      sendError(res, err, (bug) => {
        log(logMessage('error', `request ${requestId} failed: ${bug instanceof Error ? (bug.stack ?? bug.message) : String(bug)}`));
      }, isMessagesOperation(pathOf(url)));
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
    srv.on('clientError', answerClientError);
    server = srv;
    keys.watch((message) => log(logMessage('warn', message)));
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

/** Requests node:http could not parse or that took too long: answered in our error body, then closed. */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
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
}
