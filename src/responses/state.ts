/**
 * The Responses API's state as the gateway holds it: the stored responses and the sealer under the
 * server's secret, behind one interface. This process's memory and `$LLMUX_HOME` are the
 * implementation here; a shared one (Valkey/Redis: the store's keys with a TTL, the secret set once
 * with SET NX so every instance opens every seal) implements the same two members.
 */
import { createSealer, loadOrCreateSealSecret } from './seal.ts';
import type { Sealer } from './seal.ts';
import { createMemoryResponseStore } from './store.ts';
import type { ResponseStore } from './store.ts';

export interface ResponsesState {
  /** Stored responses, per key. */
  readonly store: ResponseStore;
  /** The sealer for reasoning handed to clients; its secret is created on first use. */
  sealer(): Promise<Sealer>;
  /**
   * The sealer when it is already made (every request after the first), else undefined: a turn
   * then begins without waiting a microtask for it (see {@link withSealer}).
   */
  sealerNow(): Sealer | undefined;
}

/**
 * `make` given the state's sealer: called at once, and its value returned, when the sealer is
 * already made; otherwise once {@link ResponsesState.sealer} gives it (a promise of its value).
 */
export function withSealer<T>(state: ResponsesState, make: (sealer: Sealer) => T | Promise<T>): T | Promise<T> {
  const ready = state.sealerNow();
  return ready === undefined ? state.sealer().then(make) : make(ready);
}

export interface LocalResponsesStateOptions {
  /** Where the seal secret file lives (`responses-secret`, mode 0600). */
  home: string;
  ttlMs: number;
  maxBytes: number;
  now?: () => number;
}

/** Responses kept in memory (bounded by TTL and bytes), the seal secret in `home`. */
export function createLocalResponsesState(options: LocalResponsesStateOptions): ResponsesState {
  const store = createMemoryResponseStore({ ttlMs: options.ttlMs, maxBytes: options.maxBytes, ...(options.now === undefined ? {} : { now: options.now }) });
  let sealer: Sealer | undefined;
  return {
    store,
    sealer() {
      try {
        sealer ??= createSealer(loadOrCreateSealSecret(options.home));
      } catch (err) {
        // A secret file that cannot be read or made is the operator's to fix: the request fails
        // as a 500 and the server log has the reason (and the path), the client does not.
        return Promise.reject(err);
      }
      return Promise.resolve(sealer);
    },
    sealerNow: () => sealer,
  };
}
