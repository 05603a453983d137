/**
 * Whether each platform provider's credentials resolve, kept so that reading it costs a map lookup:
 * `GET /v1/models` and `llmux models` list a platform's models only when they do (llmux.md section 8).
 *
 * Resolving can take a while (a token endpoint, the container endpoint, IMDS), so it runs beside
 * start-up: the gateway waits for the first checks at most `startWaitMs` before it listens, each
 * check goes on past that in the background, and all are made again every `intervalMs` (which also
 * keeps an access token or temporary credentials warm). Until a provider's first check answers, its
 * models are not listed; a later check that fails keeps the last answer only until it reports.
 */
import type { ProviderConfig } from '../config/types.ts';
import { realTimers } from '../common/timers.ts';
import type { TimerHandle, Timers } from '../common/timers.ts';
import type { Carriers, CredentialState } from './index.ts';

export interface CredentialWatchOptions {
  providers: Iterable<ProviderConfig>;
  carriers: Carriers;
  /** How often the checks are made again; default 5 minutes. */
  intervalMs?: number;
  /** The wait's bound and the interval's timers; default Node's. */
  timers?: Timers;
}

export interface CredentialWatch {
  /**
   * Whether `provider`'s credentials resolved at its last check: false before the first has
   * answered; undefined for a provider whose platform has no credential chain (`http`, whose key the
   * catalog reads from the config itself).
   */
  usable(provider: ProviderConfig): boolean | undefined;
  /** The last check's answer, for a provider that has one. */
  state(provider: ProviderConfig): CredentialState | undefined;
  /** Checks every platform provider now; resolves when all have answered, or after `waitMs`, whichever is first. */
  check(waitMs: number): Promise<void>;
  /** Checks now (see {@link check}) and again every `intervalMs` until {@link stop}. */
  start(waitMs: number): Promise<void>;
  stop(): void;
}

const DEFAULT_INTERVAL_MS = 5 * 60 * 1000;

/** Creates the watch; nothing is checked until `check()` or `start()`. */
export function createCredentialWatch(options: CredentialWatchOptions): CredentialWatch {
  const watched = [...options.providers].filter((provider) => (provider.platform ?? 'http') !== 'http');
  const states = new Map<ProviderConfig, CredentialState>();
  /** Checks under way, so a slow one is not started twice. */
  const running = new Map<ProviderConfig, Promise<void>>();
  const timers = options.timers ?? realTimers;
  let timer: TimerHandle | undefined;

  const checkOne = (provider: ProviderConfig): Promise<void> => {
    const under = running.get(provider);
    if (under !== undefined) return under;
    const credentials = options.carriers.of(provider).credentials;
    if (credentials === undefined) return Promise.resolve();
    const done = credentials()
      .then((state) => {
        states.set(provider, state);
      }, (err: unknown) => {
        // credentials() does not reject; should one, its provider is not listed.
        states.set(provider, { ok: false, reason: err instanceof Error ? err.message : 'the check failed' });
      })
      .finally(() => running.delete(provider));
    running.set(provider, done);
    return done;
  };

  const check = async (waitMs: number): Promise<void> => {
    if (watched.length === 0) return;
    let waited: TimerHandle | undefined;
    // Not unref'd: a gateway waiting to listen has nothing else keeping the process up. Bounded, and cleared.
    const deadline = new Promise<void>((resolve) => {
      waited = timers.setTimeout(resolve, waitMs);
    });
    await Promise.race([Promise.all(watched.map(checkOne)), deadline]);
    timers.clearTimeout(waited);
  };

  return {
    usable(provider) {
      if ((provider.platform ?? 'http') === 'http') return undefined;
      return states.get(provider)?.ok === true;
    },
    state: (provider) => states.get(provider),
    check,
    start(waitMs) {
      if (watched.length > 0 && timer === undefined) {
        timer = timers.setInterval(() => void check(0), options.intervalMs ?? DEFAULT_INTERVAL_MS);
        timer.unref();
      }
      return check(waitMs);
    },
    stop() {
      timers.clearInterval(timer);
      timer = undefined;
    },
  };
}
