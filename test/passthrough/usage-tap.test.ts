import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { TokenUsage, WireFormat } from '../../src/formats/wire.ts';
import { createUsageTap, type UsageTap, type UsageTapOptions } from '../../src/passthrough/usage-tap.ts';
import { everySplit, randomPieces, seededRandom, splitAt } from '../helpers/split.ts';
import { withLlmuxModel } from '../helpers/model-names.ts';

const FIXTURES = new URL('../fixtures/upstream/', import.meta.url);
const WHOLE_FILE_SPLIT_BYTES = 10 * 1024;

interface Expected { usage: TokenUsage | undefined; completed: boolean; upstreamError: string | undefined }

function usage(inputTokens: number, outputTokens: number, cacheReadTokens = 0, cacheCreationTokens = 0): TokenUsage {
  return { inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens };
}

const OPENAI_SERVER_ERROR =
  'The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if you keep seeing this error.';

/** What each recording reports, read off the files by hand (see the fixture README; xAI's completion_tokens leave out its 227 reasoning tokens). */
const EXPECTED: Record<string, Expected> = {
  'azure-openai-stream-first-chunk-prompt-filter.sse': { usage: undefined, completed: false, upstreamError: undefined },
  'deepseek-reasoning-content-stream.sse': { usage: usage(18, 219), completed: true, upstreamError: undefined },
  'deepseek-reasoning-tool-call-stream.sse': { usage: usage(19, 83, 320), completed: true, upstreamError: undefined },
  'groq-reasoning-field-stream.sse': { usage: usage(17, 1107), completed: true, upstreamError: undefined },
  // The [DONE] after the error chunk is not forwarded (nor read): a failed chat stream never ends with it.
  'openai-stream-error-midstream.sse': { usage: undefined, completed: false, upstreamError: OPENAI_SERVER_ERROR },
  'openai-stream-finish-length.sse': { usage: usage(79, 1), completed: true, upstreamError: undefined },
  'openai-stream-logprobs.sse': { usage: usage(9, 2), completed: true, upstreamError: undefined },
  'openai-stream-n3-multiple-choices.sse': { usage: usage(79, 42), completed: true, upstreamError: undefined },
  'openai-stream-parallel-tool-calls.sse': { usage: usage(149, 60), completed: true, upstreamError: undefined },
  'openai-stream-refusal.sse': { usage: usage(79, 11), completed: true, upstreamError: undefined },
  'openai-stream-text-include-usage.sse': { usage: usage(14, 30), completed: true, upstreamError: undefined },
  'openai-stream-text-vercel.sse': { usage: usage(16, 300), completed: true, upstreamError: undefined },
  'openai-stream-tool-call.sse': { usage: usage(44, 16), completed: true, upstreamError: undefined },
  'xai-reasoning-content-single-chunk-tool-call.sse': { usage: usage(1, 253, 306), completed: true, upstreamError: undefined },
  'anthropic-docs-stream-error-event.sse': { usage: undefined, completed: false, upstreamError: 'Overloaded' },
  'anthropic-docs-stream-text.sse': { usage: usage(25, 15), completed: true, upstreamError: undefined },
  'anthropic-docs-stream-thinking.sse': { usage: undefined, completed: true, upstreamError: undefined },
  'anthropic-docs-stream-tool-use.sse': { usage: usage(472, 89), completed: true, upstreamError: undefined },
  'anthropic-stream-error-midstream-overloaded.sse': { usage: usage(17, 1), completed: false, upstreamError: 'Overloaded' },
  'anthropic-stream-max-tokens-mid-tool.sse': { usage: usage(450, 124), completed: true, upstreamError: undefined },
  'anthropic-stream-refusal-no-content-blocks.sse': { usage: usage(18, 5), completed: true, upstreamError: undefined },
  'anthropic-stream-refusal.sse': { usage: usage(20, 0), completed: true, upstreamError: undefined },
  'anthropic-stream-structured-output-padded.sse': { usage: usage(135, 10), completed: true, upstreamError: undefined },
  'anthropic-stream-text-then-tool-use-haiku.sse': { usage: usage(849, 47), completed: true, upstreamError: undefined },
  'anthropic-stream-text.sse': { usage: usage(11, 6), completed: true, upstreamError: undefined },
  'anthropic-stream-thinking-refusal-padded.sse': { usage: usage(28, 106), completed: true, upstreamError: undefined },
  'anthropic-stream-tool-use-no-args.sse': { usage: usage(565, 48), completed: true, upstreamError: undefined },
  'anthropic-stream-tool-use.sse': { usage: usage(377, 65), completed: true, upstreamError: undefined },
  'anthropic-thinking-stream.sse': { usage: usage(69, 53), completed: true, upstreamError: undefined },
};

function formatOf(name: string): WireFormat {
  return name.startsWith('anthropic-') ? 'messages' : 'chat';
}

interface Run { forwarded: Buffer[]; tap: UsageTap }

function run(format: WireFormat, pieces: Buffer[], options: UsageTapOptions = {}): Run {
  const tap = createUsageTap(format, options);
  const forwarded: Buffer[] = [];
  for (const piece of pieces) {
    const out = tap.feed(piece);
    if (out !== undefined) forwarded.push(out);
  }
  const rest = tap.end();
  if (rest !== undefined) forwarded.push(rest);
  return { forwarded, tap };
}

function assertReports(tap: UsageTap, expected: Expected, message: string): void {
  assert.deepEqual(tap.usage(), expected.usage, message);
  assert.equal(tap.completed, expected.completed, message);
  assert.equal(tap.upstreamError, expected.upstreamError, message);
}

/** Every piece `feed` returned ends on a blank line, so an error event appended there stands alone. */
function assertEndsOnBoundaries(forwarded: Buffer[], fromFeed: number, message: string): void {
  for (let i = 0; i < fromFeed; i += 1) {
    const piece = forwarded[i] as Buffer;
    assert.ok(piece.length >= 2 && piece[piece.length - 1] === 0x0a && piece[piece.length - 2] === 0x0a, `${message}: piece ${i} ends mid-event`);
  }
}

function eventStarts(bytes: Buffer): number[] {
  const starts = [0];
  for (let at = bytes.indexOf('\n\n'); at !== -1; at = bytes.indexOf('\n\n', at + 2)) starts.push(at + 2);
  return starts;
}

/** What the client should receive: everything, except what follows an upstream error. */
function expectedForwarded(name: string, bytes: Buffer): Buffer {
  if (name !== 'openai-stream-error-midstream.sse') return bytes;
  return bytes.subarray(0, bytes.indexOf('data: [DONE]'));
}

describe('createUsageTap on the recorded upstream streams', () => {
  const names = readdirSync(FIXTURES).filter((name) => name.endsWith('.sse')).sort();

  it('has an expectation for every recorded stream', () => {
    assert.deepEqual(names, Object.keys(EXPECTED).sort());
  });

  for (const name of names) {
    const bytes = readFileSync(new URL(name, FIXTURES));
    const format = formatOf(name);
    const expected = EXPECTED[name] as Expected;

    it(`reads usage, completion and errors of ${name}`, () => {
      assertReports(run(format, [bytes]).tap, expected, 'one chunk');
      for (const seed of [1, 2]) {
        const { forwarded, tap } = run(format, randomPieces(bytes, seed, 64));
        assert.ok(Buffer.concat(forwarded).equals(expectedForwarded(name, bytes)), `seed ${seed}: forwarded bytes differ`);
        assertReports(tap, expected, `seed ${seed}`);
      }
    });

    it(`reads ${name} the same when the upstream writes one event per chunk, forwarding each chunk itself`, () => {
      const starts = [...eventStarts(bytes), bytes.length];
      const chunks: Buffer[] = [];
      for (let i = 0; i + 1 < starts.length; i += 1) if ((starts[i] as number) < (starts[i + 1] as number)) chunks.push(bytes.subarray(starts[i], starts[i + 1]));
      const tap = createUsageTap(format);
      const wanted = expectedForwarded(name, bytes);
      if (wanted !== bytes) {
        const out = chunks.map((chunk) => tap.feed(chunk) ?? Buffer.alloc(0));
        out.push(tap.end() ?? Buffer.alloc(0));
        assert.ok(Buffer.concat(out).equals(wanted), 'nothing after the error is forwarded');
        assert.equal(tap.stopped, true);
        assertReports(tap, expected, 'event per chunk');
        return;
      }
      for (const chunk of chunks.slice(0, -1)) assert.equal(tap.feed(chunk), chunk, 'a whole event is forwarded without a copy');
      const last = chunks.at(-1) as Buffer;
      const lastOut = tap.feed(last);
      const rest = tap.end();
      assert.ok(Buffer.concat([lastOut ?? Buffer.alloc(0), rest ?? Buffer.alloc(0)]).equals(last));
      assertReports(tap, expected, 'event per chunk');
    });

    if (bytes.length <= WHOLE_FILE_SPLIT_BYTES) {
      it(`forwards exactly the bytes of ${name}, and reads the same reports, at every split offset`, () => {
        for (const { offset, pieces } of everySplit(bytes)) {
          const { forwarded, tap } = run(format, pieces);
          const message = `split at byte ${offset}`;
          assert.ok(Buffer.concat(forwarded).equals(expectedForwarded(name, bytes)), `${message}: forwarded bytes differ`);
          assertReports(tap, expected, message);
        }
      });
    } else {
      // After a forwarded boundary the tap holds nothing and its line state is initial, so a cut
      // at offset i is checked exactly on the two events around it. The tap looks only at line
      // ends (candidates are searched in whole forwarded events), so every cut within a few bytes
      // of a line end is checked, plus seeded cuts inside lines; reports are checked above.
      it(`forwards exactly the bytes of ${name}, ending each piece on an event boundary, at every split offset near a line end`, () => {
        const starts = [...eventStarts(bytes), bytes.length];
        const random = seededRandom(7);
        for (let e = 0; e + 1 < starts.length; e += 1) {
          const window = bytes.subarray(starts[e], starts[Math.min(starts.length - 1, e + 2)]);
          const eventBytes = (starts[e + 1] as number) - (starts[e] as number);
          const offsets = new Set<number>();
          for (let at = 0; at !== -1 && at < eventBytes; at = window.indexOf(0x0a, at + 1)) {
            for (let near = at - 3; near <= at + 3; near += 1) if (near >= 0 && near < eventBytes) offsets.add(near);
          }
          for (let i = 0; i < 3; i += 1) offsets.add(Math.floor(random() * eventBytes));
          for (const offset of offsets) {
            const tap = createUsageTap(format);
            const pieces = splitAt(window, offset);
            const forwarded: Buffer[] = [];
            for (const piece of pieces) {
              const out = tap.feed(piece);
              if (out !== undefined) forwarded.push(out);
            }
            const fromFeed = forwarded.length;
            const rest = tap.end();
            if (rest !== undefined) forwarded.push(rest);
            const message = `split at byte ${(starts[e] as number) + offset}`;
            if (!Buffer.concat(forwarded).equals(window)) assert.fail(`${message}: forwarded bytes differ`);
            assertEndsOnBoundaries(forwarded, fromFeed, message);
          }
        }
      });
    }
  }
});

describe('createUsageTap holding back partial events', () => {
  it('forwards up to the last boundary and keeps the rest for later', () => {
    const tap = createUsageTap('chat');
    const out = tap.feed(Buffer.from('data: {"a":1}\n\ndata: {"b"'));
    assert.equal(out?.toString(), 'data: {"a":1}\n\n');
    assert.equal(tap.feed(Buffer.from(':2}')), undefined);
    assert.equal(tap.feed(Buffer.from('\n'))?.toString(), undefined);
    assert.equal(tap.feed(Buffer.from('\n'))?.toString(), 'data: {"b":2}\n\n');
    assert.equal(tap.end(), undefined);
  });

  it('returns the held bytes at end() even without a closing blank line', () => {
    const tap = createUsageTap('messages');
    assert.equal(tap.feed(Buffer.from('event: message_stop\ndata: {"type":"message_stop"}')), undefined);
    assert.equal(tap.end()?.toString(), 'event: message_stop\ndata: {"type":"message_stop"}');
    assert.equal(tap.completed, true);
  });

  it('finds boundaries made of CRLF and CR line ends, split anywhere', () => {
    for (const lineEnd of ['\r\n', '\r']) {
      const text = `data: {"choices":[]}${lineEnd}${lineEnd}data: {"usage":{"prompt_tokens":3,"completion_tokens":4}}${lineEnd}${lineEnd}data: [DONE]${lineEnd}${lineEnd}`;
      const bytes = Buffer.from(text);
      for (const { offset, pieces } of everySplit(bytes)) {
        const tap = createUsageTap('chat');
        const forwarded: Buffer[] = [];
        for (const piece of pieces) {
          const out = tap.feed(piece);
          if (out !== undefined) forwarded.push(out);
        }
        const rest = tap.end();
        assert.ok(Buffer.concat([...forwarded, ...(rest === undefined ? [] : [rest])]).equals(bytes), `split at ${offset}`);
        assert.deepEqual(tap.usage(), usage(3, 4), `${JSON.stringify(lineEnd)} split at ${offset}`);
        assert.equal(tap.completed, true);
        for (const piece of forwarded) {
          const text = piece.toString();
          // A CRLF blank line may be forwarded up to its CR: the LF, when it comes, opens the next piece.
          const endsOnBlankLine = lineEnd === '\r' ? text.endsWith('\r\r') : text === '\n' || text.endsWith('\r\n\r\n') || text.endsWith('\r\n\r');
          assert.ok(endsOnBlankLine, `piece ${JSON.stringify(text)} ends mid-event`);
        }
      }
    }
  });

  it('does not take a line ending in CR followed by LF in the next chunk for a blank line', () => {
    const tap = createUsageTap('chat');
    assert.equal(tap.feed(Buffer.from('data: x\r')), undefined);
    // The LF completes "data: x\r\n"; the event is still open.
    assert.equal(tap.feed(Buffer.from('\n')), undefined);
    assert.equal(tap.feed(Buffer.from('\r\n'))?.toString(), 'data: x\r\n\r\n');
  });

  it('returns nothing for an empty chunk', () => {
    assert.equal(createUsageTap('chat').feed(Buffer.alloc(0)), undefined);
    assert.equal(createUsageTap('chat').end(), undefined);
  });
});

describe('createUsageTap reading events', () => {
  it('takes OpenAI usage from a later chunk with empty choices', () => {
    const { tap } = run('chat', [
      Buffer.from('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n'),
      Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}\n\n'),
    ]);
    assert.deepEqual(tap.usage(), usage(6, 5, 4));
    assert.equal(tap.completed, false);
  });

  it('reads usage written with spaces, as Python servers write JSON', () => {
    const { tap } = run('chat', [Buffer.from('data: {"choices": [], "usage" : {"prompt_tokens": 2, "completion_tokens": 3}}\n\n')]);
    assert.deepEqual(tap.usage(), usage(2, 3));
  });

  it('reads Groq usage nested under x_groq when the top level has none', () => {
    const { tap } = run('chat', [Buffer.from('data: {"choices":[],"x_groq":{"usage":{"prompt_tokens":7,"completion_tokens":8}}}\n\n')]);
    assert.deepEqual(tap.usage(), usage(7, 8));
  });

  it('does not mistake text that mentions usage or errors for a report', () => {
    const { tap } = run('chat', [
      Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"\\"usage\\":{\\"error\\":{"}}],"usage":null}\n\n'),
      Buffer.from('data: {"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}\n\n'),
    ]);
    assert.equal(tap.usage(), undefined);
    assert.equal(tap.upstreamError, undefined);
  });

  it('reports an OpenAI error chunk whose error is a plain string', () => {
    const { tap } = run('chat', [Buffer.from('data: {"error":"rate limited"}\n\n')]);
    assert.equal(tap.upstreamError, 'rate limited');
  });

  it('ignores a candidate event that is not valid JSON', () => {
    const { forwarded, tap } = run('chat', [Buffer.from('data: {"usage":{oops\n\n')]);
    assert.equal(Buffer.concat(forwarded).toString(), 'data: {"usage":{oops\n\n');
    assert.equal(tap.usage(), undefined);
  });

  it('combines Anthropic message_start input and cache counts with message_delta output', () => {
    const { tap } = run('messages', [
      Buffer.from('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}}}\n\n'),
      Buffer.from('event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}\n\n'),
    ]);
    assert.deepEqual(tap.usage(), usage(5, 42, 100, 20));
    assert.equal(tap.completed, false);
  });

  it('takes the latest non-zero input counts when message_delta repeats them', () => {
    const { tap } = run('messages', [
      Buffer.from('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}\n\n'),
      Buffer.from('event: message_delta\ndata: {"type":"message_delta","usage":{"input_tokens":9,"cache_read_input_tokens":0,"output_tokens":3}}\n\n'),
    ]);
    assert.deepEqual(tap.usage(), usage(9, 3, 100, 0));
  });

  it('reads event names written without the space after the colon', () => {
    const { tap } = run('messages', [Buffer.from('event:error\ndata: {"type":"error","error":{"type":"api_error","message":"boom"}}\n\n')]);
    assert.equal(tap.upstreamError, 'boom');
  });

  it('reports an Anthropic error event with unreadable data as a generic upstream error', () => {
    const { tap } = run('messages', [Buffer.from('event: error\ndata: not json\n\n')]);
    assert.equal(tap.upstreamError, 'upstream reported an error');
  });

  it('ignores text that only looks like an Anthropic event name', () => {
    const { tap } = run('messages', [
      Buffer.from('event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"\\nevent: message_stop\\n"}}\n\n'),
    ]);
    assert.equal(tap.completed, false);
  });

  it('returns a copy of its usage, so callers cannot change it', () => {
    const { tap } = run('chat', [Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n')]);
    const first = tap.usage() as TokenUsage;
    first.inputTokens = 1000;
    assert.deepEqual(tap.usage(), usage(1, 1));
  });
});

describe('createUsageTap on reads that carry many events', () => {
  const content = (text: string): string =>
    `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(text)}},"finish_reason":null}]}\n\n`;
  const usageOnly = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}\n\n';
  const before = Array.from({ length: 10 }, (_, i) => content(`word ${i}`)).join('');
  const after = Array.from({ length: 10 }, (_, i) => content(`more ${i}`)).join('');

  it('reads a usage chunk in the middle of a read and forwards the read itself', () => {
    const read = Buffer.from(before + usageOnly + after + 'data: [DONE]\n\n');
    const tap = createUsageTap('chat');
    assert.equal(tap.feed(read), read);
    assert.deepEqual(tap.usage(), usage(5, 6));
    assert.equal(tap.completed, true);
  });

  it('drops a usage-only chunk from the middle of a read, keeping every byte around it', () => {
    const tap = createUsageTap('chat', { dropUsageChunk: true });
    const out = tap.feed(Buffer.from(before + usageOnly + after + 'data: [DONE]\n\n'));
    assert.equal(out?.toString(), before + after + 'data: [DONE]\n\n');
    assert.deepEqual(tap.usage(), usage(5, 6));
    assert.equal(tap.completed, true);
  });

  it('cuts a dropped chunk at the same blank line after runs of blank lines and with CRLF or CR line ends', () => {
    for (const lineEnd of ['\n', '\r\n', '\r']) {
      const blank = (count: number): string => lineEnd.repeat(count);
      const first = `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}${blank(4)}: comment${blank(3)}`;
      const dropped = `data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}${blank(2)}`;
      const last = `data: [DONE]${blank(2)}`;
      const tap = createUsageTap('chat', { dropUsageChunk: true });
      const out = tap.feed(Buffer.from(first + dropped + last));
      // An event ends at its first blank line; an empty line right after that opens the next
      // event, so the comment's third line end goes with the dropped chunk.
      assert.equal(out?.toString(), first.slice(0, -lineEnd.length) + last, JSON.stringify(lineEnd));
      assert.deepEqual(tap.usage(), usage(1, 2), JSON.stringify(lineEnd));
    }
  });

  it('forwards nothing after an error chunk in the middle of a read', () => {
    const error = 'data: {"error":{"message":"boom","type":"server_error"}}\n\n';
    const tap = createUsageTap('chat');
    assert.equal(tap.feed(Buffer.from(before + error + after + 'data: [DONE]\n\n'))?.toString(), before + error);
    assert.equal(tap.upstreamError, 'boom');
    assert.equal(tap.stopped, true);
    assert.equal(tap.completed, false);
  });

  it('sees [DONE] even when it is not the last event of a read', () => {
    const tap = createUsageTap('chat');
    tap.feed(Buffer.from(before + 'data: [DONE]\n\n: trailing keep-alive\n\n'));
    assert.equal(tap.completed, true);
  });

  it('gives the same reports whether the events come in one read or one per read', () => {
    // An "error" that is neither an object nor a string is no candidate; it must not count just
    // because a candidate shares its read.
    const events = [content('a'), 'data: {"error":123,"choices":[]}\n\n', usageOnly, 'data: [DONE]\n\n'];
    const together = run('chat', [Buffer.from(events.join(''))]).tap;
    const apart = run('chat', events.map((event) => Buffer.from(event))).tap;
    for (const tap of [together, apart]) assertReports(tap, { usage: usage(5, 6), completed: true, upstreamError: undefined }, 'reports');
  });

  it('reads Anthropic events named anywhere in a read, after CR-only line ends too', () => {
    for (const lineEnd of ['\n', '\r\n', '\r']) {
      const event = (name: string, data: string): string => `event: ${name}${lineEnd}data: ${data}${lineEnd}${lineEnd}`;
      const delta = event('content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}');
      const read = Buffer.from(
        event('message_start', '{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}') +
          delta.repeat(5) +
          `: ping${lineEnd}${lineEnd}` +
          event('message_delta', '{"type":"message_delta","usage":{"output_tokens":7}}') +
          event('message_stop', '{"type":"message_stop"}'),
      );
      const tap = createUsageTap('messages');
      assert.equal(tap.feed(read), read, JSON.stringify(lineEnd));
      assert.deepEqual(tap.usage(), usage(3, 7), JSON.stringify(lineEnd));
      assert.equal(tap.completed, true, JSON.stringify(lineEnd));
    }
  });

  it('stops at an Anthropic error event in the middle of a read', () => {
    const start = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}\n\n';
    const error = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    const tap = createUsageTap('messages');
    const out = tap.feed(Buffer.from(start + error + 'event: message_stop\ndata: {"type":"message_stop"}\n\n'));
    assert.equal(out?.toString(), start + error);
    assert.equal(tap.upstreamError, 'Overloaded');
    assert.equal(tap.completed, false);
  });
});

describe('createUsageTap options', () => {
  const include = readFileSync(new URL('openai-stream-text-include-usage.sse', FIXTURES));
  const usageChunkStart = include.indexOf('data: {"id":"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[]');
  const withoutUsageChunk = Buffer.concat([include.subarray(0, usageChunkStart), include.subarray(include.indexOf('data: [DONE]'))]);

  it('drops the usage-only chunk the client did not ask for, at every split offset, and still reads it', () => {
    assert.ok(usageChunkStart > 0);
    for (const { offset, pieces } of everySplit(include)) {
      const { forwarded, tap } = run('chat', pieces, { dropUsageChunk: true });
      assert.ok(Buffer.concat(forwarded).equals(withoutUsageChunk), `split at byte ${offset}`);
      assert.deepEqual(tap.usage(), usage(14, 30));
      assert.equal(tap.completed, true);
    }
  });

  it('keeps usage that rides on a chunk with choices (DeepSeek) when dropping usage chunks', () => {
    const deepseek = readFileSync(new URL('deepseek-reasoning-content-stream.sse', FIXTURES));
    const { forwarded, tap } = run('chat', randomPieces(deepseek, 3, 200), { dropUsageChunk: true });
    assert.ok(Buffer.concat(forwarded).equals(deepseek));
    assert.deepEqual(tap.usage(), usage(18, 219));
  });

  it('ignores dropUsageChunk for the messages format', () => {
    const anth = readFileSync(new URL('anthropic-stream-text.sse', FIXTURES));
    const { forwarded } = run('messages', [anth], { dropUsageChunk: true });
    assert.ok(Buffer.concat(forwarded).equals(anth));
  });

  it('stops when a partial event outgrows maxEventBytes', () => {
    const tap = createUsageTap('chat', { maxEventBytes: 100 });
    assert.equal(tap.feed(Buffer.from('data: {"a":"')), undefined);
    assert.equal(tap.feed(Buffer.from('x'.repeat(200))), undefined);
    assert.equal(tap.stopped, true);
    assert.equal(tap.overflowed, true);
    assert.match(tap.upstreamError ?? '', /larger than 100 bytes/);
    assert.equal(tap.feed(Buffer.from('"}\n\n')), undefined);
    assert.equal(tap.end(), undefined);
  });
});

describe('createUsageTap naming the llmux model', () => {
  const MODEL = 'llmux-model';
  const names = readdirSync(FIXTURES).filter((name) => name.endsWith('.sse')).sort();

  for (const name of names) {
    const bytes = readFileSync(new URL(name, FIXTURES));
    const format = formatOf(name);
    const wanted = withLlmuxModel(format, expectedForwarded(name, bytes), MODEL);

    it(`names the llmux model in ${name} and changes no other byte, whatever the split`, () => {
      const pieceSets = bytes.length <= WHOLE_FILE_SPLIT_BYTES
        ? [...everySplit(bytes)].map(({ pieces }) => pieces)
        : [[bytes], randomPieces(bytes, 1, 64), randomPieces(bytes, 2, 700)];
      for (const pieces of pieceSets) {
        const { forwarded, tap } = run(format, pieces, { model: MODEL });
        assert.ok(Buffer.concat(forwarded).equals(wanted), 'forwarded bytes differ');
        assertReports(tap, EXPECTED[name] as Expected, 'reports');
      }
      // The reference above replaced the top-level value: every chunk, or the message, names the model.
      for (const block of wanted.toString().split(/\n\n/)) {
        const data = block.split('\n').find((line) => line.startsWith('data:'))?.slice(5).trim();
        if (data === undefined || data === '[DONE]') continue;
        const parsed = JSON.parse(data) as Record<string, unknown>;
        if (format === 'chat' && 'model' in parsed) assert.equal(parsed['model'], MODEL);
        if (format === 'messages' && parsed['type'] === 'message_start') assert.equal((parsed['message'] as Record<string, unknown>)['model'], MODEL);
      }
    });
  }

  it('forwards each chunk itself, uncopied, when the upstream already names the llmux model', () => {
    const bytes = readFileSync(new URL('openai-stream-text-include-usage.sse', FIXTURES));
    const tap = createUsageTap('chat', { model: 'gpt-4o-2024-08-06' });
    for (const start of eventStarts(bytes).slice(0, -1)) {
      const end = bytes.indexOf('\n\n', start) + 2;
      const chunk = bytes.subarray(start, end);
      assert.equal(tap.feed(chunk), chunk);
    }
  });

  it('never touches a model key below the top level (a tool input, a nested object)', () => {
    const nestedFirst = `data: {"id":"c","choices":[{"index":0,"delta":{"model":"nested","content":"\\"model\\": \\"text\\""}}],"model":"up"}\n\n`;
    const { forwarded } = run('chat', [Buffer.from(nestedFirst)], { model: 'mine' });
    assert.equal(Buffer.concat(forwarded).toString(), nestedFirst.replace('"model":"up"', '"model":"mine"'));

    const start = {
      type: 'message_start',
      message: { id: 'm', type: 'message', role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n', input: { model: 'tool-arg' } }], model: 'up', usage: { input_tokens: 1, output_tokens: 1 } },
    };
    const delta = { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"model": "x"}' } };
    const messages = `event: message_start\ndata: ${JSON.stringify(start)}\n\nevent: content_block_delta\ndata: ${JSON.stringify(delta)}\n\n`;
    const out = Buffer.concat(run('messages', [Buffer.from(messages)], { model: 'mine' }).forwarded).toString();
    assert.equal(out, messages.replace('"model":"up"', '"model":"mine"'));
  });

  it('leaves a JSON text split over several data lines as it is', () => {
    const split = 'data: {"id":"c",\ndata: "model":"up","choices":[]}\n\n';
    assert.equal(Buffer.concat(run('chat', [Buffer.from(split)], { model: 'mine' }).forwarded).toString(), split);
  });

  it('drops the usage-only chunk with its model, and renames the model in the chunks around it', () => {
    const include = readFileSync(new URL('openai-stream-text-include-usage.sse', FIXTURES));
    const usageStart = include.indexOf('"choices":[]');
    const eventStart = include.lastIndexOf('\n\n', usageStart) + 2;
    const eventEnd = include.indexOf('\n\n', usageStart) + 2;
    const wanted = withLlmuxModel('chat', Buffer.concat([include.subarray(0, eventStart), include.subarray(eventEnd)]), 'mine');
    for (const seed of [1, 2, 3]) {
      const { forwarded } = run('chat', randomPieces(include, seed, 300), { dropUsageChunk: true, model: 'mine' });
      assert.ok(Buffer.concat(forwarded).equals(wanted), `seed ${seed}`);
    }
  });
});

describe('createUsageTap on a Gemini stream', () => {
  const GEMINI = new URL('../fixtures/gemini/', import.meta.url);
  const names = readdirSync(GEMINI).filter((name) => name.endsWith('.sse')).sort();

  for (const name of names) {
    const bytes = readFileSync(new URL(name, GEMINI));
    it(`reads ${name}'s last usage and finish, and names the llmux model in every event and nowhere else, whatever the split`, () => {
      const last = JSON.parse(bytes.toString().trim().split(/\r?\n\r?\n/).at(-1)?.slice('data: '.length) ?? '{}') as { usageMetadata: Record<string, number>; modelVersion: string };
      const meta = last.usageMetadata;
      // Google's own tools' prompt (grounding's search results) is input too.
      const prompt = (meta['promptTokenCount'] ?? 0) + (meta['toolUsePromptTokenCount'] ?? 0);
      const expected = usage(prompt - (meta['cachedContentTokenCount'] ?? 0), (meta['candidatesTokenCount'] ?? 0) + (meta['thoughtsTokenCount'] ?? 0), meta['cachedContentTokenCount'] ?? 0);
      const wanted = Buffer.from(bytes.toString().replaceAll(`"modelVersion":"${last.modelVersion}"`, '"modelVersion":"llmux-gemini"'));
      for (const { pieces } of everySplit(bytes)) {
        const { forwarded, tap } = run('gemini', pieces, { model: 'llmux-gemini' });
        assert.ok(Buffer.concat(forwarded).equals(wanted), 'forwarded bytes differ');
        assert.deepEqual(tap.usage(), expected);
        assert.equal(tap.completed, true);
        assert.equal(tap.upstreamError, undefined);
      }
    });
  }

  it('is not complete without a finish reason, and stops at an error event with its message', () => {
    const first = 'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"modelVersion":"g"}\n\n';
    assert.equal(run('gemini', [Buffer.from(first)]).tap.completed, false);
    const failed = run('gemini', [Buffer.from(`${first}data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}\n\n${first}`)]);
    assert.equal(failed.tap.upstreamError, 'overloaded');
    assert.equal(Buffer.concat(failed.forwarded).toString(), `${first}data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}\n\n`);
  });

  it('never touches a modelVersion below the top level (a call\'s arguments)', () => {
    const event = 'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"modelVersion":"keep"}}}]},"finishReason":"STOP","index":0}],"modelVersion": "up"}\n\n';
    assert.equal(Buffer.concat(run('gemini', [Buffer.from(event)], { model: 'mine' }).forwarded).toString(), event.replace('"modelVersion": "up"', '"modelVersion": "mine"'));
  });
});
