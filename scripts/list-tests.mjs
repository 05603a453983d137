// Prints the test files under test/ (Node 20's --test does not expand globs itself).
// The slow client suite (test/clients/: the real Codex CLI and Claude Code, downloaded on first
// use) is left out of the default list; `npm run test:clients` lists it by naming the folder.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = process.argv[2] ?? 'test';
const skipped = process.argv[2] === undefined ? new Set([join('test', 'clients')]) : new Set();
const files = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!skipped.has(path)) walk(path);
    } else if (entry.name.endsWith('.test.ts')) files.push(path);
  }
};
walk(root);
process.stdout.write(files.sort().join('\n'));
