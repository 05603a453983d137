#!/usr/bin/env node
/**
 * `npm run build:bin`: the single-file executable `dist/llmux` for this machine's platform.
 *
 * The steps of Node 20's "Single executable applications" guide:
 *   1. esbuild bundles scripts/bin-entry.ts (the CLI, run unconditionally) and everything it
 *      imports into one CommonJS file; only `node:` built-ins stay as `require` calls, because
 *      the injected main script of an executable can require nothing else.
 *   2. sea-config.json -> `node --experimental-sea-config` writes the preparation blob.
 *   3. A copy of the running `node` binary gets the blob injected by postject, with the
 *      sentinel fuse flipped (macOS: signature removed first and an ad-hoc one added after).
 *
 * Usage: node scripts/build-bin.mjs [--out FILE]   (default dist/llmux, dist/llmux.exe on Windows)
 * Prints one line with the output path and its size. Exit 1 on any failure.
 */
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = join(ROOT, 'scripts', 'bin-entry.ts');
/** From Node's docs: the fuse postject flips so the binary knows a blob is inside. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const BLOB_RESOURCE = 'NODE_SEA_BLOB';
const POSTJECT_CLI = createRequire(import.meta.url).resolve('postject/dist/cli.js');

const { values } = parseArgs({ options: { out: { type: 'string' } }, strict: true });
const output = resolve(values.out ?? join(ROOT, 'dist', process.platform === 'win32' ? 'llmux.exe' : 'llmux'));
const work = mkdtempSync(join(tmpdir(), 'llmux-bin-'));

try {
  const bundle = join(work, 'llmux.cjs');
  await bundleCli(bundle);

  const blob = join(work, 'sea-prep.blob');
  writeFileSync(join(work, 'sea-config.json'), JSON.stringify({
    main: bundle,
    output: blob,
    disableExperimentalSEAWarning: true,
    // Compiled code in the blob: start-up skips parsing and compiling the bundle. The docs'
    // one caveat, `import()` not working, does not apply: the bundle has no dynamic import.
    useCodeCache: true,
  }, null, 2));
  run(process.execPath, ['--experimental-sea-config', join(work, 'sea-config.json')]);

  mkdirSync(dirname(output), { recursive: true });
  // A previous build may be running (a server): unlink rather than overwrite its file in place.
  rmSync(output, { force: true });
  copyFileSync(process.execPath, output);
  chmodSync(output, 0o755);
  if (process.platform === 'darwin') run('codesign', ['--remove-signature', output]);
  run(process.execPath, [
    POSTJECT_CLI, output, BLOB_RESOURCE, blob, '--sentinel-fuse', SEA_FUSE,
    ...(process.platform === 'darwin' ? ['--macho-segment-name', 'NODE_SEA'] : []),
  ]);
  if (process.platform === 'darwin') run('codesign', ['--sign', '-', output]);

  const sizeMiB = (statSync(output).size / 1024 / 1024).toFixed(1);
  process.stdout.write(`built ${relative(process.cwd(), output) || output} (${sizeMiB} MiB, Node ${process.versions.node} ${process.platform}-${process.arch})\n`);
} catch (err) {
  process.stderr.write(`build-bin: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}

/**
 * Runs a build tool, showing its output only when it fails: on ELF, postject's LIEF prints
 * harmless "Can't find string offset for section name '.note.100'" warnings (nodejs/postject#83).
 */
function run(file, args) {
  try {
    execFileSync(file, args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (err) {
    throw new Error(`${file} ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

/** Bundles the CLI into one CommonJS file; fails on any warning or non-built-in import. */
async function bundleCli(outfile) {
  const result = await build({
    entryPoints: [ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    legalComments: 'none',
    metafile: true,
    logLevel: 'silent',
    // The only import.meta use (src/cli.ts's entry-point check) must see "not the entry":
    // bin-entry.ts starts the CLI itself. A non-file URL makes fileURLToPath throw, which that
    // check reads as "no". Any other import.meta use is a warning, and warnings fail the build.
    define: { 'import.meta.url': '"llmux:bundle"' },
  });
  if (result.warnings.length > 0) {
    throw new Error(`esbuild warnings:\n${result.warnings.map((w) => `  ${w.location?.file ?? ''}:${w.location?.line ?? ''} ${w.text}`).join('\n')}`);
  }
  const external = new Set();
  for (const input of Object.values(result.metafile.inputs)) {
    for (const imp of input.imports) if (imp.external) external.add(imp.path);
  }
  const foreign = [...external].filter((path) => !isBuiltin(path));
  if (foreign.length > 0) throw new Error(`the bundle would need modules an executable cannot load: ${foreign.join(', ')}`);
}
