import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  POLL_TOLERANCE_MS, USER_CODE_ALPHABET, cleanClientName, createDeviceFlow, formatUserCode, normalizeUserCode,
} from '../../src/auth/device-flow.ts';

function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => { t += ms; } };
}

test('a new grant has a high-entropy device code and an 8-letter user code from the unambiguous alphabet', () => {
  const flow = createDeviceFlow();
  const grant = flow.start('cli');
  assert.ok(grant);
  assert.ok(grant.deviceCode.length >= 43);
  assert.equal(grant.userCode.length, 8);
  for (const c of grant.userCode) assert.ok(USER_CODE_ALPHABET.includes(c), c);
  assert.equal(grant.expiresInSeconds, 900);
  assert.equal(grant.intervalSeconds, 5);
  assert.match(grant.id, /^dev_[0-9a-f]{12}$/);
});

test('user codes are found whatever their case, dashes or spaces', () => {
  const flow = createDeviceFlow();
  const grant = flow.start('cli');
  assert.ok(grant);
  const shown = formatUserCode(grant.userCode);
  assert.match(shown, /^[A-Z]{4}-[A-Z]{4}$/);
  assert.equal(flow.find(shown.toLowerCase())?.id, grant.id);
  assert.equal(flow.find(` ${grant.userCode.slice(0, 4)} ${grant.userCode.slice(4)} `)?.id, grant.id);
  assert.equal(normalizeUserCode('AAAA-BBBB'), undefined, 'vowels are not in the alphabet');
  assert.equal(normalizeUserCode('BCDF-GHJ'), undefined);
});

test('polling follows pending, slow_down with a growing interval, then the approval once', () => {
  const c = clock();
  const flow = createDeviceFlow({ now: c.now });
  const grant = flow.start('cli');
  assert.ok(grant);
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'authorization_pending', intervalSeconds: 5 });
  c.advance(2_000);
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'slow_down', intervalSeconds: 10 });
  c.advance(5_000);
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'slow_down', intervalSeconds: 15 }, '5 s is now too fast');
  c.advance(15_000 - POLL_TOLERANCE_MS);
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'authorization_pending', intervalSeconds: 15 });
  assert.equal(flow.approve(formatUserCode(grant.userCode), { tier: 'pro', byKeyId: 'key_0000000000000000' }).outcome, 'ok');
  const approved = flow.poll(grant.deviceCode);
  assert.equal(approved.outcome, 'approved');
  assert.ok(approved.outcome === 'approved' && approved.tier === 'pro' && approved.keyName === 'cli');
  flow.redeem(grant.deviceCode);
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'invalid_grant' });
});

test('an expired grant answers expired_token for a while, then is forgotten', () => {
  const c = clock();
  const flow = createDeviceFlow({ now: c.now });
  const grant = flow.start('cli');
  assert.ok(grant);
  c.advance(900_000);
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'expired_token' });
  assert.equal(flow.find(grant.userCode), undefined);
  assert.equal(flow.approve(grant.userCode, { tier: 'basic', byKeyId: 'k' }).outcome, 'expired');
  c.advance(900_000);
  flow.start('other');
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'invalid_grant' });
});

test('a denied grant never yields a key and cannot be approved afterwards', () => {
  const flow = createDeviceFlow();
  const grant = flow.start('cli');
  assert.ok(grant);
  assert.equal(flow.deny(grant.userCode).outcome, 'ok');
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'access_denied' });
  assert.deepEqual(flow.approve(grant.userCode, { tier: 'basic', byKeyId: 'k' }), { outcome: 'already_decided', status: 'denied' });
  assert.deepEqual(flow.poll(grant.deviceCode), { outcome: 'access_denied' });
});

test('the cap counts live grants only: expired and denied ones make room', () => {
  const c = clock();
  const flow = createDeviceFlow({ now: c.now, maxPending: 2 });
  const a = flow.start('a');
  assert.ok(a);
  assert.ok(flow.start('b'));
  assert.equal(flow.start('c'), undefined);
  flow.deny(a.userCode);
  assert.ok(flow.start('c'));
  assert.equal(flow.start('d'), undefined);
  c.advance(900_000);
  assert.equal(flow.liveCount(), 0);
  assert.ok(flow.start('d'));
});

test('pending lists undecided live grants oldest first', () => {
  const c = clock();
  const flow = createDeviceFlow({ now: c.now });
  const a = flow.start('a');
  c.advance(1000);
  const b = flow.start('b');
  c.advance(1000);
  const d = flow.start('d');
  assert.ok(a && b && d);
  flow.approve(b.userCode, { tier: 'basic', byKeyId: 'k' });
  assert.deepEqual(flow.pending().map((g) => g.clientName), ['a', 'd']);
});

test('client names lose bidirectional overrides and zero-width characters, so the approver sees the name as it is', () => {
  // Issue 14: "evil\u202Egnp.exe" is shown as "evilexe.png".
  assert.equal(cleanClientName('evil\u202Egnp.exe'), 'evilgnp.exe');
  assert.equal(cleanClientName('\u2066a\u2067b\u2068c\u2069 \u200Ed\u200F\u061Ce\u202A\u202B\u202C\u202D\u200B\uFEFF'), 'abc de');
  assert.equal(cleanClientName('\u202E'), undefined, 'nothing visible is no name');
  assert.equal(cleanClientName('café 🧑‍💻 工具'), 'café 🧑‍💻 工具', 'letters of any script, and emoji joiners, stay');
});

test('live grants are counted per party as well as in all', () => {
  const flow = createDeviceFlow({ now: () => 0 });
  flow.start('a', '10.0.0.1');
  flow.start('b', '10.0.0.1');
  flow.start('c', '10.0.0.2');
  assert.deepEqual([flow.liveCount('10.0.0.1'), flow.liveCount('10.0.0.2'), flow.liveCount('10.0.0.3'), flow.liveCount()], [2, 1, 0, 3]);
});

test('client names lose control characters and are cut to 100 characters', () => {
  assert.equal(cleanClientName('  my\u0000 cli\n\t tool '), 'my cli tool');
  assert.equal(cleanClientName(''), undefined);
  assert.equal(cleanClientName(42), undefined);
  assert.equal(cleanClientName('x'.repeat(300))?.length, 100);
});
