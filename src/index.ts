/**
 * The embeddable API: `import { createGateway } from 'llmux'`.
 */
import './features.ts';
export { createGateway } from './server.ts';
export type { Gateway, GatewayOptions, LogRecord, Logger } from './server.ts';
export { createKeyStore } from './auth/key-store.ts';
export type { KeyStore, KeyRecord, NewKey } from './auth/key-store.ts';
export type { Config, ModelEntry, ProviderConfig, TierLimits, TierName } from './config-types.ts';
export { VERSION } from './version.ts';
