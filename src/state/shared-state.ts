/**
 * Everything several llmux processes share, opened on one state server (llmux.md section 6): the
 * key store, the limiter, device grants, the usage ledger, the Responses API's stored
 * responses and seal secret, and chat clients' carried reasoning state, each behind the interface
 * its in-process counterpart serves.
 *
 * Connections: one for the request path (admissions, keys, grants, usage writes); one for pub/sub
 * (key changes), opened by the client itself; and one for bulk reads (usage queries, stored
 * responses), so a large reply never holds up an admission behind it. Every command on either
 * has `state.timeout_ms`, reads of usage and stored responses included. The first one's status is the gateway's health: see ./health.ts.
 *
 * The Responses API's state (`responses`) is made here; the gateway hands it to the Responses
 * dialect instead of its in-memory store and the secret in LLMUX_HOME when state is shared.
 */
import type { StateConfig } from '../config/types.ts';
import type { DeviceFlowOptions } from '../auth/device-flow.ts';
import { createRespClient, parseStateUrl } from './resp.ts';
import type { RespClient } from './resp.ts';
import { createStateHealth } from './health.ts';
import type { StateHealth } from './health.ts';
import { createSharedKeyStore } from './key-store.ts';
import type { SharedKeyStore } from './key-store.ts';
import { createSharedLimiter } from './limiter.ts';
import type { SharedLimiter } from './limiter.ts';
import { createSharedDeviceFlow } from './device-grants.ts';
import type { SharedDeviceFlow } from './device-grants.ts';
import { createSharedLedger } from './usage-ledger.ts';
import type { SharedLedger } from './usage-ledger.ts';
import { createSharedResponsesState } from './responses.ts';
import { createSharedBudgetHolds } from './budget-holds.ts';
import type { SharedBudgetHolds } from './budget-holds.ts';
import type { SharedResponsesState } from './responses.ts';
import { createSharedRoutingState } from './routing.ts';
import type { SharedRoutingState } from './routing.ts';
import { createSharedCarriedStore } from './carried.ts';
import type { CarriedStore } from '../carry/store.ts';

/** How long `ready` waits for the first read of the keys before the gateway starts without them. */
const FIRST_READ_WAIT_MS = 5_000;

export interface SharedStateOptions {
  state: StateConfig;
  /** A clock for everything instead of the server's and the process's (tests). */
  now?: (() => number) | undefined;
  /** Lines for the log: the state server going away and coming back, records it cannot use. */
  log?(level: 'warn' | 'info', message: string): void;
  /** The limiter's window (default 60 000) and unadmitted budget per process. */
  windowMs?: number;
  unadmittedBytes?: number;
  /** Stored responses' life and largest size (config `responses`). */
  responses?: { ttlMs?: number; maxBytes?: number };
  /** Prefix of every key written; default `llmux:` (tests use their own). */
  prefix?: string;
  /** Certificate authorities for `rediss://` with a private CA. */
  ca?: string | Buffer;
}

export interface SharedState {
  /** The server as logs may show it (no password). */
  readonly displayUrl: string;
  readonly client: RespClient;
  readonly health: StateHealth;
  readonly keys: SharedKeyStore;
  readonly limiter: SharedLimiter;
  readonly usage: SharedLedger;
  /** Budget reservations of requests in flight, held on the server. */
  readonly budgets: SharedBudgetHolds;
  readonly responses: SharedResponsesState;
  /** Chat clients' opaque reasoning state by tool call (llmux.md section 11). */
  readonly carried: CarriedStore;
  /** Rests, in-flight leases, per-deployment windows and the sticky map (src/routing/). */
  readonly routing: SharedRoutingState;
  /** A device-grant store on the server, with the device flow's settings. */
  deviceFlow(options?: DeviceFlowOptions): SharedDeviceFlow;
  /** Settles once the keys were first read, or could not be within a few seconds. */
  readonly ready: Promise<void>;
  /** Writes what usage is pending, stops timers and closes the connections. */
  close(): Promise<void>;
}

/** Opens the shared state; throws only for a bad URL (config has checked it already). */
export function openSharedState(options: SharedStateOptions): SharedState {
  const { state } = options;
  const displayUrl = parseStateUrl(state.url).displayUrl;
  const prefix = options.prefix ?? 'llmux:';
  const now = options.now;
  const clientOptions = { url: state.url, timeoutMs: state.timeoutMs, ...(options.ca === undefined ? {} : { ca: options.ca }) };
  const client = createRespClient(clientOptions);
  const bulk = createRespClient(clientOptions);
  const health = createStateHealth({
    client,
    policy: state.onFailure,
    displayUrl,
    onChange: (degraded, message) => options.log?.(degraded ? 'warn' : 'info', message),
  });
  const warn = (message: string): void => options.log?.('warn', message);
  const clock = now === undefined ? {} : { now };
  const keys = createSharedKeyStore({ client, displayUrl, prefix, ...clock });
  const limiter = createSharedLimiter({
    client,
    health,
    prefix,
    leaseMs: state.leaseMs,
    onError: warn,
    ...clock,
    ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }),
    ...(options.unadmittedBytes === undefined ? {} : { unadmittedBytes: options.unadmittedBytes }),
  });
  // Every read, usage queries included, has `state.timeout_ms` (the bulk client's): a hung server
  // is a prompt 503 on `GET /v1/usage` too, not a wait (issue 25).
  const usage = createSharedLedger({ client, queryClient: bulk, prefix, onError: (error) => warn(error.message), ...clock });
  const budgets = createSharedBudgetHolds({ client, health, ledger: usage, prefix, leaseMs: state.leaseMs, onError: warn, ...clock });
  const responses = createSharedResponsesState({ client: bulk, prefix, ...options.responses });
  const routing = createSharedRoutingState({ client, health, prefix, leaseMs: state.leaseMs, onError: warn, ...clock });
  const carried = createSharedCarriedStore({ client: bulk, prefix });
  const ready = Promise.race([keys.ready, new Promise<void>((resolve) => setTimeout(resolve, FIRST_READ_WAIT_MS).unref())]);

  let closing: Promise<void> | undefined;
  return {
    displayUrl,
    client,
    health,
    keys,
    limiter,
    usage,
    budgets,
    responses,
    carried,
    routing,
    deviceFlow: (flowOptions = {}) => createSharedDeviceFlow({ client, prefix, ...clock, ...flowOptions }),
    ready,
    close() {
      closing ??= (async () => {
        // Not a degradation: the health stops listening before the connections go.
        health.close();
        limiter.close();
        routing.close();
        budgets.close();
        keys.close();
        await usage.close();
        await Promise.all([client.close(), bulk.close()]);
      })();
      return closing;
    },
  };
}
