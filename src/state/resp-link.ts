/**
 * One connection to the state server that keeps itself up: connects (TCP or TLS), shakes hands
 * (AUTH, SELECT, PING), matches replies to the commands waiting for them, enforces their deadlines
 * and reconnects with backoff. src/state/resp.ts builds the client on two of these (commands, and
 * pub/sub), following the failure policy written at its top.
 */
import { connect as netConnect, isIP } from 'node:net';
import type { Socket } from 'node:net';
import type tls from 'node:tls';
import { loadTls } from '../common/builtins.ts';
import { holdToTurnEnd } from '../common/turn-writes.ts';
import { createRespParser, encodeCommand, RespError } from './resp-parser.ts';
import type { Reply, RespArg } from './resp-parser.ts';
import type { StateTarget } from './state-url.ts';

// TCP keep-alive finds a peer that vanished without a FIN (a host gone, a NAT entry dropped).
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

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

export interface LinkSettings {
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

export interface LinkHooks {
  onStatus(status: RespStatus, cause?: Error): void;
  /** Replies no command waits for (pub/sub messages); without it such a reply resets the connection. */
  onPush?(reply: Reply): void;
}

/** One connection that keeps itself up: connects, hands shake, reconnects, matches replies to commands. */
export interface Link {
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

export function createLink(settings: LinkSettings, hooks: LinkHooks): Link {
  const { target } = settings;
  const handshakeList = handshakeCommands(target);
  const handshake = encodeAll(handshakeList);

  let status: RespStatus = 'connecting';
  let closed = false;
  let socket: Socket | undefined;
  let connectTimer: NodeJS.Timeout | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let attempt = 0;
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
    // Held to the end of this turn of the event loop (src/common/turn-writes.ts): a busy gateway's
    // requests, read in one poll, each admit and settle; held only for a tick (each callback's
    // own), they left in about one write a request; held for the turn, one write carries ten or
    // more requests' commands (bench/what-is-left.md).
    holdToTurnEnd(current);
    current.write(payload);
  }

  function connect(): void {
    reconnectTimer = undefined;
    const current = target.tls
      ? loadTls().connect({
        host: target.host,
        port: target.port,
        // SNI carries host names only (RFC 6066); an IP address is checked against the certificate's IP SANs.
        ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
        ...(settings.secureContext === undefined ? {} : { secureContext: settings.secureContext }),
      })
      : netConnect({ host: target.host, port: target.port });
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

  function drop(current: Socket, cause: Error): void {
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
