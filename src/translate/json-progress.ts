/**
 * Whether a JSON value arriving in fragments (a streamed tool call's arguments) has closed, read
 * from the fragments as they pass without parsing them: brackets are counted outside strings.
 */

/** How far a JSON text built from fragments has come: complete once its outer value has closed. */
export interface JsonProgress {
  feed(fragment: string): void;
  readonly complete: boolean;
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Follows brackets outside strings, one character at a time over each fragment once: a call's
 * arguments are complete when the object they open has closed (a later fragment could only make
 * them invalid JSON). Arguments that are not an object never complete; finish_reason ends them.
 */
export function createJsonProgress(): JsonProgress {
  let depth = 0;
  let started = false;
  let inString = false;
  let escaped = false;
  // `complete` a plain property, set here: an object literal with a getter survives young
  // collections in V8 until a full one (src/dialects/carry.ts, SealTurn), and one is made a call.
  const progress = {
    complete: false,
    feed(fragment: string): void {
      if (progress.complete) return;
      for (let i = 0; i < fragment.length; i += 1) {
        const code = fragment.charCodeAt(i);
        if (inString) {
          if (escaped) escaped = false;
          else if (code === BACKSLASH) escaped = true;
          else if (code === QUOTE) inString = false;
        } else if (code === QUOTE) {
          inString = true;
        } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
          depth += 1;
          started = true;
        } else if ((code === CLOSE_BRACE || code === CLOSE_BRACKET) && started) {
          depth -= 1;
          if (depth === 0) {
            progress.complete = true;
            return;
          }
        }
      }
    },
  };
  return progress;
}
