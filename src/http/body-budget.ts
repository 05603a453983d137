/**
 * How many request-body bytes the process holds at once. A body is read whole, parsed, validated,
 * and kept (as objects, and as the bytes sent upstream) until the provider answers, since a retry
 * or a fallback sends it again: a few times its size in memory. Then it is let go (a stream may
 * last minutes without holding its request), and so is its claim here. Without a bound, one key's concurrency times the largest body is the process's memory
 * (a Pro key: 40 x 32 MiB, read, parsed and copied at once). So every keyed request's body is held
 * against two budgets while its request runs: the key's share and the total. A body with no room is
 * refused before it is read (its declared length), or as soon as it outgrows the room (chunked).
 *
 * Defaults (src/gateway/server.ts): the total is 4 x `limits.max_body_bytes` (128 MiB), a key's share 1 x
 * (32 MiB), so it takes four keys at their largest to fill it, and one key never can.
 */
import { GatewayError, rateLimited } from '../common/errors.ts';

export interface BodyBudgetOptions {
  /** Bytes all bodies together may hold. */
  totalBytes: number;
  /** Bytes the bodies of one owner (a key) may hold. */
  perOwnerBytes: number;
}

/** One request's hold on the budget. */
export interface BodyClaim {
  /** Takes `bytes` more; returns the refusal (taking nothing) when there is no room. */
  take(bytes: number): GatewayError | undefined;
  /** Gives back everything this claim took. Later calls do nothing. */
  release(): void;
}

export interface BodyBudget {
  /** A claim for one request of `owner` (a key id). */
  claim(owner: string): BodyClaim;
  /** Bytes held now, in total. */
  held(): number;
}

/** Owners kept at 0 held rather than deleted, while the map has no more entries than this. */
const KEPT_IDLE_OWNERS = 64;

export function createBodyBudget(options: BodyBudgetOptions): BodyBudget {
  const { totalBytes, perOwnerBytes } = options;
  let total = 0;
  const byOwner = new Map<string, number>();

  return {
    claim(owner) {
      let mine = 0;
      return {
        take(bytes) {
          const ownerHeld = byOwner.get(owner) ?? 0;
          if (ownerHeld + bytes > perOwnerBytes) {
            return rateLimited(
              `This key's requests in progress already hold ${ownerHeld} bytes of request bodies; at most ${perOwnerBytes} are held per key at once. Retry when one has finished`,
              { 'retry-after': '1' },
            );
          }
          if (total + bytes > totalBytes) {
            return new GatewayError(
              503,
              'overloaded_error',
              'server_busy',
              'llmux is holding as many request bodies as it may at once; retry in a moment',
              { headers: { 'retry-after': '1' } },
            );
          }
          mine += bytes;
          total += bytes;
          byOwner.set(owner, ownerHeld + bytes);
          return undefined;
        },
        release() {
          if (mine === 0) return;
          total -= mine;
          const left = (byOwner.get(owner) ?? 0) - mine;
          // An owner's entry stays at 0 while there are few: deleting the last entry makes V8 build
          // the map's table again, and a key whose requests come one at a time would pay that each time.
          if (left > 0 || byOwner.size <= KEPT_IDLE_OWNERS) byOwner.set(owner, left);
          else byOwner.delete(owner);
          mine = 0;
        },
      };
    },
    held: () => total,
  };
}
