// Prints test files, one a line (Node 20's --test does not expand globs itself):
//   node scripts/list-tests.mjs          both tiers: what `npm test` runs
//   node scripts/list-tests.mjs unit     the unit tier (`npm run test:unit`)
//   node scripts/list-tests.mjs system   the system tier (`npm run test:system`)
//   node scripts/list-tests.mjs DIR      every test file under DIR (`npm run test:clients`: test/clients)
// The tiers are decided here, by path, so a new test file lands in one by where it is. The unit
// tier is what runs in this process alone: no child process, no Redis, no Chromium, no whole
// gateway over sockets (an in-process fake on loopback only where the unit needs a socket, like
// the body reader). The system tier is the rest: end-to-end over sockets, resilience and soak,
// the state server, the browser, the packaged and single-file executable. test/tiers.test.ts
// checks that no unit-tier file starts a gateway, a child process, Redis or Chromium.
// The slow client suite (test/clients/: the real Codex CLI and Claude Code, downloaded on first
// use) is in neither tier: `npm run test:clients` lists it by naming the folder.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Folders whose every test is a system test. */
export const SYSTEM_DIRS = [
  'test/resilience', // faults, hostile clients and upstreams, fuzzing, shutdown, soak
  'test/state', // a real redis-server
  'test/browser', // headless Chromium
  'test/ship', // the packed npm package, the single executable, the bin and its code cache
  'test/bench', // the benchmark harness: its servers and fakes over loopback
];

/** Test files elsewhere that are system tests, and why. */
export const SYSTEM_FILES = {
  'test/auth/authenticate.test.ts': 'a whole gateway over sockets',
  'test/auth/key-store.test.ts': 'child processes writing the store at once, one killed mid-write',
  'test/commands/device.test.ts': 'a whole gateway over sockets',
  'test/commands/setup.test.ts': 'llmux setup driven through a terminal (a child process)',
  'test/docs/routes.test.ts': 'a whole gateway over sockets',
  'test/doctor/doctor.test.ts': 'a real redis-server for the state server check',
  'test/gateway/features.test.ts': 'a whole gateway over sockets',
  'test/gateway/pipeline.test.ts': 'a whole gateway over sockets',
  'test/gateway/server.test.ts': 'a whole gateway over sockets',
  'test/http/listen.test.ts': 'a child process: the built-ins a fresh process loads to listen',
  'test/providers/http1-tls.test.ts': 'a certificate made with openssl (a child process)',
  'test/responses-passthrough.test.ts': 'a whole gateway over sockets',
  'test/usage/ledger.test.ts': 'child processes: a writer killed with SIGKILL, two writers at once',
  'test/web/charts.test.ts': 'charts rendered in Chromium',
  'test/web/dashboard.test.ts': 'a whole gateway over sockets',
  'test/web/device-page.test.ts': 'a whole gateway over sockets',
  'test/web/device-routes.test.ts': 'a whole gateway over sockets',
  'test/web/health.test.ts': 'a whole gateway over sockets',
  'test/web/deployments.test.ts': 'a whole gateway over sockets',
  'test/web/usage-page.test.ts': 'a whole gateway over sockets',
};

/** End-to-end suites at test/'s root are named like this; they are system tests. */
const END_TO_END = /^test\/[^/]+-e2e\.test\.ts$/;

/** Every test file under `root` (posix paths, sorted), skipping the folders in `skipped`. */
export function testFilesUnder(root, skipped = []) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!skipped.includes(path)) walk(path);
      } else if (entry.name.endsWith('.test.ts')) files.push(path.split('\\').join('/'));
    }
  };
  walk(root);
  return files.sort();
}

/** The tier of a test file under test/: 'unit' or 'system'. */
export function tierOf(file) {
  if (SYSTEM_DIRS.some((dir) => file.startsWith(`${dir}/`))) return 'system';
  if (Object.hasOwn(SYSTEM_FILES, file) || END_TO_END.test(file)) return 'system';
  return 'unit';
}

/** The test files of a tier, or of both (the client suite is in neither). */
export function tierFiles(tier) {
  const all = testFilesUnder('test', [join('test', 'clients')]);
  return tier === undefined ? all : all.filter((f) => tierOf(f) === tier);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2];
  const files = arg === undefined || arg === 'unit' || arg === 'system' ? tierFiles(arg) : testFilesUnder(arg);
  process.stdout.write(files.join('\n'));
}
