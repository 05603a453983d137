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
}

/**
 * `carrier`, telling `learn` the secrets it holds each time it has authorised a request or checked
 * its credentials: the redactor knows a new token before any answer made with it can echo it.
 */
function learning(carrier: Carrier, learn: (secret: string) => void): Carrier {
  const secrets = carrier.secrets;
  if (secrets === undefined) return carrier;
  const tell = (): void => {
    for (const secret of secrets()) learn(secret);
  };
  const checked = carrier.credentials;
  return {
    ...carrier,
    authorise(request) {
      const pending = carrier.authorise(request);
      if (pending === undefined) {
        tell();
        return undefined;
      }
      return pending.then(tell);
    },
    ...(checked === undefined ? {} : {
      async credentials() {
        const state = await checked();
        tell();
        return state;
      },
    }),
  };
}

export function createCarriers(services: PlatformServices): Carriers {
  // Providers are the config's objects (and the echo model's constant), the same for the process's life.
  const bound = new WeakMap<ProviderConfig, Carrier>();
  const { learn } = services;
  return {
    of(provider) {
      let carrier = bound.get(provider);
      if (carrier === undefined) {
        carrier = platforms[provider.platform ?? 'http'].bind(provider, services);
        if (learn !== undefined) carrier = learning(carrier, learn);
        bound.set(provider, carrier);
      }
      return carrier;
    },
  };
}
