#!/usr/bin/env node
/**
 * Part of `npm run build` (scripts/bundle-cli.mjs runs it in a process of its own, with an empty
 * environment): writes cli-bundle.cache, V8's compiled code of the CLI bundle, beside
 * cli-bundle.js, for the loader (scripts/cli-loader.cjs, dist/cli.cjs) to start from.
 *
 * It compiles the bundle and runs `llmux serve` from it as the loader does (port 0 on loopback, a
 * temporary home), asks /healthz once, and only then takes `script.createCachedData()`: made after
 * the run, the cache holds every function compiled so far, not only the bundle's top level — what
 * a start-up spends most of its compiling on.
 *
 * A cache is compiled code: the bundle's bytecode and the literals of its source, and the file
 * name the script was compiled under (V8 keeps it; stack traces show it), not values of the run.
 * That is checked before it is written: neither the admin key serve makes nor the temporary home
 * it makes it in may be in it. Holding the bundle's path, a cache is this checkout's own: the
 * npm package does not carry it (package.json `files`).
 *
 * Usage: node scripts/code-cache.mjs DIR
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Script } from 'node:vm';

/** The temporary home serve runs in; removed on every way out. */
let home = '';
const dir = resolve(process.argv[2] ?? fail('usage: node scripts/code-cache.mjs DIR'));
const bundlePath = join(dir, 'cli-bundle.js');
const source = readFileSync(bundlePath, 'utf8');
const script = new Script(source, { filename: bundlePath });
const bundle = { exports: {} };
// As scripts/cli-loader.cjs calls it, with the URL the loader would have.
const loaderUrl = pathToFileURL(join(dir, 'cli.cjs')).href;
script.runInThisContext()(bundle.exports, createRequire(loaderUrl), bundle, loaderUrl);

home = mkdtempSync(join(tmpdir(), 'llmux-code-cache-'));
let stdout = '';
let stderr = '';
const io = { stdout: (text) => { stdout += text; }, stderr: (text) => { stderr += text; }, env: { LLMUX_HOME: home }, stdin: process.stdin };
const served = bundle.exports.main(['serve', '--host', '127.0.0.1', '--port', '0'], io);
served.then((code) => fail(`llmux serve stopped (exit ${code}):\n${stderr}`), (err) => fail(`llmux serve failed: ${err?.stack ?? err}`));

const started = Date.now();
let url;
while ((url = /^llmux listening on (http:\/\/\S+)$/m.exec(stdout)?.[1]) === undefined) {
  if (Date.now() - started > 30_000) fail(`llmux serve did not listen within 30 s:\n${stderr}`);
  await new Promise((done) => setTimeout(done, 5));
}
const status = await new Promise((done, failed) => get(`${url}/healthz`, (res) => res.resume().on('end', () => done(res.statusCode))).on('error', failed));
if (status !== 200) fail(`/healthz answered ${status}`);

const data = script.createCachedData();
const text = data.toString('latin1');
if (/sk-llmux-[A-Za-z0-9_-]{43}/.test(text)) fail('the code cache holds an llmux key');
if (text.includes(home)) fail(`the code cache holds a value of the run (the path ${home})`);

// Written whole or not at all: the loader never reads half a cache.
const cache = join(dir, 'cli-bundle.cache');
// The same key line as scripts/cli-loader.cjs's cacheKey.
const key = `${source.slice(0, source.indexOf('\n'))} ${process.version} ${process.platform}-${process.arch} ${bundlePath}\n`;
writeFileSync(`${cache}.tmp`, Buffer.concat([Buffer.from(key), data]));
renameSync(`${cache}.tmp`, cache);
rmSync(home, { recursive: true, force: true });
process.exit(0);

function fail(message) {
  process.stderr.write(`code-cache: ${message}\n`);
  if (home !== '') rmSync(home, { recursive: true, force: true });
  process.exit(1);
}
