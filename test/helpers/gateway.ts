/**
 * Starts a gateway for a test: a temp home, a fake upstream for each wire format, keys, and a
 * collected request log.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway/server.ts';
import type { Gateway, GatewayOptions, LogRecord } from '../../src/gateway/server.ts';
import { standardFeatures } from '../../src/gateway/features.ts';
import { startFakeUpstream } from './fake-upstream.ts';
import type { FakeUpstream } from './fake-upstream.ts';
import { waitUntil } from './wait.ts';
import { watchAnswers } from './answer-check.ts';

export interface TestGateway {
  url: string;
  gateway: Gateway;
  upstream: FakeUpstream;
  home: string;
  /** A basic-tier key. */
  key: string;
  adminKey: string;
  logs: Array<LogRecord | Record<string, unknown>>;
  /**
   * What the answers so far got wrong against the official schemas (./answer-check.ts), one line
   * each. Any left here when the test file ends fail it (see {@link failFileOnProblems}); a test
   * that provokes one on purpose asserts it and empties the list.
   */
  schemaProblems: string[];
  /** Answers checked against the schemas so far. */
  answersChecked(): number;
  /**
   * Runs `fn` without checking the answers to the requests it makes: for a test that replays an
   * upstream's recording through llmux as it came (same format, byte for byte), where what the
   * answer says is the provider's, right or wrong, and the test compares it to the recording.
   */
  replaying<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Resolves once every request the gateway has received has its log line: a line is written when
   * the response has closed on the server, a moment after the client has read it.
   */
  allLogged(): Promise<void>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Extra config merged over the test config; a function gets the fake upstream's address first. */
  config?: Record<string, unknown> | ((upstreamUrl: string) => Record<string, unknown>);
  /** Extra config that needs the fake upstream's address, merged after `config`. */
  configFor?: (upstreamUrl: string) => Record<string, unknown>;
  env?: Record<string, string | undefined>;
  now?: () => number;
  random?: () => number;
  extra?: Partial<GatewayOptions>;
  /**
   * Whether every answer is checked against the official schemas (default true). Off only for
   * tests whose upstream sends, on purpose, what no provider would, which llmux passes on as it came.
   */
  schemas?: boolean;
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const upstream = await startFakeUpstream();
  const home = mkdtempSync(join(tmpdir(), 'llmux-test-'));
  const config = {
    builtin_catalog: false,
    providers: {
      'fake-openai': { format: 'openai', base_url: `${upstream.url}/v1`, api_key: 'upstream-openai-secret' },
      'fake-anthropic': { format: 'anthropic', base_url: `${upstream.url}/v1`, api_key: 'upstream-anthropic-secret' },
    },
    models: [
      { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', reasoning: true, max_output_tokens: 16384 },
      { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', reasoning: true, max_output_tokens: 8192 },
    ],
    retry: { attempts: 3, base_delay_ms: 1, max_delay_ms: 5, max_retry_after_ms: 2000 },
    limits: { shutdown_timeout_ms: 2000 },
    ...(typeof options.config === 'function' ? options.config(upstream.url) : options.config ?? {}),
    ...(options.configFor?.(upstream.url) ?? {}),
  };
  const logs: TestGateway['logs'] = [];
  const gatewayOptions: GatewayOptions = {
    home,
    config,
    env: options.env ?? {},
    logger: (line) => logs.push(line as LogRecord),
    features: standardFeatures,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.random === undefined ? {} : { random: options.random }),
    ...(options.extra ?? {}),
  };
  const gateway = createGateway(gatewayOptions);
  const { url } = await gateway.listen(0, '127.0.0.1');
  let received = 0;
  gateway.server?.on('request', () => { received += 1; });
  const schemaProblems: string[] = [];
  const watch = options.schemas === false || gateway.server === undefined ? undefined : watchAnswers(gateway.server, (line) => schemaProblems.push(line));
  failFileOnProblems(schemaProblems);
  const key = (await gateway.keys.create({ name: 'test', tier: 'basic' })).key;
  const adminKey = (await gateway.keys.create({ name: 'admin', tier: 'pro', admin: true })).key;
  return {
    url,
    gateway,
    upstream,
    home,
    key,
    adminKey,
    logs,
    schemaProblems,
    answersChecked: () => watch?.checked ?? 0,
    replaying: async (fn) => {
      if (watch !== undefined) watch.paused += 1;
      try {
        return await fn();
      } finally {
        if (watch !== undefined) watch.paused -= 1;
      }
    },
    allLogged: async () => {
      await waitUntil(() => logs.filter((line) => 'request_id' in line).length >= received, 'a log line for every request received');
    },
    close: async () => {
      await gateway.close();
      await upstream.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Output caps of the three fake models of {@link threeFormatConfig}. */
export interface ThreeFormatCaps { chat?: number; messages?: number; gemini?: number }

/**
 * A config whose models speak each native upstream format, all answered by the fake upstream at
 * `url`: `gpt-test` (chat-completions), `claude-test` (messages), `gemini-test` (Gemini's
 * generateContent), every one marked `reasoning`.
 */
export function threeFormatConfig(url: string, caps: ThreeFormatCaps = {}): Record<string, unknown> {
  return {
    providers: {
      'fake-openai': { format: 'openai', base_url: `${url}/v1`, api_key: 'upstream-openai-secret' },
      'fake-anthropic': { format: 'anthropic', base_url: `${url}/v1`, api_key: 'upstream-anthropic-secret' },
      'fake-gemini': { format: 'gemini', base_url: `${url}/v1beta`, api_key: 'upstream-gemini-secret' },
    },
    models: [
      { id: 'gpt-test', provider: 'fake-openai', upstream_id: 'gpt-upstream', reasoning: true, max_output_tokens: caps.chat ?? 16384 },
      { id: 'claude-test', provider: 'fake-anthropic', upstream_id: 'claude-upstream', reasoning: true, max_output_tokens: caps.messages ?? 8192 },
      { id: 'gemini-test', provider: 'fake-gemini', upstream_id: 'gemini-upstream', reasoning: true, max_output_tokens: caps.gemini ?? 8192 },
    ],
  };
}

const problemLists: string[][] = [];

/**
 * Fails the test file, at its end, when any gateway it started wrote an answer that does not match
 * the official schemas: each problem is printed (method, path, request id, status, the field) and
 * the file exits 1, which the test runner reports as the file's failure. At the end rather than in
 * `close()`: a hook that closes other servers after the gateway would leave them open, and hang.
 */
function failFileOnProblems(problems: string[]): void {
  if (problemLists.length === 0) {
    process.once('exit', () => {
      const all = problemLists.flat();
      if (all.length === 0) return;
      process.stderr.write(`${all.length} answer(s) do not match the official schemas (test/helpers/answer-check.ts):\n${all.slice(0, 60).join('\n')}\n${all.length > 60 ? `… and ${all.length - 60} more\n` : ''}`);
      process.exitCode = 1;
    });
  }
  problemLists.push(problems);
}

/** The log line of the request `res` answers, once the gateway has written it (see `allLogged`). */
export async function logLineOf(t: Pick<TestGateway, 'logs'>, res: Response): Promise<Record<string, unknown>> {
  const id = res.headers.get('x-request-id');
  const find = (): Record<string, unknown> | undefined => t.logs.find((line) => (line as Record<string, unknown>)['request_id'] === id) as Record<string, unknown> | undefined;
  await waitUntil(() => find() !== undefined, `the log line of request ${String(id)}`);
  return find() as Record<string, unknown>;
}

/** The headers an official Anthropic SDK sends. */
export function anthropicHeaders(key: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', ...extra };
}

/** The headers an official OpenAI SDK sends. */
export function openaiHeaders(key: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...extra };
}
