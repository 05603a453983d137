/**
 * `createGateway(options)`: wiring only. Builds the config, catalog, key store, limiter, usage
 * ledger, span exporter and upstream client, mounts the core routes and the features it is given,
 * and returns `{ handler, listen, close }` so the gateway can be mounted on an existing
 * `node:http` server or run on its own.
 */
import { createServer, STATUS_CODES } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config/types.ts';
import { loadConfig } from '../config/load.ts';
import type { ConfigInput } from '../config/load.ts';
import { createCatalog } from '../catalog/catalog.ts';
import type { Catalog } from '../catalog/catalog.ts';
import { resolveApiKey, resolvePoolKeys, resolveSecret } from '../catalog/providers.ts';
import { createKeyStore } from '../auth/key-store.ts';
import type { KeyStore } from '../auth/key-store.ts';
import type { DeviceFlowOptions } from '../auth/device-flow.ts';
import { createLimiter } from '../limits/limiter.ts';
import type { Limiter } from '../limits/limiter.ts';
import { createUpstreamClient } from '../providers/upstream.ts';
import { sleepUnlessCancelled } from '../providers/attempts.ts';
import { createCarriers } from '../platforms/index.ts';
import { createCredentialWatch } from '../platforms/credential-watch.ts';
import { ECHO_PROVIDER, createEchoTransport } from '../providers/echo.ts';
import { createRedactor, credentialsOf } from '../providers/redact.ts';
import { forwardToProvider } from '../providers/forward.ts';
import { createRouter, pathOf } from '../http/router.ts';
import { createBodyBudget } from '../http/body-budget.ts';
import { listenOn } from '../http/listen.ts';
import { limitUnreadBody, mayOutgrowDiscard } from '../http/body.ts';
import { ClientClosedError, GatewayError, errorBody, notFound } from '../common/errors.ts';
import { pickRequestId, sendError, setHeadHeader, setHeadOnResponse } from '../http/respond.ts';
import type { PipelineContext } from './pipeline.ts';
import { createJsonRecall } from '../common/json-recall.ts';
import { createRoster } from '../common/roster.ts';
import { mountCoreRoutes } from './routes.ts';
import { createGatewayRouting } from './routing.ts';
import type { GatewayRouting } from './routing.ts';
import { createMetrics } from './metrics.ts';
import { createStderrLogger, logLine, logMessage, redactLine } from './request-log.ts';
import type { Logger } from './request-log.ts';
import type { RequestRecord } from './request-record.ts';
import type { Feature, GatewayInternals, RouteHandler, RouteOptions } from './feature.ts';
import { createFileLedger } from '../usage/ledger.ts';
import type { UsageLedger } from '../usage/ledger.ts';
import { whenOpen } from '../usage/opening-ledger.ts';
import { createSpanExporter } from '../usage/otlp.ts';
import type { SpanExporter } from '../usage/otlp.ts';
import { createUsageRecorder } from '../usage/recorder.ts';
import { createBudgetHolds } from '../usage/budget.ts';
import { createLocalResponsesState } from '../responses/state.ts';
import { createMemoryCarriedStore } from '../carry/store.ts';
import type { ResponsesState } from '../responses/state.ts';
import { openSharedState } from '../state/shared-state.ts';
import type { SharedState } from '../state/shared-state.ts';
import { VERSION } from '../common/version.ts';

export type { LogRecord, Logger } from './request-log.ts';
export type { Feature, GatewayInternals, RouteRegistry } from './feature.ts';

/** The log's status for a request whose client left before any answer (nginx's convention). */
const CLIENT_CLOSED_STATUS = 499;
/** The in-stream error of a stream still open when the gateway stops. */
const STREAM_CUT_AT_SHUTDOWN = 'llmux is shutting down; this answer was cut before it was complete';
/** How long the in-stream errors of cut streams get to reach their clients before the sockets close. */
const LAST_FRAMES_MS = 200;

export interface GatewayOptions extends Omit<ConfigInput, 'file'> {
  /** A config object in the config file's shape; when absent, the file named by configPath/env/home is read. */
  config?: unknown;
  /** A key store to use instead of `$LLMUX_HOME/keys.json`. */
  keyStore?: KeyStore;
  /** A usage ledger to use instead of the files in `$LLMUX_HOME/usage/` (opened by the caller, closed by the gateway). */
  usageLedger?: UsageLedger;
  /** Stored Responses API answers and the reasoning seal, instead of this process's memory and `$LLMUX_HOME/responses-secret`. */
  responsesState?: ResponsesState;
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
  /**
   * Stops accepting, lets in-flight requests finish (at most `limits.shutdown_timeout_ms`), cuts
   * the streams still open with an in-stream error, then closes everything. `{ now: true }` does
   * not wait (and ends the wait of a close already under way); calling it again otherwise gives
   * the same promise.
   */
  close(options?: { now?: boolean }): Promise<void>;
  readonly config: Config;
  readonly catalog: Catalog;
  readonly keys: KeyStore;
  readonly limiter: Limiter;
  /** Usage per key × model × UTC hour, as `GET /v1/usage` reads it. */
  readonly usage: UsageLedger;
  /** The shared state, when config `state` (or `LLMUX_STATE_URL`) names a server. */
  readonly state: SharedState | undefined;
  /** Deployments and routing (llmux.md section 10): the router, aliases and routes, discovered models. */
  readonly routing: GatewayRouting;
  readonly server: Server | undefined;
}

/** How long listening waits for the first check of platform providers' credentials (it goes on after). */
const PLATFORM_CREDENTIALS_WAIT_MS = 3_000;
/** How long shutdown waits for the last spans to reach a collector. */
const SPAN_FLUSH_ON_CLOSE_MS = 2_000;
/** At most one warning this often while spans are being dropped. */
const SPAN_DROP_WARNING_MS = 60_000;

export function createGateway(options: GatewayOptions = {}): Gateway {
  const config = loadConfig({ ...options, file: options.config });
  const now = options.now ?? Date.now;
  // Every credential, those configured and those platforms learn at run time, out of what clients and the log see.
  const redactor = createRedactor([
    ...credentialsOf(Object.values(config.providers), (provider) => resolveApiKey(provider, config.env)),
    // Every key of every pool is a credential too.
    ...Object.values(config.providers).flatMap((provider) => resolvePoolKeys(provider, config.env)),
  ]);
  const logger: Logger = options.logger === null ? () => {} : (options.logger ?? createStderrLogger());
  const log: Logger = (line) => logger(redactLine(line, redactor));
  const carriers = createCarriers({ secret: (written) => resolveSecret(written, config.env), env: config.env, now, learn: (secret) => redactor.learn(secret) });
  // Platform providers' credentials are resolved beside start-up (bounded) and again now and then;
  // the catalog lists their models only when they resolve.
  const credentialWatch = createCredentialWatch({ providers: Object.values(config.providers), carriers });
  const credentialsChecked = credentialWatch.start(PLATFORM_CREDENTIALS_WAIT_MS);
  const catalog = createCatalog({
    providers: config.providers,
    models: config.models,
    builtinCatalog: config.builtinCatalog,
    env: config.env,
    platformUsable: (provider) => credentialWatch.usable(provider),
    // Read at request time, once routing (below) is made.
    discovered: { models: () => routing.discovery.models(), get: (id) => routing.discovery.get(id) },
  });
  // Bodies held at once: four of the largest in all, one per key (src/http/body-budget.ts); and a
  // key's refused or count_tokens bodies may total four of the largest a minute.
  const { maxBodyBytes } = config.limits;
  // Several processes acting as one gateway keep keys, limits, grants, usage, stored responses
  // and the reasoning-seal secret on one server.
  const shared = config.state === undefined ? undefined : openSharedState({
    state: config.state,
    now: options.now,
    log: (level, message) => log(logMessage(level, message)),
    unadmittedBytes: 4 * maxBodyBytes,
    responses: { ttlMs: config.responses.storeTtlMs, maxBytes: config.responses.storeMaxBytes },
  });
  const keys = options.keyStore ?? shared?.keys ?? createKeyStore(config.home, { now });
  const limiter: Limiter = shared?.limiter ?? createLimiter({ now, unadmittedBytes: 4 * maxBodyBytes });
  const bodies = createBodyBudget({ totalBytes: 4 * maxBodyBytes, perOwnerBytes: maxBodyBytes });
  const upstream = createUpstreamClient(createEchoTransport());
  const metrics = createMetrics();
  const usage = whenOpen(options.usageLedger !== undefined ? Promise.resolve(options.usageLedger) : shared !== undefined ? Promise.resolve(shared.usage) : createFileLedger({
    dir: join(config.home, 'usage'),
    now,
    onError: (error) => log(logMessage('warn', `usage ledger: ${error.message}`)),
  }));
  const exporter = createExporter(config, log);
  const recorder = createUsageRecorder({ ledger: usage, exporter });
  const budgets = shared?.budgets ?? createBudgetHolds({ ledger: usage, now });
  const responses = options.responsesState ?? shared?.responses ?? createLocalResponsesState({
    home: config.home,
    ttlMs: config.responses.storeTtlMs,
    maxBytes: config.responses.storeMaxBytes,
    now,
  });
  const providerOf = (id: string) => catalog.provider(id) ?? (id === ECHO_PROVIDER.id ? ECHO_PROVIDER : undefined);
  const routing = createGatewayRouting({
    config,
    provider: providerOf,
    isModel: (id) => catalog.get(id) !== undefined,
    isConfigured: (id) => catalog.configured(id),
    platformUsable: (provider) => credentialWatch.usable(provider),
    state: shared?.routing,
    log,
    now,
    random: options.random ?? Math.random,
  });
  const ctx: PipelineContext = {
    config,
    catalog,
    keys,
    limiter,
    usage,
    budgets,
    bodies,
    state: { responses, carried: shared?.carried ?? createMemoryCarriedStore({ now }) },
    resolver: routing.resolver,
    recall: createJsonRecall({ now }),
    now,
    ...(shared === undefined ? {} : { deviceFlow: (flowOptions: DeviceFlowOptions) => shared.deviceFlow(flowOptions) }),
    registerStream: (cut) => openStreams.add(cut),
    attempts: {
      model: (id) => catalog.get(id),
      provider: providerOf,
      carriers,
      router: routing.router,
      redact: redactor,
      transport: upstream,
      retry: config.retry,
      connectTimeoutMs: config.limits.connectTimeoutMs,
      firstByteTimeoutMs: config.limits.upstreamTimeoutMs,
      idleTimeoutMs: config.limits.streamIdleTimeoutMs,
      now,
      random: options.random ?? Math.random,
      sleep: sleepUnlessCancelled,
    },
  };
  const router = createRouter<RouteHandler>();
  /** How errors on a route are rendered, by its pattern, when its clients' format has its own shape. */
  const errorShapes = new Map<string, NonNullable<RouteOptions['errors']>>();
  const routes = { add: (method: string, path: string, handler: RouteHandler, options?: RouteOptions) => {
    router.add(method, path, handler);
    if (options?.errors !== undefined) errorShapes.set(path, options.errors);
  } };
  /**
   * Requests not yet logged. A count, not a Set of their responses (see src/common/roster.ts): with
   * the Set, every request's objects were promoted to the old generation, 3.7 KB a 1 KB request
   * against 0.45 KB with the count (bench/what-is-left.md, "Issue 26's eleventh round").
   */
  let inFlight = 0;
  /** How to cut each open stream: its relay's in-stream error, then the end. */
  const openStreams = createRoster<(message: string) => void>();
  let server: Server | undefined;
  let closing = false;

  mountCoreRoutes(routes, {
    ...ctx,
    metrics,
    startedAtMs: now(),
    isClosing: () => closing,
    openRequests: () => inFlight,
    stateDegraded: () => shared?.health.degraded(),
    forward: (providerId, method, path) => forwardToProvider(ctx.attempts, providerId, method, path),
    deployments: () => routing.router.snapshot(),
  });
  // The health checks are loaded when an admin runs them: most gateways never do.
  const health = async () => (await import('../doctor/doctor.ts')).diagnose({ load: () => config, running: true });
  // A feature may write its answer with `res.writeHead` or `res.end` itself: the head's headers (request
  // ids, src/http/respond.ts) are set on the response before its handler runs, so none is lost.
  const featureRoutes = { add: (method: string, path: string, handler: RouteHandler, options?: RouteOptions) => {
    routes.add(method, path, (req, res, params, record) => {
      setHeadOnResponse(res);
      return handler(req, res, params, record);
    }, options);
  } };
  const internals: GatewayInternals = { ctx: { ...ctx, health, deployments: () => routing.router.snapshot() }, metrics, log, routes: featureRoutes };
  for (const mount of options.features ?? []) mount(internals);

  function handler(req: IncomingMessage, res: ServerResponse): void {
    const startedMs = now();
    const requestId = pickRequestId(req.headers);
    setHeadHeader(res, 'x-request-id', requestId);
    // The Anthropic SDKs read `request-id` (llmux.md section 3).
    setHeadHeader(res, 'request-id', requestId);
    const record: RequestRecord = { attempts: [] };
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    inFlight++;
    let logged = false;
    const writeLog = (): void => {
      if (logged) return;
      logged = true;
      inFlight--;
      const status = res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
      const endedMs = now();
      metrics.observe(status, record, endedMs - startedMs);
      recorder.observe({ requestId, method, status, startedMs, endedMs, traceparent: traceparentOf(req) }, record);
      log(logLine({ id: requestId, method, path: pathOf(url), startedMs, nowMs: endedMs, status }, record));
      // While shutting down, a connection whose last answer just ended has nothing left to do.
      if (closing) setImmediate(() => server?.closeIdleConnections());
    };
    // The line is written once the response is closed and the handler has settled usage, in
    // whichever order those happen ('close' can come before the handler's last await resumes).
    let closed = false;
    let handled = false;
    // `on`, not `once`: a response emits each once, and a once-wrapper is held as long as it is open.
    res.on('close', () => {
      closed = true;
      if (handled) writeLog();
    });
    // Whatever the answer, a body left unread is discarded only up to a bound.
    res.on('finish', () => limitUnreadBody(req));
    const handlerDone = (): void => {
      handled = true;
      if (closed) writeLog();
    };

    const route = router.match(method, url);
    // Not async: the route's own promise is what is waited on (an async wrapper would add two).
    const run = (): Promise<void> | void => {
      // llmux serves no WebSockets. Refused at once with 426, Codex (and other Responses clients
      // that try a WebSocket first) fall back to HTTP at once; other statuses make them retry.
      if (isWebSocketUpgrade(req)) {
        throw new GatewayError(426, 'invalid_request_error', 'websocket_not_supported', 'llmux does not serve WebSockets; send the same request over HTTP (POST /v1/responses streams with stream: true)', {
          headers: { connection: 'close' },
        });
      }
      if (route.kind === 'not_found') throw notFound(`No route for ${method} ${pathOf(url).slice(0, 200)}; see the README for the operations llmux serves`);
      if (route.kind === 'method_not_allowed') {
        throw new GatewayError(405, 'invalid_request_error', 'method_not_allowed', `${method} is not allowed here; allowed: ${route.allow}`, { headers: { allow: route.allow } });
      }
      if (closing) setHeadHeader(res, 'connection', 'close');
      record.route = route.match.pattern;
      return route.match.handler(req, res, route.match.params, record);
    };
    let running: Promise<void> | void;
    try {
      running = run();
    } catch (err) {
      running = Promise.reject(err);
    }
    Promise.resolve(running).then(handlerDone, (err: unknown) => {
      if (err instanceof ClientClosedError) {
        record.errorCode = 'client_closed';
        handlerDone();
        if (!res.writableEnded) res.destroy();
        return;
      }
      record.errorCode = err instanceof GatewayError ? err.code : 'internal_error';
      handlerDone();
      // Refused before its body was read (401, 404, 413, 429, ...): when the rest may be more than
      // is discarded (see limitUnreadBody), the client is told the connection ends with this answer.
      if (mayOutgrowDiscard(req) && !res.headersSent) setHeadHeader(res, 'connection', 'close');
      sendError(res, err, (bug) => {
        log(logMessage('error', `request ${requestId} failed: ${bug instanceof Error ? (bug.stack ?? bug.message) : String(bug)}`));
      }, route.kind === 'not_found' ? undefined : errorShapes.get(route.kind === 'found' ? route.match.pattern : route.pattern));
    });
  }

  async function listen(port = config.port, host = config.host): Promise<{ port: number; host: string; url: string }> {
    const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = config.limits;
    const srv = createServer({
      // Slow or half-open clients can't hold sockets forever: headers and whole requests have
      // deadlines, checked often enough that a short deadline is kept. (Node refuses a request
      // timeout below the headers timeout. The headers timeout starts with a request's first
      // byte, so it may be shorter than the keep-alive timeout an idle connection waits.)
      headersTimeout: headersTimeoutMs,
      requestTimeout: Math.max(requestTimeoutMs, headersTimeoutMs),
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(headersTimeoutMs / 4))),
      keepAliveTimeout: keepAliveTimeoutMs,
    }, handler);
    srv.timeout = 0;
    srv.on('clientError', answerClientError);
    server = srv;
    try {
      await usage.ready;
    } catch (err) {
      throw new Error(`could not open the usage ledger in ${join(config.home, 'usage')}: ${err instanceof Error ? err.message : String(err)}`);
    }
    // Shared keys: served from a replica, read once before the first request (or given up on, a
    // few seconds in, with the server away: the gateway starts degraded and reads them when it is back).
    await shared?.ready;
    await credentialsChecked;
    keys.watch((message) => log(logMessage('warn', message)));
    await listenOn(srv, port, host);
    const address = srv.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return { port: address.port, host: address.address, url: `http://${shownHost}:${address.port}` };
  }

  let closed: Promise<void> | undefined;
  /** Ends the wait of a close under way. */
  let stopWaiting: (() => void) | undefined;

  function close(options: { now?: boolean } = {}): Promise<void> {
    if (options.now === true) stopWaiting?.();
    closed ??= shutDown(options.now === true ? 0 : config.limits.shutdownTimeoutMs);
    return closed;
  }

  async function shutDown(graceMs: number): Promise<void> {
    closing = true;
    keys.close();
    credentialWatch.stop();
    const srv = server;
    if (srv !== undefined) {
      const allClosed = new Promise<void>((resolve) => srv.close(() => resolve()));
      srv.closeIdleConnections();
      const deadline = new Promise<void>((resolve) => {
        stopWaiting = resolve;
        setTimeout(resolve, graceMs).unref();
      });
      await Promise.race([allClosed, deadline]);
      if (openStreams.size > 0) {
        // Streams still open are told why they end, so their clients can tell the answer is cut.
        for (const cut of openStreams.values()) cut(STREAM_CUT_AT_SHUTDOWN);
        await Promise.race([allClosed, new Promise((resolve) => setTimeout(resolve, LAST_FRAMES_MS).unref())]);
      }
      srv.closeAllConnections();
    }
    upstream.close();
    routing.close();
    // Responses cut off at the deadline record their usage as they close: let them, then flush.
    await new Promise<void>((resolve) => setImmediate(resolve));
    await usage.close();
    await shared?.close();
    if (exporter !== undefined) {
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, SPAN_FLUSH_ON_CLOSE_MS).unref());
      await Promise.race([exporter.close(), deadline]);
    }
  }

  return {
    handler,
    listen,
    close,
    config,
    catalog,
    keys,
    limiter,
    usage,
    state: shared,
    routing,
    get server() {
      return server;
    },
  };
}

/** Whether the request asks to become a WebSocket. */
function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const upgrade = req.headers.upgrade;
  return typeof upgrade === 'string' && upgrade.toLowerCase().includes('websocket');
}

/** The client's `traceparent`, for a span to join its trace. */
function traceparentOf(req: IncomingMessage): string | undefined {
  const value = req.headers.traceparent;
  return typeof value === 'string' ? value : undefined;
}

/** The span exporter when `telemetry.otlp_endpoint` is set; spans it drops are said in the log, at most once a minute. */
function createExporter(config: Config, log: Logger): SpanExporter | undefined {
  const endpoint = config.telemetry.otlpEndpoint;
  if (endpoint === undefined) return undefined;
  let dropped = 0;
  let warnedAtMs = -Infinity;
  return createSpanExporter({
    endpoint,
    headers: config.telemetry.headers,
    serviceVersion: VERSION,
    onDrop(count, reason) {
      dropped += count;
      const nowMs = Date.now();
      if (nowMs - warnedAtMs < SPAN_DROP_WARNING_MS) return;
      warnedAtMs = nowMs;
      log(logMessage('warn', `telemetry: ${dropped} span(s) dropped (${reason === 'queue_full' ? 'the queue was full' : `export to ${endpoint} failed`})`));
      dropped = 0;
    },
  });
}

/** A route's error shape bound to the request it answers (a shared route renders in its client's format). */
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
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}
