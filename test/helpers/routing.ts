/**
 * A router over hand-made providers and models, with a clock and a random source the test moves.
 */
import type { ModelEntry, ProviderConfig } from '../../src/config/types.ts';
import { DEFAULT_CAPABILITIES } from '../../src/config/types.ts';
import { createRouter } from '../../src/routing/router.ts';
import type { RestEvent, Router, RouterOptions } from '../../src/routing/router.ts';
import type { RoutingState } from '../../src/routing/state.ts';
import { createMemoryRoutingState } from '../../src/routing/state.ts';

export const T0 = Date.UTC(2026, 2, 14, 10, 0, 0);

export function provider(id: string, fields: Partial<ProviderConfig> = {}): ProviderConfig {
  return { id, format: 'chat', baseUrl: `http://${id}.invalid/v1`, apiKey: undefined, keyless: true, headers: {}, ...fields };
}

export function pool(id: string, keys: string[]): ProviderConfig {
  return provider(id, { apiKey: keys[0], apiKeys: keys, keyless: false });
}

export function model(id: string, fields: Partial<ModelEntry> = {}): ModelEntry {
  return {
    id,
    provider: fields.deployments?.[0]?.provider ?? 'p',
    upstream_id: fields.deployments?.[0]?.upstream_id ?? id,
    display_name: id,
    owned_by: 'p',
    type: 'chat',
    created_at: '2026-01-01T00:00:00.000Z',
    context_length: 100_000,
    max_output_tokens: 4_096,
    capabilities: { ...DEFAULT_CAPABILITIES },
    pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
    reasoning: false,
    fallbacks: [],
    max_tokens_param: 'max_tokens',
    replay_reasoning: false,
    ...fields,
  };
}

export interface RoutingFixture {
  router: Router;
  state: RoutingState;
  events: RestEvent[];
  clock: { now: number };
  /** Keys whose credential does not resolve: `provider#index`. */
  missing: Set<string>;
}

export function routingFixture(
  providers: ProviderConfig[],
  models: ModelEntry[],
  options: { random?: () => number; state?: RoutingState; configModels?: ModelEntry[] } & Partial<Pick<RouterOptions, 'onRest'>> = {},
): RoutingFixture {
  const clock = { now: T0 };
  const byId = new Map(providers.map((p) => [p.id, p]));
  const events: RestEvent[] = [];
  const missing = new Set<string>();
  const state = options.state ?? createMemoryRoutingState({ now: () => clock.now });
  const router = createRouter({
    models: options.configModels ?? models,
    provider: (id) => byId.get(id),
    hasCredential: (p, index) => !missing.has(`${p.id}#${index ?? '-'}`),
    state,
    now: () => clock.now,
    random: options.random ?? Math.random,
    onRest: (event) => events.push(event),
  });
  return { router, state, events, clock, missing };
}
