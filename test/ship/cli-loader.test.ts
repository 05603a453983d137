/**
 * The bin dist/cli.cjs (scripts/cli-loader.cjs) and the code cache it starts from: the CLI bundled
 * by scripts/bundle-cli.mjs into a temporary folder (the checkout's own dist/ is left alone), then
 * run from there with its cache, without it, and with caches it must not use. Takes about 5 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { VERSION } from '../../src/common/version.ts';
import { cleanEnv, run, startServer } from './process.ts';
import { assertHealthy, assertServesThenStops } from './echo-requests.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * Imports `dir`/cli.cjs in a fresh node (not as the entry point, so the CLI does not run by
 * itself), and reports how its bundle was compiled and the stack of an error thrown in the bundle.
 */
async function load(dir: string, flags: string[] = []): Promise<{ codeCache: string; stack: string }> {
  const script = [
    'const cli = await import(process.argv[1]);',
    'let stack = "";',
    // An argv that is no array: a TypeError thrown inside the bundle.
    'try { await cli.main(undefined); } catch (err) { stack = err.stack; }',
    'process.stdout.write(JSON.stringify({ codeCache: cli.codeCache, stack }));',
  ].join('\n');
  const result = await run(process.execPath, [...flags, '--input-type=module', '-e', script, pathToFileURL(join(dir, 'cli.cjs')).href], { cwd: dir });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as { codeCache: string; stack: string };
}

/** `text` as a regular expression matching itself. */
function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

describe('the CLI bin and its code cache', { timeout: 120_000 }, () => {
  let root = '';
  let built = '';
  /** A copy of the built folder, changed by the test. */
  const copy = (name: string, change: (dir: string) => void = () => {}): string => {
    const dir = join(root, name);
    cpSync(built, dir, { recursive: true });
    change(dir);
    return dir;
  };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'llmux-ship-loader-'));
    built = join(root, 'dist');
    const bundled = await run(process.execPath, [join(ROOT, 'scripts', 'bundle-cli.mjs'), '--out', built], { cwd: ROOT });
    assert.equal(bundled.code, 0, bundled.stderr);
  });

  after(() => {
    if (root !== '') rmSync(root, { recursive: true, force: true });
  });

  test('the build writes the bin, the bundle and a cache the bin uses (V8 did not reject it)', async () => {
    const loaded = await load(built);
    assert.equal(loaded.codeCache, 'used');
    // One character beyond ASCII would make V8 hold the whole source as a two-byte string.
    assert.match(readFileSync(join(built, 'cli-bundle.js'), 'latin1'), /^[\0-\x7f]*$/);
    // Errors name the bundle's file, at its own place, from cached code as from compiled code.
    assert.match(loaded.stack, /^TypeError: /);
    assert.match(loaded.stack.split('\n')[1] ?? '', new RegExp(`\\(${escaped(join(built, 'cli-bundle.js'))}:\\d+:\\d+\\)$`));
  });

  test('the bin reads its ASCII bundle as latin1, and text beyond ASCII, escaped in it, comes out whole', async () => {
    const help = await run(process.execPath, [join(built, 'cli.cjs'), '--help'], { cwd: root });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^llmux \S+ \u2014 one address for many models$/m);
    assert.match(help.stdout, /\[--provider NAME\[,NAME\u2026\]\]\u2026/);
  });

  test('started from its cache, the bin prints its version and serves health and llmux-echo', async () => {
    assert.deepEqual(await run(process.execPath, [join(built, 'cli.cjs'), '--version'], { cwd: root }), { code: 0, stdout: `${VERSION}\n`, stderr: '' });
    const server = await startServer(process.execPath, [], { cwd: root, env: cleanEnv({ LLMUX_HOME: join(root, 'home-cached') }), leading: [join(built, 'cli.cjs')] });
    await assertServesThenStops(server, VERSION);
  });

  test('serve answers its first /healthz without loading TLS or zlib, which only some configurations need', async () => {
    const script = [
      'const cli = await import(process.argv[1]);',
      'let out = "";',
      "void cli.main(['serve', '--host', '127.0.0.1', '--port', '0'], { stdout: (t) => { out += t; }, stderr: () => {}, env: { LLMUX_HOME: process.argv[2] }, stdin: process.stdin });",
      'while (!out.includes("listening")) await new Promise((done) => setTimeout(done, 5));',
      "const http = await import('node:http');",
      'const status = await new Promise((done) => http.get(`${/(http:\\S+)/.exec(out)[1]}/healthz`, (res) => res.resume().on("end", () => done(res.statusCode))));',
      'process.stdout.write(JSON.stringify({ status, loaded: process.moduleLoadList.filter((name) => /^NativeModule (tls|https|_tls_wrap|zlib)$/.test(name)) }));',
      'process.exit(0);',
    ].join('\n');
    const result = await run(process.execPath, ['--input-type=module', '-e', script, pathToFileURL(join(built, 'cli.cjs')).href, join(root, 'home-modules')], { cwd: root });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { status: 200, loaded: [] });
  });

  test('the cache holds no llmux key and no path but the bundle\'s own', () => {
    const cache = readFileSync(join(built, 'cli-bundle.cache')).toString('latin1');
    assert.doesNotMatch(cache, /sk-llmux-[A-Za-z0-9_-]{43}/);
    assert.ok(!cache.includes('llmux-code-cache-'), 'the temporary home serve ran in');
    assert.ok(!cache.includes(ROOT), 'the checkout');
  });

  test('without a cache the bin compiles the bundle and works the same', async () => {
    const dir = copy('absent', (d) => rmSync(join(d, 'cli-bundle.cache')));
    const loaded = await load(dir);
    assert.equal(loaded.codeCache, 'absent');
    assert.match(loaded.stack.split('\n')[1] ?? '', new RegExp(`\\(${escaped(join(dir, 'cli-bundle.js'))}:\\d+:\\d+\\)$`));
    const server = await startServer(process.execPath, [], { cwd: root, env: cleanEnv({ LLMUX_HOME: join(root, 'home-absent') }), leading: [join(dir, 'cli.cjs')] });
    try {
      await assertHealthy(server.url, VERSION);
    } finally {
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null }, server.stderr());
    }
  });

  test('a truncated, garbled or foreign cache is not used, and the bin still works', async () => {
    const cache = readFileSync(join(built, 'cli-bundle.cache'));
    const keyEnd = cache.indexOf(0x0a) + 1;
    const cases: Array<[string, (dir: string) => void]> = [
      // Its key line intact: V8 itself refuses the data (its length is checked).
      ['truncated', (d) => writeFileSync(join(d, 'cli-bundle.cache'), cache.subarray(0, keyEnd + 1000))],
      // Its key line intact, V8's header not: V8 refuses it.
      ['garbled', (d) => writeFileSync(join(d, 'cli-bundle.cache'), Buffer.concat([cache.subarray(0, keyEnd), Buffer.alloc(64, 0xa5), cache.subarray(keyEnd + 64)]))],
      ['empty', (d) => writeFileSync(join(d, 'cli-bundle.cache'), '')],
      // Another build's bundle: its first line (the digest) differs.
      ['another bundle', (d) => writeFileSync(join(d, 'cli-bundle.js'), readFileSync(join(d, 'cli-bundle.js'), 'utf8').replace(/^\/\/ llmux CLI bundle [0-9a-f]+/, '// llmux CLI bundle 0123456789abcdef0123456789abcdef'))],
      // dist/ moved: the cache holds the old path, which stack traces would name.
      ['moved', () => {}],
    ];
    for (const [name, change] of cases) {
      const dir = copy(name.replace(' ', '-'), change);
      assert.equal((await load(dir)).codeCache, 'rejected', name);
      assert.deepEqual(await run(process.execPath, [join(dir, 'cli.cjs'), '--version'], { cwd: root }), { code: 0, stdout: `${VERSION}\n`, stderr: '' }, name);
    }
  });

  test('under other V8 flags the cache is refused by V8 and the bundle compiled', async () => {
    assert.equal((await load(built, ['--max-old-space-size=200'])).codeCache, 'rejected');
  });
});
