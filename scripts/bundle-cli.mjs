#!/usr/bin/env node
/**
 * Second step of `npm run build`: adds the bundled CLI and its bin beside tsc's output. Node's ESM
 * loader spends about 2 ms per module resolving, reading and compiling; as 35 modules that was
 * most of llmux's start-up, as one file it is a fraction of it (bench/RESULTS.md, start-up row).
 * The rest of dist/ stays tsc's output: it is the embeddable library
 * (`import { createGateway } from 'llmux'`) with its type declarations.
 *
 * Three files:
 *   dist/cli-bundle.js     the whole CLI (esbuild, a devDependency; nothing is needed at run time),
 *                          as one CommonJS function expression, so that it runs as a vm.Script;
 *                          its first line is a digest of the rest
 *   dist/cli.cjs           the bin: scripts/cli-loader.cjs, which runs the bundle
 *   dist/cli-bundle.cache  V8's compiled code of the bundle after one `llmux serve` start
 *                          (scripts/code-cache.mjs), which the loader starts from
 * The cache is checked before the build ends: a fresh process importing dist/cli.cjs must report
 * that it used it. It is not in the npm package (package.json `files`): it is valid for this
 * very Node only, and the loader compiles the bundle without it.
 *
 * Usage: node scripts/bundle-cli.mjs [--out DIR]   (default dist/; a test builds elsewhere)
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The name `import.meta.url` has in the bundle: the loader passes its own URL under it. */
const IMPORT_META_URL = '__llmuxImportMetaUrl';

const { values } = parseArgs({ options: { out: { type: 'string' } }, strict: true });
const out = resolve(values.out ?? join(ROOT, 'dist'));
mkdirSync(out, { recursive: true });
// A build that fails half way leaves no cache beside a bundle it was not made for.
rmSync(join(out, 'cli-bundle.cache'), { force: true });

const result = await build({
  entryPoints: [join(ROOT, 'src', 'cli.ts')],
  write: false,
  outfile: join(out, 'cli-bundle.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Only node: built-ins may stay imports: llmux has no runtime dependencies.
  packages: 'external',
  // Start-up parses the whole file: without white space and with shorter syntax it is a fifth
  // smaller and parses faster (788 -> 772 million instructions from spawn to the first /healthz
  // answer, bench/.tmp under callgrind). Names stay, so a stack trace still says which function.
  minifyWhitespace: true,
  minifySyntax: true,
  define: { 'import.meta.url': IMPORT_META_URL },
  metafile: true,
  logLevel: 'silent',
});
// A warning here is a bundle that would misbehave (say another import.meta use, empty in CommonJS).
if (result.warnings.length > 0) fail(`esbuild warnings:\n${result.warnings.map((w) => `  ${w.location?.file ?? ''}:${w.location?.line ?? ''} ${w.text}`).join('\n')}`);
for (const input of Object.values(result.metafile.inputs)) {
  for (const imp of input.imports) {
    // A vm.Script has no module loader behind it: an import() left in the bundle would throw.
    if (imp.external && (!isBuiltin(imp.path) || imp.kind === 'dynamic-import')) fail(`the bundle would load ${imp.path} (${imp.kind}): only static imports of node: built-ins can stay outside it`);
  }
}

const code = ascii(result.outputFiles[0].text.replace(/^#!.*\n/, ''));
const body = `(function (exports, require, module, ${IMPORT_META_URL}) {${code}\n})\n`;
// The loader pairs a cache with its bundle by this line.
const digest = createHash('sha256').update(body).digest('hex').slice(0, 32);
writeFileSync(join(out, 'cli-bundle.js'), `// llmux CLI bundle ${digest}: run by cli.cjs (scripts/cli-loader.cjs)\n${body}`);
copyFileSync(join(ROOT, 'scripts', 'cli-loader.cjs'), join(out, 'cli.cjs'));

// Both children get an empty environment: no key, setting or path of this machine reaches the
// run the cache is made from, and no NODE_OPTIONS changes the V8 flags the cache is valid for.
const childEnv = process.platform === 'win32' && process.env['SystemRoot'] !== undefined ? { SystemRoot: process.env['SystemRoot'] } : {};
runNode([join(ROOT, 'scripts', 'code-cache.mjs'), out], 'writing the code cache');
const check = "const { codeCache } = await import(process.argv[1]); if (codeCache !== 'used') { process.stderr.write(`dist/cli.cjs compiled the bundle without its cache (${codeCache})\\n`); process.exit(1); }";
runNode(['--input-type=module', '-e', check, pathToFileURL(join(out, 'cli.cjs')).href], 'checking that cli.cjs uses the code cache');

/**
 * The bundle with every character beyond ASCII written as a \u escape. esbuild escapes them in
 * strings but not in tagged templates (html`…`), where an escape changes the template's `raw`
 * strings; no tag in src/ reads those. One such character made the whole source a two-byte string
 * for V8: twice the memory, and slower to scan what it compiles lazily.
 */
function ascii(text) {
  if (text.includes('String.raw')) fail('the bundle uses String.raw: its templates cannot have their characters escaped');
  return text.replace(/[^\0-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function runNode(args, what) {
  const child = spawnSync(process.execPath, args, { cwd: out, env: childEnv, encoding: 'utf8', timeout: 60_000 });
  if (child.status !== 0) fail(`${what} failed (${child.error?.message ?? `exit ${child.status}`}):\n${child.stderr}`);
}

function fail(message) {
  process.stderr.write(`bundle-cli: ${message}\n`);
  process.exit(1);
}
