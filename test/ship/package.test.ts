/**
 * The npm package, packed by `npm pack` from a fresh checkout (a copy of what git tracks for the
 * build, without dist/, so the checkout's own dist/ is left alone): `prepack` builds dist/ first.
 * Then installed the ways users install it: globally into a temporary prefix, through npx, and as
 * a dependency of an app that embeds it. And `npm start` in such a checkout: the compiled server,
 * built when dist/ is missing or older than src/. Everything is local (`--offline`): the package
 * has no dependencies. Takes about 20 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VERSION } from '../../src/common/version.ts';
import { cleanEnv, run, startServer } from './process.ts';
import { assertHealthy, assertServesThenStops } from './echo-requests.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const START = join('scripts', 'start.mjs');

interface PackedFile { path: string; size: number; mode: number }

/** What a fresh checkout holds for building and starting llmux (no dist/); node_modules as `npm ci` left it. */
function freshCheckout(into: string): string {
  mkdirSync(into);
  for (const path of ['package.json', 'README.md', 'docs', 'CHANGELOG.md', 'tsconfig.json', 'tsconfig.build.json', 'src', 'scripts', 'schema']) {
    cpSync(join(ROOT, path), join(into, path), { recursive: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(into, 'node_modules'), 'dir');
  return into;
}

describe('the npm package', { timeout: 180_000 }, () => {
  let dir = '';
  let tarball = '';
  let packed: { size: number; unpackedSize: number; files: PackedFile[] } = { size: 0, unpackedSize: 0, files: [] };
  /** A private npm cache, and never the registry. */
  const npmFlags = (): string[] => ['--cache', join(dir, 'npm-cache'), '--offline', '--no-audit', '--no-fund', '--loglevel=error'];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'llmux-ship-pkg-'));
    const checkout = freshCheckout(join(dir, 'checkout'));
    assert.ok(!existsSync(join(checkout, 'dist')));
    // --silent: the build's own output would go before pack's JSON on stdout.
    const pack = await run('npm', ['pack', '--json', '--silent', '--pack-destination', dir, ...npmFlags()], { cwd: checkout });
    assert.equal(pack.code, 0, pack.stderr);
    const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; size: number; unpackedSize: number; files: PackedFile[] }>;
    assert.ok(info !== undefined);
    packed = info;
    tarball = join(dir, info.filename);
  });

  after(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  test('packed from a fresh checkout, it holds dist/ built by prepack: the bundled CLI and the library', () => {
    const paths = packed.files.map((f) => f.path);
    for (const built of ['dist/cli.cjs', 'dist/cli-bundle.js', 'dist/gateway/server.js', 'dist/common/json-bytes.js', 'dist/gateway/server.d.ts']) assert.ok(paths.includes(built), built);
    // The bundled CLI is one file (it imports nothing but node: built-ins), run by the small bin.
    const bundle = packed.files.find((f) => f.path === 'dist/cli-bundle.js');
    assert.ok(bundle !== undefined && bundle.size > 100_000, `dist/cli-bundle.js is ${bundle?.size} bytes`);
    // Its code cache holds the packing machine's path and suits that Node only: never shipped.
    assert.ok(!paths.includes('dist/cli-bundle.cache'));
  });

  test('holds only compiled JavaScript and declarations from dist/, package.json, README, the docs it links to, CHANGELOG and the config schema', () => {
    assert.equal(tarball, join(dir, `llmux-${VERSION}.tgz`));
    const paths = packed.files.map((f) => f.path);
    // The README links into docs/: every page ships with it, so the links work in node_modules/llmux too.
    const pages = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
    const docs = ['package.json', 'README.md', ...pages, 'CHANGELOG.md', 'schema/config.schema.json'];
    const stray = paths.filter((p) => !/^dist\/.+\.(js|d\.ts)$/.test(p) && p !== 'dist/cli.cjs' && !docs.includes(p));
    assert.deepEqual(stray, []);
    for (const needed of ['dist/cli.cjs', 'dist/index.js', 'dist/index.d.ts', 'dist/gateway/server.d.ts', ...docs]) assert.ok(paths.includes(needed), needed);
    assert.ok(!paths.some((p) => p.startsWith('dist/test') || p.startsWith('src/') || p === 'dist/llmux'));
    // A bound against stray files, not a budget: 300 KiB until the Responses API (issue 12), the
    // shared-state backend (issue 16) and usage (issue 17) came; 341 KB with all of them, packed
    // from tsc's output alone. Packed by prepack's `npm run build` (issue 15), dist/cli-bundle.js is the
    // bundled CLI the bin runs (610 KB, where tsc's was a small entry): 499 KiB. The platforms, the
    // Gemini format, routing, doctor and the command table (issues 20-27) took it to 668 KiB; with
    // Converse and the schemas it is 836 KB, and the docs/ pages the README links to add 54 KB (issue 27).
    assert.ok(packed.size < 1024 * 1024, `tarball is ${packed.size} bytes`);
  });

  test('installs globally into a prefix with a working llmux command', async () => {
    const prefix = join(dir, 'prefix');
    const installed = await run('npm', ['install', '-g', '--prefix', prefix, tarball, ...npmFlags()], { cwd: dir });
    assert.equal(installed.code, 0, installed.stderr);
    const bin = join(prefix, 'bin', 'llmux');
    assert.ok((statSync(bin).mode & 0o111) !== 0, 'the bin is executable');
    assert.ok(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n'));

    assert.deepEqual(await run(bin, ['--version'], { cwd: dir }), { code: 0, stdout: `${VERSION}\n`, stderr: '' });

    const server = await startServer(bin, [], { cwd: dir, env: cleanEnv({ LLMUX_HOME: join(dir, 'global-home') }) });
    await assertServesThenStops(server, VERSION);
  });

  test('runs with npx straight from the tarball', async () => {
    const cwd = join(dir, 'npx');
    mkdirSync(cwd);
    const result = await run('npx', ['--yes', '--package', tarball, ...npmFlags(), 'llmux', '--version'], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, `${VERSION}\n`);
  });

  test('embeds: the example of docs/embedding.md runs and TypeScript sees the typed API', async () => {
    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const installed = await run('npm', ['install', tarball, ...npmFlags()], { cwd: app });
    assert.equal(installed.code, 0, installed.stderr);
    // The "$schema" line of docs/configuration.md for a project that installed llmux: a path that exists.
    assert.ok(readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8').includes('"$schema": "./node_modules/llmux/schema/config.schema.json"'));
    const schema = JSON.parse(readFileSync(join(app, 'node_modules', 'llmux', 'schema', 'config.schema.json'), 'utf8')) as { $schema: string };
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');

    // docs/embedding.md shows examples/embed.mjs as it is, but for the file's opening comment.
    const source = readFileSync(join(ROOT, 'examples', 'embed.mjs'), 'utf8');
    assert.ok(readFileSync(join(ROOT, 'docs', 'embedding.md'), 'utf8').includes(`\`\`\`js\n${source.replace(/^(\/\/.*\n)+\n?/, '')}\`\`\``), 'docs/embedding.md shows examples/embed.mjs');
    copyFileSync(join(ROOT, 'examples', 'embed.mjs'), join(app, 'embed.mjs'));
    const example = await run(process.execPath, ['embed.mjs'], { cwd: app });
    assert.equal(example.code, 0, example.stderr);
    assert.match(example.stdout, /^\[llmux\] POST \/v1\/chat\/completions 200 \d+ ms\n200 Hello from an embedded llmux\nrequests left this minute: 119\n$/);

    writeFileSync(join(app, 'app.ts'), [
      "import { createGateway } from 'llmux';",
      "import type { Gateway, GatewayOptions, LogRecord } from 'llmux';",
      "const options: GatewayOptions = { config: { builtin_catalog: true }, logger: (line) => { if ('status' in line) { const r: LogRecord = line; void r; } } };",
      'const gateway: Gateway = createGateway(options);',
      'const port: number = gateway.config.port;',
      'void port;',
      '// @ts-expect-error listen takes a port number',
      "void gateway.listen('8686');",
      '',
    ].join('\n'));
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true,
        types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')],
      },
      files: ['app.ts'],
    }));
    const checked = await run(process.execPath, [TSC, '-p', join(app, 'tsconfig.json')], { cwd: app });
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  });

  test('npm start builds dist/ when it is missing or older than src/, then runs the compiled server', async () => {
    const checkout = freshCheckout(join(dir, 'start'));
    const env = cleanEnv({ LLMUX_HOME: join(dir, 'start-home') });
    const first = await startServer(process.execPath, [], { cwd: checkout, env, leading: [START] });
    try {
      assert.match(first.stderr(), /^llmux: building dist\/ \(dist\/cli\.cjs is missing\)/);
      await assertHealthy(first.url, VERSION);
    } finally {
      assert.deepEqual(await first.stop('SIGTERM'), { code: 0, signal: null }, first.stderr());
    }
    const built = statSync(join(checkout, 'dist', 'cli.cjs')).mtimeMs;

    // Built and unchanged: started as it is. The admin key exists by now; startServer waits for
    // one, so this run gets a home of its own.
    const again = await startServer(process.execPath, [], { cwd: checkout, env: cleanEnv({ LLMUX_HOME: join(dir, 'start-home-2') }), leading: [START] });
    try {
      assert.doesNotMatch(again.stderr(), /building dist/);
      assert.equal(statSync(join(checkout, 'dist', 'cli.cjs')).mtimeMs, built);
    } finally {
      await again.stop('SIGTERM');
    }

    // A source file newer than the build: built again first.
    const later = new Date(built + 2_000);
    utimesSync(join(checkout, 'src', 'common', 'version.ts'), later, later);
    const rebuilt = await startServer(process.execPath, [], { cwd: checkout, env: cleanEnv({ LLMUX_HOME: join(dir, 'start-home-3') }), leading: [START] });
    try {
      assert.match(rebuilt.stderr(), /^llmux: building dist\/ \(src\/ changed since dist\/ was built\)/);
      assert.ok(statSync(join(checkout, 'dist', 'cli.cjs')).mtimeMs > built);
    } finally {
      await rebuilt.stop('SIGTERM');
    }
  });
});
