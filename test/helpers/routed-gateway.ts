/**
 * A gateway over one fake upstream for the routing tests (llmux.md section 10): providers and
 * models with deployments given by the test, limits high enough that no key limit interferes, a
 * clock the test moves, and the fake's answers chosen per upstream model id (`behave`), so which
 * deployment a request reached is read from what the fake saw.
 */
import { startTestGateway } from './gateway.ts';
import type { TestGateway } from './gateway.ts';
import { fixture, respond } from './fake-upstream.ts';
import type { Responder, SeenRequest } from './fake-upstream.ts';

export const T0 = Date.UTC(2026, 2, 14, 10, 0, 0);

/** A clock that moves only when told to (rests are read from it). */
export interface ManualClock {
  ms: number;
  now(): number;
  advance(ms: number): void;
}

export function manualClock(start = T0): ManualClock {
  const clock: ManualClock = {
    ms: start,
    now: () => clock.ms,
    advance(ms) {
      clock.ms += ms;
    },
  };
  return clock;
}

/** What the fake answers a request, by the upstream model id it names; undefined: the default answer. */
export type Behaviour = (seen: SeenRequest) => Responder | undefined;

export interface RoutedGateway extends TestGateway {
  /** Replaces the fake's behaviour. */
  behave(behaviour: Behaviour): void;
  /** Upstream requests seen from `from` on (an index into `upstream.requests`). */
  seen(from?: number): SeenRequest[];
}

export interface RoutedOptions {
  /** `providers` and `models` (and anything else) over the defaults; gets the fake's base URL (`…/v1`). */
  config(baseUrl: string): Record<string, unknown>;
  now?: () => number;
  env?: Record<string, string>;
}

/** The fake's default answer in the format of the path asked for (JSON, or a stream). */
function defaultAnswer(seen: SeenRequest): Responder {
  const stream = seen.body['stream'] === true;
  if (seen.path.endsWith('/messages')) return stream ? respond.sse(fixture('anthropic-stream-text.sse')) : respond.fixtureJson('anthropic-nonstream-text.json');
  return stream ? respond.sse(fixture('openai-stream-text-include-usage.sse')) : respond.fixtureJson('openai-nonstream-text.json');
}

export async function startRoutedGateway(options: RoutedOptions): Promise<RoutedGateway> {
  const t = await startTestGateway({
    config: (url) => ({
      tiers: { basic: { rpm: 1_000_000, tpm: 1_000_000_000, concurrency: 1_000 }, pro: { rpm: 1_000_000, tpm: 1_000_000_000, concurrency: 1_000 } },
      ...options.config(`${url}/v1`),
    }),
    ...(options.now === undefined ? {} : { now: options.now }),
    env: options.env ?? {},
  });
  let behaviour: Behaviour = () => undefined;
  t.upstream.fallback = (req, res, seen) => (behaviour(seen) ?? defaultAnswer(seen))(req, res, seen);
  return Object.assign(t, {
    behave(next: Behaviour) {
      behaviour = next;
    },
    seen: (from = 0) => t.upstream.requests.slice(from),
  });
}

/** A chat request; `content` makes it a conversation of its own (sticky routing keys on the first user message). */
export function chatBody(model: string, content: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content }], ...extra });
}

/** Posts a chat request with the test's key; resolves with the status and the parsed body. */
export async function chat(t: TestGateway, model: string, content: string, extra: Record<string, unknown> = {}, key = t.key): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: chatBody(model, content, extra),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch { /* a stream: the status is what counts */ }
  return { status: res.status, body, headers: res.headers };
}

/** The upstream model ids the fake saw, in order. */
export function upstreamIds(requests: readonly SeenRequest[]): string[] {
  return requests.map((r) => String(r.body['model']));
}

/** How many of `requests` named `upstreamId`. */
export function hitsOf(requests: readonly SeenRequest[], upstreamId: string): number {
  return requests.filter((r) => r.body['model'] === upstreamId).length;
}

/**
 * Hoeffding's bound: a share measured over `draws` independent draws strays from its probability
 * by t or more with chance at most 2·exp(−2·draws·t²); for `shares` shares checked at once (a
 * union bound) and a false failure under one in a million, t = sqrt(ln(2·shares·1e6) / (2·draws)).
 */
export function hoeffding(draws: number, shares = 1): number {
  return Math.sqrt(Math.log(2 * shares * 1e6) / (2 * draws));
}

/** Runs `count` tasks, at most `parallel` at once. */
export async function inParallel(count: number, parallel: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) await task(next++);
  }));
}

/** A `/metrics` gauge or counter value for one deployment, or undefined when not shown. */
export async function deploymentMetric(t: TestGateway, name: string, deployment: string): Promise<number | undefined> {
  const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.adminKey}` } });
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{deployment="${deployment}"`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}
