/**
 * Models a provider serves, read from it instead of typed into the config (llmux.md section 10):
 * a provider with `"discover": true` has `GET {base_url}/models` read at start and every 5 minutes.
 *
 * - The list is OpenAI's shape, `{data: [{id, …}]}`, as Ollama, LM Studio, vLLM and OpenRouter all
 *   serve it. Each model is added under its own id with default capabilities and no price. What
 *   the list says of a model's size is kept, since refusing a long request the model could take
 *   would be worse than the default: vLLM's `max_model_len`, OpenRouter's `context_length` and
 *   `top_provider.max_completion_tokens`. OpenRouter's `pricing` is not: the contract says no price.
 * - A configured model of the same id wins; between two discovering providers, the first in the
 *   config; models gone from a provider's list go with its next successful read.
 * - Start-up does not wait: `start()` sends the first reads and returns. A provider that cannot be
 *   read keeps its last list (a blip removes nothing) and is read again 30 s later, the wait
 *   doubling up to the 5-minute period; one line each time through `onError`.
 * - Bounded: at most {@link MAX_MODELS} models per provider, ids of at most 256 characters, and the
 *   HTTP reader stops at `maxBytes`.
 */
import type { ModelEntry, ProviderConfig } from '../config/types.ts';
import { DEFAULT_CAPABILITIES, DEFAULT_CONTEXT_LENGTH, DEFAULT_MAX_OUTPUT_TOKENS } from '../config/types.ts';
import { isRecord } from '../common/json.ts';

export const DISCOVERY_INTERVAL_MS = 300_000;
export const DISCOVERY_RETRY_MS = 30_000;
export const MAX_MODELS = 2_000;
const MAX_ID_LENGTH = 256;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Reads a provider's `GET /models`, resolving with its parsed JSON; rejects when it cannot. */
export type ModelsFetcher = (provider: ProviderConfig) => Promise<unknown>;

function positiveWhole(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** The models of one `GET /models` answer, as catalog entries of `provider`; throws when it is not a model list. */
export function parseModelList(provider: ProviderConfig, body: unknown, nowMs: number): ModelEntry[] {
  if (!isRecord(body) || !Array.isArray(body['data'])) throw new Error('the answer is not a model list ({"data": [{"id": …}]})');
  const seen = new Set<string>();
  const models: ModelEntry[] = [];
  for (const item of body['data'] as unknown[]) {
    if (models.length >= MAX_MODELS) break;
    if (!isRecord(item)) continue;
    const id = item['id'];
    if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH || CONTROL.test(id) || seen.has(id)) continue;
    seen.add(id);
    const top = isRecord(item['top_provider']) ? item['top_provider'] : {};
    const created = positiveWhole(item['created']);
    const name = item['name'];
    models.push({
      id,
      provider: provider.id,
      upstream_id: id,
      display_name: typeof name === 'string' && name !== '' && name.length <= MAX_ID_LENGTH ? name : id,
      owned_by: provider.id,
      type: 'chat',
      created_at: new Date(created !== undefined && created < 1e11 ? created * 1000 : nowMs).toISOString(),
      context_length: positiveWhole(item['context_length']) ?? positiveWhole(item['max_model_len']) ?? positiveWhole(top['context_length']) ?? DEFAULT_CONTEXT_LENGTH,
      max_output_tokens: positiveWhole(top['max_completion_tokens']) ?? DEFAULT_MAX_OUTPUT_TOKENS,
      capabilities: { ...DEFAULT_CAPABILITIES },
      pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
      reasoning: false,
      fallbacks: [],
      max_tokens_param: 'max_tokens',
      replay_reasoning: false,
    });
  }
  return models;
}

export interface DiscoveryOptions {
  /** Every provider, in config order; those with `discover: true` are read. */
  providers: readonly ProviderConfig[];
  fetchModels: ModelsFetcher;
  /** Whether the config (or the built-in catalog) has a model of this id: it wins. */
  isConfigured(id: string): boolean;
  now?: () => number;
  intervalMs?: number;
  retryMs?: number;
  /** Runs `run` after `ms`; returns its cancel. Default: an unref'd setTimeout. */
  schedule?: (run: () => void, ms: number) => () => void;
  /** One line per failed read. */
  onError?(provider: string, message: string): void;
  /** The merged list changed. */
  onChange?(): void;
}

export interface Discovery {
  /** Sends the first reads and returns at once. */
  start(): void;
  /** Reads every discovering provider (or one) now; resolves when done, whatever the outcome. */
  refresh(providerId?: string): Promise<void>;
  /** The discovered models, configured ids left out, the first discovering provider winning. */
  models(): readonly ModelEntry[];
  get(id: string): ModelEntry | undefined;
  close(): void;
}

function defaultSchedule(run: () => void, ms: number): () => void {
  const timer = setTimeout(run, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

export function createDiscovery(options: DiscoveryOptions): Discovery {
  const now = options.now ?? Date.now;
  const intervalMs = options.intervalMs ?? DISCOVERY_INTERVAL_MS;
  const retryMs = options.retryMs ?? DISCOVERY_RETRY_MS;
  const schedule = options.schedule ?? defaultSchedule;
  const discovering = options.providers.filter((provider) => provider.discover === true);
  const lists = new Map<string, readonly ModelEntry[]>();
  const waits = new Map<string, number>();
  const cancels = new Map<string, () => void>();
  let merged: readonly ModelEntry[] = [];
  let byId = new Map<string, ModelEntry>();
  let closed = false;
  let started = false;

  function merge(): void {
    const out: ModelEntry[] = [];
    const ids = new Map<string, ModelEntry>();
    for (const provider of discovering) {
      for (const model of lists.get(provider.id) ?? []) {
        if (ids.has(model.id) || options.isConfigured(model.id)) continue;
        ids.set(model.id, model);
        out.push(model);
      }
    }
    merged = out;
    byId = ids;
    options.onChange?.();
  }

  async function read(provider: ProviderConfig): Promise<void> {
    cancels.get(provider.id)?.();
    let nextMs = intervalMs;
    try {
      const models = parseModelList(provider, await options.fetchModels(provider), now());
      lists.set(provider.id, models);
      waits.delete(provider.id);
      merge();
    } catch (error) {
      const wait = waits.get(provider.id);
      nextMs = wait === undefined ? retryMs : Math.min(intervalMs, wait * 2);
      waits.set(provider.id, nextMs);
      options.onError?.(provider.id, `model discovery: GET ${provider.baseUrl}/models failed (${error instanceof Error ? error.message : String(error)}); read again in ${Math.round(nextMs / 1000)} s`);
    }
    if (!closed) cancels.set(provider.id, schedule(() => void read(provider), nextMs));
  }

  return {
    start() {
      if (started) return;
      started = true;
      for (const provider of discovering) void read(provider);
    },
    async refresh(providerId) {
      await Promise.all(discovering.filter((p) => providerId === undefined || p.id === providerId).map(read));
    },
    models: () => merged,
    get: (id) => byId.get(id),
    close() {
      closed = true;
      for (const cancel of cancels.values()) cancel();
      cancels.clear();
    },
  };
}

export interface HttpModelsFetcherOptions {
  /** Headers for the provider's `GET /models` (its credential, as its wire format sends it). */
  headers(provider: ProviderConfig): Record<string, string>;
  timeoutMs?: number;
  /** Largest answer read; default 16 MiB. */
  maxBytes?: number;
}

/** A fetcher over HTTP(S): `GET {base_url}/models`, a 2xx JSON answer of at most `maxBytes`. */
export function createHttpModelsFetcher(options: HttpModelsFetcherOptions): ModelsFetcher {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
  return async (provider) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    try {
      const response = await fetch(`${provider.baseUrl}/models`, { headers: { accept: 'application/json', ...options.headers(provider) }, signal: controller.signal });
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`status ${response.status}`);
      }
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of response.body ?? []) {
        size += (chunk as Uint8Array).byteLength;
        if (size > maxBytes) {
          const tooLarge = new Error(`the answer is larger than ${maxBytes} bytes`);
          controller.abort(tooLarge);
          throw tooLarge;
        }
        chunks.push(chunk as Uint8Array);
      }
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch (error) {
      if (controller.signal.aborted && controller.signal.reason instanceof Error) throw controller.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}
