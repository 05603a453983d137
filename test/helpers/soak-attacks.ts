/**
 * The hostile side of test/resilience/hostile-soak.test.ts, run as its own process so that its
 * load does not slow the test's own measurements. Arguments: one JSON object
 * `{ url, untilMs, keys: { bomber, bypasser, counter, dripper } }`. Prints one JSON line of
 * tallies (attack -> status -> count; status 0 is a connection closed before an answer) and exits.
 */
import http from 'node:http';
import net from 'node:net';

interface Plan { url: string; untilMs: number; keys: { bomber: string; bypasser: string; counter: string; dripper: string } }

const plan = JSON.parse(process.argv[2] ?? '{}') as Plan;
const base = new URL(plan.url);
const tallies: Record<string, Record<string, number>> = {};
const tally = (who: string, status: number, n = 1): void => {
  const map = (tallies[who] ??= {});
  map[String(status)] = (map[String(status)] ?? 0) + n;
};

/** One request whose body may be refused before it is sent whole; resolves with the status, 0 when none came. */
function send(path: string, key: string, body: Buffer): Promise<number> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: number): void => {
      if (settled) return;
      settled = true;
      resolve(status);
    };
    const req = http.request({
      hostname: base.hostname, port: base.port, path, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-length': String(body.length) },
    }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
      res.on('error', () => done(res.statusCode ?? 0));
    });
    req.on('error', () => done(0));
    req.setTimeout(20_000, () => req.destroy());
    req.end(body);
  });
}

async function loop(parallel: number, step: () => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (Date.now() < plan.untilMs) {
      await step();
      // A refused attacker retries at once; this keeps a loop from spinning on a dead socket.
      await new Promise((r) => setImmediate(r));
    }
  }));
}

/** Sockets dripping a body one byte every `everyMs`; counts those the server closed before the end. */
function drip(who: string, head: string, count: number, everyMs: number): Promise<void> {
  return Promise.all(Array.from({ length: count }, () => new Promise<void>((resolve) => {
    const socket = net.connect(Number(base.port), base.hostname);
    let timer: NodeJS.Timeout | undefined;
    let answer = '';
    socket.on('error', () => {});
    socket.on('data', (c: Buffer) => { answer += c.toString('latin1'); });
    socket.on('close', () => {
      clearInterval(timer);
      tally(who, Date.now() < plan.untilMs ? Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0) : -1);
      resolve();
    });
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => (Date.now() >= plan.untilMs ? socket.destroy() : socket.write('x')), everyMs);
    });
  }))).then(() => undefined);
}

/** 100,000 empty text parts, then the text: the shape that once made 28 MB cost 4 tokens. */
function bomb(textBytes: number, model: string, stream: boolean): Buffer {
  return Buffer.from(JSON.stringify({
    model,
    max_tokens: 100_000,
    ...(stream ? { stream: true } : {}),
    messages: [{ role: 'user', content: [...Array.from({ length: 100_000 }, () => ({ type: 'text', text: '' })), { type: 'text', text: 'word '.repeat(textBytes / 5) }] }],
  }));
}

const echoBomb = bomb(8_000_000, 'llmux-echo', true);
const bypass = bomb(28_000_000, 'gpt-test', true);
const countBody = bomb(28_000_000, 'llmux-echo', false);
const { bomber, bypasser, counter, dripper } = plan.keys;

await Promise.all([
  loop(40, async () => tally('echo bomb (40 parallel, 8.5 MB)', await send('/v1/messages', bomber, echoBomb))),
  loop(10, async () => tally('estimate bypass (10 parallel, 29 MB)', await send('/v1/messages', bypasser, bypass))),
  loop(8, async () => tally('count_tokens flood (8 parallel, 29 MB, 1-rpm key)', await send('/v1/messages/count_tokens', counter, countBody))),
  drip('drip /auth/device (300 sockets; -1: held to the end)', 'POST /auth/device HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n', 300, 2_000),
  drip('drip keyed (100 sockets; -1: held to the end)', `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dripper}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`, 100, 2_000),
]);
process.stdout.write(`${JSON.stringify(tallies)}\n`);
