/**
 * A provider's credentials as a pool (config `api_keys`, llmux.md section 10): requests spread
 * over the keys, each key with its own rest. A provider with one `api_key` is a pool of one; a
 * keyless one (a local server, a platform signing its own requests) has none.
 *
 * A key is named, wherever it shows (rest subjects, the shared state, log lines, metrics), by the
 * environment variable that holds it (`env:OPENAI_KEY_A` is `OPENAI_KEY_A`) or by its place in the
 * config (`api_keys[1]`, `api_key`): never by its value, nor a hash of it.
 */
import type { ProviderConfig } from '../config/types.ts';

const ENV_PREFIX = 'env:';

export interface ProviderKey {
  /** Index in the provider's `api_keys` (0 for a lone `api_key`): the caller resolves the value by it. */
  readonly index: number;
  /** How logs and the shared state name it. */
  readonly label: string;
}

const pools = new WeakMap<ProviderConfig, readonly ProviderKey[]>();

function labelOf(written: string, place: string): string {
  return written.startsWith(ENV_PREFIX) ? written.slice(ENV_PREFIX.length) : place;
}

/** The provider's keys, in config order; the same array for the same provider. */
export function keysOf(provider: ProviderConfig): readonly ProviderKey[] {
  let keys = pools.get(provider);
  if (keys === undefined) {
    if (provider.apiKeys !== undefined) {
      keys = provider.apiKeys.map((written, index) => Object.freeze({ index, label: labelOf(written, `api_keys[${index}]`) }));
    } else if (provider.apiKey !== undefined && provider.apiKey !== '') {
      keys = [Object.freeze({ index: 0, label: labelOf(provider.apiKey, 'api_key') })];
    } else {
      keys = [];
    }
    keys = Object.freeze(keys);
    pools.set(provider, keys);
  }
  return keys;
}

/** The credential of key `index` as written in config (a literal or `env:NAME`); the caller resolves `env:`. */
export function writtenKey(provider: ProviderConfig, index: number): string | undefined {
  return provider.apiKeys !== undefined ? provider.apiKeys[index] : index === 0 ? provider.apiKey : undefined;
}
