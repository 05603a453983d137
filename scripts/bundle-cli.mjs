#!/usr/bin/env node
/**
 * Second step of `npm run build`: replaces tsc's dist/cli.js with one bundled file of the whole
 * CLI (esbuild, a devDependency; nothing is needed at run time). Node's ESM loader spends about
 * 2 ms per module resolving, reading and compiling; as 35 modules that was most of llmux's
 * start-up, as one file it is a fraction of it (bench/RESULTS.md, start-up row). The rest of
 * dist/ stays tsc's output: it is the embeddable library (`import { createGateway } from 'llmux'`)
 * with its type declarations.
 */
import { build } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

await build({
  entryPoints: [join(ROOT, 'src', 'cli.ts')],
  outfile: join(ROOT, 'dist', 'cli.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Only node: built-ins may stay imports: llmux has no runtime dependencies.
  packages: 'external',
  // Start-up parses the whole file: without white space and with shorter syntax it is a fifth
  // smaller and parses faster (788 -> 772 million instructions from spawn to the first /healthz
  // answer, bench/.tmp under callgrind). Names stay, so a stack trace still says which function.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  allowOverwrite: true,
});
