import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCredentialWatch } from '../../src/platforms/credential-watch.ts';
import type { Carrier, Carriers, CredentialState } from '../../src/platforms/index.ts';
import type { ProviderConfig } from '../../src/config/types.ts';

const provider = (id: string, platform: NonNullable<ProviderConfig['platform']>): ProviderConfig => ({ id, format: 'messages', platform, baseUrl: 'http://x', apiKey: undefined, keyless: false, headers: {} });

/** Carriers whose credential checks answer as `answers` says, when `release` lets them. */
function carriersOf(answers: Map<string, () => Promise<CredentialState>>, counts: Map<string, number>): Carriers {
  return {
    of: (p) => ({
      credentials: () => {
        counts.set(p.id, (counts.get(p.id) ?? 0) + 1);
        return (answers.get(p.id) ?? (() => Promise.resolve({ ok: false, reason: 'none' })))();
      },
    }) as unknown as Carrier,
  };
}

test('a platform provider is usable once its check answers ok; an http provider is left to the catalog', async () => {
  const bedrock = provider('bedrock', 'bedrock');
  const vertex = provider('vertex', 'vertex');
  const http = provider('plain', 'http');
  const counts = new Map<string, number>();
  const answers = new Map<string, () => Promise<CredentialState>>([
    ['bedrock', () => Promise.resolve({ ok: true, detail: 'the AWS_* variables' })],
    ['vertex', () => Promise.resolve({ ok: false, reason: 'no credentials file' })],
  ]);
  const watch = createCredentialWatch({ providers: [bedrock, vertex, http], carriers: carriersOf(answers, counts) });
  assert.equal(watch.usable(bedrock), false, 'not before its first check has answered');
  await watch.check(1000);
  assert.equal(watch.usable(bedrock), true);
  assert.equal(watch.usable(vertex), false);
  assert.deepEqual(watch.state(vertex), { ok: false, reason: 'no credentials file' });
  assert.equal(watch.usable(http), undefined);
  assert.equal(counts.get('plain'), undefined, 'an http provider is never checked');
});

test('waiting for the checks is bounded; a slow check reports when it answers, and is not started twice', async () => {
  const slow = provider('slow', 'vertex');
  let release: (state: CredentialState) => void = () => {};
  const counts = new Map<string, number>();
  const answers = new Map<string, () => Promise<CredentialState>>([['slow', () => new Promise<CredentialState>((resolve) => { release = resolve; })]]);
  const watch = createCredentialWatch({ providers: [slow], carriers: carriersOf(answers, counts) });
  const started = Date.now();
  await watch.start(20);
  assert.ok(Date.now() - started < 1000, 'start-up waited only the bound');
  assert.equal(watch.usable(slow), false);
  await watch.check(0);
  assert.equal(counts.get('slow'), 1, 'the check under way is not started again');
  release({ ok: true, detail: 'metadata server' });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(watch.usable(slow), true);
  watch.stop();
});

test('checks are made again every interval until stopped', async () => {
  const p = provider('b', 'bedrock');
  const counts = new Map<string, number>();
  let ok = true;
  const answers = new Map<string, () => Promise<CredentialState>>([['b', () => Promise.resolve(ok ? { ok: true, detail: 'd' } : { ok: false, reason: 'expired' })]]);
  const watch = createCredentialWatch({ providers: [p], carriers: carriersOf(answers, counts), intervalMs: 5 });
  await watch.start(1000);
  assert.equal(watch.usable(p), true);
  ok = false;
  const deadline = Date.now() + 2000;
  while (watch.usable(p) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(watch.usable(p), false, 'a later check that fails is reported');
  watch.stop();
  const seen = counts.get('b') ?? 0;
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(counts.get('b'), seen, 'no check after stop');
});
