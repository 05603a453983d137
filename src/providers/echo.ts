/**
 * The built-in model `llmux-echo`, as a provider like any other: it sits at the address `llmux:echo`,
 * answers in whichever format it is asked in, and gives its answer as a byte stream that the same
 * relay writes to the client as any upstream's. The answer is the last user text, streamed word by
 * word with the events a real provider sends. It makes a fresh install work end to end, and it is
 * what the smoke tests talk to.
 *
 * One word is one output token here; the request's output cap, and the model's own of 4,096 words,
 * cut the answer like a real model's (`max_tokens` / `length`). Its input is bounded: it answers with at
 * most the first 65,536 characters of the last user text (cut there, with the same stop reason), and
 * it makes each word only when the stream asks for it, so an open echo stream holds at most that
 * text and one event, whatever the request's size.
 */
import { Readable } from 'node:stream';
import type { ProviderConfig } from '../config/types.ts';
import type { ClientRequestOf, TokenUsage, WireFormat } from '../formats/wire.ts';
import { dialects } from '../dialects/index.ts';
import { realValue } from '../common/json-lazy.ts';
import type { Transport, UpstreamResponse } from './upstream.ts';

/** The echo model's provider: answered in-process, in every format. */
export const ECHO_PROVIDER: ProviderConfig = {
  id: 'llmux',
  format: 'chat',
  // Every format a dialect reads.
  serves: Object.keys(dialects) as WireFormat[],
  baseUrl: 'llmux:echo',
  apiKey: undefined,
  keyless: true,
  headers: {},
};

/**
 * The longest text the echo model answers with: the last user text is cut here, so a request's
 * size never becomes the size of what the echo model holds or sends.
 */
export const ECHO_MAX_TEXT_CHARS = 65_536;
/** Most words in an answer, fewer when the request's output cap says so: the catalog's `max_output_tokens` for `llmux-echo`. */
export const ECHO_MAX_WORDS = 4_096;

/** A word, with the whitespace before it; or the whitespace that ends the text. */
const WORD = /\s*\S+|\s+$/y;

/** Where the answer ends in `text` when it may hold at most `maxWords` words, and how many it holds. */
export function measureWords(text: string, maxWords: number): { end: number; words: number; cut: boolean } {
  WORD.lastIndex = 0;
  let words = 0;
  let end = 0;
  while (end < text.length) {
    if (words === maxWords) return { end, words, cut: true };
    if (WORD.exec(text) === null) break;
    end = WORD.lastIndex;
    words++;
  }
  return { end, words, cut: false };
}

/** The words of `text` up to `end`, made one at a time as the stream asks for them. */
export function* wordsOf(text: string, end: number): Generator<string> {
  let at = 0;
  const word = new RegExp(WORD.source, 'y');
  while (at < end) {
    word.lastIndex = at;
    if (word.exec(text) === null) return;
    const next = Math.min(word.lastIndex, end);
    yield text.slice(at, next);
    at = next;
  }
}

/**
 * The echo answer to one request, in the request's own format (its dialect reads the last user
 * text and writes the answer). What it holds while streaming is the (bounded) text and the event
 * being written: words are cut from the text as they are sent.
 */
function answer<F extends WireFormat>(request: ClientRequestOf<F>): UpstreamResponse {
  const dialect = dialects[request.format];
  // The echo model reads the user's text: the texts of a body read lazily are decoded.
  const body = realValue(request.body, request.raw?.texts);
  // One character past the bound tells whether the text was cut there.
  const whole = dialect.userText(body, ECHO_MAX_TEXT_CHARS + 1);
  const text = whole.slice(0, ECHO_MAX_TEXT_CHARS);
  const { end, words, cut } = measureWords(text, Math.min(dialect.maxTokens(body) ?? ECHO_MAX_WORDS, ECHO_MAX_WORDS));
  const usage: TokenUsage = { inputTokens: dialect.estimate(body), outputTokens: words, cacheReadTokens: 0, cacheCreationTokens: 0 };
  // Cut at the output cap, or at the text bound when the whole last user text did not fit.
  const answerText = { model: request.model, text: text.slice(0, end), cut: cut || whole.length > text.length, usage };
  if (!request.stream) {
    return respond(Readable.from([dialect.textAnswer(answerText)]), 'application/json');
  }
  // Like an upstream asked for usage (the pass-through body always asks): the relay drops the
  // usage chunk when the client did not ask for it.
  const events = dialect.textStream({ ...answerText, words: wordsOf(text, end), includeUsage: true })[Symbol.iterator]();
  const stream = new Readable({
    read() {
      // One word per event-loop turn, like a model producing tokens.
      setImmediate(() => {
        if (this.destroyed) return;
        const next = events.next();
        this.push(next.done === true ? null : next.value);
      });
    },
  });
  return respond(stream, 'text/event-stream');
}

function respond(stream: Readable, contentType: string): UpstreamResponse {
  return Object.assign(stream, { statusCode: 200, headers: { 'content-type': contentType } });
}

/** The echo model's transport. */
export function createEchoTransport(): Transport {
  return {
    send: (request) => {
      if (request.client === undefined) return Promise.reject(new Error('the echo model was sent no request to answer'));
      return Promise.resolve(answer(request.client));
    },
  };
}
