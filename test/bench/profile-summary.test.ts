import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatSummary, shortFile, summariseProfile } from '../../bench/profile-summary.ts';
import type { CpuProfile } from '../../bench/profile-summary.ts';

function frame(functionName: string, url = '', lineNumber = 0) {
  return { functionName, url, lineNumber, columnNumber: 0 };
}

/** Root 1 -> idle 2, parse 3 (dist/sse/parser.js), write 4 (node:net), anonymous 5 in parser.js. */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3, 4, 5] },
    { id: 2, callFrame: frame('(idle)') },
    { id: 3, callFrame: frame('feed', 'file:///work/main/dist/sse/parser.js', 9) },
    { id: 4, callFrame: frame('writeGeneric', 'node:internal/stream_base_commons', 40) },
    { id: 5, callFrame: frame('', 'file:///work/main/dist/sse/parser.js', 99) },
  ],
  startTime: 0,
  endTime: 1000,
  // Each delta is the gap before its sample, so sample i owns delta i+1.
  samples: [3, 3, 4, 2, 5, 3],
  timeDeltas: [0, 100, 100, 200, 400, 100],
};

test('self time goes to the sampled function for the gap to the next sample, idle left out of busy time', () => {
  const summary = summariseProfile(profile);
  // feed: 100 + 100 + 0 (last sample); writeGeneric: 200; idle: 400; anonymous: 100.
  assert.equal(summary.totalMs, 0.9);
  assert.equal(summary.idleMs, 0.4);
  assert.equal(summary.busyMs, 0.5);
  const names = summary.functions.map((r) => `${r.name}=${r.percent.toFixed(0)}`);
  assert.deepEqual(names, ['feed (dist/sse/parser.js:10)=40', 'writeGeneric (node:internal/stream_base_commons:41)=40', '(anonymous) (dist/sse/parser.js:100)=20']);
});

test('self time adds up per file', () => {
  const files = summariseProfile(profile).files.map((r) => [r.name, Math.round(r.percent)]);
  assert.deepEqual(files, [['dist/sse/parser.js', 60], ['node:internal/stream_base_commons', 40]]);
});

test('without a timeline the duration is spread over hit counts', () => {
  const summary = summariseProfile({
    nodes: [
      { id: 1, callFrame: frame('a', 'x.js'), hitCount: 3 },
      { id: 2, callFrame: frame('b', 'x.js'), hitCount: 1 },
    ],
    startTime: 0,
    endTime: 4000,
  });
  assert.deepEqual(summary.functions.map((r) => [r.name, r.selfMs]), [['a (x.js:1)', 3], ['b (x.js:1)', 1]]);
});

test('file names are shortened to dist/ or src/ paths, node: modules kept as they are', () => {
  assert.equal(shortFile('file:///work/main/dist/http/body.js'), 'dist/http/body.js');
  assert.equal(shortFile('file:///work/main/src/http/body.ts'), 'src/http/body.ts');
  assert.equal(shortFile('node:internal/http'), 'node:internal/http');
  assert.equal(shortFile('file:///tmp/other/thing.js'), 'thing.js');
  assert.equal(shortFile(''), '');
});

test("llmux's own functions are totalled with everything they call, a recursive one counted once", () => {
  const summary = summariseProfile({
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2] },
      { id: 2, callFrame: frame('onData', 'file:///w/dist/pipeline.js', 10), children: [3, 4] },
      { id: 3, callFrame: frame('writev', 'node:net', 1) },
      { id: 4, callFrame: frame('onData', 'file:///w/dist/pipeline.js', 10), children: [5] },
      { id: 5, callFrame: frame('push', 'file:///w/dist/translate/x.js', 3) },
    ],
    startTime: 0,
    endTime: 1000,
    samples: [2, 3, 5, 3],
    timeDeltas: [0, 100, 300, 600],
  });
  // onData: 100 self + 300 (writev) + 600 (push via the nested onData), not 600 twice.
  assert.deepEqual(summary.ownTotals.map((r) => [r.name, r.selfMs]), [
    ['onData (dist/pipeline.js:11)', 1],
    ['push (dist/translate/x.js:4)', 0.6],
  ]);
});

test('the text summary lists the top functions with their share and, given the request count, µs per request', () => {
  const text = formatSummary('chat-json', summariseProfile(profile), 2, 10);
  assert.match(text, /^chat-json: busy 1 ms of 1 ms sampled, 10 requests, 50 µs busy per request/);
  // 0.2 ms of feed over 10 requests.
  assert.match(text, /40\.0 +0 +20\.0 {2}feed \(dist\/sse\/parser\.js:10\)/);
  assert.match(text, /llmux's own code: 60\.0% self/);
  const selfRows = text.split('file (self time)')[0] ?? '';
  assert.doesNotMatch(selfRows, /\(anonymous\)/, 'only the top 2 functions by self time');
  assert.doesNotMatch(formatSummary('x', summariseProfile(profile), 2), /µs/);
});
