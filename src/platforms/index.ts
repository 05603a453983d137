/**
 * The platform table (see ./platform.ts): one entry per platform a provider may name in its
 * config `platform`. A new platform is its file here and one entry below (its name added to
 * `PlatformName` in src/config/types.ts); nothing else branches on the platform.
 */
import type { PlatformName, ProviderConfig } from '../config/types.ts';
import type { Carrier, Platform, PlatformServices } from './platform.ts';
import { httpPlatform } from './http.ts';
import { bedrockPlatform } from './bedrock.ts';
import { vertexPlatform } from './vertex.ts';
import { azurePlatform } from './azure.ts';

export type { Carrier, CredentialState, OutgoingRequest, Platform, PlatformServices, UpstreamAnswer, UpstreamCall, UpstreamErrorWords } from './platform.ts';

export const platforms: { readonly [P in PlatformName]: Platform } = {
  http: httpPlatform,
  bedrock: bedrockPlatform,
  vertex: vertexPlatform,
  azure: azurePlatform,
};

/** Each provider's carrier, bound on first use and kept. */
export interface Carriers {
  of(provider: ProviderConfig): Carrier;
  /** The secrets every carrier bound so far has in play (./platform.ts `secrets`), for the redactor. */
  secrets?(): string[];
}

export function createCarriers(services: PlatformServices): Carriers {
  // Providers are the config's objects (and the echo model's constant), the same for the process's life.
  const bound = new WeakMap<ProviderConfig, Carrier>();
  // The ones that hold secrets of their own, so the redactor can ask them: a handful, one per provider.
  const withSecrets: Carrier[] = [];
  return {
    of(provider) {
      let carrier = bound.get(provider);
      if (carrier === undefined) {
        carrier = platforms[provider.platform ?? 'http'].bind(provider, services);
        bound.set(provider, carrier);
        if (carrier.secrets !== undefined) withSecrets.push(carrier);
      }
      return carrier;
    },
    secrets: () => withSecrets.flatMap((carrier) => carrier.secrets?.() ?? []),
  };
}
