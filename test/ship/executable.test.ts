/**
 * The single-file executable: built by scripts/build-bin.mjs into a temporary folder, then run
 * there as on a clean machine, with an environment of only PATH=/nonexistent and HOME (no node,
 * no node_modules). Building takes about 10 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VERSION } from '../../src/common/version.ts';
import { cleanEnv, run, startServer } from './process.ts';
import { assertServesThenStops } from './echo-requests.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the single-file executable', { timeout: 180_000 }, () => {
  let dir = '';
  let exe = '';
  /** Nothing from this machine's environment: no PATH to node, no config, a private home. */
  const bareEnv = (extra: Record<string, string> = {}): Record<string, string> => ({ PATH: '/nonexistent', HOME: dir, ...extra });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'llmux-ship-bin-'));
    exe = join(dir, process.platform === 'win32' ? 'llmux.exe' : 'llmux');
    const built = await run(process.execPath, [join(ROOT, 'scripts', 'build-bin.mjs'), '--out', exe], { cwd: ROOT, env: cleanEnv() });
    assert.equal(built.code, 0, built.stderr);
    assert.match(built.stdout, /^built .*llmux.* MiB/);
  });

  after(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  test('is one executable file that carries the llmux bundle', () => {
    const stat = statSync(exe);
    assert.ok(stat.isFile());
    if (process.platform !== 'win32') assert.ok((stat.mode & 0o111) !== 0, 'the file is executable');
    // The fuse postject flips from :0 to :1 once the blob is in.
    assert.ok(readFileSync(exe).includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1'));
  });

  test('prints its version with no node and no node_modules around', async () => {
    const result = await run(exe, ['--version'], { cwd: dir, env: bareEnv() });
    assert.deepEqual(result, { code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });

  test('answers a usage error with exit code 2', async () => {
    const result = await run(exe, ['frobnicate'], { cwd: dir, env: bareEnv() });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /unknown command "frobnicate"/);
  });

  test('serves health and llmux-echo in both formats, streamed too, then exits 0 on SIGTERM', async () => {
    const server = await startServer(exe, [], { cwd: dir, env: bareEnv({ LLMUX_HOME: join(dir, 'serve-home') }) });
    await assertServesThenStops(server, VERSION);
    assert.match(server.stderr(), /"path":"\/v1\/messages","model":"llmux-echo","provider":"llmux","status":200/);
  });

  test('creates, lists and revokes keys in LLMUX_HOME', async () => {
    const env = bareEnv({ LLMUX_HOME: join(dir, 'keys-home') });
    const created = await run(exe, ['keys', 'create', '--name', 'ci', '--tier', 'pro'], { cwd: dir, env });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^sk-llmux-[A-Za-z0-9_-]{43}\n$/);

    const listed = await run(exe, ['keys', 'list', '--json'], { cwd: dir, env });
    assert.equal(listed.code, 0, listed.stderr);
    const keys = JSON.parse(listed.stdout) as Array<{ name: string; tier: string; revoked_at: string | null }>;
    assert.deepEqual(keys.map((k) => [k.name, k.tier, k.revoked_at]), [['ci', 'pro', null]]);
    assert.ok(!readFileSync(join(dir, 'keys-home', 'keys.json'), 'utf8').includes(created.stdout.trim()), 'only a hash is stored');

    const revoked = await run(exe, ['keys', 'revoke', 'ci'], { cwd: dir, env });
    assert.equal(revoked.code, 0, revoked.stderr);
    const after = JSON.parse((await run(exe, ['keys', 'list', '--json'], { cwd: dir, env })).stdout) as Array<{ revoked_at: string | null }>;
    assert.notEqual(after[0]?.revoked_at, null);
  });
});
