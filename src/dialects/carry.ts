/**
 * The carry part of a request's turn (llmux.md section 11): seals bound to the key that asked, and
 * for a chat client the state its tool calls left in the server-side store.
 *
 * A seal holds `{k, p, f, i}`: the llmux key id it was issued to, the issuing provider and its
 * family, and the item (src/translate/carried.ts). Opened by another key it is `other-key`, and
 * the translation ignores it (and says so in the log); a seal that does not open, or an earlier
 * llmux's (`llmux.v1.`, bound to no key), is `unreadable`.
 *
 * A chat request recalls the state of its assistant messages' tool calls in one store read (its
 * last {@link MAX_RECALLED} calls: older ones are past the store's bounds anyway); the answer's
 * calls are remembered as they stream, each write started at once so a client that answers its
 * tool calls quickly finds them, and awaited before the turn is done. A store that fails costs the
 * conversation its state (the translation then fills or strips as for another family), never the
 * request.
 */
import { createHash } from 'node:crypto';
import type { ChatRequest } from '../formats/wire.ts';
import { type CarriedItem, type CarriedRecord, type CarryTurn, type ChatTurn, type Issuer, type Unsealed, OPENAI_FAMILY, carriedItem, issuerOf, parseRecord, recordJson } from '../translate/carried.ts';
import type { PassThroughCarry } from './dialect.ts';
import type { Sealer } from '../responses/seal.ts';
import type { CarriedStore } from '../carry/store.ts';
import { asRecord, records } from '../common/json.ts';
import { chatConversationKey } from '../formats/conversation-key.ts';
import type { LazyTexts } from '../common/json-lazy.ts';

/** The most tool calls a chat request recalls state for: its latest. */
export const MAX_RECALLED = 1024;

/** Characters of base64url SHA-256 in a prompt cache key. */
const CACHE_KEY_CHARS = 32;

/**
 * The conversation's `prompt_cache_key`: the same every turn of it (src/formats/conversation-key.ts),
 * different for every llmux key, and saying nothing of either; undefined when nothing says which
 * conversation it is.
 */
export function promptCacheKey(keyId: string, conversation: string | undefined): string | undefined {
  if (conversation === undefined) return undefined;
  return `llmux-${createHash('sha256').update(keyId).update('\u0000').update(conversation).digest('base64url').slice(0, CACHE_KEY_CHARS)}`;
}

/** The turn's `prompt_cache_key` for a same-format body to an OpenAI upstream, when the client gave none of its own. */
export function promptCacheKeyFor(clientKey: unknown, carry: PassThroughCarry<'chat' | 'responses'>): string | undefined {
  if (carry.model.issuer?.family !== OPENAI_FAMILY || (typeof clientKey === 'string' && clientKey !== '')) return undefined;
  return carry.turn?.cacheKey;
}

/**
 * Seals and opens for `keyId`; `conversation` (its conversation key) gives the prompt cache key.
 * Given as a function (the request's facts: src/dialects/read.ts), the key is worked out when a
 * translation first reads it, which only an OpenAI-family upstream does: other requests hash
 * nothing for it. A class, not an object literal with a getter and a setter (as it was): V8 (Node
 * 20's) builds such a literal in about 600 ns, against 50 for this, and the literals outlive young
 * collections until a full one (200,000 of them in a loop: scavenges kept 23 of 32 MB, a
 * mark-compact freed it). Made every request, they were most of what a 1 KB request promoted
 * (`bench/gc.ts`: 449 B a request, 76 B since).
 */
class SealTurn implements CarryTurn {
  private known: boolean;
  private key: string | undefined;

  constructor(
    private readonly sealer: Sealer,
    private readonly keyId: string,
    private readonly conversation: string | (() => string | undefined) | undefined,
  ) {
    this.known = typeof conversation !== 'function';
    this.key = this.known ? promptCacheKey(keyId, conversation as string | undefined) : undefined;
  }

  get cacheKey(): string | undefined {
    if (!this.known) this.key = promptCacheKey(this.keyId, (this.conversation as () => string | undefined)());
    this.known = true;
    return this.key;
  }

  set cacheKey(value: string | undefined) {
    this.key = value;
    this.known = true;
  }

  seal(issuer: Issuer, item: CarriedItem): string {
    return this.sealer.seal({ k: this.keyId, p: issuer.provider, f: issuer.family, i: item });
  }

  open(sealed: string): Unsealed {
    const value = asRecord(this.sealer.open(sealed));
    if (value === undefined) return { state: 'unreadable' };
    if (value['k'] !== this.keyId) return { state: 'other-key' };
    const issuer = issuerOf(value['p'], value['f']);
    const item = carriedItem(value['i']);
    return issuer === undefined || item === undefined ? { state: 'unreadable' } : { state: 'open', carried: { issuer, item } };
  }
}

/**
 * The turn's seals for `keyId` (see {@link SealTurn}). What a format adds to it is assigned onto
 * it (`Object.assign`), not spread from it: a spread would leave its methods and accessor behind.
 */
export function carryTurnOf(sealer: Sealer, keyId: string, conversation?: string | (() => string | undefined)): CarryTurn {
  return new SealTurn(sealer, keyId, conversation);
}

/** The ids of the tool calls of a chat request's assistant messages, the latest {@link MAX_RECALLED}. */
export function chatCallIds(body: ChatRequest): string[] {
  const ids: string[] = [];
  for (const message of records(body.messages)) {
    if (message['role'] !== 'assistant') continue;
    for (const call of records(message['tool_calls'])) if (typeof call['id'] === 'string' && call['id'] !== '') ids.push(call['id']);
  }
  return ids.length > MAX_RECALLED ? ids.slice(ids.length - MAX_RECALLED) : ids;
}

/** An empty map, shared: a request with nothing found or recalled makes none of its own. */
export const NOTHING_FOUND: ReadonlyMap<string, never> = new Map<string, never>();
const ignore = (): void => {};

/** A chat turn and what finishing it waits for (the answer's state written to the store). */
export interface ChatCarry {
  turn: ChatTurn;
  /** Resolves once every remembered call's write is done (failed writes included); undefined when there was none. */
  settled(): Promise<void> | undefined;
}

/**
 * The chat turn of `body` for `keyId`: its calls' state recalled from `store`. `texts`: those of a
 * body read lazily (src/common/json-lazy.ts); `conversationOf`: its conversation key when first
 * asked (the request's facts), instead of working it out here. A body with no tool calls to
 * recall reads nothing from the store: its turn is returned at once, not as a promise.
 */
export function chatCarryOf(body: ChatRequest, keyId: string, sealer: Sealer, store: CarriedStore, texts?: LazyTexts, conversationOf?: () => string | undefined): ChatCarry | Promise<ChatCarry> {
  const conversation = typeof body['prompt_cache_key'] === 'string' && body['prompt_cache_key'] !== '' ? undefined : (conversationOf ?? chatConversationKey(body, texts));
  const ids = chatCallIds(body);
  if (ids.length === 0) return chatCarryWith(NOTHING_FOUND, keyId, sealer, store, conversation);
  return store.get(keyId, ids).catch(() => new Map<string, string>()).then((found) => chatCarryWith(found, keyId, sealer, store, conversation));
}

/** The chat turn over the records `found` for its calls (by call id, as the store keeps them). */
function chatCarryWith(found: ReadonlyMap<string, string>, keyId: string, sealer: Sealer, store: CarriedStore, conversation: string | (() => string | undefined) | undefined): ChatCarry {
  let recalled: Map<string, CarriedRecord> | undefined;
  for (const [callId, text] of found) {
    const record = parseRecord(text);
    if (record !== undefined) (recalled ??= new Map()).set(callId, record);
  }
  const writes: Array<Promise<unknown>> = [];
  // Assigned onto the carry turn, not spread from it: its prompt cache key is read when asked.
  const turn: ChatTurn = Object.assign(carryTurnOf(sealer, keyId, conversation), {
    recalled: recalled ?? NOTHING_FOUND,
    remember(callId: string, record: CarriedRecord) {
      writes.push(store.put(keyId, callId, recordJson(record)).catch(() => false));
    },
  });
  // Most turns remember nothing: their end waits for nothing, and makes no promise to say so.
  return { turn, settled: () => (writes.length === 0 ? undefined : Promise.all(writes).then(ignore)) };
}
