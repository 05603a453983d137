import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream, fixture, respond } from '../helpers/fake-upstream.ts';
import { withLlmuxModel } from '../helpers/model-names.ts';

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
    await new Promise((r) => setTimeout(r, 150));
    await assert.rejects(fetch(`${url}/healthz`), 'new connections are refused while draining');
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
