/**
 * Stored responses (responses.md "State"): what `GET /v1/responses/{id}`, `previous_response_id`
 * and `item_reference` read. The interface is asynchronous so a shared-state (Redis) implementation
 * can stand in for the in-memory one; the pipeline never knows which it has.
 *
 * Every read is scoped by the key that stored the response: to any other key it does not exist.
 */
import type { ResponsesInputItem, ResponsesOutputItem, ResponsesResponse } from '../formats/responses.ts';

/** One stored response: its input items (references resolved) and the response object (output and echoed fields). */
export interface StoredResponse {
  /** `resp_…`, the response's id. */
  id: string;
  /** The llmux key that created it; the only one that can read, delete or build on it. */
  keyId: string;
  /** Unix seconds, the response's `created_at`. */
  created: number;
  /** The input items the response answered, after `previous_response_id` and `item_reference` were resolved. */
  input: ResponsesInputItem[];
  /** The response object: output items, usage, status and the request fields it echoes. */
  response: ResponsesResponse;
  /**
   * Set on the record of a pass-through answer llmux could not keep whole (./passthrough.ts): the
   * provider that holds it. Its `input` then holds only `item_reference`s to its output items, and
   * reads, deletes and `previous_response_id` of it go to that provider.
   */
  provider?: string;
}

/** An item a stored response holds, in its input or its output. */
export type StoredItem = ResponsesInputItem | ResponsesOutputItem;

export interface ResponseStore {
  /** Stores (or replaces) a response; false when it is too large to keep at all. */
  put(record: StoredResponse): Promise<boolean>;
  /** The response `id` when `keyId` stored it and it has not expired; undefined otherwise. */
  get(keyId: string, id: string): Promise<StoredResponse | undefined>;
  /** Deletes the response; false when `keyId` has no such response. */
  delete(keyId: string, id: string): Promise<boolean>;
  /** The item with `itemId` among `keyId`'s stored responses (input or output), the latest stored first. */
  findItem(keyId: string, itemId: string): Promise<StoredItem | undefined>;
}

export interface MemoryResponseStoreOptions {
  /** How long a response is kept after it was stored; default 86400 s (responses.store_ttl_s). */
  ttlMs?: number;
  /** The most bytes of stored JSON kept; least recently used go first. Default 64 MiB (responses.store_max_bytes). */
  maxBytes?: number;
  /** Milliseconds since the epoch, like `Date.now`. */
  now?: () => number;
}

export const DEFAULT_STORE_TTL_MS = 86_400_000;
export const DEFAULT_STORE_MAX_BYTES = 64 * 1024 * 1024;

interface Entry { record: StoredResponse; bytes: number; expiresAtMs: number; itemIds: string[] }

/** One key's responses: their bytes, and the responses in the order of use (a read moves one to the end). */
interface Holder { bytes: number; entries: Map<string, Entry> }

/**
 * A store in this process's memory, bounded by age and by size. It keeps a copy of each record;
 * what `get` and `findItem` return is the stored copy, to read, not to change. Size is the UTF-8
 * length of the record as JSON, counted once when stored. Expired responses are dropped when met and, in the
 * order they were stored, whenever a new one is put. Beyond `maxBytes`, room is made in the key
 * that holds the most (its least recently read or stored go first): each key has its share, and
 * one key storing a flood of responses evicts its own, never a key that holds less (issue 25: one
 * LRU for all let a key evict everyone's).
 */
export function createMemoryResponseStore(options: MemoryResponseStoreOptions = {}): ResponseStore {
  const ttlMs = options.ttlMs ?? DEFAULT_STORE_TTL_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_STORE_MAX_BYTES;
  const now = options.now ?? Date.now;
  // Keyed by key id and response id together.
  const entries = new Map<string, Entry>();
  // Per key id, in the order of use.
  const holders = new Map<string, Holder>();
  // Storage order, for dropping the expired without walking every entry.
  const byAge = new Map<string, Entry>();
  // key id + item id -> the entries holding an item with that id, latest last.
  const items = new Map<string, string[]>();
  let totalBytes = 0;

  const slot = (keyId: string, id: string): string => `${keyId}\u0000${id}`;

  function remove(slotKey: string): void {
    const entry = entries.get(slotKey);
    if (entry === undefined) return;
    entries.delete(slotKey);
    byAge.delete(slotKey);
    totalBytes -= entry.bytes;
    const keyId = entry.record.keyId;
    const holder = holders.get(keyId);
    if (holder !== undefined) {
      holder.entries.delete(slotKey);
      holder.bytes -= entry.bytes;
      if (holder.entries.size === 0) holders.delete(keyId);
    }
    for (const itemId of entry.itemIds) {
      const itemKey = slot(keyId, itemId);
      const held = (items.get(itemKey) ?? []).filter((holding) => holding !== slotKey);
      if (held.length === 0) items.delete(itemKey);
      else items.set(itemKey, held);
    }
  }

  function dropExpired(at: number): void {
    for (const [slotKey, entry] of byAge) {
      if (entry.expiresAtMs > at) break;
      remove(slotKey);
    }
  }

  /** The least recently used response of the key that holds the most bytes. */
  function nextToEvict(): string | undefined {
    let largest: Holder | undefined;
    for (const holder of holders.values()) if (largest === undefined || holder.bytes > largest.bytes) largest = holder;
    if (largest === undefined) return undefined;
    for (const [slotKey] of largest.entries) return slotKey;
    return undefined;
  }

  /** The live entry, moved to the recent end of its key; an expired one is dropped. */
  function live(slotKey: string): Entry | undefined {
    const entry = entries.get(slotKey);
    if (entry === undefined) return undefined;
    if (entry.expiresAtMs <= now()) {
      remove(slotKey);
      return undefined;
    }
    const holder = holders.get(entry.record.keyId);
    holder?.entries.delete(slotKey);
    holder?.entries.set(slotKey, entry);
    return entry;
  }

  return {
    async put(record) {
      const at = now();
      dropExpired(at);
      const slotKey = slot(record.keyId, record.id);
      remove(slotKey);
      const json = JSON.stringify(record);
      const bytes = Buffer.byteLength(json);
      if (bytes > maxBytes) return false;
      // A copy, as a shared store would keep: later changes to the caller's object do not leak in.
      record = JSON.parse(json) as StoredResponse;
      const itemIds = [...record.input, ...record.response.output]
        .map((item) => (item as { id?: unknown }).id)
        .filter((id): id is string => typeof id === 'string' && id !== '');
      const entry: Entry = { record, bytes, expiresAtMs: at + ttlMs, itemIds };
      while (totalBytes + bytes > maxBytes) {
        const victim = nextToEvict();
        if (victim === undefined) break;
        remove(victim);
      }
      entries.set(slotKey, entry);
      byAge.set(slotKey, entry);
      let holder = holders.get(record.keyId);
      if (holder === undefined) holders.set(record.keyId, holder = { bytes: 0, entries: new Map() });
      holder.entries.set(slotKey, entry);
      holder.bytes += bytes;
      totalBytes += bytes;
      for (const itemId of itemIds) {
        const itemKey = slot(record.keyId, itemId);
        items.set(itemKey, [...(items.get(itemKey) ?? []), slotKey]);
      }
      return true;
    },

    async get(keyId, id) {
      return live(slot(keyId, id))?.record;
    },

    async delete(keyId, id) {
      const slotKey = slot(keyId, id);
      if (live(slotKey) === undefined) return false;
      remove(slotKey);
      return true;
    },

    async findItem(keyId, itemId) {
      const holders = items.get(slot(keyId, itemId)) ?? [];
      for (let i = holders.length - 1; i >= 0; i--) {
        const entry = live(holders[i] ?? '');
        if (entry === undefined) continue;
        const found = [...entry.record.response.output, ...entry.record.input].find((item) => (item as { id?: unknown }).id === itemId);
        if (found !== undefined) return found;
      }
      return undefined;
    },
  };
}
