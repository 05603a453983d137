import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { KEY_PREFIX, KeyStoreError, createKeyStore, hashKey, parseDuration, writeFileAtomic } from '../../src/auth/key-store.ts';
import { GatewayError } from '../../src/common/errors.ts';
import { createManualClock, timeoutsOnly } from '../helpers/clock.ts';
import { waitUntil } from '../helpers/wait.ts';

const home = () => mkdtempSync(join(tmpdir(), 'llmux-keys-'));

describe('key store', () => {
  it('creates keys of the contract\'s shape and stores only their hash, mode 0600', () => {
    const dir = home();
    const store = createKeyStore(dir);
    const { key, record } = store.create({ name: 'ci', tier: 'pro', limits: { rpm: 5 }, models: ['a'], admin: true });
    assert.match(key, /^sk-llmux-[A-Za-z0-9_-]{43}$/);
    assert.ok(key.startsWith(KEY_PREFIX));
    assert.match(record.id, /^key_[0-9a-f]{16}$/);
    const text = readFileSync(join(dir, 'keys.json'), 'utf8');
    assert.ok(!text.includes(key));
    assert.ok(text.includes(hashKey(key)));
    assert.equal(statSync(join(dir, 'keys.json')).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir).sort(), ['keys.json']);
    assert.equal(store.findBySecret(key)?.id, record.id);
    assert.equal(store.findBySecret(`${key}x`), undefined);
    const reopened = createKeyStore(dir);
    assert.deepEqual(reopened.get(record.id), record);
    assert.equal(reopened.get('ci')?.id, record.id);
  });

  it('refuses at load a key whose limits are not whole numbers >= 0, naming the key and the limit', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmux-keys-'));
    const good = createKeyStore(dir).create({ name: 'a' }).record;
    for (const [limits, problem] of [
      [{ rpm: -1 }, /keys\.0\.limits\.rpm: must be a whole number >= 0/],
      [{ tpm: 1.5 }, /keys\.0\.limits\.tpm: must be a whole number >= 0/],
      [{ concurrency: '4' }, /keys\.0\.limits\.concurrency: must be a whole number >= 0/],
      [{ rpn: 4 }, /keys\.0\.limits\.rpn: unknown limit/],
    ] as const) {
      writeFileSync(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys: [{ ...good, limits }] }));
      assert.throws(() => createKeyStore(dir), (err: unknown) => err instanceof KeyStoreError && problem.test(err.message));
    }
  });

  it('keeps a key\'s own budget, and refuses at load a budget that is not an amount >= 0 per day or month', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmux-keys-'));
    const store = createKeyStore(dir);
    const withBudget = store.create({ name: 'capped', budget: { usd: 25, period: 'day' } }).record;
    const without = store.create({ name: 'free' }).record;
    assert.deepEqual(createKeyStore(dir).get(withBudget.id)?.budget, { usd: 25, period: 'day' });
    assert.equal('budget' in (createKeyStore(dir).get(without.id) ?? {}), false, 'no budget field when none was given');
    assert.throws(() => store.create({ name: 'bad', budget: { usd: -1, period: 'day' } }), RangeError);
    assert.equal(createKeyStore(dir).list().length, 2, 'a refused budget writes nothing');
    for (const [budget, problem] of [
      [{ usd: -1, period: 'day' }, /keys\.0\.budget: must be/],
      [{ usd: 5, period: 'week' }, /keys\.0\.budget: must be/],
      [{ usd: '5', period: 'month' }, /keys\.0\.budget: must be/],
      [null, /keys\.0\.budget: must be/],
    ] as const) {
      writeFileSync(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys: [{ ...without, budget }] }));
      assert.throws(() => createKeyStore(dir), (err: unknown) => err instanceof KeyStoreError && problem.test(err.message));
    }
  });

  it('refuses at load a hand-edited expiry that is not a date, instead of never expiring the key', () => {
    const dir = home();
    const good = createKeyStore(dir).create({ name: 'a', expiresInMs: 60_000 }).record;
    for (const expires_at of ['next tuesday', '', 17, {}]) {
      writeFileSync(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys: [{ ...good, expires_at }] }));
      assert.throws(() => createKeyStore(dir), (err: unknown) => err instanceof KeyStoreError && /keys\.0\.expires_at: .* is not a date; write it like 2026-12-31T00:00:00Z/.test(err.message), String(expires_at));
    }
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ version: 1, keys: [{ ...good, expires_at: '2030-01-01' }] }));
    assert.equal(createKeyStore(dir).list().length, 1, 'a date without a time is a date');
  });

  it('revokes by id or by name', () => {
    const store = createKeyStore(home());
    const a = store.create({ name: 'alpha' });
    const b = store.create({ name: 'beta' });
    assert.ok(store.revoke(a.record.id)?.revoked_at);
    assert.ok(store.revoke('beta')?.revoked_at);
    assert.equal(store.revoke('nobody'), undefined);
    assert.ok(store.get(b.record.id)?.revoked_at);
  });

  it('reports a corrupt or half-written file clearly and leaves it untouched', () => {
    const dir = home();
    const path = join(dir, 'keys.json');
    writeFileSync(path, '{"version":1,"keys":[{"id":"key_');
    assert.throws(() => createKeyStore(dir), (err: Error) => err instanceof KeyStoreError && /corrupt or half-written/.test(err.message) && err.message.includes(path));
    assert.equal(readFileSync(path, 'utf8'), '{"version":1,"keys":[{"id":"key_');
    writeFileSync(path, '{"version":1,"keys":[{"id":"nope"}]}');
    assert.throws(() => createKeyStore(dir), /not a valid llmux key store \(keys\.0\.id\)/);
    writeFileSync(path, '[]');
    assert.throws(() => createKeyStore(dir), /not a valid llmux key store/);
  });

  it('keeps serving the last good state when the file turns corrupt while watched', () => {
    const dir = home();
    const clock = createManualClock();
    const store = createKeyStore(dir, { timers: clock.timers });
    const { key } = store.create({ name: 'a' });
    const errors: string[] = [];
    store.watch((m) => errors.push(m));
    writeFileSync(join(dir, 'keys.json'), '{broken');
    clock.advance(1_100); // two polls read the broken file
    store.close();
    assert.ok(store.findBySecret(key));
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /corrupt/);
  });

  it('sees a change made by another process within a second', () => {
    const dir = home();
    const clock = createManualClock();
    const server = createKeyStore(dir, { timers: clock.timers });
    server.watch();
    const other = createKeyStore(dir);
    // The clock moves before any watch event can arrive: what sees the change is the poll, which
    // is what a filesystem without watching has.
    const { key } = other.create({ name: 'from-cli' });
    clock.advance(1_000);
    assert.ok(server.findBySecret(key));
    other.revoke('from-cli');
    clock.advance(1_000);
    assert.ok(server.findBySecret(key)?.revoked_at);
    server.close();
  });

  it('sees a key created or revoked by another process at once, by watching the directory', async () => {
    const dir = home();
    // No poll at all: whatever the server sees, the directory watch showed it.
    const server = createKeyStore(dir, { timers: timeoutsOnly });
    server.watch();
    const other = createKeyStore(dir);
    try {
      for (let round = 0; round < 3; round += 1) {
        const { key } = other.create({ name: `cli-${round}` });
        await waitUntil(() => server.findBySecret(key) !== undefined, `the watch showing key ${round} created`);
        other.revoke(`cli-${round}`);
        await waitUntil(() => typeof server.findBySecret(key)?.revoked_at === 'string', `the watch showing key ${round} revoked`);
      }
    } finally {
      server.close();
    }
  });

  it('loses no key when two processes create keys at the same time', async () => {
    const dir = home();
    const script = `import { createKeyStore } from ${JSON.stringify(new URL('../../src/auth/key-store.ts', import.meta.url).pathname)};
      const s = createKeyStore(process.argv[1], { lockWaitMs: 10000 }); for (let i = 0; i < 15; i++) s.create({ name: 'p' + process.pid + '-' + i });`;
    const run = () => new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dir], { stdio: 'inherit' });
      child.on('exit', (code) => resolve(code ?? 1));
    });
    const codes = await Promise.all([run(), run(), run()]);
    assert.deepEqual(codes, [0, 0, 0]);
    assert.equal(createKeyStore(dir).list().length, 45);
  });

  it('never leaves a half-written store when a writer is killed mid-write', async () => {
    const dir = home();
    createKeyStore(dir).create({ name: 'first' });
    const script = `import { createKeyStore } from ${JSON.stringify(new URL('../../src/auth/key-store.ts', import.meta.url).pathname)};
      const s = createKeyStore(process.argv[1], { lockWaitMs: 10000 }); for (let i = 0; ; i++) s.create({ name: 'loop-' + i });`;
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dir], { stdio: 'ignore' });
      // Killed once it has written a few keys more each round, so it dies at a different point of its loop.
      const had = createKeyStore(dir).list().length;
      await waitUntil(() => createKeyStore(dir).list().length >= had + 1 + round * 7, `writer ${round} writing keys`, { pollMs: 1 });
      child.kill('SIGKILL');
      await new Promise((r) => child.on('exit', r));
      // Whatever instant it died at, the store parses and still has the first key.
      const store = createKeyStore(dir);
      assert.ok(store.get('first'));
    }
  });

  it('breaks at once a lock whose owner is gone, an empty one, and one older than 10 s', async () => {
    const dead = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid ?? 0));
    });
    const dir = home();
    const lock = join(dir, 'keys.json.lock');
    const store = createKeyStore(dir);
    const cases: Array<[string, () => void]> = [
      ['owner gone', () => writeFileSync(lock, `${dead}\n${hostname()}\n`)],
      ['written by this process', () => writeFileSync(lock, `${process.pid}\n`)],
      ['empty for over a second', () => { writeFileSync(lock, ''); utimesSync(lock, new Date(Date.now() - 2_000), new Date(Date.now() - 2_000)); }],
      ['older than 10 s, owner alive', () => { writeFileSync(lock, `${process.ppid}\n`); utimesSync(lock, new Date(Date.now() - 20_000), new Date(Date.now() - 20_000)); }],
    ];
    // The store may not wait for a lock (lockWaitMs 0): each create that succeeds broke its lock at once.
    for (const [what, makeLock] of cases) {
      makeLock();
      assert.doesNotThrow(() => store.create({ name: what }), what);
      assert.equal(existsSync(lock), false, `${what}: the lock was released`);
    }
    assert.equal(store.list().length, 4);
  });

  it('never waits for a live lock unless asked to: a server is refused at once with 503 key_store_busy', async () => {
    const dir = home();
    const lock = join(dir, 'keys.json.lock');
    // A live owner: the test runner's parent process, on this host, lock just written.
    writeFileSync(lock, `${process.ppid}\n${hostname()}\n`);
    const busy = (err: unknown): boolean => err instanceof GatewayError && err.status === 503 && err.code === 'key_store_busy';
    assert.throws(() => createKeyStore(dir).create({ name: 'x' }), busy);
    assert.equal(readFileSync(lock, 'utf8'), `${process.ppid}\n${hostname()}\n`, 'a live lock is left alone');
    // A live owner that lets go a second after it is told to (real time: the owner is another
    // process, with its own clock), told just before the server's write: refused while the owner
    // still held the lock, the server did not wait for it.
    const script = `const fs = require('fs'); fs.writeFileSync(${JSON.stringify(lock)}, process.pid + '\\n'); process.stdin.once('data', () => setTimeout(() => fs.unlinkSync(${JSON.stringify(lock)}), 1000));`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'ignore', 'inherit'] });
    const owned = `${child.pid}\n`;
    await waitUntil(() => existsSync(lock) && readFileSync(lock, 'utf8') === owned, 'the child taking the lock');
    child.stdin.write('let go\n');
    assert.throws(() => createKeyStore(dir).create({ name: 'y' }), busy);
    assert.equal(readFileSync(lock, 'utf8'), owned, 'refused while the owner still held it: the server did not wait');
    // A command waits for it: the lock is still held when it asks, and it gets it.
    assert.equal(readFileSync(lock, 'utf8'), owned);
    createKeyStore(dir, { lockWaitMs: 5_000 }).create({ name: 'patient' });
    assert.ok(createKeyStore(dir).get('patient'), 'it waited for the owner');
    child.stdin.end();
    await new Promise((r) => child.on('exit', r));
  });

  it('writes atomically with no temp file left behind', () => {
    const dir = home();
    const path = join(dir, 'sub', 'file.json');
    writeFileAtomic(path, '{"a":1}');
    writeFileAtomic(path, '{"a":2}');
    assert.equal(readFileSync(path, 'utf8'), '{"a":2}');
    assert.deepEqual(readdirSync(join(dir, 'sub')), ['file.json']);
  });

  it('parses durations like 30d and refuses others', () => {
    assert.equal(parseDuration('30d'), 30 * 86_400_000);
    assert.equal(parseDuration('12h'), 12 * 3_600_000);
    assert.equal(parseDuration('15m'), 900_000);
    assert.equal(parseDuration('45s'), 45_000);
    assert.equal(parseDuration('2w'), 14 * 86_400_000);
    assert.equal(parseDuration('0d'), undefined);
    assert.equal(parseDuration('soon'), undefined);
  });
});
