import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { clearCookie, cookie, createSessionStore, parseCookies, tokensEqual } from '../../src/web/session.ts';

test('a session expires after its lifetime on the injected clock', () => {
  let t = 0;
  const sessions = createSessionStore({ now: () => t, ttlMs: 1000 });
  const s = sessions.create('key_0123456789abcdef');
  assert.equal(sessions.get(s.id)?.keyId, 'key_0123456789abcdef');
  assert.notEqual(s.csrf, s.id);
  t = 999;
  assert.ok(sessions.get(s.id));
  t = 1000;
  assert.equal(sessions.get(s.id), undefined);
});

test('sign-out destroys a session and the store keeps at most maxSessions', () => {
  const sessions = createSessionStore({ maxSessions: 2 });
  const a = sessions.create('a');
  const b = sessions.create('b');
  sessions.destroy(b.id);
  assert.equal(sessions.get(b.id), undefined);
  sessions.create('c');
  sessions.create('d');
  assert.equal(sessions.size(), 2);
  assert.equal(sessions.get(a.id), undefined, 'the oldest gave way');
});

test('cookies are HttpOnly, SameSite=Strict, Path=/, and Secure only over https', () => {
  assert.equal(cookie('n', 'v', { maxAgeSeconds: 60, secure: false }), 'n=v; Max-Age=60; Path=/; HttpOnly; SameSite=Strict');
  assert.match(cookie('n', 'v', { maxAgeSeconds: 60, secure: true }), /; Secure$/);
  assert.match(clearCookie('n', false), /^n=; Max-Age=0;/);
});

test('cookie parsing takes the first value of each name and tokens compare exactly', () => {
  const req = { headers: { cookie: 'a=1; b=2=3;a=9; junk' } } as unknown as IncomingMessage;
  assert.deepEqual(parseCookies(req), { a: '1', b: '2=3' });
  assert.equal(tokensEqual('abc', 'abc'), true);
  assert.equal(tokensEqual('abc', 'abd'), false);
  assert.equal(tokensEqual('abc', 'abcd'), false);
  assert.equal(tokensEqual(undefined, undefined), false);
  assert.equal(tokensEqual('', ''), false);
});
