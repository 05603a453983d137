/**
 * The routing state shared by every process on one state server (llmux.md sections 6 and 10):
 * rests, requests in flight (as leases), per-deployment windows and the sticky map, each seen by
 * the other processes within a second, behind src/routing/state.ts's interface.
 *
 * How, and what it costs a request:
 * - Choosing reads nothing from the server: rests and everyone's counts are a copy, refreshed by
 *   one script every `syncMs` (250 ms) that also publishes this process's own counts (its in-flight
 *   leases, requests and tokens per deployment, kept by an in-process state). A process that
 *   stops syncing stops counting: its in-flight after `state.lease_ms`, its window after the window.
 * - A rest is taken here at once and written with a compare-and-set; when another process changed
 *   the record first, the same pure step (src/routing/rests.ts) runs again on the server's record,
 *   so "three in a row" and "the first request after a rest" hold across processes. Not awaited.
 * - A sticky lookup is the one read a request waits for (one EVALSHA, within `state.timeout_ms`);
 *   binding a conversation is one script, not awaited.
 * - Server down (`health`): everything is this process's own until it is back (rests learned
 *   meanwhile stay local; the first sync after replaces them with the server's).
 *
 * Decision: a success clears a subject's record on the server only when this process's copy shows
 * one, so successes cost the server nothing in the common case; a success just after another
 * process's failure (before the next sync) may leave one strike standing.
 */
import { randomBytes } from 'node:crypto';
import { createMemoryRoutingState } from '../routing/state.ts';
import type { DeploymentUsage, RoutingState } from '../routing/state.ts';
import type { RestRecord } from '../routing/rests.ts';
import { STICKY_IDLE_MS, STICKY_MAX_ENTRIES } from '../routing/sticky.ts';
import type { StickyBinding } from '../routing/sticky.ts';
import type { StateHealth } from './health.ts';
import { RespError } from './resp.ts';
import type { Reply, RespClient } from './resp.ts';
import { REST_CAS_SCRIPT, STICKY_GET_SCRIPT, STICKY_SET_SCRIPT, SYNC_SCRIPT } from './routing-scripts.ts';

export interface SharedRoutingStateOptions {
  client: RespClient;
  health: StateHealth;
  /** Prefix of every key written; default `llmux:`. */
  prefix?: string;
  /** How long a process's in-flight counts outlive it (`state.lease_ms`). */
  leaseMs: number;
  /** How often the copy is refreshed and this process's counts published; default 250. */
  syncMs?: number;
  windowMs?: number;
  /** A clock for the scripts instead of the server's (tests); also this process's clock. */
  now?: () => number;
  sticky?: { maxEntries?: number; idleMs?: number };
  /** A script the server refused (not for want of an answer). */
  onError?(message: string): void;
}

export interface SharedRoutingState extends RoutingState {
  /** Publishes this process's counts and refreshes the copy now (what the timer does). */
  sync(): Promise<void>;
}

const SEPARATOR = '\u0000';
/** Compare-and-set rounds before a rest change is left to this process alone. */
const CAS_TRIES = 5;
/** How long the rest hash lives after its last write. */
const REST_TTL_MS = 86_400_000;
const DEFAULT_SYNC_MS = 250;

function encodeRest(record: RestRecord | undefined, nowMs: number): string {
  if (record === undefined) return '';
  return `${Math.max(-1, record.untilMs - nowMs)}|${record.lastMs}|${record.strikes}|${record.probing ? 1 : 0}`;
}

/** `version|remainingMs|lastMs|strikes|probing` as read from the server, in this process's clock. */
function decodeRest(text: string, nowMs: number): { version: number; record: RestRecord } | undefined {
  const parts = text.split('|');
  if (parts.length !== 5) return undefined;
  const [version, remaining, lastMs, strikes, probing] = parts.map(Number) as [number, number, number, number, number];
  if (![version, remaining, lastMs, strikes].every(Number.isFinite)) return undefined;
  return { version, record: { untilMs: nowMs + remaining, lastMs, strikes, probing: probing === 1 } };
}

export function createSharedRoutingState(options: SharedRoutingStateOptions): SharedRoutingState {
  const { client, health } = options;
  const prefix = options.prefix ?? 'llmux:';
  const clock = options.now;
  const localNow = clock ?? Date.now;
  const windowMs = options.windowMs ?? 60_000;
  const stickyMax = options.sticky?.maxEntries ?? STICKY_MAX_ENTRIES;
  const stickyIdleMs = options.sticky?.idleMs ?? STICKY_IDLE_MS;
  const local = createMemoryRoutingState({ now: localNow, windowMs, sticky: { maxEntries: stickyMax, idleMs: stickyIdleMs } });
  const processToken = randomBytes(6).toString('hex');
  const keys = { rest: `${prefix}route:rest`, busy: `${prefix}route:busy`, sticky: `${prefix}route:sticky`, lru: `${prefix}route:sticky:lru` };
  const casScript = client.script(REST_CAS_SCRIPT);
  const syncScript = client.script(SYNC_SCRIPT);
  const stickySetScript = client.script(STICKY_SET_SCRIPT);
  const stickyGetScript = client.script(STICKY_GET_SCRIPT);
  /** Everyone else's counts, from the last sync. */
  let others = new Map<string, { inFlight: number; requests: number; tokens: number }>();
  const versions = new Map<string, number>();
  /** Subjects with a compare-and-set under way: a sync does not overwrite them. */
  const pending = new Set<string>();
  const timeArg = (): string => (clock === undefined ? '' : String(clock()));

  function reportError(error: unknown): void {
    if (error instanceof RespError) options.onError?.(`shared routing state: ${error.message}`);
  }

  function othersOf(deployment: string): { inFlight: number; requests: number; tokens: number } | undefined {
    return health.degraded() ? undefined : others.get(deployment);
  }

  async function compareAndSet(subject: string, step: (current: RestRecord | undefined) => RestRecord | undefined): Promise<void> {
    pending.add(subject);
    try {
      for (let round = 0; round < CAS_TRIES; round++) {
        const reply = await casScript.run([keys.rest], [timeArg(), subject, versions.get(subject) ?? '', encodeRest(local.rest(subject), localNow()), REST_TTL_MS]);
        if (!Array.isArray(reply)) return;
        const [written, value] = reply as [unknown, unknown];
        if (written === 1) {
          if (typeof value === 'number' && value > 0) versions.set(subject, value);
          else versions.delete(subject);
          return;
        }
        // Another process was first: run the same step over its record.
        const theirs = typeof value === 'string' && value !== '' ? decodeRest(value, localNow()) : undefined;
        if (theirs === undefined) versions.delete(subject);
        else versions.set(subject, theirs.version);
        local.putRest(subject, step(theirs?.record));
      }
    } catch (error) {
      reportError(error);
    } finally {
      pending.delete(subject);
    }
  }

  function readReply(reply: Reply): void {
    if (!Array.isArray(reply) || reply.length < 2) return;
    const [totals, rests] = reply as [Reply, Reply];
    const next = new Map<string, { inFlight: number; requests: number; tokens: number }>();
    if (Array.isArray(totals)) {
      for (let i = 0; i + 3 < totals.length; i += 4) {
        next.set(String(totals[i]), { inFlight: Number(totals[i + 1]) || 0, requests: Number(totals[i + 2]) || 0, tokens: Number(totals[i + 3]) || 0 });
      }
    }
    others = next;
    if (!Array.isArray(rests)) return;
    const nowMs = localNow();
    const seen = new Set<string>();
    for (let i = 0; i + 1 < rests.length; i += 2) {
      const subject = String(rests[i]);
      seen.add(subject);
      if (pending.has(subject)) continue;
      const decoded = decodeRest(String(rests[i + 1]), nowMs);
      if (decoded === undefined) continue;
      versions.set(subject, decoded.version);
      local.putRest(subject, decoded.record);
    }
    for (const subject of [...local.rests().keys()]) {
      if (seen.has(subject) || pending.has(subject)) continue;
      versions.delete(subject);
      local.putRest(subject, undefined);
    }
  }

  async function sync(): Promise<void> {
    if (health.degraded()) return;
    const args: Array<string | number> = [timeArg(), processToken, options.leaseMs, windowMs];
    for (const count of local.counts()) args.push(count.deployment, count.inFlight, count.requests, count.tokens);
    try {
      readReply(await syncScript.run([keys.busy, keys.rest], args));
    } catch (error) {
      reportError(error);
    }
  }

  const timer = setInterval(() => void sync(), options.syncMs ?? DEFAULT_SYNC_MS);
  timer.unref();

  function decodeBinding(value: Reply): StickyBinding | undefined {
    if (typeof value !== 'string') return undefined;
    const at = value.indexOf(SEPARATOR);
    if (at <= 0) return undefined;
    const key = value.slice(at + 1);
    return { deployment: value.slice(0, at), key: key === '' ? undefined : key };
  }

  function usage(deployment: string): DeploymentUsage {
    const own = local.usage(deployment);
    const theirs = othersOf(deployment);
    return theirs === undefined ? own : { requests: own.requests + theirs.requests, tokens: own.tokens + theirs.tokens };
  }

  return {
    rest: (subject) => local.rest(subject),
    changeRest(subject, step) {
      local.changeRest(subject, step);
      if (!health.degraded()) void compareAndSet(subject, step);
    },
    inFlight: (deployment) => local.inFlight(deployment) + (othersOf(deployment)?.inFlight ?? 0),
    usage,
    waitMs(deployment, rpm, tpm) {
      const ownWait = local.waitMs(deployment, rpm, tpm);
      const total = usage(deployment);
      if (total.requests < rpm && total.tokens < tpm) return 0;
      // Over because of other processes too: when their counts leave is not known here, a second at least.
      return Math.max(ownWait, 1_000);
    },
    begin: (deployment, reservedTokens) => local.begin(deployment, reservedTokens),
    sticky(conversation) {
      if (health.degraded()) return local.sticky(conversation);
      return stickyGetScript.run([keys.sticky], [timeArg(), conversation, stickyIdleMs]).then(
        (value) => decodeBinding(value),
        (error: unknown) => {
          reportError(error);
          return local.sticky(conversation);
        },
      );
    },
    bind(conversation, binding) {
      local.bind(conversation, binding);
      if (health.degraded()) return;
      const value = `${binding.deployment}${SEPARATOR}${binding.key ?? ''}`;
      stickySetScript.run([keys.sticky, keys.lru], [timeArg(), conversation, value, stickyMax, stickyIdleMs]).catch(reportError);
    },
    sync,
    close() {
      clearInterval(timer);
    },
  };
}
