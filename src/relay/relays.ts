/**
 * What a stream relay does with an upstream's bytes, behind one interface: pass them through as
 * they are (same format; usage read on the side by the usage tap) or translate them event by event
 * (formats differ). src/relay/stream.ts drives either the same way.
 *
 * Everything a relay writes goes through the stream's redactor (./stream.ts, src/providers/redact.ts),
 * event by event, so an upstream that echoes its credential does not hand it to the client; an
 * upstream's in-stream error is also redacted here for the log.
 */
import type { TokenUsage, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import { dialects } from '../dialects/index.ts';
import type { Dialect } from '../dialects/index.ts';
import { createSseParser } from '../sse/parser.ts';
import type { SseParser } from '../sse/parser.ts';
import { createUsageTap } from '../passthrough/usage-tap.ts';
import type { UsageTap, UsageTapOptions } from '../passthrough/usage-tap.ts';
import { decoderFor } from '../translate/index.ts';
import type { AnsweringStreamTranslator } from '../translate/index.ts';
import type { StreamDecoder } from '../translate/answer-events.ts';
import type { SseEvent } from '../sse/parser.ts';
import type { Redact } from '../providers/redact.ts';

export interface Relay {
  /** Upstream bytes, in whatever pieces they came; what the client gets is written at once. */
  feed(chunk: Buffer): void;
  /** The upstream body ended. */
  end(): void;
  /** The upstream failed (cut off, silent too long, unreadable): write the in-stream error and finish. */
  fail(message: string): void;
  /** Nothing more will be written: the client has the whole answer, or an error. */
  readonly finished: boolean;
  /** Why the answer did not complete, for the request log; undefined when it did. */
  readonly error: string | undefined;
  /** Usage as far as the upstream reported it. */
  usage(): TokenUsage | undefined;
  /** The whole answer the client got, when the relay assembles one (Responses: the response object); else undefined. */
  answer(): unknown;
}

/**
 * A same-format stream: the upstream's bytes go out unchanged, cut only at an upstream error, but
 * for the model id, which names `options.model` (the llmux id that answered). With `observe`, the
 * same events are also read by a decoder on the side (a chat client's carried state: ./carry.ts).
 */
export function createPassThroughRelay(
  format: WireFormat,
  write: (bytes: Buffer | string) => void,
  options: UsageTapOptions & { redact: Redact; observe?: StreamDecoder | undefined },
): Relay {
  return new PassThroughRelay(format, write, options);
}

/**
 * An object with its methods on the prototype rather than closures over a shared context (every
 * open stream holds its relay); `finished` and `error` are plain fields, not getters (V8 keeps an
 * object with accessors in dictionary mode, ~500 B more).
 */
class PassThroughRelay implements Relay {
  finished = false;
  error: string | undefined = undefined;
  private readonly tap: UsageTap;
  private readonly write: (bytes: Buffer | string) => void;
  private readonly observer: SseParser | undefined;
  private readonly observe: StreamDecoder | undefined;
  private readonly redact: Redact;
  private readonly errorFrame: Dialect<WireFormat>['errorFrame'];

  constructor(format: WireFormat, write: (bytes: Buffer | string) => void, options: UsageTapOptions & { redact: Redact; observe?: StreamDecoder | undefined }) {
    const { observe } = options;
    this.tap = createUsageTap(format, options);
    this.write = write;
    this.observe = observe;
    this.observer = observe === undefined ? undefined : createSseParser({ onEvent: observe.push, eventNames: dialects[format].eventNames });
    this.redact = options.redact;
    this.errorFrame = dialects[format].errorFrame;
  }

  feed(chunk: Buffer): void {
    if (this.finished) return;
    const { tap } = this;
    this.observer?.feed(chunk);
    const out = tap.feed(chunk);
    if (out !== undefined && out.length > 0) this.write(out);
    if (!tap.stopped) return;
    if (tap.overflowed) {
      this.fail(`The provider's stream could not be read: ${tap.upstreamError ?? 'event too large'}`);
      return;
    }
    // The upstream's error reached the client; nothing after it is forwarded.
    this.error = tap.upstreamError === undefined ? undefined : this.redact(tap.upstreamError);
    this.finished = true;
  }

  end(): void {
    if (this.finished) return;
    const { tap } = this;
    this.observer?.end();
    this.observe?.end();
    const rest = tap.end();
    if (rest !== undefined && rest.length > 0) this.write(rest);
    if (tap.upstreamError !== undefined) this.error = this.redact(tap.upstreamError);
    else if (!tap.completed) {
      this.fail('The provider ended the stream before it was complete');
      return;
    }
    this.finished = true;
  }

  fail(message: string): void {
    if (this.finished) return;
    this.error = message;
    this.write(this.errorFrame({ message, type: 'api_error', answer: this.tap.answer(), sequenceNumber: this.tap.nextSequenceNumber() }));
    this.finished = true;
  }

  usage(): TokenUsage | undefined {
    return this.tap.usage();
  }

  answer(): unknown {
    return this.tap.answer();
  }
}

/** Whether an upstream event carries an error: `event: error`, or a chat chunk with an `"error"` key. */
function isErrorEvent(event: SseEvent): boolean {
  return event.event === 'error' || event.data.includes('"error"');
}

/** A stream in another format: each upstream event is parsed once and translated at once. */
export function createTranslatedRelay(upstreamFormat: UpstreamFormat, translator: AnsweringStreamTranslator, redact: Redact): Relay {
  let failure: string | undefined;
  const parser = createSseParser({
    onEvent: (event) => translator.push(isErrorEvent(event) ? { ...event, data: redact(event.data) } : event),
    // Invalid UTF-8 is decoded with U+FFFD and the stream goes on; only an oversized event ends it.
    onError: (problem) => {
      if (problem.code === 'buffer_overflow') fail(`The provider's stream could not be read: ${problem.message}`);
    },
    eventNames: decoderFor(upstreamFormat).eventNames,
  });

  function fail(message: string): void {
    if (translator.finished) return;
    failure = message;
    translator.fail(message);
  }

  // The translator's state copied after each call, as plain properties (see createPassThroughRelay).
  const relay: Relay & { finished: boolean; error: string | undefined } = {
    feed(chunk) {
      parser.feed(chunk);
      settle();
    },
    end() {
      parser.end();
      translator.end();
      settle();
    },
    fail(message) {
      fail(message);
      settle();
    },
    finished: false,
    error: undefined,
    usage: () => translator.usage(),
    answer: () => translator.answer?.(),
  };
  function settle(): void {
    relay.finished = translator.finished;
    relay.error = translator.failed ? (failure ?? 'the provider reported an error mid-stream') : undefined;
  }
  return relay;
}
