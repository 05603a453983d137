/**
 * Streams an upstream's answer to the client through a {@link Relay}. Backpressure: when the client
 * can't take more, the upstream read pauses until it drains. Keep-alive frames cover long silences;
 * an upstream idle past `idleTimeoutMs` ends the stream with an in-stream error. A client that goes
 * away stops the upstream at once. A client that stops reading (a slowloris reading a byte a
 * minute) holds only what the socket buffers take, and for `idleTimeoutMs` at most: then the
 * connection is closed and the upstream stopped (it cannot be told why: it reads nothing).
 */
import type { ServerResponse } from 'node:http';
import type { TokenUsage } from '../formats/wire.ts';
import { onClose, startEventStream, startFramedStream } from '../http/respond.ts';
import { releaseForReuse } from '../providers/upstream.ts';
import type { UpstreamResponse } from '../providers/upstream.ts';
import type { Relay } from './relays.ts';
import type { StreamFraming } from './json-array.ts';
import { redactBytes } from '../providers/redact.ts';
import type { Redact } from '../providers/redact.ts';

export interface StreamOptions {
  /** Written after `pingIntervalMs` of upstream silence. */
  pingFrame: string;
  pingIntervalMs: number;
  idleTimeoutMs: number;
  now(): number;
  /** Called when the head of the stream is written (time to first byte). */
  onStart(): void;
  /** Takes credentials out of what is written (src/providers/redact.ts); a relay writes whole events. */
  redact?: Redact | undefined;
  /**
   * Registers a way to cut this stream from outside (the gateway shutting down): the relay's
   * in-stream error with the message, then the end. Returns the unregistering function.
   */
  register?(cut: (message: string) => void): () => void;
  /** A stream that is not server-sent events (./json-array.ts): its head, its elements, its tail and its ping. */
  framing?: StreamFraming | undefined;
}

/** How the stream ended. */
export interface StreamResult {
  usage: TokenUsage | undefined;
  /** The whole answer the relay assembled, if it does (see Relay.answer). */
  answer: unknown;
  /** Why it did not complete (upstream error, cut off, client gone), for the log. */
  error: string | undefined;
}

/** Relays `upstream` to `res`; `createRelay` gets the writer that respects backpressure. */
export function relayStream(
  upstream: UpstreamResponse,
  res: ServerResponse,
  createRelay: (write: (bytes: Buffer | string) => void) => Relay,
  options: StreamOptions,
): Promise<StreamResult> {
  const { framing } = options;
  if (framing === undefined) startEventStream(res);
  else startFramedStream(res, framing.contentType);
  options.onStart();
  return new Promise((resolve) => runStream(upstream, res, createRelay, options, resolve));
}

/**
 * The stream's life, in a function of its own: its closures (the listeners, the timer) live as long
 * as the stream, and share this function's context; what they do not name (the relay's factory,
 * the options object) is not in it, so an open stream does not keep them.
 */
function runStream(
  upstream: UpstreamResponse,
  res: ServerResponse,
  createRelay: (write: (bytes: Buffer | string) => void) => Relay,
  options: StreamOptions,
  resolve: (result: StreamResult) => void,
): void {
  const { now, pingIntervalMs, idleTimeoutMs, framing } = options;
  const pingFrame = framing?.pingFrame ?? options.pingFrame;
  let done = false;
  let lastActivity = now();
  let timer: NodeJS.Timeout | undefined;
  let clientGone = false;
  /** Since when the client has not taken what was written (the upstream is paused for it). */
  let stalledSince: number | undefined;
  let stallError: string | undefined;

  const { redact } = options;
  const write = (piece: Buffer | string): void => {
    if (res.writableEnded) return;
    // A string is encoded once, here, rather than by the redactor and again by the socket.
    const bytes = redact === undefined ? piece : redactBytes(redact, typeof piece === 'string' ? Buffer.from(piece) : piece);
    if (!res.write(bytes) && !upstream.isPaused()) {
      upstream.pause();
      stalledSince = now();
      res.once('drain', () => {
        stalledSince = undefined;
        upstream.resume();
      });
    }
  };
  if (framing !== undefined) write(framing.head);
  const relay = createRelay(framing === undefined ? write : framing.wrap(write));
  let unregister: (() => void) | undefined;

  const finish = (): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    unregister?.();
    upstream.off('data', onData);
    if (framing !== undefined && stallError === undefined && !clientGone) write(framing.tail);
    if (!res.writableEnded) res.end();
    resolve({ usage: relay.usage(), answer: relay.answer(), error: stallError ?? (clientGone ? 'client closed the stream' : relay.error) });
  };

  const fail = (message: string): void => {
    if (done) return;
    relay.fail(message);
    // finish() first: destroying the upstream can emit 'aborted' at once.
    finish();
    upstream.destroy();
  };

  const onData = (chunk: Buffer): void => {
    lastActivity = now();
    relay.feed(chunk);
    if (!relay.finished) return;
    finish();
    if (relay.error === undefined) releaseForReuse(upstream);
    else upstream.destroy();
  };

  const onEnd = (): void => {
    if (done) return;
    relay.end();
    finish();
  };

  const tick = (): void => {
    if (done) return;
    if (stalledSince !== undefined && now() - stalledSince >= idleTimeoutMs) {
      // The client took nothing for the whole bound: nothing can reach it, not even an error.
      stallError = `the client read nothing for ${idleTimeoutMs} ms (limits.stream_idle_timeout_ms)`;
      finish();
      res.destroy();
      upstream.destroy();
      return;
    }
    // Paused for a slow client is not the upstream's silence.
    if (upstream.isPaused()) lastActivity = now();
    const idle = now() - lastActivity;
    if (idle >= idleTimeoutMs) {
      fail(`The provider sent nothing for ${idleTimeoutMs} ms (limits.stream_idle_timeout_ms)`);
      return;
    }
    if (idle >= pingIntervalMs && !res.writableNeedDrain) write(pingFrame);
    const stallLeft = stalledSince === undefined ? Infinity : idleTimeoutMs - (now() - stalledSince);
    timer = setTimeout(tick, Math.max(1, Math.min(pingIntervalMs, idleTimeoutMs - idle, stallLeft)));
    timer.unref();
  };
  timer = setTimeout(tick, Math.min(pingIntervalMs, idleTimeoutMs));
  timer.unref();

  unregister = options.register?.(fail);
  upstream.on('data', onData);
  // `on`, not `once` (each once is a wrapper the open stream holds): both handlers run once anyway.
  const lost = (): void => fail('The connection to the provider was lost mid-stream');
  upstream.on('end', onEnd);
  upstream.on('error', lost);
  upstream.on('aborted', lost);
  onClose(res, () => {
    if (done) return;
    // The client went away: stop the generation at once.
    clientGone = true;
    finish();
    upstream.destroy();
  });
}
