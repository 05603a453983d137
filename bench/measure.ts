/**
 * The benchmark's pure parts: the scenarios, reading `/proc`, the wrk script and its summary, the
 * targets of issues 7 and 15 and the RESULTS.md text. bench/run.ts does the processes and the waiting.
 */
import { agentMessagesBody, agentTurns } from './agent-body.ts';

/** `peer`: another gateway run beside them (bench/peers.ts, `--peers`). */
export type ProxyKind = 'bare' | 'llmux' | 'peer';
export type ScenarioKind = 'json' | 'stream' | 'translated' | 'agent' | 'agent-translated';

/** One load scenario: the same request through each proxy that runs it. */
export interface LoadScenario {
  id: string;
  label: string;
  kind: ScenarioKind;
  /** Request path on the proxy (the bare proxy passes it upstream unchanged). */
  path: string;
  headers: Record<string, string>;
  /** The request body sent to llmux. */
  body: string;
  /** Bodies sent after `body`, in turn, then `body` again (a session's next turns): to both proxies. */
  turns?: readonly string[];
  /**
   * The scenario whose request the bare proxy is given alongside this one: itself for
   * pass-through; for a translated stream, the pass-through of the same upstream stream.
   */
  baseline: string;
}

/**
 * The bench's warm-up of each proxy (bench/run.ts, which says why; `--quick` makes one pass):
 * passes of `seconds`, the proxies in turn, each pass ended as wrk closes its connections, as a
 * round is. bench/pair.ts `--alternate` warms the same way.
 */
export const WARM_UP = { passes: 3, seconds: 1 } as const;

/** Issue 7's and issue 15's targets, as ratios to the bare proxy (or absolute where said). */
export const TARGETS = {
  /** CPU per request, llmux / bare; `agent`: the 200 KB agent turn (issue 15). */
  cpu: { json: 1.3, stream: 1.2, translated: 1.8, agent: 2.0, 'agent-translated': 3.0 } as Record<ScenarioKind, number>,
  peakRss: 1.3,
  p99: 1.5,
  /** Bytes of RSS per idle open stream. */
  idleStreamBytes: 50 * 1024,
  /** RSS per open stream with a 200 KB request, llmux / bare (issue 15). */
  largeIdleStream: 1.3,
  startup: 1.5,
} as const;

const CONVERSATION = [
  { role: 'user', content: 'What is the weather like in San Francisco today?' },
  { role: 'assistant', content: "I can't check live weather, but San Francisco is usually mild, often foggy in the morning." },
  { role: 'user', content: 'Then give me a one-paragraph packing list for a weekend there in late autumn.' },
];
const SYSTEM = 'You are a concise travel assistant. Answer in plain prose without lists unless asked.';

/** An OpenAI chat request body for `model`. */
export function chatBody(model: string, stream: boolean): string {
  const body: Record<string, unknown> = {
    model,
    messages: [{ role: 'system', content: SYSTEM }, ...CONVERSATION],
    max_tokens: 512,
    temperature: 0.7,
  };
  if (stream) {
    body['stream'] = true;
    // The same upstream bytes for both proxies: llmux asks chat upstreams for usage anyway.
    body['stream_options'] = { include_usage: true };
  }
  return JSON.stringify(body);
}

/** An Anthropic messages request body for `model`. */
export function messagesBody(model: string, stream: boolean): string {
  const body: Record<string, unknown> = { model, max_tokens: 512, system: SYSTEM, messages: CONVERSATION, temperature: 0.7 };
  if (stream) body['stream'] = true;
  return JSON.stringify(body);
}

/**
 * A Gemini generateContent request body (its model is in the path): the same conversation, the
 * assistant turn as Gemini's `model` role, the system prompt as `systemInstruction`.
 */
export function geminiBody(): string {
  return JSON.stringify({
    systemInstruction: { parts: [{ text: SYSTEM }] },
    contents: CONVERSATION.map((turn) => ({ role: turn.role === 'assistant' ? 'model' : 'user', parts: [{ text: turn.content }] })),
    generationConfig: { maxOutputTokens: 512, temperature: 0.7 },
  });
}

/** Headers `@google/genai` sends (the key is filled in by {@link withKey}). */
export function geminiHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', 'x-goog-api-key': '${KEY}' };
}

/** Headers an OpenAI SDK sends (the key is filled in by {@link withKey}). */
export function chatHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', authorization: 'Bearer ${KEY}' };
}

/** Headers an Anthropic SDK sends (the key is filled in by {@link withKey}). */
export function messagesHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', 'x-api-key': '${KEY}', 'anthropic-version': '2023-06-01' };
}

/** The headers with the `${KEY}` placeholder replaced by a real key. */
export function withKey(headers: Record<string, string>, key: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = value.replace('${KEY}', key);
  return out;
}

/** The six load scenarios of issue 7, the Gemini client's translated stream (issue 21) and the two 200 KB agent turns of issue 15, in report order. */
export function loadScenarios(): LoadScenario[] {
  return [
    { id: 'chat-json', label: 'chat JSON pass-through', kind: 'json', path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody('bench-chat', false), baseline: 'chat-json' },
    { id: 'messages-json', label: 'messages JSON pass-through', kind: 'json', path: '/v1/messages', headers: messagesHeaders(), body: messagesBody('bench-messages', false), baseline: 'messages-json' },
    { id: 'chat-stream', label: 'chat stream pass-through (100 chunks)', kind: 'stream', path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody('bench-chat', true), baseline: 'chat-stream' },
    { id: 'messages-stream', label: 'messages stream pass-through (100 chunks)', kind: 'stream', path: '/v1/messages', headers: messagesHeaders(), body: messagesBody('bench-messages', true), baseline: 'messages-stream' },
    { id: 'messages-from-chat', label: 'messages client ← chat upstream (translated stream)', kind: 'translated', path: '/v1/messages', headers: messagesHeaders(), body: messagesBody('bench-chat', true), baseline: 'chat-stream' },
    { id: 'chat-from-messages', label: 'chat client ← messages upstream (translated stream)', kind: 'translated', path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody('bench-messages', true), baseline: 'messages-stream' },
    { id: 'gemini-from-chat', label: 'Gemini client ← chat upstream (translated stream)', kind: 'translated', path: '/v1beta/models/bench-chat:streamGenerateContent?alt=sse', headers: geminiHeaders(), body: geminiBody(), baseline: 'chat-stream' },
    // Both agent turns are compared with the bare proxy piping the same 200 KB request: the cost
    // measured is the request's (read, check, forward), the answer being a 1 KB JSON.
    { id: 'agent-messages', label: '200 KB agent turn, same format (messages → messages upstream)', kind: 'agent', path: '/v1/messages', headers: messagesHeaders(), body: agentMessagesBody('bench-messages', false), baseline: 'agent-messages' },
    { id: 'agent-translated', label: '200 KB agent turn, translated (messages → chat upstream)', kind: 'agent-translated', path: '/v1/messages', headers: messagesHeaders(), body: agentMessagesBody('bench-chat', false), baseline: 'agent-messages' },
    // The same key sending a session's turns, each its last with one exchange more (llmux reads a
    // turn from the key's last: src/common/json-recall.ts), the ninth going back to the first.
    { id: 'agent-turns', label: '200 KB agent turns of one session, same format (each its last and one exchange)', kind: 'agent', path: '/v1/messages', headers: messagesHeaders(), body: agentMessagesBody('bench-messages', false), turns: agentTurns('bench-messages'), baseline: 'agent-turns' },
    { id: 'agent-turns-translated', label: '200 KB agent turns of one session, translated (messages → chat upstream)', kind: 'agent-translated', path: '/v1/messages', headers: messagesHeaders(), body: agentMessagesBody('bench-chat', false), turns: agentTurns('bench-chat'), baseline: 'agent-turns' },
  ];
}

/** CPU time of a process so far, from `/proc/PID/stat`, in clock ticks. */
export interface CpuTicks {
  utime: number;
  stime: number;
}

/**
 * Reads utime and stime out of a `/proc/PID/stat` line. The command name (field 2) is in
 * parentheses and may hold spaces and parentheses itself, so fields are counted from the last `)`.
 */
export function parseProcStat(text: string): CpuTicks {
  const close = text.lastIndexOf(')');
  if (close === -1) throw new Error('not a /proc/PID/stat line');
  const fields = text.slice(close + 2).trim().split(' ');
  // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('no utime/stime in /proc/PID/stat line');
  return { utime, stime };
}

/** Memory figures from `/proc/PID/status`, in KiB. */
export interface MemoryKb {
  /** Peak resident set ("high water mark"). */
  vmHwm: number;
  vmRss: number;
}

export function parseProcStatus(text: string): MemoryKb {
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
    if (match === null) throw new Error(`no ${name} in /proc/PID/status`);
    return Number(match[1]);
  };
  return { vmHwm: field('VmHWM'), vmRss: field('VmRSS') };
}

/** Marks wrk's machine-readable summary line among its human-readable output. */
export const WRK_MARK = 'BENCH_JSON ';

/**
 * The wrk Lua script for a POST with these headers and body. Its `done` prints one JSON line
 * (prefixed {@link WRK_MARK}) with the counts and latency percentiles, in microseconds.
 */
export function wrkScript(request: { headers: Record<string, string>; body: string; turns?: readonly string[] | undefined }): string {
  // Long brackets need no escaping; pick a level that the text itself doesn't close.
  const quote = (text: string): string => {
    let level = 0;
    while (text.includes(`]${'='.repeat(level)}]`)) level++;
    const eq = '='.repeat(level);
    return `[${eq}[${text}]${eq}]`;
  };
  const lines = ['wrk.method = "POST"', `wrk.body = ${quote(request.body)}`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`wrk.headers[ ${quote(name)} ] = ${quote(value)}`);
  // wrk writes a request's headers in the order of Lua's `pairs`, which its hashing seeds afresh in
  // each run: every wrk run (each round and warm-up) sent them in another order. The proxy then saw
  // headers objects of a shape new to the code V8 had optimized, threw that code away and compiled
  // it again, and its reads of the headers ended up looking among every shape seen. A client sends
  // its headers in one order; so does this script: Host, the scenario's headers as given, then
  // Content-Length (bench/what-is-left.md, the nineteenth round).
  lines.push(
    `header_order = { [[Host]], ${Object.keys(request.headers).map(quote).join(', ')} }`,
    'wrk.format = function(method, path, headers, body)',
    '  headers = headers or wrk.headers',
    '  body = body or wrk.body',
    '  if not headers["Host"] then headers["Host"] = wrk.headers["Host"] end',
    '  local s = { string.format("%s %s HTTP/1.1", method or wrk.method, path or wrk.path) }',
    '  for _, name in ipairs(header_order) do',
    '    if headers[name] ~= nil then s[#s + 1] = string.format("%s: %s", name, headers[name]) end',
    '  end',
    '  if body then s[#s + 1] = string.format("Content-Length: %d", string.len(body)) end',
    '  s[#s + 1] = ""',
    '  s[#s + 1] = body or ""',
    '  return table.concat(s, "\\r\\n")',
    'end',
  );
  if (request.turns !== undefined && request.turns.length > 0) {
    // One wrk thread: its connections take the bodies in turn, in the order the requests are made.
    lines.push(`bodies = { ${[request.body, ...request.turns].map(quote).join(', ')} }`, 'turn = 0');
    lines.push('request = function()', '  turn = turn % #bodies + 1', '  return wrk.format(nil, nil, nil, bodies[turn])', 'end');
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    `  io.write(string.format('${WRK_MARK}{"requests":%.0f,"duration_us":%.0f,"bytes":%.0f,"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f,"p50_us":%.0f,"p99_us":%.0f,"max_us":%.0f}\\n',`,
    '    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(99), latency.max))',
    'end',
    '',
  );
  return lines.join('\n');
}

export interface WrkSummary {
  requests: number;
  durationUs: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  p50Us: number;
  p99Us: number;
  maxUs: number;
}

/** Finds and reads the summary line our script's `done` printed. */
export function parseWrkOutput(stdout: string): WrkSummary {
  const line = stdout.split('\n').find((l) => l.startsWith(WRK_MARK));
  if (line === undefined) throw new Error(`wrk printed no summary line:\n${stdout.slice(-2000)}`);
  const raw = JSON.parse(line.slice(WRK_MARK.length)) as Record<string, number>;
  const n = (name: string): number => {
    const v = raw[name];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`wrk summary has no number "${name}"`);
    return v;
  };
  return {
    requests: n('requests'),
    durationUs: n('duration_us'),
    bytes: n('bytes'),
    errors: { connect: n('connect'), read: n('read'), write: n('write'), status: n('status'), timeout: n('timeout') },
    p50Us: n('p50_us'),
    p99Us: n('p99_us'),
    maxUs: n('max_us'),
  };
}

/** The middle value (mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of nothing');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One proxy's numbers for one load scenario. */
export interface LoadResult {
  scenario: string;
  proxy: ProxyKind;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** The proxy's own user+system CPU per request. */
  cpuUsPerRequest: number;
  /** The proxy's CPU time over wall time (1 = one core busy). */
  cpuShare: number;
  peakRssMb: number;
  /** Response bytes per request as wrk counted them (status line and headers included). */
  bytesPerResponse: number;
  /** Failed requests of any kind (connect, read, write, timeout, non-2xx). */
  errors: number;
  /** New upstream connections the proxy opened per 1,000 requests (0 when every one is reused). */
  upstreamConnectionsPer1k: number;
}

/** Computes a {@link LoadResult} from wrk's summary and the proxy's /proc readings. */
export function loadResult(
  scenario: string,
  proxy: ProxyKind,
  wrk: WrkSummary,
  cpu: { before: CpuTicks; after: CpuTicks; ticksPerSecond: number; wallMs: number },
  memory: MemoryKb,
  upstreamConnections: number,
): LoadResult {
  const ticks = cpu.after.utime + cpu.after.stime - cpu.before.utime - cpu.before.stime;
  const cpuUs = (ticks / cpu.ticksPerSecond) * 1e6;
  const seconds = wrk.durationUs / 1e6;
  const e = wrk.errors;
  return {
    scenario,
    proxy,
    requests: wrk.requests,
    rps: seconds > 0 ? wrk.requests / seconds : 0,
    p50Ms: wrk.p50Us / 1000,
    p99Ms: wrk.p99Us / 1000,
    cpuUsPerRequest: wrk.requests > 0 ? cpuUs / wrk.requests : Number.NaN,
    cpuShare: cpu.wallMs > 0 ? cpuUs / 1000 / cpu.wallMs : 0,
    peakRssMb: memory.vmHwm / 1024,
    bytesPerResponse: wrk.requests > 0 ? wrk.bytes / wrk.requests : 0,
    errors: e.connect + e.read + e.write + e.status + e.timeout,
    upstreamConnectionsPer1k: wrk.requests > 0 ? (upstreamConnections / wrk.requests) * 1000 : 0,
  };
}

/** Memory held by idle open streams. */
export interface IdleStreamsResult {
  proxy: ProxyKind;
  streams: number;
  baselineRssKb: number;
  openRssKb: number;
  /** (open - baseline) / streams, in bytes. */
  bytesPerStream: number;
  peakRssMb: number;
  failed: number;
}

/** Who holds the 200 KB slow streams: the bare proxy, or llmux passing them through or translating them. */
export type LargeIdleVariant = 'bare' | 'same format' | 'translated';

/** Memory held by idle open streams whose requests were 200 KB agent turns (issue 15). */
export interface LargeIdleStreamsResult extends IdleStreamsResult {
  variant: LargeIdleVariant;
}

export interface StartupResult {
  /** Median ms from spawn to `node -e 0` exiting. */
  nodeMs: number;
  /** Median ms from spawn to the first 200 from `/healthz` of `node dist/cli.cjs serve`. */
  llmuxMs: number;
  runs: number;
}

/** A target's verdict. */
export interface Verdict {
  target: string;
  limit: string;
  measured: string;
  met: boolean;
  /** How far over the limit, as a percentage of it (0 when met). */
  overByPercent: number;
}

function verdict(target: string, ratio: number, limit: number, unit = '×'): Verdict {
  const met = ratio <= limit;
  return {
    target,
    limit: `≤ ${limit}${unit}`,
    measured: `${ratio.toFixed(2)}${unit}`,
    met,
    overByPercent: met ? 0 : (ratio / limit - 1) * 100,
  };
}

/** The bare result a llmux scenario is compared with, if it was measured. */
export function baselineOf(scenario: LoadScenario, results: readonly LoadResult[]): LoadResult | undefined {
  return results.find((r) => r.proxy === 'bare' && r.scenario === scenario.id);
}

/**
 * One result from several measured rounds of the same proxy and scenario: the median of each
 * rate, latency and cost (a round disturbed by other work on the machine doesn't decide it),
 * the sums of requests and errors, the highest peak RSS.
 */
export function combineRounds(rounds: readonly LoadResult[]): LoadResult {
  const first = rounds[0];
  if (first === undefined) throw new Error('no rounds to combine');
  const mid = (pick: (r: LoadResult) => number): number => median(rounds.map(pick));
  return {
    scenario: first.scenario,
    proxy: first.proxy,
    requests: rounds.reduce((sum, r) => sum + r.requests, 0),
    rps: mid((r) => r.rps),
    p50Ms: mid((r) => r.p50Ms),
    p99Ms: mid((r) => r.p99Ms),
    cpuUsPerRequest: mid((r) => r.cpuUsPerRequest),
    cpuShare: mid((r) => r.cpuShare),
    peakRssMb: Math.max(...rounds.map((r) => r.peakRssMb)),
    bytesPerResponse: mid((r) => r.bytesPerResponse),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    upstreamConnectionsPer1k: mid((r) => r.upstreamConnectionsPer1k),
  };
}

/** Checks every target of issue 7 that the results measured. */
export function evaluateTargets(
  scenarios: readonly LoadScenario[],
  results: readonly LoadResult[],
  idle: readonly IdleStreamsResult[],
  startup: StartupResult | undefined,
  largeIdle: readonly LargeIdleStreamsResult[] = [],
): Verdict[] {
  const verdicts: Verdict[] = [];
  for (const s of scenarios) {
    const mine = results.find((r) => r.proxy === 'llmux' && r.scenario === s.id);
    const bare = baselineOf(s, results);
    if (mine === undefined || bare === undefined) continue;
    verdicts.push(verdict(`${s.label}: CPU per request`, mine.cpuUsPerRequest / bare.cpuUsPerRequest, TARGETS.cpu[s.kind]));
    // Issue 15 set the agent turns a CPU target only (their memory is judged on open streams);
    // their peak RSS and p99 are in the ratios table.
    if (s.kind === 'agent' || s.kind === 'agent-translated') continue;
    verdicts.push(verdict(`${s.label}: peak RSS`, mine.peakRssMb / bare.peakRssMb, TARGETS.peakRss));
    verdicts.push(verdict(`${s.label}: p99 latency`, mine.p99Ms / bare.p99Ms, TARGETS.p99));
  }
  const idleLlmux = idle.find((r) => r.proxy === 'llmux');
  if (idleLlmux !== undefined) {
    const kb = idleLlmux.bytesPerStream / 1024;
    verdicts.push(verdict('memory per idle open stream', kb, TARGETS.idleStreamBytes / 1024, ' KB'));
  }
  const bareLarge = largeIdle.find((r) => r.variant === 'bare');
  for (const variant of ['same format', 'translated'] as const) {
    const mine = largeIdle.find((r) => r.variant === variant);
    if (mine === undefined || bareLarge === undefined) continue;
    verdicts.push(verdict(`memory per open stream with a 200 KB request, ${variant}`, mine.bytesPerStream / bareLarge.bytesPerStream, TARGETS.largeIdleStream));
  }
  if (startup !== undefined) verdicts.push(verdict('start-up to first served request', startup.llmuxMs / startup.nodeMs, TARGETS.startup));
  return verdicts;
}

export interface Machine {
  date: string;
  cpus: number;
  cpuModel: string;
  node: string;
  wrk: string;
  kernel: string;
  /** 1-minute load average when the run began and ended: other work on the machine skews results. */
  loadAverage: { start: number; end: number };
}

export interface RunSettings {
  connections: number;
  /** Measured rounds per proxy and scenario, alternating bare and llmux. */
  rounds: number;
  roundS: number;
  warmupS: number;
  /** Warm-up passes of `warmupS`, each ended by wrk closing its connections as a round is. */
  warmupPasses?: number;
  pinned: boolean;
  quick: boolean;
}

const f = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** The RESULTS.md text. */
export function renderResults(report: {
  machine: Machine;
  settings: RunSettings;
  scenarios: readonly LoadScenario[];
  results: readonly LoadResult[];
  idle: readonly IdleStreamsResult[];
  /** The 200 KB slow streams (issue 15), when measured. */
  largeIdle?: readonly LargeIdleStreamsResult[];
  startup: StartupResult | undefined;
  notes: readonly string[];
  /** Profile summaries (`--profile`), shown as they are. */
  profiles?: readonly string[];
}): string {
  const { machine, settings, scenarios, results, idle, startup } = report;
  const largeIdle = report.largeIdle ?? [];
  const out: string[] = [];
  out.push('# llmux benchmark results', '');
  out.push('Written by `npm run bench -- --write` (bench/run.ts); every run rewrites this file.', '');
  out.push(`- Date: ${machine.date}`);
  out.push(`- Machine: ${machine.cpus} CPUs, ${machine.cpuModel}, Linux ${machine.kernel}`);
  out.push(`- Node ${machine.node}; load generator ${machine.wrk}`);
  out.push(`- Machine load (1-min load average) at start / end of the run: ${machine.loadAverage.start.toFixed(2)} / ${machine.loadAverage.end.toFixed(2)}${machine.loadAverage.start > 0.5 || machine.loadAverage.end > 2.5 ? ' — other work was running; treat small differences as noise' : ''}`);
  out.push(`- Load: wrk, 1 thread, ${settings.connections} connections. Per scenario a fresh bare proxy and a fresh llmux are started and warmed (${(settings.warmupPasses ?? 1) > 1 ? `${settings.warmupPasses} passes of ${settings.warmupS} s each, every pass ended as wrk closes its connections, as a round is` : `${settings.warmupS} s each`}), then measured in ${settings.rounds} alternating rounds of ${settings.roundS} s (bare, llmux, bare, llmux, …); each figure is the median over rounds${settings.quick ? ' (`--quick` run: short, noisier)' : ''}.`);
  out.push(`- Placement: ${settings.pinned ? 'fake upstream and wrk pinned to CPU 0, the proxy under test alone on CPU 1 (`taskset`)' : 'NOT pinned (no taskset or fewer than 2 CPUs): numbers are less comparable'}`);
  out.push('- llmux runs from `dist/` (compiled), request log on (one JSON line per request on stderr, sent to a file); the bare proxy is a `node:http` pipe with a keep-alive agent and no parsing or logging.');
  out.push('- CPU µs/req: the proxy process\'s utime+stime (`/proc/PID/stat`) over the measured run / requests. CPU share: that time over wall time. Peak RSS: `VmHWM`. Upstream conns/1k req: connections the fake upstream accepted per 1,000 requests (0 = keep-alive reuse; near 1,000 = a new connection per request).');
  out.push('');
  out.push('## Load scenarios', '');
  out.push('| scenario | proxy | req/s | p50 ms | p99 ms | CPU µs/req | CPU share | peak RSS MB | bytes/resp | upstream conns/1k req | errors |');
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of scenarios) {
    for (const proxy of ['bare', 'llmux'] as const) {
      const r = results.find((x) => x.scenario === s.id && x.proxy === proxy);
      if (r === undefined) continue;
      const who = proxy === 'bare' && s.baseline !== s.id ? 'bare (same upstream stream, passed through)' : proxy;
      out.push(`| ${s.label} | ${who} | ${f(r.rps, 0)} | ${f(r.p50Ms, 2)} | ${f(r.p99Ms, 2)} | ${f(r.cpuUsPerRequest, 0)} | ${f(r.cpuShare * 100, 0)}% | ${f(r.peakRssMb, 1)} | ${f(r.bytesPerResponse, 0)} | ${f(r.upstreamConnectionsPer1k, 0)} | ${r.errors} |`);
    }
  }
  out.push('');
  out.push('## Ratios llmux / bare proxy', '');
  out.push('Translated streams are compared with the bare proxy passing the same upstream stream through.', '');
  out.push('| scenario | bare proxy doing | CPU/req (target) | req/s | p99 (target ≤ 1.5) | peak RSS (target ≤ 1.3) |');
  out.push('|---|---|---:|---:|---:|---:|');
  for (const s of scenarios) {
    const mine = results.find((r) => r.proxy === 'llmux' && r.scenario === s.id);
    const bare = baselineOf(s, results);
    if (mine === undefined || bare === undefined) continue;
    const baseLabel = scenarios.find((x) => x.id === s.baseline)?.label ?? s.baseline;
    out.push(`| ${s.label} | ${baseLabel} | ${f(mine.cpuUsPerRequest / bare.cpuUsPerRequest, 2)}× (≤ ${TARGETS.cpu[s.kind]}) | ${f(mine.rps / bare.rps, 2)}× | ${f(mine.p99Ms / bare.p99Ms, 2)}× | ${f(mine.peakRssMb / bare.peakRssMb, 2)}× |`);
  }
  out.push('');
  if (idle.length > 0) {
    out.push('## 1,000 concurrent slow streams', '');
    out.push('Each stream is open and idle (the upstream drips one event a second). Per stream = (RSS with the streams open − RSS before) / streams.', '');
    out.push('| proxy | streams open | RSS before MB | RSS open MB | per stream KB | peak RSS MB | failed |');
    out.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const r of idle) {
      out.push(`| ${r.proxy} | ${r.streams} | ${f(r.baselineRssKb / 1024, 1)} | ${f(r.openRssKb / 1024, 1)} | ${f(r.bytesPerStream / 1024, 1)} | ${f(r.peakRssMb, 1)} | ${r.failed} |`);
    }
    out.push('');
  }
  if (largeIdle.length > 0) {
    const bare = largeIdle.find((r) => r.variant === 'bare');
    out.push('## Slow streams with a 200 KB request', '');
    out.push('A coding agent\'s 200 KB turn, streamed, held open and idle (the upstream drips one event a second): the bare proxy and llmux passing it to a messages upstream, llmux translating it for a chat upstream. Per stream = (RSS with the streams open − RSS before) / streams.', '');
    out.push('| proxy | streams open | RSS before MB | RSS open MB | per stream KB | × bare | failed |');
    out.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const r of largeIdle) {
      const who = r.variant === 'bare' ? 'bare' : `llmux, ${r.variant}`;
      const ratio = bare === undefined ? Number.NaN : r.bytesPerStream / bare.bytesPerStream;
      out.push(`| ${who} | ${r.streams} | ${f(r.baselineRssKb / 1024, 1)} | ${f(r.openRssKb / 1024, 1)} | ${f(r.bytesPerStream / 1024, 1)} | ${f(ratio, 2)}× | ${r.failed} |`);
    }
    out.push('');
  }
  if (startup !== undefined) {
    out.push('## Start-up to first served request', '');
    out.push(`Median of ${startup.runs} runs, each from spawn: \`node -e 0\` to exit; \`node dist/cli.cjs serve --port 0\` (temp LLMUX_HOME with a key already in it, built-in catalog) to the first 200 from \`/healthz\`.`, '');
    out.push('| command | median ms |', '|---|---:|');
    out.push(`| node -e 0 | ${f(startup.nodeMs, 1)} |`);
    out.push(`| llmux serve → /healthz 200 | ${f(startup.llmuxMs, 1)} |`);
    out.push(`| ratio | ${f(startup.llmuxMs / startup.nodeMs, 2)}× (target ≤ ${TARGETS.startup}×) |`);
    out.push('');
  }
  const verdicts = evaluateTargets(scenarios, results, idle, startup, largeIdle);
  out.push('## Targets (issues 7 and 15)', '');
  out.push('| target | limit | measured | verdict |', '|---|---:|---:|---|');
  for (const v of verdicts) out.push(`| ${v.target} | ${v.limit} | ${v.measured} | ${v.met ? 'met' : `MISSED by ${v.overByPercent.toFixed(0)}%`} |`);
  const missed = verdicts.filter((v) => !v.met).length;
  out.push('', `${verdicts.length - missed} of ${verdicts.length} targets met.`, '');
  if (report.notes.length > 0) {
    out.push('## Notes', '');
    for (const note of report.notes) out.push(note);
    out.push('');
  }
  if (report.profiles !== undefined && report.profiles.length > 0) {
    out.push('## Where the time goes (`--profile`)', '');
    out.push('Each proxy again under `node --cpu-prof`, alone, through the same load. Self time is the function\'s own; "total" for llmux\'s functions includes the Node internals they call. µs/req is sampled wall time of the busy process per request (it includes time the process was runnable but descheduled, so it reads higher than CPU µs/req above); compare rows between bare and llmux, not with the table.', '');
    for (const profile of report.profiles) out.push('```text', profile, '```', '');
  }
  return out.join('\n');
}
