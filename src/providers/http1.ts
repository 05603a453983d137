/**
 * A small HTTP/1.1 client for the upstream calls: keep-alive connections per host, a request
 * written in one write, and the answer's head and body framing (length, chunked, to the close)
 * read by this file.
 *
 * Why not Node's client: for each call, Node's agent and ClientRequest add and remove about a
 * dozen listeners on the socket, build a request object, take a parser and an IncomingMessage, and
 * validate each header again. Here a connection carries its listeners for its whole life, and a
 * call is a string for the head, one write and the answer's stream. llmux's CPU per 1 KB request
 * fell by about a quarter with it, and a 200 KB turn's by about an eighth (bench/what-is-left.md).
 *
 * What it does as Node's client does: keep-alive connections reused the most recent first, TCP
 * keep-alive and no Nagle; TLS with the host's name (SNI and the certificate check) and the
 * session resumed; a server's `keep-alive: timeout=N` honoured; 1xx answers skipped; an answer
 * destroyed or cut off before its end emits 'aborted'; headers and paths with characters HTTP does
 * not allow are refused before anything is written (the caller checks, with src/common/http-chars.ts).
 */
import { connect, isIP } from 'node:net';
import type { Socket } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { loadTls } from '../common/builtins.ts';
import { headerNameValid, headerValueValid } from '../common/http-chars.ts';
import { holdToTurnEnd } from '../common/turn-writes.ts';

/** Where connections go: one pool of connections per scheme, host and port. */
export interface Http1Target {
  hostname: string;
  port: number;
  /** TLS (https), with the certificate checked against `hostname` as Node's https does. */
  secure: boolean;
}

export interface Http1Request {
  method: string;
  path: string;
  /** Flat name, value list; `host` among them. */
  headers: readonly string[];
  body: Buffer | string | readonly Buffer[];
}

/** How long the head of an answer may be. */
const MAX_HEAD_BYTES = 64 * 1024;
/** Idle connections kept per target. */
const MAX_FREE = 256;
/**
 * An idle connection is closed after this long unused, or sooner when the server says in
 * `keep-alive: timeout=N` that it closes sooner (a second before it does, as Node's agent).
 */
const IDLE_CLOSE_MS = 60_000;
/** TCP keep-alive probes on a connection: after this long quiet (Node's agent's `keepAliveMsecs`). */
const TCP_KEEPALIVE_MS = 1_000;

export class Http1Error extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}

/**
 * The answer: its status, headers and body as a Readable. `complete` is true once the last byte of
 * the body has been read off the connection (it may still be in this stream's buffer).
 */
export class Http1Answer extends Readable {
  statusCode: number;
  headers: IncomingHttpHeaders;
  complete = false;
  /** @internal */
  conn: Connection | undefined;

  constructor(statusCode: number, headers: IncomingHttpHeaders, conn: Connection) {
    super();
    this.statusCode = statusCode;
    this.headers = headers;
    this.conn = conn;
  }

  /**
   * The whole body, when it came in the packet of the head: given at once by takeWhole() (a small
   * JSON answer, the common case, then never goes through the stream's buffer), or pushed when the
   * answer is read as a stream.
   * @internal
   */
  whole: Buffer | undefined = undefined;

  override _read(): void {
    const whole = this.whole;
    if (whole !== undefined) {
      this.whole = undefined;
      if (whole.length > 0) this.push(whole);
      this.push(null);
      return;
    }
    this.conn?.socket.resume();
  }

  /**
   * The whole body at once, when it arrived with the head, nothing has read it as a stream, and it
   * is at most `maxBytes`; else undefined. The answer is then spent: it is not read as a stream.
   */
  takeWhole(maxBytes: number): Buffer | undefined {
    const whole = this.whole;
    if (whole === undefined || whole.length > maxBytes || this.readableFlowing !== null) return undefined;
    this.whole = undefined;
    return whole;
  }

  /**
   * As Node's IncomingMessage: an answer destroyed before its end emits 'aborted' (and cuts its
   * connection), and the error reaches 'error' only when someone listens for it.
   */
  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    const conn = this.conn;
    this.conn = undefined;
    if (!this.complete) {
      conn?.destroy();
      this.emit('aborted');
    }
    callback(this.listenerCount('error') === 0 ? null : err);
  }
}

type Framing = 'length' | 'chunked' | 'close' | 'none';

/** One pending call's ends: the answer's head, or the failure before it. */
interface Pending {
  resolve(answer: Http1Answer): void;
  reject(err: Error): void;
}

/** One keep-alive connection; its listeners stay for its life. */
class Connection {
  readonly socket: Socket;
  private pending: Pending | undefined = undefined;
  private answer: Http1Answer | undefined = undefined;
  private head: Buffer | undefined = undefined;
  private framing: Framing = 'none';
  /** Body bytes left: of the whole body ('length') or of the current chunk ('chunked'). */
  private left = 0;
  /** Chunked framing's place: reading a size line, data, the CRLF after data, or trailers. */
  private chunkState: 'size' | 'data' | 'crlf' | 'trailers' = 'size';
  private line: Buffer | undefined = undefined;
  private keepAlive = true;
  dead = false;
  idleTimer: NodeJS.Timeout | undefined = undefined;
  /** How long this connection may stay idle: the server's keep-alive timeout, less a second. */
  idleMs = IDLE_CLOSE_MS;

  constructor(socket: Socket, private readonly pool: Pool) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, TCP_KEEPALIVE_MS);
    socket.on('data', (data: Buffer) => this.onData(data));
    socket.on('error', (err: NodeJS.ErrnoException) => this.lost(new Http1Error(err.message, err.code ?? 'ECONNRESET'), false));
    socket.on('close', () => this.lost(new Http1Error('socket hang up', 'ECONNRESET'), true));
  }

  send(request: Http1Request, pending: Pending): void {
    this.pending = pending;
    this.head = undefined;
    let head = `${request.method} ${request.path} HTTP/1.1\r\n`;
    const h = request.headers;
    for (let i = 0; i < h.length; i += 2) head += `${h[i]}: ${h[i + 1]}\r\n`;
    head += '\r\n';
    const body = request.body;
    const socket = this.socket;
    // Sent at the turn's end with the other requests' writes (src/common/turn-writes.ts).
    holdToTurnEnd(socket);
    socket.write(head, 'latin1');
    if (typeof body === 'string') {
      if (body.length > 0) socket.write(body);
    } else if (Buffer.isBuffer(body)) {
      if (body.length > 0) socket.write(body);
    } else {
      for (const part of body) socket.write(part);
    }
  }

  destroy(): void {
    if (this.dead) return;
    this.dead = true;
    this.pool.forget(this);
    this.socket.destroy();
  }

  /** The connection failed (`closed` false) or closed: a call or answer on it ends here. */
  private lost(err: Http1Error, closed: boolean): void {
    this.dead = true;
    this.pool.forget(this);
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined) {
      pending.reject(err);
      return;
    }
    const answer = this.answer;
    this.answer = undefined;
    if (answer === undefined) return;
    // An answer framed by the close ends with it; any other is cut off.
    if (this.framing === 'close' && closed) {
      this.finish(answer);
      return;
    }
    answer.conn = undefined;
    answer.destroy(new Http1Error('aborted', 'ECONNRESET'));
  }

  private onData(data: Buffer): void {
    if (this.pending !== undefined) {
      this.readHead(data);
      return;
    }
    if (this.answer !== undefined) {
      this.readBody(data);
      return;
    }
    // Bytes with no call waiting: the server is not speaking HTTP/1.1 as agreed.
    this.destroy();
  }

  private readHead(data: Buffer): void {
    const bytes = this.head === undefined ? data : Buffer.concat([this.head, data]);
    const end = bytes.indexOf('\r\n\r\n');
    if (end < 0) {
      if (bytes.length > MAX_HEAD_BYTES) this.failHead('the answer\'s head is too large');
      else this.head = bytes;
      return;
    }
    this.head = undefined;
    const parsed = parseHead(bytes.toString('latin1', 0, end));
    if (parsed === undefined) {
      this.failHead('the answer\'s head is not HTTP/1.1');
      return;
    }
    const rest = bytes.subarray(end + 4);
    // 1xx answers (other than 101, never asked for) come before the real one.
    if (parsed.status >= 100 && parsed.status < 200) {
      if (rest.length > 0) this.readHead(rest);
      return;
    }
    const pending = this.pending as Pending;
    this.pending = undefined;
    const headers = parsed.headers;
    const connection = String(headers['connection'] ?? '').toLowerCase();
    this.keepAlive = parsed.minor >= 1 ? !connection.includes('close') : connection.includes('keep-alive');
    const hint = /(?:^|[\s,])timeout=(\d+)/i.exec(String(headers['keep-alive'] ?? ''));
    if (hint !== null) this.idleMs = Math.min(IDLE_CLOSE_MS, Math.max(0, Number(hint[1]) * 1000 - 1000));
    const te = headers['transfer-encoding'];
    // No body: 204 and 304 (llmux sends no HEAD).
    if (parsed.status === 204 || parsed.status === 304) {
      this.framing = 'none';
    } else if (te !== undefined) {
      if (!/(?:^|,)\s*chunked\s*$/i.test(te)) {
        this.framing = 'close';
        this.keepAlive = false;
      } else {
        this.framing = 'chunked';
        this.chunkState = 'size';
        this.line = undefined;
      }
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (!/^\d+$/.test(headers['content-length']) || !Number.isSafeInteger(length)) {
        pending.reject(new Http1Error('the answer\'s content-length is not a number', 'HPE_INVALID_CONTENT_LENGTH'));
        this.destroy();
        return;
      }
      this.framing = 'length';
      this.left = length;
    } else {
      this.framing = 'close';
      this.keepAlive = false;
    }
    const answer = new Http1Answer(parsed.status, headers, this);
    this.answer = answer;
    if (this.framing === 'none' || (this.framing === 'length' && this.left === 0)) {
      this.finish(answer);
    } else if (this.framing === 'length' && rest.length >= this.left) {
      // The whole body came with the head: kept as it is, not pushed through the stream.
      if (rest.length > this.left) this.keepAlive = false;
      answer.whole = rest.length === this.left ? rest : rest.subarray(0, this.left);
      this.left = 0;
      this.finish(answer, false);
    } else if (rest.length > 0) {
      this.readBody(rest);
    }
    // A body already unreadable in the packet of its head fails the call, as in Node's client.
    if (answer.destroyed && !answer.complete) pending.reject(new Http1Error('the answer\'s body is not HTTP/1.1', 'HPE_INVALID_CHUNK_SIZE'));
    else pending.resolve(answer);
  }

  private failHead(why: string): void {
    const pending = this.pending;
    this.pending = undefined;
    this.destroy();
    pending?.reject(new Http1Error(why, 'HPE_INVALID'));
  }

  private readBody(data: Buffer): void {
    const answer = this.answer as Http1Answer;
    switch (this.framing) {
      case 'length': {
        if (data.length < this.left) {
          this.left -= data.length;
          this.push(answer, data);
          return;
        }
        const body = data.length === this.left ? data : data.subarray(0, this.left);
        const extra = data.length > this.left;
        this.left = 0;
        if (body.length > 0) this.push(answer, body);
        if (extra) this.keepAlive = false;
        this.finish(answer);
        return;
      }
      case 'close':
        this.push(answer, data);
        return;
      case 'chunked':
        this.readChunked(answer, data);
        return;
      default:
        // Bytes after a body that has none.
        this.destroy();
    }
  }

  private readChunked(answer: Http1Answer, data: Buffer): void {
    let at = 0;
    while (at < data.length && this.answer === answer) {
      if (this.chunkState === 'data') {
        const take = Math.min(this.left, data.length - at);
        this.push(answer, data.subarray(at, at + take));
        at += take;
        this.left -= take;
        if (this.left === 0) this.chunkState = 'crlf';
        continue;
      }
      const nl = data.indexOf(10, at);
      if (nl < 0) {
        const piece = data.subarray(at);
        this.line = this.line === undefined ? Buffer.from(piece) : Buffer.concat([this.line, piece]);
        if (this.line.length > 4096) this.cutOff(answer);
        return;
      }
      const piece = data.subarray(at, nl);
      const line = (this.line === undefined ? piece : Buffer.concat([this.line, piece])).toString('latin1').replace(/\r$/, '');
      this.line = undefined;
      at = nl + 1;
      if (this.chunkState === 'crlf') {
        if (line !== '') return this.cutOff(answer);
        this.chunkState = 'size';
      } else if (this.chunkState === 'size') {
        const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(line);
        if (size === null) return this.cutOff(answer);
        this.left = parseInt(size[1] as string, 16);
        this.chunkState = this.left === 0 ? 'trailers' : 'data';
      } else if (line === '') {
        // The empty line after the trailers: the body's end.
        if (at < data.length) this.keepAlive = false;
        this.finish(answer);
        return;
      }
    }
  }

  private cutOff(answer: Http1Answer): void {
    this.answer = undefined;
    answer.conn = undefined;
    this.destroy();
    answer.destroy(new Http1Error('aborted', 'HPE_INVALID_CHUNK_SIZE'));
  }

  private push(answer: Http1Answer, data: Buffer): void {
    if (!answer.push(data)) this.socket.pause();
  }

  /**
   * The body's last byte has been read: the answer ends (at once, or when its `whole` is read),
   * the connection goes back to the pool.
   */
  private finish(answer: Http1Answer, end = true): void {
    this.answer = undefined;
    answer.complete = true;
    answer.conn = undefined;
    if (end) answer.push(null);
    if (this.keepAlive && !this.dead) {
      this.socket.resume();
      this.pool.release(this);
    } else {
      this.destroy();
    }
  }
}

/** The head's status, version and headers, as Node's client gives them; undefined if unreadable. */
function parseHead(text: string): { status: number; minor: number; headers: IncomingHttpHeaders } | undefined {
  let end = text.indexOf('\r\n');
  if (end < 0) end = text.length;
  const status = STATUS_LINE.exec(end === text.length ? text : text.slice(0, end));
  if (status === null) return undefined;
  const headers: IncomingHttpHeaders = {};
  // Line by line, without splitting the head into an array first.
  for (let at = end + 2; at < text.length;) {
    let next = text.indexOf('\r\n', at);
    if (next < 0) next = text.length;
    const colon = text.indexOf(':', at);
    if (colon <= at || colon > next) return undefined;
    const name = text.slice(at, colon).toLowerCase();
    if (!headerNameValid(name)) return undefined;
    const value = text.slice(colon + 1, next).trim();
    at = next + 2;
    const had = headers[name];
    if (had === undefined) {
      headers[name] = name === 'set-cookie' ? [value] : value;
    } else if (name === 'content-length') {
      if (had !== value) return undefined;
    } else if (name === 'set-cookie') {
      (had as string[]).push(value);
    } else if (!SINGLE.has(name)) {
      headers[name] = `${had as string}, ${value}`;
    }
  }
  return { status: Number(status[2]), minor: status[1] === '1' ? 1 : 0, headers };
}

/** An answer's status line: the version, a status of three digits, and any reason. */
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: |$)/;

/** Headers of which Node's client keeps the first only (the rest are joined with ", "). */
const SINGLE = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer',
  'retry-after', 'server', 'user-agent',
]);

/** Idle connections of one target, the most recently used first. */
class Pool {
  private readonly free: Connection[] = [];
  /** Every open connection, idle or busy, for close(). */
  private readonly open = new Set<Connection>();

  /** The last TLS session of this target, to resume instead of a full handshake. */
  private session: Buffer | undefined = undefined;

  constructor(private readonly target: Http1Target) {}

  acquire(): { conn: Connection; fresh: boolean } {
    for (;;) {
      const conn = this.free.pop();
      if (conn === undefined) break;
      if (conn.dead || conn.socket.destroyed) continue;
      clearTimeout(conn.idleTimer);
      conn.idleTimer = undefined;
      conn.socket.ref();
      return { conn, fresh: false };
    }
    const conn = new Connection(this.connect(), this);
    this.open.add(conn);
    return { conn, fresh: true };
  }

  private connect(): Socket {
    const { hostname: host, port, secure } = this.target;
    if (!secure) return connect({ host, port });
    const socket: TLSSocket = loadTls().connect({
      host,
      port,
      // As Node's https: the name sent and checked is the host's, never an address's.
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ALPNProtocols: ['http/1.1'],
      ...(this.session === undefined ? {} : { session: this.session }),
    });
    socket.on('session', (session: Buffer) => {
      this.session = session;
    });
    return socket;
  }

  release(conn: Connection): void {
    if (this.free.length >= MAX_FREE || conn.idleMs === 0) {
      conn.destroy();
      return;
    }
    conn.socket.unref();
    conn.idleTimer = setTimeout(() => conn.destroy(), conn.idleMs);
    conn.idleTimer.unref();
    this.free.push(conn);
  }

  forget(conn: Connection): void {
    this.open.delete(conn);
    clearTimeout(conn.idleTimer);
    const at = this.free.indexOf(conn);
    if (at >= 0) this.free.splice(at, 1);
  }

  /** Closes every connection, idle or busy (an answer still arriving is cut off). */
  close(): void {
    for (const conn of [...this.open]) conn.destroy();
    this.free.length = 0;
  }
}

/** A call in flight, to time its connection and to cut it. */
export interface Http1Call {
  /** Whether its connection is new and not yet connected (a reused one is). */
  readonly connecting: boolean;
  /** Calls `listener` once the new connection's TCP connect is made. */
  onConnect(listener: () => void): void;
  destroy(): void;
}

export interface Http1Client {
  request(target: Http1Target, request: Http1Request, onAnswer: (answer: Http1Answer) => void, onError: (err: Error) => void): Http1Call;
  close(): void;
}

/**
 * The name of the first header of `headers` (a flat list) that cannot be written as it is (a name
 * that is not a token, a value with a line break or another control character: Node's client
 * refuses the same), else undefined.
 */
export function unwritableHeader(headers: readonly string[]): string | undefined {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (!headerNameValid(name) || !headerValueValid(headers[i + 1] as string)) return name;
  }
  return undefined;
}

export function createHttp1Client(): Http1Client {
  // By the target's object first (the caller keeps one per endpoint), then by what it names.
  let byObject = new WeakMap<Http1Target, Pool>();
  const pools = new Map<string, Pool>();
  return {
    request(target, request, onAnswer, onError) {
      let pool = byObject.get(target);
      if (pool === undefined) {
        const name = `${target.secure ? 'https' : 'http'}://${target.hostname}:${target.port}`;
        pool = pools.get(name) ?? new Pool({ ...target });
        pools.set(name, pool);
        byObject.set(target, pool);
      }
      const { conn, fresh } = pool.acquire();
      conn.send(request, { resolve: onAnswer, reject: onError });
      return {
        connecting: fresh && conn.socket.connecting,
        onConnect: (listener) => conn.socket.once('connect', listener),
        destroy: () => conn.destroy(),
      };
    },
    close() {
      for (const pool of pools.values()) pool.close();
      pools.clear();
      byObject = new WeakMap();
    },
  };
}
