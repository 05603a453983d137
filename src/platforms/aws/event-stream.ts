/**
 * The `application/vnd.amazon.eventstream` framing Bedrock streams arrive in: each message is a
 * 12-byte prelude (total length, headers length, the prelude's CRC32), typed headers, a payload,
 * and the CRC32 of everything before it. Both checksums are checked; a frame may be cut at any
 * byte across network reads.
 *
 * Shaped like our SSE parser: a factory with `feed` / `end`, state in closure variables, bytes kept
 * as a list of pieces joined once per message (never the whole stream concatenated per read), a
 * maximum message size, and errors reported to `onError`, never thrown. A stream whose framing is
 * broken cannot be resynchronised, so the first error ends decoding.
 *
 * The encoder is for the fakes and tests. CRC32 is ours: `zlib.crc32` exists only from Node 20.15.
 */

/** A header's value, typed as on the wire (the type tags 0–9 of the format). */
export type EventStreamHeaderValue =
  | { type: 'boolean'; value: boolean }
  | { type: 'byte'; value: number }
  | { type: 'short'; value: number }
  | { type: 'integer'; value: number }
  | { type: 'long'; value: bigint }
  | { type: 'binary'; value: Uint8Array }
  | { type: 'string'; value: string }
  /** Epoch milliseconds. */
  | { type: 'timestamp'; value: number }
  /** `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower-case hex. */
  | { type: 'uuid'; value: string };

export interface EventStreamMessage {
  headers: Record<string, EventStreamHeaderValue>;
  payload: Buffer;
}

export interface EventStreamError {
  code: 'prelude_crc_mismatch' | 'message_crc_mismatch' | 'message_too_large' | 'invalid_length' | 'invalid_header' | 'truncated';
  message: string;
}

export interface EventStreamDecoderOptions {
  onMessage(message: EventStreamMessage): void;
  onError(error: EventStreamError): void;
  /** Largest message accepted (prelude to checksum); default 16 MiB, aws-c-event-stream's limit. */
  maxMessageBytes?: number;
}

export interface EventStreamDecoder {
  /** The next bytes of the stream, in whatever pieces they arrived. */
  feed(chunk: Uint8Array): void;
  /** The stream ended: a message left half-received is reported as `truncated`. */
  end(): void;
}

const PRELUDE_BYTES = 12;
const CRC_BYTES = 4;
const MIN_MESSAGE_BYTES = PRELUDE_BYTES + CRC_BYTES;
const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** aws-c-event-stream's limit on the headers of one message. */
const MAX_HEADERS_BYTES = 128 * 1024;

const CRC_TABLE = ((): Uint32Array => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, as zlib) of `bytes[start, end)`. */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let crc = 0xffffffff;
  for (let i = start; i < end; i += 1) crc = (CRC_TABLE[(crc ^ (bytes[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

class HeaderError extends Error {}

function uuidOf(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The headers in `bytes` (the header section of one message). Throws HeaderError on a bad one. */
function parseHeaders(bytes: Buffer): Record<string, EventStreamHeaderValue> {
  const headers: Record<string, EventStreamHeaderValue> = {};
  let at = 0;
  const need = (n: number): void => {
    if (at + n > bytes.length) throw new HeaderError('a header runs past the end of the header section');
  };
  while (at < bytes.length) {
    need(1);
    const nameLength = bytes.readUInt8(at);
    at += 1;
    need(nameLength + 1);
    const name = bytes.toString('utf8', at, at + nameLength);
    at += nameLength;
    const tag = bytes.readUInt8(at);
    at += 1;
    let value: EventStreamHeaderValue;
    switch (tag) {
      case 0: value = { type: 'boolean', value: true }; break;
      case 1: value = { type: 'boolean', value: false }; break;
      case 2: need(1); value = { type: 'byte', value: bytes.readInt8(at) }; at += 1; break;
      case 3: need(2); value = { type: 'short', value: bytes.readInt16BE(at) }; at += 2; break;
      case 4: need(4); value = { type: 'integer', value: bytes.readInt32BE(at) }; at += 4; break;
      case 5: need(8); value = { type: 'long', value: bytes.readBigInt64BE(at) }; at += 8; break;
      case 6:
      case 7: {
        need(2);
        const length = bytes.readUInt16BE(at);
        at += 2;
        need(length);
        value = tag === 6
          ? { type: 'binary', value: new Uint8Array(bytes.subarray(at, at + length)) }
          : { type: 'string', value: bytes.toString('utf8', at, at + length) };
        at += length;
        break;
      }
      case 8: need(8); value = { type: 'timestamp', value: Number(bytes.readBigInt64BE(at)) }; at += 8; break;
      case 9: need(16); value = { type: 'uuid', value: uuidOf(bytes.subarray(at, at + 16)) }; at += 16; break;
      default: throw new HeaderError(`header "${name.slice(0, 64)}" has unknown value type ${tag}`);
    }
    headers[name] = value;
  }
  return headers;
}

/** Creates a decoder that calls `onMessage` for each whole, checksum-verified message. */
export function createEventStreamDecoder(options: EventStreamDecoderOptions): EventStreamDecoder {
  const { onMessage, onError } = options;
  const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  let pieces: Buffer[] = [];
  let buffered = 0;
  /** The current message's total length once its prelude is read. */
  let expected: number | undefined;
  let failed = false;

  const fail = (code: EventStreamError['code'], message: string): void => {
    failed = true;
    pieces = [];
    buffered = 0;
    onError({ code, message });
  };

  /** The first `n` buffered bytes as one Buffer (copied only when they span pieces). */
  const peek = (n: number): Buffer => {
    const first = pieces[0] as Buffer;
    if (first.length >= n) return first.subarray(0, n);
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    for (const piece of pieces) {
      const count = Math.min(piece.length, n - filled);
      piece.copy(out, filled, 0, count);
      filled += count;
      if (filled === n) break;
    }
    return out;
  };

  /** Removes and returns the first `n` buffered bytes. */
  const take = (n: number): Buffer => {
    const out = peek(n);
    let left = n;
    while (left > 0) {
      const piece = pieces[0] as Buffer;
      if (piece.length <= left) {
        pieces.shift();
        left -= piece.length;
      } else {
        pieces[0] = piece.subarray(left);
        left = 0;
      }
    }
    buffered -= n;
    return out;
  };

  const readPrelude = (): boolean => {
    const prelude = peek(PRELUDE_BYTES);
    const total = prelude.readUInt32BE(0);
    const headersLength = prelude.readUInt32BE(4);
    if (crc32(prelude, 0, 8) !== prelude.readUInt32BE(8)) {
      fail('prelude_crc_mismatch', 'event stream prelude checksum does not match: the stream is corrupt');
      return false;
    }
    if (total < MIN_MESSAGE_BYTES || headersLength > total - MIN_MESSAGE_BYTES || headersLength > MAX_HEADERS_BYTES) {
      fail('invalid_length', `event stream message lengths are impossible (total ${total} bytes, headers ${headersLength} bytes)`);
      return false;
    }
    if (total > maxMessageBytes) {
      fail('message_too_large', `event stream message of ${total} bytes is over the ${maxMessageBytes}-byte limit`);
      return false;
    }
    expected = total;
    return true;
  };

  const readMessage = (total: number): void => {
    const bytes = take(total);
    expected = undefined;
    if (crc32(bytes, 0, total - CRC_BYTES) !== bytes.readUInt32BE(total - CRC_BYTES)) {
      fail('message_crc_mismatch', 'event stream message checksum does not match: the stream is corrupt');
      return;
    }
    const headersLength = bytes.readUInt32BE(4);
    let headers: Record<string, EventStreamHeaderValue>;
    try {
      headers = parseHeaders(bytes.subarray(PRELUDE_BYTES, PRELUDE_BYTES + headersLength));
    } catch (err) {
      if (!(err instanceof HeaderError)) throw err;
      fail('invalid_header', `event stream message has a bad header: ${err.message}`);
      return;
    }
    onMessage({ headers, payload: bytes.subarray(PRELUDE_BYTES + headersLength, total - CRC_BYTES) });
  };

  return {
    feed(chunk) {
      if (failed || chunk.length === 0) return;
      pieces.push(asBuffer(chunk));
      buffered += chunk.length;
      for (;;) {
        if (failed) return;
        if (expected === undefined) {
          if (buffered < PRELUDE_BYTES || !readPrelude()) return;
        }
        if (expected === undefined || buffered < expected) return;
        readMessage(expected);
      }
    },
    end() {
      if (failed || buffered === 0) return;
      fail('truncated', `event stream ended inside a message (${buffered} bytes of it received)`);
    },
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function encodeHeaderValue(header: EventStreamHeaderValue): Buffer {
  switch (header.type) {
    case 'boolean': return Buffer.from([header.value ? 0 : 1]);
    case 'byte': { const b = Buffer.alloc(2); b[0] = 2; b.writeInt8(header.value, 1); return b; }
    case 'short': { const b = Buffer.alloc(3); b[0] = 3; b.writeInt16BE(header.value, 1); return b; }
    case 'integer': { const b = Buffer.alloc(5); b[0] = 4; b.writeInt32BE(header.value, 1); return b; }
    case 'long': { const b = Buffer.alloc(9); b[0] = 5; b.writeBigInt64BE(header.value, 1); return b; }
    case 'timestamp': { const b = Buffer.alloc(9); b[0] = 8; b.writeBigInt64BE(BigInt(Math.trunc(header.value)), 1); return b; }
    case 'binary':
    case 'string': {
      const bytes = header.type === 'string' ? Buffer.from(header.value, 'utf8') : Buffer.from(header.value);
      if (bytes.length > 0xffff) throw new RangeError('event stream header value is over 65535 bytes');
      const b = Buffer.alloc(3);
      b[0] = header.type === 'string' ? 7 : 6;
      b.writeUInt16BE(bytes.length, 1);
      return Buffer.concat([b, bytes]);
    }
    case 'uuid': {
      if (!UUID.test(header.value)) throw new RangeError(`not a UUID: ${header.value}`);
      return Buffer.concat([Buffer.from([9]), Buffer.from(header.value.replace(/-/g, ''), 'hex')]);
    }
  }
}

/** One message's bytes (for fakes and tests): headers in the order given, both checksums. */
export function encodeEventStreamMessage(message: { headers: Record<string, EventStreamHeaderValue>; payload: Uint8Array | string }): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(message.headers)) {
    const nameBytes = Buffer.from(name, 'utf8');
    if (nameBytes.length > 255) throw new RangeError('event stream header name is over 255 bytes');
    parts.push(Buffer.from([nameBytes.length]), nameBytes, encodeHeaderValue(value));
  }
  const headers = Buffer.concat(parts);
  const payload = typeof message.payload === 'string' ? Buffer.from(message.payload, 'utf8') : Buffer.from(message.payload);
  const total = PRELUDE_BYTES + headers.length + payload.length + CRC_BYTES;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(headers.length, 4);
  out.writeUInt32BE(crc32(out, 0, 8), 8);
  headers.copy(out, PRELUDE_BYTES);
  payload.copy(out, PRELUDE_BYTES + headers.length);
  out.writeUInt32BE(crc32(out, 0, total - CRC_BYTES), total - CRC_BYTES);
  return out;
}
