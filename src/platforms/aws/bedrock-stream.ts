/**
 * Bedrock's streams as server-sent events, so everything after the platform sees the SSE it
 * already reads.
 *
 * - InvokeModelWithResponseStream (`invoke`): each `chunk` event's JSON payload holds `bytes`,
 *   the base64 of one Anthropic messages event; it becomes `event: <its type>\ndata: <its JSON>\n\n`,
 *   the JSON passed on as Bedrock sent it. (Bedrock adds `amazon-bedrock-invocationMetrics` to
 *   `message_stop`; it is left in, as readers ignore members they do not know.)
 * - ConverseStream (`converse`): each event's payload is the event itself; it becomes
 *   `event: <:event-type>\ndata: <payload>\n\n` for the Converse decoder to read.
 *
 * An `exception` frame (`throttlingException`, `modelStreamErrorException`, …) or an `error` frame
 * (`:error-code`) becomes a {@link BedrockError} with its type and the status Bedrock's reference
 * gives it; broken framing or an unreadable chunk becomes a 502 `MalformedStream` error. After an
 * error nothing more is read.
 */
import { createEventStreamDecoder } from './event-stream.ts';
import type { EventStreamMessage } from './event-stream.ts';
import { bedrockErrorOf, bedrockMessageOf } from './bedrock-errors.ts';
import type { BedrockError } from './bedrock-errors.ts';

export interface BedrockStreamOptions {
  /** Which Bedrock operation's stream this is. */
  operation: 'invoke' | 'converse';
  /** One whole SSE event, `event: …\ndata: …\n\n`. */
  onSse(text: string): void;
  onError(error: BedrockError): void;
  /** Largest event-stream message accepted; default the decoder's 16 MiB. */
  maxMessageBytes?: number;
}

export interface BedrockStreamReader {
  feed(chunk: Uint8Array): void;
  /** The upstream ended: a half-received frame is an error. */
  end(): void;
}

const EVENT_NAME = /^[A-Za-z][A-Za-z0-9_.-]*$/;

function stringHeader(message: EventStreamMessage, name: string): string | undefined {
  const header = message.headers[name];
  return header?.type === 'string' ? header.value : undefined;
}

function malformed(message: string): BedrockError {
  return { type: 'MalformedStream', status: 502, message, retryable: false };
}

/** `data:` must be one line: valid JSON has line breaks only between tokens, so re-serialising removes them. */
function oneLine(json: string, parsed: unknown): string {
  return json.includes('\n') || json.includes('\r') ? JSON.stringify(parsed) : json;
}

/** The SSE event for an invoke stream's `chunk` payload, or the error that it is unreadable. */
function invokeChunkToSse(payload: Buffer): string | BedrockError {
  let bytes: unknown;
  try {
    bytes = (JSON.parse(payload.toString('utf8')) as { bytes?: unknown }).bytes;
  } catch {
    return malformed('Bedrock sent a stream chunk that is not JSON');
  }
  if (typeof bytes !== 'string') return malformed('Bedrock sent a stream chunk without "bytes"');
  const json = Buffer.from(bytes, 'base64').toString('utf8');
  let event: unknown;
  try {
    event = JSON.parse(json);
  } catch {
    return malformed('Bedrock sent a stream chunk whose bytes are not a JSON event');
  }
  const type = typeof event === 'object' && event !== null ? (event as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !EVENT_NAME.test(type)) return malformed('Bedrock sent a stream event without a usable "type"');
  return `event: ${type}\ndata: ${oneLine(json, event)}\n\n`;
}

function converseEventToSse(eventType: string, payload: Buffer): string | BedrockError {
  if (!EVENT_NAME.test(eventType)) return malformed('Bedrock sent a stream event with an unusable :event-type');
  const json = payload.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return malformed(`Bedrock sent a ${eventType} event that is not JSON`);
  }
  return `event: ${eventType}\ndata: ${oneLine(json, parsed)}\n\n`;
}

/** Creates a reader that turns a Bedrock event stream into SSE events and at most one error. */
export function createBedrockStreamReader(options: BedrockStreamOptions): BedrockStreamReader {
  let stopped = false;
  const fail = (error: BedrockError): void => {
    stopped = true;
    options.onError(error);
  };

  const onMessage = (message: EventStreamMessage): void => {
    if (stopped) return;
    const messageType = stringHeader(message, ':message-type');
    if (messageType === 'exception') {
      fail(bedrockErrorOf(stringHeader(message, ':exception-type'), undefined, bedrockMessageOf(message.payload.toString('utf8'))));
      return;
    }
    if (messageType === 'error') {
      fail(bedrockErrorOf(stringHeader(message, ':error-code'), undefined, stringHeader(message, ':error-message') ?? ''));
      return;
    }
    if (messageType !== 'event') return;
    const eventType = stringHeader(message, ':event-type');
    if (eventType === undefined) return;
    let sse: string | BedrockError;
    if (options.operation === 'invoke') {
      // Other event types are not part of this operation's stream today; skipped, not refused.
      if (eventType !== 'chunk') return;
      sse = invokeChunkToSse(message.payload);
    } else {
      sse = converseEventToSse(eventType, message.payload);
    }
    if (typeof sse === 'string') options.onSse(sse);
    else fail(sse);
  };

  const decoder = createEventStreamDecoder({
    onMessage,
    onError: (error) => {
      if (!stopped) fail(malformed(`Bedrock's event stream is unreadable: ${error.message}`));
    },
    ...(options.maxMessageBytes === undefined ? {} : { maxMessageBytes: options.maxMessageBytes }),
  });

  return {
    feed(chunk) {
      if (!stopped) decoder.feed(chunk);
    },
    end() {
      if (!stopped) decoder.end();
    },
  };
}
