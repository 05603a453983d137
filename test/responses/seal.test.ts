import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createSealer, isLlmuxSeal, loadOrCreateSealSecret, SEAL_PREFIX, SEAL_SECRET_FILE } from '../../src/responses/seal.ts';

const secret = Buffer.alloc(32, 1);

describe('createSealer', () => {
  const sealer = createSealer(secret);

  it('seals a JSON value and opens it back, unreadable in between', () => {
    const value = { k: 'key_1', p: 'anthropic', f: 'anthropic', i: { kind: 'thinking', thinking: 'Step one… 💭 "quoted"', signature: 'EqQBCkYIBBgCKkB' } };
    const sealed = sealer.seal(value);
    assert.ok(sealed.startsWith(SEAL_PREFIX));
    assert.equal(SEAL_PREFIX, 'llmux.v2.');
    assert.match(sealed.slice(SEAL_PREFIX.length), /^[A-Za-z0-9_-]+$/, 'base64url after the prefix');
    assert.ok(!sealed.includes('Step one') && !sealed.includes('key_1'), 'neither the state nor the key is readable in the seal');
    assert.deepEqual(sealer.open(sealed), value);
  });

  it('uses a fresh IV each time, so the same value seals differently', () => {
    const value = { i: 'same' };
    assert.notEqual(sealer.seal(value), sealer.seal(value));
  });

  it('opens nothing foreign, tampered, cut, sealed under another secret or by an earlier llmux, and never throws', () => {
    const sealed = sealer.seal({ i: 'x' });
    const body = sealed.slice(SEAL_PREFIX.length);
    const flipped = body.slice(0, 20) + (body[20] === 'A' ? 'B' : 'A') + body.slice(21);
    const candidates = [
      'gAAAAABoOpenAIEncryptedReasoning',
      '',
      SEAL_PREFIX,
      `${SEAL_PREFIX}!!!not base64!!!`,
      SEAL_PREFIX + flipped,
      sealed.slice(0, -3),
      `llmux.v1.${body}`,
      `llmux.v3.${body}`,
      createSealer(Buffer.alloc(32, 2)).seal({ i: 'x' }),
      42 as unknown as string,
    ];
    for (const candidate of candidates) assert.equal(sealer.open(candidate), undefined, String(candidate).slice(0, 30));
  });

  it('refuses a secret that is not 32 bytes', () => {
    assert.throws(() => createSealer(Buffer.alloc(16)), /must be 32 bytes/);
  });

  it('tells llmux seals by their prefix, this version\'s and the unbound ones of earlier versions', () => {
    assert.equal(isLlmuxSeal(createSealer(secret).seal({ i: 'd' })), true);
    assert.equal(isLlmuxSeal('llmux.v1.AAAA'), true);
    assert.equal(isLlmuxSeal('gAAAA'), false);
  });
});

describe('loadOrCreateSealSecret', () => {
  const home = mkdtempSync(join(tmpdir(), 'llmux-seal-'));
  after(() => rmSync(home, { recursive: true, force: true }));

  it('creates the secret on first use with mode 0600 and reads the same one afterwards', () => {
    const first = loadOrCreateSealSecret(home);
    assert.equal(first.length, 32);
    const path = join(home, SEAL_SECRET_FILE);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(loadOrCreateSealSecret(home), first);
    assert.deepEqual(Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url'), first);
    assert.deepEqual(readdirSync(home), [SEAL_SECRET_FILE], 'no temporary file is left behind');
  });

  it('keeps a secret another process created first, instead of replacing it', () => {
    const dir = mkdtempSync(join(home, 'race-'));
    const theirs = Buffer.alloc(32, 5);
    writeFileSync(join(dir, SEAL_SECRET_FILE), `${theirs.toString('base64url')}\n`, { mode: 0o600 });
    assert.deepEqual(loadOrCreateSealSecret(dir), theirs);
  });

  it('refuses a file that does not hold a 32-byte secret rather than replacing it', () => {
    const dir = mkdtempSync(join(home, 'bad-'));
    writeFileSync(join(dir, SEAL_SECRET_FILE), 'short\n');
    assert.throws(() => loadOrCreateSealSecret(dir), /does not hold a 32-byte seal secret/);
    assert.equal(readFileSync(join(dir, SEAL_SECRET_FILE), 'utf8'), 'short\n');
  });

  it('creates LLMUX_HOME when it does not exist yet', () => {
    const dir = join(home, 'new', 'home');
    assert.equal(loadOrCreateSealSecret(dir).length, 32);
  });
});
