import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCredentialWatch } from '../../src/platforms/credential-watch.ts';
import type { Carrier, Carriers, CredentialState } from '../../src/platforms/index.ts';
import type { ProviderConfig } from '../../src/config/types.ts';
import { createManualClock } from '../helpers/clock.ts';

const provider = (id: string, platform: NonNullable<ProviderConfig['platform']>): ProviderConfig => ({ id, format: 'messages', platform, baseUrl: 'http://x', apiKey: undefined, keyless: false, headers: {} });

/** Carriers whose credential checks answer as `answers` says, counted. */
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

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a platform provider is usable once its check answers ok; an http provider is left to the catalog', async () => {
  const bedrock = provider('bedrock', 'bedrock');
  const vertex = provider('vertex', 'vertex');
  const http = provider('plain', 'http');
  const counts = new Map<string, number>();
  const answers = new Map<string, () => Promise<CredentialState>>([
    ['bedrock', () => Promise.resolve({ ok: true, detail: 'the AWS_* variables' })],
    ['vertex', () => Promise.resolve({ ok: false, reason: 'no credentials file' })],
  ]);
  const clock = createManualClock();
  const watch = createCredentialWatch({ providers: [bedrock, vertex, http], carriers: carriersOf(answers, counts), timers: clock.timers });
  assert.equal(watch.usable(bedrock), false, 'not before its first check has answered');
  await watch.check(1000);
  assert.equal(watch.usable(bedrock), true);
  assert.equal(watch.usable(vertex), false);
  assert.deepEqual(watch.state(vertex), { ok: false, reason: 'no credentials file' });
  assert.equal(watch.usable(http), undefined);
  assert.equal(counts.get('plain'), undefined, 'an http provider is never checked');
  assert.equal(clock.pending(), 0, 'the wait\'s bound is cleared once every check answered');
});

test('waiting for the checks is bounded; a slow check reports when it answers, and is not started twice', async () => {
  const slow = provider('slow', 'vertex');
  let release: (state: CredentialState) => void = () => {};
  const counts = new Map<string, number>();
  const answers = new Map<string, () => Promise<CredentialState>>([['slow', () => new Promise<CredentialState>((resolve) => { release = resolve; })]]);
  const clock = createManualClock();
  const watch = createCredentialWatch({ providers: [slow], carriers: carriersOf(answers, counts), timers: clock.timers });
  let started = false;
  const waiting = watch.start(3000).then(() => { started = true; });
  await settle();
  clock.advance(2999);
  await settle();
  assert.equal(started, false, 'still within the bound');
  clock.advance(1);
  await waiting;
  assert.equal(watch.usable(slow), false);
  void watch.check(0);
  assert.equal(counts.get('slow'), 1, 'the check under way is not started again');
  release({ ok: true, detail: 'metadata server' });
  await settle();
  assert.equal(watch.usable(slow), true);
  watch.stop();
});

test('checks are made again every interval until stopped', async () => {
  const p = provider('b', 'bedrock');
  const counts = new Map<string, number>();
  let ok = true;
  const answers = new Map<string, () => Promise<CredentialState>>([['b', () => Promise.resolve(ok ? { ok: true, detail: 'd' } : { ok: false, reason: 'expired' })]]);
  const clock = createManualClock();
  const watch = createCredentialWatch({ providers: [p], carriers: carriersOf(answers, counts), intervalMs: 300_000, timers: clock.timers });
  await watch.start(1000);
  assert.equal(watch.usable(p), true);
  ok = false;
  clock.advance(299_999);
  await settle();
  assert.equal(counts.get('b'), 1);
  clock.advance(1);
  await settle();
  assert.equal(counts.get('b'), 2);
  assert.equal(watch.usable(p), false, 'a later check that fails is reported');
  watch.stop();
  clock.advance(600_000);
  await settle();
  assert.equal(counts.get('b'), 2, 'no check after stop');
});
