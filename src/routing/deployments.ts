/**
 * Deployments (llmux.md section 10): what answers a model. A deployment is identified by
 * `{provider}/{upstream_id}` (the metrics label `deployment`); the same pair under two models is
 * one deployment, one object here, and shares its state (rests, in-flight count, windows). A
 * model without `deployments` has one: its `provider` and `upstream_id`.
 *
 * A deployment's `rpm` / `tpm` are the upstream's limits, so they belong to the pair, not to a
 * model: the config loader refuses two different values (src/config/routing.ts) and the table
 * takes them from whichever model gives them, read once from the config's models.
 */
import type { ModelEntry } from '../config/types.ts';

export interface Deployment {
  /** `{provider}/{upstream_id}`. */
  readonly id: string;
  readonly provider: string;
  readonly upstreamId: string;
  /** Its own requests and tokens per minute; Infinity for none. */
  readonly rpm: number;
  readonly tpm: number;
}

/** A deployment as one model lists it: the weight is the model's. */
export interface ModelDeployment {
  readonly deployment: Deployment;
  readonly weight: number;
}

/** The deployment id of a provider and upstream id. */
export function deploymentId(provider: string, upstreamId: string): string {
  return `${provider}/${upstreamId}`;
}

export interface DeploymentTable {
  /** A model's deployments, in its order; the same array for the same entry. */
  of(model: ModelEntry): readonly ModelDeployment[];
  /** A deployment by id, once some model has named it. */
  get(id: string): Deployment | undefined;
  /** Every deployment named so far, config ones first. */
  all(): readonly Deployment[];
}

/** Interns deployments; `configModels` give the limits (and are known before any request). */
export function createDeploymentTable(configModels: readonly ModelEntry[]): DeploymentTable {
  const limits = new Map<string, { rpm?: number; tpm?: number }>();
  for (const model of configModels) {
    for (const entry of model.deployments ?? []) {
      const id = deploymentId(entry.provider, entry.upstream_id);
      const known = limits.get(id) ?? {};
      if (known.rpm === undefined && entry.rpm !== undefined) known.rpm = entry.rpm;
      if (known.tpm === undefined && entry.tpm !== undefined) known.tpm = entry.tpm;
      limits.set(id, known);
    }
  }
  const byId = new Map<string, Deployment>();
  const byModel = new WeakMap<ModelEntry, readonly ModelDeployment[]>();

  function intern(provider: string, upstreamId: string): Deployment {
    const id = deploymentId(provider, upstreamId);
    let deployment = byId.get(id);
    if (deployment === undefined) {
      const known = limits.get(id);
      deployment = Object.freeze({ id, provider, upstreamId, rpm: known?.rpm ?? Infinity, tpm: known?.tpm ?? Infinity });
      byId.set(id, deployment);
    }
    return deployment;
  }

  function of(model: ModelEntry): readonly ModelDeployment[] {
    let list = byModel.get(model);
    if (list === undefined) {
      const entries = model.deployments ?? [{ provider: model.provider, upstream_id: model.upstream_id, weight: 1 }];
      list = Object.freeze(entries.map((entry) => Object.freeze({ deployment: intern(entry.provider, entry.upstream_id), weight: entry.weight })));
      byModel.set(model, list);
    }
    return list;
  }

  for (const model of configModels) of(model);
  return {
    of,
    get: (id) => byId.get(id),
    all: () => [...byId.values()],
  };
}
