/**
 * llmux as the benchmark runs it: the compiled gateway from `dist/` (what `npm start` ships, not
 * tsx), in front of the fake upstream, with one key whose limits never bind, and the default
 * request log (one JSON line per request on stderr; the runner sends stderr to a file, as a
 * service manager would).
 *
 * Models: `bench-chat` (OpenAI chat upstream), `bench-messages` (Anthropic messages upstream),
 * and `-slow` twins whose provider base URL starts with `/slow/` (the fake upstream's drip mode).
 *
 * Run as a process: `node llmux-server.js --dist DIR --upstream-port N [--port N] [--state-url URL]`
 * (the state URL puts keys, limits and usage on that server, as several processes would); prints
 * `{"port":N,"key":"sk-llmux-…"}` on stdout. SIGTERM/SIGINT close the gateway and exit 0, so a
 * `--cpu-prof` profile gets written.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { collectOnSignal, isEntryPoint } from './entry.ts';

/**
 * What this script uses of `dist/gateway/server.js`. Kept structural, so this file compiles on its own
 * (the runner builds it without src/); bench/run.ts checks it against src/gateway/server.ts's real types.
 */
export interface GatewayModule {
  createGateway(options: {
    config?: unknown;
    home?: string | undefined;
    env?: Record<string, string | undefined>;
  }): {
    listen(port?: number, host?: string): Promise<{ port: number; host: string; url: string }>;
    close(): Promise<void>;
    readonly keys: {
      create(options: { name?: string | undefined; tier?: 'basic' | 'pro' | 'enterprise' | undefined }): { key: string } | Promise<{ key: string }>;
    };
  };
}

/** The config the benchmark gives llmux for an upstream on 127.0.0.1:`upstreamPort` (and a state server). */
export function benchConfig(upstreamPort: number, stateUrl?: string): Record<string, unknown> {
  const base = `http://127.0.0.1:${upstreamPort}`;
  return {
    builtin_catalog: false,
    providers: {
      'bench-openai': { format: 'openai', base_url: `${base}/v1`, api_key: 'bench-upstream-openai-secret' },
      'bench-anthropic': { format: 'anthropic', base_url: `${base}/v1`, api_key: 'bench-upstream-anthropic-secret' },
      'bench-openai-slow': { format: 'openai', base_url: `${base}/slow/v1`, api_key: 'bench-upstream-openai-secret' },
      'bench-anthropic-slow': { format: 'anthropic', base_url: `${base}/slow/v1`, api_key: 'bench-upstream-anthropic-secret' },
    },
    // Context lengths as the providers give them: a 200 KB agent turn is about 51,000 tokens.
    models: [
      { id: 'bench-chat', provider: 'bench-openai', upstream_id: 'gpt-4o-2024-08-06', context_length: 128_000, max_output_tokens: 16384 },
      { id: 'bench-messages', provider: 'bench-anthropic', upstream_id: 'claude-sonnet-4-5-20250929', context_length: 200_000, max_output_tokens: 8192 },
      { id: 'bench-chat-slow', provider: 'bench-openai-slow', upstream_id: 'gpt-4o-2024-08-06', context_length: 128_000, max_output_tokens: 16384 },
      { id: 'bench-messages-slow', provider: 'bench-anthropic-slow', upstream_id: 'claude-sonnet-4-5-20250929', context_length: 200_000, max_output_tokens: 8192 },
    ],
    // Limits are measured (they run on every request) but must never refuse one.
    tiers: { enterprise: { rpm: 1_000_000_000, tpm: 1_000_000_000_000, concurrency: 1_000_000 } },
    // Slow streams are still open when the runner stops the process.
    limits: { shutdown_timeout_ms: 1_000 },
    ...(stateUrl === undefined ? {} : { state: { url: stateUrl } }),
  };
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({ options: { dist: { type: 'string' }, port: { type: 'string' }, 'upstream-port': { type: 'string' }, 'state-url': { type: 'string' } } });
  const upstreamPort = Number(values['upstream-port']);
  if (values.dist === undefined || !Number.isInteger(upstreamPort) || upstreamPort <= 0) {
    process.stderr.write('llmux-server: --dist DIR and --upstream-port N are required\n');
    process.exit(2);
  }
  const dist = resolve(values.dist);
  const { createGateway } = (await import(pathToFileURL(join(dist, 'gateway', 'server.js')).href)) as GatewayModule;
  // As `llmux serve` does: the feature modules register their routes before the gateway is made.
  const features = join(dist, 'features.js');
  if (existsSync(features)) await import(pathToFileURL(features).href);
  // As `llmux serve` does: V8's young generation held small unless requests are coming fast, and its
  // old generation given room while small (src/common/young-generation.ts, old-generation.ts), each
  // where the dist has it.
  for (const [file, hold] of [['young-generation.js', 'holdYoungGeneration'], ['old-generation.js', 'roomyOldGeneration']] as const) {
    const path = join(dist, 'common', file);
    if (existsSync(path)) ((await import(pathToFileURL(path).href)) as Record<string, () => () => void>)[hold]?.();
  }
  const home = mkdtempSync(join(tmpdir(), 'llmux-bench-home-'));
  const gateway = createGateway({ config: benchConfig(upstreamPort, values['state-url']), home, env: {} });
  const { key } = await gateway.keys.create({ name: 'bench', tier: 'enterprise' });
  const { port } = await gateway.listen(values.port === undefined ? 0 : Number(values.port), '127.0.0.1');
  process.stdout.write(`${JSON.stringify({ port, key })}\n`);
  const stop = (): void => {
    const done = (code: number) => (): void => {
      rmSync(home, { recursive: true, force: true });
      process.exit(code);
    };
    gateway.close().then(done(0), done(1));
  };
  process.once('SIGTERM', stop);
  collectOnSignal();
  process.once('SIGINT', stop);
}
