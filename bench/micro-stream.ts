/**
 * Micro-benchmark of the stream hot path, without sockets: the bench's 100-event upstream streams
 * (bench/fake-upstream.ts) fed through the usage tap (same-format pass-through) and through the SSE
 * parser plus each stream translator (to messages, to chat, and to Responses from either), N
 * streams per round. Prints, per scenario, nanoseconds per
 * upstream event (median and best round) and bytes allocated per event (JS heap; and Buffer
 * backing stores, "external").
 *
 *   node --import tsx bench/micro-stream.ts [--iterations 2000] [--rounds 7] [--only tap-chat,...]
 *   node --import tsx bench/micro-stream.ts --src dist     the compiled JS (after `npm run build`),
 *                                            as the load bench runs it: under tsx every closure
 *                                            also pays for a `__name` call that dist/ does not have
 *   node --import tsx bench/micro-stream.ts --src DIR      any other copy of src/ or dist/
 *   node --import tsx bench/micro-stream.ts --baseline OLD [--src NEW]    before/after: both copies,
 *                                            rounds interleaved, and the after/before ratios
 *
 * Each scenario runs twice: one upstream event per chunk (how the fake upstream writes, one event
 * per event-loop turn), and 20 events per chunk (what a proxy reads when it falls behind under load).
 * Every scenario checks its output size against the first stream's, so a faster path that changes
 * what is written shows up as an error, not as a better number.
 *
 * Allocation is counted over one more round of N streams: the heap's growth plus everything each
 * collection in between freed (v8.GCProfiler), divided by the streams; `gc()` (exposed at run time
 * with `v8.setFlagsFromString`) starts every round from a clean heap. Times are this process's CPU
 * time (user + system, which includes V8's GC helper threads) over plain loops; the machine is
 * shared and caches are too, so compare runs made back to back and trust the best-round column most.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { GCProfiler, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { WireFormat } from '../src/formats/wire.ts';
import type { SseEvent } from '../src/sse/parser.ts';
import type { SseParser, SseParserOptions } from '../src/sse/parser.ts';
import type { UsageTap, UsageTapOptions } from '../src/passthrough/usage-tap.ts';
import type { ChatToMessagesStreamOptions, MessagesToChatStreamOptions, ResponsesStreamOptions, StreamTranslator } from '../src/translate/index.ts';
import type { ResponseEcho } from '../src/formats/responses.ts';
import type { ToolNames } from '../src/translate/responses-tools.ts';
import { chatStreamEvents, messagesStreamEvents, STREAM_EVENTS } from './fake-upstream.ts';

interface HotPath {
  createSseParser(options: SseParserOptions): SseParser;
  createUsageTap(format: WireFormat, options?: UsageTapOptions): UsageTap;
  createChatToMessagesStream(options: ChatToMessagesStreamOptions): StreamTranslator;
  createMessagesToChatStream(options: MessagesToChatStreamOptions): StreamTranslator;
  createChatToResponsesStream(options: ResponsesStreamOptions): StreamTranslator;
  createMessagesToResponsesStream(options: ResponsesStreamOptions): StreamTranslator;
  responseEcho(request: { model: string }): ResponseEcho;
  noToolNames: ToolNames;
}

interface Scenario {
  name: string;
  /** Runs one whole stream; returns the bytes it produced for the client. */
  runStream(): number;
}

interface ScenarioResult {
  name: string;
  nsPerEventMedian: number;
  nsPerEventBest: number;
  heapBytesPerEvent: number;
  externalBytesPerEvent: number;
}

const COALESCED_EVENTS_PER_CHUNK = 20;

/**
 * The llmux model ids the scenarios name (a chat provider's model, a messages provider's): unlike
 * the upstream's, as with bench/llmux-server.ts's models, so every chat chunk and the message_start
 * are rewritten, but of the same length as `gpt-4o-2024-08-06` and `claude-sonnet-4-5-20250929`,
 * so the output size matches code from before llmux named its own model and `--baseline` can
 * compare the two.
 */
const LLMUX_CHAT_MODEL = 'bench-chat-000000';
const LLMUX_MESSAGES_MODEL = 'bench-messages-00000000000';

/** The factories from `dir`: TypeScript sources, or compiled `.js` when `dir` holds those (`dist/`). */
async function loadHotPath(dir: string): Promise<HotPath> {
  const base = pathToFileURL(resolve(dir) + '/').href;
  const extension = existsSync(new URL('sse/parser.js', base)) ? 'js' : 'ts';
  const load = async (path: string): Promise<unknown> => import(new URL(`${path}.${extension}`, base).href);
  const parser = (await load('sse/parser')) as Pick<HotPath, 'createSseParser'>;
  // The usage tap moved from translate/ to passthrough/ (issue 20); a --baseline build may predate it.
  const tap = (await load(existsSync(new URL(`passthrough/usage-tap.${extension}`, base)) ? 'passthrough/usage-tap' : 'translate/usage-tap')) as Pick<HotPath, 'createUsageTap'>;
  // The stream translators became pairs of a decoder and an encoder composed in translate/index
  // (issue 20); a --baseline build may have them in a file per direction.
  const perDirection = existsSync(new URL(`translate/stream-chat-to-messages.${extension}`, base));
  const translators = (perDirection
    ? Object.assign(
        {},
        await load('translate/stream-chat-to-messages'),
        await load('translate/stream-messages-to-chat'),
        await load('translate/stream-chat-to-responses'),
        await load('translate/stream-messages-to-responses'),
      )
    : await load('translate/index')) as Pick<HotPath, 'createChatToMessagesStream' | 'createMessagesToChatStream' | 'createChatToResponsesStream' | 'createMessagesToResponsesStream'>;
  const output = (await load('translate/responses-output')) as Pick<HotPath, 'responseEcho'>;
  const tools = (await load('translate/responses-tools')) as { NO_TOOL_NAMES: ToolNames };
  return {
    createSseParser: parser.createSseParser,
    createUsageTap: tap.createUsageTap,
    createChatToMessagesStream: translators.createChatToMessagesStream,
    createMessagesToChatStream: translators.createMessagesToChatStream,
    createChatToResponsesStream: translators.createChatToResponsesStream,
    createMessagesToResponsesStream: translators.createMessagesToResponsesStream,
    responseEcho: output.responseEcho,
    noToolNames: tools.NO_TOOL_NAMES,
  };
}

/** The stream's events, one Buffer each, or concatenated `perChunk` at a time. */
function chunksOf(events: string[], perChunk: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < events.length; i += perChunk) chunks.push(Buffer.from(events.slice(i, i + perChunk).join('')));
  return chunks;
}

function scenarios(hot: HotPath): Scenario[] {
  // The bench's clients ask for include_usage, and llmux asks chat upstreams for usage anyway.
  const chatEvents = chatStreamEvents(true);
  const messagesEvents = messagesStreamEvents();
  const list: Scenario[] = [];
  for (const perChunk of [1, COALESCED_EVENTS_PER_CHUNK]) {
    const label = perChunk === 1 ? '1 event/chunk' : `${perChunk} events/chunk`;
    const tapScenario = (name: string, format: WireFormat, events: string[], options: UsageTapOptions): void => {
      const chunks = chunksOf(events, perChunk);
      list.push({
        name: `${name}, ${label}`,
        runStream() {
          const tap = hot.createUsageTap(format, options);
          let bytes = 0;
          for (const chunk of chunks) bytes += tap.feed(chunk)?.length ?? 0;
          bytes += tap.end()?.length ?? 0;
          if (!tap.completed || tap.usage() === undefined) throw new Error(`${name}: the tap missed the stream's end or usage`);
          return bytes;
        },
      });
    };
    tapScenario('tap-chat: chat pass-through', 'chat', chatEvents, { model: LLMUX_CHAT_MODEL });
    tapScenario('tap-chat-drop: chat pass-through, usage chunk dropped', 'chat', chatEvents, { dropUsageChunk: true, model: LLMUX_CHAT_MODEL });
    tapScenario('tap-messages: messages pass-through', 'messages', messagesEvents, { model: LLMUX_MESSAGES_MODEL });

    const translateScenario = (name: string, events: string[], create: (write: (text: string) => void) => StreamTranslator): void => {
      const chunks = chunksOf(events, perChunk);
      list.push({
        name: `${name}, ${label}`,
        runStream() {
          let bytes = 0;
          // Counting UTF-8 bytes flattens each string, as encoding it for the socket would.
          const translator = create((text) => {
            bytes += Buffer.byteLength(text);
          });
          const parser = hot.createSseParser({ onEvent: (event: SseEvent) => translator.push(event) });
          for (const chunk of chunks) parser.feed(chunk);
          parser.end();
          translator.end();
          if (translator.failed) throw new Error(`${name}: the translator failed`);
          return bytes;
        },
      });
    };
    translateScenario('to-messages: parser + chat -> messages', chatEvents, (write) =>
      hot.createChatToMessagesStream({ write, estimatedInputTokens: 14, messageId: 'msg_micro', model: LLMUX_CHAT_MODEL }));
    translateScenario('to-chat: parser + messages -> chat', messagesEvents, (write) =>
      hot.createMessagesToChatStream({ write, includeUsage: true, completionId: 'chatcmpl-micro', now: () => 1_727_346_168_000, model: LLMUX_MESSAGES_MODEL }));
    const responsesOptions = (model: string, write: (text: string) => void): ResponsesStreamOptions => ({
      write,
      model,
      echo: hot.responseEcho({ model }),
      toolNames: hot.noToolNames,
      responseId: 'resp_micro',
      now: () => 1_727_346_168_000,
      estimatedInputTokens: 14,
    });
    translateScenario('to-responses-from-chat: parser + chat -> responses', chatEvents, (write) => hot.createChatToResponsesStream(responsesOptions(LLMUX_CHAT_MODEL, write)));
    translateScenario('to-responses-from-messages: parser + messages -> responses', messagesEvents, (write) => hot.createMessagesToResponsesStream(responsesOptions(LLMUX_MESSAGES_MODEL, write)));
  }
  return list;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function exposeGc(): () => void {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * Heap and Buffer bytes one stream allocates, averaged over `streams` streams: the heap's growth
 * plus what every collection in between freed (v8.GCProfiler reports each one's before and after).
 */
function measureAllocation(scenario: Scenario, gc: () => void, streams: number): { heap: number; external: number } {
  gc();
  const profiler = new GCProfiler();
  profiler.start();
  const before = getHeapStatistics();
  for (let i = 0; i < streams; i += 1) scenario.runStream();
  const after = getHeapStatistics();
  const collections = profiler.stop()?.statistics ?? [];
  let heap = after.used_heap_size - before.used_heap_size;
  let external = after.external_memory - before.external_memory;
  for (const { beforeGC, afterGC } of collections) {
    heap += beforeGC.heapStatistics.usedHeapSize - afterGC.heapStatistics.usedHeapSize;
    external += beforeGC.heapStatistics.externalMemory - afterGC.heapStatistics.externalMemory;
  }
  return { heap: heap / streams, external: Math.max(0, external) / streams };
}

/** Runs `scenario` until the optimising compiler has seen it; returns one stream's output size. */
function warmUp(scenario: Scenario, iterations: number): number {
  const expected = scenario.runStream();
  for (let i = 0; i < iterations; i += 1) {
    if (scenario.runStream() !== expected) throw new Error(`${scenario.name}: output size changed between streams`);
  }
  return expected;
}

/** One round of `iterations` streams: CPU nanoseconds per upstream event. */
function timeRound(scenario: Scenario, expected: number, iterations: number, gc: () => void): number {
  gc();
  let total = 0;
  // CPU time, not wall time: on a shared machine time spent descheduled is not ours.
  const start = process.cpuUsage();
  for (let i = 0; i < iterations; i += 1) total += scenario.runStream();
  const used = process.cpuUsage(start);
  if (total !== expected * iterations) throw new Error(`${scenario.name}: output size changed between streams`);
  return ((used.user + used.system) * 1000) / (iterations * STREAM_EVENTS);
}

/**
 * Measures each of `variants` (the same scenario from different copies of the code) with their
 * rounds interleaved, so a change in the machine's load falls on every variant alike.
 */
function runScenario(variants: Scenario[], iterations: number, rounds: number, gc: () => void): ScenarioResult[] {
  const expected = variants.map((scenario) => warmUp(scenario, iterations));
  const perRound: number[][] = variants.map(() => []);
  for (let r = 0; r < rounds; r += 1) {
    variants.forEach((scenario, v) => perRound[v]?.push(timeRound(scenario, expected[v] as number, iterations, gc)));
  }
  if (new Set(expected).size > 1) throw new Error(`${variants[0]?.name}: the variants write different amounts (${expected.join(' / ')})`);
  return variants.map((scenario, v) => {
    const allocation = measureAllocation(scenario, gc, iterations);
    const times = perRound[v] as number[];
    return {
      name: scenario.name,
      nsPerEventMedian: median(times),
      nsPerEventBest: Math.min(...times),
      heapBytesPerEvent: allocation.heap / STREAM_EVENTS,
      externalBytesPerEvent: allocation.external / STREAM_EVENTS,
    };
  });
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      iterations: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '7' },
      only: { type: 'string' },
      src: { type: 'string', default: new URL('../src/', import.meta.url).pathname },
      baseline: { type: 'string' },
    },
  });
  const iterations = Number(values.iterations);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(iterations) || iterations < 1 || !Number.isInteger(rounds) || rounds < 1) {
    throw new Error('--iterations and --rounds take positive integers');
  }
  const only = values.only?.split(',').map((name) => name.trim()).filter((name) => name.length > 0);
  const gc = exposeGc();
  const dirs = values.baseline === undefined ? [values.src] : [values.baseline, values.src];
  const labels = values.baseline === undefined ? [''] : ['before', 'after'];
  const lists = await Promise.all(dirs.map(async (dir) => scenarios(await loadHotPath(dir))));
  const wanted = (scenario: Scenario): boolean => only === undefined || only.some((name) => scenario.name.startsWith(`${name}:`));

  process.stdout.write(`micro-stream: node ${process.version}; ${iterations} streams x ${rounds} rounds per scenario; ${STREAM_EVENTS} events per stream\n`);
  dirs.forEach((dir, v) => process.stdout.write(`  ${labels[v] === '' ? 'code' : labels[v]}: ${dir}\n`));
  const names = (lists[0] ?? []).filter(wanted).map((scenario) => scenario.name);
  const nameWidth = Math.max(8, ...names.map((name) => name.length)) + (values.baseline === undefined ? 0 : 9);
  const header = `${pad('scenario', nameWidth)} ${pad('ns/event (median)', 18, true)} ${pad('ns/event (best)', 16, true)} ${pad('heap B/event', 13, true)} ${pad('external B/event', 17, true)}`;
  process.stdout.write(`${header}\n${'-'.repeat(header.length)}\n`);
  for (const name of names) {
    const variants = lists.map((list) => list.find((scenario) => scenario.name === name) as Scenario);
    const results = runScenario(variants, iterations, rounds, gc);
    results.forEach((result, v) => {
      const label = labels[v] === '' ? result.name : `${result.name} [${labels[v]}]`;
      process.stdout.write(
        `${pad(label, nameWidth)} ${pad(result.nsPerEventMedian.toFixed(0), 18, true)} ${pad(result.nsPerEventBest.toFixed(0), 16, true)} ` +
          `${pad(result.heapBytesPerEvent.toFixed(0), 13, true)} ${pad(result.externalBytesPerEvent.toFixed(0), 17, true)}\n`,
      );
    });
    if (results.length === 2) {
      const [before, after] = results as [ScenarioResult, ScenarioResult];
      process.stdout.write(
        `${pad('  after / before', nameWidth)} ${pad(`${(after.nsPerEventMedian / before.nsPerEventMedian).toFixed(2)}x`, 18, true)} ` +
          `${pad(`${(after.nsPerEventBest / before.nsPerEventBest).toFixed(2)}x`, 16, true)} ${pad(`${(after.heapBytesPerEvent / before.heapBytesPerEvent).toFixed(2)}x`, 13, true)}\n`,
      );
    }
  }
}

await main();
