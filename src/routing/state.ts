/**
 * What routing remembers between requests, behind one interface: this process's
 * (`createMemoryRoutingState`) or one shared by every process on the state server
 * (src/state/routing.ts), which the router does not tell apart (llmux.md sections 6 and 10).
 *
 * - rests, one record per subject (src/routing/rests.ts); a change is a pure step over the current
 *   record, so the shared state can run it again over a record another process changed meanwhile;
 * - requests in flight per deployment, as leases: an attempt holds one from its start until its
 *   answer has been relayed (a long stream keeps its deployment busy);
 * - per-deployment windows of requests and tokens (src/limits/window.ts, 60 s): an attempt counts a
 *   request and its reservation when it starts, and the reservation is replaced by what it used;
 * - the sticky map (src/routing/sticky.ts).
 *
 * Reads the router makes while choosing are synchronous (the shared state answers them from its
 * copy, at most a second old); only a sticky lookup may wait on the server, never longer than
 * `state.timeout_ms`.
 */
import { createSlidingWindows } from '../limits/window.ts';
import type { WindowState } from '../limits/window.ts';
import type { RestRecord } from './rests.ts';
import { createStickyMap } from './sticky.ts';
import type { StickyBinding, StickyMapOptions } from './sticky.ts';

export interface DeploymentUsage {
  /** Requests started in the window. */
  requests: number;
  /** Tokens in the window: used, plus reservations of attempts still running. */
  tokens: number;
}

export interface RoutingLease {
  /** The attempt is over: frees its slot; `usedTokens` (input + output) replaces its reservation. Later calls do nothing. */
  end(usedTokens?: number): void;
}

export interface RoutingState {
  /** A subject's rest record, as known here. */
  rest(subject: string): RestRecord | undefined;
  /** Changes a subject's rest by `step`, a pure function of the current record. */
  changeRest(subject: string, step: (current: RestRecord | undefined) => RestRecord | undefined): void;
  /** Attempts in flight at the deployment. */
  inFlight(deployment: string): number;
  /** Requests and tokens in the deployment's window. */
  usage(deployment: string): DeploymentUsage;
  /** Milliseconds until the deployment is under `rpm` and `tpm` again with nothing more sent; 0 when it is. */
  waitMs(deployment: string, rpm: number, tpm: number): number;
  /** Starts an attempt at the deployment: in flight +1, a request and `reservedTokens` counted now. */
  begin(deployment: string, reservedTokens: number): RoutingLease;
  /** Where the conversation's last turn was answered, if it is remembered. */
  sticky(conversation: string): StickyBinding | undefined | Promise<StickyBinding | undefined>;
  /** Remembers where the conversation's turn was answered. */
  bind(conversation: string, binding: StickyBinding): void;
  /** Stops timers (the shared state's). */
  close(): void;
}

/** The in-process state's own counts, for the shared state to publish. */
export interface LocalCounts {
  deployment: string;
  inFlight: number;
  requests: number;
  tokens: number;
}

export interface MemoryRoutingState extends RoutingState {
  sticky(conversation: string): StickyBinding | undefined;
  /** Every deployment this process counts something for now. */
  counts(): LocalCounts[];
  /** Every subject with a rest record. */
  rests(): ReadonlyMap<string, RestRecord>;
  /** Sets a subject's record as it is (the shared state's copy of another process's change). */
  putRest(subject: string, record: RestRecord | undefined): void;
}

export interface MemoryRoutingStateOptions {
  now?: () => number;
  /** Window of `rpm` / `tpm`; default 60 000. */
  windowMs?: number;
  sticky?: StickyMapOptions;
}

interface Slot {
  inFlight: number;
  window: WindowState;
}

const REQUESTS = 0;
const TOKENS = 1;
/** Token figures are whole, at most 2^32 (as the limiter counts them). */
function toTokens(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(2 ** 32, Math.ceil(value)) : 0;
}

/** Routing state in this process. */
export function createMemoryRoutingState(options: MemoryRoutingStateOptions = {}): MemoryRoutingState {
  const now = options.now ?? Date.now;
  const windows = createSlidingWindows({ windowMs: options.windowMs ?? 60_000, lanes: 2, now });
  const slots = new Map<string, Slot>();
  const restRecords = new Map<string, RestRecord>();
  const stickyMap = createStickyMap(options.sticky);

  function slotOf(deployment: string): Slot {
    let slot = slots.get(deployment);
    if (slot === undefined) {
      slot = { inFlight: 0, window: windows.create() };
      slots.set(deployment, slot);
    }
    return slot;
  }

  function putRest(subject: string, record: RestRecord | undefined): void {
    if (record === undefined) restRecords.delete(subject);
    else restRecords.set(subject, record);
  }

  return {
    rest: (subject) => restRecords.get(subject),
    changeRest(subject, step) {
      putRest(subject, step(restRecords.get(subject)));
    },
    putRest,
    rests: () => restRecords,
    inFlight: (deployment) => slots.get(deployment)?.inFlight ?? 0,
    usage(deployment) {
      const slot = slots.get(deployment);
      if (slot === undefined) return { requests: 0, tokens: 0 };
      const nowMs = now();
      return { requests: windows.total(slot.window, REQUESTS, nowMs), tokens: windows.total(slot.window, TOKENS, nowMs) };
    },
    waitMs(deployment, rpm, tpm) {
      const slot = slots.get(deployment);
      if (slot === undefined) return rpm > 0 && tpm > 0 ? 0 : windows.windowMs;
      const nowMs = now();
      return Math.max(windows.msUntilBelow(slot.window, REQUESTS, rpm, nowMs), windows.msUntilBelow(slot.window, TOKENS, tpm, nowMs));
    },
    begin(deployment, reservedTokens) {
      const slot = slotOf(deployment);
      const nowMs = now();
      const reservation = toTokens(reservedTokens);
      slot.inFlight++;
      windows.add(slot.window, REQUESTS, 1, nowMs);
      const granule = windows.add(slot.window, TOKENS, reservation, nowMs);
      let ended = false;
      return {
        end(usedTokens) {
          if (ended) return;
          ended = true;
          slot.inFlight--;
          if (usedTokens === undefined) return;
          const endMs = now();
          // The reservation was counted when the attempt started; what it used replaces it there,
          // or, once that second has left the window, counts from now.
          if (!windows.adjust(slot.window, TOKENS, granule, toTokens(usedTokens) - reservation, endMs)) windows.add(slot.window, TOKENS, toTokens(usedTokens), endMs);
          if (slot.inFlight === 0 && windows.isEmpty(slot.window, endMs)) slots.delete(deployment);
        },
      };
    },
    sticky: (conversation) => stickyMap.get(conversation, now()),
    bind(conversation, binding) {
      stickyMap.set(conversation, binding, now());
    },
    counts() {
      const nowMs = now();
      const out: LocalCounts[] = [];
      for (const [deployment, slot] of slots) {
        const requests = windows.total(slot.window, REQUESTS, nowMs);
        const tokens = windows.total(slot.window, TOKENS, nowMs);
        if (slot.inFlight === 0 && requests === 0 && tokens === 0) {
          slots.delete(deployment);
          continue;
        }
        out.push({ deployment, inFlight: slot.inFlight, requests, tokens });
      }
      return out;
    },
    close() {},
  };
}
