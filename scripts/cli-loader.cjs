#!/usr/bin/env node
/**
 * dist/cli.cjs, the `llmux` bin (scripts/bundle-cli.mjs copies this file there): runs the bundled
 * CLI, dist/cli-bundle.js, compiled from V8's code cache dist/cli-bundle.cache when that cache was
 * made for this very bundle on this Node and platform.
 *
 * Why: compiling the 850 KB bundle, and then lazily each function `llmux serve` runs before its
 * first answer, was most of what llmux's start-up costs beyond Node's own (bench/what-is-left.md,
 * "Start-up"). The build runs serve once from the bundle and stores the code compiled by then
 * (scripts/code-cache.mjs); here V8 deserialises it instead. Node 20 has no
 * module.enableCompileCache, but vm.Script takes `cachedData`. Without a usable cache (none, one
 * made for another bundle or Node, or one V8 refuses: other flags) the bundle is compiled like any
 * script: slower, never wrong. A cache is matched to its bundle by the bundle's first line (a
 * digest of the rest, written by the build; so a bundle edited by hand needs `npm run build`) and
 * to the bundle's place (dist/ copied elsewhere compiles without it).
 *
 * CommonJS, not a module: a process whose entry point is an ES module sets up Node's ES module
 * loader first, about 4 ms of a start-up that is 30 ms more than `node -e 0`'s; the bundle itself
 * is CommonJS, so nothing here needs that loader. An ES module still imports this file by name
 * (`import { main } from './cli.cjs'`): Node reads the names of `module.exports` below.
 *
 * The bundle is one CommonJS function expression, called here with what Node gives a CommonJS
 * module and this file's URL for `import.meta.url` (the CLI's entry-point check compares it with
 * argv[1], so `node dist/cli.cjs` still runs the CLI and an import of this file does not).
 * Errors and stack traces name dist/cli-bundle.js, at its own lines and columns.
 */
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { Script } = require('node:vm');

const bundlePath = join(__dirname, 'cli-bundle.js');
// Read as latin1, a copy of its bytes: the build writes the bundle in ASCII alone (scripts/bundle-cli.mjs,
// `ascii`), where latin1 and UTF-8 read the same, and decoding 900 KB as UTF-8 cost about a millisecond more.
const source = readFileSync(bundlePath, 'latin1');
const cachedData = readCodeCache(join(__dirname, 'cli-bundle.cache'), cacheKey(source, bundlePath));
const script = new Script(source, { filename: bundlePath, cachedData: cachedData === null ? undefined : cachedData });

/**
 * How the bundle was compiled: `used` (from the code cache), `rejected` (a cache is there, but
 * for another bundle, Node or platform, or V8 refused it) or `absent` (no cache file).
 */
const codeCache = cachedData === undefined ? 'absent' : cachedData === null || script.cachedDataRejected === true ? 'rejected' : 'used';

const bundle = { exports: {} };
// The bundle requires node: built-ins only (scripts/bundle-cli.mjs checks).
script.runInThisContext()(bundle.exports, require, bundle, pathToFileURL(__filename).href);

/** The CLI's `main(argv, io?)`, for scripts/start.mjs, which runs it in its own process. */
const { main } = bundle.exports;
module.exports = { codeCache, main };

/**
 * The line a code cache starts with: the bundle's own first line (its digest), this Node's
 * version and platform, and the bundle's path: V8 keeps the file name a script was compiled under
 * in its cache, and stack traces show that name, so a cache is only good where it was made.
 * scripts/code-cache.mjs writes the line the same way (and the build checks that this file then
 * reports `used`).
 */
function cacheKey(bundleSource, path) {
  return `${bundleSource.slice(0, bundleSource.indexOf('\n'))} ${process.version} ${process.platform}-${process.arch} ${path}\n`;
}

/** The cache's V8 data when its key line is `key`; null when it is another's; undefined when there is no file. */
function readCodeCache(path, key) {
  let file;
  try {
    file = readFileSync(path);
  } catch {
    return undefined;
  }
  const keyBytes = Buffer.byteLength(key);
  return file.length > keyBytes && file.toString('utf8', 0, keyBytes) === key ? file.subarray(keyBytes) : null;
}
