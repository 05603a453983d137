/**
 * A key as the store keeps it, and the rules read off one: whether it can be used now, and the
 * limits that apply to it. Every place that asks either question asks here.
 */
import type { Budget, TierLimits, TierName } from '../config/types.ts';

export interface KeyRecord {
  id: string;
  name: string;
  /** SHA-256 of the key, hex. */
  hash: string;
  tier: TierName;
  /** Per-key overrides of the tier's limits. */
  limits: Partial<TierLimits>;
  /** The key's own spending budget; without one, its tier's applies (if any). */
  budget?: Budget;
  /** Allowed model ids; null = all. */
  models: string[] | null;
  admin: boolean;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export type KeyStatus = 'active' | 'revoked' | 'expired';

/** A key is usable until its expiry time, not at it. */
export function isExpired(key: Pick<KeyRecord, 'expires_at'>, nowMs: number): boolean {
  return key.expires_at !== null && Date.parse(key.expires_at) <= nowMs;
}

/** Revoked wins over expired. */
export function keyStatus(key: Pick<KeyRecord, 'revoked_at' | 'expires_at'>, nowMs: number): KeyStatus {
  if (key.revoked_at !== null) return 'revoked';
  return isExpired(key, nowMs) ? 'expired' : 'active';
}

/** The limits that apply to a key: its tier's, overridden by its own. */
export function limitsFor(key: Pick<KeyRecord, 'tier' | 'limits'>, tiers: Readonly<Record<TierName, TierLimits>>): TierLimits {
  const tier = tiers[key.tier];
  return {
    rpm: key.limits.rpm ?? tier.rpm,
    tpm: key.limits.tpm ?? tier.tpm,
    concurrency: key.limits.concurrency ?? tier.concurrency,
  };
}

/** The budget that applies to a key: its own, else its tier's, else none. */
export function budgetFor(key: Pick<KeyRecord, 'tier' | 'budget'>, tierBudgets: Readonly<Partial<Record<TierName, Budget>>>): Budget | undefined {
  return key.budget ?? tierBudgets[key.tier];
}
