/**
 * Sticky conversations (llmux.md section 10): which deployment and provider key answered a
 * conversation's last turn, so its next one goes there while it is usable — provider prompt caches
 * are per account, and reasoning signatures must go back to the upstream that issued them.
 *
 * The map is bounded twice: an entry idle for an hour is gone, and past `maxEntries` the least
 * recently used goes first. A JavaScript Map keeps insertion order, so a touched entry is deleted
 * and set again and the oldest is always the first: both bounds cost O(1) per operation, no sweep.
 * Memory per entry is measured by bench/routing.ts (about 200 bytes: the scoped key string, the
 * Map slot and a small binding whose strings are shared with the config).
 *
 * Keys are scoped by the llmux key id (two keys never share a conversation) and bounded in length:
 * a client-chosen `prompt_cache_key` or `user_id` longer than {@link MAX_PLAIN_KEY} is hashed.
 */
import { createHash } from 'node:crypto';

/** Where a conversation's last turn was answered. */
export interface StickyBinding {
  /** Deployment id. */
  readonly deployment: string;
  /** Provider key label (src/routing/key-pool.ts), undefined for a keyless provider. */
  readonly key: string | undefined;
}

export const STICKY_IDLE_MS = 3_600_000;
export const STICKY_MAX_ENTRIES = 100_000;
/** Longer conversation keys are kept as a hash. */
export const MAX_PLAIN_KEY = 96;

/** The conversation key of `keyId`'s request (src/formats/conversation-key.ts), as the map holds it. */
export function scopedConversationKey(keyId: string, conversation: string): string {
  const body = conversation.length <= MAX_PLAIN_KEY ? conversation : `#${createHash('sha256').update(conversation).digest('base64url').slice(0, 22)}`;
  return `${keyId}\u0000${body}`;
}

export interface StickyMap {
  get(key: string, nowMs: number): StickyBinding | undefined;
  set(key: string, binding: StickyBinding, nowMs: number): void;
  readonly size: number;
}

interface Entry {
  binding: StickyBinding;
  usedMs: number;
}

export interface StickyMapOptions {
  maxEntries?: number;
  idleMs?: number;
}

/** The in-process sticky map: LRU, `idleMs` idle at most, `maxEntries` at most. */
export function createStickyMap(options: StickyMapOptions = {}): StickyMap {
  const maxEntries = options.maxEntries ?? STICKY_MAX_ENTRIES;
  const idleMs = options.idleMs ?? STICKY_IDLE_MS;
  const entries = new Map<string, Entry>();

  /** Drops idle entries from the front: the first that is not idle ends it, the rest are newer. */
  function expire(nowMs: number): void {
    for (const [key, entry] of entries) {
      if (nowMs - entry.usedMs < idleMs) return;
      entries.delete(key);
    }
  }

  return {
    get(key, nowMs) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (nowMs - entry.usedMs >= idleMs) {
        entries.delete(key);
        return undefined;
      }
      return entry.binding;
    },
    set(key, binding, nowMs) {
      const entry = entries.get(key);
      if (entry !== undefined) entries.delete(key);
      entries.set(key, { binding, usedMs: nowMs });
      expire(nowMs);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
    get size() {
      return entries.size;
    },
  };
}
