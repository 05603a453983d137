/**
 * Real `llmux serve` processes sharing one state server, for the scale-out tests (issue 16): each
 * with its own LLMUX_HOME and config, started in parallel, their stderr kept (log lines), stopped
 * (or killed) by the test. And a fake upstream whose `hold-*` models stream until the test lets
 * them finish, so a request can hold its concurrency slot as long as a test needs.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream } from './fake-upstream.ts';
import type { FakeUpstream, Responder } from './fake-upstream.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const START_TIMEOUT_MS = 30_000;

export interface Serving {
  child: ChildProcess;
  url: string;
  home: string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Log lines (JSON) that are messages, not requests. */
  messages(): string[];
  exited: Promise<unknown>;
  /** SIGTERM, then SIGKILL after a while; removes the home. */
  stop(): Promise<void>;
}

/** Starts `llmux serve --port 0` with `config` in a home of its own, pointed at `stateUrl`. */
export function serve(stateUrl: string, config: Record<string, unknown>): Promise<Serving> {
  const home = mkdtempSync(join(tmpdir(), 'llmux-scale-'));
  writeFileSync(join(home, 'config.json'), JSON.stringify(config));
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LLMUX_CONFIG: '', LLMUX_STATE_URL: stateUrl, LLMUX_HOME: home },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(home, { recursive: true, force: true });
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`llmux serve did not listen within ${START_TIMEOUT_MS} ms:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /^llmux listening on (\S+)\n/.exec(out)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      resolve({
        child,
        url,
        home,
        stderr: () => stderr,
        messages: () => stderr.split('\n').filter((line) => line.includes('"level"')),
        exited,
        stop,
      });
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`llmux serve ended before listening:\n${stderr}`));
    });
  });
}

/** A fake upstream whose `hold-*` models stream a first chunk and wait for `releaseAll()`. */
export interface HoldingUpstream {
  upstream: FakeUpstream;
  /** Streams being held now. */
  held(): number;
  /** Ends every held stream. */
  releaseAll(): void;
  /** The usage the `usage-*` models report in their JSON answers. */
  usage: { prompt_tokens: number; completion_tokens: number };
  close(): Promise<void>;
}

function chunk(model: string, content: string): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
}

export async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const upstream = await startFakeUpstream();
  const holding = new Set<ServerResponse>();
  const usage = { prompt_tokens: 10, completion_tokens: 5 };
  const fallback = upstream.fallback;
  const hold: Responder = (_req, res, seen) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk(String(seen.body['model']), 'held'));
    holding.add(res);
    res.once('close', () => holding.delete(res));
  };
  upstream.fallback = (req, res, seen) => {
    const model = String(seen.body['model'] ?? '');
    if (model.startsWith('hold')) return hold(req, res, seen);
    if (model.startsWith('usage')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-usage', object: 'chat.completion', created: 1, model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok', refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }));
      return undefined;
    }
    return fallback(req, res, seen);
  };
  const releaseAll = (): void => {
    for (const res of holding) {
      res.write(chunk('held', ' done'));
      res.end('data: [DONE]\n\n');
    }
    holding.clear();
  };
  return {
    upstream,
    held: () => holding.size,
    releaseAll,
    usage,
    async close() {
      releaseAll();
      await upstream.close();
    },
  };
}

/** The config every process gets: the holding upstream's models and the state settings. */
export function scaleOutConfig(upstreamUrl: string, state: Record<string, unknown>): Record<string, unknown> {
  return {
    providers: { fake: { format: 'openai', base_url: `${upstreamUrl}/v1`, api_key: 'upstream-secret' } },
    models: [
      { id: 'hold-model', provider: 'fake', upstream_id: 'hold-model', max_output_tokens: 100 },
      { id: 'usage-model', provider: 'fake', upstream_id: 'usage-model', max_output_tokens: 100 },
    ],
    retry: { attempts: 1 },
    limits: { shutdown_timeout_ms: 1000 },
    state,
  };
}
