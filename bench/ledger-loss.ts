/**
 * The usage ledger's loss window under `kill -9`, measured (llmux.md section 7 says a kill -9
 * loses at most the last second). Runs a real `llmux serve` against a local fake upstream, keeps
 * four clients sending answered requests, kills the server with SIGKILL at a random moment (1.5 to
 * 4 s in), and counts the requests its day files hold, whole lines only (what a restart reads
 * back). The requests lost are the latest answered; the window is from the oldest of them to the
 * kill. Repeated `--kills` times on one home. Not part of `npm run bench`.
 * (The count is read with the file ledger itself, as a restarted server would read it.)
 *
 *   node --import tsx bench/ledger-loss.ts [--kills 8]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createKeyStore } from '../src/auth/key-store.ts';
import { createFileLedger } from '../src/usage/ledger.ts';

const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const { values } = parseArgs({ options: { kills: { type: 'string', default: '8' } } });
const kills = Number(values.kills);

/** Requests the ledger in `dir` holds, read back as a restart reads it (a line torn by the kill does not count). */
async function requestsOnDisk(dir: string): Promise<number> {
  const ledger = await createFileLedger({ dir });
  try {
    const rows = await ledger.query({ since: 0, until: 8.64e15, keyId: 'all', groupBy: 'key' });
    return rows.reduce((sum, row) => sum + row.requests, 0);
  } finally {
    await ledger.close();
  }
}

const answer = JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'u', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } });
const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(answer);
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', () => resolve()));
const home = mkdtempSync(join(tmpdir(), 'llmux-ledger-loss-'));
writeFileSync(join(home, 'config.json'), JSON.stringify({
  builtin_catalog: false,
  providers: { fake: { format: 'openai', base_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`, api_key: 'k' } },
  models: [{ id: 'm', provider: 'fake', pricing: { input_tokens_cost_per_million: 1, output_tokens_cost_per_million: 1, currency: 'USD' } }],
}));
const key = createKeyStore(home).create({ name: 'loss', tier: 'enterprise', limits: { rpm: 1_000_000, tpm: 1_000_000_000, concurrency: 100 } }).key;
const usageDir = join(home, 'usage');
const windows: number[] = [];

for (let run = 0; run < kills; run++) {
  const before = await requestsOnDisk(usageDir);
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--home', home], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LLMUX_CONFIG: '' } });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (\S+)\n/.exec(out);
      if (m !== null) resolve(m[1] as string);
    });
  });
  const answeredAt: number[] = [];
  let running = true;
  let killedAt = Infinity;
  const body = JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
  const worker = async (): Promise<void> => {
    while (running) {
      try {
        const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
        // Answered before the kill: the server recorded it (a request is recorded as it is answered).
        if (res.status === 200 && performance.now() < killedAt) answeredAt.push(performance.now());
      } catch {
        return;
      }
    }
  };
  const workers = Array.from({ length: 4 }, worker);
  await new Promise((resolve) => setTimeout(resolve, 1_500 + Math.random() * 2_500));
  running = false;
  killedAt = performance.now();
  child.kill('SIGKILL');
  await Promise.all(workers);
  await new Promise((resolve) => child.once('exit', resolve));
  const kept = (await requestsOnDisk(usageDir)) - before;
  const lost = answeredAt.length - kept;
  const oldestLost = answeredAt[answeredAt.length - lost];
  const windowMs = lost <= 0 || oldestLost === undefined ? 0 : killedAt - oldestLost;
  windows.push(windowMs);
  console.log(`kill ${run + 1}: ${answeredAt.length} answered, ${kept} on disk, ${lost} lost, loss window ${Math.round(windowMs)} ms`);
}
windows.sort((a, b) => a - b);
console.log(`loss window over ${kills} kills: median ${Math.round(windows[Math.floor(windows.length / 2)] ?? 0)} ms, max ${Math.round(windows[windows.length - 1] ?? 0)} ms`);
upstream.close();
rmSync(home, { recursive: true, force: true });
