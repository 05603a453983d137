/**
 * The client llmux speaks with its shared-state server (Valkey or Redis >= 7, llmux.md section 6):
 * RESP2 over `node:net` / `node:tls`, written here so the gateway keeps zero runtime dependencies.
 *
 * Failure policy, because the gateway must never wait on, or crash because of, the state server:
 * - Every command has a deadline (`timeoutMs`, default 250); its promise settles by then, whether
 *   the server answers, is slow, paused or gone.
 * - A command whose deadline passes on the wire takes the connection down: RESP cannot cancel a
 *   command, and a server that cannot answer in time is unavailable as far as requests go.
 * - While the connection is down, commands fail at once rather than queue behind it; the client
 *   reconnects in the background (exponential backoff, capped, jittered) until closed.
 * - Only before the very first connection ('connecting') do commands wait for it, within their deadline.
 * - Every (re)connect sends AUTH and SELECT from the URL and a PING before any command: 'ready'
 *   means the server answered, not just that TCP connected.
 * - Pub/sub runs on a second connection of its own, which re-subscribes after a reconnect.
 * - Sockets always have an 'error' listener, and every promise handed out belongs to a caller.
 */
import { createHash } from 'node:crypto';
import { loadTls } from '../common/builtins.ts';
import { DEFAULT_MAX_REPLY_BYTES, RespError } from './resp-parser.ts';
import type { Reply, RespArg } from './resp-parser.ts';
import { parseStateUrl } from './state-url.ts';
import { StateUnavailableError, createLink } from './resp-link.ts';
import type { Link, LinkSettings, RespStatus, StatusListener } from './resp-link.ts';

export { RespError } from './resp-parser.ts';
export type { Reply, RespArg } from './resp-parser.ts';
export { parseStateUrl } from './state-url.ts';
export type { StateTarget } from './state-url.ts';
export { StateUnavailableError, reconnectDelayMs } from './resp-link.ts';
export type { RespStatus, StateUnavailableReason, StatusListener } from './resp-link.ts';

const DEFAULT_TIMEOUT_MS = 250;
const DEFAULT_CONNECT_TIMEOUT_MS = 1000;
const DEFAULT_MAX_PENDING = 10_000;
const DEFAULT_RECONNECT_BASE_MS = 50;
const DEFAULT_RECONNECT_MAX_MS = 2000;
const DEFAULT_HEALTH_CHECK_MS = 1000;

export interface RespClientOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`; see `parseStateUrl`. */
  url: string;
  /** Longest any command waits for its reply; default 250. */
  timeoutMs?: number;
  /** Longest a (re)connect may take, TCP, TLS, AUTH, SELECT and PING together; default 1000. */
  connectTimeoutMs?: number;
  /** Certificate authorities trusted for `rediss://`, instead of the system's (a private CA). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Largest reply accepted; a larger one resets the connection. Default 64 MiB. */
  maxReplyBytes?: number;
  /** Most commands (a batch counts once) waiting for replies; more fail at once. Default 10000. */
  maxPendingCommands?: number;
  /** First reconnect delay, doubled per failed attempt; default 50. */
  reconnectBaseMs?: number;
  /** Cap on the reconnect delay; default 2000. */
  reconnectMaxMs?: number;
  /** How often the pub/sub connection is PINGed, to notice a silent server; default 1000. */
  healthCheckMs?: number;
  /** Source of jitter in [0, 1); default Math.random. */
  random?: () => number;
}

export interface CommandOptions {
  /** This call's deadline instead of the client's `timeoutMs` (for a known slow command). */
  timeoutMs?: number;
}

/** A Lua script, run by its SHA-1 (EVALSHA), loaded when the server does not know it. */
export interface RespScript {
  readonly sha: string;
  /** Runs the script; the deadline covers a reload after NOSCRIPT too. */
  run(keys: readonly RespArg[], args: readonly RespArg[], options?: CommandOptions): Promise<Reply>;
}

export interface SubscribeOptions {
  /**
   * Called each time the server confirms this subscription: the first time, and after every
   * reconnect of the pub/sub connection. Messages published while it was down are lost, so this
   * is where a cache re-reads what the channel announces changes of.
   */
  onSubscribed?(): void;
}

export interface Subscription {
  /** Stops delivering messages to this handler; the channel is left when its last handler goes. */
  unsubscribe(): void;
}

export interface RespClient {
  /** See `RespStatus`. */
  readonly status: RespStatus;
  /**
   * Sends one command, like `['SET', key, value, 'PX', 1000]`. Resolves with the reply; rejects
   * with `RespError` for an error reply, `StateUnavailableError` when there is no reply in time.
   */
  command(args: readonly RespArg[], options?: CommandOptions): Promise<Reply>;
  /**
   * Sends commands in one write and resolves with their replies in order, within one deadline.
   * Rejects with the first `RespError` when any command got an error reply (after all replied).
   * Not a transaction: wrap the commands in MULTI / EXEC for that.
   */
  batch(commands: ReadonlyArray<readonly RespArg[]>, options?: CommandOptions): Promise<Reply[]>;
  /** A script handle; nothing is sent until `run`. */
  script(lua: string): RespScript;
  /** Delivers the channel's messages to `onMessage`, on the client's pub/sub connection. */
  subscribe(channel: string, onMessage: (message: string, channel: string) => void, options?: SubscribeOptions): Subscription;
  /** Calls `listener` on every status change (with the error behind a 'down'); returns its remover. */
  onStatus(listener: StatusListener): () => void;
  /** Fails everything waiting with reason 'closed', stops reconnecting, closes the connections. */
  close(): Promise<void>;
}

/** Calls a caller's callback from socket events, where a throw would become an uncaught exception. */
function callSafely(what: string, callback: () => void): void {
  try {
    callback();
  } catch (error) {
    process.emitWarning(`state client: ${what} threw: ${error instanceof Error ? error.message : String(error)}`);
  }
}

interface Subscriber {
  onMessage(message: string, channel: string): void;
  onSubscribed: (() => void) | undefined;
  // Not yet confirmed on the current pub/sub connection.
  unconfirmed: boolean;
}

/**
 * Creates the client and starts connecting. Throws only for a bad URL (see `parseStateUrl`);
 * everything after that is reported through promises and `onStatus`.
 */
export function createRespClient(options: RespClientOptions): RespClient {
  const target = parseStateUrl(options.url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const healthCheckMs = options.healthCheckMs ?? DEFAULT_HEALTH_CHECK_MS;
  const settings: LinkSettings = {
    target,
    secureContext: options.ca === undefined ? undefined : loadTls().createSecureContext({ ca: options.ca }),
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    maxReplyBytes: options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES,
    maxPendingCommands: options.maxPendingCommands ?? DEFAULT_MAX_PENDING,
    reconnectBaseMs: options.reconnectBaseMs ?? DEFAULT_RECONNECT_BASE_MS,
    reconnectMaxMs: options.reconnectMaxMs ?? DEFAULT_RECONNECT_MAX_MS,
    random: options.random ?? Math.random,
  };

  const listeners = new Set<StatusListener>();
  const link = createLink(settings, {
    onStatus: (status, cause) => {
      for (const listener of listeners) callSafely('a status listener', () => listener(status, cause));
    },
  });

  function batch(commands: ReadonlyArray<readonly RespArg[]>, callOptions?: CommandOptions): Promise<Reply[]> {
    if (commands.length === 0) return Promise.resolve([]);
    return link.send(commands, callOptions?.timeoutMs ?? timeoutMs);
  }

  function command(args: readonly RespArg[], callOptions?: CommandOptions): Promise<Reply> {
    return batch([args], callOptions).then((replies) => replies[0] ?? null);
  }

  function script(lua: string): RespScript {
    const sha = createHash('sha1').update(lua).digest('hex');
    async function run(keys: readonly RespArg[], args: readonly RespArg[], callOptions?: CommandOptions): Promise<Reply> {
      const deadlineMs = callOptions?.timeoutMs ?? timeoutMs;
      const startedAt = performance.now();
      const evalsha: RespArg[] = ['EVALSHA', sha, keys.length, ...keys, ...args];
      try {
        return await command(evalsha, { timeoutMs: deadlineMs });
      } catch (error) {
        // NOSCRIPT: the server never saw the script, or lost it (a restart, SCRIPT FLUSH).
        if (!(error instanceof RespError) || error.prefix !== 'NOSCRIPT') throw error;
      }
      const leftMs = deadlineMs - (performance.now() - startedAt);
      if (leftMs <= 0) throw new StateUnavailableError('timeout', `state server ${target.displayUrl} did not run the script within ${deadlineMs} ms`);
      const replies = await batch([['SCRIPT', 'LOAD', lua], evalsha], { timeoutMs: leftMs });
      return replies[1] ?? null;
    }
    return { sha, run };
  }

  // Pub/sub: a second connection, opened with the first subscription.
  const channels = new Map<string, Set<Subscriber>>();
  let pubsub: Link | undefined;
  let healthTimer: NodeJS.Timeout | undefined;
  let pongTimer: NodeJS.Timeout | undefined;
  let closed = false;

  function checkHealth(): void {
    if (pongTimer !== undefined || pubsub === undefined) return;
    pubsub.push(['PING']);
    pongTimer = setTimeout(() => {
      pongTimer = undefined;
      pubsub?.reset(new StateUnavailableError('timeout', `state server ${target.displayUrl} did not answer a pub/sub PING within ${timeoutMs} ms`));
    }, timeoutMs);
    pongTimer.unref();
  }

  function onPubsubStatus(status: RespStatus): void {
    clearInterval(healthTimer);
    clearTimeout(pongTimer);
    healthTimer = undefined;
    pongTimer = undefined;
    if (status !== 'ready') {
      for (const subscribers of channels.values()) for (const subscriber of subscribers) subscriber.unconfirmed = true;
      return;
    }
    // One SUBSCRIBE per channel: the server refuses a whole command for one channel it forbids.
    for (const channel of channels.keys()) pubsub?.push(['SUBSCRIBE', channel]);
    healthTimer = setInterval(checkHealth, healthCheckMs);
    healthTimer.unref();
  }

  function onPush(reply: Reply): void {
    if (reply instanceof RespError) {
      // A refused SUBSCRIBE (an ACL without the channel): that channel stays unconfirmed, the others
      // carry on, and the operator hears of it.
      process.emitWarning(`state client: the state server refused a pub/sub command: ${reply.message}`);
      return;
    }
    // PING answers ['pong', ''] while subscribed, and +PONG once every channel has been left.
    if (reply === 'PONG' || (Array.isArray(reply) && reply[0] === 'pong')) {
      clearTimeout(pongTimer);
      pongTimer = undefined;
      return;
    }
    if (!Array.isArray(reply)) return;
    const [kind, channel, message] = reply;
    if (typeof channel !== 'string') return;
    const subscribers = channels.get(channel);
    if (subscribers === undefined) return;
    if (kind === 'message' && typeof message === 'string') {
      for (const subscriber of subscribers) callSafely('a message handler', () => subscriber.onMessage(message, channel));
    } else if (kind === 'subscribe') {
      for (const subscriber of subscribers) {
        if (!subscriber.unconfirmed) continue;
        subscriber.unconfirmed = false;
        if (subscriber.onSubscribed !== undefined) callSafely('an onSubscribed callback', subscriber.onSubscribed);
      }
    }
  }

  function subscribe(channel: string, onMessage: (message: string, channel: string) => void, subscribeOptions?: SubscribeOptions): Subscription {
    if (closed) return { unsubscribe: () => {} };
    const subscriber: Subscriber = { onMessage, onSubscribed: subscribeOptions?.onSubscribed, unconfirmed: true };
    let subscribers = channels.get(channel);
    if (subscribers === undefined) {
      subscribers = new Set();
      channels.set(channel, subscribers);
    }
    subscribers.add(subscriber);
    // Sent again for a channel already subscribed, so that the server's confirmation reaches this handler too.
    if (pubsub === undefined) pubsub = createLink(settings, { onStatus: onPubsubStatus, onPush });
    else pubsub.push(['SUBSCRIBE', channel]);

    return {
      unsubscribe: () => {
        const current = channels.get(channel);
        if (current === undefined || !current.delete(subscriber) || current.size > 0) return;
        channels.delete(channel);
        pubsub?.push(['UNSUBSCRIBE', channel]);
      },
    };
  }

  function onStatus(listener: StatusListener): () => void {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }

  async function close(): Promise<void> {
    closed = true;
    clearInterval(healthTimer);
    clearTimeout(pongTimer);
    channels.clear();
    await Promise.all([link.close(), pubsub?.close()]);
  }

  return {
    get status() {
      return link.status;
    },
    command,
    batch,
    script,
    subscribe,
    onStatus,
    close,
  };
}
