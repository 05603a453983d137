/**
 * Routing's wiring (llmux.md section 10; src/routing/index.ts says how the pieces fit): the router
 * over the config's models and the routing state (this process's, or the one every process shares
 * on the state server), the resolver of aliases and routes, and the discovery of the models of
 * providers with `"discover": true`, started here and never waited for.
 *
 * A deployment's usability starts with its credentials: a provider key of a pool whose value
 * resolves now, or for a provider without keys, the provider being usable (keyless, or its
 * platform's own credentials): the same rule the catalog follows for what it lists.
 */
import type { Config, ProviderConfig } from '../config/types.ts';
import { isProviderUsable, resolveApiKey, resolveSecret } from '../catalog/providers.ts';
import { httpCredentialHeaders } from '../platforms/http.ts';
import { createDiscovery, createHttpModelsFetcher, createMemoryRoutingState, createResolver, createRouter, writtenKey } from '../routing/index.ts';
import type { Discovery, RestEvent, Resolver, Router, RoutingState } from '../routing/index.ts';
import { logMessage } from './request-log.ts';
import type { Logger } from './request-log.ts';

export interface GatewayRouting {
  router: Router;
  resolver: Resolver;
  discovery: Discovery;
  /** Stops discovery's timers and the routing state's. */
  close(): void;
}

export interface GatewayRoutingOptions {
  config: Config;
  /** The provider a deployment names (the echo model's included). */
  provider(id: string): ProviderConfig | undefined;
  /** A model served now: a real model's id is never aliased. */
  isModel(id: string): boolean;
  /** A model of this id is in the config or the built-in catalog: it wins over a discovered one. */
  isConfigured(id: string): boolean;
  /**
   * Whether a cloud platform's provider can be used now (its credentials resolved at their last
   * check, src/platforms/credential-watch.ts); undefined for one the check does not know, which is
   * then judged by its configured key.
   */
  platformUsable?: (provider: ProviderConfig) => boolean | undefined;
  /** The shared routing state (src/state/routing.ts); undefined: this process's own. */
  state: RoutingState | undefined;
  log: Logger;
  now: () => number;
  random: () => number;
}

export function createGatewayRouting(options: GatewayRoutingOptions): GatewayRouting {
  const { config, log, now } = options;
  const { env } = config;
  const router = createRouter({
    models: config.models,
    provider: options.provider,
    hasCredential: (provider, index) => (index === undefined
      ? options.platformUsable?.(provider) ?? isProviderUsable(provider, env)
      : resolveSecret(writtenKey(provider, index), env) !== undefined),
    state: options.state ?? createMemoryRoutingState({ now }),
    now,
    random: options.random,
    onRest: (event) => log(logMessage('warn', restMessage(event))),
  });
  const resolver = createResolver({ routing: config.routing, isModel: options.isModel });
  const discovery = createDiscovery({
    providers: Object.values(config.providers),
    fetchModels: createHttpModelsFetcher({ headers: discoveryHeaders(env) }),
    isConfigured: options.isConfigured,
    now,
    onError: (_provider, message) => log(logMessage('warn', message)),
  });
  discovery.start();
  return {
    router,
    resolver,
    discovery,
    close() {
      discovery.close();
      router.close();
    },
  };
}

/** A discovering provider's `GET /models` carries its configured headers and its credential, as its format sends it. */
function discoveryHeaders(env: Readonly<Record<string, string | undefined>>): (provider: ProviderConfig) => Record<string, string> {
  return (provider) => {
    const key = resolveApiKey(provider, env);
    return { ...provider.headers, ...(key === undefined ? {} : httpCredentialHeaders(provider.format, key)) };
  };
}

/** A rest as the log says it: keys by their label (the environment variable, or their place in the config), never their value. */
export function restMessage(event: RestEvent): string {
  const seconds = Math.round(event.restMs / 100) / 10;
  switch (event.kind) {
    case 'key':
      return `routing: provider "${event.provider}" refused its key ${event.key ?? ''} (HTTP ${event.cause}); the key rests for ${seconds} s and requests go on with its other keys: check that key`;
    case 'deployment_key':
      return `routing: key ${event.key ?? ''} on deployment "${event.deployment ?? ''}" rests for ${seconds} s after HTTP ${event.cause}`;
    default:
      return `routing: deployment "${event.deployment ?? ''}" rests for ${seconds} s after ${/^\d+$/.test(event.cause) ? `HTTP ${event.cause}` : event.cause}`;
  }
}
