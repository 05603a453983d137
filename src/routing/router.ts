/**
 * Choosing what answers a model, and learning from each answer (llmux.md section 10): which of its
 * deployments are usable now (credentials resolve, not resting, under their own rpm/tpm), in which
 * order the model's strategy tries them (the conversation's own deployment first when sticky), and
 * with which provider key; then, from each attempt's outcome, rests, the latency average, the
 * counters and the conversation's binding. The attempts loop drives it through
 * src/routing/sequence.ts; src/routing/index.ts says how.
 *
 * Cheap where it matters: a model with one deployment and one key (most of them) costs a few
 * property reads per request — no strategy, no sticky lookup, no rest lookups (its deployment
 * never rests, its key neither) — measured by bench/routing.ts.
 */
import type { ModelEntry, ProviderConfig, RoutingStrategy } from '../config/types.ts';
import { createDeploymentTable } from './deployments.ts';
import type { Deployment, DeploymentTable, ModelDeployment } from './deployments.ts';
import { keysOf } from './key-pool.ts';
import type { ProviderKey } from './key-pool.ts';
import { afterFailure, afterSuccess, DEPLOYMENT_REST, isResting, KEY_REST, restKindOf } from './rests.ts';
import type { RestKind, RestPolicy, RestRecord } from './rests.ts';
import { createMemoryRoutingState } from './state.ts';
import type { RoutingLease, RoutingState } from './state.ts';
import { countError, countTtfb, createStats } from './stats.ts';
import type { DeploymentSnapshot, DeploymentStats } from './stats.ts';
import { orderDeployments } from './strategies.ts';
import type { StrategyView } from './strategies.ts';
import { scopedConversationKey } from './sticky.ts';
import type { StickyBinding } from './sticky.ts';

/** A rest just taken, for the log line: never a key's value, only its label. */
export interface RestEvent {
  /** `deployment`: the deployment rests; `deployment_key`: one key on it (429); `key`: the key everywhere (401/403). */
  kind: 'deployment' | 'deployment_key' | 'key';
  provider: string;
  deployment: string | undefined;
  key: string | undefined;
  /** The upstream's status, or `unreachable` / `timeout`. */
  cause: string;
  restMs: number;
}

export interface RouterOptions {
  /** The config file's models: their deployments' rpm/tpm are read from them once. */
  models: readonly ModelEntry[];
  provider(id: string): ProviderConfig | undefined;
  /** Whether the provider's key `keyIndex` resolves now (`undefined`: a provider without keys, whose own credentials must resolve). */
  hasCredential(provider: ProviderConfig, keyIndex: number | undefined): boolean;
  state?: RoutingState;
  now?: () => number;
  random?: () => number;
  /** Each rest taken (deployments and keys; a key's 401/403 included), for the log. */
  onRest?(event: RestEvent): void;
}

/** What a plan needs to know of the request. */
export interface PlanOptions {
  /** The llmux key id: conversations are scoped by it. */
  keyId: string;
  /** The conversation key (src/formats/conversation-key.ts), read only when the model is sticky. */
  conversation?: () => string | undefined;
  /** Tokens the request may use (its limiter reservation), counted against deployments' tpm while it runs. */
  reservedTokens?: number;
}

/** A deployment to try and the keys to try it with, best first (empty: a provider without keys). */
export interface Candidate {
  readonly deployment: Deployment;
  readonly keys: readonly ProviderKey[];
}

export type Unusable = 'resting' | 'limits' | 'credentials';

export type Plan =
  | { ok: true; model: ModelEntry; candidates: readonly Candidate[]; conversation: string | undefined; options: PlanOptions }
  | { ok: false; model: ModelEntry; reason: Unusable; retryAfterMs: number };

/** What an attempt learned from the upstream. */
export interface AttemptOutcome {
  /** The upstream's status, when it answered. */
  status?: number;
  /** Why there is no status: no connection (or reset before any byte), or no answer in time. */
  failure?: 'unreachable' | 'timeout';
  /** The upstream's `retry-after`, in milliseconds. */
  retryAfterMs?: number | undefined;
  /** Time to the first byte of the answer. */
  ttfbMs?: number;
}

/** One attempt at one deployment with one key: holds an in-flight lease until `end`. */
export interface AttemptHandle {
  readonly model: ModelEntry;
  readonly deployment: Deployment;
  readonly key: ProviderKey | undefined;
  /** What the upstream answered; only the first call counts. Learns rests, latency, errors, the conversation. */
  outcome(outcome: AttemptOutcome): RestKind;
  /** The attempt is over (answer relayed, or failed): frees its lease. `tokens` used; `responseId` of a Responses answer, bound to the conversation. */
  end(usage?: { tokens?: number; responseId?: string }): void;
}

export interface Router {
  readonly deployments: DeploymentTable;
  /** The deployments and keys to try for `model`, in order, or why none is usable now. */
  plan(model: ModelEntry, options: PlanOptions): Plan | Promise<Plan>;
  /** Whether `deployment` of `model` is usable now (its keys aside). */
  usable(model: ModelEntry, deployment: Deployment): boolean;
  /** Whether `key` of the deployment is usable now. */
  keyUsable(model: ModelEntry, deployment: Deployment, key: ProviderKey): boolean;
  /** Starts an attempt (an in-flight lease, a request counted). */
  begin(plan: Plan & { ok: true }, deployment: Deployment, key: ProviderKey | undefined): AttemptHandle;
  /** Every deployment known, for `/metrics` and the dashboard. */
  snapshot(): DeploymentSnapshot[];
  close(): void;
}

interface KeyRuntime {
  readonly key: ProviderKey;
  /** Rest subject of the key everywhere (401/403). */
  readonly keySubject: string;
  /** Rest subject of the key on this deployment (429). */
  readonly pairSubject: string;
}

/** Per deployment, made once: its provider, keys and rest subjects. */
interface Runtime {
  readonly deployment: Deployment;
  readonly provider: ProviderConfig | undefined;
  readonly keys: readonly KeyRuntime[];
  readonly subject: string;
  readonly stats: DeploymentStats;
  /** Round robin over the keys. */
  turn: number;
  /** `[the only key]`, made once: a pool of one is the common case. */
  readonly onlyKey: readonly ProviderKey[];
  /** The candidates of a plan with this deployment alone and its only key (or none), made once. */
  readonly alone: readonly Candidate[];
}

/** Per model, made once. */
interface ModelRoute {
  readonly deployments: readonly ModelDeployment[];
  readonly strategy: RoutingStrategy;
  /** Several deployments: they rest, and a strategy orders them. */
  readonly several: boolean;
  /** Sticky, and there is a choice to keep (several deployments or keys). */
  readonly sticky: boolean;
  /** The only deployment's runtime when there is nothing to choose (one deployment with at most one key). */
  readonly alone: Runtime | undefined;
}

const NO_KEYS: readonly ProviderKey[] = Object.freeze([]);

export function createRouter(options: RouterOptions): Router {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const state = options.state ?? createMemoryRoutingState({ now });
  const deployments = createDeploymentTable(options.models);
  const runtimes = new Map<string, Runtime>();
  const routes = new WeakMap<ModelEntry, ModelRoute>();

  function runtimeOf(deployment: Deployment): Runtime {
    let runtime = runtimes.get(deployment.id);
    if (runtime === undefined) {
      const provider = options.provider(deployment.provider);
      const keys = provider === undefined ? [] : keysOf(provider).map((key) => ({
        key,
        keySubject: `key:${deployment.provider}#${key.label}`,
        pairSubject: `pair:${deployment.id}#${key.label}`,
      }));
      const onlyKey = keys.length === 1 ? Object.freeze([keys[0]!.key]) : NO_KEYS;
      const alone = Object.freeze([Object.freeze({ deployment, keys: onlyKey })]);
      runtime = { deployment, provider, keys, subject: `deployment:${deployment.id}`, stats: createStats(), turn: 0, onlyKey, alone };
      runtimes.set(deployment.id, runtime);
    }
    return runtime;
  }

  function routeOf(model: ModelEntry): ModelRoute {
    let route = routes.get(model);
    if (route === undefined) {
      const list = deployments.of(model);
      const several = list.length > 1;
      const choice = several || list.some((d) => runtimeOf(d.deployment).keys.length > 1);
      route = { deployments: list, strategy: model.routing ?? 'weighted', several, sticky: model.sticky !== false && choice, alone: choice ? undefined : runtimeOf(list[0]!.deployment) };
      routes.set(model, route);
    }
    return route;
  }

  /** A failure's rest of `subject`, told to `onRest` when it starts or lengthens one. */
  function change(subject: string, policy: RestPolicy, kind: 'immediate' | 'counted' | 'auth', retryAfterMs: number | undefined, event: Omit<RestEvent, 'restMs'>): void {
    const nowMs = now();
    const before = state.rest(subject);
    state.changeRest(subject, (current) => afterFailure(current, kind, nowMs, retryAfterMs, policy));
    const after: RestRecord | undefined = state.rest(subject);
    if (options.onRest !== undefined && after !== undefined && isResting(after, nowMs) && after.untilMs !== before?.untilMs) {
      options.onRest({ ...event, restMs: after.untilMs - nowMs });
    }
  }

  /** A success: `subject`'s record, if it has one, starts over. */
  function reset(subject: string): void {
    if (state.rest(subject) === undefined) return;
    const nowMs = now();
    state.changeRest(subject, (current) => afterSuccess(current, nowMs));
  }

  const view: StrategyView = {
    inFlight: (d) => state.inFlight(d.id),
    tokens: (d) => state.usage(d.id).tokens,
    latencyMs: (d) => runtimeOf(d).stats.ttfbAverageMs,
  };

  function restLeftMs(subject: string, nowMs: number): number {
    const record = state.rest(subject);
    return record === undefined ? 0 : Math.max(0, record.untilMs - nowMs);
  }

  /** Why the deployment is unusable now, with how long that lasts (keys aside); undefined: usable. */
  function blocked(route: ModelRoute, runtime: Runtime, nowMs: number): { reason: Unusable; waitMs: number } | undefined {
    const { deployment, provider } = runtime;
    if (provider === undefined || (runtime.keys.length === 0 && !options.hasCredential(provider, undefined))) return { reason: 'credentials', waitMs: 0 };
    // A model's only deployment never rests (llmux.md section 10): its rest, taken for another model, is not this one's.
    if (route.several) {
      const left = restLeftMs(runtime.subject, nowMs);
      if (left > 0) return { reason: 'resting', waitMs: left };
    }
    if (deployment.rpm !== Infinity || deployment.tpm !== Infinity) {
      const usage = state.usage(deployment.id);
      if (usage.requests >= deployment.rpm || usage.tokens >= deployment.tpm) {
        return { reason: 'limits', waitMs: Math.max(1, state.waitMs(deployment.id, deployment.rpm, deployment.tpm)) };
      }
    }
    return undefined;
  }

  /** Why the key is unusable now (with how long), or undefined. A pool of one never rests. */
  function keyBlocked(runtime: Runtime, key: KeyRuntime, nowMs: number): { reason: Unusable; waitMs: number } | undefined {
    if (!options.hasCredential(runtime.provider as ProviderConfig, key.key.index)) return { reason: 'credentials', waitMs: 0 };
    if (runtime.keys.length < 2) return undefined;
    const left = Math.max(restLeftMs(key.keySubject, nowMs), restLeftMs(key.pairSubject, nowMs));
    return left > 0 ? { reason: 'resting', waitMs: left } : undefined;
  }

  /** The deployment's usable keys, the preferred one (by label) first, else in round-robin order. */
  function usableKeys(runtime: Runtime, nowMs: number, preferred: string | undefined, why: { reason: Unusable; waitMs: number }[]): readonly ProviderKey[] {
    const { keys } = runtime;
    if (keys.length === 0) return NO_KEYS;
    if (keys.length === 1) {
      const blockedKey = keyBlocked(runtime, keys[0]!, nowMs);
      if (blockedKey !== undefined) why.push(blockedKey);
      return blockedKey === undefined ? runtime.onlyKey : NO_KEYS;
    }
    const start = runtime.turn++ % keys.length;
    const out: ProviderKey[] = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[(start + i) % keys.length]!;
      const blockedKey = keyBlocked(runtime, key, nowMs);
      if (blockedKey !== undefined) {
        why.push(blockedKey);
        continue;
      }
      if (key.key.label === preferred) out.unshift(key.key);
      else out.push(key.key);
    }
    return out;
  }

  /** The plan once the conversation's binding (if any) is known. */
  function planWith(model: ModelEntry, route: ModelRoute, planOptions: PlanOptions, conversation: string | undefined, binding: StickyBinding | undefined): Plan {
    const nowMs = now();
    const alone = route.alone;
    if (alone !== undefined) {
      // Nothing to choose: no strategy, no list to build; its usability is still checked.
      const blockedBy = blocked(route, alone, nowMs) ?? (alone.keys.length === 1 ? keyBlocked(alone, alone.keys[0]!, nowMs) : undefined);
      return blockedBy === undefined ? { ok: true, model, candidates: alone.alone, conversation, options: planOptions } : refusal(model, [blockedBy]);
    }
    const why: { reason: Unusable; waitMs: number }[] = [];
    const usable: ModelDeployment[] = [];
    let bound: ModelDeployment | undefined;
    for (const entry of route.deployments) {
      const runtime = runtimeOf(entry.deployment);
      const blockedBy = blocked(route, runtime, nowMs);
      if (blockedBy !== undefined) {
        why.push(blockedBy);
        continue;
      }
      if (binding !== undefined && entry.deployment.id === binding.deployment) bound = entry;
      else usable.push(entry);
    }
    const ordered = bound === undefined ? orderDeployments(route.strategy, usable, view, random) : [bound, ...orderDeployments(route.strategy, usable, view, random)];
    const candidates: Candidate[] = [];
    for (const entry of ordered) {
      const runtime = runtimeOf(entry.deployment);
      const keys = usableKeys(runtime, nowMs, entry === bound ? binding?.key : undefined, why);
      if (runtime.keys.length > 0 && keys.length === 0) continue;
      candidates.push({ deployment: entry.deployment, keys });
    }
    if (candidates.length > 0) return { ok: true, model, candidates, conversation, options: planOptions };
    return refusal(model, why);
  }

  return {
    deployments,

    plan(model, planOptions) {
      const route = routeOf(model);
      if (!route.sticky || planOptions.conversation === undefined) return planWith(model, route, planOptions, undefined, undefined);
      const raw = planOptions.conversation();
      if (raw === undefined) return planWith(model, route, planOptions, undefined, undefined);
      const conversation = scopedConversationKey(planOptions.keyId, raw);
      const binding = state.sticky(conversation);
      if (binding instanceof Promise) return binding.then((found) => planWith(model, route, planOptions, conversation, found));
      return planWith(model, route, planOptions, conversation, binding);
    },

    usable(model, deployment) {
      return blocked(routeOf(model), runtimeOf(deployment), now()) === undefined;
    },

    keyUsable(model, deployment, key) {
      const runtime = runtimeOf(deployment);
      const keyRuntime = runtime.keys.find((k) => k.key === key);
      return keyRuntime !== undefined && keyBlocked(runtime, keyRuntime, now()) === undefined;
    },

    begin(plan, deployment, key) {
      const route = routeOf(plan.model);
      const runtime = runtimeOf(deployment);
      runtime.stats.requests++;
      const lease: RoutingLease = state.begin(deployment.id, plan.options.reservedTokens ?? 0);
      let learned = false;
      let answered = false;
      let ended = false;

      return {
        model: plan.model,
        deployment,
        key,
        outcome(outcome) {
          const kind = restKindOf(outcome.status, outcome.failure);
          if (learned) return kind;
          learned = true;
          if (outcome.ttfbMs !== undefined && outcome.status !== undefined) countTtfb(runtime.stats, outcome.ttfbMs);
          const pool = key !== undefined && runtime.keys.length > 1 ? runtime.keys.find((k) => k.key === key) : undefined;
          if (kind === 'success') {
            answered = true;
            if (route.several) reset(runtime.subject);
            if (pool !== undefined) {
              reset(pool.pairSubject);
              reset(pool.keySubject);
            }
            if (plan.conversation !== undefined) state.bind(plan.conversation, { deployment: deployment.id, key: key?.label });
            return kind;
          }
          if (outcome.failure !== undefined || (outcome.status !== undefined && outcome.status >= 400)) countError(runtime.stats, outcome.status, outcome.failure);
          const base = { provider: deployment.provider, deployment: deployment.id, cause: outcome.failure ?? String(outcome.status) };
          if (kind === 'auth') {
            if (pool !== undefined) change(pool.keySubject, KEY_REST, 'auth', undefined, { ...base, kind: 'key', deployment: undefined, key: pool.key.label });
          } else if (kind === 'immediate' && outcome.status === 429 && pool !== undefined) {
            change(pool.pairSubject, DEPLOYMENT_REST, 'immediate', outcome.retryAfterMs, { ...base, kind: 'deployment_key', key: pool.key.label });
          } else if ((kind === 'immediate' || kind === 'counted') && route.several) {
            change(runtime.subject, DEPLOYMENT_REST, kind, outcome.retryAfterMs, { ...base, kind: 'deployment', key: undefined });
          }
          return kind;
        },
        end(usage) {
          if (ended) return;
          ended = true;
          lease.end(usage?.tokens);
          if (answered && plan.conversation !== undefined && usage?.responseId !== undefined) {
            state.bind(scopedConversationKey(plan.options.keyId, `response:${usage.responseId}`), { deployment: deployment.id, key: key?.label });
          }
        },
      };
    },

    snapshot() {
      const nowMs = now();
      return deployments.all().map((deployment) => {
        const runtime = runtimeOf(deployment);
        const left = restLeftMs(runtime.subject, nowMs);
        const { stats } = runtime;
        return {
          deployment: deployment.id,
          provider: deployment.provider,
          upstreamId: deployment.upstreamId,
          requests: stats.requests,
          errors: Object.fromEntries(stats.errors),
          ttfbCount: stats.ttfbCount,
          ttfbSumMs: stats.ttfbSumMs,
          ttfbAverageMs: stats.ttfbAverageMs,
          inFlight: state.inFlight(deployment.id),
          resting: left > 0,
          restingForMs: left,
        };
      });
    },

    close() {
      state.close();
    },
  };
}

/** No candidate: the reason that lasts least decides (resting or limits give our 429 with the earliest retry-after). */
function refusal(model: ModelEntry, why: readonly { reason: Unusable; waitMs: number }[]): Plan {
  let best: { reason: Unusable; waitMs: number } | undefined;
  for (const entry of why) {
    if (entry.reason === 'credentials') continue;
    if (best === undefined || entry.waitMs < best.waitMs) best = entry;
  }
  return best === undefined ? { ok: false, model, reason: 'credentials', retryAfterMs: 0 } : { ok: false, model, reason: best.reason, retryAfterMs: best.waitMs };
}
