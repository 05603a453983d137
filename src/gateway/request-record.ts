/**
 * What one request leaves for the request log and the metrics: filled in by the handlers as they
 * learn it, read once when the answer is done. Shared by the pipeline, the routes, the pages and
 * the metrics, so it lives here rather than in any of them.
 */
import type { TokenUsage, WireFormat } from '../formats/wire.ts';

/** One try at one provider, as the request log shows it. */
export interface Attempt {
  model: string;
  provider: string;
  /** The deployment tried (`{provider}/{upstream_id}`, llmux.md section 10). */
  deployment?: string;
  /** The provider key it was sent with, by its label (the environment variable or its place in the config), never its value. */
  key?: string;
  status?: number;
  error?: string;
  ms: number;
}

export interface RequestRecord {
  /** The matched route's pattern, for metrics. */
  route?: string;
  keyId?: string;
  /** On model requests only: the client's wire format. */
  format?: WireFormat;
  /**
   * The model as the client named it; once `provider` is set, the catalog id of the model that
   * answered (a fallback's, when one answered). Only then may it be a metric label.
   */
  model?: string;
  /** The model id the client asked for, once it is known to be served (an alias or a route may have another model answer it). */
  requestedModel?: string;
  /** The configured id of the provider that answered. */
  provider?: string;
  /** The deployment that answered (`{provider}/{upstream_id}`), and its provider key's label (never the key). */
  deployment?: string;
  providerKey?: string;
  ttfbMs?: number;
  usage?: TokenUsage;
  costUsd?: number;
  stream?: boolean;
  translated?: boolean;
  attempts: Attempt[];
  /** Set when the answer failed after it started (in-stream error). */
  streamError?: string;
  /** The error code of a refused or failed request. */
  errorCode?: string;
  /** Input that was repaired or dropped rather than refused (never a body or a key). */
  warnings?: string[];
  /**
   * The request's hold on its key's budget (src/usage/budget.ts), shrunk to its cost once known;
   * the usage recorder releases it once that cost is in the ledger.
   */
  budgetHold?: { settle(costUsd: number): void; release(): void } | undefined;
}
