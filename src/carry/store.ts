/**
 * The server-side store of a chat client's opaque state (llmux.md section 11): the chat format has
 * no place for a thinking signature, a Gemini thought signature, OpenRouter's `reasoning_details`
 * or DeepSeek's `reasoning_content` a client keeps, so llmux remembers them by llmux key and
 * tool-call id while the answer streams, and recalls them when the next request's assistant
 * message carries those calls (src/dialects/carry.ts). Values are JSON text the store never reads.
 *
 * Bounded: an entry lives one hour after it was put; each key holds at most `maxEntriesPerKey`
 * entries and `maxBytesPerKey` bytes (its oldest go first); all keys together at most `maxBytes`
 * (room is made in the key holding the most, so one key's flood evicts its own state and never
 * that of a key holding less); a value over `maxValueBytes` is not kept. An entry counts its
 * value and its call id as the heap holds them (a byte a character, two for a string with any
 * character past U+00FF, as reasoning in Chinese is) and {@link ENTRY_OVERHEAD_BYTES} for what
 * holding it costs besides (measured on Node 20, values from JSON.stringify and ids from
 * JSON.parse as in a request: 109-272 bytes of heap an entry beyond those, for values of 345 to
 * 8045 characters, 8 keys of 512 to 4096 entries each), so `maxBytes` bounds the heap the store
 * takes, however small or wide the entries. The interface is asynchronous so a shared-state
 * implementation (src/state/carried.ts) can stand in.
 */

export interface CarriedStore {
  /** The values remembered for `callIds` of `keyId` and not yet expired (the others are absent). */
  get(keyId: string, callIds: readonly string[]): Promise<Map<string, string>>;
  /** Remembers `value` for `callId` of `keyId` (replacing what was there); false when it is too large to keep. */
  put(keyId: string, callId: string, value: string): Promise<boolean>;
}

export interface CarriedStoreLimits {
  /** How long an entry is kept after it was put; default one hour. */
  ttlMs?: number;
  /** Entries per llmux key; default 4096. */
  maxEntriesPerKey?: number;
  /** Bytes of entries (values, call ids and their overhead) per llmux key; default 8 MiB. */
  maxBytesPerKey?: number;
  /** Bytes of entries in all; default 64 MiB. */
  maxBytes?: number;
  /** The largest value kept; default 1 MiB. */
  maxValueBytes?: number;
}

export interface MemoryCarriedStoreOptions extends CarriedStoreLimits {
  /** Milliseconds since the epoch, like `Date.now`. */
  now?: () => number;
}

export const CARRIED_TTL_MS = 3_600_000;
/** What an entry costs in memory besides its value and call id (the map entries, the record): measured, rounded up. */
export const ENTRY_OVERHEAD_BYTES = 400;
/** Characters a one-byte (Latin-1) string holds: any other makes the heap keep two bytes a character. */
const WIDE_CHARACTER = /[^\u0000-\u00ff]/;

/** The bytes of heap a string's characters take. */
function heapBytes(text: string): number {
  return WIDE_CHARACTER.test(text) ? 2 * text.length : text.length;
}
export const DEFAULT_CARRIED_LIMITS: Readonly<Required<CarriedStoreLimits>> = Object.freeze({
  ttlMs: CARRIED_TTL_MS,
  maxEntriesPerKey: 4096,
  maxBytesPerKey: 8 * 1024 * 1024,
  maxBytes: 64 * 1024 * 1024,
  maxValueBytes: 1024 * 1024,
});

interface Entry { value: string; bytes: number; expiresAtMs: number }

/** One key's entries, oldest first (a put moves an entry to the end), and their bytes. */
interface Holder { entries: Map<string, Entry>; bytes: number }

/** The limits with their defaults filled in. */
export function carriedLimits(limits: CarriedStoreLimits = {}): Required<CarriedStoreLimits> {
  return { ...DEFAULT_CARRIED_LIMITS, ...Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined)) };
}

/** A store in this process's memory; bytes are counted as the file's notes say. */
export function createMemoryCarriedStore(options: MemoryCarriedStoreOptions = {}): CarriedStore {
  const limits = carriedLimits(options);
  const now = options.now ?? Date.now;
  const holders = new Map<string, Holder>();
  let total = 0;

  function remove(holder: Holder, keyId: string, callId: string): void {
    const entry = holder.entries.get(callId);
    if (entry === undefined) return;
    holder.entries.delete(callId);
    holder.bytes -= entry.bytes;
    total -= entry.bytes;
    if (holder.entries.size === 0) holders.delete(keyId);
  }

  /** Drops the holder's oldest entry; false when it has none. */
  function dropOldest(holder: Holder, keyId: string): boolean {
    const oldest = holder.entries.keys().next();
    if (oldest.done === true) return false;
    remove(holder, keyId, oldest.value);
    return true;
  }

  /** Drops the holder's expired entries: they are the oldest, since every entry lives as long. */
  function dropExpired(holder: Holder, keyId: string, at: number): void {
    for (const [callId, entry] of holder.entries) {
      if (entry.expiresAtMs > at) break;
      remove(holder, keyId, callId);
    }
  }

  /** The key holding the most bytes. */
  function largest(): [string, Holder] | undefined {
    let found: [string, Holder] | undefined;
    for (const pair of holders) if (found === undefined || pair[1].bytes > found[1].bytes) found = pair;
    return found;
  }

  return {
    get(keyId, callIds) {
      const found = new Map<string, string>();
      const holder = holders.get(keyId);
      if (holder === undefined) return Promise.resolve(found);
      const at = now();
      for (const callId of callIds) {
        const entry = holder.entries.get(callId);
        if (entry === undefined) continue;
        if (entry.expiresAtMs <= at) remove(holder, keyId, callId);
        else found.set(callId, entry.value);
      }
      return Promise.resolve(found);
    },
    put(keyId, callId, value) {
      const bytes = heapBytes(value) + heapBytes(callId) + ENTRY_OVERHEAD_BYTES;
      if (value.length > limits.maxValueBytes || bytes > limits.maxBytesPerKey || bytes > limits.maxBytes) return Promise.resolve(false);
      const at = now();
      let holder = holders.get(keyId);
      if (holder !== undefined) {
        remove(holder, keyId, callId);
        dropExpired(holder, keyId, at);
      }
      holder = holders.get(keyId) ?? { entries: new Map(), bytes: 0 };
      holders.set(keyId, holder);
      while (holder.entries.size >= limits.maxEntriesPerKey || holder.bytes + bytes > limits.maxBytesPerKey) dropOldest(holder, keyId);
      while (total + bytes > limits.maxBytes) {
        const [largestKey, largestHolder] = largest() ?? [keyId, holder];
        if (!dropOldest(largestHolder, largestKey)) break;
      }
      holders.set(keyId, holder);
      holder.entries.set(callId, { value, bytes, expiresAtMs: at + limits.ttlMs });
      holder.bytes += bytes;
      total += bytes;
      return Promise.resolve(true);
    },
  };
}
