/**
 * A value that expires and is fetched again — temporary AWS credentials, an OAuth access token —
 * held once for everyone who needs it. When the held value is no longer fresh, the next caller
 * starts one refresh and every caller that arrives meanwhile waits for that same refresh: however
 * many requests need a new token at once, the endpoint is asked once. If the refresh fails while the
 * held value still works, that value is handed out (and the next caller tries again); otherwise the
 * refresh's error is thrown to every waiter.
 */

export interface RefreshedValueOptions<T> {
  /** Fetches a new value. */
  load(): Promise<T>;
  /** Whether a held value may be handed out without refreshing it. */
  isFresh(value: T): boolean;
  /** Whether a held value still works, for when a refresh fails. */
  isUsable(value: T): boolean;
}

export interface RefreshedValue<T> {
  get(): Promise<T>;
  /**
   * Forgets the held value if it is `value` (the upstream refused it before it expired), so the next
   * `get()` refreshes. A value already replaced is left alone: however many requests report the
   * same refused value, one refresh follows.
   */
  drop(value: T): void;
}

/** Creates the holder; nothing is loaded until the first `get()`. */
export function createRefreshedValue<T>(options: RefreshedValueOptions<T>): RefreshedValue<T> {
  let held: T | undefined;
  let refreshing: Promise<T> | undefined;
  return {
    drop(value) {
      if (held === value) held = undefined;
    },
    async get() {
      const current = held;
      if (current !== undefined && options.isFresh(current)) return current;
      refreshing ??= options
        .load()
        .then((value) => {
          held = value;
          return value;
        })
        .finally(() => {
          refreshing = undefined;
        });
      try {
        return await refreshing;
      } catch (err) {
        if (current !== undefined && options.isUsable(current)) return current;
        throw err;
      }
    },
  };
}
