/**
 * A stream written as one JSON array rather than server-sent events (llmux.md section 9): what
 * Gemini's `:streamGenerateContent` answers without `?alt=sse`, `[` then each response as an
 * element, separated by `,` and a line end, as Google writes them, and `]` at the end. The relays
 * write whole SSE events whatever the client's framing (the encoders' and a Gemini upstream's,
 * asked with `alt=sse`); this reframes them on their way out, each event's data one element (an
 * in-stream error is one more element holding the error object, then the array closes). A ping is
 * a line end: whitespace between elements, which any JSON reader skips.
 */
import { createSseParser } from '../sse/parser.ts';

/** How a stream that is not server-sent events is framed: its content type, its ends, its keep-alive, and its elements. */
export interface StreamFraming {
  contentType: string;
  /** Written before anything else. */
  head: string;
  /** Written during a long upstream silence. */
  pingFrame: string;
  /** The writer a relay writes whole SSE events to: each goes out reframed through `write`. */
  wrap(write: (bytes: Buffer | string) => void): (bytes: Buffer | string) => void;
  /** Written last, when the stream ends (normally or after its in-stream error). */
  tail: string;
}

const ELEMENT_SEPARATOR = ',\r\n';

/** The JSON-array framing of one stream (it counts its elements: make one per stream). */
export function jsonArrayFraming(): StreamFraming {
  return {
    contentType: 'application/json; charset=utf-8',
    head: '[',
    pingFrame: '\n',
    wrap(write) {
      let elements = 0;
      const parser = createSseParser({
        onEvent(event) {
          write(elements === 0 ? event.data : `${ELEMENT_SEPARATOR}${event.data}`);
          elements += 1;
        },
      });
      return (bytes) => parser.feed(typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
    },
    tail: ']',
  };
}
