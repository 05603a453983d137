/**
 * A bounded request-body reader: bytes are counted while they arrive, and past the limit the
 * request is answered with 413 without reading further. A body that stalls between two reads for
 * longer than its idle bound (`limits.body_timeout_ms`, 60 s like nginx's `client_body_timeout`)
 * is answered with 408, so a client dripping a body byte by byte cannot hold a socket for the
 * whole request timeout. Bodies of keyed requests are also held against a {@link BodyClaim}
 * (./body-budget.ts), so what all requests hold in memory at once is bounded.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { GatewayError, invalidParameters, tooLarge } from '../common/errors.ts';
import { parseJsonLazily, walkJson } from '../common/json-bytes.ts';
import type { JsonObjectBytes, LazyMembers } from '../common/json-bytes.ts';
import type { LazyTexts } from '../common/json-lazy.ts';
import type { JsonRecall } from '../common/json-recall.ts';
import type { BodyClaim } from './body-budget.ts';
import { realTimers } from '../common/timers.ts';
import type { TimerHandle, Timers } from '../common/timers.ts';

/** Longest silence between two reads of a body when the caller gives none (nginx's default). */
export const DEFAULT_BODY_TIMEOUT_MS = 60_000;
/** Deepest nesting of arrays and objects accepted in a JSON body (docs/errors.md). */
export const MAX_JSON_DEPTH = 200;

export interface ReadBodyOptions {
  /** Longest silence between two reads (default {@link DEFAULT_BODY_TIMEOUT_MS}). */
  idleTimeoutMs?: number | undefined;
  /** Where the body's bytes are held while the request runs; refused when it has no room. */
  claim?: BodyClaim | undefined;
  /** The clock the idle bound is measured on, and its timer (default: Node's). */
  now?: (() => number) | undefined;
  timers?: Timers | undefined;
  /**
   * Longest the whole body may take to arrive, however steadily it comes (408 after it). For
   * small routes (./admission.ts), where a body dripped a byte at a time never trips the idle bound.
   */
  deadlineMs?: number | undefined;
}

/** 408 request_timeout: the body stopped arriving. */
function bodyTimedOut(idleTimeoutMs: number): GatewayError {
  return new GatewayError(
    408,
    'invalid_request_error',
    'request_timeout',
    `The request body stopped arriving for ${idleTimeoutMs} ms (limits.body_timeout_ms); send it without pauses`,
  );
}

/** 408 request_timeout: the whole body did not arrive in time. */
function bodyTooSlow(deadlineMs: number): GatewayError {
  return new GatewayError(408, 'invalid_request_error', 'request_timeout', `The request body did not arrive within ${deadlineMs} ms; send it at once`);
}

/**
 * Reads the whole body into one Buffer. Rejects with a 413 GatewayError as soon as the declared
 * `content-length` or the bytes received pass `maxBodyBytes`, with a 408 when the body stalls for
 * `idleTimeoutMs`, with the claim's refusal when the budget has no room for it, and with a 400 if
 * the client stops sending midway. Whatever rejects, the rest of the body is not read: the caller's
 * error answer closes the connection.
 */
export function readBody(req: IncomingMessage, maxBodyBytes: number, options: ReadBodyOptions = {}): Promise<Buffer> {
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const claim = options.claim;
  const now = options.now ?? Date.now;
  const timers = options.timers ?? realTimers;
  return new Promise((resolve, reject) => {
    const declaredHeader = req.headers['content-length'];
    const declared = declaredHeader === undefined ? undefined : Number(declaredHeader);
    if (declared !== undefined && declared > maxBodyBytes) {
      reject(tooLarge(maxBodyBytes));
      return;
    }
    // A declared length is held before a byte is read, so a body with no room is never read.
    let claimed = 0;
    if (claim !== undefined && declared !== undefined && declared > 0) {
      const refusal = claim.take(declared);
      if (refusal !== undefined) {
        reject(refusal);
        return;
      }
      claimed = declared;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    // One timer for the whole body, re-armed only when it fires: a chunk just notes the time.
    let lastData = now();
    let timer: TimerHandle | undefined;
    let deadline: TimerHandle | undefined;
    const cleanup = (): void => {
      timers.clearTimeout(timer);
      timers.clearTimeout(deadline);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const stop = (err: GatewayError): void => {
      settled = true;
      cleanup();
      // Stop reading: the rest is never buffered. The socket is closed after the error is sent.
      req.pause();
      reject(err);
    };
    const onTimer = (): void => {
      if (settled) return;
      const quietMs = now() - lastData;
      if (quietMs < idleTimeoutMs) {
        timer = timers.setTimeout(onTimer, idleTimeoutMs - quietMs);
        return;
      }
      stop(bodyTimedOut(idleTimeoutMs));
    };
    const onData = (chunk: Buffer): void => {
      lastData = now();
      size += chunk.length;
      if (size > maxBodyBytes) {
        stop(tooLarge(maxBodyBytes));
        return;
      }
      if (claim !== undefined && size > claimed) {
        const refusal = claim.take(size - claimed);
        if (refusal !== undefined) {
          stop(refusal);
          return;
        }
        claimed = size;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onAborted = (): void => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(new GatewayError(400, 'invalid_request_error', 'incomplete_body', 'The request body ended before it was complete'));
    };
    const onError = onAborted;
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
    if (!req.complete) {
      timer = timers.setTimeout(onTimer, idleTimeoutMs);
      const { deadlineMs } = options;
      if (deadlineMs !== undefined) deadline = timers.setTimeout(() => { if (!settled) stop(bodyTooSlow(deadlineMs)); }, deadlineMs);
    }
  });
}

/** Most of an unread body discarded after its answer, before the connection is closed instead. */
export const MAX_DISCARDED_BODY_BYTES = 64 * 1024;
/** Longest the rest of an unread body is waited for after its answer. */
const DISCARD_TIMEOUT_MS = 5_000;

/** Whether the rest of `req`'s body may be more than {@link limitUnreadBody} discards. */
export function mayOutgrowDiscard(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const declared = req.headers['content-length'];
  return declared === undefined || !(Number(declared) <= MAX_DISCARDED_BODY_BYTES);
}

/**
 * Called once a request's answer is sent: a body not read to its end (the request was refused
 * before it, or the route reads none) is discarded up to {@link MAX_DISCARDED_BODY_BYTES} within
 * a few seconds, so a small one leaves the connection reusable; past that the connection is
 * closed rather than read on. Node would otherwise read and discard any amount (one connection
 * pushed 16.5 GB in 20 s past a 401). The bytes are counted on the socket: Node discards a body
 * nobody read without emitting it. Nothing is watched on a connection already closed (Node ends a
 * `connection: close` answer's socket before the answer's own `finish` listeners run), and the
 * watch ends when its connection closes: a timer left armed would hold the socket and the request
 * for the whole wait (under a flood of refused 100 KB requests, 5,800 of them, 26 MB, a second
 * after it).
 */
export function limitUnreadBody(req: IncomingMessage, timers: Timers = realTimers): void {
  if (req.complete || req.socket.destroyed) return;
  const socket = req.socket;
  let discarded = 0;
  const stopWatching = (): void => {
    timers.clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', stopWatching);
  };
  const close = (): void => {
    stopWatching();
    socket.destroy();
  };
  const onData = (chunk: Buffer): void => {
    if (req.complete) {
      stopWatching();
      return;
    }
    discarded += chunk.length;
    if (discarded > MAX_DISCARDED_BODY_BYTES) close();
  };
  const timer = timers.setTimeout(() => {
    if (req.complete) stopWatching();
    else close();
  }, DISCARD_TIMEOUT_MS);
  timer.unref();
  socket.on('data', onData);
  socket.once('close', stopWatching);
  req.once('end', stopWatching);
  // A body left paused by a reader that gave up on it flows again, to be counted.
  req.resume();
}

/**
 * Parses a JSON body. Refuses invalid UTF-8, nesting deeper than {@link MAX_JSON_DEPTH} and
 * non-object bodies with 400 invalid_parameters; never throws anything but GatewayError. The depth
 * is checked on the bytes before parsing, so a deep body never becomes deep objects that later
 * recursive steps (validation, translation, serialising the upstream body) would have to survive.
 */
export function parseJsonBody(body: Buffer): Record<string, unknown> {
  return readJsonObject(body).value;
}

/** Where a body read lazily is remembered, so that the next one under `scope` reads only what changed (src/common/json-recall.ts). */
export interface RecallScope {
  memory: JsonRecall;
  /** The key and the format: a key's bodies are compared only with its own. */
  scope: string;
}

/**
 * {@link parseJsonBody}, keeping the bytes and where the top-level members are in them, so that
 * a same-format upstream can be sent the client's bytes with a member or two spliced in (one walk
 * over the bytes finds both the nesting and the members: src/common/json-bytes.ts). Given `lazy`,
 * the long values of its text members are left as bytes and the value holds references to them
 * (`texts`: src/common/json-lazy.ts), when the body may be read so.
 */
export function readJsonObject(body: Buffer, lazy?: LazyMembers, recall?: RecallScope): JsonObjectBytes {
  if (body.length === 0) throw invalidParameters('the request body is empty; send a JSON object');
  const lazily = lazy !== undefined && body.length >= lazy.minBodyBytes;
  if (lazily && recall !== undefined) {
    const recalled = recall.memory.recall(recall.scope, body, lazy, MAX_JSON_DEPTH);
    if (recalled !== undefined) return recalled;
  }
  const walk = walkJson(body, MAX_JSON_DEPTH, lazily ? lazy : undefined);
  if (walk.tooDeep) {
    throw invalidParameters(`the request body nests too deeply (more than ${MAX_JSON_DEPTH} levels of arrays and objects); flatten the request`);
  }
  // Checked on the bytes (simdutf), not by looking for U+FFFD in the decoded text afterwards.
  if (!isUtf8(body)) throw invalidParameters('the request body is not valid UTF-8');
  let value: unknown;
  let texts: LazyTexts | undefined;
  try {
    ({ value, texts } = parseJsonLazily(body, walk));
  } catch (err) {
    throw invalidParameters(`the request body is not valid JSON (${(err as Error).message.slice(0, 200)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidParameters('the request body must be a JSON object');
  const members = walk.layout?.members ?? [];
  const keys = new Set<string>();
  for (const member of members) keys.add(member.key);
  // Every read has the same members in the same order (src/common/json-recall.ts makes them too): one shape for the code that reads them.
  const read: JsonObjectBytes = { bytes: body, value: value as Record<string, unknown>, members, duplicateKeys: keys.size !== members.length, texts, marked: walk.marked };
  if (texts !== undefined && recall !== undefined && walk.layout !== undefined) recall.memory.remember(recall.scope, read, walk.layout.inner, lazy as LazyMembers);
  return read;
}

/**
 * Whether the JSON text in `bytes` opens more than `maxDepth` arrays and objects at once. Strings
 * are skipped from quote to quote with `indexOf` (most of a body's bytes are text), so this costs
 * far less than the parse it protects. Malformed JSON is left for the parser to name.
 */
export function nestsDeeperThan(bytes: Buffer, maxDepth: number): boolean {
  return walkJson(bytes, maxDepth).tooDeep;
}
