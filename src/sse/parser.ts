/**
 * Incremental server-sent-events parser that works on bytes, so a UTF-8 character or a line split
 * across network reads is never decoded in halves. Follows the WHATWG event-stream rules (CRLF, CR
 * and LF line ends, `:` comments, one leading space after the colon removed, `data:` lines joined
 * with "\n") with one deliberate difference: `end()` dispatches a last event that lacks its closing
 * blank line, because real upstream recordings end that way.
 *
 * Shaped after rexxars/eventsource-parser: state lives in closure variables, a partial line is kept
 * as a list of fragments joined once when the line completes, errors are reported, never thrown.
 */
import { CR, LF, afterLineEnd, createLineScanner } from './lines.ts';

/** One parsed server-sent event. `event` is undefined when the event had no `event:` line. */
export interface SseEvent { event: string | undefined; data: string; id?: string }

const COLON = 0x3a;
const SPACE = 0x20;
const BOM_0 = 0xef;
const BOM_1 = 0xbb;
const BOM_2 = 0xbf;
const REPLACEMENT_CHARACTER = '\uFFFD';
// Field names, compared as bytes: decoding each line's name to switch on it cost a string per line
// (`processLine` was 6% self time of translated streams in bench/RESULTS.md).
const DATA_FIELD = Buffer.from('data');
const EVENT_FIELD = Buffer.from('event');
const ID_FIELD = Buffer.from('id');

const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

export interface SseParserError { code: 'buffer_overflow' | 'invalid_utf8'; message: string }

export interface SseParserOptions {
  onEvent(event: SseEvent): void;
  onError?(error: SseParserError): void;
  /** Largest event (its lines, without line ends) kept in memory; default 16 MiB. */
  maxEventBytes?: number;
  /**
   * Event names the caller expects on every event (a wire format's `message_start`, …): matched as
   * bytes and given as the same string each time, rather than decoded (and checked for invalid
   * UTF-8) once per event. Other names are decoded as usual.
   */
  eventNames?: readonly string[];
}

export interface SseParser {
  /** Feeds the next bytes of the stream, in whatever pieces they arrived. */
  feed(chunk: Uint8Array): void;
  /** The stream ended: completes a last line and event that lack their line ends. */
  end(): void;
  /** Forgets everything seen, ready for a new stream. */
  reset(): void;
}

const strictDecoder = new TextDecoder('utf-8', { fatal: true });

/** Whether bytes [start, end) of `line` are exactly `name`. */
function isField(line: Buffer, start: number, end: number, name: Buffer): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i += 1) if (line[start + i] !== name[i]) return false;
  return true;
}

function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/**
 * Creates a parser that calls `onEvent` for each complete event. Overlong events are reported
 * to `onError` as `buffer_overflow` and skipped up to the next blank line; bytes that are not
 * UTF-8 are reported as `invalid_utf8` and decoded with U+FFFD, as an EventSource would.
 */
export function createSseParser(options: SseParserOptions): SseParser {
  const { onEvent, onError } = options;
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const knownNames = (options.eventNames ?? []).map((name) => ({ name, bytes: Buffer.from(name) }));
  const lines = createLineScanner();

  function knownEventName(line: Buffer, start: number, end: number): string | undefined {
    for (const known of knownNames) if (isField(line, start, end, known.bytes)) return known.name;
    return undefined;
  }

  // The line being read when a chunk ended mid-line.
  let fragments: Buffer[] = [];
  let fragmentBytes = 0;
  // A chunk ended on CR: a LF opening the next chunk belongs to the same line end.
  let pendingCr = false;
  let isFirstLine = true;
  // Skipping an overlong event until the blank line that ends it.
  let discarding = false;

  let eventType: string | undefined;
  let eventId: string | undefined;
  // The event's `data:` lines joined with "\n" as they come; undefined while it has none. Not an
  // array joined at dispatch: that was one more array per event, and events have one line.
  let data: string | undefined;
  let eventBytes = 0;

  function clearEvent(): void {
    eventType = undefined;
    eventId = undefined;
    data = undefined;
    eventBytes = 0;
  }

  function overflow(): void {
    onError?.({
      code: 'buffer_overflow',
      message: `server-sent event larger than ${maxEventBytes} bytes; skipped up to the next event`,
    });
    fragments = [];
    fragmentBytes = 0;
    clearEvent();
    discarding = true;
  }

  function dispatch(): void {
    if (data !== undefined) {
      const event: SseEvent = eventId === undefined ? { event: eventType, data } : { event: eventType, data, id: eventId };
      clearEvent();
      onEvent(event);
      return;
    }
    clearEvent();
  }

  function decode(line: Buffer, start: number, end: number): string {
    const text = line.toString('utf8', start, end);
    // Cheap check first: only a line that decoded to U+FFFD can hold invalid bytes.
    if (text.includes(REPLACEMENT_CHARACTER)) {
      try {
        strictDecoder.decode(line.subarray(start, end));
      } catch {
        onError?.({ code: 'invalid_utf8', message: 'server-sent event line is not valid UTF-8; decoded with U+FFFD' });
      }
    }
    return text;
  }

  function processLine(line: Buffer, lineStart: number, lineEnd: number): void {
    let start = lineStart;
    if (isFirstLine) {
      isFirstLine = false;
      if (lineEnd - start >= 3 && line[start] === BOM_0 && line[start + 1] === BOM_1 && line[start + 2] === BOM_2) start += 3;
    }
    if (start === lineEnd) {
      if (discarding) discarding = false;
      else dispatch();
      return;
    }
    if (discarding || line[start] === COLON) return;

    eventBytes += lineEnd - start;
    if (eventBytes > maxEventBytes) {
      overflow();
      return;
    }

    // A JS loop, not indexOf: names are a few bytes long, and the search must stop at the line's end
    // (`line` may be a whole chunk of many lines).
    let nameEnd = start;
    while (nameEnd < lineEnd && line[nameEnd] !== COLON) nameEnd += 1;
    let valueStart = nameEnd === lineEnd ? lineEnd : nameEnd + 1;
    if (valueStart < lineEnd && line[valueStart] === SPACE) valueStart += 1;

    if (isField(line, start, nameEnd, DATA_FIELD)) {
      const value = decode(line, valueStart, lineEnd);
      data = data === undefined ? value : `${data}\n${value}`;
    } else if (isField(line, start, nameEnd, EVENT_FIELD)) {
      eventType = knownEventName(line, valueStart, lineEnd) ?? decode(line, valueStart, lineEnd);
    } else if (isField(line, start, nameEnd, ID_FIELD)) {
      const id = decode(line, valueStart, lineEnd);
      // The spec ignores an id holding NULL, which could never be sent back as Last-Event-ID.
      if (!id.includes('\u0000')) eventId = id;
    }
    // `retry:` and unknown fields mean nothing to a proxy.
  }

  function feed(chunk: Uint8Array): void {
    const buffer = asBuffer(chunk);
    const length = buffer.length;
    let position = 0;

    if (pendingCr) {
      pendingCr = false;
      if (length > 0 && buffer[0] === LF) position = 1;
    }

    lines.start(buffer, position);
    while (position < length) {
      const lineEnd = lines.next(position);

      if (lineEnd === -1) {
        const rest = length - position;
        if (discarding) {
          // Only whether the line is empty matters while skipping.
          fragmentBytes += rest;
          if (fragments.length === 0) fragments.push(buffer.subarray(position, position + 1));
        } else if (eventBytes + fragmentBytes + rest > maxEventBytes) {
          overflow();
          fragmentBytes = rest;
          fragments.push(buffer.subarray(position, position + 1));
        } else {
          fragments.push(buffer.subarray(position));
          fragmentBytes += rest;
        }
        break;
      }

      if (fragments.length === 0) {
        processLine(buffer, position, lineEnd);
      } else if (discarding) {
        // A non-empty line: fragments hold at least one byte.
        fragments = [];
        fragmentBytes = 0;
      } else {
        fragments.push(buffer.subarray(position, lineEnd));
        const line = Buffer.concat(fragments, fragmentBytes + lineEnd - position);
        fragments = [];
        fragmentBytes = 0;
        processLine(line, 0, line.length);
      }

      if (buffer[lineEnd] === CR && lineEnd + 1 === length) pendingCr = true;
      position = afterLineEnd(buffer, lineEnd);
    }
    lines.release();
  }

  function end(): void {
    if (fragments.length > 0) {
      if (discarding) {
        fragments = [];
        fragmentBytes = 0;
      } else {
        const line = fragments.length === 1 ? (fragments[0] as Buffer) : Buffer.concat(fragments, fragmentBytes);
        fragments = [];
        fragmentBytes = 0;
        processLine(line, 0, line.length);
      }
    }
    if (!discarding) dispatch();
    reset();
  }

  function reset(): void {
    fragments = [];
    fragmentBytes = 0;
    pendingCr = false;
    isFirstLine = true;
    discarding = false;
    clearEvent();
  }

  return { feed, end, reset };
}
