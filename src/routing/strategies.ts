/**
 * The routing strategies (llmux.md section 10): each orders a model's usable deployments, the pick
 * first, then the others, so a retryable failure moves down the list.
 *
 * - `weighted` (default): weighted draws without replacement, so the first place goes to a
 *   deployment with probability weight / total, and so do the later places among those left.
 * - `least_busy`: fewest requests in flight (every process's, with shared state) first; ties in
 *   random order. LiteLLM's bug #37622 (its least-busy favouring the first deployment listed) came
 *   from ties broken by list order: ours are shuffled first.
 * - `latency`: deployments with no time-to-first-byte sample first (in random order), then by the
 *   moving average, fastest first. One request in twenty puts a random one of the others first,
 *   so a deployment that was slow once is measured again instead of being left forever.
 * - `usage`: most tokens/min headroom first (`tpm` minus what its window counts; a deployment
 *   without `tpm` has unbounded headroom, and among those the one that counted fewest tokens
 *   first); ties in random order.
 */
import type { RoutingStrategy } from '../config/types.ts';
import type { Deployment, ModelDeployment } from './deployments.ts';

/** One request in this many goes to a deployment other than the fastest (`latency`). */
export const EXPLORE_ONE_IN = 20;

/** What the strategies read about a deployment now. */
export interface StrategyView {
  inFlight(deployment: Deployment): number;
  /** Tokens counted in its window. */
  tokens(deployment: Deployment): number;
  /** Moving average of its time to first byte, or undefined without a sample. */
  latencyMs(deployment: Deployment): number | undefined;
}

/** Fisher-Yates, in place. */
function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const held = items[i]!;
    items[i] = items[j]!;
    items[j] = held;
  }
  return items;
}

function weighted(candidates: readonly ModelDeployment[], random: () => number): ModelDeployment[] {
  const left = candidates.slice();
  const out: ModelDeployment[] = [];
  let total = 0;
  for (const candidate of left) total += candidate.weight;
  while (left.length > 1) {
    let point = random() * total;
    let index = 0;
    // The last one takes what rounding leaves.
    for (; index < left.length - 1; index++) {
      point -= left[index]!.weight;
      if (point < 0) break;
    }
    const [chosen] = left.splice(index, 1);
    out.push(chosen!);
    total -= chosen!.weight;
  }
  out.push(left[0]!);
  return out;
}

function byScore(candidates: readonly ModelDeployment[], random: () => number, score: (d: Deployment) => number): ModelDeployment[] {
  // Shuffled, then a stable sort: ties end up in random order.
  return shuffle(candidates.slice(), random).sort((a, b) => score(a.deployment) - score(b.deployment));
}

function latency(candidates: readonly ModelDeployment[], view: StrategyView, random: () => number): ModelDeployment[] {
  const ordered = byScore(candidates, random, (d) => view.latencyMs(d) ?? -Infinity);
  // Exploration only once everyone is measured: until then the unmeasured go first anyway.
  if (view.latencyMs(ordered[0]!.deployment) !== undefined && random() * EXPLORE_ONE_IN < 1) {
    const index = 1 + Math.floor(random() * (ordered.length - 1));
    const [explored] = ordered.splice(index, 1);
    ordered.unshift(explored!);
  }
  return ordered;
}

function usage(candidates: readonly ModelDeployment[], view: StrategyView, random: () => number): ModelDeployment[] {
  const headroom = (d: Deployment): number => (d.tpm === Infinity ? Infinity : d.tpm - view.tokens(d));
  return shuffle(candidates.slice(), random).sort((a, b) => {
    const ha = headroom(a.deployment);
    const hb = headroom(b.deployment);
    if (ha !== hb) return ha < hb ? 1 : -1;
    return ha === Infinity ? view.tokens(a.deployment) - view.tokens(b.deployment) : 0;
  });
}

/** `candidates` in the order `strategy` tries them. A single candidate comes back as it is. */
export function orderDeployments(strategy: RoutingStrategy, candidates: readonly ModelDeployment[], view: StrategyView, random: () => number): readonly ModelDeployment[] {
  if (candidates.length < 2) return candidates;
  switch (strategy) {
    case 'least_busy':
      return byScore(candidates, random, (d) => view.inFlight(d));
    case 'latency':
      return latency(candidates, view, random);
    case 'usage':
      return usage(candidates, view, random);
    case 'weighted':
      return weighted(candidates, random);
  }
}
