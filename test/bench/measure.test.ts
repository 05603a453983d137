import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  TARGETS, chatBody, combineRounds, evaluateTargets, geminiBody, geminiHeaders, loadResult, loadScenarios, median, messagesBody, parseProcStat, parseProcStatus,
  parseWrkOutput, renderResults, withKey, wrkScript, WRK_MARK,
} from '../../bench/measure.ts';
import { runWrk } from '../../bench/children.ts';
import { skipUnlessInstalled } from '../helpers/ci.ts';
import type { IdleStreamsResult, LargeIdleStreamsResult, LoadResult, Machine } from '../../bench/measure.ts';

function result(overrides: Partial<LoadResult>): LoadResult {
  return {
    scenario: 'chat-json', proxy: 'bare', requests: 1000, rps: 1000, p50Ms: 10, p99Ms: 20, cpuUsPerRequest: 100,
    cpuShare: 0.5, peakRssMb: 60, bytesPerResponse: 900, errors: 0, upstreamConnectionsPer1k: 0, ...overrides,
  };
}

test('utime and stime are read after the last parenthesis, whatever the command name holds', () => {
  const fields = ['S', '1', '2', '3', '0', '-1', '4194304', '10', '0', '0', '0', '1234', '567', '0', '0', '20', '0', '1', '0', '99'];
  const line = `4242 (node (bench) x) ${fields.join(' ')}\n`;
  assert.deepEqual(parseProcStat(line), { utime: 1234, stime: 567 });
  assert.throws(() => parseProcStat('garbage'), /not a \/proc\/PID\/stat line/);
});

test('peak and current resident memory are read from /proc/PID/status in KiB', () => {
  const status = 'Name:\tnode\nVmPeak:\t 1000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   70000 kB\nThreads:\t7\n';
  assert.deepEqual(parseProcStatus(status), { vmHwm: 81234, vmRss: 70000 });
  assert.throws(() => parseProcStatus('Name:\tnode\n'), /VmHWM/);
});

test('the wrk script posts the body verbatim even when it contains the Lua long-bracket closer', () => {
  const body = '{"text":"a]]b]=]c"}';
  const script = wrkScript({ headers: { 'content-type': 'application/json', 'x-api-key': 'sk-1' }, body });
  assert.match(script, /^wrk\.method = "POST"$/m);
  assert.ok(script.includes(`wrk.body = [==[${body}]==]`), script);
  assert.ok(script.includes('wrk.headers[ [[x-api-key]] ] = [[sk-1]]'), script);
  assert.ok(script.includes(WRK_MARK));
  assert.match(script, /latency:percentile\(99\)/);
});

test('the wrk script writes its headers in the order given, not in the order of Lua\'s table', () => {
  const script = wrkScript({ headers: { 'content-type': 'application/json', 'x-api-key': 'sk-1' }, body: '{}' });
  assert.ok(script.includes('header_order = { [[Host]], [[content-type]], [[x-api-key]] }'), script);
  assert.match(script, /^wrk\.format = function\(method, path, headers, body\)$/m);
  assert.match(script, /for _, name in ipairs\(header_order\) do/);
});

const wrkSkip = skipUnlessInstalled(spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined, 'wrk is not installed (apt-get install -y wrk); the wrk test');

test('wrk sends every request of every run with the same headers in the same order, the body whole', { skip: wrkSkip }, async () => {
  const seen = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const names = req.rawHeaders.filter((_, i) => i % 2 === 0);
      seen.add(`${names.join(',')} ${Buffer.concat(chunks).toString()}`);
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(join(tmpdir(), 'llmux-wrk-'));
  try {
    const script = join(dir, 'order.lua');
    // Five names: one order in 120, were wrk left to Lua's table order (seeded afresh in each run).
    writeFileSync(script, wrkScript({ headers: { 'content-type': 'application/json', 'x-api-key': 'sk-1', 'anthropic-version': '2023-06-01', 'x-b': 'b' }, body: '{"n":1}' }));
    const port = (server.address() as AddressInfo).port;
    for (let run = 0; run < 3; run++) await runWrk({ port, path: '/v1/messages', script }, { seconds: 1, connections: 2 });
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual([...seen], ['Host,content-type,x-api-key,anthropic-version,x-b,Content-Length {"n":1}']);
});

test('the wrk script of a session sends its bodies in turn, the first again after the last', () => {
  const script = wrkScript({ headers: {}, body: '{"n":1}', turns: ['{"n":2}', '{"n":3]]"}'] });
  assert.ok(script.includes('bodies = { [[{"n":1}]], [[{"n":2}]], [=[{"n":3]]"}]=] }'), script);
  assert.match(script, /request = function\(\)\n {2}turn = turn % #bodies \+ 1\n {2}return wrk\.format\(nil, nil, nil, bodies\[turn\]\)\nend/);
  assert.ok(!wrkScript({ headers: {}, body: '{}' }).includes('bodies'));
});

test('the wrk summary line is found among the human output and read into numbers', () => {
  const stdout = [
    'Running 3s test @ http://127.0.0.1:1/v1/messages',
    `${WRK_MARK}{"requests":3000,"duration_us":3000000,"bytes":900000,"connect":0,"read":1,"write":0,"status":2,"timeout":0,"p50_us":1500,"p99_us":9000,"max_us":12000}`,
    'Requests/sec: 1000',
  ].join('\n');
  const summary = parseWrkOutput(stdout);
  assert.equal(summary.requests, 3000);
  assert.equal(summary.p99Us, 9000);
  assert.deepEqual(summary.errors, { connect: 0, read: 1, write: 0, status: 2, timeout: 0 });
  assert.throws(() => parseWrkOutput('Running 3s test\nscript error'), /no summary line/);
  assert.throws(() => parseWrkOutput(`${WRK_MARK}{"requests":1}`), /duration_us/);
});

test('a load result turns ticks into CPU microseconds per request and counts every kind of error', () => {
  const r = loadResult(
    'chat-stream',
    'llmux',
    { requests: 2000, durationUs: 4_000_000, bytes: 2_000_000, errors: { connect: 1, read: 2, write: 0, status: 3, timeout: 4 }, p50Us: 2500, p99Us: 7000, maxUs: 9000 },
    { before: { utime: 100, stime: 50 }, after: { utime: 250, stime: 100 }, ticksPerSecond: 100, wallMs: 4000 },
    { vmHwm: 102_400, vmRss: 90_000 },
    500,
  );
  // 200 ticks = 2 s of CPU over 2000 requests.
  assert.equal(r.cpuUsPerRequest, 1000);
  assert.equal(r.cpuShare, 0.5);
  assert.equal(r.rps, 500);
  assert.equal(r.p99Ms, 7);
  assert.equal(r.peakRssMb, 100);
  assert.equal(r.bytesPerResponse, 1000);
  assert.equal(r.errors, 10);
  assert.equal(r.upstreamConnectionsPer1k, 250);
});

test('the median of an odd count is the middle value and of an even count the mean of the two middles', () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.throws(() => median([]));
});

test('combined rounds take medians of rates and costs, sums of requests and errors, and the highest peak', () => {
  const combined = combineRounds([
    result({ cpuUsPerRequest: 100, rps: 900, p99Ms: 30, peakRssMb: 61, requests: 10, errors: 1 }),
    result({ cpuUsPerRequest: 500, rps: 100, p99Ms: 90, peakRssMb: 60, requests: 20, errors: 0 }),
    result({ cpuUsPerRequest: 110, rps: 1000, p99Ms: 20, peakRssMb: 62, requests: 30, errors: 2 }),
  ]);
  assert.equal(combined.cpuUsPerRequest, 110);
  assert.equal(combined.rps, 900);
  assert.equal(combined.p99Ms, 30);
  assert.equal(combined.peakRssMb, 62);
  assert.equal(combined.requests, 60);
  assert.equal(combined.errors, 3);
});

test('translated scenarios are compared with the bare proxy passing the same upstream stream through', () => {
  const scenarios = loadScenarios();
  const byId = new Map(scenarios.map((s) => [s.id, s]));
  assert.equal(byId.get('messages-from-chat')?.baseline, 'chat-stream');
  assert.equal(byId.get('chat-from-messages')?.baseline, 'messages-stream');
  assert.equal(byId.get('gemini-from-chat')?.baseline, 'chat-stream');
  for (const s of scenarios) {
    const baseline = byId.get(s.baseline);
    assert.ok(baseline !== undefined, s.id);
    if (s.kind !== 'translated' && s.kind !== 'agent-translated') assert.equal(s.baseline, s.id);
    // Same upstream stream: the baseline asks the provider the translated one's upstream speaks.
    if (s.kind === 'translated') assert.notEqual(baseline.path, s.path);
    // The translated agent turn: the bare proxy pipes the same 200 KB request.
    if (s.kind === 'agent-translated') assert.equal(baseline.path, s.path);
  }
});

test('request bodies are valid JSON in each format and streamed chat asks for usage', () => {
  const chat = JSON.parse(chatBody('bench-chat', true)) as Record<string, unknown>;
  assert.equal(chat['stream'], true);
  assert.deepEqual(chat['stream_options'], { include_usage: true });
  assert.equal((chat['messages'] as unknown[]).length, 4);
  const messages = JSON.parse(messagesBody('bench-messages', false)) as Record<string, unknown>;
  assert.equal(messages['stream'], undefined);
  assert.equal(typeof messages['max_tokens'], 'number');
  assert.equal(typeof messages['system'], 'string');
});

test('the Gemini scenario sends a generateContent body: the conversation as contents, the system prompt apart', () => {
  const gemini = JSON.parse(geminiBody()) as { contents: Array<{ role: string }>; systemInstruction: unknown };
  assert.deepEqual(gemini.contents.map((content) => content.role), ['user', 'model', 'user']);
  assert.ok(gemini.systemInstruction !== undefined);
  assert.deepEqual(withKey(geminiHeaders(), 'sk-g'), { 'content-type': 'application/json', 'x-goog-api-key': 'sk-g' });
});

test('the key placeholder is filled into whichever header carries the key', () => {
  assert.deepEqual(withKey({ authorization: 'Bearer ${KEY}', 'content-type': 'application/json' }, 'sk-x'), { authorization: 'Bearer sk-x', 'content-type': 'application/json' });
  assert.deepEqual(withKey({ 'x-api-key': '${KEY}' }, 'sk-y'), { 'x-api-key': 'sk-y' });
});

test('each target is met at its limit and missed above it, by the percentage over', () => {
  const scenarios = loadScenarios().filter((s) => s.id === 'chat-json' || s.id === 'messages-from-chat');
  const results = [
    result({ scenario: 'chat-json', proxy: 'bare', cpuUsPerRequest: 100, peakRssMb: 60, p99Ms: 10 }),
    result({ scenario: 'chat-json', proxy: 'llmux', cpuUsPerRequest: 130, peakRssMb: 90, p99Ms: 15 }),
    result({ scenario: 'messages-from-chat', proxy: 'bare', cpuUsPerRequest: 1000, peakRssMb: 60, p99Ms: 10 }),
    result({ scenario: 'messages-from-chat', proxy: 'llmux', cpuUsPerRequest: 2700, peakRssMb: 60, p99Ms: 10 }),
  ];
  const idle: IdleStreamsResult[] = [{ proxy: 'llmux', streams: 1000, baselineRssKb: 60_000, openRssKb: 100_000, bytesPerStream: 40 * 1024, peakRssMb: 100, failed: 0 }];
  const verdicts = evaluateTargets(scenarios, results, idle, { nodeMs: 40, llmuxMs: 80, runs: 5 });
  const find = (target: string) => verdicts.find((v) => v.target === target);
  assert.equal(find('chat JSON pass-through: CPU per request')?.met, true);
  assert.equal(find('chat JSON pass-through: p99 latency')?.met, true);
  const rss = find('chat JSON pass-through: peak RSS');
  assert.equal(rss?.met, false);
  assert.equal(Math.round(rss?.overByPercent ?? 0), Math.round((1.5 / TARGETS.peakRss - 1) * 100));
  const translated = find('messages client ← chat upstream (translated stream): CPU per request');
  assert.equal(translated?.met, false);
  assert.equal(translated?.overByPercent.toFixed(0), '50');
  assert.equal(find('memory per idle open stream')?.met, true);
  const startup = find('start-up to first served request');
  assert.equal(startup?.met, false);
  assert.equal(startup?.measured, '2.00×');
});

test('a scenario without its bare run gets no verdict rather than a made-up ratio', () => {
  const scenarios = loadScenarios().filter((s) => s.id === 'chat-stream');
  const verdicts = evaluateTargets(scenarios, [result({ scenario: 'chat-stream', proxy: 'llmux' })], [], undefined);
  assert.deepEqual(verdicts, []);
});

test('the results page names the machine and shows every measured row, ratio and verdict', () => {
  const machine: Machine = { date: '2026-01-02T03:04:05Z', cpus: 2, cpuModel: 'Test CPU', node: 'v20.0.0', wrk: 'wrk 4.1.0', kernel: '6.1', loadAverage: { start: 0.1, end: 0.2 } };
  const scenarios = loadScenarios().filter((s) => s.id === 'messages-from-chat');
  const text = renderResults({
    machine,
    settings: { connections: 32, rounds: 3, roundS: 3, warmupS: 2, pinned: true, quick: false },
    scenarios,
    results: [
      result({ scenario: 'messages-from-chat', proxy: 'bare', cpuUsPerRequest: 1000 }),
      result({ scenario: 'messages-from-chat', proxy: 'llmux', cpuUsPerRequest: 1500 }),
    ],
    idle: [],
    startup: { nodeMs: 40, llmuxMs: 50, runs: 9 },
    notes: ['- a note'],
  });
  assert.match(text, /2026-01-02T03:04:05Z/);
  assert.match(text, /2 CPUs, Test CPU/);
  assert.match(text, /Node v20\.0\.0/);
  assert.match(text, /\| messages client ← chat upstream \(translated stream\) \| bare \(same upstream stream, passed through\) \| 1000 \|/);
  assert.match(text, /\| 1\.50× \(≤ 1\.8\) \|/);
  assert.match(text, /\| start-up to first served request \| ≤ 1\.5× \| 1\.25× \| met \|/);
  assert.match(text, /\| messages client ← chat upstream \(translated stream\): CPU per request \| ≤ 1\.8× \| 1\.50× \| met \|/);
  assert.match(text, /- a note/);
  assert.doesNotMatch(text, /other work was running/);
  assert.match(text, /warmed \(2 s each\)/);
  const passes = renderResults({ machine, settings: { connections: 32, rounds: 3, roundS: 3, warmupS: 1, warmupPasses: 3, pinned: true, quick: false }, scenarios, results: [], idle: [], startup: undefined, notes: [] });
  assert.match(passes, /warmed \(3 passes of 1 s each, every pass ended as wrk closes its connections, as a round is\)/);
});

test('the 200 KB agent turns are held to 2.0× (same format) and 3.0× (translated) of the bare proxy piping the same request', () => {
  const scenarios = loadScenarios().filter((s) => s.id.startsWith('agent-'));
  assert.deepEqual(scenarios.map((s) => [s.id, s.baseline, TARGETS.cpu[s.kind]]), [
    ['agent-messages', 'agent-messages', 2.0], ['agent-translated', 'agent-messages', 3.0],
    // A session's turns one after another: the bare proxy pipes the same turns.
    ['agent-turns', 'agent-turns', 2.0], ['agent-turns-translated', 'agent-turns', 3.0],
  ]);
  assert.ok(scenarios.slice(2).every((s) => (s.turns?.length ?? 0) > 1 && s.turns?.every((turn, i) => turn.length > (i === 0 ? s.body : s.turns?.[i - 1] ?? '').length)), 'each turn longer than the last');
  const results = [
    result({ scenario: 'agent-messages', proxy: 'bare', cpuUsPerRequest: 200 }),
    result({ scenario: 'agent-messages', proxy: 'llmux', cpuUsPerRequest: 400 }),
    // The runner files the baseline's rounds under the scenario they are compared with.
    result({ scenario: 'agent-translated', proxy: 'bare', cpuUsPerRequest: 200 }),
    result({ scenario: 'agent-translated', proxy: 'llmux', cpuUsPerRequest: 620 }),
  ];
  const verdicts = evaluateTargets(scenarios.slice(0, 2), results, [], undefined);
  assert.deepEqual(verdicts.map((v) => [v.target.split(': ')[1], v.measured, v.met]), [['CPU per request', '2.00×', true], ['CPU per request', '3.10×', false]], 'a CPU target only');
});

test('memory per open stream with a 200 KB request is judged against the bare proxy\'s, same format and translated', () => {
  const large = (variant: LargeIdleStreamsResult['variant'], kb: number): LargeIdleStreamsResult => ({
    variant, proxy: variant === 'bare' ? 'bare' : 'llmux', streams: 200, baselineRssKb: 100_000, openRssKb: 100_000 + kb * 200, bytesPerStream: kb * 1024, peakRssMb: 150, failed: 0,
  });
  const largeIdle = [large('bare', 100), large('same format', 130), large('translated', 140)];
  const verdicts = evaluateTargets([], [], [], undefined, largeIdle);
  assert.deepEqual(verdicts.map((v) => [v.target, v.measured, v.met]), [
    ['memory per open stream with a 200 KB request, same format', '1.30×', true],
    ['memory per open stream with a 200 KB request, translated', '1.40×', false],
  ]);
  const machine: Machine = { date: '2026-01-02T03:04:05Z', cpus: 2, cpuModel: 'Test CPU', node: 'v20.0.0', wrk: 'wrk 4.1.0', kernel: '6.1', loadAverage: { start: 0.1, end: 0.2 } };
  const text = renderResults({ machine, settings: { connections: 32, rounds: 3, roundS: 3, warmupS: 2, pinned: true, quick: false }, scenarios: [], results: [], idle: [], largeIdle, startup: undefined, notes: [] });
  assert.match(text, /## Slow streams with a 200 KB request/);
  assert.match(text, /\| llmux, translated \| 200 \| 97\.7 \| 125\.0 \| 140\.0 \| 1\.40× \| 0 \|/);
  assert.match(text, /\| memory per open stream with a 200 KB request, translated \| ≤ 1\.3× \| 1\.40× \| MISSED by 8% \|/);
});
