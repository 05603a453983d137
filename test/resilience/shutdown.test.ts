import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream, fixture, respond } from '../helpers/fake-upstream.ts';
import { withLlmuxModel } from '../helpers/model-names.ts';
import { waitUntil } from '../helpers/wait.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

describe('graceful shutdown', () => {
  it('on SIGTERM stops accepting, lets an open stream finish, then exits 0', async () => {
    const upstream = await startFakeUpstream();
    const home = mkdtempSync(join(tmpdir(), 'llmux-shutdown-'));
    writeFileSync(join(home, 'config.json'), JSON.stringify({
      builtin_catalog: false,
      providers: { up: { format: 'anthropic', base_url: `${upstream.url}/v1`, api_key: 'k' } },
      models: [{ id: 'claude-test', provider: 'up' }],
      limits: { shutdown_timeout_ms: 10000 },
    }));
    // A stream that takes about a second.
    upstream.queue.push(respond.sse(fixture('anthropic-stream-tool-use.sse'), { chunkSize: 100, delayMs: 50 }));
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--home', home], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LLMUX_CONFIG: '' } });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(out);
      });
      child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
    });
    assert.match(line, /^llmux listening on http:\/\/127\.0\.0\.1:\d+\n$/);
    const url = line.trim().slice('llmux listening on '.length);
    const key = /\n(sk-llmux-\S+)\n/.exec(stderr)?.[1];
    assert.ok(key, 'first-run admin key printed to stderr');
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', connection: 'close' },
      body: JSON.stringify({ model: 'claude-test', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    child.kill('SIGTERM');
    // The stream read below is still open: refused now, a connection is refused while draining.
    await waitUntil(() => fetch(`${url}/healthz`).then(() => false, () => true), 'new connections refused while draining');
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    assert.equal(text, withLlmuxModel('messages', fixture('anthropic-stream-tool-use.sse'), 'claude-test').toString());
    assert.equal(await exited, 0);
    await upstream.close();
  });
});

/** Starts `llmux serve` in a child process; resolves once it listens. */
async function startServer(home: string, command: string[] = [process.execPath, '--import', 'tsx', CLI, 'serve', '--port', '0', '--home', home], cwd?: string) {
  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LLMUX_CONFIG: '' }, ...(cwd === undefined ? {} : { cwd }) });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /llmux listening on (http:\/\/\S+)\n/.exec(out);
      if (m !== null) resolve(m[1] as string);
    });
    child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, url, exited, stderr: () => stderr, key: () => /\n(sk-llmux-\S+)\n/.exec(stderr)?.[1] ?? '' };
}

function writeConfig(home: string, upstreamUrl: string, shutdownTimeoutMs: number): void {
  writeFileSync(join(home, 'config.json'), JSON.stringify({
    builtin_catalog: false,
    providers: { up: { format: 'anthropic', base_url: `${upstreamUrl}/v1`, api_key: 'k' } },
    models: [{ id: 'claude-test', provider: 'up' }],
    limits: { shutdown_timeout_ms: shutdownTimeoutMs },
  }));
}

/** A stream that sends its first events and then nothing: it outlives any drain. */
const stalled = (_req: unknown, res: import('node:http').ServerResponse): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(fixture('anthropic-stream-tool-use.sse').subarray(0, 400));
};

async function openStream(url: string, key: string) {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-test', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const reader = res.body!.getReader();
  await reader.read();
  return async (): Promise<string> => {
    let text = '';
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return text;
      text += new TextDecoder().decode(value);
    }
  };
}

describe('shutdown, when streams outlast it', () => {
  it('cuts a stream still open at the shutdown timeout with an in-stream error first', async () => {
    const upstream = await startFakeUpstream();
    const home = mkdtempSync(join(tmpdir(), 'llmux-shutdown-'));
    writeConfig(home, upstream.url, 300);
    upstream.queue.push(stalled);
    const server = await startServer(home);
    try {
      const rest = await openStream(server.url, server.key());
      server.child.kill('SIGTERM');
      const text = await rest();
      // Issue 14: the stream was cut with no word; the client could not tell it was incomplete.
      assert.match(text, /event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"llmux is shutting down; this answer was cut before it was complete"\}\}\n\n$/);
      assert.deepEqual(await server.exited, { code: 0, signal: null });
    } finally {
      server.child.kill('SIGKILL');
      await upstream.close();
    }
  });

  for (const [first, second] of [['SIGTERM', 'SIGINT'], ['SIGINT', 'SIGTERM'], ['SIGTERM', 'SIGTERM']] as const) {
    it(`stops at once on a second signal during the drain (${first}, then ${second}), cutting streams with an in-stream error`, async () => {
      // Issue 14: SIGTERM then SIGINT was ignored (the drain went on), SIGINT then SIGTERM killed the process outright.
      const upstream = await startFakeUpstream();
      const home = mkdtempSync(join(tmpdir(), 'llmux-shutdown-'));
      writeConfig(home, upstream.url, 30_000);
      upstream.queue.push(stalled);
      const server = await startServer(home);
      try {
        const rest = await openStream(server.url, server.key());
        server.child.kill(first);
        await waitUntil(() => server.stderr().includes(`${first}: finishing in-flight requests`), `the drain after ${first}`);
        const sentAt = Date.now();
        server.child.kill(second);
        const text = await rest();
        assert.match(text, /llmux is shutting down; this answer was cut before it was complete/);
        assert.deepEqual(await server.exited, { code: 0, signal: null });
        // The drain would have lasted 30 s: stopped well before, the second signal stopped it.
        assert.ok(Date.now() - sentAt < 15_000, `stopped ${Date.now() - sentAt} ms after the second signal`);
        assert.match(server.stderr(), new RegExp(`${second} again: cutting the streams still open`));
      } finally {
        server.child.kill('SIGKILL');
        await upstream.close();
      }
    });
  }
});

/** Every process under `pid` (Linux /proc), deepest last. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch { /* gone */ }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

describe('npm start', () => {
  it('stops the server when the npm process (not its group) gets SIGTERM', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
    // Issue 14: npm died on SIGTERM and left the server running, orphaned.
    const home = mkdtempSync(join(tmpdir(), 'llmux-npm-start-'));
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const server = await startServer(home, [npm, 'start', '--silent', '--', '--port', '0', '--home', home], root);
    const below = descendants(server.child.pid!);
    try {
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      server.child.kill('SIGTERM');
      await server.exited;
      await waitUntil(() => fetch(`${server.url}/healthz`).then(() => false, () => true), 'the server refusing connections after npm was stopped', { timeoutMs: 5_000, pollMs: 100 });
    } finally {
      for (const pid of below.reverse()) {
        try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
      }
    }
  });
});
