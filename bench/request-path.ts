/**
 * The request path in-process (issue 26), for counting what a body costs on a machine too busy for
 * wall-clock figures: the body arrives in socket-sized chunks, is joined, read (validated, its
 * model, estimate, output cap and the facts routing reads), and its upstream body is built (the
 * client's bytes with the model spliced in, or translated), written into one buffer as a socket
 * write would take it. No sockets, no limiter, no log line: those are the same for every body
 * (bench/instructions.ts counts a whole request through a running gateway).
 *
 *   node --import tsx bench/request-path.ts                   µs per request (process.cpuUsage), each
 *                                                             scenario in interleaved rounds, in a child
 *                                                             running this file bundled (below): tsx
 *                                                             compiles with esbuild's keepNames, which
 *                                                             wraps every closure made in a call naming
 *                                                             it, a cost the built server does not have
 *   node --import tsx bench/request-path.ts --callgrind        instructions per request: this file,
 *                                                             bundled (esbuild), run under valgrind's
 *                                                             callgrind twice per scenario, both warmed
 *                                                             up alike, one with N more requests; the
 *                                                             difference divided by N (so start-up,
 *                                                             compilation and warm-up cancel)
 *   --only agent-messages,chat-json   some scenarios only;  --n N   requests counted per scenario
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load.ts';
import type { ModelEntry, ProviderConfig } from '../src/config/types.ts';
import { createCatalog } from '../src/catalog/catalog.ts';
import { dialects } from '../src/dialects/index.ts';
import type { WireFormat } from '../src/formats/wire.ts';
import { createCarriers } from '../src/platforms/index.ts';
import { readClientRequest } from '../src/dialects/read.ts';
import { readJsonObject } from '../src/http/body.ts';
import { buildUpstreamBody, formatHeadersFor, upstreamFormatFor } from '../src/providers/upstream-body.ts';
import { agentMessagesBody, agentTurns } from './agent-body.ts';
import { createJsonRecall } from '../src/common/json-recall.ts';
import { benchConfig } from './llmux-server.ts';
import { chatBody, messagesBody } from './measure.ts';
import { isEntryPoint } from './entry.ts';

/** One body through the request path, as a scenario of bench/measure.ts sends it. */
export interface PathScenario {
  id: string;
  format: WireFormat;
  /** The llmux model asked for (bench/llmux-server.ts's config). */
  model: string;
  body: string;
  /** Further bodies sent in turn with `body` (an agent's turns, each its last with a little more). */
  turns?: readonly string[];
  headers: Record<string, string>;
  /** Read every body whole, as before the gateway remembered each key's last turn (src/common/json-recall.ts). */
  whole?: boolean;
}

export function pathScenarios(): PathScenario[] {
  const messagesHeaders = { 'anthropic-version': '2023-06-01' };
  return [
    { id: 'agent-messages', format: 'messages', model: 'bench-messages', body: agentMessagesBody('bench-messages', false), headers: messagesHeaders },
    { id: 'agent-translated', format: 'messages', model: 'bench-chat', body: agentMessagesBody('bench-chat', false), headers: messagesHeaders },
    // The same turns read with nothing remembered, and a session's next turns (each its last with an exchange more).
    { id: 'agent-messages-whole', format: 'messages', model: 'bench-messages', body: agentMessagesBody('bench-messages', false), headers: messagesHeaders, whole: true },
    { id: 'agent-translated-whole', format: 'messages', model: 'bench-chat', body: agentMessagesBody('bench-chat', false), headers: messagesHeaders, whole: true },
    { id: 'agent-next-turns', format: 'messages', model: 'bench-messages', body: agentMessagesBody('bench-messages', false), turns: agentTurns('bench-messages'), headers: messagesHeaders },
    { id: 'agent-next-turns-translated', format: 'messages', model: 'bench-chat', body: agentMessagesBody('bench-chat', false), turns: agentTurns('bench-chat'), headers: messagesHeaders },
    { id: 'chat-json', format: 'chat', model: 'bench-chat', body: chatBody('bench-chat', false), headers: {} },
    { id: 'messages-json', format: 'messages', model: 'bench-messages', body: messagesBody('bench-messages', false), headers: messagesHeaders },
  ];
}

/** What a socket read hands the body reader: at most 64 KB at a time. */
const READ_BYTES = 64 * 1024;

/** The request path for one scenario, ready to run again and again. */
export function createPath(scenario: PathScenario): () => number {
  const home = mkdtempSync(join(tmpdir(), 'llmux-path-'));
  const config = loadConfig({ file: benchConfig(1), env: {}, home });
  rmSync(home, { recursive: true, force: true });
  const catalog = createCatalog({ providers: config.providers, models: config.models, builtinCatalog: false, env: {}, platformUsable: () => true });
  const carriers = createCarriers({ secret: () => undefined, env: {}, now: Date.now });
  const dialect = dialects[scenario.format];
  const bodies = [scenario.body, ...(scenario.turns ?? [])].map((text) => {
    const whole = Buffer.from(text);
    const chunks: Buffer[] = [];
    for (let at = 0; at < whole.length; at += READ_BYTES) chunks.push(Buffer.from(whole.subarray(at, at + READ_BYTES)));
    return { chunks, length: whole.length };
  });
  let turn = 0;
  const forwarded = dialect.readHeaders(scenario.headers);
  const onWarning = (): void => {};
  const recall = scenario.whole === true ? undefined : { memory: createJsonRecall(), scope: 'bench-key' };
  return () => {
    const { chunks, length } = bodies[turn++ % bodies.length] as { chunks: Buffer[]; length: number };
    const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, length);
    const { request, facts } = readClientRequest(dialect, (lazy) => readJsonObject(bytes, lazy, recall), { forwarded, strict: false, params: {}, query: '' });
    const model = catalog.get(request.model) as ModelEntry;
    const provider = catalog.provider(model.provider) as ProviderConfig;
    const estimate = facts.inputTokens();
    const output = Math.min(facts.maxTokens ?? model.max_output_tokens, model.max_output_tokens);
    const carrier = carriers.of(provider);
    const format = upstreamFormatFor(provider, request.format);
    const call = { upstreamId: model.upstream_id, format, stream: request.stream, formatHeaders: formatHeadersFor(format, forwarded) };
    const { body } = buildUpstreamBody(request, format, model, undefined as never, onWarning, carrier.envelope(call), provider);
    // What a socket write is handed: the parts, joined as the kernel copies them.
    const sent = typeof body === 'string' ? Buffer.byteLength(body) : Buffer.concat(body).length;
    return estimate + output + sent;
  };
}

/** Requests run before counting starts: enough for V8 to have optimised the path. */
function warmUpCount(scenario: PathScenario): number {
  return scenario.body.length > 64 * 1024 ? 60 : 2_000;
}

/** `--counted`: warm up, then `n` more requests (the process callgrind counts). */
export function runCounted(ids: readonly string[], n: number): void {
  for (const scenario of pathScenarios().filter((s) => ids.includes(s.id))) {
    const run = createPath(scenario);
    let sink = 0;
    for (let i = warmUpCount(scenario) + n; i > 0; i--) sink += run();
    process.stdout.write(`${scenario.id} ${sink}\n`);
  }
}

/** This file as one plain JS file, so valgrind runs no TypeScript compiler and closures carry no keepNames wrapper. */
async function bundle(): Promise<string> {
  const { build } = await import('esbuild');
  const here = dirname(fileURLToPath(import.meta.url));
  const outfile = join(here, '.tmp', 'request-path.mjs');
  await build({
    // The bundle's own entry: in one file every module's import.meta.url is the same, so none
    // may think it is the entry point (bench/entry.ts); this calls the counted run directly.
    stdin: {
      contents: "import { runCounted, runCpu } from './request-path.ts'; const [ids, n, mode] = process.argv.slice(2); (mode === 'cpu' ? runCpu : runCounted)(ids.split(','), Number(n));",
      resolveDir: here,
      loader: 'ts',
    },
    define: { 'import.meta.url': '"bundled:request-path"' },
    outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'error',
  });
  return outfile;
}

/** Instructions of the bundled driver's `--counted` run of one scenario under callgrind. */
function callgrindInstructions(script: string, id: string, n: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'llmux-callgrind-'));
  try {
    const out = join(dir, 'callgrind.out');
    const run = spawnSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, script, id, String(n)], {
      encoding: 'utf8',
      timeout: 1_200_000,
    });
    if (run.status !== 0) throw new Error(`callgrind failed for ${id}: ${run.stderr.slice(-1000)}`);
    const summary = /^summary:\s+(\d+)/m.exec(readFileSync(out, 'utf8'));
    if (summary === null) throw new Error('no summary in the callgrind output');
    return Number(summary[1]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runCallgrind(ids: readonly string[], n: number | undefined): Promise<void> {
  const script = await bundle();
  process.stdout.write('scenario            instructions per request\n');
  for (const scenario of pathScenarios().filter((s) => ids.includes(s.id))) {
    const count = n ?? (scenario.body.length > 64 * 1024 ? 100 : 5_000);
    const perRequest = (callgrindInstructions(script, scenario.id, count) - callgrindInstructions(script, scenario.id, 0)) / count;
    process.stdout.write(`${scenario.id.padEnd(20)}${Math.round(perRequest).toLocaleString('en-US')}\n`);
  }
}

export function runCpu(ids: readonly string[], n: number): void {
  const paths = pathScenarios().filter((s) => ids.includes(s.id)).map((s) => ({ id: s.id, run: createPath(s), samples: [] as number[] }));
  for (const path of paths) for (let i = 0; i < 50; i++) path.run();
  for (let round = 0; round < 7; round++) {
    for (const path of paths) {
      const before = process.cpuUsage();
      for (let i = 0; i < n; i++) path.run();
      const used = process.cpuUsage(before);
      path.samples.push((used.user + used.system) / n);
    }
  }
  process.stdout.write('scenario            µs per request (median of 7 interleaved rounds)\n');
  for (const path of paths) {
    const sorted = [...path.samples].sort((a, b) => a - b);
    process.stdout.write(`${path.id.padEnd(28)}${(sorted[3] as number).toFixed(1)}\n`);
  }
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({ options: { only: { type: 'string' }, n: { type: 'string' }, callgrind: { type: 'boolean' }, counted: { type: 'boolean' } } });
  const ids = values.only === undefined ? pathScenarios().map((s) => s.id) : values.only.split(',').map((s) => s.trim());
  if (values.counted === true) runCounted(ids, Number(values.n ?? 100));
  else if (values.callgrind === true) await runCallgrind(ids, values.n === undefined ? undefined : Number(values.n));
  else {
    const run = spawnSync(process.execPath, [await bundle(), ids.join(','), String(values.n ?? 200), 'cpu'], { encoding: 'utf8', stdio: ['ignore', 'inherit', 'inherit'] });
    if (run.status !== 0) process.exitCode = 1;
  }
}
