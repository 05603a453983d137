/**
 * The catalog the gateway serves: built-in models merged with the config file's, narrowed to
 * the models whose provider can be used now (llmux.md section 3), plus `llmux-echo`.
 *
 * Decisions beyond the description:
 * - Order is catalog order, not sorted: `llmux-echo` first, then the built-in table as written
 *   (grouped by provider), config models that replace a built-in keep its place, new config
 *   models follow in file order.
 * - Usability is evaluated at call time against the `env` object handed in, so passing
 *   `process.env` follows changes (a key exported after start-up shows up) and passing a copy
 *   freezes it. The check is a handful of lookups; `list()` reuses its last answer while the set
 *   of usable providers is unchanged, and public records are built once per entry.
 * - A model with `deployments` is usable when any of them is (its provider's credentials
 *   resolve); a provider with `api_keys` when any key resolves (llmux.md section 10).
 * - Models a provider lists (`"discover": true`, src/routing/discovery.ts) follow the others, in
 *   the discovery's order; it leaves out the ids configured here, which win.
 */
import type { ModelCapabilities, ModelEntry, ModelPricing, ProviderConfig } from '../config/types.ts';
import { BUILTIN_MODELS, ECHO_MODEL } from './builtin-models.ts';
import { isProviderUsable } from './providers.ts';

/**
 * A model as `GET /v1/models` shows it: OpenAI's model object (`id`, `object`, `created`: Unix
 * seconds, `owned_by`) with the description's fields, in its order.
 */
export interface ModelRecord {
  id: string;
  object: 'model';
  created: number;
  type: 'chat';
  created_at: string;
  owned_by: string;
  display_name: string;
  capabilities: ModelCapabilities;
  pricing: ModelPricing;
  context_length: number;
  max_output_tokens: number;
}

export interface ModelList {
  object: 'list';
  data: ModelRecord[];
  has_more: false;
  first_id: string | null;
  last_id: string | null;
}

/**
 * A model as an Anthropic client's `GET /v1/models` shows it (a request with `anthropic-version`):
 * the Anthropic SDK's `ModelInfo`. `capabilities` is null (what the SDK allows when they are not
 * given): llmux knows four capability booleans, not the ten Anthropic's shape states.
 */
export interface AnthropicModelInfo {
  type: 'model';
  id: string;
  display_name: string;
  /** RFC 3339, the model's release. */
  created_at: string;
  capabilities: null;
  deprecated_at: null;
  lifecycle: 'active';
  line: null;
  max_input_tokens: number;
  max_tokens: number;
  retires_at: null;
}

/** Anthropic's list of models: the page its SDK reads (no `object`). */
export interface AnthropicModelList {
  data: AnthropicModelInfo[];
  has_more: false;
  first_id: string | null;
  last_id: string | null;
}

export interface Catalog {
  /** Models usable now (provider usable), config models included, plus llmux-echo; catalog order, echo first. */
  list(): ModelEntry[];
  /** A usable model by public id, or undefined. */
  get(id: string): ModelEntry | undefined;
  /** A configured provider by provider id (`model.provider`), or undefined; `llmux` has none. */
  provider(id: string): ProviderConfig | undefined;
  /** Whether the built-in catalog or the config has a model of this id, usable now or not (it wins over a discovered one). */
  configured(id: string): boolean;
}

/** Models listed by the providers that discover theirs (src/routing/discovery.ts). */
export interface DiscoveredModels {
  /** In the discovery's order; configured ids already left out. */
  models(): readonly ModelEntry[];
  get(id: string): ModelEntry | undefined;
}

export interface CatalogOptions {
  /** Built-ins already merged with config by the caller. */
  providers: Record<string, ProviderConfig>;
  /** Models from the config file. */
  models: ModelEntry[];
  /** false: only config models (+ echo). */
  builtinCatalog: boolean;
  env: Record<string, string | undefined>;
  /**
   * Whether a provider on a cloud platform (Bedrock, Vertex, Azure) can be used now: its credentials
   * resolved at their last check (src/platforms/credential-watch.ts); undefined for one it does not
   * know, which the catalog then judges by its configured key.
   */
  platformUsable?: (provider: ProviderConfig) => boolean | undefined;
  /** Models the discovering providers list, served when their provider is usable. */
  discovered?: DiscoveredModels;
}

const NO_MODELS: readonly ModelEntry[] = Object.freeze([]);

/** Merges the catalog once; answers list/get against the providers usable at call time. */
export function createCatalog(options: CatalogOptions): Catalog {
  const { providers, env } = options;
  const entries = mergeModels(
    options.builtinCatalog ? [ECHO_MODEL, ...BUILTIN_MODELS] : [ECHO_MODEL],
    options.models,
  );
  const byId = new Map<string, ModelEntry>();
  for (const entry of entries) byId.set(entry.id, entry);
  const { discovered } = options;
  const providerIds = [...new Set([
    ...entries.flatMap((entry) => entry.deployments?.map((d) => d.provider) ?? [entry.provider]),
    ...Object.values(providers).filter((p) => p.discover === true).map((p) => p.id),
  ])];

  let lastSignature: string | undefined;
  let lastFound: readonly ModelEntry[] | undefined;
  let lastList: ModelEntry[] = [];

  function providerOf(id: string): ProviderConfig | undefined {
    return Object.hasOwn(providers, id) ? providers[id] : undefined;
  }

  function isUsable(providerId: string): boolean {
    // The echo model answers inside llmux, so it has no upstream to be unusable.
    if (providerId === ECHO_MODEL.provider) return true;
    const provider = providerOf(providerId);
    if (provider === undefined) return false;
    return options.platformUsable?.(provider) ?? isProviderUsable(provider, env);
  }

  /** Usable now: its provider is, or with deployments, any of theirs. */
  function isModelUsable(entry: ModelEntry): boolean {
    const deployments = entry.deployments;
    if (deployments === undefined) return isUsable(entry.provider);
    for (const deployment of deployments) if (isUsable(deployment.provider)) return true;
    return false;
  }

  return {
    list() {
      let signature = '';
      for (const id of providerIds) signature += isUsable(id) ? '1' : '0';
      const found = discovered?.models() ?? NO_MODELS;
      if (signature !== lastSignature || found !== lastFound) {
        lastList = entries.filter(isModelUsable);
        for (const model of found) if (isUsable(model.provider)) lastList.push(model);
        lastSignature = signature;
        lastFound = found;
      }
      return lastList.slice();
    },
    get(id) {
      const entry = byId.get(id);
      if (entry !== undefined) return isModelUsable(entry) ? entry : undefined;
      const found = discovered?.get(id);
      return found !== undefined && isUsable(found.provider) ? found : undefined;
    },
    provider: providerOf,
    configured: (id) => byId.has(id),
  };
}

/** Config models replace same-id base models in place; the rest are appended in file order. */
function mergeModels(base: ModelEntry[], fromConfig: ModelEntry[]): ModelEntry[] {
  const merged = base.slice();
  const position = new Map<string, number>();
  merged.forEach((entry, index) => position.set(entry.id, index));
  for (const entry of fromConfig) {
    const at = position.get(entry.id);
    if (at === undefined) {
      position.set(entry.id, merged.length);
      merged.push(entry);
    } else {
      merged[at] = entry;
    }
  }
  return merged;
}

const records = new WeakMap<ModelEntry, ModelRecord>();

/** The public model record: exactly the description's fields, in its order. Cached per entry. */
export function toModelRecord(model: ModelEntry): ModelRecord {
  const cached = records.get(model);
  if (cached !== undefined) return cached;
  // Fresh nested objects so config-supplied extras (or secrets) never ride along.
  const record: ModelRecord = {
    id: model.id,
    object: 'model',
    created: Math.floor(Date.parse(model.created_at) / 1000),
    type: model.type,
    created_at: model.created_at,
    owned_by: model.owned_by,
    display_name: model.display_name,
    capabilities: {
      supports_function_calling: model.capabilities.supports_function_calling,
      supports_vision: model.capabilities.supports_vision,
      supports_streaming: model.capabilities.supports_streaming,
      supports_structured_output: model.capabilities.supports_structured_output,
    },
    pricing: {
      input_tokens_cost_per_million: model.pricing.input_tokens_cost_per_million,
      output_tokens_cost_per_million: model.pricing.output_tokens_cost_per_million,
      currency: model.pricing.currency,
    },
    context_length: model.context_length,
    max_output_tokens: model.max_output_tokens,
  };
  // Shared by every request, so nobody may change it in place.
  Object.freeze(record.capabilities);
  Object.freeze(record.pricing);
  Object.freeze(record);
  records.set(model, record);
  return record;
}

/** The models-list wrapper both official SDKs page through (`has_more`, `first_id`, `last_id`). */
export function toModelList(models: ModelEntry[]): ModelList {
  const data = models.map(toModelRecord);
  return {
    object: 'list',
    data,
    has_more: false,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  };
}

const anthropicRecords = new WeakMap<ModelEntry, AnthropicModelInfo>();

/** The model as Anthropic's `ModelInfo`, for an Anthropic client. Cached per entry, frozen. */
export function toAnthropicModel(model: ModelEntry): AnthropicModelInfo {
  const cached = anthropicRecords.get(model);
  if (cached !== undefined) return cached;
  const record: AnthropicModelInfo = Object.freeze({
    type: 'model',
    id: model.id,
    display_name: model.display_name,
    created_at: model.created_at,
    capabilities: null,
    deprecated_at: null,
    lifecycle: 'active',
    line: null,
    max_input_tokens: model.context_length,
    max_tokens: model.max_output_tokens,
    retires_at: null,
  });
  anthropicRecords.set(model, record);
  return record;
}

/** The models as Anthropic's list, for an Anthropic client. */
export function toAnthropicModelList(models: ModelEntry[]): AnthropicModelList {
  const data = models.map(toAnthropicModel);
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
}
