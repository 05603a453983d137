/**
 * From the model id a client asked for to the model that answers (llmux.md section 10):
 *
 * 1. `aliases`: a requested id that is not a model usable now, matched by an alias (`*` matching
 *    any run of characters, the first match in file order; a literal alias is looked up directly)
 *    is answered by its target, and the answer still names the id the client asked for;
 * 2. `routes`, after aliases: the first rule whose every condition holds picks the model, and the
 *    answer names that model. A rule's `model` glob is matched against the id after aliases.
 *
 * A key's model allow-list is checked on `model` of the result — the model that answers — so
 * neither an alias nor a route widens what a key reaches (src/auth/authenticate.ts
 * `checkModelAllowed(record, resolution.model, …)`).
 *
 * Traits and the input estimate are read lazily and once: a request that no rule asks about, or
 * that the first condition of every rule already rules out, never walks its body.
 */
import type { AliasRule, RouteClientFormat, RouteRule, RoutingConfig, TierName } from '../config/types.ts';
import type { RequestTraits } from '../formats/traits.ts';

/** What a route may ask of a request; traits and the estimate are read only when a rule needs them. */
export interface RouteInput {
  clientFormat: RouteClientFormat;
  keyTier: TierName;
  /** The body's traits (src/formats/traits.ts), read at most once. */
  traits(): RequestTraits;
  /** llmux's input estimate (src/formats/estimate.ts), read at most once. */
  inputTokens(): number;
}

export interface Resolution {
  /** The model id that answers: look it up, check the key's allow-list on it. */
  model: string;
  /** The id every answer names as its `model` (the requested id through an alias, the route's model through a route). */
  answerAs: string;
  /** The id the client asked for. */
  requested: string;
  /** The alias pattern that matched, if one did. */
  alias?: string;
  /** The index of the route rule that picked the model, if one did. */
  route?: number;
}

/** A glob where `*` matches any run of characters (none included); everything else is literal. */
export function compileGlob(pattern: string): (id: string) => boolean {
  if (!pattern.includes('*')) return (id) => id === pattern;
  const source = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  const regex = new RegExp(`^${source}$`, 's');
  return (id) => regex.test(id);
}

interface CompiledRoute {
  rule: RouteRule;
  model: ((id: string) => boolean) | undefined;
}

export interface Resolver {
  /** The model that answers `requested`, and why. `isModel`: a model id usable now (a real model wins over an alias). */
  resolve(requested: string, input: RouteInput): Resolution;
  /** The literal aliases (no `*`), for `GET /v1/models`. */
  readonly literalAliases: readonly AliasRule[];
}

export interface ResolverOptions {
  routing: RoutingConfig | undefined;
  /** Whether `id` is a model usable now: such an id is never aliased. */
  isModel(id: string): boolean;
}

function holds(route: CompiledRoute, id: string, input: RouteInput, traits: () => RequestTraits): boolean {
  const when = route.rule.when;
  if (route.model !== undefined && !route.model(id)) return false;
  if (when.client_format !== undefined && !when.client_format.includes(input.clientFormat)) return false;
  if (when.key_tier !== undefined && !when.key_tier.includes(input.keyTier)) return false;
  if (when.thinking !== undefined && traits().thinking !== when.thinking) return false;
  if (when.has_images !== undefined && traits().hasImages !== when.has_images) return false;
  if (when.has_tools !== undefined && traits().hasTools !== when.has_tools) return false;
  if (when.input_tokens_over !== undefined && !(input.inputTokens() > when.input_tokens_over)) return false;
  return true;
}

export function createResolver(options: ResolverOptions): Resolver {
  const aliases = options.routing?.aliases ?? [];
  const literal = new Map<string, AliasRule>();
  const globs: Array<{ alias: AliasRule; match: (id: string) => boolean }> = [];
  for (const alias of aliases) {
    if (alias.pattern.includes('*')) globs.push({ alias, match: compileGlob(alias.pattern) });
    else if (!literal.has(alias.pattern)) literal.set(alias.pattern, alias);
  }
  const routes: CompiledRoute[] = (options.routing?.routes ?? []).map((rule) => ({ rule, model: rule.when.model === undefined ? undefined : compileGlob(rule.when.model) }));

  function aliasOf(requested: string): AliasRule | undefined {
    if (literal.size === 0 && globs.length === 0) return undefined;
    if (options.isModel(requested)) return undefined;
    const exact = literal.get(requested);
    if (exact !== undefined) return exact;
    for (const glob of globs) if (glob.match(requested)) return glob.alias;
    return undefined;
  }

  return {
    literalAliases: [...literal.values()],
    resolve(requested, input) {
      const alias = aliasOf(requested);
      const model = alias?.target ?? requested;
      const resolution: Resolution = { model, answerAs: requested, requested };
      if (alias !== undefined) resolution.alias = alias.pattern;
      if (routes.length === 0) return resolution;
      let traits: RequestTraits | undefined;
      const readTraits = (): RequestTraits => (traits ??= input.traits());
      let tokens: number | undefined;
      const once: RouteInput = { ...input, inputTokens: () => (tokens ??= input.inputTokens()) };
      for (let index = 0; index < routes.length; index++) {
        const route = routes[index]!;
        if (!holds(route, model, once, readTraits)) continue;
        resolution.model = route.rule.model;
        resolution.answerAs = route.rule.model;
        resolution.route = index;
        break;
      }
      return resolution;
    },
  };
}
