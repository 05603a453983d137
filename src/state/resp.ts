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
import net from 'node:net';
import tls from 'node:tls';
import { createHash } from 'node:crypto';
import { createRespParser, DEFAULT_MAX_REPLY_BYTES, encodeCommand, RespError } from './resp-parser.ts';
import type { Reply, RespArg } from './resp-parser.ts';

export { RespError } from './resp-parser.ts';
export type { Reply, RespArg } from './resp-parser.ts';

const DEFAULT_PORT = 6379;
const DEFAULT_TIMEOUT_MS = 250;
const DEFAULT_CONNECT_TIMEOUT_MS = 1000;
const DEFAULT_MAX_PENDING = 10_000;
const DEFAULT_RECONNECT_BASE_MS = 50;
const DEFAULT_RECONNECT_MAX_MS = 2000;
const DEFAULT_HEALTH_CHECK_MS = 1000;
// TCP keep-alive finds a peer that vanished without a FIN (a host gone, a NAT entry dropped).
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;
const URL_FORM = 'redis://[user:password@]host:port[/db] (or rediss:// for TLS)';

/** Where the state server is, from `parseStateUrl`. */
export interface StateTarget {
  tls: boolean;
  host: string;
  port: number;
  db: number;
  username?: string;
  password?: string;
  /** The URL without credentials, for logs and messages. */
  displayUrl: string;
}

/**
 * Reads `redis://[user:password@]host:port[/db]` or `rediss://…` (TLS); the port defaults to 6379
 * and the database to 0. Throws an Error naming the problem; no message ever holds the password
 * (nor the URL, which may).
 */
export function parseStateUrl(url: string): StateTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not rethrown with a cause: Node's URL error carries the input, password included.
    throw new Error(`state URL is not a valid URL (check the host and port); expected ${URL_FORM}`);
  }
  const scheme = parsed.protocol;
  if (scheme !== 'redis:' && scheme !== 'rediss:') throw new Error(`state URL must start with redis:// or rediss://, not ${scheme}//`);
  if (parsed.hostname === '') throw new Error(`state URL has no host; expected ${URL_FORM}`);
  if (parsed.search !== '' || parsed.hash !== '') throw new Error(`state URL takes no query string or fragment; expected ${URL_FORM}`);
  const port = parsed.port === '' ? DEFAULT_PORT : Number(parsed.port);
  if (port === 0) throw new Error('state URL port must be between 1 and 65535');

  const path = parsed.pathname;
  let db = 0;
  if (path !== '' && path !== '/') {
    if (!/^\/\d{1,9}$/.test(path)) throw new Error(`state URL database must be a number after the host, like redis://host:6379/0, not "${path}"`);
    db = Number(path.slice(1));
  }

  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(parsed.username);
    password = decodeURIComponent(parsed.password);
  } catch {
    throw new Error('state URL user name or password is not valid percent-encoding');
  }
  if (username !== '' && password === '') throw new Error('state URL has a user name but no password; use redis://user:password@host:port');

  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const target: StateTarget = { tls: scheme === 'rediss:', host, port, db, displayUrl: `${scheme}//${parsed.hostname}:${port}/${db}` };
  if (username !== '') target.username = username;
  if (password !== '') target.password = password;
  return target;
}

/** Why a command got no reply. */
export type StateUnavailableReason =
  /** No reply within the command's deadline. */
  | 'timeout'
  /** Issued while the connection was down (the client is reconnecting). */
  | 'down'
  /** The connection failed or closed with the command on it. */
  | 'connection_lost'
  /** The server sent bytes that are not RESP, or a reply above `maxReplyBytes`; the connection was reset. */
  | 'protocol'
  /** More than `maxPendingCommands` commands were already waiting. */
  | 'overloaded'
  /** The client was closed. */
  | 'closed';

/**
 * The state server could not answer: a gateway in `on_failure: "local"` falls back to its own
 * state, one in `"closed"` answers 503 `state_unavailable`. Error replies are `RespError` instead.
 */
export class StateUnavailableError extends Error {
  readonly reason: StateUnavailableReason;

  constructor(reason: StateUnavailableReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StateUnavailableError';
    this.reason = reason;
  }
}

/**
 * 'connecting' before the first connection is ready (commands wait for it, within their deadline);
 * 'ready' while connected; 'down' after a connection failed or was lost, while reconnecting in the
 * background (commands fail at once), and after `close()`.
 */
export type RespStatus = 'connecting' | 'ready' | 'down';

export type StatusListener = (status: RespStatus, cause?: Error) => void;

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

/**
 * The wait before reconnect attempt `attempt` (0 first): `baseMs` doubled per attempt, capped at
 * `maxMs`, half of it fixed and half random ("equal jitter"), so gateways that lost the server
 * together do not come back in lockstep, yet none retries at once.
 */
export function reconnectDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** A command or batch waiting for its replies. */
interface Entry {
  payload: string | Buffer;
  expected: number;
  replies: Reply[];
  done: boolean;
  timer: NodeJS.Timeout | undefined;
  resolve(replies: Reply[]): void;
  reject(error: Error): void;
}

interface LinkSettings {
  target: StateTarget;
  /** Built once from `ca`, not per reconnect. */
  secureContext: tls.SecureContext | undefined;
  connectTimeoutMs: number;
  maxReplyBytes: number;
  maxPendingCommands: number;
  reconnectBaseMs: number;
  reconnectMaxMs: number;
  random: () => number;
}

interface LinkHooks {
  onStatus(status: RespStatus, cause?: Error): void;
  /** Replies no command waits for (pub/sub messages); without it such a reply resets the connection. */
  onPush?(reply: Reply): void;
}

/** One connection that keeps itself up: connects, hands shake, reconnects, matches replies to commands. */
interface Link {
  readonly status: RespStatus;
  send(commands: ReadonlyArray<readonly RespArg[]>, timeoutMs: number): Promise<Reply[]>;
  /** Writes a command whose reply comes through `onPush` (pub/sub); nothing when not ready. */
  push(args: readonly RespArg[]): void;
  /** Drops the current connection (it reconnects), failing what is on it with `cause`. */
  reset(cause: Error): void;
  close(): Promise<void>;
}

function encodeAll(commands: ReadonlyArray<readonly RespArg[]>): string | Buffer {
  const encoded = commands.map(encodeCommand);
  if (encoded.length === 1) return encoded[0] as string | Buffer;
  if (encoded.every((piece) => typeof piece === 'string')) return encoded.join('');
  return Buffer.concat(encoded.map((piece) => (typeof piece === 'string' ? Buffer.from(piece) : piece)));
}

function handshakeCommands(target: StateTarget): RespArg[][] {
  const commands: RespArg[][] = [];
  if (target.password !== undefined) {
    commands.push(target.username === undefined ? ['AUTH', target.password] : ['AUTH', target.username, target.password]);
  }
  if (target.db !== 0) commands.push(['SELECT', target.db]);
  commands.push(['PING']);
  return commands;
}

function settle(entry: Entry): void {
  if (entry.done) return;
  entry.done = true;
  clearTimeout(entry.timer);
  const error = entry.replies.find((reply): reply is RespError => reply instanceof RespError);
  if (error === undefined) entry.resolve(entry.replies);
  else entry.reject(error);
}

function fail(entry: Entry, error: Error): void {
  if (entry.done) return;
  entry.done = true;
  clearTimeout(entry.timer);
  entry.reject(error);
}

function createLink(settings: LinkSettings, hooks: LinkHooks): Link {
  const { target } = settings;
  const handshakeList = handshakeCommands(target);
  const handshake = encodeAll(handshakeList);

  let status: RespStatus = 'connecting';
  let closed = false;
  let socket: net.Socket | undefined;
  let connectTimer: NodeJS.Timeout | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let attempt = 0;
  // The socket corked for this tick: commands issued in one tick leave in one write.
  let corked: net.Socket | undefined;
  // Written, oldest first: replies arrive in this order.
  const inFlight: Entry[] = [];
  // Issued before the first connection was ready.
  const waiting: Entry[] = [];
  // Callers' commands (a batch counts once) not yet settled, for the bound.
  let pending = 0;

  function setStatus(next: RespStatus, cause?: Error): void {
    if (next === status) return;
    status = next;
    hooks.onStatus(next, cause);
  }

  function write(payload: string | Buffer): void {
    const current = socket;
    if (current === undefined) return;
    if (corked !== current) {
      current.cork();
      corked = current;
      process.nextTick(() => {
        corked = undefined;
        current.uncork();
      });
    }
    current.write(payload);
  }

  function connect(): void {
    reconnectTimer = undefined;
    const current = target.tls
      ? tls.connect({
        host: target.host,
        port: target.port,
        // SNI carries host names only (RFC 6066); an IP address is checked against the certificate's IP SANs.
        ...(net.isIP(target.host) === 0 ? { servername: target.host } : {}),
        ...(settings.secureContext === undefined ? {} : { secureContext: settings.secureContext }),
      })
      : net.connect({ host: target.host, port: target.port });
    socket = current;
    const parser = createRespParser({
      maxReplyBytes: settings.maxReplyBytes,
      onReply: (reply) => {
        if (socket === current) receive(reply);
      },
      onError: (error) => drop(current, new StateUnavailableError('protocol', `${error.message}; the connection was reset`)),
    });
    connectTimer = setTimeout(() => {
      drop(current, new StateUnavailableError('timeout', `state server ${target.displayUrl} did not accept a connection within ${settings.connectTimeoutMs} ms`));
    }, settings.connectTimeoutMs);
    current.on('connect', () => {
      current.setNoDelay(true);
      current.setKeepAlive(true, KEEPALIVE_INITIAL_DELAY_MS);
    });
    current.on('data', (chunk: Buffer) => parser.feed(chunk));
    current.on('error', (error) => drop(current, error));
    current.on('close', () => drop(current, new Error(`connection to state server ${target.displayUrl} closed`)));

    // Written at once (the socket holds it until connected); nothing else is written before its replies.
    inFlight.push({
      payload: handshake,
      expected: handshakeList.length,
      replies: [],
      done: false,
      timer: undefined,
      resolve: ready,
      reject: (error) => drop(current, error),
    });
    write(handshake);
  }

  function ready(): void {
    clearTimeout(connectTimer);
    attempt = 0;
    // Before the status listeners run, so that what waited goes out ahead of what they send.
    for (const entry of waiting.splice(0)) {
      inFlight.push(entry);
      write(entry.payload);
    }
    setStatus('ready');
  }

  function receive(reply: Reply): void {
    const entry = inFlight[0];
    if (entry === undefined) {
      if (hooks.onPush !== undefined) hooks.onPush(reply);
      else if (socket !== undefined) drop(socket, new StateUnavailableError('protocol', 'state server sent a reply no command asked for; the connection was reset'));
      return;
    }
    entry.replies.push(reply);
    if (entry.replies.length < entry.expected) return;
    inFlight.shift();
    settle(entry);
  }

  function drop(current: net.Socket, cause: Error): void {
    if (current !== socket) return;
    socket = undefined;
    clearTimeout(connectTimer);
    current.destroy();
    const reason = cause instanceof StateUnavailableError ? cause.reason : 'connection_lost';
    const message = cause instanceof StateUnavailableError ? cause.message : `state server ${target.displayUrl} unavailable: ${cause.message}`;
    for (const entry of inFlight.splice(0)) fail(entry, new StateUnavailableError(reason, message, { cause }));
    for (const entry of waiting.splice(0)) fail(entry, new StateUnavailableError(reason, message, { cause }));
    setStatus('down', cause);
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer !== undefined) return;
    const delayMs = reconnectDelayMs(attempt, settings.reconnectBaseMs, settings.reconnectMaxMs, settings.random);
    attempt += 1;
    reconnectTimer = setTimeout(connect, delayMs);
    // A process with nothing else to do may exit while the state server is away.
    reconnectTimer.unref();
  }

  function expire(entry: Entry, timeoutMs: number): void {
    if (entry.done) return;
    const error = new StateUnavailableError('timeout', `state server ${target.displayUrl} did not answer within ${timeoutMs} ms`);
    const index = waiting.indexOf(entry);
    if (index !== -1) {
      waiting.splice(index, 1);
      fail(entry, error);
      return;
    }
    fail(entry, error);
    // RESP cannot cancel a command: later ones would queue behind it. Dropping the connection makes
    // them fail fast until a reconnect (with its PING) shows the server answering again.
    if (socket !== undefined) drop(socket, error);
  }

  function send(commands: ReadonlyArray<readonly RespArg[]>, timeoutMs: number): Promise<Reply[]> {
    if (closed) return Promise.reject(new StateUnavailableError('closed', 'state client is closed'));
    if (status === 'down') {
      return Promise.reject(new StateUnavailableError('down', `state server ${target.displayUrl} is unavailable; reconnecting in the background`));
    }
    if (pending >= settings.maxPendingCommands) {
      return Promise.reject(new StateUnavailableError('overloaded', `more than ${settings.maxPendingCommands} commands are waiting for state server ${target.displayUrl}`));
    }
    let payload: string | Buffer;
    try {
      payload = encodeAll(commands);
    } catch (error) {
      return Promise.reject(error);
    }
    pending += 1;
    return new Promise<Reply[]>((resolve, reject) => {
      const entry: Entry = {
        payload,
        expected: commands.length,
        replies: [],
        done: false,
        timer: undefined,
        resolve: (replies) => {
          pending -= 1;
          resolve(replies);
        },
        reject: (error) => {
          pending -= 1;
          reject(error);
        },
      };
      // The check waits one more turn of the event loop: after a long synchronous stretch the
      // timer and the reply are due together, and the reply, already read, should win.
      entry.timer = setTimeout(() => setImmediate(() => expire(entry, timeoutMs)), timeoutMs);
      if (status === 'ready') {
        inFlight.push(entry);
        write(payload);
      } else {
        waiting.push(entry);
      }
    });
  }

  function push(args: readonly RespArg[]): void {
    if (status === 'ready') write(encodeCommand(args));
  }

  function reset(cause: Error): void {
    if (socket !== undefined) drop(socket, cause);
  }

  function close(): Promise<void> {
    if (closed) return Promise.resolve();
    closed = true;
    clearTimeout(reconnectTimer);
    clearTimeout(connectTimer);
    const current = socket;
    socket = undefined;
    const error = new StateUnavailableError('closed', 'state client is closed');
    for (const entry of inFlight.splice(0)) fail(entry, error);
    for (const entry of waiting.splice(0)) fail(entry, error);
    setStatus('down');
    if (current === undefined || current.closed) return Promise.resolve();
    return new Promise((resolve) => {
      current.once('close', () => resolve());
      current.destroy();
    });
  }

  connect();
  return {
    get status() {
      return status;
    },
    send,
    push,
    reset,
    close,
  };
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
    secureContext: options.ca === undefined ? undefined : tls.createSecureContext({ ca: options.ca }),
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
