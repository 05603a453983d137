/**
 * Micro-benchmark of routing on a request's path: time per pick + outcome + end (an attempt
 * sequence's `next`, `outcome` and `end`, the way src/providers/attempts.ts calls them), for a model
 * with one deployment and one key (the common case, whose target is at most ~3 µs: 2 % of a 1 KB
 * JSON pass-through), for three weighted deployments, and for three deployments with two keys each
 * and a sticky conversation; the resolver without and with aliases and routes; and heap bytes per
 * sticky-map entry. Not a test.
 *
 *   node --import tsx bench/routing.ts               src/ under tsx (every closure also pays for a
 *                                                    `__name` call that compiled code does not have)
 *   node --import tsx bench/routing.ts --src dist    the compiled JS (after `npm run build`), as the
 *                                                    gateway runs
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ModelEntry, ProviderConfig } from '../src/config/types.ts';
import { DEFAULT_CAPABILITIES } from '../src/config/types.ts';
import type * as RouterModule from '../src/routing/router.ts';
import type * as SequenceModule from '../src/routing/sequence.ts';
import type * as ResolveModule from '../src/routing/resolve.ts';
import type * as StickyModule from '../src/routing/sticky.ts';
import type * as ConversationKeyModule from '../src/formats/conversation-key.ts';
import type { MessagesRequest } from '../src/formats/wire.ts';

const { values } = parseArgs({ options: { src: { type: 'string', default: 'src' } } });
const root = resolve(values.src ?? 'src');
const extension = root.endsWith('src') ? '.ts' : '.js';
const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(`${root}/${path}${extension}`).href)) as T;
const { createRouter } = await load<typeof RouterModule>('routing/router');
const { createAttemptSequence } = await load<typeof SequenceModule>('routing/sequence');
const { createResolver } = await load<typeof ResolveModule>('routing/resolve');
const { createStickyMap, scopedConversationKey } = await load<typeof StickyModule>('routing/sticky');
const { messagesConversationKey } = await load<typeof ConversationKeyModule>('formats/conversation-key');

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** CPU time (user + system) per operation: on a shared machine, wall time counts the waits for a core too. */
function nsPerOp(operations: number, run: () => void): number {
  run();
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / operations;
}

function provider(id: string, keys?: string[]): ProviderConfig {
  return keys === undefined
    ? { id, format: 'chat', baseUrl: `http://${id}.invalid/v1`, apiKey: `env:${id.toUpperCase()}_KEY`, keyless: false, headers: {} }
    : { id, format: 'chat', baseUrl: `http://${id}.invalid/v1`, apiKey: keys[0], apiKeys: keys, keyless: false, headers: {} };
}

function model(id: string, fields: Partial<ModelEntry>): ModelEntry {
  return {
    id, provider: 'solo', upstream_id: id, display_name: id, owned_by: 'solo', type: 'chat', created_at: '2026-01-01T00:00:00.000Z',
    context_length: 100_000, max_output_tokens: 4_096, capabilities: { ...DEFAULT_CAPABILITIES },
    pricing: { input_tokens_cost_per_million: 0, output_tokens_cost_per_million: 0, currency: 'USD' },
    reasoning: false, fallbacks: [], max_tokens_param: 'max_tokens', replay_reasoning: false, ...fields,
  };
}

const providers = new Map<string, ProviderConfig>([
  ['solo', provider('solo')],
  ['a', provider('a', ['env:A1', 'env:A2'])],
  ['b', provider('b', ['env:B1', 'env:B2'])],
  ['c', provider('c', ['env:C1', 'env:C2'])],
  ['x', provider('x')],
  ['y', provider('y')],
  ['z', provider('z')],
]);
const solo = model('solo-model', {});
const weighted = model('weighted', { deployments: [{ provider: 'x', upstream_id: 'm', weight: 3 }, { provider: 'y', upstream_id: 'm', weight: 2 }, { provider: 'z', upstream_id: 'm', weight: 1 }] });
const pooled = model('pooled', { routing: 'least_busy', deployments: [{ provider: 'a', upstream_id: 'm', weight: 1 }, { provider: 'b', upstream_id: 'm', weight: 1 }, { provider: 'c', upstream_id: 'm', weight: 1 }] });
const router = createRouter({ models: [solo, weighted, pooled], provider: (id) => providers.get(id), hasCredential: () => true });
const OPTIONS = { keyId: 'key_0123456789abcdef', attempts: 3, maxRetryAfterMs: 10_000 };
const body: MessagesRequest = { model: 'pooled', max_tokens: 1024, metadata: { user_id: 'user_3f1a_account_9c2e_session_4b7d' }, messages: [{ role: 'user', content: 'hello' }] };

function once(chain: ModelEntry[], conversation?: () => string | undefined): void {
  const sequence = createAttemptSequence(router, chain, conversation === undefined ? OPTIONS : { ...OPTIONS, conversation });
  const step = sequence.next();
  if (step === undefined || step instanceof Promise) throw new Error('expected a step at once');
  step.outcome({ status: 200, ttfbMs: 120 });
  step.end({ tokens: 300 });
}

const rows: [string, string][] = [];
// Memory first, before the timing loops leave garbage that a later collection would subtract.
{
  const count = 100_000;
  const map = createStickyMap({ maxEntries: count });
  const binding = { deployment: 'a/m', key: 'A1' };
  const before = heapUsed();
  // The key strings count here: the map is what keeps them once their request is over.
  for (let i = 0; i < count; i++) map.set(scopedConversationKey('key_0123456789abcdef', `prompt:${i.toString(36).padStart(22, '-')}`), binding, 1_700_000_000_000 + i);
  const after = heapUsed();
  if (map.size !== count) throw new Error('entries went missing');
  rows.push(['sticky map: heap per conversation (Map slot, record, scoped prompt key)', `${((after - before) / count).toFixed(0)} B (${((after - before) / 1e6).toFixed(1)} MB for ${count} conversations)`]);
}

const N = 200_000;
for (let round = 0; round < 3; round++) {
  const single = nsPerOp(N, () => {
    for (let i = 0; i < N; i++) once([solo]);
  });
  const three = nsPerOp(N, () => {
    for (let i = 0; i < N; i++) once([weighted]);
  });
  const sticky = nsPerOp(N, () => {
    for (let i = 0; i < N; i++) once([pooled], () => messagesConversationKey(body));
  });
  if (round === 2) {
    rows.push(['pick + outcome + end, one deployment, one key', `${(single / 1000).toFixed(2)} µs`]);
    rows.push(['pick + outcome + end, three weighted deployments', `${(three / 1000).toFixed(2)} µs`]);
    rows.push(['pick + outcome + end, three least_busy deployments × two keys, sticky (metadata.user_id)', `${(sticky / 1000).toFixed(2)} µs`]);
  }
}

const resolver = createResolver({
  routing: {
    aliases: [{ pattern: 'claude-3-5-haiku-*', target: 'qwen-local' }, { pattern: 'gpt-4o', target: 'gpt-5.4-mini' }],
    routes: [{ when: { model: 'claude-sonnet*', thinking: true }, model: 'claude-opus' }, { when: { model: 'claude-*', input_tokens_over: 100_000 }, model: 'gemini-2.5-pro' }],
  },
  isModel: (id) => id === 'claude-sonnet-4-5' || id === 'qwen-local',
});
const none = createResolver({ routing: undefined, isModel: () => true });
const input = { clientFormat: 'messages' as const, keyTier: 'basic' as const, traits: () => ({ thinking: false, hasImages: false, hasTools: false }), inputTokens: () => 2_000 };
const resolveNs = nsPerOp(N, () => {
  for (let i = 0; i < N; i++) resolver.resolve('claude-sonnet-4-5', input);
});
rows.push(['resolve, 2 aliases + 2 routes, a real model matched by both routes\' globs', `${(resolveNs / 1000).toFixed(2)} µs`]);
const noneNs = nsPerOp(N, () => {
  for (let i = 0; i < N; i++) none.resolve('claude-sonnet-4-5', input);
});
rows.push(['resolve, no aliases and no routes (the common case)', `${(noneNs / 1000).toFixed(2)} µs`]);

process.stdout.write(`routing from ${root}\n`);
const width = Math.max(...rows.map(([name]) => name.length));
for (const [name, value] of rows) process.stdout.write(`${name.padEnd(width)}  ${value}\n`);
