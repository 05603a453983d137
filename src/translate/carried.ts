/**
 * What a conversation carries across translations (llmux.md section 11): the opaque state an
 * upstream attaches to its answer and needs back, unread, on a later turn; who issued it; and
 * whether the upstream a request goes to now may be sent it.
 *
 * - Every piece of state has an issuer: the provider that answered, and its family (the upstreams
 *   that can read what it issues: `anthropic` for the messages format on any platform, `gemini`
 *   for Google's native format and its OpenAI-compatible surface, `openai` for OpenAI's own
 *   encrypted reasoning, else the provider itself: src/catalog/providers.ts `familyOf`).
 * - A client format with a place for opaque data carries it there as a llmux seal (a messages
 *   thinking block's `signature`, a Responses reasoning item's `encrypted_content`, a Gemini
 *   `thoughtSignature`): encrypted, naming the issuer, bound to the llmux key it was issued to
 *   (src/responses/seal.ts). A chat client has no such place: the state is remembered on the
 *   server by tool-call id (src/carry/store.ts) and recalled when the calls come back.
 * - On the way up, state goes to an upstream of its issuer's family only; anything else is
 *   stripped, seals issued to another key are ignored, and each is counted for one warning in
 *   the request log ({@link createCarryReader}).
 */
import { parseJsonObject } from '../common/json.ts';
import type { OpaqueState } from './answer-events.ts';

/** The provider that issued a piece of state, and its family: the upstreams that can read it. */
export interface Issuer {
  provider: string;
  family: string;
}

/** The family of every messages-format provider (Anthropic, Bedrock, Vertex): signatures hold across them. */
export const ANTHROPIC_FAMILY = 'anthropic';
/** Google's Gemini, native or through its OpenAI-compatible surface. */
export const GEMINI_FAMILY = 'gemini';
/** Google's documented placeholder for a function call that must carry a thought signature and has none of Gemini's. */
export const SKIP_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';
/** What a carry reader's `filled` is told when the placeholder signature goes on a call. */
export const PLACEHOLDER_FILLED = `Google's placeholder thought signature ${SKIP_THOUGHT_SIGNATURE} put on the first function call of a step of the current turn`;

/** One piece of opaque state, as it goes back to its issuer. */
export type CarriedItem =
  /** An Anthropic thinking block: the signature is over the text, so both are kept. */
  | { kind: 'thinking'; thinking: string; signature: string }
  /** An Anthropic `redacted_thinking` block. */
  | { kind: 'redacted-thinking'; data: string }
  /** Gemini's `thoughtSignature`, with the id of the call it came on (none: a text part's). */
  | { kind: 'thought-signature'; signature: string; callId?: string }
  /** `reasoning_details` entries (OpenRouter and chat upstreams like it), all of them, as sent. */
  | { kind: 'reasoning-details'; details: unknown[] }
  /**
   * Reasoning as plain text (DeepSeek-style `reasoning_content`, which replays on tool-call turns):
   * marks the text as the issuer's. `text` is absent where the client's own copy carries it (a
   * messages thinking block's text).
   */
  | { kind: 'reasoning'; text?: string }
  /**
   * Several pieces sealed as one, where the client's format has one place for a step's state: a
   * Gemini client's `thoughtSignature` on the step's first call carries the reasoning before it
   * and the call's own state together. Never nested. Empty, it says only who answered the step
   * (so a Gemini upstream that later sees the call knows it is not its own).
   */
  | { kind: 'bundle'; items: CarriedItem[] };

/** A piece of state and who issued it. */
export interface Carried {
  issuer: Issuer;
  item: CarriedItem;
}

/** What opening a seal gives: the state, or why not (another key's; not openable: another secret, altered, or an earlier llmux's unbound seal). */
export type Unsealed = { state: 'open'; carried: Carried } | { state: 'other-key' } | { state: 'unreadable' };

/** What a chat client's tool call brings back from the server-side store. */
export interface CarriedRecord {
  issuer: Issuer;
  /** The assistant message's own state (signed thinking, reasoning details, reasoning text): kept with its first call. */
  message?: CarriedItem[];
  /** The call's own state (Gemini's thought signature). */
  call?: CarriedItem;
}

/** What a request's turn offers every translation of it (bound to the key that asked). */
export interface CarryTurn {
  /**
   * The conversation's key for an OpenAI-format upstream's prompt cache (`prompt_cache_key`), the
   * same every turn: derived from the conversation and the llmux key, naming neither.
   */
  cacheKey?: string | undefined;
  /** `item`, issued by `issuer`, sealed for this request's key. */
  seal(issuer: Issuer, item: CarriedItem): string;
  /** Opens a string that claims to be a llmux seal (`isLlmuxSeal`). */
  open(sealed: string): Unsealed;
}

/** A chat client's turn: what the store remembered for its tool calls, and where this answer's go. */
export interface ChatTurn extends CarryTurn {
  /** State remembered for the request's tool calls, by call id. */
  recalled: ReadonlyMap<string, CarriedRecord>;
  /** Remembers state for a call of this answer. */
  remember(callId: string, record: CarriedRecord): void;
}

/** The family of OpenAI's own API (and Azure OpenAI's): the upstreams that take `prompt_cache_key`. */
export const OPENAI_FAMILY = 'openai';

/** Whether `target` may be sent state `issuer` gave. */
export function accepts(target: Issuer | undefined, issuer: Issuer): boolean {
  return target !== undefined && target.family === issuer.family;
}

/**
 * Reads carried state for one upstream body, counting what it strips, ignores and fills in, and
 * telling the request log once per kind when the body is done (`finish`), not once per block.
 */
export interface CarryReader {
  /** The upstream the body goes to; undefined: unknown, which accepts nothing carried. */
  readonly target: Issuer | undefined;
  /** Opens a llmux seal: the state when it is this key's; counted (and undefined) otherwise. */
  unseal(sealed: string): Carried | undefined;
  /** Whether the target may be sent state `issuer` gave; counted as stripped when not. */
  accept(issuer: Issuer): boolean;
  /** Counts state of unknown issuer stripped from the client's own copy (say `extra_content` after a fallback). */
  stripped(issuer: string): void;
  /** Counts a placeholder put where the target needs state the conversation does not have (`what`: the placeholder and where, for the warning). */
  filled(what: string): void;
  /** Writes the warnings of what was counted; later calls do nothing. */
  finish(): void;
}

/** A reader for one upstream body; `turn` undefined opens no seal (each is counted as unreadable). */
export function createCarryReader(turn: CarryTurn | undefined, target: Issuer | undefined, warn: (message: string) => void): CarryReader {
  // Stripped state by issuer, and the rest by kind, for one warning each (made when first needed:
  // most bodies strip and fill nothing).
  let strippedBy: Map<string, number> | undefined;
  let filledBy: Map<string, number> | undefined;
  let otherKey = 0;
  let unreadable = 0;
  let finished = false;

  function strip(issuer: string): void {
    strippedBy ??= new Map();
    strippedBy.set(issuer, (strippedBy.get(issuer) ?? 0) + 1);
  }

  return {
    target,
    unseal(sealed) {
      const opened: Unsealed = turn === undefined ? { state: 'unreadable' } : turn.open(sealed);
      if (opened.state === 'other-key') {
        otherKey += 1;
        return undefined;
      }
      if (opened.state === 'unreadable') {
        unreadable += 1;
        return undefined;
      }
      return opened.carried;
    },
    accept(issuer) {
      if (accepts(target, issuer)) return true;
      strip(describe(issuer));
      return false;
    },
    stripped: strip,
    filled(what) {
      filledBy ??= new Map();
      filledBy.set(what, (filledBy.get(what) ?? 0) + 1);
    },
    finish() {
      if (finished) return;
      finished = true;
      const to = target === undefined ? 'an upstream of unknown family' : `provider "${target.provider}" (family ${target.family})`;
      for (const [issuer, count] of strippedBy ?? []) warn(`${plural(count, 'piece')} of reasoning state issued by ${issuer} stripped: the request goes to ${to}`);
      if (otherKey > 0) warn(`${plural(otherKey, 'llmux seal')} issued to another key ignored`);
      if (unreadable > 0) warn(`${plural(unreadable, 'llmux seal')} that ${unreadable === 1 ? 'does' : 'do'} not open (another secret, altered, or an earlier llmux's) ignored`);
      for (const [what, count] of filledBy ?? []) warn(`${what}, ${plural(count, 'time')}: the upstream needs it there, and the conversation carried none it issued`);
    },
  };
}

function describe(issuer: Issuer): string {
  return `provider "${issuer.provider}" (family ${issuer.family})`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * The carried items of reasoning ended with `state`, `text` its reasoning: Anthropic's signed
 * thinking (the signature is over the text), a redacted block, `reasoning_details` or a Gemini
 * thought part's signature (each with the text as the provider's reasoning), or the text alone.
 */
export function reasoningItems(state: OpaqueState | undefined, text: string): CarriedItem[] {
  switch (state?.kind) {
    case 'thinking-signature':
      return [{ kind: 'thinking', thinking: text, signature: state.signature }];
    case 'redacted-thinking':
      return [{ kind: 'redacted-thinking', data: state.data }];
    case 'reasoning-details':
    case 'thought-signature': {
      const items: CarriedItem[] = [state.kind === 'reasoning-details' ? { kind: 'reasoning-details', details: state.details } : { kind: 'thought-signature', signature: state.signature }];
      if (text !== '') items.push({ kind: 'reasoning', text });
      return items;
    }
    default:
      return text === '' ? [] : [{ kind: 'reasoning', text }];
  }
}

/** The pieces `item` stands for: a bundle's, else itself. */
export function unbundled(item: CarriedItem): CarriedItem[] {
  return item.kind === 'bundle' ? item.items : [item];
}

/** `items` as one item to seal: the one, or a bundle of them. */
export function bundled(items: readonly CarriedItem[]): CarriedItem {
  return items.length === 1 && items[0] !== undefined ? items[0] : { kind: 'bundle', items: items.flatMap(unbundled) };
}

/** A carried item read back from JSON (a seal's or the store's), checked field by field; undefined when it is not one. */
export function carriedItem(value: unknown): CarriedItem | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (record['kind'] === 'bundle') {
    if (!Array.isArray(record['items'])) return undefined;
    const items = record['items'].map(pieceOf).filter((item): item is CarriedItem => item !== undefined);
    return { kind: 'bundle', items };
  }
  return pieceOf(value);
}

/** One carried item that is not a bundle (a bundle inside a bundle is not one). */
function pieceOf(value: unknown): CarriedItem | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  switch (record['kind']) {
    case 'thinking':
      return typeof record['thinking'] === 'string' && typeof record['signature'] === 'string' ? { kind: 'thinking', thinking: record['thinking'], signature: record['signature'] } : undefined;
    case 'redacted-thinking':
      return typeof record['data'] === 'string' ? { kind: 'redacted-thinking', data: record['data'] } : undefined;
    case 'thought-signature': {
      if (typeof record['signature'] !== 'string') return undefined;
      const item: CarriedItem = { kind: 'thought-signature', signature: record['signature'] };
      if (typeof record['callId'] === 'string') item.callId = record['callId'];
      return item;
    }
    case 'reasoning-details':
      return Array.isArray(record['details']) ? { kind: 'reasoning-details', details: record['details'] } : undefined;
    case 'reasoning': {
      const item: CarriedItem = { kind: 'reasoning' };
      if (typeof record['text'] === 'string') item.text = record['text'];
      return item;
    }
    default:
      return undefined;
  }
}

/** An issuer read back from JSON; undefined when it is not one. */
export function issuerOf(provider: unknown, family: unknown): Issuer | undefined {
  return typeof provider === 'string' && typeof family === 'string' ? { provider, family } : undefined;
}

/** A stored record as JSON text (what src/carry/store.ts keeps). */
export function recordJson(record: CarriedRecord): string {
  return JSON.stringify(record);
}

/** A stored record read back from JSON text; undefined when it is not one. */
export function parseRecord(text: string): CarriedRecord | undefined {
  const raw = parseJsonObject(text);
  if (raw === undefined) return undefined;
  const issuerRaw = raw['issuer'] as Record<string, unknown> | undefined;
  const issuer = issuerOf(issuerRaw?.['provider'], issuerRaw?.['family']);
  if (issuer === undefined) return undefined;
  const record: CarriedRecord = { issuer };
  if (Array.isArray(raw['message'])) {
    const items = raw['message'].map(carriedItem).filter((item): item is CarriedItem => item !== undefined);
    if (items.length > 0) record.message = items;
  }
  const call = carriedItem(raw['call']);
  if (call !== undefined) record.call = call;
  return record;
}

/** The carried items of a record, in the order they replay: the message's, then the call's. */
export function recordItems(record: CarriedRecord): CarriedItem[] {
  const items = record.message === undefined ? [] : [...record.message];
  if (record.call !== undefined) items.push(record.call);
  return items;
}
