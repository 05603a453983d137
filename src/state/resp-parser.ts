/**
 * RESP2 on bytes: the incremental reply parser and the command encoder of the state client.
 *
 * The parser works like the SSE parser (`src/sse/parser.ts`): state in closure variables, a header
 * line split across reads kept as fragments joined once, errors reported, never thrown. A bulk
 * string that arrives in one read is decoded straight from it; one that spans reads is copied into
 * a buffer of its announced size as the pieces come, so a large reply costs one copy, not a
 * concatenation per read. Nested arrays use an explicit stack, never recursion, so a hostile
 * nesting depth cannot overflow the call stack.
 */

const CR = 0x0d;
const LF = 0x0a;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const SIMPLE_STRING = 0x2b; // +
const ERROR = 0x2d; // -
const INTEGER = 0x3a; // :
const BULK_STRING = 0x24; // $
const ARRAY = 0x2a; // *

/** Digits a double holds exactly; longer integers are left to `Number()` for correct rounding. */
const SAFE_DIGITS = 15;

export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024;

/**
 * An error reply from the server. `prefix` is its first word, the error's kind by Redis
 * convention (`ERR`, `NOSCRIPT`, `WRONGTYPE`, `NOAUTH`, `WRONGPASS`, `LOADING`, …).
 */
export class RespError extends Error {
  readonly prefix: string;

  constructor(message: string) {
    super(message);
    this.name = 'RespError';
    const space = message.indexOf(' ');
    this.prefix = space === -1 ? message : message.slice(0, space);
  }
}

/**
 * One reply: a simple or bulk string (decoded as UTF-8), an integer, null (null bulk string or null
 * array), an array of replies, or an error reply nested in an array (EXEC, scripts). Integers
 * beyond 2^53 lose precision; nothing llmux stores comes near that.
 */
export type Reply = string | number | null | RespError | Reply[];

/** One command argument; numbers are sent in their decimal form. */
export type RespArg = string | Buffer | number;

export interface RespParserError {
  code: 'protocol_error' | 'reply_too_large';
  message: string;
}

export interface RespParserOptions {
  onReply(reply: Reply): void;
  /** The stream cannot be read further; the parser ignores input until `reset()`. */
  onError(error: RespParserError): void;
  /** Largest reply (all its bytes, nested arrays included) kept in memory; default 64 MiB. */
  maxReplyBytes?: number;
}

export interface RespParser {
  /** Feeds the next bytes from the server, in whatever pieces they arrived. */
  feed(chunk: Buffer): void;
  /** Forgets everything seen, ready for a new connection. */
  reset(): void;
}

interface ArrayFrame {
  items: Reply[];
  length: number;
}

/** The integer in bytes [start, end), or undefined when they are not one. */
function readInteger(line: Buffer, start: number, end: number): number | undefined {
  let index = start;
  const negative = line[index] === MINUS;
  if (negative) index += 1;
  if (index === end) return undefined;
  let value = 0;
  for (let i = index; i < end; i += 1) {
    const digit = (line[i] as number) - DIGIT_0;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  if (end - index > SAFE_DIGITS) value = Number(line.toString('latin1', index, end));
  return negative ? -value : value;
}

/**
 * Creates a parser that calls `onReply` once per complete top-level reply. A malformed stream
 * (an unknown type byte, a bad length, a line or bulk string not ended by CRLF) is reported as
 * `protocol_error`; a reply above `maxReplyBytes` as `reply_too_large`, before its bytes are held.
 */
export function createRespParser(options: RespParserOptions): RespParser {
  const { onReply, onError } = options;
  const maxReplyBytes = options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;

  // A header line cut by the end of a read.
  let fragments: Buffer[] = [];
  let fragmentBytes = 0;
  // A bulk string spanning reads: its payload and CRLF, filled as bytes arrive.
  let bulk: Buffer | undefined;
  let bulkFilled = 0;
  // Arrays being filled, innermost last.
  let stack: ArrayFrame[] = [];
  // Bytes of the current top-level reply so far, for the size bound.
  let replyBytes = 0;
  let failed = false;

  function fail(code: RespParserError['code'], message: string): void {
    failed = true;
    onError({ code, message });
  }

  function tooLarge(): void {
    fail('reply_too_large', `state server reply larger than ${maxReplyBytes} bytes`);
  }

  function complete(value: Reply): void {
    let current = value;
    for (;;) {
      const frame = stack[stack.length - 1];
      if (frame === undefined) {
        replyBytes = 0;
        onReply(current);
        return;
      }
      frame.items.push(current);
      if (frame.items.length < frame.length) return;
      stack.pop();
      current = frame.items;
    }
  }

  /**
   * Handles one header line (type byte and value, without CRLF). Returns where reading continues in
   * `chunk`: past a bulk string read straight from it, or `position` unchanged.
   */
  function readHeader(line: Buffer, start: number, end: number, chunk: Buffer, position: number): number {
    const type = line[start];
    if (type === SIMPLE_STRING) {
      complete(line.toString('utf8', start + 1, end));
      return position;
    }
    if (type === ERROR) {
      complete(new RespError(line.toString('utf8', start + 1, end)));
      return position;
    }
    const value = readInteger(line, start + 1, end);
    if (type === INTEGER) {
      if (value === undefined) fail('protocol_error', 'state server sent an integer reply that is not a number');
      else complete(value);
      return position;
    }
    if (type === BULK_STRING) {
      if (value === undefined || value < -1) {
        fail('protocol_error', 'state server sent a bulk string with an invalid length');
        return position;
      }
      if (value === -1) {
        complete(null);
        return position;
      }
      replyBytes += value + 2;
      if (replyBytes > maxReplyBytes) {
        tooLarge();
        return position;
      }
      const payloadEnd = position + value;
      if (payloadEnd + 2 <= chunk.length) {
        if (chunk[payloadEnd] !== CR || chunk[payloadEnd + 1] !== LF) {
          fail('protocol_error', 'state server sent a bulk string not ended by CRLF');
          return position;
        }
        complete(chunk.toString('utf8', position, payloadEnd));
        return payloadEnd + 2;
      }
      bulk = Buffer.allocUnsafe(value + 2);
      bulkFilled = 0;
      return position;
    }
    if (type === ARRAY) {
      if (value === undefined || value < -1) fail('protocol_error', 'state server sent an array with an invalid length');
      else if (value === -1) complete(null);
      else if (value === 0) complete([]);
      else stack.push({ items: [], length: value });
      return position;
    }
    fail('protocol_error', `state server sent an unknown reply type byte 0x${(type ?? 0).toString(16)}`);
    return position;
  }

  function feed(chunk: Buffer): void {
    const length = chunk.length;
    let position = 0;
    while (position < length && !failed) {
      if (bulk !== undefined) {
        const taken = Math.min(bulk.length - bulkFilled, length - position);
        chunk.copy(bulk, bulkFilled, position, position + taken);
        bulkFilled += taken;
        position += taken;
        if (bulkFilled < bulk.length) return;
        const done = bulk;
        bulk = undefined;
        if (done[done.length - 2] !== CR || done[done.length - 1] !== LF) {
          fail('protocol_error', 'state server sent a bulk string not ended by CRLF');
          return;
        }
        complete(done.toString('utf8', 0, done.length - 2));
        continue;
      }

      const lineFeed = chunk.indexOf(LF, position);
      if (lineFeed === -1) {
        fragments.push(chunk.subarray(position));
        fragmentBytes += length - position;
        if (replyBytes + fragmentBytes > maxReplyBytes) tooLarge();
        return;
      }
      let line = chunk;
      let start = position;
      let end = lineFeed;
      if (fragments.length > 0) {
        fragments.push(chunk.subarray(position, lineFeed));
        line = Buffer.concat(fragments, fragmentBytes + lineFeed - position);
        start = 0;
        end = line.length;
        fragments = [];
        fragmentBytes = 0;
      }
      position = lineFeed + 1;
      replyBytes += end - start + 1;
      if (replyBytes > maxReplyBytes) {
        tooLarge();
        return;
      }
      if (end - start < 2 || line[end - 1] !== CR) {
        fail('protocol_error', 'state server sent a reply line not ended by CRLF');
        return;
      }
      position = readHeader(line, start, end - 1, chunk, position);
    }
  }

  function reset(): void {
    fragments = [];
    fragmentBytes = 0;
    bulk = undefined;
    bulkFilled = 0;
    stack = [];
    replyBytes = 0;
    failed = false;
  }

  return { feed, reset };
}

/**
 * One command as RESP bytes: an array of bulk strings. A string when every argument is text or a
 * number (one write, no copies), a Buffer when one is binary. Throws a TypeError for a number that
 * is not finite, which has no decimal form the server would accept.
 */
export function encodeCommand(args: readonly RespArg[]): string | Buffer {
  let text = `*${args.length}\r\n`;
  let pieces: Buffer[] | undefined;
  for (const arg of args) {
    if (Buffer.isBuffer(arg)) {
      pieces ??= [];
      pieces.push(Buffer.from(`${text}$${arg.length}\r\n`), arg);
      text = '\r\n';
      continue;
    }
    if (typeof arg === 'number' && !Number.isFinite(arg)) throw new TypeError(`state command argument ${String(arg)} is not a finite number`);
    const value = String(arg);
    text += `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  }
  if (pieces === undefined) return text;
  pieces.push(Buffer.from(text));
  return Buffer.concat(pieces);
}
