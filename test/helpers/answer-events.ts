/**
 * A sink that records the neutral answer events (src/translate/answer-events.ts) a decoder tells,
 * one tuple per event, so a decoder's reading of its format can be asserted without any encoder.
 */
import type { AnswerEvents } from '../../src/translate/answer-events.ts';
import { createSseParser } from '../../src/sse/parser.ts';
import type { StreamDecoder } from '../../src/translate/answer-events.ts';

export type RecordedEvent = [string, ...unknown[]];

/** A sink whose `events` are every call made to it, in order: `['text', 'Hi']`, `['callStart', {…}]`, … */
export function recordingSink(): AnswerEvents & { events: RecordedEvent[] } {
  const events: RecordedEvent[] = [];
  const record = (name: string) => (...args: unknown[]): void => {
    // Optional arguments left out are not recorded, so `reasoningEnd()` reads as ['reasoningEnd'].
    while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
    events.push([name, ...args]);
  };
  return {
    events,
    start: record('start'),
    text: record('text'),
    refusal: record('refusal'),
    reasoning: record('reasoning'),
    reasoningEnd: record('reasoningEnd'),
    callStart: record('callStart'),
    callArguments: record('callArguments'),
    callEnd: record('callEnd'),
    annotate: record('annotate'),
    search: record('search'),
    usage: record('usage'),
    stop: record('stop'),
    end: record('end'),
    fail: record('fail'),
  };
}

/** The events `create`'s decoder tells for an upstream stream given as SSE text, ended cleanly. */
export function decodeStream(create: (sink: AnswerEvents) => StreamDecoder, sse: string): RecordedEvent[] {
  const sink = recordingSink();
  const decoder = create(sink);
  const parser = createSseParser({ onEvent: (event) => decoder.push(event) });
  parser.feed(Buffer.from(sse));
  parser.end();
  decoder.end();
  return sink.events;
}
