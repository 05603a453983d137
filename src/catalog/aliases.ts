/**
 * `GET /v1/models` lists literal aliases as models of their target (llmux.md section 10): an alias
 * without `*` whose target is listed, and which no real model's id shadows, shows as the target's
 * record under the alias's id. Globbed aliases match ids nobody can list, so they are not shown.
 */
import type { AliasRule, ModelEntry } from '../config/types.ts';

/** One entry per (target, alias), so the record cache of src/catalog/catalog.ts holds across calls. */
const made = new WeakMap<ModelEntry, Map<string, ModelEntry>>();

function aliasEntry(target: ModelEntry, id: string): ModelEntry {
  let byAlias = made.get(target);
  if (byAlias === undefined) made.set(target, byAlias = new Map());
  let entry = byAlias.get(id);
  if (entry === undefined) {
    entry = { ...target, id };
    byAlias.set(id, entry);
  }
  return entry;
}

/** `models` followed by the literal aliases of `aliases` whose target is among them, in alias order. */
export function withAliases(models: readonly ModelEntry[], aliases: readonly AliasRule[]): ModelEntry[] {
  const out = models.slice();
  if (aliases.length === 0) return out;
  const byId = new Map(models.map((model) => [model.id, model]));
  for (const alias of aliases) {
    if (alias.pattern.includes('*') || byId.has(alias.pattern)) continue;
    const target = byId.get(alias.target);
    if (target === undefined) continue;
    const entry = aliasEntry(target, alias.pattern);
    byId.set(alias.pattern, entry);
    out.push(entry);
  }
  return out;
}
