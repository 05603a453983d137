/**
 * The real coding-agent clients, run the way a user runs them but with nothing to reach but the
 * address they are given: Codex CLI (`codex exec`, OpenAI Responses API), Claude Code (`claude
 * -p`, and an interactive session driven through tmux; Anthropic Messages API), Gemini CLI
 * (`gemini -p`, Google's generateContent; ./gemini-cli.ts runs it) and OpenCode (`opencode run`,
 * through the AI SDK's providers of each format; ./opencode.ts runs it).
 *
 * The binaries: the versions pinned in test/clients/pinned/package-lock.json, installed on first
 * use with `npm ci --ignore-scripts` into a cache folder (`$LLMUX_CLIENTS_CACHE`, else
 * `$XDG_CACHE_HOME/llmux/test-clients` or `~/.cache/llmux/test-clients`, one sub-folder per lock
 * file). They are not devDependencies: together they are 1.3 GB installed (about 25 s here),
 * many times the rest of node_modules, and only this slow suite needs them.
 * `--ignore-scripts` because Claude Code's postinstall only copies its native binary over a stub,
 * and npm 11 warns about (and may later refuse) unapproved install scripts: the helpers run the
 * platform package's binary directly instead (OpenCode's postinstall does the same). `LLMUX_CODEX_BIN`
 * / `LLMUX_CLAUDE_BIN` / `LLMUX_GEMINI_BIN` / `LLMUX_OPENCODE_BIN` override.
 *
 * Every run gets a fresh temporary HOME (and CODEX_HOME), removed afterwards; an environment
 * built from scratch (PATH and what each client needs, nothing inherited); the settings that
 * stop update checks, telemetry, plugin and marketplace downloads; and a proxy (default: a closed
 * port) for anything that still tries to leave. Runs are bounded: on timeout the whole process
 * group (tmux server) is killed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { isRecord } from '../../src/common/json.ts';

const PINNED = join(import.meta.dirname, '..', 'clients', 'pinned');
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const OUTPUT_LIMIT_BYTES = 32 * 1024 * 1024;
/** A port nothing listens on: the default proxy, so stray traffic fails fast instead of leaving. */
const NOWHERE = 'http://127.0.0.1:9';

export interface ClientResult {
  /** The exit code; null when killed (then `signal` says how) or when the session never ended. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Whether the time limit ended the run. */
  timedOut: boolean;
  durationMs: number;
}

/** A command to start a client: the program and the arguments before the client's own. */
export interface ClientCommand {
  command: string;
  args: string[];
  version: string;
}

export interface ClientBinaries {
  codex: ClientCommand;
  claude: ClientCommand;
  /** Gemini CLI's bundle, run by this Node (its `engines` asks for Node 20 or newer). */
  gemini: ClientCommand;
  /** OpenCode's native binary, from its platform package. */
  opencode: ClientCommand;
}

let cached: ClientBinaries | Error | undefined;

/**
 * The pinned clients, installed into the cache folder on first use (synchronously: it runs when a
 * test file loads, once per lock file and machine). Throws with npm's output when that fails.
 */
export function clientBinaries(): ClientBinaries {
  if (cached === undefined) {
    try {
      cached = resolveBinaries();
    } catch (err) {
      cached = err instanceof Error ? err : new Error(String(err));
    }
  }
  if (cached instanceof Error) throw cached;
  return cached;
}

/**
 * Whether the client suite should be skipped: a message when the clients cannot be installed and
 * this is not CI; false otherwise. In CI (env `CI` set) it never skips, so a failed install fails.
 */
export function clientsSkip(): string | false {
  try {
    clientBinaries();
    return false;
  } catch (err) {
    if (isCi()) return false;
    return `the pinned Codex / Claude Code / Gemini CLI / OpenCode clients could not be installed (${(err as Error).message.split('\n')[0] ?? ''}); client tests skipped outside CI`;
  }
}

/** Like `clientsSkip`, for tests that also need tmux. */
export function tmuxSkip(): string | false {
  const clients = clientsSkip();
  if (clients !== false) return clients;
  if (spawnSync('tmux', ['-V'], { encoding: 'utf8', timeout: 10_000 }).status === 0) return false;
  if (isCi()) return false;
  return 'tmux is not installed (apt-get install -y tmux); the interactive Claude Code test is skipped outside CI';
}

function isCi(): boolean {
  return setting('CI') !== undefined;
}

function cacheRoot(): string {
  return setting('LLMUX_CLIENTS_CACHE') ?? join(setting('XDG_CACHE_HOME') ?? join(homedir(), '.cache'), 'llmux', 'test-clients');
}

function setting(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

function resolveBinaries(): ClientBinaries {
  const codexBin = setting('LLMUX_CODEX_BIN');
  const claudeBin = setting('LLMUX_CLAUDE_BIN');
  const geminiBin = setting('LLMUX_GEMINI_BIN');
  const opencodeBin = setting('LLMUX_OPENCODE_BIN');
  const modules = codexBin === undefined || claudeBin === undefined || geminiBin === undefined || opencodeBin === undefined ? join(installPinned(), 'node_modules') : '';
  return {
    // The npm wrapper, run by this Node, as an npm install runs it: it finds the platform
    // package's binary and tells it which package it came from (CODEX_MANAGED_*).
    codex: codexBin !== undefined
      ? { command: codexBin, args: [], version: probeVersion(codexBin) }
      : { command: process.execPath, args: [join(modules, '@openai', 'codex', 'bin', 'codex.js')], version: packageVersion(join(modules, '@openai', 'codex')) },
    claude: claudeBin !== undefined
      ? { command: claudeBin, args: [], version: probeVersion(claudeBin) }
      : { command: claudeNativeBinary(modules), args: [], version: packageVersion(join(modules, '@anthropic-ai', 'claude-code')) },
    gemini: geminiBin !== undefined
      ? { command: geminiBin, args: [], version: probeVersion(geminiBin) }
      : { command: process.execPath, args: [join(modules, '@google', 'gemini-cli', 'bundle', 'gemini.js')], version: packageVersion(join(modules, '@google', 'gemini-cli')) },
    opencode: opencodeBin !== undefined
      ? { command: opencodeBin, args: [], version: probeVersion(opencodeBin) }
      : opencodeNative(modules),
  };
}

/** The cache folder holding the pinned clients, installing them when missing. */
function installPinned(): string {
  return installPinnedFolder(PINNED);
}

/**
 * The cache folder holding the install of a pinned `package.json` + `package-lock.json` folder
 * (one sub-folder per lock), made with `npm ci --ignore-scripts` when missing. Throws with npm's
 * output when that fails. The client SDKs of test/clients/sdks/ are installed this way too.
 */
export function installPinnedFolder(pinned: string): string {
  const lock = readFileSync(join(pinned, 'package-lock.json'));
  const target = join(cacheRoot(), createHash('sha256').update(lock).digest('hex').slice(0, 16));
  if (existsSync(join(target, 'node_modules', '.package-lock.json'))) return target;
  mkdirSync(cacheRoot(), { recursive: true });
  const staging = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(staging);
  try {
    cpSync(join(pinned, 'package.json'), join(staging, 'package.json'));
    cpSync(join(pinned, 'package-lock.json'), join(staging, 'package-lock.json'));
    const result = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: staging, env: npmEnv(), encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS,
    });
    if (result.status !== 0) {
      throw new Error(`npm ci of ${pinned} failed (${result.error?.message ?? `exit ${String(result.status)}`}):\n${result.stderr}`);
    }
    try {
      renameSync(staging, target);
    } catch (err) {
      // Another process finished the same install first; its copy is as good as ours.
      if (!existsSync(join(target, 'node_modules', '.package-lock.json'))) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return target;
}

/** SDKs loaded from the pinned folder test/clients/sdks/, or why they could not be. */
export interface PinnedSdks<T> {
  /** The loaded SDKs; throws the install's error when they could not be loaded. */
  get(): T;
  /** Why the tests using them are skipped: outside CI, when the install fails; false otherwise (in CI a failed install fails). */
  skip: string | false;
}

/**
 * The client SDKs pinned in test/clients/sdks/ (or in another pinned folder, `pinned`), installed
 * on first use into the clients cache (not node_modules), each loaded by `load` with a `require`
 * resolving from that folder.
 */
export function pinnedSdks<T>(load: (require: NodeJS.Require, folder: string) => T, pinned = join(import.meta.dirname, '..', 'clients', 'sdks')): PinnedSdks<T> {
  let loaded: T | Error;
  try {
    const folder = installPinnedFolder(pinned);
    loaded = load(createRequire(join(folder, 'package.json')), folder);
  } catch (err) {
    loaded = err instanceof Error ? err : new Error(String(err));
  }
  const skip = loaded instanceof Error && !isCi() ? `the pinned SDKs of ${basename(pinned)} could not be installed (${loaded.message.split('\n')[0] ?? ''})` : false;
  return {
    get() {
      if (loaded instanceof Error) throw loaded;
      return loaded;
    },
    skip,
  };
}

/** The environment for npm: without the test runner's loader, coverage and `npm_*` config. */
function npmEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('npm_') || name === 'NODE_OPTIONS' || name === 'NODE_V8_COVERAGE') continue;
    env[name] = value;
  }
  return env;
}

/** Claude Code's native binary from its platform package (glibc first, then musl). */
function claudeNativeBinary(modules: string): string {
  const platform = `${process.platform}-${process.arch}`;
  for (const name of [platform, `${platform}-musl`]) {
    const binary = join(modules, '@anthropic-ai', `claude-code-${name}`, 'claude');
    if (existsSync(binary)) return binary;
  }
  throw new Error(`no Claude Code binary for ${platform} in ${modules}`);
}

/**
 * OpenCode's native binary from its platform package (pinned itself, as its `opencode-ai` wrapper's
 * postinstall would pick it: test/clients/pinned/package.json says why): on x64 the build for CPUs
 * with AVX2 when this one has it, else the `-baseline` build, as the wrapper picks; glibc first.
 */
function opencodeNative(modules: string): ClientCommand {
  const platform = `${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  const builds = process.arch === 'x64' && !hasAvx2() ? [`${platform}-baseline`, `${platform}-baseline-musl`] : [platform, `${platform}-musl`];
  for (const name of builds) {
    const dir = join(modules, `opencode-${name}`);
    if (existsSync(join(dir, 'bin', 'opencode'))) return { command: join(dir, 'bin', 'opencode'), args: [], version: packageVersion(dir) };
  }
  throw new Error(`no OpenCode binary for ${platform} in ${modules} (test/clients/pinned/ pins the Linux x64 build)`);
}

/** Whether this CPU has AVX2 (Linux's /proc/cpuinfo; elsewhere assumed, as x64 Macs since 2013 have it). */
function hasAvx2(): boolean {
  if (process.platform !== 'linux') return true;
  try {
    return /^flags\s*:.*\bavx2\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return false;
  }
}

function packageVersion(dir: string): string {
  const parsed: unknown = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return isRecord(parsed) && typeof parsed['version'] === 'string' ? parsed['version'] : 'unknown';
}

function probeVersion(binary: string): string {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return /\d+\.\d+\.\d+/.exec(result.stdout)?.[0] ?? 'unknown';
}

// ---- running a process, bounded ------------------------------------------------------------

export interface BoundedOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** When it aborts (a test's `t.signal`: the test ended or timed out), the group is killed. */
  signal?: AbortSignal;
}

/** Runs a command in its own process group; on timeout the group is killed. Never rejects on exit status. */
export function runBounded(command: string, args: string[], options: BoundedOptions): Promise<ClientResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let bytes = 0;
    let timedOut = false;
    const collect = (into: Buffer[]) => (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes <= OUTPUT_LIMIT_BYTES) into.push(chunk);
    };
    child.stdout.on('data', collect(stdout));
    child.stderr.on('data', collect(stderr));
    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    options.signal?.addEventListener('abort', killGroup);
    if (options.signal?.aborted === true) killGroup();
    child.once('error', (err) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', killGroup);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', killGroup);
      // A client's own children (a shell it ran, a helper) must not outlive the run.
      killGroup();
      resolve({
        exitCode: code,
        signal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        timedOut,
        durationMs: Math.round(performance.now() - started),
      });
    });
  });
}

/** Proxy variables that send every non-local connection to `proxyUrl`. */
export function proxyEnv(proxyUrl: string | undefined): Record<string, string> {
  const url = proxyUrl ?? NOWHERE;
  return {
    HTTPS_PROXY: url, HTTP_PROXY: url, ALL_PROXY: url, https_proxy: url, http_proxy: url, all_proxy: url,
    NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
  };
}

export function baseEnv(home: string): Record<string, string> {
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', TMPDIR: tmpdir() };
}

// ---- Codex ---------------------------------------------------------------------------------

type TomlValue = string | number | boolean;

export interface CodexRunOptions {
  /** The provider's `base_url`, as a user writes it: the gateway address ending in `/v1`. */
  baseUrl: string;
  apiKey: string;
  /** The `model`; omit it to see what Codex sends for its own default. */
  model?: string;
  prompt: string;
  /** The work folder (Codex's workspace root). */
  cwd: string;
  timeoutMs: number;
  /** Default `danger-full-access`: `workspace-write` works here (root, bundled bubblewrap) but
   * needs unprivileged user namespaces, which CI containers often lack. */
  sandbox?: 'read-only' | 'workspace-write' | 'danger-full-access';
  /** Extra top-level config.toml keys. */
  config?: Record<string, TomlValue>;
  /** Extra keys of the `[model_providers.llmux]` table (e.g. `supports_websockets`, `stream_max_retries`). */
  provider?: Record<string, TomlValue>;
  /** Where stray traffic goes (e.g. the recording upstream, to record it); default a closed port. */
  proxyUrl?: string;
  env?: Record<string, string>;
}

/**
 * The config.toml a user writes to point Codex at llmux, plus what keeps Codex offline: plugins
 * off (else it clones from github.com and calls api.github.com / chatgpt.com), analytics off
 * (ab.chatgpt.com), feedback and the start-up update check off.
 */
export function codexConfig(options: Pick<CodexRunOptions, 'baseUrl' | 'model' | 'sandbox' | 'config' | 'provider'>): string {
  const top: Record<string, TomlValue> = {
    ...(options.model === undefined ? {} : { model: options.model }),
    model_provider: 'llmux',
    approval_policy: 'never',
    sandbox_mode: options.sandbox ?? 'danger-full-access',
    check_for_update_on_startup: false,
    ...options.config,
  };
  const provider: Record<string, TomlValue> = {
    name: 'llmux',
    base_url: options.baseUrl,
    wire_api: 'responses',
    env_key: 'LLMUX_API_KEY',
    ...options.provider,
  };
  return [
    toml(top),
    '[analytics]\nenabled = false\n',
    '[feedback]\nenabled = false\n',
    '[features]\nplugins = false\n',
    `[model_providers.llmux]\n${toml(provider)}`,
  ].join('\n');
}

function toml(table: Record<string, TomlValue>): string {
  // JSON strings are valid TOML basic strings for everything these configs hold.
  return Object.entries(table).map(([key, value]) => `${key} = ${typeof value === 'string' ? JSON.stringify(value) : String(value)}\n`).join('');
}

/**
 * `codex exec --skip-git-repo-check PROMPT` in `cwd` with a fresh CODEX_HOME. Codex prints the
 * final message on stdout and its progress on stderr.
 */
export async function runCodex(options: CodexRunOptions): Promise<ClientResult> {
  const codex = clientBinaries().codex;
  const home = mkdtempSync(join(tmpdir(), 'llmux-codex-'));
  try {
    const codexHome = join(home, '.codex');
    mkdirSync(codexHome);
    writeFileSync(join(codexHome, 'config.toml'), codexConfig(options));
    const env = {
      ...baseEnv(home),
      CODEX_HOME: codexHome,
      LLMUX_API_KEY: options.apiKey,
      ...proxyEnv(options.proxyUrl),
      ...options.env,
    };
    return await runBounded(codex.command, [...codex.args, 'exec', '--skip-git-repo-check', '--color', 'never', options.prompt], {
      cwd: options.cwd, env, timeoutMs: options.timeoutMs,
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

// ---- Claude Code ---------------------------------------------------------------------------

export interface ClaudeOptions {
  /** `ANTHROPIC_BASE_URL`, as a user writes it: the gateway address without `/v1`. */
  baseUrl: string;
  apiKey: string;
  /** `x-api-key` (`ANTHROPIC_API_KEY`, the default) or `Authorization: Bearer` (`ANTHROPIC_AUTH_TOKEN`). */
  auth?: 'x-api-key' | 'bearer';
  /** `--model`; omit it to see what Claude Code sends for its own default. */
  model?: string;
  /** `ANTHROPIC_SMALL_FAST_MODEL` and `ANTHROPIC_DEFAULT_HAIKU_MODEL`. */
  smallFastModel?: string;
  cwd: string;
  timeoutMs: number;
  /** `--allowedTools`, e.g. `['Bash']` so a Bash call runs without asking. */
  allowedTools?: string[];
  proxyUrl?: string;
  env?: Record<string, string>;
}

export interface ClaudePrintOptions extends ClaudeOptions {
  prompt: string;
  /** `--include-partial-messages`: the stream-json output carries each stream event as it comes. */
  partial: boolean;
}

/**
 * The environment that keeps Claude Code to the given address: telemetry, error reporting,
 * auto-update and every non-essential call off (else it calls api.anthropic.com at start), and
 * no official-marketplace install (else an interactive session fetches from downloads.claude.ai
 * and github.com).
 */
export function claudeEnv(options: ClaudeOptions, home: string): Record<string, string> {
  return {
    ...baseEnv(home),
    ANTHROPIC_BASE_URL: options.baseUrl,
    ...(options.auth === 'bearer' ? { ANTHROPIC_AUTH_TOKEN: options.apiKey } : { ANTHROPIC_API_KEY: options.apiKey }),
    ...(options.smallFastModel === undefined ? {} : { ANTHROPIC_SMALL_FAST_MODEL: options.smallFastModel, ANTHROPIC_DEFAULT_HAIKU_MODEL: options.smallFastModel }),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
    ...proxyEnv(options.proxyUrl),
    ...options.env,
  };
}

/**
 * `~/.claude.json` as after a finished first run: onboarding done (else the welcome flow checks
 * api.anthropic.com and stops there), the key approved (Claude Code keeps its last 20
 * characters) and the work folder trusted.
 */
function seedClaudeHome(home: string, apiKey: string, cwd: string): void {
  writeFileSync(join(home, '.claude.json'), JSON.stringify({
    hasCompletedOnboarding: true,
    customApiKeyResponses: { approved: [apiKey.slice(-20)], rejected: [] },
    projects: { [cwd]: { hasTrustDialogAccepted: true, allowedTools: [] } },
  }, null, 2));
}

function claudeArgs(options: ClaudeOptions): string[] {
  return [
    ...(options.model === undefined ? [] : ['--model', options.model]),
    ...(options.allowedTools === undefined ? [] : ['--allowedTools', options.allowedTools.join(',')]),
  ];
}

/**
 * `claude -p PROMPT --output-format stream-json --verbose [--include-partial-messages]`: stdout is
 * one JSON object a line, ending with a `{"type":"result"}` line.
 */
export async function runClaude(options: ClaudePrintOptions): Promise<ClientResult> {
  const claude = clientBinaries().claude;
  const home = mkdtempSync(join(tmpdir(), 'llmux-claude-'));
  try {
    seedClaudeHome(home, options.apiKey, options.cwd);
    const args = [
      ...claude.args, '-p', options.prompt, '--output-format', 'stream-json', '--verbose',
      ...(options.partial ? ['--include-partial-messages'] : []),
      ...claudeArgs(options),
    ];
    return await runBounded(claude.command, args, { cwd: options.cwd, env: claudeEnv(options, home), timeoutMs: options.timeoutMs });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export interface InteractiveStep {
  /** What to type; Enter follows once it shows on screen. */
  send: string;
  /** The step is done when the screen shows this. */
  waitFor: string | RegExp;
}

export interface ClaudeInteractiveOptions extends ClaudeOptions {
  steps: InteractiveStep[];
  /** Pane size; wide enough that answers do not wrap. */
  columns?: number;
  rows?: number;
}

export interface InteractiveResult extends ClientResult {
  /** The screen when each step was done, in order. */
  screens: string[];
}

const POLL_MS = 100;

/** The input box's prompt marker: the session is ready for typing once it is drawn. */
const READY = '❯';

/**
 * An interactive Claude Code session in a private tmux server (its own socket, no user config):
 * waits for the input box, types each step and waits for its answer, then types `/exit` and
 * waits for the process to end. stdout is each step's screen then the pane's history after the
 * exit; stderr is tmux's.
 */
export async function runClaudeInteractive(options: ClaudeInteractiveOptions): Promise<InteractiveResult> {
  const claude = clientBinaries().claude;
  const started = performance.now();
  const deadline = started + options.timeoutMs;
  const home = mkdtempSync(join(tmpdir(), 'llmux-claude-tmux-'));
  const socket = join(home, 'tmux.sock');
  const conf = join(home, 'tmux.conf');
  const statusFile = join(home, 'exit-status');
  // remain-on-exit keeps the pane, and what Claude Code printed on exit, after it quits.
  writeFileSync(conf, 'set -g remain-on-exit on\nset -g history-limit 50000\n');
  const env = { ...claudeEnv(options, home), TERM: 'xterm-256color', LLMUX_EXIT_STATUS: statusFile };
  const tmux = (...args: string[]): Promise<ClientResult> =>
    runBounded('tmux', ['-S', socket, '-f', conf, ...args], { cwd: options.cwd, env, timeoutMs: Math.max(1_000, Math.min(10_000, deadline - performance.now())) });
  const screen = async (history = false): Promise<string> =>
    (await tmux('capture-pane', '-p', '-J', '-t', 'claude', ...(history ? ['-S', '-'] : []))).stdout;
  const waitFor = async (pattern: string | RegExp): Promise<string | undefined> => {
    while (performance.now() < deadline) {
      const text = await screen();
      if (typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text)) return text;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return undefined;
  };
  const type = async (text: string): Promise<boolean> => {
    await tmux('send-keys', '-t', 'claude', '-l', text);
    // Enter only once the text is on screen: sent with the text, it would be read as part of a paste.
    if ((await waitFor(text)) === undefined) return false;
    await tmux('send-keys', '-t', 'claude', 'Enter');
    return true;
  };

  const screens: string[] = [];
  let exitCode: number | null = null;
  let timedOut = false;
  let stderr = '';
  try {
    seedClaudeHome(home, options.apiKey, options.cwd);
    const opened = await tmux(
      'new-session', '-d', '-s', 'claude', '-x', String(options.columns ?? 200), '-y', String(options.rows ?? 50),
      // A shell in between writes Claude Code's exit status to a file: tmux 3.3 sometimes marks
      // the pane dead without reaping the process, leaving #{pane_dead_status} empty for good.
      '--', '/bin/sh', '-c', '"$@"; echo $? > "$LLMUX_EXIT_STATUS"', 'sh', claude.command, ...claude.args, ...claudeArgs(options),
    );
    stderr += opened.stderr;
    if (opened.exitCode !== 0) throw new Error(`tmux new-session failed: ${opened.stderr}`);
    timedOut = (await waitFor(READY)) === undefined;
    for (const step of options.steps) {
      if (timedOut) break;
      const shown = (await type(step.send)) ? await waitFor(step.waitFor) : undefined;
      if (shown === undefined) timedOut = true;
      else screens.push(shown);
    }
    if (!timedOut && (await type('/exit'))) {
      while (performance.now() < deadline) {
        const status = existsSync(statusFile) ? readFileSync(statusFile, 'utf8').trim() : '';
        if (status !== '') {
          exitCode = Number(status);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }
    timedOut = timedOut || exitCode === null;
    // Claude Code draws on the alternate screen, which is gone once it quits: the screens seen
    // along the way are the transcript, the pane's history only adds what it printed on exit.
    const history = await screen(true);
    return { exitCode, signal: null, stdout: [...screens, history].join('\n'), stderr, timedOut, durationMs: Math.round(performance.now() - started), screens };
  } finally {
    // Kills the session and Claude Code with it, whatever state it is in.
    spawnSync('tmux', ['-S', socket, 'kill-server'], { env, timeout: 10_000 });
    rmSync(home, { recursive: true, force: true });
  }
}
