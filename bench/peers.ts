/**
 * Peers in the same run (issue 26: `npm run bench -- --peers`): other gateways run on llmux's load
 * scenarios, against the same fake upstream, beside the same bare proxy, so that bench/RESULTS.md
 * shows where llmux stands and anyone can reproduce it.
 *
 * Each peer is installed with npm into a scratch folder (bench/.tmp/peers/<id>, never a
 * dependency of llmux) at a pinned version, configured there (its home is that folder), and
 * started on a free port. A peer that cannot be installed (offline, a package gone from the
 * registry) or started, or that does not answer a scenario's request with a 200, is skipped with
 * the reason, and the run goes on.
 *
 * - Portkey's AI gateway: passes chat and messages through to a provider whose base URL a header
 *   names (`x-portkey-custom-host`); it does not translate messages to a chat upstream.
 * - claude-code-router: takes messages; translates them for a chat provider, or passes them to a
 *   messages provider through its `Anthropic` transformer.
 * - copilot-api: GitHub Copilot's API as chat and messages; its upstream URLs are GitHub's, so a
 *   shim loaded before it (`--import`) answers its token, user and model look-ups and sends its
 *   chat calls to the fake upstream. Nothing of the peer itself is changed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baselineOf } from './measure.ts';
import type { LoadResult, LoadScenario } from './measure.ts';

/** How one scenario's request is sent to a peer. */
export interface PeerRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** How a peer is started. */
export interface PeerLaunch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** A stdout line that says it listens (peers print no port of their own). */
  ready: RegExp;
}

export interface Peer {
  id: string;
  label: string;
  /** What npm installs, pinned. */
  packages: string[];
  /** The scenarios it runs, by id (bench/measure.ts), and its request for each. */
  requests: Readonly<Record<string, (scenario: LoadScenario, upstreamPort: number) => PeerRequest>>;
  /** Writes what it reads into `dir` (its home there) and says how it is started on `port`. */
  launch(dir: string, port: number, upstreamPort: number): PeerLaunch;
}

/** A model name the scenario's body asks for, replaced: the peers name models their own way. */
function withModel(body: string, model: string): string {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  parsed['model'] = model;
  return JSON.stringify(parsed);
}

const ANTHROPIC_HEADERS = { 'content-type': 'application/json', 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' };
const OPENAI_HEADERS = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };

function portkeyRequest(provider: 'openai' | 'anthropic'): (scenario: LoadScenario, upstreamPort: number) => PeerRequest {
  return (scenario, upstreamPort) => ({
    path: scenario.path,
    headers: { ...(provider === 'openai' ? OPENAI_HEADERS : ANTHROPIC_HEADERS), 'x-portkey-provider': provider, 'x-portkey-custom-host': `http://127.0.0.1:${upstreamPort}/v1` },
    body: scenario.body,
  });
}

function messagesRequest(model: string): (scenario: LoadScenario) => PeerRequest {
  return (scenario) => ({ path: '/v1/messages', headers: ANTHROPIC_HEADERS, body: withModel(scenario.body, model) });
}

function chatRequest(model: string): (scenario: LoadScenario) => PeerRequest {
  return (scenario) => ({ path: '/v1/chat/completions', headers: OPENAI_HEADERS, body: withModel(scenario.body, model) });
}

const portkey: Peer = {
  id: 'portkey',
  label: "Portkey's AI gateway 1.15.2",
  packages: ['@portkey-ai/gateway@1.15.2'],
  requests: {
    'chat-json': portkeyRequest('openai'),
    'messages-json': portkeyRequest('anthropic'),
    'chat-stream': portkeyRequest('openai'),
    'messages-stream': portkeyRequest('anthropic'),
    'agent-messages': portkeyRequest('anthropic'),
  },
  launch: (dir, port) => ({
    command: process.execPath,
    args: [join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js'), `--port=${port}`, '--headless'],
    env: { ...process.env, NODE_ENV: 'production', HOME: dir },
    ready: /Ready for connections/,
  }),
};

/** claude-code-router's config: one provider, translated (chat) or passed to (messages). */
function ccrConfig(port: number, upstreamPort: number): unknown {
  return {
    PORT: port,
    HOST: '127.0.0.1',
    LOG: false,
    APIKEY: '',
    Providers: [
      { name: 'chat', api_base_url: `http://127.0.0.1:${upstreamPort}/v1/chat/completions`, api_key: 'sk-bench', models: ['bench-chat'] },
      { name: 'messages', api_base_url: `http://127.0.0.1:${upstreamPort}/v1/messages`, api_key: 'sk-bench', models: ['bench-messages'], transformer: { use: ['Anthropic'] } },
    ],
    Router: { default: 'chat,bench-chat' },
  };
}

const claudeCodeRouter: Peer = {
  id: 'claude-code-router',
  label: 'claude-code-router 2.0.0',
  // 3.1.1 depends on a package the registry no longer has.
  packages: ['@musistudio/claude-code-router@2.0.0'],
  requests: {
    // `provider,model` picks the provider per request.
    'messages-json': messagesRequest('messages,bench-messages'),
    'messages-stream': messagesRequest('messages,bench-messages'),
    'messages-from-chat': messagesRequest('chat,bench-chat'),
    'agent-messages': messagesRequest('messages,bench-messages'),
    'agent-translated': messagesRequest('chat,bench-chat'),
  },
  launch(dir, port, upstreamPort) {
    const home = join(dir, '.claude-code-router');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.json'), JSON.stringify(ccrConfig(port, upstreamPort)));
    // A pid file left by an earlier run makes `start` say "already running" and exit.
    rmSync(join(home, '.claude-code-router.pid'), { force: true });
    return {
      command: process.execPath,
      args: [join(dir, 'node_modules', '@musistudio', 'claude-code-router', 'dist', 'cli.js'), 'start'],
      env: { ...process.env, HOME: dir },
      ready: /Loaded JSON config/,
    };
  },
};

/**
 * The shim copilot-api is started with: GitHub's token, user and model look-ups answered in
 * place, its Copilot calls sent to the fake upstream (whose chat route takes any prefix).
 */
function copilotShim(upstreamPort: number): string {
  const model = {
    id: 'bench-chat', name: 'bench-chat', object: 'model', vendor: 'bench', version: '1', preview: false, model_picker_enabled: true,
    capabilities: { family: 'gpt-4o', object: 'model_capabilities', type: 'chat', tokenizer: 'o200k_base', limits: { max_context_window_tokens: 200000, max_output_tokens: 64000, max_prompt_tokens: 200000 }, supports: { tool_calls: true, parallel_tool_calls: true, streaming: true } },
  };
  return `const real = globalThis.fetch;
const json = (value) => Promise.resolve(new Response(JSON.stringify(value), { status: 200, headers: { 'content-type': 'application/json' } }));
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (url.startsWith('https://api.github.com/copilot_internal/v2/token')) return json({ token: 'bench', expires_at: Math.floor(Date.now() / 1000) + 86400, refresh_in: 80000 });
  if (url.startsWith('https://api.github.com/copilot_internal/user')) return json({ copilot_plan: 'individual', quota_snapshots: {} });
  if (url.startsWith('https://api.github.com/user')) return json({ login: 'bench' });
  if (url.startsWith('https://aur.archlinux.org/')) return Promise.resolve(new Response('pkgver=1.104.3'));
  if (url.startsWith('https://api.githubcopilot.com/models')) return json({ object: 'list', data: [${JSON.stringify(model)}] });
  if (url.startsWith('https://api.githubcopilot.com/')) return real('http://127.0.0.1:${upstreamPort}/v1' + url.slice('https://api.githubcopilot.com'.length), init);
  return real(input, init);
};
`;
}

const copilotApi: Peer = {
  id: 'copilot-api',
  label: 'copilot-api 0.7.0',
  packages: ['copilot-api@0.7.0'],
  requests: {
    'chat-json': chatRequest('bench-chat'),
    'chat-stream': chatRequest('bench-chat'),
    'messages-from-chat': messagesRequest('bench-chat'),
    'agent-translated': messagesRequest('bench-chat'),
  },
  launch(dir, port, upstreamPort) {
    const shim = join(dir, 'bench-shim.mjs');
    writeFileSync(shim, copilotShim(upstreamPort));
    return {
      command: process.execPath,
      args: ['--import', shim, join(dir, 'node_modules', 'copilot-api', 'dist', 'main.js'), 'start', '--port', String(port), '--github-token', 'bench'],
      env: { ...process.env, HOME: dir, NODE_ENV: 'production' },
      ready: /Usage Viewer|Available models/,
    };
  },
};

export const PEERS: readonly Peer[] = [portkey, claudeCodeRouter, copilotApi];

/** A peer installed into its folder under `root`, or why it is not. */
export function installPeer(peer: Peer, root: string): { dir: string } | { skipped: string } {
  const dir = join(root, peer.id);
  const marker = join(dir, 'installed.json');
  const wanted = JSON.stringify(peer.packages);
  if (existsSync(marker) && readFileSync(marker, 'utf8') === wanted) return { dir };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `llmux-bench-peer-${peer.id}`, private: true }));
  // Its install scripts are not run: what the peers need at run time is in their packages.
  const out = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-save', ...peer.packages], { cwd: dir, encoding: 'utf8', timeout: 300_000 });
  if (out.status !== 0) {
    const why = `${out.stderr ?? ''}${out.stdout ?? ''}`.split('\n').find((line) => /error/i.test(line)) ?? `npm exited with ${out.status}`;
    return { skipped: `npm install ${peer.packages.join(' ')} failed: ${why.trim().slice(0, 200)}` };
  }
  writeFileSync(marker, wanted);
  return { dir };
}

/** One peer's numbers on one scenario, beside the bare proxy's in the same rounds. */
export interface PeerResult {
  peer: string;
  scenario: string;
  bare: LoadResult;
  result: LoadResult;
}

/** The RESULTS.md section: each peer's CPU per request and p99 against the bare proxy, with llmux's from the same run. */
export function renderPeers(scenarios: readonly LoadScenario[], peers: readonly PeerResult[], skipped: readonly string[], llmux: readonly LoadResult[]): string {
  const f = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const out = ['## Peers in the same run (`--peers`)', ''];
  out.push('Other gateways on the same scenarios, against the same fake upstream, each beside a fresh bare proxy in alternating rounds (bench/peers.ts says how each is installed, configured and sent its requests). × bare: CPU per request and p99 over the bare proxy\'s in the same rounds; llmux\'s ratio is from its own rounds above.', '');
  out.push('| scenario | gateway | CPU µs/req | CPU × bare | p99 ms | p99 × bare | req/s | errors |', '|---|---|---:|---:|---:|---:|---:|---:|');
  for (const s of scenarios) {
    const mine = llmux.find((r) => r.proxy === 'llmux' && r.scenario === s.id);
    const bareOfMine = baselineOf(s, llmux);
    const rows = peers.filter((p) => p.scenario === s.id);
    if (rows.length === 0) continue;
    if (mine !== undefined && bareOfMine !== undefined) {
      out.push(`| ${s.label} | llmux | ${f(mine.cpuUsPerRequest, 0)} | ${f(mine.cpuUsPerRequest / bareOfMine.cpuUsPerRequest, 2)}× | ${f(mine.p99Ms, 2)} | ${f(mine.p99Ms / bareOfMine.p99Ms, 2)}× | ${f(mine.rps, 0)} | ${mine.errors} |`);
    }
    for (const row of rows) {
      const { result, bare } = row;
      out.push(`| ${s.label} | ${row.peer} | ${f(result.cpuUsPerRequest, 0)} | ${f(result.cpuUsPerRequest / bare.cpuUsPerRequest, 2)}× | ${f(result.p99Ms, 2)} | ${f(result.p99Ms / bare.p99Ms, 2)}× | ${f(result.rps, 0)} | ${result.errors} |`);
    }
  }
  if (skipped.length > 0) out.push('', 'Not measured:', '', ...skipped.map((line) => `- ${line}`));
  out.push('');
  return out.join('\n');
}
