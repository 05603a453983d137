/**
 * The embeddable API: `import { createGateway } from 'llmux'`. The package's `createGateway` mounts
 * the standard features (device flow, dashboard) unless `features` says otherwise.
 */
import { createGateway as createCoreGateway } from './gateway/server.ts';
import type { Gateway, GatewayOptions } from './gateway/server.ts';
import { createWebFeature, standardFeatures } from './gateway/features.ts';

export function createGateway(options: GatewayOptions = {}): Gateway {
  return createCoreGateway({ ...options, features: options.features ?? standardFeatures });
}

export { createWebFeature, standardFeatures };
export type { Gateway, GatewayOptions, LogRecord, Logger, Feature } from './gateway/server.ts';
export { createKeyStore } from './auth/key-store.ts';
export type { KeyStore, KeyRecord, NewKey } from './auth/key-store.ts';
export type { Budget, BudgetPeriod, Config, ModelEntry, ProviderConfig, TierLimits, TierName } from './config/types.ts';
export type { UsageEntry, UsageLedger, UsageQuery, UsageRow } from './usage/ledger.ts';
export { VERSION } from './common/version.ts';
