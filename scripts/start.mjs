#!/usr/bin/env node
/**
 * `npm start`: the compiled CLI, as users run it (issue 15), not tsx (about 60 MB more RSS and a
 * slower start in what the README calls the main command).
 *
 * dist/ is built first (`npm run build`) when dist/cli.cjs is missing or older than anything it is
 * built from; the build's output goes to stderr, so stdout keeps the server's one line
 * (`llmux listening on http://HOST:PORT`). Then dist/cli.cjs runs in this very process: under npm
 * it is npm -> sh -> this process, as the server was before, so the server's watch on its parent
 * (src/cli.ts) still stops it when the npm process is stopped.
 *
 * Usage: node scripts/start.mjs [llmux arguments]   (package.json: "start": "node scripts/start.mjs serve")
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'cli.cjs');
/** What dist/ is built from, besides src/. */
const BUILD_INPUTS = ['tsconfig.json', 'tsconfig.build.json', ...['bundle-cli.mjs', 'cli-loader.cjs', 'code-cache.mjs'].map((file) => join('scripts', file))];

/** The latest modification time of the files under `dir`, in ms. */
function newestUnder(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Why dist/ must be built first, or undefined when dist/cli.cjs is newer than everything it comes from. */
function staleness() {
  let built;
  try {
    built = statSync(CLI).mtimeMs;
  } catch {
    return 'dist/cli.cjs is missing';
  }
  const inputs = Math.max(newestUnder(join(ROOT, 'src')), ...BUILD_INPUTS.map((file) => statSync(join(ROOT, file)).mtimeMs));
  return inputs > built ? 'src/ changed since dist/ was built' : undefined;
}

const why = staleness();
if (why !== undefined) {
  process.stderr.write(`llmux: building dist/ (${why})…\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const built = spawnSync(npm, ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', process.stderr, process.stderr], shell: process.platform === 'win32' });
  if (built.status !== 0) {
    process.stderr.write(`llmux: npm run build failed${built.error === undefined ? '' : ` (${built.error.message})`}; nothing was started\n`);
    process.exit(1);
  }
}

const { main } = await import(pathToFileURL(CLI).href);
process.exitCode = await main(process.argv.slice(2));
