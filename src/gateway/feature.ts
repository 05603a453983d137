/**
 * What the gateway hands the features mounted on it (the device flow, the dashboard and device
 * pages): its services, its log and metrics, and a place to add routes. A feature is a function of
 * these, passed to `createGateway({ features })`; the core imports no feature.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config/types.ts';
import type { Catalog } from '../catalog/catalog.ts';
import type { KeyStore } from '../auth/key-store.ts';
import type { DeviceFlow, DeviceFlowOptions } from '../auth/device-flow.ts';
import type { Limiter } from '../limits/limiter.ts';
import type { UsageLedger } from '../usage/ledger.ts';
import type { Metrics } from './metrics.ts';
import type { Logger } from './request-log.ts';
import type { RequestRecord } from './request-record.ts';
import type { ErrorContext, GatewayError } from '../common/errors.ts';
import type { DoctorReport } from '../doctor/report.ts';
import type { DeploymentSnapshot } from '../routing/index.ts';

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, record: RequestRecord) => Promise<void> | void;

/** How a route answers what goes wrong on it. */
export interface RouteOptions {
  /**
   * Renders an error on this route (a refusal, a 405 on its path) as its clients' format expects
   * it (src/dialects/: the messages format's carries `"type": "error"`); our error body by default.
   * Given the request's headers and URL, a route shared by formats renders in the one its client speaks.
   */
  errors?: (error: GatewayError, context: ErrorContext) => string;
}

export interface RouteRegistry {
  add(method: string, path: string, handler: RouteHandler, options?: RouteOptions): void;
}

/** The gateway's shared services, as routes and pages use them. */
export interface GatewayServices {
  config: Config;
  catalog: Catalog;
  keys: KeyStore;
  limiter: Limiter;
  /** The usage ledger: spend for budgets, rows for the usage view. */
  usage: UsageLedger;
  /** Device grants on the shared-state server, when there is one; without it the device flow keeps them in the process. */
  deviceFlow?(options: DeviceFlowOptions): DeviceFlow;
  /** Runs `llmux doctor`'s checks against the config this gateway runs with (the dashboard's Health section). */
  health?(): Promise<DoctorReport>;
  /** Every deployment's counters and health (llmux.md section 10), for the dashboard. */
  deployments?(): DeploymentSnapshot[];
  now(): number;
}

export interface GatewayInternals {
  ctx: GatewayServices;
  metrics: Metrics;
  log: Logger;
  routes: RouteRegistry;
}

/** Mounts a feature's routes on a gateway being created. */
export type Feature = (internals: GatewayInternals) => void;
