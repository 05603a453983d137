/**
 * Whether the shared-state server can be counted on now, and what to do when it cannot
 * (llmux.md section 6). The RESP client's status says it: 'down' from the moment a command's
 * deadline passes or the connection fails, until a reconnect's PING is answered. While down, the
 * client fails commands at once, so no request waits on a dead server; the shared implementations
 * ask `degraded()` first and fall back without even trying.
 *
 * One log line when the gateway degrades and one when it recovers, however often the reconnects
 * fail in between; `/metrics` shows `llmux_state_degraded` from `degraded()`.
 */
import type { StateFailurePolicy } from '../config/types.ts';
import { stateUnavailable } from '../common/errors.ts';
import type { GatewayError } from '../common/errors.ts';
import type { RespClient, RespStatus } from './resp.ts';

export interface StateHealth {
  readonly policy: StateFailurePolicy;
  /** The server is not answering: fall back (`local`) or refuse (`closed`). */
  degraded(): boolean;
  /** The 503 `state_unavailable` for a model request under `closed`, or an operation that needs the server. */
  unavailable(what?: string): GatewayError;
  /** Stops listening to the client. */
  close(): void;
}

export interface StateHealthOptions {
  client: Pick<RespClient, 'status' | 'onStatus'>;
  policy: StateFailurePolicy;
  /** The server, as logs may show it: never with its password (`StateTarget.displayUrl`). */
  displayUrl: string;
  /** One line per change: when the gateway degrades, and when it recovers. */
  onChange?(degraded: boolean, message: string): void;
}

/** `run`'s result; its failure as the 503 `state_unavailable` for `what` (the server's error as its cause). */
export async function orUnavailable<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw Object.assign(stateUnavailable(what), { cause: error });
  }
}

/** What falls back while degraded, for the log line. */
function fallbackOf(policy: StateFailurePolicy): string {
  return policy === 'local'
    ? 'limits fall back to this process\'s own and keys to its last copy (state.on_failure "local")'
    : 'model requests are answered 503 state_unavailable (state.on_failure "closed")';
}

/** Follows the client's status: degraded while it is 'down', one `onChange` per change. */
export function createStateHealth(options: StateHealthOptions): StateHealth {
  const { client, policy, displayUrl } = options;
  let degraded = client.status === 'down';
  const stop = client.onStatus((status: RespStatus, cause?: Error) => {
    // 'connecting' happens once, before the first connection: neither degraded nor recovered yet.
    if (status === 'connecting') return;
    const now = status === 'down';
    if (now === degraded) return;
    degraded = now;
    const why = cause === undefined ? '' : ` (${cause.message})`;
    options.onChange?.(now, now
      ? `state server ${displayUrl} unavailable${why}: ${fallbackOf(policy)} until it is back`
      : `state server ${displayUrl} is back: limits and keys are shared again`);
  });
  return {
    policy,
    degraded: () => degraded,
    unavailable: (what) => stateUnavailable(what),
    close: stop,
  };
}
